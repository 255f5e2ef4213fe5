"""A bulk add whose arrays reach the segment writer in several parts.

``Writing.store_arrays`` hands a pool's new arrays to the segment writer a few MiB at a
time (``WRITE_PART_BYTES``) and inserts each part's catalog rows while the writer stores
it. Here a pool of 1 MiB arrays spans several parts, beside an empty array (no slot) and
a second pool, and one array shared by two series: every series reads back as added,
after a reopen too, the slots and ids follow the order written, and ``verify`` passes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pytest

from infrastore_sqlite import DuplicateTimeSeriesError, SingleTimeSeries, Store
from infrastore_sqlite.store.writing import WRITE_PART_BYTES

T0 = datetime(2024, 7, 1, tzinfo=UTC)
BIG = 131_072  # f64 values: 1 MiB an array


def _item(owner: int, values: np.ndarray, name: str = "load") -> dict:
    return {
        "owner_id": owner,
        "owner_type": "PowerLoad",
        "owner_category": "Component",
        "time_series": SingleTimeSeries(T0, "PT1H", values, name),
    }


def _catalog(store_path: Path, sql: str) -> list[tuple]:
    """Rows of ``sql`` on the closed store's catalog, read-only."""
    conn = apsw.Connection(str(store_path / "catalog.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _values() -> list[np.ndarray]:
    rng = np.random.default_rng(37)
    big = [rng.standard_normal(BIG) for _ in range(4 * WRITE_PART_BYTES // (8 * BIG) + 1)]
    return [
        *big,
        big[2],  # the same array as an earlier series: stored once
        np.array([], dtype=np.float64),  # empty: a catalog row without a slot
        rng.integers(0, 100, 24).astype(np.int64),  # another pool
        *(rng.standard_normal(24) for _ in range(3)),
    ]


def test_a_pool_written_in_parts_reads_back_in_order(store_path: Path) -> None:
    values = _values()
    with Store.create(store_path) as store:
        ids = store.add_time_series_bulk([_item(k + 1, v) for k, v in enumerate(values)])
        assert ids == list(range(1, len(values) + 1))
        for sid, v in zip(ids, values, strict=True):
            got = store.read_by_id(sid).data
            assert got.dtype == v.dtype and np.array_equal(got, v)
    with Store.open(store_path) as store:
        assert [store.read_by_id(i).data.tolist() for i in ids] == [v.tolist() for v in values]
        assert store.verify_integrity()["ok"]
    rows = _catalog(store_path, "SELECT id, pool, slot, segment FROM arrays ORDER BY id")
    # One row per distinct array; ids numbered in the order written, each pool's slots
    # consecutive from 0 in that order, all in the transaction's one segment.
    assert len(rows) == len(values) - 1
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    by_pool: dict[str, list[int]] = {}
    for _id, pool, slot, _seg in rows:
        by_pool.setdefault(pool, []).append(slot)
    assert by_pool.pop("") == [-1]
    assert all(slots == list(range(len(slots))) for slots in by_pool.values())
    assert len(by_pool) == 3  # f64 of two shapes, i64
    assert len({r[3] for r in rows if r[1]}) == 1
    big_slots = max(by_pool.values(), key=len)
    assert len(big_slots) * 8 * BIG > 4 * WRITE_PART_BYTES  # several parts indeed


def test_a_refused_bulk_add_in_parts_leaves_the_store_as_it_was(store_path: Path) -> None:
    values = _values()
    with Store.create(store_path) as store:
        first = store.add_time_series(
            owner_id=1,
            owner_type="PowerLoad",
            owner_category="Component",
            time_series=SingleTimeSeries(T0, "PT1H", np.arange(3.0), "load"),
        )
        before = store.list_metadata()
        # The last item has the identity of the stored series: all or nothing.
        items = [_item(k + 2, v) for k, v in enumerate(values)] + [_item(1, values[0])]
        with pytest.raises(DuplicateTimeSeriesError, match=r"'load' \(owner 1\)"):
            store.add_time_series_bulk(items)
        assert store.list_metadata() == before
        assert store.read_by_id(first).data.tolist() == [0.0, 1.0, 2.0]
        assert store.verify_integrity()["ok"]
    assert _catalog(store_path, "SELECT count(*) FROM arrays") == [(1,)]
