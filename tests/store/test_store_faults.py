"""No failure during a write corrupts the store.

For every write operation (add, bulk add, ``add --csv``, ``add --sqlite``,
``import_sqlite``, remove, transform, compact) three sweeps, each trial on a fresh copy
of one small store:

- *injected*: the N-th write call fails, for every N the operation makes (an SQLite VFS
  fails the catalog's file writes and syncs with SQLITE_FULL/IOERR; the HDF5 side fails
  a dataset write, a file's finish or an fsync with ENOSPC/EIO);
- *file-size limit*: the operation runs in a forked child with ``RLIMIT_FSIZE`` set
  (SIGXFSZ ignored, so writes past it fail with EFBIG), swept over sizes;
- *SIGKILL*: the forked child is killed at a seeded random instant of the operation.

After each trial: the error (if any) was a clean one-line error, no traceback; the store
opens, ``verify`` passes, and its content is exactly the state before or after the
operation (the CLI's ``add --sqlite`` commits per partition: a prefix of whole
partitions). The module prints the trial counts (``pytest -s``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import random
import resource
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import h5py
import numpy as np
import pytest

import infrastore_sqlite.store.arrays as arrays_module
import infrastore_sqlite.store.lifecycle as lifecycle_module
import infrastore_sqlite.store.segments as segments_module
from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    SingleTimeSeries,
    Store,
    TimeSeriesError,
)
from infrastore_sqlite.demo import data_file
from infrastore_sqlite.store.arrays import ArrayFile

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
TRIALS: dict[str, int] = {}


def _sts(name: str, seed: int, n: int = 48) -> SingleTimeSeries:
    return SingleTimeSeries(T0, "PT1H", np.random.default_rng(seed).random(n), name)


def _fill(store: Store, base_owner: int) -> None:
    """Series of three partitions; several transactions, so several segments."""
    for k in range(6):
        store.add_time_series(base_owner + k, "Gen", "Component", _sts("load", base_owner + k))
    store.add_time_series_bulk(
        [
            {
                "owner_id": base_owner + 10 + k,
                "owner_type": "Bus",
                "time_series": NonSequentialTimeSeries(
                    [T0 + i * H for i in range(5)], np.arange(5.0) + k, "events"
                ),
            }
            for k in range(3)
        ]
    )
    store.add_time_series(
        base_owner + 20,
        "Gen",
        "Component",
        Deterministic(T0, "PT1H", "PT4H", "PT1H", 3, np.arange(12.0).reshape(4, 3), "fc"),
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("faults")
    base = d / "base.h5"
    with Store.create(base) as s:
        _fill(s, 1)
        s.remove_by_ids([2])  # dead slots for compact
    src = d / "src.h5"
    with Store.create(src) as s:
        _fill(s, 100)
        s.export_sqlite(d / "in.db")
    return {"base": base, "db": d / "in.db", "dir": d}


# ---------------------------------------------------------------------- operations
def _cli(args: list[str]) -> None:
    from infrastore_sqlite.cli import main

    try:
        main(args)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise CliFailed(int(exc.code)) from None


class CliFailed(Exception):
    """The CLI exited non-zero (it printed its own error)."""


def _op_add(p: Path, w: dict) -> None:
    with Store.open(p) as s:
        s.add_time_series(50, "Gen", "Component", _sts("new", 50))


def _op_bulk(p: Path, w: dict) -> None:
    with Store.open(p) as s:
        s.add_time_series_bulk(
            [
                {"owner_id": 60 + k, "owner_type": "Gen", "time_series": _sts("b", 60 + k, 400)}
                for k in range(40)
            ]
        )


def _op_csv(p: Path, w: dict) -> None:
    _cli(
        ["--store", str(p), "-q", "add", "--csv", str(data_file("wind.csv")), "--owner-id", "70",
         "--owner-type", "Wind", "--name", "max_active_power", "--type", "single",
         "--resolution", "PT1H"]
    )  # fmt: skip


def _op_add_sqlite(p: Path, w: dict) -> None:
    _cli(["--store", str(p), "-q", "add", "--sqlite", str(w["db"])])


def _op_import(p: Path, w: dict) -> None:
    with Store.open(p) as s:
        s.import_sqlite(w["db"])


def _op_remove(p: Path, w: dict) -> None:
    with Store.open(p) as s:
        s.remove_by_ids([1, 3, 7, 10])


def _op_transform(p: Path, w: dict) -> None:
    with Store.open(p) as s:
        s.transform_single_time_series("PT4H", "PT2H", resolution="PT1H")


def _op_compact(p: Path, w: dict) -> None:
    with Store.open(p) as s:
        s.compact()


OPS: dict[str, Callable[[Path, dict], None]] = {
    "add": _op_add,
    "bulk_add": _op_bulk,
    "add_csv": _op_csv,
    "add_sqlite": _op_add_sqlite,
    "import_sqlite": _op_import,
    "remove": _op_remove,
    "transform": _op_transform,
    "compact": _op_compact,
}
PARTITIONED = {"add_sqlite"}  # the CLI import commits partition by partition


def content(path: Path) -> tuple[list[tuple], dict]:
    """The store's catalog content; opening and verifying it must work."""
    with Store.open(path, read_only=True) as s:
        report = s.verify_integrity()
        rows = [
            (r.id, r.owner_id, r.name, int(r.type.catalog_code), r.data_hash)
            for r in s.select_rows()
        ]
    return rows, report


def check_state(op: str, path: Path, before: list, after: list, trial: str) -> None:
    rows, report = content(path)
    assert report["ok"], (trial, report["errors"][:3])
    if op not in PARTITIONED:
        assert rows in (before, after), trial
        return
    # whole partitions only: a partition is one series type of the imported file here
    assert set(before) <= set(rows) <= set(after), trial
    added = set(rows) - set(before)
    for code in {r[3] for r in set(after) - set(before)}:
        part = {r for r in set(after) - set(before) if r[3] == code}
        assert part <= added or not (part & added), (trial, code)


@pytest.fixture(scope="module")
def expected(world) -> dict[str, tuple[list, list]]:
    """Content before and after a clean run of each operation."""
    out = {}
    before, _ = content(world["base"])
    for op, fn in OPS.items():
        target = world["dir"] / f"clean_{op}.h5"
        shutil.copytree(world["base"], target)
        fn(target, world)
        after, report = content(target)
        assert report["ok"] and (after != before or op == "compact"), op
        out[op] = (before, after)
    return out


def fresh_copy(world, name: str) -> Path:
    target = world["dir"] / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(world["base"], target)
    return target


# ---------------------------------------------------------------------- injected failures
class Faults:
    """Counts write calls on both halves and fails the N-th (0: never)."""

    def __init__(self) -> None:
        self.calls = 0
        self.fail_at = 0
        self.failed: str | None = None

    def tick(self, where: str) -> None:
        self.calls += 1
        if self.calls == self.fail_at:
            self.failed = where
            raise {
                "catalog write": apsw.FullError("database or disk is full (injected)"),
                "catalog sync": apsw.IOError("disk I/O error (injected)"),
                "hdf5 write": OSError(errno.ENOSPC, "No space left on device (injected)"),
                "hdf5 finish": OSError(errno.ENOSPC, "No space left on device (injected)"),
                "fsync": OSError(errno.EIO, "Input/output error (injected)"),
            }[where]


class _FaultVFS(apsw.VFS):
    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        super().__init__("faulty", "unix", makedefault=True)

    def xOpen(self, name, flags):
        return _FaultFile(self.faults, name, flags)


class _FaultFile(apsw.VFSFile):
    def __init__(self, faults: Faults, name, flags) -> None:
        self.faults = faults
        super().__init__("unix", name, flags)

    def xWrite(self, data, offset):
        self.faults.tick("catalog write")
        return super().xWrite(data, offset)

    def xSync(self, flags):
        self.faults.tick("catalog sync")
        return super().xSync(flags)


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch):
    f = Faults()
    real_write, real_flush, real_fsync = (
        ArrayFile._write_now,
        h5py.File.flush,
        arrays_module.fsync_path,
    )

    def write_now(self, *job):
        f.tick("hdf5 write")
        return real_write(self, *job)

    def flush(self):  # a segment's finish flushes before it closes
        f.tick("hdf5 finish")
        return real_flush(self)

    def fsync(path):
        f.tick("fsync")
        return real_fsync(path)

    monkeypatch.setattr(ArrayFile, "_write_now", write_now)
    monkeypatch.setattr(h5py.File, "flush", flush)
    for module in (arrays_module, segments_module, lifecycle_module):
        monkeypatch.setattr(module, "fsync_path", fsync)
    vfs = _FaultVFS(f)
    try:
        yield f
    finally:
        vfs.unregister()


def _clean_error(exc: BaseException) -> None:
    if isinstance(exc, CliFailed):
        assert exc.args[0] == 1
        return
    assert isinstance(exc, TimeSeriesError), repr(exc)
    assert "\n" not in str(exc), str(exc)


@pytest.mark.parametrize("op", list(OPS))
def test_injected_failure_at_every_write(op, world, expected, faults: Faults, capsys) -> None:
    before, after = expected[op]
    path = fresh_copy(world, f"inj_{op}.h5")
    faults.calls, faults.fail_at = 0, 0
    OPS[op](path, world)
    total = faults.calls
    assert total > 0
    points = (
        range(1, total + 1)
        if total <= 60
        else sorted({round(1 + i * (total - 1) / 59) for i in range(60)})
    )
    failed = 0
    for n in points:
        path = fresh_copy(world, f"inj_{op}.h5")
        faults.calls, faults.fail_at, faults.failed = 0, n, None
        try:
            OPS[op](path, world)
        except (TimeSeriesError, CliFailed) as exc:
            _clean_error(exc)
            failed += 1
        faults.fail_at = 0
        err = capsys.readouterr().err
        assert "Traceback" not in err, err
        check_state(op, path, before, after, f"{op} failing write {n} ({faults.failed})")
    TRIALS[f"injected {op}"] = len(points)
    assert failed > 0  # the sweep did hit the operation


# ---------------------------------------------------------------------- forked children
def _child(fn: Callable[[], None], err_fd: int, fsize: int | None) -> None:
    """In a forked child: run ``fn`` and leave with 0, 1 (clean error) or 3 (traceback).

    stderr goes to a pipe, which no file-size limit applies to (as a terminal would).
    """
    code = 3
    try:
        os.dup2(err_fd, 2)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))
        fn()
        code = 0
    except CliFailed as exc:
        code = 1 if exc.args[0] == 1 else 3
    except TimeSeriesError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        code = 1
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)


def forked(
    fn: Callable[[], None], *, fsize: int | None = None, kill_after: float | None = None
) -> tuple[int, str]:
    """Run ``fn`` in a forked child; its wait status and what it wrote to stderr."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(fn, write_fd, fsize)
    os.close(write_fd)
    if kill_after is not None:
        time.sleep(kill_after)
        os.kill(pid, signal.SIGKILL)
    with os.fdopen(read_fd, "rb") as pipe:
        err = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    return status, err


@pytest.mark.parametrize("op", list(OPS))
def test_file_size_limit_sweep(op, world, expected) -> None:
    before, after = expected[op]
    sizes = [0, 2048, 8192, 20_000, 40_000, 70_000, 150_000, 400_000]
    hit = 0
    for size in sizes:
        path = fresh_copy(world, f"fsize_{op}.h5")
        status, err = forked(functools.partial(OPS[op], path, world), fsize=size)
        assert os.WIFEXITED(status), (op, size, status)
        code = os.WEXITSTATUS(status)
        assert code in (0, 1), (op, size, err)
        assert "Traceback" not in err, err
        if code == 1:
            hit += 1
            # one readable line; an import's report of what it committed may follow
            first = err.splitlines()[0]
            assert first.startswith("Error: ") and len(first) < 400, err
            assert not any(m in err for m in ("sblock", "eoa", "H5F", "addr")), err
        check_state(op, path, before, after, f"{op} with RLIMIT_FSIZE {size}")
    TRIALS[f"fsize {op}"] = len(sizes)
    assert hit > 0


KILLS_PER_OP = 13


@pytest.mark.parametrize("op", list(OPS))
def test_sigkill_at_random_instants(op, world, expected) -> None:
    before, after = expected[op]
    path = fresh_copy(world, f"kill_{op}.h5")
    start = time.perf_counter()
    status, err = forked(functools.partial(OPS[op], path, world))
    duration = time.perf_counter() - start
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, err
    rng = random.Random(f"sigkill-{op}")
    killed = 0
    for trial in range(KILLS_PER_OP):
        path = fresh_copy(world, f"kill_{op}.h5")
        delay = rng.uniform(0.0, duration)
        began = time.perf_counter()
        status, err = forked(functools.partial(OPS[op], path, world), kill_after=delay)
        if os.WIFSIGNALED(status):
            killed += 1
        else:
            # It finished before the kill: the first run was slowed by other load on the
            # machine. Aim the next kills within the fastest run seen, so they land.
            duration = min(duration, time.perf_counter() - began)
        assert "Traceback" not in err, err
        check_state(op, path, before, after, f"{op} killed after {delay:.3f} s (trial {trial})")
        # and the next writer works on what the kill left
        with Store.open(path) as s:
            s.add_time_series(999, "Gen", "Component", _sts("after_kill", 999))
            verdict = s.verify_integrity()
            assert verdict["ok"], verdict
    TRIALS[f"sigkill {op}"] = KILLS_PER_OP
    assert killed > 0


# ---------------------------------------------------------------------- init on a full disk
def _init_cli(path: Path) -> Callable[[], None]:
    return functools.partial(_cli, ["--store", str(path), "init"])


def test_init_on_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    # The file-size limit stands in for a disk that fills up while init writes.
    hit = 0
    for size in [0, 1024, 4096, 16_384, 65_536]:
        path = tmp_path / f"full_{size}" / "s.h5"
        path.parent.mkdir()
        status, err = forked(_init_cli(path), fsize=size)
        assert os.WIFEXITED(status), (size, status)
        if os.WEXITSTATUS(status) == 0:
            continue
        hit += 1
        assert os.WEXITSTATUS(status) == 1, err
        assert "Traceback" not in err, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), err
        assert "raise it and try again" in lines[0] and "H5" not in lines[0], err
        # it names the store asked for, not the work directory it was built in
        assert f"cannot create the store {path}" in lines[0] and "creating" not in lines[0], err
        # nothing is left behind, so the retry (with room) works
        assert list(path.parent.iterdir()) == [], list(path.parent.iterdir())
        _cli(["--store", str(path), "init"])
        assert content(path)[1]["ok"]
    assert hit >= 3
    TRIALS["fsize init"] = 5


def test_init_failing_at_each_write_is_one_line_and_leaves_nothing(
    tmp_path: Path, faults: Faults, capsys
) -> None:
    clean = tmp_path / "clean" / "s.h5"
    clean.parent.mkdir()
    faults.calls, faults.fail_at = 0, 0
    _cli(["--store", str(clean), "init"])
    total = faults.calls
    assert total > 0
    capsys.readouterr()
    refused = 0
    for n in range(1, total + 1):
        path = tmp_path / f"fail_{n}" / "s.h5"
        path.parent.mkdir()
        faults.calls, faults.fail_at, faults.failed = 0, n, None
        try:
            _cli(["--store", str(path), "init"])
        except CliFailed as exc:
            assert exc.args[0] == 1
            refused += 1
            err = capsys.readouterr().err
            assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (n, err)
            assert "creating" not in err, err
            # nothing is left behind, so the retry works
            assert list(path.parent.iterdir()) == [], (n, faults.failed)
        else:
            # a write that failed after the store was complete (the catalog's checkpoint
            # when it is closed): the store is whole
            assert content(path)[1]["ok"], (n, faults.failed)
        finally:
            faults.fail_at = 0
    assert refused > 0
    TRIALS["injected init"] = total


def test_report_trial_counts() -> None:
    # Runs last in this module: the counts the sweeps above made (for the closing note).
    if TRIALS:
        print("\nfault trials:", TRIALS, "total", sum(TRIALS.values()))
