"""A partition's file written as a directory of part files (``parquet-layout.md`` §7), by the
engines themselves with their defaults: Dask ``to_parquet`` (``part.N.parquet``), DuckDB
``COPY … (PER_THREAD_OUTPUT)`` (``data_N.parquet``), Polars ``write_parquet(partition_by=…)``
(``key=value/`` directories) and pyarrow ``write_dataset`` (``part-N.parquet``). Each round
trip edits the values in the engine, writes every file of the export as a directory, runs
``rehash --dir`` and ``add --replace`` through the CLI, and ends with the edited values in
the store; locally and on the real S3 server (the directories copied up as they are).
Spark, which needs its JVM, is in ``test_import_parquet_spark.py``.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from test_import_parquet import assert_same_store
from varied_store import add, build_varied, new_store, sts

from infrastore_sqlite import Store
from infrastore_sqlite.cli import cli
from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.parquet.location import locate

ORDER = {
    "values": ["array_id", "timestamp"],
    "series": ["array_id", "id"],
    "arrays": ["id"],
}
#: What the engines add to each value.
EDIT = 1000.0


def _role(f: Path) -> str:
    return f.name.rsplit(".", 2)[1]


def _dask(f: Path, dst: Path, edit: bool) -> None:
    df = dd.read_parquet(f, dtype_backend="pyarrow")
    if edit and _role(f) == "values":
        df["value"] = df["value"] + EDIT
    df.repartition(npartitions=3).to_parquet(dst)


def _duckdb(f: Path, dst: Path, edit: bool) -> None:
    con = duckdb.connect()
    con.execute("SET threads = 4")
    sel = "* REPLACE (value + 1000 AS value)" if edit and _role(f) == "values" else "*"
    order = ", ".join(ORDER[_role(f)])
    con.execute(
        f"COPY (SELECT {sel} FROM read_parquet('{f}') ORDER BY {order}) TO '{dst}' "
        # Small files are one part per thread: a file per 2,048-row group makes several.
        "(FORMAT parquet, PER_THREAD_OUTPUT, ROW_GROUP_SIZE 2048, ROW_GROUPS_PER_FILE 1)"
    )
    con.close()


def _polars(f: Path, dst: Path, edit: bool) -> None:
    df = pl.read_parquet(f)
    if edit and _role(f) == "values":
        df = df.with_columns(value=pl.col("value") + EDIT)
    df.write_parquet(dst, partition_by=ORDER[_role(f)][0])


def _pyarrow(f: Path, dst: Path, edit: bool) -> None:
    t = pq.read_table(f)
    if edit and _role(f) == "values":
        i = t.schema.get_field_index("value")
        t = t.set_column(i, "value", pa.compute.add(t.column("value"), EDIT))
    ds.write_dataset(t, dst, format="parquet", max_rows_per_file=3000, max_rows_per_group=3000)


ENGINES = {"dask": _dask, "duckdb": _duckdb, "polars": _polars, "pyarrow": _pyarrow}


def _export(tmp_path: Path) -> tuple[Path, Path]:
    """A store of seven hourly f64 series of 2,000 steps, exported (one partition)."""
    path = tmp_path / "src.h5"
    s = new_store(path)
    for k in range(7):
        add(s, sts("load", np.arange(2000.0) + 10_000 * k), owner=k + 1)
    s.export_parquet(tmp_path / "out")
    s.close()
    return path, tmp_path / "out"


def _rewrite(engine: Any, out: Path, dst: Path, *, edit: bool = True) -> None:
    """Every file of the export written again by ``engine``, as a directory of parts."""
    dst.mkdir()
    for f in sorted(out.glob("*.parquet")):
        engine(f, dst / f.name, edit)
        assert (dst / f.name).is_dir()


def _values(store_path: Path) -> dict[int, list[float]]:
    s = Store.open(store_path)
    try:
        return {m["owner_id"]: s.read_by_id(m["id"]).data.tolist() for m in s.list_metadata()}
    finally:
        s.close()


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _round_trip(store: Path, where: str, extra: tuple[str, ...] = ()) -> None:
    """``diff``, ``rehash --dir`` and ``add --replace`` of ``where`` through the CLI."""
    r = _run("--store", str(store), "-f", "json", "diff", "--parquet", where, *extra)
    assert r.exit_code == 0, r.stderr
    items = json.loads(r.stdout)["items"]
    assert len(items) == 7 and all(e["change"] == "replaced" and e["hash_stale"] for e in items)
    r = _run("-f", "json", "rehash", "--dir", where, *extra)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["rehashed"] == 7
    r = _run("--store", str(store), "-f", "json", "add", "--parquet", where, "--replace", *extra)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["replaced"] == 7


@pytest.mark.parametrize("engine", list(ENGINES))
def test_each_engines_part_directories_come_back_edited(tmp_path: Path, engine: str) -> None:
    store, out = _export(tmp_path)
    before = _values(store)
    dst = tmp_path / engine
    _rewrite(ENGINES[engine], out, dst)
    parts = [p for p in (dst / "SingleTimeSeries.f64.utc.values.parquet").rglob("*.parquet")]
    assert len(parts) > 1  # the engine really wrote several parts
    _round_trip(store, str(dst))
    after = _values(store)
    assert after == {k: [v + EDIT for v in vals] for k, vals in before.items()}


@pytest.mark.parametrize("engine", ["dask", "duckdb"])
def test_the_varied_store_comes_back_through_part_directories(tmp_path: Path, engine) -> None:
    src = new_store(tmp_path / "src.h5")
    build_varied(src)
    src.export_parquet(tmp_path / "out", include_derived=False)
    dst_dir = tmp_path / "parts"
    _rewrite(ENGINES[engine], tmp_path / "out", dst_dir, edit=False)
    dst = new_store(tmp_path / "dst.h5")
    dst.import_parquet(dst_dir)
    assert_same_store(src, dst)


def test_a_named_part_directory_and_its_stem_import_one_partition(tmp_path: Path) -> None:
    _store, out = _export(tmp_path)
    dst = tmp_path / "dask"
    _rewrite(_dask, out, dst, edit=False)
    values = dst / "SingleTimeSeries.f64.utc.values.parquet"
    for where in (values, dst / "SingleTimeSeries.f64.utc"):
        s = new_store(tmp_path / f"{where.name}.h5")
        assert len(s.import_parquet(where)) == 7
        s.close()


def test_a_part_named_alone_is_refused_naming_its_directory(tmp_path: Path) -> None:
    _, out = _export(tmp_path)
    dst = tmp_path / "polars"
    _rewrite(_polars, out, dst, edit=False)
    values = dst / "SingleTimeSeries.f64.utc.values.parquet"
    part = next(values.rglob("*.parquet"))
    with pytest.raises(InvalidParameterError, match="one part of") as e:
        new_store(tmp_path / "x.h5").import_parquet(part)
    assert str(values) in str(e.value)


def test_underscore_and_dot_files_are_skipped(tmp_path: Path) -> None:
    _store, out = _export(tmp_path)
    dst = tmp_path / "pa"
    _rewrite(_pyarrow, out, dst, edit=False)
    for d in dst.iterdir():
        (d / "_SUCCESS").write_bytes(b"")
        (d / ".part-0.parquet.crc").write_bytes(b"not parquet")
        (d / "_temporary").mkdir()
        (d / "_temporary" / "part-9.parquet").write_bytes(b"half written")
    s = new_store(tmp_path / "dst.h5")
    assert len(s.import_parquet(dst)) == 7


def test_an_unsorted_part_is_refused_naming_it_and_the_engines_sort(tmp_path: Path) -> None:
    _, out = _export(tmp_path)
    dst = tmp_path / "dask"
    _rewrite(_dask, out, dst, edit=False)
    values = dst / "SingleTimeSeries.f64.utc.values.parquet"
    part = values / "part.1.parquet"
    t = pq.read_table(part)
    pq.write_table(t.take(pa.array(np.arange(t.num_rows)[::-1])), part)
    before = _values(tmp_path / "src.h5")
    with pytest.raises(InvalidParameterError) as e:
        new_store(tmp_path / "dst.h5").import_parquet(dst)
    msg = str(e.value)
    assert str(part) in msg and "is not sorted by array_id" in msg
    assert "sortWithinPartitions" in msg and "ORDER BY" in msg and "sort_values" in msg
    assert _values(tmp_path / "src.h5") == before


def test_an_array_continues_from_one_part_into_the_next(tmp_path: Path) -> None:
    store, out = _export(tmp_path)
    dst = tmp_path / "split"
    dst.mkdir()
    for f in out.glob("*.parquet"):
        shutil.copy(f, dst / f.name)
    values = dst / "SingleTimeSeries.f64.utc.values.parquet"
    t = pq.read_table(values)
    values.unlink()
    values.mkdir()
    # Cut in the middle of arrays, and written out of name order: one array in three parts.
    for name, (lo, hi) in {"b": (2500, 3500), "a": (0, 2500), "c": (3500, t.num_rows)}.items():
        pq.write_table(t.slice(lo, hi - lo), values / f"{name}.parquet")
    s = new_store(tmp_path / "dst.h5")
    s.import_parquet(dst)
    s.close()
    assert _values(tmp_path / "dst.h5") == _values(store)


def test_parts_whose_rows_interleave_are_merged(tmp_path: Path) -> None:
    store, out = _export(tmp_path)
    dst = tmp_path / "interleaved"
    dst.mkdir()
    for f in out.glob("*.parquet"):
        shutil.copy(f, dst / f.name)
    values = dst / "SingleTimeSeries.f64.utc.values.parquet"
    t = pq.read_table(values)
    values.unlink()
    values.mkdir()
    # Rows dealt round-robin to three parts (as a hash repartition does), each sorted.
    for k in range(3):
        pq.write_table(t.take(pa.array(np.arange(k, t.num_rows, 3))), values / f"p{k}.parquet")
    s = new_store(tmp_path / "dst.h5")
    s.import_parquet(dst)
    s.close()
    assert _values(tmp_path / "dst.h5") == _values(store)


# ------------------------------------------------------------------------------ object storage
def _upload(server: Any, local: Path, prefix: str) -> str:
    """``local`` copied to ``s3://infrastore/<prefix>`` as it is (``aws s3 cp --recursive``)."""
    root = locate(f"s3://infrastore/{prefix}", server.options)
    for f in sorted(local.rglob("*")):
        if f.is_file():
            (root / f.relative_to(local).as_posix()).put(f.read_bytes())
    return f"s3://infrastore/{prefix}"


@pytest.mark.parametrize("engine", ["dask", "duckdb", "polars"])
def test_part_directories_in_object_storage_come_back_edited(
    s3_server: Any, tmp_path: Path, engine: str
) -> None:
    store, out = _export(tmp_path)
    before = _values(store)
    dst = tmp_path / engine
    _rewrite(ENGINES[engine], out, dst)
    (dst / "SingleTimeSeries.f64.utc.values.parquet" / "_SUCCESS").write_bytes(b"")
    uri = _upload(s3_server, dst, f"parts-{uuid.uuid4().hex[:8]}")
    opts = tuple(f"--storage-option={k}={v}" for k, v in s3_server.options.items())
    _round_trip(store, uri, opts)
    assert _values(store) == {k: [v + EDIT for v in vals] for k, vals in before.items()}
