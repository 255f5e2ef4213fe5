"""Files a query engine rewrote import identical to the originals (``parquet-layout.md`` §7,
§9): a DuckDB ``COPY (SELECT … ORDER BY …) TO …`` (µs timestamps zoned UTC, variable-length
lists, no footer), a Polars ``write_parquet`` (every column nullable, no footer) and a
pandas ``to_parquet`` (pyarrow dtypes). The engines really run; the varied store's export is
rewritten file by file and imported into an empty store.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow.parquet as pq
import pytest
from test_import_parquet import assert_same_store
from varied_store import build_varied, new_store

ORDER = {
    "values": "array_id, issue_time, timestamp",
    "series": "array_id, id",
    "arrays": "id",
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("pq_rewrites")
    store = new_store(d / "src.h5")
    build_varied(store)
    store.export_parquet(d / "out")
    yield store, d / "out"
    store.close()


def _files(out: Path) -> list[Path]:
    return sorted(out.glob("*.parquet"))


def _duckdb(src: Path, dst: Path) -> None:
    con = duckdb.connect()
    for f in _files(src):
        role = f.name.rsplit(".", 2)[1]
        cols = pq.read_schema(f).names
        order = ", ".join(c.strip() for c in ORDER[role].split(",") if c.strip() in cols)
        con.execute(
            f"COPY (SELECT * FROM read_parquet('{f}') ORDER BY {order}) "
            f"TO '{dst / f.name}' (FORMAT parquet)"
        )
    con.close()


def _polars(src: Path, dst: Path) -> None:
    for f in _files(src):
        pl.read_parquet(f).write_parquet(dst / f.name)


def _pandas(src: Path, dst: Path) -> None:
    for f in _files(src):
        pd.read_parquet(f, dtype_backend="pyarrow").to_parquet(dst / f.name, index=False)


@pytest.mark.parametrize("engine", [_duckdb, _polars, _pandas], ids=["duckdb", "polars", "pandas"])
def test_a_rewritten_export_imports_identical(exported, tmp_path: Path, engine) -> None:
    src, out = exported
    dst_dir = tmp_path / "rewritten"
    dst_dir.mkdir()
    engine(out, dst_dir)
    assert sorted(p.name for p in _files(dst_dir)) == sorted(p.name for p in _files(out))
    dst = new_store(tmp_path / "dst.h5")
    dst.import_parquet(dst_dir)
    assert_same_store(src, dst)


def test_duckdb_rewrite_drops_the_footer_and_fixed_lists(exported, tmp_path: Path) -> None:
    # What the test above relies on: the rewrite really is what the spec says it is.
    _, out = exported
    dst_dir = tmp_path / "rewritten"
    dst_dir.mkdir()
    _duckdb(out, dst_dir)
    schema = pq.read_schema(dst_dir / "SingleTimeSeries.f64_2x3.utc.values.parquet")
    assert b"infrastore:format" not in (schema.metadata or {})
    assert str(schema.field("timestamp").type) == "timestamp[us, tz=UTC]"
    assert schema.field("value").type.num_fields == 1
    assert "fixed_size_list" not in str(schema.field("value").type)
