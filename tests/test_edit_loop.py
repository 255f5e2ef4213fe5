"""The edit loop through the Python API: export, edit with SQL, diff, rehash, import back
into the original store with ``on_conflict="replace"``.

The CLI's version of the same loop is in test_edit_loop_cli.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import query as sql

from infrastore_sqlite import DuplicateTimeSeriesError, Store, rehash_sqlite
from infrastore_sqlite.demo import build_demo_store
from infrastore_sqlite.interchange.sqlite.unshare import unshare_sqlite

STS = "SingleTimeSeries_f64_utc"


def snapshot(store: Store) -> dict[int, tuple]:
    """Every series' metadata and values, by id."""
    out = {}
    for m in store.list_metadata():
        data = store.read_by_id(m["id"]).data
        out[m["id"]] = (m, np.asarray(data).tobytes())
    return out


@pytest.fixture
def demo(tmp_path: Path):
    store = build_demo_store(tmp_path / "demo.h5")
    db = tmp_path / "demo.db"
    store.export_sqlite(db)
    try:
        yield store, db
    finally:
        store.close()


def edit_owner(db: Path, owner: int) -> int:
    (aid,) = sql(db, f"SELECT array_id FROM {STS}_series WHERE owner_id = ?", (owner,))[0]
    # Three hours (10:00-12:00 on July 1) doubled.
    sql(
        db,
        f"UPDATE {STS}_values SET value = value * 2 WHERE array_id = ? AND timestamp BETWEEN "
        "1719828000000 AND 1719835200000",
        (aid,),
    )
    return aid


def test_the_loop_changes_exactly_the_edited_series_and_keeps_every_id(demo) -> None:
    store, db = demo
    before = snapshot(store)
    edit_owner(db, 103)
    changes = [e for e in store.diff_sqlite(db) if e["change"] != "unchanged"]
    assert len(changes) == 1
    (e,) = changes
    assert (e["owner_id"], e["time_series_type"], e["name"]) == (
        103,
        "SingleTimeSeries",
        "max_active_power",
    )
    assert e["points"] == 3 and e["descriptors"] == [] and e["grid"] == []
    assert (e["first_changed"], e["last_changed"]) == (
        "2024-07-01T10:00:00+00:00",
        "2024-07-01T12:00:00+00:00",
    )
    assert snapshot(store) == before  # the diff wrote nothing

    with pytest.raises(Exception, match="does not match its recorded data_hash"):
        store.import_sqlite(db, on_conflict="replace")
    assert rehash_sqlite(db) == 1
    report = store.import_sqlite(db, on_conflict="replace")
    counts = {
        k: sum(p[k] for p in report.partitions)
        for k in ("added", "replaced", "unchanged", "skipped")
    }
    assert counts == {"added": 0, "replaced": 1, "unchanged": len(before) - 1, "skipped": 0}
    after = snapshot(store)
    assert after.keys() == before.keys()  # every id is still there, none added
    changed = [i for i in before if after[i] != before[i]]
    assert changed == [e["id"]]
    new = store.read_by_id(e["id"]).data
    old = np.frombuffer(before[e["id"]][1])
    assert np.array_equal(new[10:13], old[10:13] * 2) and np.array_equal(new[13:], old[13:])
    assert store.verify_integrity()["ok"]
    # Importing the same file again changes nothing.
    again = store.import_sqlite(db, on_conflict="replace")
    assert sum(p["replaced"] for p in again.partitions) == 0
    assert [e for e in store.diff_sqlite(db) if e["change"] != "unchanged"] == []


def test_diff_says_which_recorded_hashes_are_stale_until_rehash(demo) -> None:
    store, db = demo
    assert not any(e["hash_stale"] for e in store.diff_sqlite(db))  # unedited
    edit_owner(db, 103)
    stale = {e["owner_id"]: e["hash_stale"] for e in store.diff_sqlite(db)}
    assert stale[103] is True and not any(v for k, v in stale.items() if k != 103)
    assert rehash_sqlite(db) == 1
    assert not any(e["hash_stale"] for e in store.diff_sqlite(db))
    # The edit is still there to import; only the hash was stale.
    assert [e["owner_id"] for e in store.diff_sqlite(db) if e["change"] == "replaced"] == [103]


def test_unshare_then_edit_changes_only_the_chosen_owner(demo) -> None:
    store, db = demo
    before = snapshot(store)
    (shared,) = sql(db, f"SELECT array_id FROM {STS}_series WHERE owner_id = 101")[0]
    # Without unshare, one UPDATE would change owners 101 and 102 together.
    assert len(sql(db, f"SELECT id FROM {STS}_series WHERE array_id = ?", (shared,))) == 2
    unshare_sqlite(db, owner_id=101, time_series_type="SingleTimeSeries")
    edit_owner(db, 101)
    changes = [e for e in store.diff_sqlite(db) if e["change"] != "unchanged"]
    assert [(e["owner_id"], e["points"]) for e in changes] == [(101, 3)]
    rehash_sqlite(db)
    store.import_sqlite(db, on_conflict="replace")
    after = snapshot(store)
    assert [i for i in before if after[i] != before[i]] == [changes[0]["id"]]
    assert store.verify_integrity()["ok"]


def test_default_refuses_naming_replace_and_ignore_and_ignore_skips(demo) -> None:
    store, db = demo
    before = snapshot(store)
    with pytest.raises(DuplicateTimeSeriesError, match='on_conflict="replace"'):
        store.import_sqlite(db)
    report = store.import_sqlite(db, on_conflict="ignore")
    assert sum(p["skipped"] for p in report.partitions) == len(before)
    assert sorted(report.ids) == sorted(before)
    assert snapshot(store) == before


def test_descriptor_edits_are_diffed_and_replaced(demo) -> None:
    store, db = demo
    sql(db, f"UPDATE {STS}_series SET units = 'kW' WHERE owner_id = 203")
    (e,) = [e for e in store.diff_sqlite(db) if e["change"] != "unchanged"]
    assert e["descriptors"] == ["units"] and e["points"] == 0
    store.import_sqlite(db, on_conflict="replace")
    assert (
        store.list_metadata(owner_id=203, time_series_type="SingleTimeSeries")[0]["units"] == "kW"
    )
    assert (
        store.list_metadata(owner_id=202, time_series_type="SingleTimeSeries")[0]["units"] != "kW"
    )


def test_a_dry_run_counts_what_replace_would_do(demo) -> None:
    store, db = demo
    edit_owner(db, 103)
    rehash_sqlite(db)
    report = store.import_sqlite(db, on_conflict="replace", dry_run=True)
    assert sum(p["replaced"] for p in report.partitions) == 1
    assert store.read_by_id(3).data[10] == np.frombuffer(snapshot(store)[3][1])[10]
