"""A Parquet directory's files stay in it (issue 34, Must 5): a manifest entry or a
symbolic link that leaves the directory is refused naming the entry, nothing outside is
read or stat'ed, and ``rehash`` never writes through or over a link."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from varied_store import add, new_store, sts

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.parquet.location import MANIFEST, locate
from infrastore_sqlite.interchange.parquet.rehash import rehash_parquet

STS = "SingleTimeSeries.f64.utc"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pq_contained")
    store = new_store(d / "src.h5")
    add(store, sts("a", np.arange(4.0)), owner=1)
    store.export_parquet(d / "out")
    store.close()
    return d / "out"


@pytest.fixture
def copy(exported: Path, tmp_path: Path) -> Path:
    out = tmp_path / "in"
    shutil.copytree(exported, out)
    return out


@pytest.fixture
def dst(tmp_path: Path):
    store = new_store(tmp_path / "dst.h5")
    yield store
    store.close()


def _manifest(d: Path, names: list[str]) -> None:
    files = [{"name": n, "size": 1} for n in names]
    (d / MANIFEST).write_bytes(orjson.dumps({"files": files}))


@pytest.mark.parametrize(
    "name", ["../../etc/passwd", "/etc/passwd", "sub/../../x.values.parquet", "..\\..\\x"]
)
def test_a_manifest_name_leaving_the_directory_is_refused_naming_it(copy, dst, name) -> None:
    _manifest(copy, [name])
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_parquet(copy)
    message = str(refused.value)
    assert f"lists {name!r}, a name that leaves {copy}" in message
    assert "bytes" not in message  # nothing outside was stat'ed
    assert dst.list_metadata() == []


def test_a_symlink_out_of_the_directory_is_refused_and_not_read(copy, dst, tmp_path) -> None:
    outside = tmp_path / "elsewhere.parquet"
    values = copy / f"{STS}.values.parquet"
    shutil.move(values, outside)
    values.symlink_to(outside)
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_parquet(copy)
    assert f"{values} is a symbolic link to {outside}, outside {copy}" in str(refused.value)
    with pytest.raises(InvalidParameterError, match="is a symbolic link to"):
        dst.diff_parquet(copy)
    with pytest.raises(InvalidParameterError, match="is a symbolic link to"):
        rehash_parquet(copy)
    assert dst.list_metadata() == []


def test_a_symlink_inside_the_directory_imports_but_rehash_never_writes_over_it(copy, dst) -> None:
    values = copy / f"{STS}.values.parquet"
    os.rename(values, copy / "kept.bin")
    values.symlink_to("kept.bin")
    assert len(dst.import_parquet(copy)) == 1
    before = (copy / "kept.bin").read_bytes()
    with pytest.raises(InvalidParameterError) as refused:
        rehash_parquet(copy)
    assert f"{values} is a symbolic link (to kept.bin)" in str(refused.value)
    assert "Nothing was written" in str(refused.value)
    assert values.is_symlink() and (copy / "kept.bin").read_bytes() == before


def test_an_object_storage_prefix_with_dot_dot_is_refused() -> None:
    pytest.importorskip("obstore")
    with pytest.raises(InvalidParameterError, match=r"holds a '\.\.' segment"):
        locate("s3://bucket/exports/../secrets")


def test_a_manifest_beyond_its_bound_is_not_read(copy, dst) -> None:
    from infrastore_sqlite.interchange.importing.limits import MAX_MANIFEST_BYTES

    with (copy / MANIFEST).open("wb") as f:
        f.truncate(MAX_MANIFEST_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(InvalidParameterError, match="more than the 67,108,864 an export's"):
        dst.import_parquet(copy)
