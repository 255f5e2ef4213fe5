"""Filing prepared items into a store under each ``on_conflict`` rule, and comparing them.

These feed ``filing`` prepared items straight from ``store.prepare.prepare`` (no interchange
file); the import and CLI tests drive the same code through a file.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from infrastore_sqlite import (
    DuplicateTimeSeriesError,
    InvalidParameterError,
    NonSequentialTimeSeries,
    SingleTimeSeries,
    Store,
)
from infrastore_sqlite.interchange.importing.filing import compare
from infrastore_sqlite.store.conflicts import check_on_conflict
from infrastore_sqlite.store.prepare import prepare

T0 = datetime(2024, 7, 1, tzinfo=UTC)


def item(values, *, owner: int = 1, name: str = "load", units: str | None = None, start=T0):
    ts = SingleTimeSeries(start, "PT1H", np.asarray(values, dtype=float), name, units=units)
    return {
        "owner_id": owner,
        "owner_type": "PowerLoad",
        "owner_category": "Component",
        "time_series": ts,
    }


def prepared(store: Store, *items):
    return [prepare(i, it) for i, it in enumerate(items)]


def file(store: Store, items, on_conflict, **kw):
    with store.transaction():
        return store.insert_all(prepared(store, *items), on_conflict=on_conflict, **kw)


@pytest.fixture
def filled(store: Store) -> Store:
    store.add_time_series_bulk([item([1, 2, 3]), item([1, 2, 3], owner=2), item([5, 6], name="x")])
    return store


def test_error_is_the_default_rule_and_names_both_ways_out(filled: Store) -> None:
    before = filled.list_metadata()
    with pytest.raises(
        DuplicateTimeSeriesError, match=r"'load' \(owner 1\) \(id 1 in the store\)"
    ) as e:
        file(filled, [item([9, 9, 9], owner=3), item([1, 2, 4])], "error")
    assert 'on_conflict="replace"' in str(e.value) and 'on_conflict="ignore"' in str(e.value)
    cli = e.value.render("cli")
    assert "--replace" in cli and "--ignore" in cli and "on_conflict" not in cli
    assert filled.list_metadata() == before  # the transaction rolled back the owner 3 add


def test_replace_keeps_the_id_and_changes_only_that_series(filled: Store) -> None:
    before = {m["id"]: m for m in filled.list_metadata()}
    out = file(
        filled,
        [item([1, 2, 30], units="MW"), item([1, 2, 3], owner=2), item([7], owner=9)],
        "replace",
    )
    assert out.outcomes == ["replaced", "unchanged", "added"]
    assert out.ids[:2] == [1, 2] and out.ids[2] not in before
    assert filled.read_by_id(1).data.tolist() == [1, 2, 30]
    assert filled.read_by_id(1).units == "MW"
    assert filled.read_by_id(2).data.tolist() == [1, 2, 3]  # shared the array, not the edit
    after = {m["id"]: m for m in filled.list_metadata()}
    for i in (2, 3):
        assert after[i] == before[i]
    assert filled.verify_integrity()["ok"]
    assert out.counts() == {"added": 1, "replaced": 1, "unchanged": 1, "skipped": 0}


def test_replace_drops_the_catalog_entry_of_an_array_nothing_names(filled: Store) -> None:
    held = filled.num_distinct_arrays()
    file(filled, [item([50, 60], name="x")], "replace")
    assert filled.num_distinct_arrays() == held  # the old [5, 6] went, the new one came
    file(filled, [item([4, 4, 4]), item([4, 4, 4], owner=2)], "replace")
    assert filled.num_distinct_arrays() == held  # [1, 2, 3] went once both moved
    assert filled.verify_integrity()["ok"]


def test_ignore_skips_what_is_held(filled: Store) -> None:
    out = file(filled, [item([0, 0, 0]), item([7], owner=9)], "ignore")
    assert out.outcomes == ["skipped", "added"] and out.ids[0] == 1
    assert filled.read_by_id(1).data.tolist() == [1, 2, 3]


def test_a_series_twice_in_one_import_is_refused_whatever_the_rule(filled: Store) -> None:
    seen: set[int] = set()
    file(filled, [item([1, 2, 30])], "replace", filed=seen)
    with pytest.raises(DuplicateTimeSeriesError, match="appears twice"):
        file(filled, [item([1, 2, 31])], "replace", filed=seen)


@pytest.mark.parametrize("rule", ["error", "replace", "ignore"])
def test_an_empty_store_adds_every_item(store: Store, rule: str) -> None:
    # An empty store holds none of them: no look-up, each item added, in order.
    seen: set[int] = set()
    filed = file(
        store, [item([1.0]), item([2.0], owner=2), item([3.0], name="x")], rule, filed=seen
    )
    assert filed.outcomes == ["added"] * 3
    assert filed.ids == [1, 2, 3] and seen == {1, 2, 3}
    assert [m["owner_id"] for m in store.list_metadata()] == [1, 2, 1]
    again = file(store, [item([1.0])], "ignore", filed=set())  # now held: looked up
    assert again.outcomes == ["skipped"] and again.ids == [1]


@pytest.mark.parametrize("holding", [False, True])
def test_a_series_twice_in_one_batch_is_refused_alike_in_an_empty_store(
    store: Store, holding: bool
) -> None:
    if holding:  # a store holding another series goes through the look-up
        store.add_time_series_bulk([item([7.0], owner=9)])
    before = store.list_metadata()
    with pytest.raises(DuplicateTimeSeriesError) as e:
        file(store, [item([1.0]), item([2.0], owner=2), item([3.0])], "replace")
    # Two rows of the file for one series: neither is taken, and the message says so
    # (not the catalog's "remove it first", which is about a series the store holds).
    assert str(e.value) == (
        "a time series with that key already exists: 'load' (owner 1) appears twice in the "
        "file (two series rows with one owner, type, name, resolution, interval and "
        "features), so neither row can be taken; remove one of them and import again"
    )
    assert store.list_metadata() == before


def test_a_derived_forecast_follows_its_replaced_source(store: Store) -> None:
    store.add_time_series_bulk([item(np.arange(24.0))])
    assert store.transform_single_time_series("PT6H", "PT6H") == 1
    (dst,) = [
        m for m in store.list_metadata() if m["time_series_type"] == "DeterministicSingleTimeSeries"
    ]
    file(store, [item(np.arange(24.0) * 2)], "replace")
    assert store.read_by_id(dst["id"]).data[:, 1].tolist() == [12, 14, 16, 18, 20, 22]
    assert store.verify_integrity()["ok"]
    with pytest.raises(InvalidParameterError, match="backs the DeterministicSingleTimeSeries") as e:
        file(store, [item(np.arange(12.0))], "replace")
    assert "`infrastore-sqlite remove`" in e.value.render("cli")
    assert store.read_by_id(1).length == 24


def test_compare_counts_points_and_names_changed_columns(filled: Store) -> None:
    (p,) = prepared(filled, item([1, 20, 30], units="MW"))
    held = filled.held_rows([p])
    entry = compare(filled, p, next(iter(held.values())))
    assert entry["change"] == "replaced" and entry["id"] == 1
    assert entry["points"] == 2
    assert entry["first_changed"] == "2024-07-01T01:00:00+00:00"
    assert entry["last_changed"] == "2024-07-01T02:00:00+00:00"
    assert entry["descriptors"] == ["units"] and entry["grid"] == []
    (same,) = prepared(filled, item([1, 2, 3], owner=2))
    assert (
        compare(filled, same, next(iter(filled.held_rows([same]).values())))["change"]
        == "unchanged"
    )
    (new,) = prepared(filled, item([1], owner=77))
    assert compare(filled, new, None)["change"] == "added"


def test_compare_counts_rows_on_one_side_only_and_nan_as_equal(store: Store) -> None:
    store.add_time_series(
        1, "PowerLoad", "Component", SingleTimeSeries(T0, "PT1H", np.array([np.nan, 1.0]), "load")
    )
    (p,) = prepared(store, item([np.nan, 1.0, 2.0]))
    entry = compare(store, p, next(iter(store.held_rows([p]).values())))
    assert entry["grid"] == ["length"] and entry["points"] == 1
    assert entry["first_changed"] == entry["last_changed"] == "2024-07-01T02:00:00+00:00"


def test_irregular_series_replace_their_time_axis(store: Store) -> None:
    def nst(times):
        ts = NonSequentialTimeSeries([T0.replace(hour=h) for h in times], np.ones(len(times)), "o")
        return {
            "owner_id": 5,
            "owner_type": "Outage",
            "owner_category": "Component",
            "time_series": ts,
        }

    store.add_time_series_bulk([nst([0, 3])])
    out = file(store, [nst([0, 4])], "replace")
    assert out.outcomes == ["replaced"]
    meta = store.get_metadata_by_id(1)
    assert meta["timestamps"][-1].startswith("2024-07-01T04:00")
    assert store.verify_integrity()["ok"]


def test_on_conflict_values_are_checked() -> None:
    assert check_on_conflict("ignore") == "ignore"
    with pytest.raises(InvalidParameterError, match="'error', 'replace', 'ignore'"):
        check_on_conflict("overwrite")
