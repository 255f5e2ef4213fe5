"""The export plan's columns held narrow (``plan.narrow``): what a plan holds per series
is bounded in bytes, and the narrow columns export the same rows as wide ones would.

Issue 37 (Must 3): an export holds its plan from start to end, so its columns are the
part of the export's memory that grows with the selection.
"""

from __future__ import annotations

import sqlite3
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.interchange.plan import narrow, plan_export

T0 = datetime(2024, 1, 1, tzinfo=UTC)
N = 600


def held_bytes(column: np.ndarray) -> int:
    """Bytes a column holds of its own (a broadcast of one value holds that value)."""
    if column.size and column.strides[0] == 0:
        return column.itemsize
    return column.nbytes


def test_one_value_throughout_is_held_once() -> None:
    column = np.full(1000, 1_704_067_200_000, dtype=np.int64)
    out = narrow(column)
    assert held_bytes(out) == 8
    assert out.tolist() == column.tolist()
    assert out[np.array([3, 999])].tolist() == [1_704_067_200_000] * 2
    with pytest.raises(ValueError):
        out[0] = 1  # read-only: nothing may write through the shared value


def test_values_that_fit_become_int32_and_others_stay() -> None:
    small = np.arange(-5, 5, dtype=np.int64)
    assert narrow(small).dtype == np.int32
    assert narrow(small).tolist() == small.tolist()
    wide = np.array([0, 2**31], dtype=np.int64)
    assert narrow(wide).dtype == np.int64
    assert narrow(wide).tolist() == [0, 2**31]
    low = np.array([-(2**31) - 1, 0], dtype=np.int64)
    assert narrow(low).dtype == np.int64
    empty = np.array([], dtype=np.int64)
    assert narrow(empty).size == 0


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = Store.create(tmp_path / "s.h5")
    s.add_time_series_bulk(
        {
            "owner_id": 1 + i % 7,
            "owner_type": "Gen",
            "owner_category": "Component",
            "time_series": SingleTimeSeries(
                T0, "PT1H", np.arange(24, dtype=np.float64) + i, f"s{i}"
            ),
        }
        for i in range(N)
    )
    yield s
    s.close()


def test_a_plan_holds_few_bytes_a_series(store: Store) -> None:
    (pp,) = plan_export(store).partitions
    per_series = sum(held_bytes(c) for c in (pp.ids, pp.owners, pp.aids, pp.anchors, pp.counts))
    per_array = sum(held_bytes(c) for c in (pp.array_rows, pp.firsts, pp.axes.codes))
    # int64 throughout was 40 bytes a series and 24 an array (beside the 32-byte hash);
    # here ids, owners and array ids are int32, the one start and length held once.
    assert per_series <= 12 * N + 16
    assert per_array <= 12 * N + 8


def test_narrow_columns_export_what_the_store_holds(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.db"
    store.export_sqlite(str(out))
    table = "SingleTimeSeries_f64_utc"
    with sqlite3.connect(out) as db:
        rows = db.execute(
            f'SELECT id, owner_id, array_id, name, initial_timestamp, length FROM "{table}_series" '
            "ORDER BY id"
        ).fetchall()
        # Each series' array holds its own values (the i-th series starts at i).
        first = dict(
            db.execute(
                f'SELECT array_id, min(value) FROM "{table}_values" GROUP BY array_id'
            ).fetchall()
        )
    assert [r[0] for r in rows] == list(range(1, N + 1))
    assert [r[1] for r in rows] == [1 + i % 7 for i in range(N)]
    assert sorted(r[2] for r in rows) == list(range(1, N + 1))  # every array distinct
    assert [first[r[2]] for r in rows] == [float(int(r[3][1:])) for r in rows]
    assert {r[4] for r in rows} == {int(T0.timestamp() * 1000)}
    assert {r[5] for r in rows} == {24}
