"""The store directory: segments, their sweeping and merging, the write lock, and the
conversion of stores of the earlier two-file layout (``tests/data/legacy_store`` was
written by that version: the demo store with series 3 removed)."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import h5py
import numpy as np
import pytest

import infrastore_sqlite.store.lifecycle as lifecycle_module
from infrastore_sqlite import (
    CatalogMigrationRequiredError,
    SingleTimeSeries,
    StorageError,
    Store,
    StoreBusyError,
)
from infrastore_sqlite.demo import build_demo_store
from infrastore_sqlite.store.segments import merge_candidates, tier

T0 = datetime(2024, 1, 1, tzinfo=UTC)
LEGACY = Path(__file__).parent.parent / "data" / "legacy_store"


def sts(name: str, values) -> SingleTimeSeries:
    return SingleTimeSeries(T0, "PT1H", np.asarray(values, dtype=float), name)


def add(store: Store, name: str, values, owner: int = 1) -> int:
    return store.add_time_series(owner, "Gen", "Component", sts(name, values))


def content(store: Store) -> list[tuple]:
    rows = store.select_rows()
    return [
        (m["id"], m["name"], m["data_hash"], s.data.tobytes())
        for m, s in zip(store.list_metadata(), store.read_by_ids([r.id for r in rows]), strict=True)
    ]


def segment_names(path: Path) -> list[str]:
    return sorted(os.listdir(path / "segments"))


# ---------------------------------------------------------------------- segments
def test_each_write_adds_one_sealed_segment_and_a_rollback_none(store: Store, store_path) -> None:
    add(store, "a", np.arange(5))
    assert len(segment_names(store_path)) == 1
    with store.transaction():
        add(store, "b", np.arange(6))
        add(store, "c", np.arange(7), owner=2)
    assert len(segment_names(store_path)) == 2
    with pytest.raises(RuntimeError), store.transaction():
        add(store, "d", np.arange(8))
        raise RuntimeError
    assert len(segment_names(store_path)) == 2
    names = {r[0] for r in store._catalog.execute("SELECT name FROM segments")}
    assert names == set(segment_names(store_path))
    # a write that adds no new array (same content) seals a segment holding only the
    # record of what it did to the catalog (issue 33: the catalog can be rebuilt)
    add(store, "a", np.arange(5), owner=9)
    assert len(segment_names(store_path)) == 3
    (only,) = set(segment_names(store_path)) - names
    with h5py.File(store_path / "segments" / only, "r") as h5:
        assert list(h5["pools"]) == [] and len(h5["journal"]) == 1


def test_leftover_segments_are_swept_by_the_next_writer(store: Store, store_path) -> None:
    """A file a marker claims (a write that did not commit) is deleted by the next writer;
    an unnamed file nothing claims is set aside, never deleted (issue 33)."""
    add(store, "a", np.arange(5))
    segs = store_path / "segments"
    leftover = segs / "0123456789abcdef.h5"
    leftover.write_bytes(b"half a file a killed writer left")
    (segs / "0123456789abcdef.h5.pending").touch()
    stranger = segs / "fedcba9876543210.h5"
    stranger.write_bytes(b"a file nothing claims")
    # readers never delete anything; verify names the unclaimed file only
    with Store.open(store_path, read_only=True) as ro:
        assert len(ro.list_metadata()) == 1
        found = ro.diagnose()
        assert not found.ok and found.unnamed == [str(stranger)]
    assert leftover.exists() and stranger.exists()
    add(store, "b", np.arange(6))
    assert not leftover.exists() and not (segs / "0123456789abcdef.h5.pending").exists()
    assert not stranger.exists()
    aside = store_path / "segments-aside" / stranger.name
    assert aside.read_bytes() == b"a file nothing claims"
    found = store.diagnose()
    assert found.ok and found.set_aside == [str(aside)]


def test_tiers_and_merge_candidates() -> None:
    assert [tier(n) for n in (0, 10, 64 * 1024 - 1, 64 * 1024, 512 * 1024, 10**9)] == [
        0,
        0,
        0,
        1,
        2,
        5,
    ]
    small = [(f"s{i}", 5000) for i in range(7)]
    assert merge_candidates(small) == []
    assert merge_candidates([*small, ("big", 10**8), ("s7", 100)]) == sorted(
        [n for n, _ in small] + ["s7"]
    )
    # Eight segments of 13 MiB (eight bulk adds of 10,000 series) stay as they are: a
    # merge would only rewrite them, a stall growing with the store (issue 26).
    big = [(f"b{i}", 13 * 2**20) for i in range(8)]
    assert merge_candidates(big) == []
    # Eight of 1 MiB still become one of 8 MiB, which then stays.
    mid = [(f"m{i}", 2**20) for i in range(8)]
    assert merge_candidates([*big, *mid]) == sorted(n for n, _ in mid)


def test_many_single_adds_stay_a_few_segments(store: Store, store_path) -> None:
    rng = np.random.default_rng(5)
    values = {f"s{i}": rng.random(24) for i in range(300)}
    for i, (name, v) in enumerate(values.items()):
        add(store, name, v, owner=i)
    files = segment_names(store_path)
    assert len(files) < 8  # 300 one-array writes; merged as they came
    assert {r[0] for r in store._catalog.execute("SELECT name FROM segments")} == set(files)
    report = store.diagnose()
    assert report.ok and report.checked == 300
    back = {s.name: s.data for s in store.read_by_ids(range(1, 301))}
    assert all(np.array_equal(back[k], v) for k, v in values.items())
    store.compact()
    assert len(segment_names(store_path)) == 1
    assert store.diagnose().checked == 300


def test_a_reader_survives_a_merge_under_it(store: Store, store_path) -> None:
    ids = [add(store, f"s{i}", np.arange(10) + i, owner=i) for i in range(5)]
    reader = Store.open(store_path, read_only=True)
    try:
        assert reader.read_by_id(ids[0]).data[0] == 0  # opens one segment
        store.compact()  # every segment the reader knew is gone now
        assert [s.data[0] for s in reader.read_by_ids(ids)] == [0, 1, 2, 3, 4]
    finally:
        reader.close()


# ---------------------------------------------------------------------- write lock
def test_a_second_writer_waits_then_gets_a_busy_error(store: Store, store_path) -> None:
    add(store, "a", np.arange(3))
    other = Store.open(store_path, timeout=0.2)
    try:
        with store.transaction():
            add(store, "b", np.arange(4))
            with pytest.raises(
                StoreBusyError, match=r"being written by another process.*--timeout"
            ):
                add(other, "c", np.arange(5))
            # a reader is not blocked and sees the last committed state
            with Store.open(store_path, read_only=True) as ro:
                assert [m["name"] for m in ro.list_metadata()] == ["a"]
        add(other, "c", np.arange(5))  # free again
    finally:
        other.close()
    assert [m["name"] for m in store.list_metadata()] == ["a", "b", "c"]
    assert isinstance(StoreBusyError("x"), StorageError)


# ---------------------------------------------------------------------- old layout
@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    for f in LEGACY.iterdir():
        shutil.copy(f, tmp_path / f.name)
    return tmp_path / "demo.h5"


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> list[tuple]:
    with build_demo_store(tmp_path_factory.mktemp("demo") / "d.h5") as s:
        s.remove_by_ids([3])
        return content(s)


def test_a_two_file_store_read_only_says_open_it_writable(legacy: Path) -> None:
    before = sorted(os.listdir(legacy.parent))
    with pytest.raises(CatalogMigrationRequiredError, match=r"earlier version.*open it once for"):
        Store.open(legacy, read_only=True)
    assert sorted(os.listdir(legacy.parent)) == before


def test_a_two_file_store_is_converted_by_a_writable_open(legacy: Path, expected) -> None:
    with Store.open(legacy) as s:
        assert content(s) == expected
        assert s.verify_integrity()["ok"]
        assert s.compression == "deflate:3:shuffle"
        new = add(s, "after", np.arange(3))
    assert os.listdir(legacy.parent) == ["demo.h5"]
    assert "legacy.h5" in segment_names(legacy)
    with Store.open(legacy, read_only=True) as s:
        assert content(s)[:-1] == expected and s.read_by_id(new).name == "after"
        found = s.diagnose()
        # every value array (one more: "after") and every time axis read and re-hashed
        axes = s._catalog.scalar("SELECT count(*) FROM arrays WHERE kind = 'timestamps'")
        assert found.ok and found.checked == len({e[2] for e in expected}) + 1 + axes


def test_a_conversion_that_fails_leaves_the_old_store(legacy: Path, monkeypatch, expected) -> None:
    before = sorted(os.listdir(legacy.parent))

    def no_link(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(lifecycle_module.os, "link", no_link)
    monkeypatch.setattr(lifecycle_module.shutil, "copyfile", no_link)
    with pytest.raises(StorageError, match=r"converting the store .* failed"):
        Store.open(legacy)
    assert sorted(os.listdir(legacy.parent)) == before
    monkeypatch.undo()
    with Store.open(legacy) as s:
        assert content(s) == expected


def test_a_conversion_killed_between_its_renames_is_finished(legacy, monkeypatch, expected) -> None:
    real = lifecycle_module._finish_conversion

    calls = []

    def killed(path: Path) -> None:
        calls.append(path)
        if len(calls) == 2:  # the first call only looks for an unfinished conversion
            raise KeyboardInterrupt  # the process dies with the new directory durable
        real(path)

    monkeypatch.setattr(lifecycle_module, "_finish_conversion", killed)
    with pytest.raises(KeyboardInterrupt):
        Store.open(legacy)
    assert sorted(os.listdir(legacy.parent)) == [".demo.h5.converted", "demo.h5", "demo.h5.sqlite"]
    monkeypatch.setattr(lifecycle_module, "_finish_conversion", real)
    with Store.open(legacy) as s:
        assert content(s) == expected
    assert os.listdir(legacy.parent) == ["demo.h5"]
