"""One conformance suite for every kind of place the Parquet form lives in
(``interchange/parquet/location/``): a local directory, and a prefix in object storage on
the real S3 server (SeaweedFS, ``tests/s3server.py``). Each check runs against both, with
nothing but the :class:`Location` interface: list, size, read by range, join,
containment, rewrite in place, and publishing an export's files all at once or not at all.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from varied_store import add, new_store, sts

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.parquet.layout import file_names
from infrastore_sqlite.interchange.parquet.location import MANIFEST, Location, locate
from infrastore_sqlite.interchange.plan import ExportPlan, plan_export

#: Writes ``data`` at ``name`` (a path below the root, with ``/``) as any other writer
#: would: the place's own setup, outside the interface under test.
Put = Callable[[str, bytes], None]


@pytest.fixture(params=["local", "s3"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Location, Put]]:
    """An empty directory (prefix) of each kind, and a way to put files in it."""
    if request.param == "local":
        root = tmp_path / "place"
        root.mkdir()

        def put_local(name: str, data: bytes) -> None:
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

        yield locate(root), put_local
        return
    server = request.getfixturevalue("s3_server")
    uri = f"s3://infrastore/t-{uuid.uuid4().hex[:10]}"
    writer = locate(uri, server.options)

    def put_object(name: str, data: bytes) -> None:
        (writer / name).replace_with(data)

    # A second opening of the prefix for the checks: what it lists is what the server
    # holds, not what the writer remembers.
    yield locate(uri, server.options), put_object


def _table(rows: int) -> Any:
    return pa.table({"k": np.arange(rows, dtype=np.int64), "v": np.arange(rows) * 0.5})


def _parquet(rows: int, group: int) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(_table(rows), sink, row_group_size=group)
    return sink.getvalue().to_pybytes()


# ------------------------------------------------------------------------------ names
def test_join_name_parent_and_text(place: tuple[Location, Put]) -> None:
    root, _ = place
    child = root / "a.values.parquet"
    assert child == root.join("a.values.parquet")
    assert child.name == "a.values.parquet"
    assert child.parent == root
    assert str(child) == f"{root}/a.values.parquet"
    assert (root / "sub" / "b").parent.parent == root
    assert len({child, root.join("a.values.parquet"), root}) == 2
    assert child != root / "other"
    assert pickle.loads(pickle.dumps(child)) == child


@pytest.mark.parametrize("name", ["../x.parquet", "a/../../x.parquet", "..", "/etc/passwd"])
def test_a_name_that_leaves_the_place_is_refused(place: tuple[Location, Put], name: str) -> None:
    root, _ = place
    with pytest.raises(InvalidParameterError) as err:
        root.inside(name)
    message = str(err.value)
    assert str(root) in message and "leaves" in message
    assert err.value.table == str(root)
    with pytest.raises(InvalidParameterError, match=r"_infrastore_manifest.json lists"):
        root.inside(name, listed_in=str(root / MANIFEST))


def test_a_name_inside_is_joined(place: tuple[Location, Put]) -> None:
    root, _ = place
    assert root.inside("a.values.parquet") == root / "a.values.parquet"
    assert root.inside("part=1/p.parquet") == root / "part=1" / "p.parquet"


# ------------------------------------------------------------------------------ reading
def test_list_size_and_kind(place: tuple[Location, Put]) -> None:
    root, put = place
    put("a.bin", b"12345")
    put("sub/b.bin", b"xy")
    put("sub/deeper/c.bin", b"")
    assert sorted(root.listdir()) == ["a.bin", "sub"]
    assert root.children() == (["a.bin"], ["sub"])
    assert (root / "sub").children() == (["b.bin"], ["deeper"])
    assert (root / "a.bin").size() == 5
    assert (root / "sub" / "deeper" / "c.bin").size() == 0
    assert (root / "missing.bin").size() is None
    assert (root / "a.bin").is_file() and not (root / "a.bin").is_dir()
    assert (root / "sub").is_dir() and not (root / "sub").is_file()
    assert not (root / "missing").is_dir() and not (root / "missing").is_file()
    assert (root / "a.bin").read_bytes() == b"12345"
    # What another process unpickles lists the same files.
    assert sorted(pickle.loads(pickle.dumps(root)).listdir()) == ["a.bin", "sub"]


def test_a_file_is_read_by_ranges(place: tuple[Location, Put]) -> None:
    """pyarrow reads the footer, then one row group of one column: what it gets is the
    bytes of those ranges."""
    root, put = place
    put("t.parquet", _parquet(40_000, 10_000))
    src = (root / "t.parquet").open_input()
    pf = pq.ParquetFile(src)
    assert pf.metadata.num_row_groups == 4
    assert pq.read_metadata((root / "t.parquet").open_input()).num_rows == 40_000
    got = pf.read_row_group(2, columns=["v"]).column("v").to_numpy()
    np.testing.assert_array_equal(got, np.arange(20_000, 30_000) * 0.5)
    got = pf.read_row_group(0, columns=["k"]).column("k").to_numpy()
    np.testing.assert_array_equal(got, np.arange(10_000))


def test_the_uri_is_what_another_engine_reads(place: tuple[Location, Put]) -> None:
    import duckdb

    root, put = place
    put("t.parquet", _parquet(10, 10))
    where = root / "t.parquet"
    con = duckdb.connect()
    options = where.client_options()
    if options is not None:  # the engine's client set up as the query command does
        from infrastore_sqlite.interchange.parquet.query import _object_storage

        _object_storage(con, where, options)
    assert con.execute("SELECT sum(k) FROM read_parquet(?)", [where.uri]).fetchone() == (45,)


# ------------------------------------------------------------------------------ writing
def test_replace_with_replaces_a_file_whole(place: tuple[Location, Put]) -> None:
    root, put = place
    put("m.json", b"old")
    (root / "m.json").replace_with(b"new and longer")
    assert (root / "m.json").read_bytes() == b"new and longer"
    assert (root / "m.json").size() == len(b"new and longer")
    assert root.listdir() == ["m.json"]  # no temporary left beside it


def test_rewrite_writes_in_place_and_sets_a_directory_of_parts_aside(
    place: tuple[Location, Put],
) -> None:
    root, put = place
    put("a.parquet", b"not yet parquet")
    put("b.parquet/part-0.parquet", _parquet(3, 3))
    put("b.parquet/part-1.parquet", _parquet(3, 3))

    def writer(rows: int) -> Callable[[Any], None]:
        return lambda sink: pq.write_table(_table(rows), sink)

    sizes = root.rewrite([("a.parquet", writer(5)), ("b.parquet", writer(7))])
    assert sizes == {
        "a.parquet": (root / "a.parquet").size(),
        "b.parquet": (root / "b.parquet").size(),
    }
    assert pq.read_table((root / "a.parquet").open_input()).num_rows == 5
    assert pq.read_table((root / "b.parquet").open_input()).num_rows == 7
    names = sorted(root.listdir())
    # The parts were set aside beside it, never removed.
    aside = [n for n in names if n.startswith(".b.parquet.") and n.endswith(".parts")]
    assert len(aside) == 1
    assert sorted(root.join(aside[0]).listdir()) == ["part-0.parquet", "part-1.parquet"]
    assert sorted(n for n in names if not n.startswith(".")) == ["a.parquet", "b.parquet"]


# ------------------------------------------------------------------------------ publishing
@pytest.fixture(scope="module")
def plan_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A store of two partitions (two value types), for publishers' plans."""
    store = new_store(tmp_path_factory.mktemp("loc") / "s.h5")
    add(store, sts("f", np.arange(24, dtype=np.float64)))
    add(store, sts("i", np.arange(24, dtype=np.int64)))
    yield store
    store.close()


def _write_all(publisher: Any, plan: ExportPlan) -> list[str]:
    """Every partition's three files through ``publisher`` (values first, as the export
    writes them); the final names."""
    names = []
    for pp in plan.partitions:
        for role in ("values", "series", "arrays"):
            pq.write_table(_table(3), publisher.sink(pp, role))
            publisher.finished(pp, role)
            names.append(file_names(pp.partition)[role])
    return names


def _files_below(where: Location) -> list[str]:
    """Every file below ``where``, at any depth (an S3 server may go on listing an
    emptied prefix as a "directory" with nothing in it: only files count)."""
    files, dirs = where.children()
    return files + [f"{d}/{f}" for d in dirs for f in _files_below(where / d)]


def _visible(where: Location) -> list[str]:
    """What a reader of the layout sees there (temporary names start with a dot)."""
    return sorted(n for n in where.listdir() if not n.startswith(".")) if where.is_dir() else []


def test_publish_shows_nothing_before_the_commit_and_everything_after(
    place: tuple[Location, Put], plan_store: Any
) -> None:
    root, _ = place
    target = root / "export"
    plan = plan_export(plan_store)
    assert len(plan.partitions) == 2
    publisher = target.publisher(plan, overwrite=False)
    publisher.check()
    publisher.begin()
    names = _write_all(publisher, plan)
    publisher.settle()
    assert not set(names) & set(_visible(target))
    publisher.commit()
    seen = _visible(locate(str(target), root.client_options()))
    assert set(names) <= set(seen)
    assert set(seen) - set(names) <= {MANIFEST}
    first = plan.partitions[0]
    assert publisher.final(first, "values") == str(target / file_names(first.partition)["values"])
    assert pq.read_table((target / names[0]).open_input()).num_rows == 3


def test_a_rollback_leaves_nothing(place: tuple[Location, Put], plan_store: Any) -> None:
    root, _ = place
    target = root / "export"
    plan = plan_export(plan_store)
    publisher = target.publisher(plan, overwrite=False)
    publisher.check()
    publisher.begin()
    _write_all(publisher, plan)
    publisher.settle()  # (uploads completed, as a parallel export's writer does)
    publisher.rollback()
    fresh = locate(str(target), root.client_options())
    assert not fresh.is_dir() and not fresh.is_file()
    assert _files_below(root) == []
    # And a second export publishes, as if the first never ran.
    again = target.publisher(plan, overwrite=False)
    again.check()
    again.begin()
    names = _write_all(again, plan)
    again.commit()
    assert set(names) <= set(_visible(locate(str(target), root.client_options())))


def test_a_rollback_halfway_leaves_nothing(place: tuple[Location, Put], plan_store: Any) -> None:
    """Failing while the second partition is written: its files unfinished, the first's
    finished."""
    root, _ = place
    target = root / "export"
    plan = plan_export(plan_store)
    publisher = target.publisher(plan, overwrite=False)
    publisher.begin()
    first, second = plan.partitions
    for role in ("values", "series", "arrays"):
        pq.write_table(_table(3), publisher.sink(first, role))
        publisher.finished(first, role)
    pq.write_table(_table(3), publisher.sink(second, "values"))
    publisher.rollback()
    assert not locate(str(target), root.client_options()).is_dir()
    assert _files_below(root) == []


def test_files_already_there_are_refused_before_anything_is_written(
    place: tuple[Location, Put], plan_store: Any
) -> None:
    root, put = place
    plan = plan_export(plan_store)
    taken = file_names(plan.partitions[1].partition)["series"]
    put(f"export/{taken}", b"someone else's")
    target = root / "export"
    with pytest.raises(InvalidParameterError) as err:
        target.publisher(plan, overwrite=False).check()
    assert taken in str(err.value) and "overwrite=True" in str(err.value)
    assert "--overwrite" in err.value.render("cli")
    assert (target / taken).read_bytes() == b"someone else's"
    assert _visible(target) == [taken]
