"""Issue 33, Must 1: a refused repair changes nothing.

``repair`` moves segment files that were swapped or renamed back under the names they
record before it repairs the rest; it decides those moves first, refuses a busy store
before any of them, and moves the files back when it cannot go on, so every byte and
every name is as before a refusal.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import sys
import traceback
from pathlib import Path

import apsw
import pytest
from damaged_store import WORLD_DATA, segment_files

from infrastore_sqlite import Store, TimeSeriesError
from infrastore_sqlite.errors import StoreBusyError


def _world(tmp_path: Path) -> Path:
    path = tmp_path / "s.h5"
    shutil.copytree(WORLD_DATA, path)
    # Kept at schema revision 3: migrated (step 0004) by a writable open before the trial.
    with Store.open(path):
        pass
    return path


def _snapshot(path: Path) -> dict[str, bytes]:
    """Every file under the store (SQLite's own -wal/-shm aside), by name: its bytes."""
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def _entries(path: Path) -> list[str]:
    """Every name under the store and beside it (folders too: an empty one counts)."""
    return sorted(str(p.relative_to(path.parent)) for p in path.parent.rglob("*"))


def _swap(path: Path) -> None:
    a, b = segment_files(path)[:2]
    tmp = a.with_name("x")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


def test_a_busy_store_is_refused_before_a_swapped_file_moves(tmp_path: Path) -> None:
    path = _world(tmp_path)
    _swap(path)
    before, names = _snapshot(path), _entries(path)
    other = apsw.Connection(str(path / "catalog.sqlite"))
    try:
        other.execute("BEGIN IMMEDIATE")  # another writer holds the store
        with Store.open(path, timeout=0.2) as s, pytest.raises(StoreBusyError):
            s.repair()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert _snapshot(path) == before and _entries(path) == names
    with Store.open(path) as s:  # and the same repair goes through once it is free
        report = s.repair()
        assert any("moved back" in e for e in report["catalog_errors"])
        assert s.diagnose().ok


def _repair_in_child(path: Path, fsize: int) -> int:
    """``Store.repair`` in a forked child whose files may not grow past ``fsize`` bytes
    (the store opened first): 0 done, 1 refused cleanly, 3 anything else."""
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            with Store.open(path) as s:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))
                s.repair()
            code = 0
        except TimeSeriesError:
            code = 1
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status)
    return os.WEXITSTATUS(status)


def test_a_repair_refused_after_moving_swapped_files_moves_them_back(tmp_path: Path) -> None:
    """Two segments swapped and a third deleted: the repair moves the two back, then its
    write (the lost series' rows removed, recorded in a new segment) fails on a file-size
    limit; the refusal leaves every name and byte as before, no folder made."""
    path = _world(tmp_path)
    _swap(path)
    segment_files(path)[-1].unlink()
    before, names = _snapshot(path), _entries(path)
    assert _repair_in_child(path, 2048) == 1
    assert _entries(path) == names
    assert _snapshot(path) == before
    assert _repair_in_child(path, resource.RLIM_INFINITY) == 0
    with Store.open(path, read_only=True) as s:
        assert s.diagnose().ok
