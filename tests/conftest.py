"""Shared fixtures. Keep this small: a fixture belongs here only when several modules use it."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from infrastore_sqlite import Store

T0 = datetime(2024, 1, 1, tzinfo=UTC)

# What an export writes beyond the interchange layout (issues 24, 38): the typed
# companion views, the export log and the calendar tables the flat views read. A test that compares a file with the layout, or with the
# reference's export, leaves them out with ``WHERE NOT {ADDITIONS}`` on sqlite_master.
ADDITIONS = (
    "(tbl_name IN ('infrastore_exports', 'infrastore_days', 'infrastore_zones', "
    "'infrastore_zone_days', 'infrastore_zone_hours') "
    "OR coalesce(sql, '') LIKE '%infrastore-sqlite: typed companion%')"
)


def drop_additions(db: Path) -> None:
    """Drop the companion views and the export log, for a test that restructures the
    layout's tables by hand (SQLite will not rename or alter a table a view reads)."""
    import apsw

    conn = apsw.Connection(str(db))
    try:
        # Views first (they read the tables); an autoindex goes with its table.
        rows = conn.execute(
            f"SELECT type, name FROM sqlite_master WHERE {ADDITIONS} "
            "AND name NOT LIKE 'sqlite_autoindex%' ORDER BY type = 'table'"
        ).fetchall()
        for kind, name in rows:
            conn.execute(f'DROP {kind.upper()} "{name}"')
    finally:
        conn.close()


# ---------------------------------------------------------------------- the temp folder
def _left_by_us(name: str) -> bool:
    """Whether ``infrastore-sqlite-…`` in the temp folder is this run's leftover: an
    in-memory store's directory names its owner's pid, and one of a live process that is
    not this one is another run's, still in use (several runs share the machine)."""
    from infrastore_sqlite.store.lifecycle import SCRATCH_PREFIX

    if not name.startswith(SCRATCH_PREFIX):
        return True
    pid = name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
    if not pid.isdigit():
        return False  # the pid-less name of an older build (another checkout's run)
    if int(pid) == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


@pytest.fixture(scope="session", autouse=True)
def leaves_nothing_in_the_temp_folder() -> Iterator[None]:
    """A test run leaves no ``infrastore-sqlite-*`` entry in the system temp folder
    (issue 38: in-memory stores' directories built up there)."""
    root = Path(tempfile.gettempdir())
    before = {p.name for p in root.glob("infrastore-sqlite-*")}
    yield
    gc.collect()  # stores the tests dropped without closing: their finalizers run
    after = {p.name for p in root.glob("infrastore-sqlite-*")}
    left = sorted(n for n in after - before if _left_by_us(n))
    assert not left, f"the test run left {left} in {root}"


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Where a test's store goes (the catalog is this path + ``.sqlite``)."""
    return tmp_path / "store.h5"


@pytest.fixture
def store(store_path: Path) -> Iterator[Store]:
    """A fresh, empty, writable store, closed after the test."""
    s = Store.create(store_path)
    try:
        yield s
    finally:
        s.close()


def exported_db(
    tmp_path_factory: pytest.TempPathFactory, label: str, build: Callable[[Store], None]
) -> Path:
    """A database exported from a store that ``build`` fills (for module-scoped fixtures)."""
    d = tmp_path_factory.mktemp(label)
    src = Store.create(d / "src.h5")
    try:
        build(src)
        db = d / "base.db"
        src.export_sqlite(db)
    finally:
        src.close()
    return db


def copy_of(db: Path, tmp_path: Path, name: str) -> Path:
    """A private copy of ``db`` that one test may edit."""
    target = tmp_path / name
    shutil.copy(db, target)
    return target


def query(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Run one statement on an interchange file (committed) and return its rows."""
    import apsw

    conn = apsw.Connection(str(db))
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


@pytest.fixture(params=["in line", "read ahead"])
def read_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the Parquet reader walks a values file: in line (a file of a few
    batches) and a batch ahead in a worker thread (a longer file). Both must import, and
    refuse, alike; the tests' files are small, so the read-ahead is forced here."""
    if request.param == "read ahead":
        from infrastore_sqlite.interchange.parquet import partition

        monkeypatch.setattr(partition, "_READ_AHEAD_ROWS", 0)
        monkeypatch.setattr(partition, "_READ_AHEAD_ARRAY_ROWS", 0)
    return str(request.param)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A SeaweedFS S3 server on 127.0.0.1 for the whole session (``tests/s3server.py``),
    stopped after; tests write under prefixes of their own in its bucket."""
    from s3server import S3Server

    server = S3Server(tmp_path_factory.mktemp("s3"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
