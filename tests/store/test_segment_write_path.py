"""An add's segment writes: small ones in the caller's thread
(``ArrayFile(inline_write_bytes=)``), and the segment flushed early (``start_writeback``)."""

from __future__ import annotations

import errno
import os
import threading
from datetime import datetime
from pathlib import Path

import h5py
import numpy as np
import pytest

import infrastore_sqlite
from infrastore_sqlite.errors import StorageError
from infrastore_sqlite.store.arrays import INLINE_WRITE_BYTES, WRITEBACK_MIN_BYTES, ArrayFile

T0 = datetime(2026, 1, 1)


@pytest.fixture
def threads_of_writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread each ``_write_now`` ran in, in order."""
    seen: list[str] = []
    real = ArrayFile._write_now

    def write_now(self, *job):
        seen.append(threading.current_thread().name)
        return real(self, *job)

    monkeypatch.setattr(ArrayFile, "_write_now", write_now)
    return seen


def test_small_writes_are_done_before_write_returns(
    tmp_path: Path, threads_of_writes: list[str]
) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", inline_write_bytes=100)
    f.write("f64__3", "f64", [3], 0, [np.full(3, 1.0)])  # 24 bytes
    f.write("f64__3", "f64", [3], 1, [np.full(3, 2.0), np.full(3, 3.0)])  # 48 bytes
    assert threads_of_writes == ["MainThread", "MainThread"]
    assert not f._pending  # nothing queued: no thread was started for them
    assert [a.tolist() for a in f.read("f64__3", [2, 0, 1])] == [[3.0] * 3, [1.0] * 3, [2.0] * 3]
    f.close()


def test_a_larger_write_starts_the_thread_and_the_writes_after_it_follow_in_order(
    tmp_path: Path, threads_of_writes: list[str]
) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", inline_write_bytes=100)
    f.write("f64__3", "f64", [3], 0, [np.full(3, 0.0)])  # inline
    f.write("f64__3", "f64", [3], 1, [np.full(3, float(k)) for k in (1, 2, 3, 4, 5)])  # 120 B
    f.write("f64__3", "f64", [3], 6, [np.full(3, 6.0)])  # small, but queued behind it
    got = f.read("f64__3", list(range(7)))
    assert [a[0] for a in got] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert threads_of_writes[0] == "MainThread"
    assert all(t.startswith("infrastore-sqlite-h5") for t in threads_of_writes[1:])
    assert len(threads_of_writes) == 3
    f.close()


def test_an_inline_write_that_fails_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", inline_write_bytes=1000)

    def full(self, *job):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ArrayFile, "_write_now", full)
    with pytest.raises(StorageError, match=r"a\.h5.*No space left"):
        f.write("f64__3", "f64", [3], 0, [np.zeros(3)])
    f.close()


def _items(n: int, start: int = 0) -> list[dict]:
    return [
        {
            "owner_id": k,
            "owner_type": "Gen",
            "owner_category": "Component",
            "time_series": infrastore_sqlite.SingleTimeSeries(
                T0, "PT1H", np.arange(168.0) + k, "p"
            ),
        }
        for k in range(start, start + n)
    ]


def test_a_small_add_writes_its_segment_in_the_callers_thread(
    tmp_path: Path, threads_of_writes: list[str]
) -> None:
    with infrastore_sqlite.Store.create(tmp_path / "s") as s:
        ids = s.add_time_series_bulk(_items(50))
        assert threads_of_writes == ["MainThread"]
        got = s.read_by_ids(ids)
    assert [float(g.data[0]) for g in got] == [float(k) for k in range(50)]


def test_a_large_add_hands_its_parts_to_the_writer_thread(
    tmp_path: Path, threads_of_writes: list[str]
) -> None:
    n = INLINE_WRITE_BYTES // (168 * 8) + 1  # one part, just over the bound
    with infrastore_sqlite.Store.create(tmp_path / "s") as s:
        ids = s.add_time_series_bulk(_items(n))
        assert threads_of_writes and all(
            t.startswith("infrastore-sqlite-h5") for t in threads_of_writes
        )
        got = s.read_by_ids([ids[0], ids[-1]])
    assert [float(g.data[0]) for g in got] == [0.0, float(n - 1)]


#: Series of 168 f64 enough for an early flush (``WRITEBACK_MIN_BYTES``).
_EARLY = WRITEBACK_MIN_BYTES // (168 * 8) + 1


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def test_a_bulk_add_flushes_its_segment_in_the_writer_thread_before_the_seal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str, str]] = []
    real_fdatasync, real_fsync = os.fdatasync, os.fsync

    def fdatasync(fd: int) -> None:
        events.append(("fdatasync", _fd_path(fd), threading.current_thread().name))
        real_fdatasync(fd)

    def fsync(fd: int) -> None:
        events.append(("fsync", _fd_path(fd), threading.current_thread().name))
        real_fsync(fd)

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    monkeypatch.setattr(os, "fsync", fsync)
    with infrastore_sqlite.Store.create(tmp_path / "s") as s:
        events.clear()
        ids = s.add_time_series_bulk(_items(_EARLY))
        segment = next((tmp_path / "s" / "segments").glob("*.h5"))
        got = s.read_by_ids([ids[0], ids[-1]])
    assert [float(g.data[0]) for g in got] == [0.0, float(_EARLY - 1)]
    on_segment = [(call, thread) for call, path, thread in events if path == str(segment)]
    # First the early flush, in the writer thread; then the seal's fsync, which the
    # durability of the commit rests on, in the caller's.
    assert on_segment[0][0] == "fdatasync"
    assert on_segment[0][1].startswith("infrastore-sqlite-h5")
    assert on_segment[-1] == ("fsync", "MainThread")


def test_a_failed_early_flush_fails_the_add_and_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fdatasync = os.fdatasync

    def failing(fd: int) -> None:
        if _fd_path(fd).endswith(".h5"):
            raise OSError(errno.EIO, "Input/output error")
        real_fdatasync(fd)

    with infrastore_sqlite.Store.create(tmp_path / "s") as s:
        s.add_time_series_bulk(_items(3))
        before = sorted(p.name for p in (tmp_path / "s" / "segments").iterdir())
        monkeypatch.setattr(os, "fdatasync", failing)
        with pytest.raises(StorageError, match=r"syncing .*segments/.*\.h5 failed.*Input/output"):
            s.add_time_series_bulk(_items(_EARLY, start=3))
        monkeypatch.setattr(os, "fdatasync", real_fdatasync)
        assert len(s.list_metadata()) == 3
        assert sorted(p.name for p in (tmp_path / "s" / "segments").iterdir()) == before
        # The store goes on: the next add is filed.
        s.add_time_series_bulk(_items(1, start=3))
        assert len(s.list_metadata()) == 4


def test_a_small_add_leaves_the_flush_to_the_seal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushed: list[str] = []
    real_fdatasync = os.fdatasync

    def fdatasync(fd: int) -> None:
        flushed.append(_fd_path(fd))
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    with infrastore_sqlite.Store.create(tmp_path / "s") as s:
        flushed.clear()
        s.add_time_series_bulk(_items(_EARLY - 2))  # just under the bound
        assert len(s.list_metadata()) == _EARLY - 2
    assert not [p for p in flushed if p.endswith(".h5")]


def test_the_early_flush_does_not_hold_up_what_is_written_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = WRITEBACK_MIN_BYTES // 8
    f = ArrayFile(tmp_path / "a.h5", "x", inline_write_bytes=WRITEBACK_MIN_BYTES)
    f.write(f"f64__{n}", "f64", [n], 0, [np.arange(n, dtype=np.float64)])
    started, release = threading.Event(), threading.Event()
    real_fdatasync = os.fdatasync

    def held(fd: int) -> None:
        started.set()
        release.wait(30)
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", held)
    f.start_writeback()
    assert started.wait(30)
    # The file is open to the caller (a transaction's record) while the flush runs.
    f.h5.attrs["after"] = 1
    assert not f._flushes[0].done()
    release.set()
    f.finish()
    with h5py.File(tmp_path / "a.h5", "r") as h5:
        assert int(h5.attrs["after"]) == 1
        assert h5[f"pools/f64__{n}"][0, -1] == n - 1
