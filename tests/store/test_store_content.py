"""Content addressing: one array stored once, freed with its last reference, compacted,
verified; removal by ids and by filter."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from store_helpers import SA, T0, C, H, add, segment_files, snapshot, sts

from infrastore_sqlite import (
    IntegrityError,
    InvalidParameterError,
    NonSequentialTimeSeries,
    NotFoundError,
    Store,
)
from infrastore_sqlite.core.hashing import data_hash_hex
from infrastore_sqlite.errors import DamagedStoreError


# =========================================================================== content addressing
def test_same_array_is_stored_once_across_owners_and_types(store: Store) -> None:
    data = np.arange(4.0)
    add(store, sts("a", data))
    add(store, sts("b", data), owner_id=2, category=SA)
    add(store, NonSequentialTimeSeries([T0 + k * H for k in range(4)], data, "c"))
    add(store, sts("d", data.reshape(2, 2), element_type="tuple(2,f64)"))  # other shape
    add(store, sts("e", data.reshape(2, 2), element_type="linear_function"))
    assert store.num_distinct_arrays() == 2
    hashes = {m["name"]: m["data_hash"] for m in store.list_metadata()}
    assert hashes["a"] == hashes["b"] == hashes["c"] == data_hash_hex(data)
    assert hashes["d"] == hashes["e"] == data_hash_hex(data.reshape(2, 2))


def test_removing_the_last_reference_frees_the_array(store: Store, store_path: Path) -> None:
    big = np.random.default_rng(1).random(50_000)
    a = add(store, sts("a", big))
    b = add(store, sts("b", big), owner_id=2)
    c = add(store, sts("c", big + 1), features={"x": "y"})
    assert store.num_distinct_arrays() == 2
    assert store.remove_by_ids([a]) == 1
    assert store.num_distinct_arrays() == 2  # b still uses it
    np.testing.assert_array_equal(store.read_by_id(b).data, big)
    assert store.remove_by_ids([b]) == 1
    assert store.num_distinct_arrays() == 1
    assert store._catalog.scalar("SELECT count(*) FROM feature_maps") == 1  # {x: y} only
    assert store.remove_by_ids([c]) == 1
    assert store.num_distinct_arrays() == 0
    assert store._catalog.scalar("SELECT count(*) FROM feature_maps") == 0
    assert store._catalog.scalar("SELECT count(*) FROM feature_sets") == 0
    keep = add(store, sts("keep", np.arange(3.0)))
    size_before = store.disk_usage()["hdf5_bytes"]
    result = store.compact()
    assert result["slots_reclaimed"] == 2
    assert result["bytes_reclaimed"] > 0
    assert store.disk_usage()["hdf5_bytes"] < size_before
    assert len(segment_files(store_path)) == 1
    np.testing.assert_array_equal(store.read_by_id(keep).data, np.arange(3.0))
    assert store.verify_integrity()["ok"]
    # ids are never reissued: not after removal, compaction or reopening
    assert add(store, sts("after")) == 5
    store.close()
    with Store.open(store_path) as again:
        assert add(again, sts("reopened")) == 6
        again.remove_by_ids([5, 6])
        again.compact()
        assert add(again, sts("last")) == 7
        np.testing.assert_array_equal(again.read_by_id(keep).data, np.arange(3.0))


def test_compact_keeps_every_live_array(store: Store) -> None:
    rng = np.random.default_rng(3)
    arrays = {f"s{k}": rng.random((5, 2)).astype(np.float32) for k in range(30)}
    ids = {name: add(store, sts(name, a)) for name, a in arrays.items()}
    ns = add(store, NonSequentialTimeSeries([T0, T0 + H], np.array([1, 2], np.int64), "ns"))
    store.remove_by_ids([ids.pop(f"s{k}") for k in range(0, 30, 3)])
    store.compact()
    for name, i in ids.items():
        assert store.read_by_id(i).data.tobytes() == arrays[name].tobytes()
    assert store.read_by_id(ns).timestamps == [T0, T0 + H]
    # the reference's keys only; diagnose counts the arrays it read: 20 + the ns series'
    # values and time axis
    assert store.verify_integrity() == {"ok": True, "errors": []}
    assert store.diagnose().checked == 22
    with pytest.raises(InvalidParameterError, match="inside a transaction"), store.transaction():
        store.compact()


def test_compact_report(store: Store) -> None:
    add(store, sts("empty", np.zeros(0)))  # a zero-size array has no slot
    add(store, sts("a", np.arange(3.0)))
    b = add(store, sts("b", np.arange(4.0)))
    add(store, sts("c", np.arange(4.0) + 1))
    store.remove_by_ids([b])
    report = store.compact()
    assert set(report) == {  # the reference's keys
        "slots_reclaimed",
        "datasets_dropped",
        "feature_sets_reclaimed",
        "timestamp_sets_reclaimed",
        "bytes_reclaimed",
    }
    assert (report["slots_reclaimed"], report["datasets_dropped"]) == (1, 0)
    store.remove_by_filter(name="c")
    assert store.compact()["datasets_dropped"] == 1
    assert store.compact()["slots_reclaimed"] == 0
    assert [s.length for s in store.read_by_ids([1, 2])] == [0, 3]


def test_verify_integrity_finds_tampered_arrays(store: Store, store_path: Path) -> None:
    i = add(store, sts("a", np.arange(4.0)))
    j = add(store, sts("b", np.arange(4.0) + 1))
    pool, slot, segment = store._catalog.execute(
        "SELECT pool, slot, segment FROM arrays WHERE hash = ?",
        (store.rows_by_ids([i])[0].data_hash,),
    ).fetchone()
    store.close()
    with h5py.File(store_path / "segments" / segment, "r+") as h5:
        h5["pools"][pool][slot, 0] = 99.0
    with Store.open(store_path, read_only=True) as again:
        report = again.verify_integrity()
        assert not report["ok"] and set(report) == {"ok", "errors"}
        found = again.diagnose()
        assert found.checked == 2
        assert [(s.file, s.problem, s.arrays_lost) for s in found.segments] == [
            (str(store_path / "segments" / segment), "hash mismatch", 1)
        ]
        assert [(s.id, s.name, s.owner_id) for s in found.series_lost] == [(i, "a", 1)]
        # the changed value is never returned: the read fails, naming the series and file
        with pytest.raises(DamagedStoreError, match=r"cannot read 'a' \(owner 1, id 1\)") as e:
            again.read_by_id(i)
        assert segment in str(e.value) and "Store.diagnose()" in str(e.value)
        assert again.read_by_id(j).data.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_verify_names_a_damaged_segment_file(store: Store, store_path: Path) -> None:
    i = add(store, sts("a", np.arange(4.0)))
    j = add(store, sts("b", np.arange(400.0)))
    (segment,) = store._catalog.execute(
        "SELECT segment FROM arrays WHERE hash = ?", (store.rows_by_ids([j])[0].data_hash,)
    ).fetchone()
    store.close()
    damaged = store_path / "segments" / segment
    damaged.write_bytes(damaged.read_bytes()[:1500])
    with Store.open(store_path, read_only=True) as again:
        report = again.verify_integrity()
        assert not report["ok"]
        assert all("\n" not in e for e in report["errors"])
        assert any(str(damaged) in e and "truncated" in e for e in report["errors"])
        assert any("'b' (owner 1, id 2)" in e for e in report["errors"])
        (lost,) = again.diagnose().series_lost
        assert (lost.id, lost.files) == (j, [str(damaged)])
        assert again.read_by_id(i).data.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_missing_array_location_is_an_integrity_error(store: Store) -> None:
    i = add(store, sts())
    store._catalog.execute("DELETE FROM arrays")
    with pytest.raises(IntegrityError, match=r"does not hold; run Store\.diagnose"):
        store.read_by_id(i)


# =========================================================================== removal
def test_remove_by_ids_is_all_or_nothing(store: Store) -> None:
    a = add(store, sts("a"))
    b = add(store, sts("b"), owner_id=2)
    before = snapshot(store)
    with pytest.raises(NotFoundError, match="99"):
        store.remove_by_ids([a, 99])
    assert snapshot(store) == before
    with pytest.raises(
        InvalidParameterError, match=r"belongs to owner 2 .*not to the expected owner 1"
    ):
        store.remove_by_ids([a, b], owner_id=1, owner_category=C)
    assert snapshot(store) == before
    with pytest.raises(InvalidParameterError, match="owner_id and owner_category together"):
        store.remove_by_ids([a], owner_id=1)
    assert store.remove_by_ids([a, a], owner_id=1, owner_category="Component") == 1
    assert store.remove_by_ids([]) == 0
    assert [m["id"] for m in store.list_metadata()] == [b]


def test_remove_by_filter(store: Store) -> None:
    add(store, sts("a"), features={"scen": "hi"})
    add(store, sts("b"), features={"scen": "lo"})
    add(store, sts("c"), owner_id=2)
    assert store.remove_by_filter(features={"scen": "hi"}) == 1
    assert store.remove_by_filter(name="nothing") == 0
    assert store.remove_by_filter(features={"name": "reserved, so matches nothing"}) == 0
    assert store.remove_by_filter(owner_id=2) == 1
    assert [m["name"] for m in store.list_metadata()] == ["b"]
    assert store.remove_by_filter() == 1
    assert store.is_empty()
