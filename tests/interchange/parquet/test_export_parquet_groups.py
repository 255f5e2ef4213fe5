"""The series and arrays files written a row group at a time (issue 37 Must 3).

The export builds each of these files a group of ``TABLE_GROUP_ROWS`` rows at a time and
drops each group once written, so its memory does not grow with the selection. These
tests shrink the group so that a few series make several groups, and check the bound
without timing: no group is longer than the window, each is dropped before the next is
built, and the files hold the rows of a one-group export, read back by every reader.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from varied_store import add, build_varied, new_store, sts

from infrastore_sqlite import Store
from infrastore_sqlite.interchange.parquet import encode
from infrastore_sqlite.interchange.parquet import export as writer
from infrastore_sqlite.interchange.parquet.layout import ROW_GROUP_ROWS, TABLE_GROUP_ROWS


def _many(path: Path, n: int) -> Store:
    """``n`` series of one partition; every third shares the array of the one before,
    so the series file has more rows than the arrays file."""
    store = new_store(path)
    for i in range(n):
        seed = i - 1 if i % 3 == 2 else i
        add(store, sts(f"s{i:03d}", np.arange(5, dtype=np.float64) + 10 * seed), owner=i + 1)
    return store


def _groups(file: str) -> list[int]:
    meta = pq.ParquetFile(file).metadata
    return [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]


def test_the_window_is_smaller_than_a_values_group() -> None:
    # The point of the window: a series or arrays file is never held whole, even when it
    # would fit one values group (one group a file up to a million series).
    assert 0 < TABLE_GROUP_ROWS < ROW_GROUP_ROWS


def test_series_and_arrays_files_hold_several_groups_with_the_rows_of_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _many(tmp_path / "s.h5", 20)  # 20 series, 14 distinct arrays
    (whole,) = store.export_parquet(tmp_path / "one")
    monkeypatch.setattr(writer, "TABLE_GROUP_ROWS", 4)
    (cut,) = store.export_parquet(tmp_path / "cut")
    assert _groups(whole["series_file"]) == [20]
    assert _groups(whole["arrays_file"]) == [14]
    assert _groups(cut["series_file"]) == [4, 4, 4, 4, 4]
    assert _groups(cut["arrays_file"]) == [4, 4, 4, 2]
    for role in ("series_file", "arrays_file", "values_file"):
        one, several = pq.read_table(whole[role]), pq.read_table(cut[role])
        assert several.equals(one), role
        # The footer the layout requires, in each file of the cut export.
        assert pq.read_schema(cut[role]).metadata == pq.read_schema(whole[role]).metadata
    # The declared order and the statistics readers prune by, per group.
    meta = pq.ParquetFile(cut["arrays_file"]).metadata
    ids = [
        (meta.row_group(g).column(0).statistics.min, meta.row_group(g).column(0).statistics.max)
        for g in range(meta.num_row_groups)
    ]
    assert ids == [(1, 4), (5, 8), (9, 12), (13, 14)]
    assert meta.row_group(0).sorting_columns
    store.close()


def test_each_group_is_dropped_before_the_next_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer holds one group: when the next is built, the one before is gone, and
    none is longer than the window."""
    window = 3
    monkeypatch.setattr(writer, "TABLE_GROUP_ROWS", window)
    held: dict[str, list[Any]] = {"series": [], "arrays": []}
    sizes: dict[str, list[int]] = {"series": [], "arrays": []}

    def watched(kind: str, real: Any) -> Any:
        def groups(*args: Any) -> Any:
            before: weakref.ref[Any] | None = None
            for table in real(*args):
                gc.collect()
                held[kind].append(before is not None and before() is not None)
                sizes[kind].append(table.num_rows)
                before = weakref.ref(table)
                yield table
                del table

        return groups

    monkeypatch.setattr(writer, "series_groups", watched("series", encode.series_groups))
    monkeypatch.setattr(writer, "arrays_groups", watched("arrays", encode.arrays_groups))
    store = _many(tmp_path / "s.h5", 11)  # 11 series, 8 distinct arrays
    (e,) = store.export_parquet(tmp_path / "out")
    assert sizes == {"series": [3, 3, 3, 2], "arrays": [3, 3, 2]}
    assert held == {"series": [False] * 4, "arrays": [False] * 3}
    assert _groups(e["series_file"]) == sizes["series"]
    store.close()


def test_a_varied_store_cut_in_groups_imports_as_one_group_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every partition type, its series and arrays files in groups of two rows: the
    import (which never assumes one group) adds every series, as from a one-group
    export."""
    src = new_store(tmp_path / "src.h5")
    build_varied(src)
    whole = src.export_parquet(tmp_path / "one")
    monkeypatch.setattr(writer, "TABLE_GROUP_ROWS", 2)
    cut = src.export_parquet(tmp_path / "cut")
    src.close()
    assert any(len(_groups(e["series_file"])) > 1 for e in cut)
    assert any(len(_groups(e["arrays_file"])) > 1 for e in cut)
    stores = []
    for name in ("one", "cut"):
        dst = new_store(tmp_path / f"{name}.h5")
        ids = dst.import_parquet(tmp_path / name)
        assert isinstance(ids, list)
        assert len(ids) == sum(e["series"] for e in whole)
        stores.append(dst)
    a, b = stores
    metas = [sorted(s.list_metadata(), key=lambda m: (m["name"], m["owner_id"])) for s in stores]
    assert len(metas[0]) == len(metas[1]) > 0
    for ma, mb in zip(*metas, strict=True):
        assert {k: v for k, v in ma.items() if k != "id"} == {
            k: v for k, v in mb.items() if k != "id"
        }
        ta, tb = a.read_by_id(ma["id"]), b.read_by_id(mb["id"])
        assert type(ta) is type(tb)
        assert np.array_equal(np.asarray(ta.data), np.asarray(tb.data), equal_nan=True)
    for s in stores:
        s.close()


def test_other_readers_read_the_grouped_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _many(tmp_path / "s.h5", 10)
    monkeypatch.setattr(writer, "TABLE_GROUP_ROWS", 3)
    (e,) = store.export_parquet(tmp_path / "out")
    store.close()
    series = pl.read_parquet(e["series_file"])
    assert series.height == 10
    keys = list(zip(series["array_id"].to_list(), series["id"].to_list(), strict=True))
    assert keys == sorted(keys)  # by array_id, then id, across the groups
    joined = duckdb.sql(
        f"SELECT count(*), count(DISTINCT a.id) FROM '{e['series_file']}' s "
        f"JOIN '{e['arrays_file']}' a ON a.id = s.array_id"
    ).fetchone()
    assert joined == (10, 7)
    assert pa.types.is_int64(pq.read_schema(e["arrays_file"]).field("id").type)
