"""Atomicity: an export that fails part-way leaves the target exactly as it was.

The writer is made to fail at several points (after the first partition's series rows, in
the cell encoder, while building an index or the views, while reading the store, on a
KeyboardInterrupt) for a new target and for an existing database. A new target must not
appear, and no ``.partial`` or journal file may be left beside it; an existing database
must be byte-identical and still usable. A retry afterwards succeeds.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import infrastore_sqlite.interchange.plan as plan_module
import infrastore_sqlite.interchange.sqlite.writer as export_module
from infrastore_sqlite import Deterministic, NonSequentialTimeSeries, SingleTimeSeries, Store

T0 = datetime(2024, 1, 1, tzinfo=UTC)


class Boom(RuntimeError):
    pass


@pytest.fixture
def store(tmp_path: Path) -> Store:
    (tmp_path / "store").mkdir()
    s = Store.create(tmp_path / "store" / "s.h5")
    add = lambda ts, owner=1: s.add_time_series(owner, "Gen", "Component", ts)  # noqa: E731
    add(SingleTimeSeries(T0, "PT1H", np.arange(5000.0), "a"))
    add(SingleTimeSeries(T0, "PT1H", np.arange(5000, dtype=np.int32), "b"))
    add(SingleTimeSeries(T0, "PT1H", np.arange(10.0).reshape(5, 2), "c"))
    add(Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, np.arange(6.0).reshape(2, 3), "d"))
    add(NonSequentialTimeSeries([T0], np.array([1.0]), "earlier"), owner=9)
    yield s
    s.close()


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    return d


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def existing(store: Store, out_dir: Path) -> Path:
    target = out_dir / "old.sqlite"
    store.export_sqlite(target, name="earlier")
    with sqlite3.connect(target) as con:
        con.execute("CREATE TABLE notes (x)")
        con.execute("INSERT INTO notes VALUES ('keep')")
    return target


def fail_on_call(n: int, real: Callable[..., Any], exc: BaseException) -> Callable[..., Any]:
    """A wrapper that lets ``n - 1`` calls through and raises on the n-th."""
    calls = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] >= n:
            raise exc
        return real(*args, **kwargs)

    wrapper.calls = calls  # type: ignore[attr-defined]
    return wrapper


# (module, attribute, which call fails, exception)
FAULTS = {
    "series rows after the first partition": (export_module, "_insert_series", 2, Boom("x")),
    "series rows of the first partition": (export_module, "_insert_series", 1, Boom("x")),
    "JSON cell encoder": (export_module, "encode_json_cells", 1, Boom("x")),
    "scalar cell encoder, second array": (export_module, "encode_scalar_cells", 2, Boom("x")),
    "index after the first partition": (export_module, "index_ddl", 2, Boom("x")),
    "view rebuild": (export_module, "view_sql", 3, Boom("x")),
    # The series objects of the types and slices that need one (here the forecast).
    "reading the store": (plan_module, "export_object", 1, Boom("x")),
    # Whole SingleTimeSeries go as they are stored, straight into a block (the third
    # partition's).
    "reading the store, stored arrays": (plan_module, "RowBlock", 3, Boom("x")),
    "keyboard interrupt": (export_module, "_insert_series", 2, KeyboardInterrupt()),
    "sqlite error": (
        export_module,
        "index_ddl",
        2,
        None,  # replaced by SQL that SQLite refuses
    ),
}


def install(monkeypatch: pytest.MonkeyPatch, name: str) -> Callable[..., Any]:
    module, attr, n, exc = FAULTS[name]
    real = getattr(module, attr)
    if exc is None:
        calls = [0]

        def bad_sql(p: Any) -> str:
            calls[0] += 1
            return real(p) if calls[0] < n else "CREATE INDEX broken ON no_such_table (x)"

        monkeypatch.setattr(module, attr, bad_sql)
        return bad_sql
    wrapper = fail_on_call(n, real, exc)
    monkeypatch.setattr(module, attr, wrapper)
    return wrapper


def expected_exception(name: str) -> type[BaseException]:
    exc = FAULTS[name][3]
    if exc is None:
        from infrastore_sqlite.errors import StorageError

        return StorageError
    return type(exc)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_new_target_is_not_left_behind(
    store: Store, out_dir: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    install(monkeypatch, fault)
    target = out_dir / "new.sqlite"
    with pytest.raises(expected_exception(fault)):
        store.export_sqlite(target, name_glob="[abcd]")
    assert os.listdir(out_dir) == []  # no file, no .partial, no journal
    monkeypatch.undo()
    result = store.export_sqlite(target, name_glob="[abcd]")
    assert len(result) == 4
    assert os.listdir(out_dir) == ["new.sqlite"]


@pytest.mark.parametrize("fault", list(FAULTS))
def test_existing_target_is_unchanged(
    store: Store, out_dir: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    target = existing(store, out_dir)
    before = digest(target)
    install(monkeypatch, fault)
    with pytest.raises(expected_exception(fault)):
        store.export_sqlite(target, name_glob="[abcd]")
    assert digest(target) == before
    assert os.listdir(out_dir) == ["old.sqlite"]
    monkeypatch.undo()
    with sqlite3.connect(target) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("SELECT x FROM notes").fetchall() == [("keep",)]
    result = store.export_sqlite(target, name_glob="[abcd]")
    assert len(result) == 4
    with sqlite3.connect(target) as con:
        assert con.execute("SELECT count(*) FROM all_series").fetchone()[0] == 5
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert os.listdir(out_dir) == ["old.sqlite"]


def test_faults_fire_mid_way(store: Store, out_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first partition really was written before the failure (so rollback mattered).
    target = existing(store, out_dir)
    before = digest(target)
    seen: list[str] = []
    real = export_module.index_ddl

    def spy(p: Any) -> str:
        # Called as each partition's tables are created: the third call comes once
        # the rows of two partitions are in.
        seen.append(p.values_table)
        if len(seen) == 3:
            raise Boom("after two partitions")
        return real(p)

    monkeypatch.setattr(export_module, "index_ddl", spy)
    with pytest.raises(Boom):
        store.export_sqlite(target, name_glob="[abcd]")
    with sqlite3.connect(target) as con:
        # Nothing of the two partitions that were complete survives the rollback.
        for table in seen:
            assert con.execute(
                "SELECT count(*) FROM sqlite_master WHERE name = ?", (table,)
            ).fetchone() == (0,)
    assert len(seen) == 3
    assert digest(target) == before


def test_a_locked_database_is_left_alone(
    store: Store, out_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infrastore_sqlite.errors import StorageError

    target = existing(store, out_dir)
    before = digest(target)
    # The lock must come from another process: two SQLite libraries in one process
    # (the stdlib's and apsw's) do not see each other's POSIX locks.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()",
            str(target),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        original = export_module._connect

        def impatient(path: Path, *, create: bool) -> Any:
            conn = original(path, create=create)
            conn.setbusytimeout(50)
            return conn

        monkeypatch.setattr(export_module, "_connect", impatient)
        with pytest.raises(StorageError):
            store.export_sqlite(target, name="a")
    finally:
        holder.communicate("")
    assert digest(target) == before
    assert os.listdir(out_dir) == ["old.sqlite"]
