"""Mending a catalog ``PRAGMA integrity_check`` finds damaged, from its own tables.

:func:`mend_catalog` runs ``REINDEX`` in a write transaction, kept only if the catalog is
then sound; otherwise :func:`copy_catalog` copies every table's readable rows (``NOT
INDEXED`` scans, stepping past pages that do not read) into a fresh file and swaps it in
(the damaged file moved aside, never deleted). The copy is refused (:class:`BeyondIndexes`,
changing nothing) when any read of a table fails: rows would be lost without a trace of
which. ``repair.py`` then rebuilds the catalog from the segments' records instead.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import (
    CatalogDamagedError,
    IntegrityError,
    StorageError,
    TimeSeriesError,
    damage_terms,
)
from ..model import OwnerCategory, TimeSeriesType
from .arrays import fsync_path
from .catalog import Catalog
from .damage import catalog_check
from .segments import CATALOG_NAME, GENERATION_KEY
from .tracing import LOG

if TYPE_CHECKING:
    from .state import StoreState

#: The folder damaged segments are moved into: ``<store>/damaged-<UTC time>``. It is
#: beside ``segments/``, never in it, so no name in it can be taken for a segment.
ASIDE_PREFIX = "damaged-"


def aside_folder(root: Path) -> Path:
    """A new folder name for the segments this repair sets aside."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder = root / f"{ASIDE_PREFIX}{stamp}"
    n = 1
    while folder.exists():
        n += 1
        folder = root / f"{ASIDE_PREFIX}{stamp}-{n}"
    return folder


class BeyondIndexes(IntegrityError):
    """The catalog is damaged beyond its indexes and no copy of its tables mends it:
    :func:`.repair.repair` rebuilds it from the segments' records when they hold the store's
    history, and refuses otherwise."""


def catalog_beyond_repair(state: StoreState, what: str) -> None:
    """Refuse a catalog neither ``REINDEX`` nor a copy of its tables brings back,
    changing nothing (:func:`.repair.repair` then tries the segments' records)."""
    raise BeyondIndexes(
        f"the catalog {state.catalog.path} is damaged beyond what repair rebuilds ({what}); "
        "nothing was changed. Restore catalog.sqlite from a backup of this store, or export "
        "what still reads into a new store",
        key=state.catalog.path,
        terms=damage_terms(str(state.path)),
    )


def mend_catalog(state: StoreState, report: dict[str, Any]) -> Path | None:
    """Mend a catalog ``PRAGMA integrity_check`` finds damaged, before anything else.

    First ``REINDEX`` in a write transaction, kept only if the catalog is then sound.
    Otherwise the catalog is rebuilt into a fresh file from what every table still
    yields (:func:`copy_catalog`) and swapped in. Returns the folder the damaged
    catalog was moved into, if it was.
    """
    cat = state.catalog
    try:
        with cat.transaction():
            cat.execute("REINDEX")
            if catalog_check(state):
                raise _NotMended
        return None
    except (_NotMended, TimeSeriesError):
        pass
    return copy_catalog(state, report)


class _NotMended(Exception):
    """REINDEX did not make the catalog sound: roll it back."""


def copy_catalog(state: StoreState, report: dict[str, Any]) -> Path:
    """Rebuild the catalog into a fresh file from what every table still yields, then
    swap it in (rename; the damaged file moved aside, never deleted).

    The copy is made holding the write lock on the damaged catalog, so nothing changes
    under it; rows SQLite cannot read are skipped (each table is scanned again after
    the last row read, stepping over what fails). The fresh file is complete, closed and
    fsynced before the damaged one moves; a failure before the swap removes only the
    fresh file (this repair's own) and changes nothing.
    """
    root = state.path
    old = state.catalog
    work = root / f".catalog.rebuild-{os.getpid()}-{uuid.uuid4().hex[:12]}.sqlite"
    closed = False
    try:
        fresh = Catalog(work, create=True, timeout=old.timeout)
        try:
            # The write lock, only held (ended by a rollback: a commit on a damaged file
            # can fail where nothing was written).
            old.execute("BEGIN IMMEDIATE")
            try:
                known = _ids_in_indexes(old)
                copied, skipped = _copy_tables(old, fresh)
            finally:
                with contextlib.suppress(TimeSeriesError):
                    old.execute("ROLLBACK")
            kept = {r[0] for r in fresh.execute("SELECT id FROM time_series_associations")}
            generation = fresh.scalar(
                "SELECT value FROM store_attributes WHERE key = ?", (GENERATION_KEY,)
            )
        finally:
            fresh.close()
        if skipped:
            # A row no page yields is a series lost without a trace of which: refused,
            # rather than a repair that loses series it cannot name.
            catalog_beyond_repair(
                state,
                f"{skipped} reads of its tables fail, so some rows are lost and which "
                "cannot be told",
            )
        if not generation:
            catalog_beyond_repair(
                state, "its store attributes (the generation its segments carry) do not read"
            )
        fsync_path(work)
        closed = True
        old.close()  # the last connection of this process: SQLite checkpoints its log
        folder = aside_folder(root)
        folder.mkdir()
        for suffix in ("", "-wal", "-shm"):
            src = Path(old.path + suffix)
            if src.exists():
                os.rename(src, folder / src.name)
        os.rename(work, old.path)
        fsync_path(folder)
        fsync_path(root)
    except BaseException:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(work) + suffix).unlink(missing_ok=True)
        if closed and Path(old.path).exists():  # not swapped: the store opens it again
            state.catalog = Catalog(old.path, timeout=old.timeout)
        raise
    state.catalog = Catalog(old.path, timeout=old.timeout)
    LOG.warning(
        "rebuilt the catalog %s: %d rows copied, %d unreadable skipped; the damaged one is in %s",
        old.path,
        copied,
        skipped,
        folder,
    )
    report.update(
        {
            "from": "tables",
            "rows_copied": copied,
            "rows_skipped": skipped,
            "old": str(folder / CATALOG_NAME),
        }
    )
    # Series whose rows the indexes still name but no table page yields: lost with the
    # damaged pages, listed like every series repair loses.
    report["lost"] = [
        {
            "id": int(sid),
            "owner_id": int(owner) if isinstance(owner, int) else 0,
            "owner_type": "",
            "owner_category": _category_name(category),
            "type": _type_name(code),
            "name": name if isinstance(name, str) else "",
        }
        for sid, (owner, category, code, name) in sorted(known.items())
        if sid not in kept
    ]
    return folder


def _ids_in_indexes(old: Catalog) -> dict[int, tuple]:
    """``id -> (owner_id, owner_category, type code, name)`` of every series the identity
    index still names (read from the index alone: it covers those columns), as far as
    it reads."""
    out: dict[int, tuple] = {}
    with contextlib.suppress(TimeSeriesError, UnicodeDecodeError):
        for sid, *rest in old.execute(
            "SELECT id, owner_id, owner_category, time_series_type, name "
            "FROM time_series_associations INDEXED BY ts_identity"
        ):
            out[int(sid)] = tuple(rest)
    return out


def _category_name(code: Any) -> str:
    try:
        return OwnerCategory(int(code)).name
    except (TypeError, ValueError):
        return ""


def _type_name(code: Any) -> str:
    try:
        return TimeSeriesType.from_catalog_code(code).name
    except (TimeSeriesError, KeyError, TypeError, ValueError):
        return ""


def _copy_tables(old: Catalog, fresh: Catalog) -> tuple[int, int]:
    """Every row of every table of ``fresh``'s schema that ``old`` still yields, copied
    into ``fresh``; returns ``(rows copied, reads that failed)``."""
    copied = failed = 0
    tables = [
        r[0]
        for r in fresh.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    with fresh.transaction():
        for table in tables:
            info = fresh.execute(f"PRAGMA table_info({table})").fetchall()
            cols = [r[1] for r in info]
            text = {r[1] for r in info if str(r[2]).upper() == "TEXT"}
            rowid = not fresh.scalar(
                "SELECT 1 FROM sqlite_master WHERE name = ? AND sql LIKE '%WITHOUT ROWID%'",
                (table,),
            )
            key = ["rowid"] if rowid else [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
            # Text read as bytes and written back as text: a cell that is not UTF-8 is
            # kept as it is (diagnose names its row), not a reason to lose the row.
            picked = [f"CAST({c} AS BLOB)" if c in text else c for c in cols]
            insert = (
                f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) VALUES "
                f"({', '.join('CAST(? AS TEXT)' if c in text else '?' for c in cols)})"
            )
            n, bad = _copy_rows(old, fresh, table, key, picked, insert)
            copied += n
            failed += bad
        with contextlib.suppress(TimeSeriesError):
            for name, seq in old.execute("SELECT name, seq FROM sqlite_sequence").fetchall():
                fresh.execute("DELETE FROM sqlite_sequence WHERE name = ?", (name,))
                fresh.execute(
                    "INSERT INTO sqlite_sequence (name, seq) SELECT ?, max(?, "
                    f"COALESCE((SELECT max(rowid) FROM {_table_of(tables, name)}), 0))",
                    (name, seq),
                )
    return copied, failed


def _table_of(tables: list[str], name: Any) -> str:
    """``name`` if it is one of ``tables`` (an identifier safe to put in SQL)."""
    if name not in tables:
        raise StorageError(f"the catalog's sqlite_sequence names no table of it ({name!r})")
    return str(name)


def _copy_rows(
    old: Catalog, fresh: Catalog, table: str, key: list[str], picked: list[str], insert: str
) -> tuple[int, int]:
    """One table's readable rows, in key order; after a read that fails, again from past
    the last key read (a rowid table also stepping ahead past a damaged page)."""
    cols = ", ".join([*key, *picked])
    order = ", ".join(key)
    by_rowid = key == ["rowid"]
    last: tuple | None = None
    copied = failed = 0
    jump = 1
    while True:
        if last is None:
            sql, params = f"SELECT {cols} FROM {table} NOT INDEXED ORDER BY {order}", ()
        elif by_rowid:
            sql = f"SELECT {cols} FROM {table} NOT INDEXED WHERE rowid > ? ORDER BY rowid"
            params = (last[0] + jump - 1,)
        else:
            marks = ", ".join("?" * len(key))
            sql = f"SELECT {cols} FROM {table} WHERE ({order}) > ({marks}) ORDER BY {order}"
            params = last
        got = 0
        try:
            for row in old.execute(sql, params):
                fresh.execute(insert, row[len(key) :])
                last = tuple(row[: len(key)])
                got += 1
            return copied + got, failed
        except CatalogDamagedError:
            copied += got
            failed += 1
        if not by_rowid:
            if not got:  # no way past a damaged page of a table keyed by its content
                return copied, failed
            continue
        if last is None:
            last = (0,)
        # Past a damaged page: step over rowids, twice as far each time nothing reads.
        jump = 1 if got else jump * 2
        if jump > 2**40:
            return copied, failed
