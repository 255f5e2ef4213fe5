"""The catalog: an SQLite database (through apsw) inside the store directory.

It owns the connection, the schema migrations shipped in ``migrations/``, and nested
transactions. Every apsw error that escapes it is wrapped as :class:`StorageError`.

The catalog runs in WAL mode with ``synchronous=FULL``: a commit is durable when it
returns (the store's one visibility point must survive power loss, and FULL costs one
extra fsync of the WAL per commit), and readers keep reading the last committed state
while a writer works. The outermost transaction is ``BEGIN IMMEDIATE``, so a writer
holds the write lock from its first statement: a second writer waits up to ``timeout``
seconds and then gets :class:`StoreBusyError` instead of failing halfway.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import urllib.parse
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import apsw

from ..errors import (
    READ_ONLY_OPEN,
    CatalogDamagedError,
    CatalogMigrationRequiredError,
    CatalogTooNewError,
    StorageError,
    StoreBusyError,
    Term,
    damage_terms,
    rebuild_terms,
)
from .arrays import describe_os_error
from .rowcheck import SQL_FUNCTION, sql_row_check

# What is wrong with a catalog that cannot be read as one (CatalogDamagedError.problem).
EMPTY = "empty"
NO_HEADER = "no header"
NO_TABLES = "no tables"
UNREADABLE = "unreadable"
JOURNAL = "journal"
# The tables every catalog since the first migration holds.
_TABLES = ("time_series_associations", "feature_maps", "feature_sets", "arrays", "store_attributes")

_STEP = re.compile(r"^(\d{4})_[A-Za-z0-9_]+\.sql$")
# The page cache, in KiB: every connection starts with _CACHE_KIB; a writer's grows with
# the catalog up to _WRITE_CACHE_KIB (see Catalog._size_cache).
_CACHE_KIB = 8000
# A read-only catalog's: its readers (exports, reads by id) walk ids in order or look a
# few up, so pages are seldom read twice; at 300 k series 8 MB filled and held ~6 MB
# more than 2 MB did through an export (issue 37), at no measurable CPU.
_READ_CACHE_KIB = 2048
_WRITE_CACHE_KIB = 32 * 1024


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
    timeout
        Seconds a writer waits for another process's write to finish (and a reader for
        the rare moments WAL recovery needs the file alone) before :class:`StoreBusyError`.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        read_only: bool = False,
        create: bool = False,
        timeout: float = 5.0,
    ) -> None:
        self.path = str(path)
        self.read_only = read_only
        self.timeout = float(timeout)
        #: The schema revision this open found and migrated from (None: it was current).
        self.migrated_from: int | None = None
        flags = apsw.SQLITE_OPEN_READONLY if read_only else apsw.SQLITE_OPEN_READWRITE
        if create:
            flags |= apsw.SQLITE_OPEN_CREATE
        else:
            self._check_header()
        try:
            self.conn = apsw.Connection(self.path, flags=flags)
            self.conn.setbusytimeout(max(0, int(self.timeout * 1000)))
            if read_only:
                try:
                    # The first read opens the WAL's shared memory: fails here, or never.
                    self.conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
                except apsw.CantOpenError:
                    if not self._on_read_only_media():
                        try:
                            self._refuse_pending_log()
                        except StorageError:
                            self.close()
                            raise
                        raise
                    self.conn.close()
                    self.conn = self._open_immutable(flags)
            if not create:
                self._check_tables()  # before the first pragma that could write
            if not read_only:
                # One pragma per call: apsw stops a multi-statement string at the first
                # statement that returns a row (journal_mode does).
                self.conn.execute("PRAGMA journal_mode=WAL").fetchall()
                self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA foreign_keys=OFF")
            self._cache_kib = _READ_CACHE_KIB if read_only else _CACHE_KIB
            self.conn.execute(f"PRAGMA cache_size=-{self._cache_kib}")
            # The rows' checksum as SQL: the schema step that adds the column fills it.
            self.conn.create_scalar_function(
                SQL_FUNCTION, sql_row_check, numargs=-1, deterministic=True
            )
        except apsw.BusyError as exc:
            self.close()
            raise self._busy() from exc
        except CatalogDamagedError:
            self.close()
            raise
        except apsw.Error as exc:
            # Described before the close: the OS error behind it lives on the connection.
            what = self._describe(exc)
            self.close()
            folder = os.path.dirname(self.path) or "."
            if (
                not read_only
                and isinstance(exc, apsw.CantOpenError | apsw.ReadOnlyError)
                and os.path.isfile(self.path)
                and not os.access(folder, os.W_OK)
            ):
                raise StorageError(
                    f"cannot write to the store: {folder} is on read-only media or not "
                    "writable by you, and a write needs to create files there; to read it "
                    "as it is, use {read_only}",
                    terms={"read_only": READ_ONLY_OPEN},
                ) from exc
            if isinstance(exc, apsw.NotADBError | apsw.CorruptError) and not create:
                raise self.damaged(UNREADABLE, f"cannot be read ({what})") from exc
            hint = (
                "is it a store's catalog?"
                if isinstance(exc, apsw.NotADBError | apsw.CorruptError)
                else None
            )
            raise StorageError(f"cannot open the catalog {self.path}: {what}", hint=hint) from exc
        self._depth = 0
        self._counter = 0
        try:
            self._migrate()
        except BaseException:
            self.close()  # a refused open must not leave the file held
            raise

    def damaged(self, problem: str, what: str) -> CatalogDamagedError:
        """The refusal of a catalog that cannot be read as one (see ``CatalogDamagedError``)."""
        store = os.path.dirname(self.path) or "."
        return CatalogDamagedError(
            f"the catalog {self.path} {what}, so the store cannot be read; nothing was "
            "changed. Run {rebuild} to rebuild it from the records its segments keep (the "
            "damaged file is moved aside, never deleted), or restore catalog.sqlite from a "
            "backup of this store directory; only creating a store makes a new catalog",
            problem=problem,
            key=self.path,
            terms=rebuild_terms(store),
        )

    def _check_header(self) -> None:
        """Refuse a catalog file that is empty or has no SQLite header, before SQLite
        opens it: SQLite takes an empty file for a new database, which a writable open
        would then fill with an empty catalog (and the store would seem to hold nothing)."""
        try:
            with open(self.path, "rb") as f:
                head = f.read(100)
        except FileNotFoundError:
            return  # SQLite's own refusal names it
        except OSError as exc:
            raise StorageError(
                f"cannot read the catalog {self.path}: {describe_os_error(exc)}"
            ) from exc
        if not head:
            raise self.damaged(EMPTY, "is empty (0 bytes)")
        journal = self.path + "-journal"
        with contextlib.suppress(OSError):
            size = os.path.getsize(journal)
            if size:
                store = os.path.dirname(self.path) or "."
                raise CatalogDamagedError(
                    f"the catalog {self.path} has a rollback journal beside it ({journal}, "
                    f"{size} bytes) that no writer of a store leaves (its catalog keeps a "
                    "WAL log); reading through it could put its bytes into the catalog, so "
                    "the store is not opened and nothing was changed. Run {repair} to set "
                    "the journal aside (moved, not deleted), then {verify}",
                    problem=JOURNAL,
                    key=journal,
                    terms=_journal_terms(store),
                )
        if len(head) < 100 or not head.startswith(b"SQLite format 3\0"):
            raise self.damaged(NO_HEADER, "has no SQLite header (it is not a database file)")

    def _check_tables(self) -> None:
        """Refuse a catalog without the store's tables: a database no ``create`` made.

        Revision 0 is what SQLite says of a file no migration ever ran on; only
        ``Store.create`` runs the first one.
        """
        try:
            version = self.conn.execute("PRAGMA user_version").fetchall()[0][0]
            tables = {
                r[0]
                for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            raise self.damaged(UNREADABLE, f"cannot be read ({_one_line(exc)})") from exc
        if not tables:
            raise self.damaged(NO_TABLES, "holds none of a store's tables")
        if not version:
            raise self.damaged(
                NO_TABLES,
                "reads as schema revision 0, a file no store made (its header is damaged)",
            )
        missing = sorted(set(_TABLES) - tables)
        if missing:
            raise self.damaged(NO_TABLES, f"lacks the tables {', '.join(missing)}")

    def _on_read_only_media(self) -> bool:
        """Whether a read-only open failed only because SQLite cannot create the WAL's
        ``-shm`` file beside the catalog (read-only media, a directory without write
        permission) while no ``-wal`` file holds commits the catalog file lacks."""
        folder = os.path.dirname(self.path) or "."
        return (
            self.read_only
            and os.path.isfile(self.path)
            and not os.access(folder, os.W_OK)
            and not os.path.exists(self.path + "-wal")
        )

    def _refuse_pending_log(self) -> None:
        """A read-only open that failed on a directory it cannot write to, beside a
        ``-wal`` file that may hold commits: say what to do instead."""
        folder = os.path.dirname(self.path) or "."
        log = self.path + "-wal"
        if (
            os.path.exists(log)
            and not os.path.exists(self.path + "-shm")
            and not os.access(folder, os.W_OK)
        ):
            raise StorageError(
                f"cannot read the store: its catalog's log {log} may hold commits not "
                f"yet in the catalog, and reading it needs files created in {folder}, "
                "which is read-only here; open the store once where it can be written "
                "(a copy will do), then it reads anywhere"
            )

    def _open_immutable(self, flags: int) -> apsw.Connection:
        # Nothing can write where we cannot create a file, and no log is pending: the
        # catalog file is the last committed state, read without the WAL's shared memory.
        uri = "file:" + urllib.parse.quote(self.path) + "?immutable=1"
        return apsw.Connection(uri, flags=flags | apsw.SQLITE_OPEN_URI)

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
        # A read-only open of an older catalog is refused, not read through views: step
        # 0004 renumbers every array and series reference, which no view of the old
        # tables gives without a scan per row; one writable open migrates it in place.
        if self.read_only:
            store = os.path.dirname(self.path) or "."
            raise CatalogMigrationRequiredError(
                f"the catalog {self.path} is at schema revision {current} and this build needs "
                f"{latest}; {{upgrade}} to upgrade it in place (one transaction: a failure "
                "or a kill leaves it as it is); nothing was changed",
                terms={"upgrade": upgrade_term(store)},
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
        self.migrated_from = current

    def _describe(self, exc: BaseException) -> str:
        """An apsw error as one line, with the OS error behind it when there is one
        (SQLite reports a full disk and a hit file-size limit alike as an I/O error)."""
        code = 0
        with contextlib.suppress(Exception):
            code = int(self.conn.system_errno or 0)
        text = _one_line(exc)
        if code and isinstance(exc, apsw.IOError | apsw.FullError | apsw.CantOpenError):
            return f"{text}: {describe_os_error(OSError(code, os.strerror(code)))}"
        return text

    def _busy(self) -> StoreBusyError:
        return StoreBusyError(
            f"the store is being written by another process (waited {self.timeout:g} s for "
            f"{self.path}); try again when it finishes, or wait longer (timeout=SECONDS, "
            "CLI --timeout SECONDS)"
        )

    # -- queries -----------------------------------------------------------------------
    def execute(self, sql: str, params: Any = None) -> Rows:
        """Run ``sql``; its rows, whose reading refuses catalog damage cleanly (:class:`Rows`)."""
        try:
            return Rows(self, self.conn.execute(sql, params))
        except apsw.ConstraintError:
            raise
        except apsw.Error as exc:
            raise self.failed(exc) from exc

    def executemany(self, sql: str, rows: Any) -> None:
        try:
            self.conn.executemany(sql, rows)
        except apsw.ConstraintError:
            raise
        except apsw.Error as exc:
            raise self.failed(exc) from exc

    def failed(self, exc: apsw.Error) -> StorageError | CatalogDamagedError:
        """A failed catalog statement as the package's error: a damaged catalog (SQLite
        found a page it cannot read) is :class:`CatalogDamagedError` naming the file and
        what to run; a busy one :class:`StoreBusyError`; the rest ``StorageError``."""
        if isinstance(exc, apsw.BusyError):
            return self._busy()
        if isinstance(exc, apsw.CorruptError | apsw.NotADBError):
            store = os.path.dirname(self.path) or "."
            return CatalogDamagedError(
                f"the catalog {self.path} is damaged: SQLite cannot read some of its rows "
                f"({_one_line(exc)}); run {{verify}} to list what is damaged, then {{repair}}",
                problem=UNREADABLE,
                key=self.path,
                terms=damage_terms(store),
            )
        return StorageError(f"catalog query failed: {self._describe(exc)}")

    def scalar(self, sql: str, params: Any = None) -> Any:
        row = self.execute(sql, params).fetchone()
        return None if row is None else row[0]

    # -- transactions ------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All or nothing; the outermost block holds the write lock, inner ones nest as
        savepoints."""
        if self._depth == 0:
            with self._write_transaction():
                yield
            return
        self._counter += 1
        name = f"sp{self._counter}"
        self.conn.execute(f"SAVEPOINT {name}")
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            # A savepoint SQLite already dropped (a failed statement after disk full can
            # end the whole transaction) must not hide the error that got us here.
            with contextlib.suppress(apsw.Error):
                self.conn.execute(f"ROLLBACK TO {name}; RELEASE {name}")
            raise
        else:
            self._depth -= 1
            try:
                self.conn.execute(f"RELEASE {name}")
            except apsw.Error as exc:
                raise StorageError(f"catalog commit failed: {exc}") from exc

    @contextlib.contextmanager
    def _write_transaction(self) -> Iterator[None]:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except apsw.BusyError as exc:
            raise self._busy() from exc
        except apsw.Error as exc:
            raise StorageError(
                f"cannot start a write on {self.path}: {self._describe(exc)}"
            ) from exc
        self._depth = 1
        try:
            self._size_cache()
            yield
        except BaseException:
            self._depth = 0
            self._rollback()
            raise
        self._depth = 0
        try:
            self.conn.execute("COMMIT")
        except apsw.Error as exc:
            self._rollback()
            raise StorageError(
                f"the catalog commit to {self.path} failed: {self._describe(exc)}; nothing was changed"
            ) from exc

    def grow_cache(self) -> None:
        """Grow the page cache to the catalog's size now, within the same bound as at
        the start of a write (:meth:`_size_cache`): a bulk add that makes a small
        catalog large in one transaction asks between its parts."""
        self._size_cache()

    def _size_cache(self) -> None:
        """Grow the page cache with the catalog, up to ``_WRITE_CACHE_KIB``.

        A bulk add inserts rows keyed by content hashes (``arrays``, ``ts_data_hash``):
        they land all over those B-trees, so once the trees outgrow the cache every
        insert reads pages back from the file, and the cost per series grew with the
        store (issue 26: a 300,000-series store built in 20,000-series adds took 39 µs
        of CPU per series with 8 MB of cache, 35 µs with 32 MB, no less with 64 MB).
        Readers keep the small cache; a writer's never shrinks while it is open (each
        write would otherwise read its pages back) and is bounded, so memory does not
        grow with the store past it.
        """
        if self._cache_kib >= _WRITE_CACHE_KIB:
            return
        # Only a speed-up: a pragma that fails must not fail the write.
        with contextlib.suppress(apsw.Error):
            pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
            page_size = self.conn.execute("PRAGMA page_size").fetchone()[0]
            want = min(_WRITE_CACHE_KIB, pages * page_size // 1024)
            if want > self._cache_kib:
                self.conn.execute(f"PRAGMA cache_size=-{int(want)}")
                self._cache_kib = want

    def _rollback(self) -> None:
        # After a failed COMMIT (disk full, I/O error) SQLite may already have ended the
        # transaction; either way the catalog is back at its last committed state.
        with contextlib.suppress(apsw.Error):
            if not self.conn.getautocommit():
                self.conn.execute("ROLLBACK")

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @property
    def depth(self) -> int:
        """How many transactions are open (nested ones included)."""
        return self._depth

    def close(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            with contextlib.suppress(apsw.Error):
                conn.close()


def upgrade_term(store: str) -> Term:
    """How to migrate the older store at ``store`` to this build's schema: any writable
    open does (``upgrade`` on the command line)."""
    return Term(
        f"run `infrastore-sqlite --store {shlex.quote(store)} upgrade` (or any command that "
        "writes to the store)",
        "open the store once for writing (read_only=False)",
    )


def _journal_terms(store: str) -> dict[str, Term]:
    """``damage_terms`` for a store that does not open: ``Store.repair`` cannot be
    reached from Python, so the API spelling names ``Store.repair_catalog(path)``, which
    repairs a store by its directory (the command line's ``repair`` does the same)."""
    terms = damage_terms(store)
    terms["repair"] = rebuild_terms(store)["rebuild"]
    return terms


class Rows:
    """The rows of one catalog statement (an ``apsw.Cursor``), read so that an error
    SQLite raises while stepping them (a damaged page met halfway) is the package's
    error (:meth:`Catalog.failed`), never a raw apsw one."""

    __slots__ = ("_catalog", "_cursor")

    def __init__(self, catalog: Catalog, cursor: apsw.Cursor) -> None:
        self._catalog = catalog
        self._cursor = cursor

    def __iter__(self) -> Iterator[Any]:
        try:
            yield from self._cursor
        except apsw.ConstraintError:
            raise
        except apsw.Error as exc:
            raise self._catalog.failed(exc) from exc

    def fetchall(self) -> list[Any]:
        try:
            return self._cursor.fetchall()
        except apsw.ConstraintError:
            raise
        except apsw.Error as exc:
            raise self._catalog.failed(exc) from exc

    def fetchone(self) -> Any:
        try:
            return self._cursor.fetchone()
        except apsw.ConstraintError:
            raise
        except apsw.Error as exc:
            raise self._catalog.failed(exc) from exc

    @property
    def get(self) -> Any:
        try:
            return self._cursor.get
        except apsw.ConstraintError:
            raise
        except apsw.Error as exc:
            raise self._catalog.failed(exc) from exc

    @property
    def description(self) -> Any:
        return self._cursor.description


def _one_line(exc: BaseException) -> str:
    """An apsw error as one line (its class says what SQLite reported: full, I/O, ...)."""
    text = " ".join(str(exc).split())
    kind = {
        apsw.FullError: "the disk is full",
        apsw.IOError: "an I/O error",
        apsw.CorruptError: "the file is damaged",
        apsw.NotADBError: "not a database",
    }
    for cls, label in kind.items():
        if isinstance(exc, cls):
            return f"{label} ({text})"
    return text
