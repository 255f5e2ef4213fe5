"""Several processes on one store or one export target.

Readers never wait for a writer and read the last committed state; a second writer waits
up to ``--timeout`` and then fails as busy; two exports to one new file never overwrite
each other; a killed export's partial file is removed by the next export.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pytest
from repo_root import REPO_ROOT

from infrastore_sqlite import InvalidParameterError, SingleTimeSeries, Store

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "infrastore_sqlite", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


def spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "infrastore_sqlite", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


def _fill(store: Store, first_owner: int, n: int, length: int) -> None:
    rng = np.random.default_rng(first_owner)
    store.add_time_series_bulk(
        [
            {
                "owner_id": first_owner + k,
                "owner_type": "Gen",
                "time_series": SingleTimeSeries(T0, "PT1H", rng.random(length), "load"),
            }
            for k in range(n)
        ]
    )


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two interchange files of different owners (each one partition of 150 series)."""
    d = tmp_path_factory.mktemp("conc")
    out = {}
    for tag, owner in (("a", 1), ("b", 10_000)):
        with Store.create(d / f"{tag}.h5") as s:
            _fill(s, owner, 150, 2000)
            s.export_sqlite(d / f"{tag}.db")
        out[tag] = d / f"{tag}.db"
    return out


def test_a_reader_during_an_import_reads_committed_states(tmp_path, dbs) -> None:
    path = tmp_path / "s.h5"
    with Store.create(path) as s:
        _fill(s, 50_000, 3, 24)
    writer = spawn("--store", str(path), "-q", "add", "--sqlite", str(dbs["a"]))
    seen = set()
    reads = 0
    try:
        while writer.poll() is None:
            with Store.open(path, read_only=True) as r:
                rows = r.select_rows()
                seen.add(len(rows))
                assert len(rows) in (3, 153)  # before, or after the one partition
                if rows:
                    batch = r.read_by_ids([rows[0].id, rows[-1].id])
                    assert [b.length for b in batch] == [rows[0].length, rows[-1].length]
            reads += 1
            # the CLI's readers too: never "[Errno 11] Unable to synchronously open file"
            if reads % 5 == 1:
                listed = cli("--store", str(path), "-f", "json", "info")
                assert listed.returncode == 0, listed.stderr
    finally:
        _out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    assert reads > 0 and 3 in seen
    with Store.open(path, read_only=True) as r:
        assert len(r.list_metadata()) == 153 and r.verify_integrity()["ok"]


def test_two_importers_one_waits_for_the_other(tmp_path, dbs) -> None:
    path = tmp_path / "s.h5"
    Store.create(path).close()
    procs = [
        spawn("--store", str(path), "-q", "--timeout", "120", "add", "--sqlite", str(dbs[t]))
        for t in ("a", "b")
    ]
    results = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    with Store.open(path, read_only=True) as r:
        owners = sorted(m["owner_id"] for m in r.list_metadata())
        assert owners == list(range(1, 151)) + list(range(10_000, 10_150))
        assert r.verify_integrity()["ok"]


def test_a_busy_store_refuses_a_second_writer_after_the_timeout(tmp_path, dbs) -> None:
    path = tmp_path / "s.h5"
    with Store.create(path) as s:
        _fill(s, 50_000, 2, 24)
    holder = Store.open(path)
    try:
        holder.begin_transaction()  # holds the write lock
        _fill(holder, 60_000, 1, 24)
        start = time.monotonic()
        r = cli("--store", str(path), "--timeout", "0.5", "add", "--sqlite", str(dbs["a"]))
        assert r.returncode == 1 and time.monotonic() - start >= 0.5
        assert "being written by another process" in r.stderr and "--timeout" in r.stderr
        assert "Traceback" not in r.stderr and "Errno 11" not in r.stderr
        # readers go on, seeing the last commit (not the holder's uncommitted series)
        listed = cli("--store", str(path), "-f", "json", "list")
        assert listed.returncode == 0 and listed.stdout.count('"owner_id"') == 2
        holder.commit_transaction()
    finally:
        holder.close()
    r = cli("--store", str(path), "-q", "add", "--sqlite", str(dbs["a"]))
    assert r.returncode == 0, r.stderr


def test_two_exports_to_one_new_target(tmp_path, dbs) -> None:
    src = tmp_path / "src.h5"
    with Store.create(src) as s:
        _fill(s, 1, 150, 2000)
    target = tmp_path / "out.db"
    procs = [
        spawn("--store", str(src), "-q", "export", "-f", "sqlite", "--db", str(target))
        for _ in range(2)
    ]
    results = [p.communicate(timeout=180) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 1], results  # one wrote it; the other refused, overwrote nothing
    loser = results[[p.returncode for p in procs].index(1)][1]
    assert "Traceback" not in loser and ("appeared while" in loser or "already" in loser), loser
    conn = apsw.Connection(str(target), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("SELECT count(*) FROM all_series").fetchone()[0] == 150
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    assert sorted(os.listdir(tmp_path)) == ["out.db", "src.h5"]  # no partial left


def test_a_target_that_appears_during_an_export_is_not_overwritten(tmp_path) -> None:
    target = tmp_path / "out.db"
    with Store.create(tmp_path / "s.h5") as s:
        _fill(s, 1, 3, 24)

        def appear(done: int, total: int) -> None:
            if not target.exists():
                target.write_bytes(b"someone else's file")

        with pytest.raises(InvalidParameterError, match=r"appeared while this export ran"):
            s.export_sqlite(target, progress=appear)
    assert target.read_bytes() == b"someone else's file"
    assert sorted(os.listdir(tmp_path)) == ["out.db", "s.h5"]


def test_a_killed_exports_partial_file_is_removed_by_the_next(tmp_path) -> None:
    with Store.create(tmp_path / "s.h5") as s:
        _fill(s, 1, 3, 24)
        gone = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
        )
        dead = int(gone.stdout)  # that process has exited
        stale = tmp_path / f".out.db.partial-{dead}-0123456789ab"
        live = tmp_path / f".out.db.partial-{os.getpid()}-0123456789ab"  # a running export's
        for p in (stale, live):
            p.write_bytes(b"half an export")
        s.export_sqlite(tmp_path / "out.db")
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, "out.db", "s.h5"])
