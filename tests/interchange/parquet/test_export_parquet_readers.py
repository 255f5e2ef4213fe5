"""The Parquet export as query engines read it: DuckDB, Polars and pandas.

DuckDB runs the layout's join and view on the files and must answer as SQLite does on
``-f sqlite`` of the same store; Polars and pandas must read every file of the varied
export with the right types.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow.parquet as pq
import pytest
from export_parquet_helpers import ARROW_DTYPES
from varied_store import add, build_varied, new_store, sts

H = timedelta(hours=1)

JOIN = """
SELECT s.name, s.owner_id, s.units, max(v.value) AS peak
FROM {values} v
JOIN {series} s USING (array_id)
GROUP BY s.name, s.owner_id, s.units
ORDER BY s.name, s.owner_id
"""
VIEW = """
CREATE VIEW load AS
SELECT s.*, v.timestamp, v.value
FROM {values} v
JOIN {series} s USING (array_id)
"""
VIEW_QUERY = "SELECT {ts}, value FROM load WHERE owner_id = 42 AND name = 'load' ORDER BY timestamp"


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("pq_duck")
    store = new_store(d / "s.h5")
    rng = np.random.default_rng(7)
    profile = rng.random(48)
    for owner in range(40, 46):
        add(store, sts("load", profile if owner % 2 else rng.random(48), units="MW"), owner=owner)
        add(store, sts("wind", rng.random(48) * owner), owner=owner)
    sq = store.export_sqlite(d / "e.sqlite")
    (res,) = store.export_parquet(d / "parquet")
    yield d, sq[0], res
    store.close()


def test_duckdb_join_and_view_answer_as_sqlite(both) -> None:
    _d, sq, res = both
    con = sqlite3.connect(_d / "e.sqlite")
    want_join = con.execute(
        JOIN.format(values=f'"{sq["values_table"]}"', series=f'"{sq["series_table"]}"')
    ).fetchall()
    con.execute(VIEW.format(values=f'"{sq["values_table"]}"', series=f'"{sq["series_table"]}"'))
    want_view = con.execute(VIEW_QUERY.format(ts="timestamp")).fetchall()
    con.close()

    duck = duckdb.connect()
    files = {k: f"'{res[f'{k}_file']}'" for k in ("values", "series")}
    got_join = duck.execute(JOIN.format(**files)).fetchall()
    duck.execute(VIEW.format(**files))
    got_view = duck.execute(VIEW_QUERY.format(ts="epoch_ms(timestamp)")).fetchall()
    assert len(want_join) == 12 and len(want_view) == 48
    assert got_join == want_join
    assert got_view == want_view


def test_duckdb_reads_the_types(both) -> None:
    _, _, res = both
    duck = duckdb.connect()
    types = dict(
        duck.execute(f"DESCRIBE SELECT * FROM '{res['values_file']}'").fetchall()[i][:2]
        for i in range(3)
    )
    assert types == {
        "array_id": "BIGINT",
        "timestamp": "TIMESTAMP WITH TIME ZONE",
        "value": "DOUBLE",
    }


@pytest.fixture(scope="module")
def varied_files(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("pq_readers")
    store = new_store(d / "s.h5")
    build_varied(store)
    res = store.export_parquet(d / "out", include_derived=True)
    yield res
    store.close()


POLARS_DTYPES = {
    "f64": pl.Float64,
    "f32": pl.Float32,
    "i64": pl.Int64,
    "i32": pl.Int32,
    "u64": pl.UInt64,
    "bool": pl.Boolean,
    "i16": pl.Int16,
    "i8": pl.Int8,
    "u32": pl.UInt32,
    "u16": pl.UInt16,
    "u8": pl.UInt8,
}


def _leaf_dtype(value_type: str) -> str:
    if value_type.startswith("tuple"):
        return value_type.split("_")[1]
    if "function" in value_type or value_type.startswith("piecewise"):
        return "f64"
    return value_type.split("_")[0]


def test_polars_reads_every_file_with_the_right_types(varied_files) -> None:
    for e in varied_files:
        df = pl.read_parquet(e["values_file"])
        ts = df.schema["timestamp"]
        assert isinstance(ts, pl.Datetime) and ts.time_unit == "ms"
        ref = e["time_reference"]
        if ref == "zoneless":
            assert ts.time_zone is None
        elif ref in ("utc", "unspecified"):
            assert ts.time_zone == "UTC"
        elif ref == "-07:00":
            assert ts.time_zone == "Etc/GMT+7"  # how Polars spells a fixed offset
        else:
            assert ts.time_zone == ref
        value = df.schema["value"]
        shape = pq.read_schema(e["values_file"]).metadata[b"element_shape"].decode()
        while isinstance(value, pl.Array):
            value = value.inner
        assert value == POLARS_DTYPES[_leaf_dtype(e["value_type"])], e["values_file"]
        if shape != "[]":
            assert isinstance(df.schema["value"], pl.Array)
        assert df.height == e["rows"]
        series = pl.read_parquet(e["series_file"])
        assert series.schema["array_id"] == pl.Int64 and series.schema["name"] == pl.String
        assert series.height == e["series"]
        arrays = pl.read_parquet(e["arrays_file"])
        assert arrays.columns == ["id", "data_hash", "time_axis"] and arrays.height == e["arrays"]


def test_pandas_reads_every_file_with_the_right_types(varied_files) -> None:
    for e in varied_files:
        df = pd.read_parquet(e["values_file"], engine="pyarrow", dtype_backend="pyarrow")
        assert len(df) == e["rows"]
        ts = df["timestamp"].dtype.pyarrow_dtype
        assert ts.unit == "ms"
        leaf = df["value"].dtype.pyarrow_dtype
        while hasattr(leaf, "list_size"):
            leaf = leaf.value_type
        assert leaf == ARROW_DTYPES[_leaf_dtype(e["value_type"])], e["values_file"]
        plain = pd.read_parquet(e["values_file"], engine="pyarrow")
        if e["value_type"] in ("u64", "u32", "u16", "u8", "i8", "i16", "i32", "i64", "f32"):
            assert plain["value"].dtype == np.dtype(ARROW_DTYPES[e["value_type"]].to_pandas_dtype())
        series = pd.read_parquet(e["series_file"], engine="pyarrow")
        assert len(series) == e["series"]
        assert pd.read_parquet(e["arrays_file"], engine="pyarrow")["id"].dtype == np.int64


def test_polars_reads_an_odd_offset_only_when_told(tmp_path: Path) -> None:
    """The docs' +05:30 caveat, as Polars behaves: unreadable unless
    POLARS_IGNORE_TIMEZONE_PARSE_ERROR=1 (Polars panics, so it runs in a child)."""
    store = new_store(tmp_path / "s.h5")
    start = datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    add(store, sts("ist", [1.0, 2.0], start=start))
    (e,) = store.export_parquet(tmp_path / "out")
    store.close()
    assert pq.read_schema(e["values_file"]).field("timestamp").type.tz == "+05:30"
    assert e["values_file"].endswith("SingleTimeSeries.f64.offset_plus05_30.values.parquet")
    code = f"import polars; print(polars.read_parquet({e['values_file']!r}).height)"
    env = {k: v for k, v in os.environ.items() if k != "POLARS_IGNORE_TIMEZONE_PARSE_ERROR"}
    bad = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert bad.returncode != 0 and "POLARS_IGNORE_TIMEZONE_PARSE_ERROR" in bad.stderr
    env["POLARS_IGNORE_TIMEZONE_PARSE_ERROR"] = "1"
    ok = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and ok.stdout.strip() == "2"
