"""The catalog: an SQLite database (through apsw) beside the HDF5 file.

It owns the connection, the schema migrations shipped in ``migrations/``, and nested
transactions. Every apsw error that escapes it is wrapped as :class:`StorageError`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import apsw

from ..errors import (
    CatalogMigrationRequiredError,
    CatalogTooNewError,
    StorageError,
)

_STEP = re.compile(r"^(\d{4})_[A-Za-z0-9_]+\.sql$")


def _migrations_root() -> Any:
    """The migrations shipped in the wheel, or the repository's own in a source checkout."""
    shipped = resources.files("infrastore_sqlite") / "_migrations"
    if shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "migrations"


def migration_steps() -> list[tuple[int, str, str]]:
    """The numbered schema steps as ``(number, file name, sql)``, in order."""
    root = _migrations_root()
    steps = []
    for entry in root.iterdir():
        m = _STEP.match(entry.name)
        if m:
            steps.append((int(m.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    steps.sort()
    numbers = [s[0] for s in steps]
    if numbers != list(range(1, len(steps) + 1)):
        raise StorageError(f"the shipped migrations are not numbered 1..N: {numbers}")
    return steps


def schema_version() -> int:
    """The catalog revision this build writes."""
    return len(migration_steps())


class Catalog:
    """One apsw connection with savepoint-based nested transactions.

    Parameters
    ----------
    path
        The catalog file.
    read_only
        Open without write access; migrations are then refused rather than applied.
    create
        Create a new catalog (the file must not exist).
    """

    def __init__(self, path: str | Path, *, read_only: bool = False, create: bool = False) -> None:
        self.path = str(path)
        self.read_only = read_only
        flags = apsw.SQLITE_OPEN_READONLY if read_only else apsw.SQLITE_OPEN_READWRITE
        if create:
            flags |= apsw.SQLITE_OPEN_CREATE
        try:
            self.conn = apsw.Connection(self.path, flags=flags)
            self.conn.setbusytimeout(5000)
            if not read_only:
                # One pragma per call: apsw stops a multi-statement string at the first
                # statement that returns a row (journal_mode does).
                self.conn.execute("PRAGMA journal_mode=DELETE").fetchall()
                self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=OFF")
            self.conn.execute("PRAGMA cache_size=-8000")
        except apsw.Error as exc:
            raise StorageError(
                f"cannot open the catalog {self.path}: {exc}", hint="is it a store's .sqlite file?"
            ) from exc
        self._depth = 0
        self._counter = 0
        try:
            self._migrate()
        except BaseException:
            self.close()  # a refused open must not leave the file held
            raise

    # -- schema ------------------------------------------------------------------------
    def _migrate(self) -> None:
        current = self.scalar("PRAGMA user_version")
        steps = migration_steps()
        latest = len(steps)
        if current > latest:
            raise CatalogTooNewError(
                f"the catalog {self.path} is at schema revision {current}, newer than this "
                f"build's {latest}; upgrade infrastore-sqlite to open it"
            )
        if current == latest:
            return
        if self.read_only:
            raise CatalogMigrationRequiredError(
                f"the catalog {self.path} is at schema revision {current} and this build needs "
                f"{latest}; open the store once for writing (read_only=False) to upgrade it in place"
            )
        with self.transaction():
            for number, name, sql in steps[current:]:
                try:
                    self.conn.execute(sql)
                except apsw.Error as exc:
                    raise StorageError(
                        f"migrating the catalog {self.path} failed at step {name}: {exc}; "
                        f"nothing was changed (it stays at revision {current})"
                    ) from exc
                self.conn.execute(f"PRAGMA user_version={int(number)}")

    # -- queries -----------------------------------------------------------------------
    def execute(self, sql: str, params: Any = None) -> apsw.Cursor:
        try:
            return self.conn.execute(sql, params)
        except apsw.ConstraintError:
            raise
        except apsw.Error as exc:
            raise StorageError(f"catalog query failed: {exc}") from exc

    def executemany(self, sql: str, rows: Any) -> None:
        try:
            self.conn.executemany(sql, rows)
        except apsw.ConstraintError:
            raise
        except apsw.Error as exc:
            raise StorageError(f"catalog query failed: {exc}") from exc

    def scalar(self, sql: str, params: Any = None) -> Any:
        row = self.execute(sql, params).fetchone()
        return None if row is None else row[0]

    # -- transactions ------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All or nothing; nests through savepoints."""
        self._counter += 1
        name = f"sp{self._counter}"
        self.conn.execute(f"SAVEPOINT {name}")
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            self.conn.execute(f"ROLLBACK TO {name}; RELEASE {name}")
            raise
        else:
            self._depth -= 1
            try:
                self.conn.execute(f"RELEASE {name}")
            except apsw.Error as exc:
                raise StorageError(f"catalog commit failed: {exc}") from exc

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @property
    def depth(self) -> int:
        """How many transactions are open (nested ones included)."""
        return self._depth

    def close(self) -> None:
        with contextlib.suppress(apsw.Error):
            self.conn.close()
