"""Catalog revisions: ``PRAGMA user_version`` against the shipped migration steps.

A newer catalog is refused in both modes; an older one is migrated in place by a writable
open and refused (with advice) by a read-only one. Newer "shipped" steps are simulated by
monkeypatching ``infrastore_sqlite.catalog.migration_steps``.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pytest

import infrastore_sqlite.store.catalog as catalog_module
from infrastore_sqlite import (
    CatalogMigrationRequiredError,
    CatalogTooNewError,
    IncompatibleFormatError,
    OwnerCategory,
    SingleTimeSeries,
    StorageError,
    Store,
)
from infrastore_sqlite.store import catalog_path

T0 = datetime(2024, 1, 1, tzinfo=UTC)
REAL_STEPS = catalog_module.migration_steps


def _user_version(path: Path) -> int:
    conn = apsw.Connection(str(catalog_path(path)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def _set_user_version(path: Path, version: int) -> None:
    conn = apsw.Connection(str(catalog_path(path)))
    conn.execute(f"PRAGMA user_version={version}")
    conn.close()


def _tables(path: Path) -> set[str]:
    conn = apsw.Connection(str(catalog_path(path)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(catalog_path(path).read_bytes()).hexdigest()


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A closed store at the current revision holding one series."""
    path = tmp_path / "m.h5"
    with Store.create(path) as s:
        s.add_time_series(
            1, "Gen", OwnerCategory.Component, SingleTimeSeries(T0, "PT1H", np.arange(3.0), "a")
        )
    return path


def _with_extra_steps(monkeypatch, *sqls: str) -> int:
    """Pretend the build ships ``sqls`` as further steps; returns the new latest revision."""
    real = REAL_STEPS()
    extra = [
        (len(real) + i + 1, f"{len(real) + i + 1:04d}_extra.sql", sql) for i, sql in enumerate(sqls)
    ]
    monkeypatch.setattr(catalog_module, "migration_steps", lambda: real + extra)
    return len(real) + len(extra)


def test_fresh_store_is_at_the_shipped_revision(stored: Path) -> None:
    assert _user_version(stored) == len(REAL_STEPS()) == catalog_module.schema_version()


@pytest.mark.parametrize("read_only", [False, True])
def test_newer_catalog_is_refused_in_both_modes(stored: Path, read_only: bool) -> None:
    latest = len(REAL_STEPS())
    _set_user_version(stored, latest + 1)
    before = _digest(stored)
    with pytest.raises(CatalogTooNewError) as info:
        Store.open(stored, read_only=read_only)
    assert f"revision {latest + 1}" in str(info.value)
    assert "upgrade infrastore-sqlite" in str(info.value)
    assert isinstance(info.value, IncompatibleFormatError)
    assert _digest(stored) == before  # nothing touched
    assert _user_version(stored) == latest + 1


def test_older_catalog_read_only_says_to_open_it_writable(stored: Path, monkeypatch) -> None:
    latest = _with_extra_steps(monkeypatch, "CREATE TABLE extra_one (x INTEGER);")
    before = _digest(stored)
    with pytest.raises(CatalogMigrationRequiredError) as info:
        Store.open(stored, read_only=True)
    message = str(info.value)
    assert f"revision {latest - 1}" in message and f"needs {latest}" in message
    assert "open the store once for writing (read_only=False)" in message
    assert _digest(stored) == before
    # the refused open released the files: a writable open works at once
    with Store.open(stored) as s:
        assert [m["name"] for m in s.list_metadata()] == ["a"]


def test_lowered_user_version_is_refused_read_only(stored: Path) -> None:
    _set_user_version(stored, 1)
    with pytest.raises(CatalogMigrationRequiredError, match="open the store once for writing"):
        Store.open(stored, read_only=True)


@pytest.mark.parametrize("read_only", [True, False])
def test_revision_zero_is_damage_not_a_catalog_to_make(stored: Path, read_only: bool) -> None:
    """Only Store.create makes a catalog (issue 33): a catalog at revision 0 is named as
    damage, for reading and for writing, and is left as it is."""
    from infrastore_sqlite.errors import CatalogDamagedError

    _set_user_version(stored, 0)
    before = (stored / "catalog.sqlite").read_bytes()
    with pytest.raises(CatalogDamagedError, match="schema revision 0") as err:
        Store.open(stored, read_only=read_only)
    assert "open the store once for writing" not in str(err.value)
    assert (stored / "catalog.sqlite").read_bytes() == before


def test_writable_open_migrates_in_place(stored: Path, monkeypatch) -> None:
    latest = _with_extra_steps(
        monkeypatch,
        "CREATE TABLE extra_one (x INTEGER);",
        "CREATE TABLE extra_two (y TEXT); INSERT INTO extra_two VALUES ('seeded');",
    )
    with Store.open(stored) as s:
        ts = s.read_by_id(1)
        np.testing.assert_array_equal(ts.data, [0.0, 1.0, 2.0])
        s.add_time_series(
            2, "Gen", OwnerCategory.Component, SingleTimeSeries(T0, "PT1H", np.arange(4.0), "b")
        )
    assert _user_version(stored) == latest
    assert {"extra_one", "extra_two"} <= _tables(stored)
    # the migrated catalog now opens read-only under this build ...
    with Store.open(stored, read_only=True) as s:
        assert len(s.list_metadata()) == 2
    # ... and is too new for the build without the extra steps
    monkeypatch.setattr(catalog_module, "migration_steps", REAL_STEPS)
    with pytest.raises(CatalogTooNewError):
        Store.open(stored, read_only=True)


def test_failed_migration_changes_nothing(stored: Path, monkeypatch) -> None:
    latest = len(REAL_STEPS())
    _with_extra_steps(monkeypatch, "CREATE TABLE extra_one (x INTEGER);", "THIS IS NOT SQL;")
    with pytest.raises(StorageError, match=rf"failed at step {latest + 2:04d}_extra.sql"):
        Store.open(stored)
    assert _user_version(stored) == latest  # all steps or none
    assert "extra_one" not in _tables(stored)
    monkeypatch.setattr(catalog_module, "migration_steps", REAL_STEPS)
    with Store.open(stored) as s:
        assert [m["name"] for m in s.list_metadata()] == ["a"]
