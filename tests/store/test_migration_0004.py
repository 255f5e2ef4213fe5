"""Schema step 0004 (integer array ids) on a store written by the code before it.

``tests/data/revision3_store`` was written by main at 3fb44a6 (schema revision 3; see
``tests/data/make_revision3_store.py``), with ``expected.json``: what every series read
with that code. It must open with this code, migrate in one transaction (a SIGKILL at
any instant leaves revision 3 or 4, never a mix), verify, and read the same.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import numpy as np
import pytest
from repo_root import REPO_ROOT

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.errors import CatalogMigrationRequiredError
from infrastore_sqlite.store.catalog import schema_version
from infrastore_sqlite.store.rowcheck import SQL_FUNCTION, sql_row_check

DATA = REPO_ROOT / "tests" / "data" / "revision3_store"
# The step-3 row columns the old checksum covered (migrations/0003_row_checks.sql).
_OLD_CHECKED = (
    "id, owner_id, owner_type, owner_category, time_series_type, name, initial_timestamp, "
    "initial_ms, resolution, length, horizon, interval, count, timestamps_hash, units, "
    "quantity_kind, unit_system, component_field, application_data, time_reference, "
    "percentiles_json, element_type, element_shape, array_shape, data_hash, features_hash"
)


def _expected() -> dict[int, dict]:
    return {int(k): v for k, v in json.loads((DATA / "expected.json").read_text()).items()}


def _copy(tmp_path: Path) -> Path:
    path = tmp_path / "store.h5"
    shutil.copytree(DATA / "store.h5", path)
    return path


def _revision(path: Path) -> int:
    conn = apsw.Connection(str(path / "catalog.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("PRAGMA user_version").fetchall()[0][0]
    finally:
        conn.close()


def _files(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def _reads_as_expected(s: Store, expected: dict[int, dict], added: tuple[int, ...] = ()) -> None:
    metadata = {m["id"]: json.loads(json.dumps(m, default=str)) for m in s.list_metadata()}
    assert sorted(metadata) == sorted([*expected, *added])
    for sid, want in expected.items():
        assert metadata[sid] == want["metadata"], sid
        data = np.asarray(s.read_by_id(sid).data)
        assert str(data.dtype) == want["dtype"]
        assert np.ascontiguousarray(data).tobytes().hex() == want["data"], sid


def test_the_kept_store_is_of_revision_3_and_every_series_type(tmp_path: Path) -> None:
    # Read from a copy: opening the kept catalog in place would write its -shm beside it.
    assert _revision(_copy(tmp_path)) == 3 < schema_version() == 4
    kept = _expected().values()
    types = {v["metadata"]["time_series_type"] for v in kept}
    # single, nonsequential, persistent, three forecasts, derived
    assert len(types) == 7, types
    references = {v["metadata"]["time_reference"] for v in kept}
    assert {"utc", "America/Denver", "zoneless"} <= references, references
    assert {"float64", "float32", "int64", "int32", "bool"} <= {v["dtype"] for v in kept}


def test_a_read_only_open_is_refused_saying_how_to_migrate(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    before = _files(path)
    with pytest.raises(CatalogMigrationRequiredError) as info:
        Store.open(path, read_only=True)
    assert "revision 3" in str(info.value) and "needs 4" in str(info.value)
    assert "open the store once for writing" in str(info.value)
    assert _files(path) == before
    assert _revision(path) == 3


def test_it_migrates_verifies_and_reads_the_same(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    expected = _expected()
    with Store.open(path) as s:
        assert s._catalog.scalar("PRAGMA user_version") == 4
        assert s.migrated_from == 3
        cat = s._catalog
        # Arrays numbered 1..N; the series rows name them by id, and nothing else.
        ids = [r[0] for r in cat.execute("SELECT id FROM arrays ORDER BY id")]
        assert ids == list(range(1, len(ids) + 1))
        columns = {r[1] for r in cat.execute("PRAGMA table_info(time_series_associations)")}
        assert {"data_id", "timestamps_id"} <= columns
        assert not {"data_hash", "timestamps_hash"} & columns
        assert cat.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'ts_data_hash'") == 0
        # The numbering of series goes on past the highest id ever given (18; 2 removed).
        assert cat.scalar(
            "SELECT seq FROM sqlite_sequence WHERE name = 'time_series_associations'"
        ) == max(expected)
        assert s.verify_integrity() == {"ok": True, "errors": []}
        assert s.diagnose().ok
        _reads_as_expected(s, expected)
        new = s.add_time_series(
            99,
            "Gen",
            "Component",
            SingleTimeSeries(s.read_by_id(1).initial_timestamp, "PT1H", np.arange(5.0), "new"),
        )
        assert new == max(expected) + 1
    with Store.open(path, read_only=True) as s:
        assert s.migrated_from is None  # current now: nothing to migrate
        assert s.diagnose().ok
        _reads_as_expected(s, expected, added=(new,))
        assert s.read_by_id(new).data.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_verify_on_the_command_line_passes_after(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    with Store.open(path):
        pass
    run = subprocess.run(
        [sys.executable, "-m", "infrastore_sqlite", "--store", str(path), "verify"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr


def _inflate(path: Path, copies: int) -> int:
    """More rows in the revision-3 catalog, past the store (as many as make the migration
    take a while, so that kills land inside it): each kept row again under other owners,
    naming the same arrays, with its step-3 checksum. The records the segments keep do
    not know them (verify says so, before the migration and after it alike). Returns the
    row count."""
    conn = apsw.Connection(str(path / "catalog.sqlite"))
    conn.create_scalar_function(SQL_FUNCTION, sql_row_check, numargs=-1, deterministic=True)
    cols = [
        r[1]
        for r in conn.execute("PRAGMA table_info(time_series_associations)")
        if r[1] not in ("id", "row_check")
    ]
    picked = ", ".join(f"t.{c}" if c != "owner_id" else "t.owner_id + 1000 * n.k" for c in cols)
    with conn:
        conn.execute(
            "WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < ?) "
            f"INSERT INTO time_series_associations ({', '.join(cols)}) "
            f"SELECT {picked} FROM time_series_associations t, n ORDER BY n.k, t.id",
            (copies,),
        )
        conn.execute(
            f"UPDATE time_series_associations SET row_check = {SQL_FUNCTION}({_OLD_CHECKED})"
        )
        count = conn.execute("SELECT count(*) FROM time_series_associations").fetchall()[0][0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return count


_MIGRATE = "import sys; from infrastore_sqlite import Store; Store.open(sys.argv[1]).close(); print('done')"


def _migrate_in_child(path: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", _MIGRATE, str(path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _catalog_content(path: Path) -> tuple:
    conn = apsw.Connection(str(path / "catalog.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return tuple(
            conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("time_series_associations", "arrays", "segments", "sqlite_sequence")
        )
    finally:
        conn.close()


def _problems(s: Store, path: Path) -> list[str]:
    return sorted(e.replace(str(path), "STORE") for e in s.diagnose().errors)


def test_kills_of_a_small_migration_leave_a_store_that_verifies(tmp_path: Path) -> None:
    """The kept store itself: killed at random instants of the child's run (most land
    before or after its few-millisecond migration), then opened: it verifies and reads."""
    expected = _expected()
    rng = random.Random(4)
    for trial in range(4):
        path = tmp_path / f"small{trial}.h5"
        shutil.copytree(DATA / "store.h5", path)
        child = _migrate_in_child(path)
        time.sleep(rng.uniform(0.0, 1.5))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        assert _revision(path) in (3, 4)
        with Store.open(path) as s:
            assert s.verify_integrity() == {"ok": True, "errors": []}
            assert s.diagnose().ok
            _reads_as_expected(s, expected)


def test_a_kill_at_any_instant_leaves_the_old_store_or_the_migrated_one(tmp_path: Path) -> None:
    """A catalog of 25,000 rows (the migration takes a good part of a second): a kill
    inside it leaves revision 3, which the next open migrates to the very catalog an
    uninterrupted migration makes, reading the same."""
    base = tmp_path / "base.h5"
    shutil.copytree(DATA / "store.h5", base)
    rows = _inflate(base, copies=1500)
    expected = _expected()
    # How long a whole run takes here: the kills are spread over it.
    timed = tmp_path / "timed.h5"
    shutil.copytree(base, timed)
    start = time.monotonic()
    child = _migrate_in_child(timed)
    out, err = child.communicate(timeout=300)
    whole = time.monotonic() - start
    assert child.returncode == 0 and out.strip() == b"done", err
    control = _catalog_content(timed)
    with Store.open(timed) as s:
        control_problems = _problems(s, timed)
    rng = random.Random(37)
    seen = set()
    for trial in range(6):
        path = tmp_path / f"trial{trial}.h5"
        shutil.copytree(base, path)
        child = _migrate_in_child(path)
        # Python's start is about half the run: later instants land in the migration.
        time.sleep(rng.uniform(0.3, 1.0) * whole)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        revision = _revision(path)
        assert revision in (3, 4)
        seen.add(revision)
        with Store.open(path) as s:  # migrates a store the kill left at revision 3
            assert s._catalog.scalar("PRAGMA user_version") == 4
            assert s._catalog.scalar("SELECT count(*) FROM time_series_associations") == rows
            assert _problems(s, path) == control_problems
            # The kept rows read exact; each copy reads as the row it copied.
            for sid, want in expected.items():
                data = np.ascontiguousarray(np.asarray(s.read_by_id(sid).data))
                assert data.tobytes().hex() == want["data"], (trial, sid)
            by_owner = {
                (m["owner_id"] % 1000, m["owner_category"], m["name"], m["time_series_type"]): m
                for m in s.list_metadata()
                if m["owner_id"] < 1000
            }
            for m in s.list_metadata()[:: max(1, rows // 300)]:
                key = (m["owner_id"] % 1000, m["owner_category"], m["name"], m["time_series_type"])
                original = by_owner[key]
                assert m["data_hash"] == original["data_hash"]
                got = np.asarray(s.read_by_id(m["id"]).data)
                assert np.array_equal(got, np.asarray(s.read_by_id(original["id"]).data))
        assert _catalog_content(path) == control
    assert seen, "no trial ran"
