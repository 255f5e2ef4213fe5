"""Repairing a damaged store: damaged segments set aside, what still reads salvaged.

:func:`repair` is ``Store.repair``. It is one write transaction under the store's write
lock, like every other write (``transactions.py``):

1. :func:`~.damage.diagnose` the store, holding the lock, so nothing changes under it;
2. every array of a damaged segment that still reads and re-hashes to its key is copied
   into the transaction's new segment and its catalog row pointed there;
3. the catalog rows of the series whose arrays are lost are removed (with the arrays and
   feature rows only they used), and the damaged segments' rows deleted;
4. after the commit, the damaged files, and every file in ``segments/`` the catalog does
   not name and no pending marker claims, are moved into ``<store>/damaged-<UTC time>/``
   (never deleted). Nothing on disk changes before the commit but the transaction's own
   segment (marked pending, deleted on a rollback), so a refusal changes nothing, not
   even a folder. A kill after the commit leaves the files unnamed in ``segments/``,
   where the next writer or repair sets them aside in turn.

Lost series are removed, not kept marked lost: a marked row would need every reader,
the export and ``list`` to know of the mark, and the restore path is an ordinary
``add --replace`` of a file that holds them, which puts them back under new ids either
way. The report lists every one (id, owner, type, name), so nothing is lost silently.

A damaged catalog (``PRAGMA integrity_check`` fails) is rebuilt in place when only its
indexes are damaged (``REINDEX``); otherwise repair refuses and says what to do.

May import: :mod:`infrastore_sqlite.errors`, and its siblings ``damage``, ``segments``,
``arrays``, ``tracing`` (the ``Store`` only for type checking).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import (
    CatalogDamagedError,
    IntegrityError,
    StorageError,
    TimeSeriesError,
    damage_terms,
)
from ..model import OwnerCategory, TimeSeriesType
from .arrays import describe_os_error, fsync_path
from .catalog import JOURNAL, Catalog
from .damage import ArraysDamaged, Diagnosis, arrays_in, catalog_check, diagnose, read_group
from .segments import CATALOG_NAME, GENERATION_KEY, PENDING_SUFFIX
from .tracing import LOG

if TYPE_CHECKING:
    from .store import Store

#: The folder damaged segments are moved into: ``<store>/damaged-<UTC time>``. It is
#: beside ``segments/``, never in it, so no name in it can be taken for a segment.
ASIDE_PREFIX = "damaged-"
# Arrays copied per read/write step while salvaging.
_STEP = 1024


def aside_folder(root: Path) -> Path:
    """A new folder name for the segments this repair sets aside."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder = root / f"{ASIDE_PREFIX}{stamp}"
    n = 1
    while folder.exists():
        n += 1
        folder = root / f"{ASIDE_PREFIX}{stamp}-{n}"
    return folder


def restore_hint(store: str, audience: str = "api") -> str:
    """How to put lost series back from an export that holds them, for the Python API
    (``audience="api"``) or the command line (``"cli"``)."""
    if audience == "cli":
        quoted = shlex.quote(store)
        return (
            "to restore the lost series, add them back from an export that holds them: "
            f"`infrastore-sqlite --store {quoted} add --sqlite FILE --replace` (or "
            "`add --parquet DIR --replace`)"
        )
    return (
        "to restore the lost series, add them back from an export that holds them: "
        'Store.import_sqlite(FILE, on_conflict="replace") (or Store.import_parquet(DIR, '
        'on_conflict="replace"))'
    )


def repair(store: Store, *, dry_run: bool = False) -> dict[str, Any]:
    """``Store.repair``: see the module docstring. Returns the report (what was set aside,
    kept and lost, and how to restore the lost series)."""
    if dry_run:
        store._open()
        return _report(store, diagnose(store), None, dry_run=True)
    store._writable()
    if store._catalog.in_transaction:
        raise StorageError("repair() cannot run inside a transaction; commit or roll back first")
    segs = store._segments
    # Everything is decided inside the transaction, under the write lock, and nothing on
    # disk changes before its commit but its own new segment (marked pending, deleted on
    # a rollback): a refusal changes nothing. The files set aside move after the commit;
    # a kill before they move leaves them unnamed in segments/, where the next writer or
    # repair sets them aside in turn.
    salvaged = 0
    rebuilt: dict[str, Any] = {}
    mended = catalog_check(store)
    if mended:
        _repair_catalog(store, rebuilt)
    with store._transactions.block(sweep=False):
        found = diagnose(store)
        if not found.catalog["ok"]:
            _catalog_beyond_repair(store, found.catalog["errors"][0])
        if not found.ok:
            _list_again(store, found.unlisted)
            salvaged = _salvage(store, found)
            _drop_lost(store, found)
        # The transaction's segment is sealed and named by the commit that ends the block.
    # Pending files listed under the lock belong to writes that did not commit.
    _drop_pending(store, found.pending)
    names = [*found.damaged_segments, *(Path(u).name for u in found.unnamed), *found.sealed]
    # Whatever the rest of the store, what the catalog no longer names is set aside.
    present = [n for n in names if os.path.lexists(segs.path(n))]
    folder = aside_folder(store.path) if present else None
    if folder is not None:
        segs.set_aside(present, folder)
    LOG.info("repaired the store %s: %d arrays salvaged", store.path, salvaged)
    out = _report(store, found, folder, dry_run=False)
    if rebuilt.get("lost"):
        out["series_lost"] = rebuilt.pop("lost") + out["series_lost"]
        out["restore"] = restore_hint(str(store.path))
    rebuilt.pop("lost", None)
    out["ok_before"] = out["ok_before"] and not mended and not found.sealed
    out["catalog_errors"] = mended + out["catalog_errors"]
    out["arrays_salvaged"] = salvaged
    out["catalog_rebuilt"] = rebuilt or None
    return out


def _list_again(store: Store, names: list[str]) -> None:
    """Give back their ``segments`` rows to segments the catalog's arrays are placed in
    but its segments table does not list (diagnose found them there, this store's and
    sound): a damaged name in a row must not cost the series in them."""
    cat = store._catalog
    for name in names:
        pools = sorted(
            r[0]
            for r in cat.execute(
                "SELECT DISTINCT pool FROM arrays WHERE segment = ? AND pool != ''", (name,)
            )
        )
        slots = cat.scalar(
            "SELECT COALESCE(sum(n), 0) FROM (SELECT max(slot) + 1 AS n FROM arrays "
            "WHERE segment = ? AND pool != '' GROUP BY pool)",
            (name,),
        )
        cat.execute(
            "INSERT OR REPLACE INTO segments (name, bytes, slots, pools) VALUES (?, ?, ?, ?)",
            (
                name,
                os.path.getsize(store._segments.path(name)),
                int(slots),
                orjson.dumps(pools).decode(),
            ),
        )


def _drop_pending(store: Store, names: list[str]) -> None:
    """Delete pending files the catalog, read under the write lock, showed uncommitted."""
    for name in names:
        for path in (store._segments.path(name), store._segments.path(name + PENDING_SUFFIX)):
            with contextlib.suppress(OSError):
                path.unlink()


def unopenable(root: Path, exc: CatalogDamagedError, *, dry_run: bool) -> dict[str, Any]:
    """Where repair meets a catalog that cannot be opened (``Store.open`` refused it).

    A rollback journal beside it is set aside (moved into a ``damaged-…`` folder, not
    deleted; with ``dry_run`` only reported): the report returned then has ``reopen``
    true, and the caller opens the store again and repairs the rest. An empty,
    headerless, table-less or unreadable catalog could only be brought back by
    rebuilding it from the segments, which this build does not do: ``exc`` is raised
    again here, having changed nothing. This is the one place such a rebuild plugs in.
    """
    if exc.problem != JOURNAL:
        raise exc
    journal = Path(str(exc.key))
    folder = None if dry_run else aside_folder(root)
    if folder is not None:
        try:
            folder.mkdir()
            os.rename(journal, folder / journal.name)
            fsync_path(folder)
            fsync_path(root)
        except OSError as err:
            raise StorageError(
                f"cannot set the journal {journal} aside in {folder}: {describe_os_error(err)}"
            ) from err
        LOG.warning("set the catalog's stray journal %s aside in %s", journal, folder)
    return {
        "dry_run": dry_run,
        "ok_before": False,
        "set_aside": [str(journal)],
        "folder": None if folder is None else str(folder),
        "series_kept": 0,
        "series_lost": [],
        "arrays_lost": 0,
        "catalog_errors": [str(exc)],
        "restore": None,
        "reopen": not dry_run,
    }


def _repair_catalog(store: Store, report: dict[str, Any]) -> Path | None:
    """Mend a catalog ``PRAGMA integrity_check`` finds damaged, before anything else.

    First ``REINDEX`` in a write transaction, kept only if the catalog is then sound.
    Otherwise the catalog is rebuilt into a fresh file from what every table still
    yields (:func:`_rebuild_catalog`) and swapped in. Returns the folder the damaged
    catalog was moved into, if it was.
    """
    cat = store._catalog
    try:
        with cat.transaction():
            cat.execute("REINDEX")
            if catalog_check(store):
                raise _NotMended
        return None
    except (_NotMended, TimeSeriesError):
        pass
    return _rebuild_catalog(store, report)


class _NotMended(Exception):
    """REINDEX did not make the catalog sound: roll it back."""


def _rebuild_catalog(store: Store, report: dict[str, Any]) -> Path:
    """Rebuild the catalog into a fresh file from what every table still yields, then
    swap it in (rename; the damaged file moved aside, never deleted).

    The copy is made holding the write lock on the damaged catalog, so nothing changes
    under it; rows SQLite cannot read are skipped (each table is scanned again after
    the last row read, stepping over what fails). The fresh file is complete, closed and
    fsynced before the damaged one moves; a failure before the swap removes only the
    fresh file (this repair's own) and changes nothing.
    """
    root = store.path
    old = store._catalog
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
            _catalog_beyond_repair(
                store,
                f"{skipped} reads of its tables fail, so some rows are lost and which "
                "cannot be told",
            )
        if not generation:
            _catalog_beyond_repair(
                store, "its store attributes (the generation its segments carry) do not read"
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
            store._catalog = Catalog(old.path, timeout=old.timeout)
        raise
    store._catalog = Catalog(old.path, timeout=old.timeout)
    LOG.warning(
        "rebuilt the catalog %s: %d rows copied, %d unreadable skipped; the damaged one is in %s",
        old.path,
        copied,
        skipped,
        folder,
    )
    report.update(
        {"rows_copied": copied, "rows_skipped": skipped, "old": str(folder / CATALOG_NAME)}
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


def _catalog_beyond_repair(store: Store, what: str) -> None:
    """Refuse a catalog this repair cannot bring back, changing nothing.

    The one place (with :func:`unopenable`) where rebuilding a catalog from the
    segments' own records would plug in.
    """
    raise IntegrityError(
        f"the catalog {store._catalog.path} is damaged beyond what repair rebuilds ({what}); "
        "nothing was changed. Restore catalog.sqlite from a backup of this store, or export "
        "what still reads into a new store",
        key=store._catalog.path,
        terms=damage_terms(str(store.path)),
    )


def _salvage(store: Store, found: Diagnosis) -> int:
    """Copy every array of a damaged segment that reads and re-hashes into this
    transaction's segment; returns how many."""
    cat = store._catalog
    segs = store._segments
    copied = 0
    for name in found.damaged_segments:
        keep = [r for r in arrays_in(cat, name) if (r[0], r[1]) not in found.lost_keys]
        for start in range(0, len(keep), _STEP):
            by_pool: dict[str, list[tuple]] = {}
            for r in keep[start : start + _STEP]:
                by_pool.setdefault(r[4], []).append(r)
            updates = []
            for pool, group in by_pool.items():
                keys = [(bytes(g[0]), g[1]) for g in group]
                try:
                    arrays = read_group(
                        segs, name, pool, [g[5] for g in group], keys, thorough=True
                    )
                except ArraysDamaged as exc:  # diagnose saw them whole: a changing file
                    found.lost_keys.update(exc.found)
                    group = [g for g, k in zip(group, keys, strict=True) if k not in exc.found]
                    if not group:
                        continue
                    arrays = read_group(
                        segs,
                        name,
                        pool,
                        [g[5] for g in group],
                        [(bytes(g[0]), g[1]) for g in group],
                        thorough=True,
                    )
                target, first = segs.write(pool, group[0][2], orjson.loads(group[0][3]), arrays)
                updates.extend((target, first + i, g[0], g[1]) for i, g in enumerate(group))
            cat.executemany(
                "UPDATE arrays SET segment = ?, slot = ? WHERE hash = ? AND kind = ?", updates
            )
            copied += len(updates)
    return copied


def _drop_lost(store: Store, found: Diagnosis) -> None:
    """Remove the series rows whose arrays are lost, the lost arrays' rows and the
    damaged segments' rows."""
    cat = store._catalog
    # Rows that no longer decode cannot be made SeriesRow objects: deleted as they are.
    cat.executemany(
        "DELETE FROM time_series_associations WHERE id = ?", [(i,) for i in found.bad_rows]
    )
    ids = [s.id for s in found.series_lost if s.id not in found.bad_rows]
    # remove_rows also frees what nothing names any more (arrays, feature maps).
    store._writing.remove_rows(store.rows_by_ids(ids) if ids else [])
    cat.executemany("DELETE FROM arrays WHERE hash = ? AND kind = ?", sorted(found.lost_keys))
    if found.damaged_segments:
        cat.executemany(
            "DELETE FROM segments WHERE name = ?", [(n,) for n in found.damaged_segments]
        )


def _report(
    store: Store, found: Diagnosis, folder: Path | None, *, dry_run: bool
) -> dict[str, Any]:
    """What repair did (or, dry, would do)."""
    lost = [
        {
            k: v
            for k, v in vars(s).items()
            if k in ("id", "owner_id", "owner_type", "owner_category", "type", "name")
        }
        for s in found.series_lost
    ]
    kept = found.series - len(lost)
    arrays_lost = sum(s.arrays_lost for s in found.segments)
    return {
        "dry_run": dry_run,
        "ok_before": found.ok,
        "set_aside": [s.file for s in found.segments]
        + list(found.unnamed)
        + [str(store._segments.path(n)) for n in found.sealed],
        "folder": str(folder) if folder is not None else None,
        "series_kept": kept,
        "series_lost": lost,
        "arrays_lost": arrays_lost,
        "catalog_errors": list(found.catalog.get("errors", [])),
        "restore": restore_hint(str(store.path)) if lost else None,
    }
