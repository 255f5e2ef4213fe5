"""``export_parquet(..., jobs=N)`` / ``export -f parquet --jobs N``: the partitions written
by N worker processes are the files one process writes, to a directory or to the S3 test
server; one worker's failure fails the export and leaves nothing.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from varied_store import add, new_store, sts, varied_store_file

from infrastore_sqlite import Store
from infrastore_sqlite.cli import PROG, cli
from infrastore_sqlite.errors import DamagedStoreError, InvalidParameterError
from infrastore_sqlite.interchange.parquet import export_parquet
from infrastore_sqlite.interchange.parquet.location import MANIFEST, locate
from infrastore_sqlite.interchange.parquet.parallel import order


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return varied_store_file(tmp_path_factory.mktemp("varied") / "varied.h5")


@pytest.fixture(scope="module")
def one_process(varied: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("one") / "pq"
    with Store.open(varied, read_only=True) as s:
        export_parquet(s, out)
    return {p.name: p.read_bytes() for p in out.iterdir()}


@pytest.fixture(params=["small", "large"])
def broken(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    """A store of two partitions, one of whose array file is truncated, and that series'
    name: the small partition's (this process writes it: the workers take the largest
    first) or the large one's (a worker writes it); the other writer may well finish."""
    path = tmp_path / "broken.h5"
    s = new_store(path)
    series = {"a": sts("a", np.arange(5000.0)), "b": sts("b", np.arange(100, dtype=np.int64))}
    damaged = "b" if request.param == "small" else "a"
    for name in sorted(series, key=lambda n: n == damaged):  # the damaged one last
        add(s, series[name])
    s.close()
    segments = sorted((path / "segments").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    assert len(segments) == 2
    segments[-1].write_bytes(segments[-1].read_bytes()[:100])
    return path, damaged


def test_workers_write_the_files_one_process_writes(
    varied: Path, one_process: dict[str, bytes], tmp_path: Path
) -> None:
    with Store.open(varied, read_only=True) as s:
        for jobs in (2, 3):
            out = tmp_path / f"jobs{jobs}"
            parts = export_parquet(s, out, jobs=jobs)
            assert len(parts) * 3 == len(one_process)
            assert {p.name: p.read_bytes() for p in out.iterdir()} == one_process


def test_workers_write_the_same_objects_and_manifest(
    varied: Path, one_process: dict[str, bytes], s3_server: Any
) -> None:
    prefixes = [f"jobs-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    with Store.open(varied, read_only=True) as s:
        for prefix, jobs in zip(prefixes, (1, 2), strict=True):
            export_parquet(
                s, f"s3://infrastore/{prefix}", storage_options=s3_server.options, jobs=jobs
            )
    one, two = (locate(f"s3://infrastore/{p}", s3_server.options) for p in prefixes)
    assert sorted(two.listdir()) == sorted([*one_process, MANIFEST])
    for name, data in one_process.items():
        assert (two / name).read_bytes() == data, name
    manifests = [json.loads((r / MANIFEST).read_bytes()) for r in (one, two)]
    for m in manifests:
        for f in m["files"]:
            f["key"] = f["key"].split("/", 1)[1]
    assert manifests[0]["files"] == manifests[1]["files"]


def test_workers_see_the_environment_as_it_is_when_the_export_starts(
    varied: Path, one_process: dict[str, bytes], s3_server: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """The workers come from a fork server started by an earlier export; the server's
    endpoint and keys, set in the AWS_* variables after it started, reach them."""
    with Store.open(varied, read_only=True) as s:
        export_parquet(s, tmp_path / "first", jobs=2)  # the fork server runs from here on
        for key, value in s3_server.env.items():
            monkeypatch.setenv(key, value)
        prefix = f"env-{uuid.uuid4().hex[:8]}"
        export_parquet(s, f"s3://infrastore/{prefix}/", jobs=2)
    root = locate(f"s3://infrastore/{prefix}", s3_server.options)
    assert sorted(root.listdir()) == sorted([*one_process, MANIFEST])


def test_one_worker_failing_leaves_nothing_in_a_directory(
    broken: tuple[Path, str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with Store.open(broken[0], read_only=True) as s:
        # The writer's read fails on the damaged segment, naming the series and the file.
        with pytest.raises(DamagedStoreError, match=rf"cannot read '{broken[1]}' .* is damaged"):
            export_parquet(s, out, jobs=2)
        assert not out.exists()
        out.mkdir()
        with pytest.raises(DamagedStoreError):
            export_parquet(s, out, jobs=2)
    assert list(out.iterdir()) == []


def test_one_worker_failing_leaves_nothing_in_object_storage(
    broken: tuple[Path, str], s3_server: Any
) -> None:
    prefix = f"broken-{uuid.uuid4().hex[:8]}"
    with Store.open(broken[0], read_only=True) as s, pytest.raises(DamagedStoreError):
        export_parquet(s, f"s3://infrastore/{prefix}/", storage_options=s3_server.options, jobs=2)
    assert locate(f"s3://infrastore/{prefix}", s3_server.options).listdir() == []


def test_partitions_are_handed_out_largest_first() -> None:
    from types import SimpleNamespace

    plan = SimpleNamespace(partitions=[SimpleNamespace(rows=r) for r in (10, 500, 20, 500, 5)])
    # By rows, descending; equal ones in partition order.
    assert order(plan) == [1, 3, 2, 0, 4]  # type: ignore[arg-type]


def test_more_jobs_than_partitions(
    varied: Path, one_process: dict[str, bytes], tmp_path: Path
) -> None:
    out = tmp_path / "many"
    with Store.open(varied, read_only=True) as s:
        export_parquet(s, out, jobs=len(one_process))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == one_process


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True])
def test_a_bad_jobs_is_refused(varied: Path, tmp_path: Path, jobs: Any) -> None:
    with Store.open(varied, read_only=True) as s, pytest.raises(InvalidParameterError) as err:
        export_parquet(s, tmp_path / "x", jobs=jobs)
    assert f"jobs={jobs!r}" in str(err.value) and "--jobs N" in str(err.value)
    assert not (tmp_path / "x").exists()


def test_the_cli_takes_jobs(varied: Path, one_process: dict[str, bytes], tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "cli"
    args = ["--store", str(varied), "export", "-f", "parquet", "--dir", str(out), "--jobs", "2"]
    result = runner.invoke(cli, args, prog_name=PROG)
    assert result.exit_code == 0, result.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == one_process
    sqlite = ["--store", str(varied), "export", "--db", str(tmp_path / "x.db"), "--jobs", "2"]
    refused = runner.invoke(cli, sqlite, prog_name=PROG)
    assert refused.exit_code == 2 and "--jobs goes with -f parquet" in refused.stderr
