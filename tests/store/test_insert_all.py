"""``Store.insert_all`` and ``Store.held_rows``: the store's one public door for imports.

The conflict rules themselves are exercised item by item in
``tests/interchange/test_filing.py`` (inside a caller's transaction, as an import calls
the door); here the door as a store operation: its own transaction when none is open,
its refusals, and what it reports.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from infrastore_sqlite import (
    DuplicateTimeSeriesError,
    InvalidParameterError,
    ReadOnlyStoreError,
    SingleTimeSeries,
    Store,
)
from infrastore_sqlite.store.conflicts import COMPARED_COLUMNS, OUTCOMES, identity
from infrastore_sqlite.store.prepare import prepare

T0 = datetime(2024, 7, 1, tzinfo=UTC)


def items(*specs: tuple[int, list[float]]):
    """Prepared items, one per ``(owner, values)``."""
    return [
        prepare(
            i,
            {
                "owner_id": owner,
                "owner_type": "PowerLoad",
                "owner_category": "Component",
                "time_series": SingleTimeSeries(T0, "PT1H", np.asarray(values), "load"),
            },
        )
        for i, (owner, values) in enumerate(specs)
    ]


def test_insert_all_outside_a_transaction_is_all_or_nothing(store: Store) -> None:
    filed = store.insert_all(items((1, [1.0, 2.0]), (2, [3.0])))
    assert filed.outcomes == ["added", "added"]
    assert [store.read_by_id(i).data.tolist() for i in filed.ids] == [[1.0, 2.0], [3.0]]
    before = store.list_metadata()
    # The second item is held: the whole call is refused, the new first one not kept.
    with pytest.raises(DuplicateTimeSeriesError, match=r"'load' \(owner 2\)"):
        store.insert_all(items((3, [5.0]), (2, [9.0])))
    assert store.list_metadata() == before
    assert not store.in_transaction


def test_insert_all_reports_each_outcome_and_counts_them(store: Store) -> None:
    first = store.insert_all(items((1, [1.0]), (2, [2.0])))
    again = store.insert_all(items((1, [1.0]), (2, [7.0]), (3, [3.0])), on_conflict="replace")
    assert again.outcomes == ["unchanged", "replaced", "added"]
    assert again.ids[:2] == first.ids  # replaced in place: the ids are kept
    assert again.counts() == {"added": 1, "replaced": 1, "unchanged": 1, "skipped": 0}
    assert set(again.counts()) == set(OUTCOMES)
    assert store.read_by_id(first.ids[1]).data.tolist() == [7.0]
    skipped = store.insert_all(items((3, [0.0])), on_conflict="ignore")
    assert skipped.outcomes == ["skipped"] and skipped.ids == [again.ids[2]]
    assert store.read_by_id(again.ids[2]).data.tolist() == [3.0]


def test_insert_all_refuses_what_it_cannot_file(store: Store, store_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="on_conflict must be one of"):
        store.insert_all(items((1, [1.0])), on_conflict="overwrite")  # type: ignore[arg-type]
    assert store.is_empty()
    # Ids an import already met: a second row of the file for one series.
    ids = store.insert_all(items((1, [1.0]))).ids
    with pytest.raises(DuplicateTimeSeriesError, match="appears twice in the file"):
        store.insert_all(items((1, [2.0])), on_conflict="replace", filed=set(ids))
    store.close()
    with (
        Store.open(store_path, read_only=True) as ro,
        pytest.raises(ReadOnlyStoreError, match="read_only=False"),
    ):
        ro.insert_all(items((2, [1.0])))


def test_held_rows_names_the_stored_series_by_identity(store: Store) -> None:
    assert store.held_rows(items((1, [1.0]))) == {}  # an empty store holds none
    ids = store.insert_all(items((1, [1.0]), (2, [2.0]))).ids
    asked = items((2, [5.0]), (7, [1.0]))
    held = store.held_rows(asked)
    assert list(held) == [identity(asked[0].row)]
    row = held[identity(asked[0].row)]
    assert row["id"] == ids[1] and set(row) == {"id", *COMPARED_COLUMNS}
    assert row["data_hash"] != asked[0].row.data_hash  # the stored values, not the file's
