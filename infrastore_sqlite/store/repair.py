"""Repairing a damaged store: damaged segments set aside, what still reads salvaged, a
catalog that is lost, stale or damaged rebuilt.

:func:`repair_directory` is the one path that repairs a store by its directory (the
CLI's ``repair``, ``Store.repair_catalog``), in this order:

1. a stray rollback journal beside the catalog (``catalog.sqlite-journal``: no writer of
   a store leaves one) is set aside (:func:`unopenable`), then repair goes on;
2. a catalog no open can read (missing, empty, headerless, table-less, unreadable) is
   rebuilt from the records the segments keep (``rebuild.py``, :func:`recover_catalog`);
3. otherwise the store is opened and :func:`repair` (``Store.repair``) runs.

:func:`repair` of an open store:

1. a stale catalog (the segments record transactions it does not know: an older copy
   restored, a lost ``-wal``) is rebuilt from the records, decided before any write;
2. a catalog ``PRAGMA integrity_check`` finds damaged is mended by ``REINDEX``; when
   that does not make it sound, by copying every table's rows into a fresh file
   (``catalog_copy.py``) when every row still reads, else by the rebuild from the
   segments' records (:func:`rebuild_open_store`), else refused, changing nothing. The
   copy comes first: when every row reads it loses nothing, keeps every id and holds
   what no record does (rows of a store from before records were kept, its internal
   attributes); the records are what brings back rows whose pages no longer read;
3. one write transaction under the store's write lock, like every other write
   (``transactions.py``): :func:`~.damage.diagnose` the store, holding the lock, so
   nothing changes under it; every array of a damaged segment that still reads and
   re-hashes to its key is copied into the transaction's new segment and its catalog row
   pointed there; the catalog rows of the series whose arrays are lost are removed (with
   the arrays and feature rows only they used), and the damaged segments' rows deleted;
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
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import (
    Audience,
    CatalogDamagedError,
    IntegrityError,
    StorageError,
    TimeSeriesError,
)
from .arrays import describe_os_error, fsync_path
from .catalog import JOURNAL
from .catalog_copy import BeyondIndexes, aside_folder, catalog_beyond_repair, mend_catalog
from .damage import (
    ArraysDamaged,
    Diagnosis,
    arrays_in,
    catalog_check,
    diagnose,
    pool_shape,
    read_group,
)
from .journal import row_mismatches, unknown_transactions
from .lifecycle import open_state
from .rebuild import move_files, name_moves, rebuild_catalog, relocate
from .segments import PENDING_SUFFIX, SEGMENT_DIR, catalog_file
from .tracing import LOG

if TYPE_CHECKING:
    from .queries import Queries
    from .state import StoreState
    from .store import Store
    from .transactions import Transactions
    from .writing import Writing

# Arrays copied per read/write step while salvaging.
_STEP = 1024


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


def repair_directory(
    path: str | Path,
    *,
    dry_run: bool,
    open_store: Callable[[bool], Store],
    audience: Audience = "api",
) -> dict[str, Any]:
    """Repair the store in the directory ``path``, whatever state its catalog is in: the
    one path of the CLI's ``repair`` and ``Store.repair_catalog`` (see the module
    docstring for the order).

    ``open_store(read_only)`` opens the store; ``audience`` spells the refusals the
    report quotes (``"api"`` or ``"cli"``). A catalog no open can read is rebuilt from
    the segments' records (:func:`recover_catalog`); a stray journal is set aside first
    (with ``dry_run`` only reported, and nothing else checked: no open reads through
    it); any other refusal of the open (a store busy, not a store) is raised as it is.
    """
    root = Path(path)
    early: dict[str, Any] | None = None
    while True:
        try:
            store = open_store(dry_run)
        except CatalogDamagedError as exc:
            if exc.problem == JOURNAL and early is None:
                early = unopenable(root, exc, dry_run=dry_run)
                early["catalog_errors"] = [exc.render(audience)]
                if early.pop("reopen"):
                    continue  # set aside: the catalog is opened again
                return early
            why = catalog_unusable(root) or exc.render(audience)
        except TimeSeriesError:
            why = catalog_unusable(root)  # a catalog missing beside the segments
            if why is None:
                raise
        else:
            with store:
                report = store.repair(dry_run=dry_run)
            break
        report = recover_catalog(root, dry_run=dry_run, why=why)
        break
    if early is not None:
        report["set_aside"] = early["set_aside"] + report["set_aside"]
        report["folder"] = report["folder"] or early["folder"]
        report["catalog_errors"] = early["catalog_errors"] + report["catalog_errors"]
        report["ok_before"] = False
    return report


def repair(
    state: StoreState,
    *,
    queries: Queries,
    transactions: Transactions,
    writing: Writing,
    dry_run: bool = False,
) -> dict[str, Any]:
    """``Store.repair``: see the module docstring. Returns the report (what was set aside,
    kept and lost, and how to restore the lost series).

    Parameters
    ----------
    state
        The open store's shared state (its catalog and segments are swapped in place
        when the catalog is rebuilt).
    queries, transactions, writing
        The store's rooms the repair works through: its transaction, the rows of the
        lost series and their removal.
    dry_run
        Report what would be kept and lost; change nothing.
    """
    state.check_open()
    stale = unknown_transactions(state)
    if stale:  # decided before any write: a write would set the newer segments aside
        why = (
            f"the catalog is stale: the segments record {len(stale)} transaction{'s' * (len(stale) != 1)} it "
            "does not know (an older copy restored, or a lost -wal)"
        )
        return rebuild_open_store(state, dry_run=dry_run, why=why)
    differ = row_mismatches(state)
    if differ:  # a damaged row is never made the new truth: the records restore it
        why = (
            f"{len(differ)} series rows differ from the transaction records (ids "
            f"{', '.join(str(i) for i in sorted(differ)[:12])})"
        )
        return rebuild_open_store(state, dry_run=dry_run, why=why)
    if dry_run:
        return _report(state, diagnose(state), None, dry_run=True)
    state.check_writable()
    if state.catalog.in_transaction:
        raise StorageError("repair() cannot run inside a transaction; commit or roll back first")
    # Files swapped or renamed in segments/ go back under the names they record first
    # (renamed, never deleted): what they hold is then read where the catalog says. The
    # moves are decided first; a repair that then cannot go on (another writer holds the
    # store, a refusal) moves them back, so a refused repair changes nothing.
    root = state.path
    moves = name_moves(root, state.segments.generation)
    if moves:
        with state.catalog.transaction():
            pass  # busy is refused here, before any file moves
    try:
        moved = move_files(root, moves)
    except OSError as exc:
        raise StorageError(
            f"cannot move the segments of {state.path} back under their names: "
            f"{describe_os_error(exc)}"
        ) from exc
    for _src, dst in moved:
        state.segments.forget(Path(dst).name)
    try:
        report = _repair(state, queries, transactions, writing)
        if moved:
            report["ok_before"] = False
            report["catalog_errors"].append(
                f"{len(moved)} segment files were under another segment's name; moved back"
            )
        return report
    except BeyondIndexes as exc:
        # No copy of its tables makes the catalog sound: the segments' records rebuild
        # it, or, when they cannot (a store from before records were kept), the refusal
        # stands, having changed nothing.
        try:
            return rebuild_open_store(state, dry_run=False, why=str(exc))
        except IntegrityError:
            _move_back(state, moved)
            raise exc from None
    except BaseException:
        _move_back(state, moved)
        raise


def _move_back(state: StoreState, moved: list[tuple[str, str]]) -> None:
    """Undo :func:`~.rebuild.move_files`' moves of a repair that did not go on."""
    if not moved:
        return
    with contextlib.suppress(OSError):
        move_files(state.path, [(dst, src) for src, dst in reversed(moved)])
    for src, dst in moved:
        state.segments.forget(Path(src).name)
        state.segments.forget(Path(dst).name)


def _repair(
    state: StoreState, queries: Queries, transactions: Transactions, writing: Writing
) -> dict[str, Any]:
    """:func:`repair` of a store whose catalog is not stale (see the module docstring)."""
    segs = state.segments
    # Everything is decided inside the transaction, under the write lock, and nothing on
    # disk changes before its commit but its own new segment (marked pending, deleted on
    # a rollback): a refusal changes nothing. The files set aside move after the commit;
    # a kill before they move leaves them unnamed in segments/, where the next writer or
    # repair sets them aside in turn.
    salvaged = 0
    ok_before = True
    rebuilt: dict[str, Any] = {}
    mended = catalog_check(state)
    if mended:
        mend_catalog(state, rebuilt)
    with transactions.block(sweep=False):
        found = diagnose(state)
        if not found.catalog["ok"]:
            catalog_beyond_repair(state, found.catalog["errors"][0])
        if not found.ok:
            _list_again(state, found.unlisted)
            if found.lost_keys and relocate_lost(state, found.lost_keys):
                # Arrays the catalog lost track of (a wrong slot or segment name in a
                # row) found intact by the keys the segments record: pointed at, not
                # dropped. Diagnosed again, still under the lock.
                ok_before = False
                found = diagnose(state)
            if not found.ok:
                salvaged = _salvage(state, found)
                _drop_lost(state, found, queries, writing)
        # The transaction's segment is sealed and named by the commit that ends the block.
    # Pending files listed under the lock belong to writes that did not commit.
    _drop_pending(state, found.pending)
    names = [*found.damaged_segments, *(Path(u).name for u in found.unnamed), *found.sealed]
    # Whatever the rest of the store, what the catalog no longer names is set aside.
    present = [n for n in names if os.path.lexists(segs.path(n))]
    folder = aside_folder(state.path) if present else None
    if folder is not None:
        segs.set_aside(present, folder)
    LOG.info("repaired the store %s: %d arrays salvaged", state.path, salvaged)
    out = _report(state, found, folder, dry_run=False)
    if rebuilt.get("lost"):
        out["series_lost"] = rebuilt.pop("lost") + out["series_lost"]
        out["restore"] = restore_hint(str(state.path))
    rebuilt.pop("lost", None)
    out["ok_before"] = out["ok_before"] and ok_before and not mended and not found.sealed
    out["catalog_errors"] = mended + out["catalog_errors"]
    out["arrays_salvaged"] = salvaged
    out["catalog_rebuilt"] = rebuilt or None
    return out


def relocate_lost(state: StoreState, keys: set[tuple[bytes, str]]) -> int:
    """Point the catalog's rows of lost arrays at intact copies the segments' key records
    show (``rebuild.relocate``); returns how many were found."""
    cat = state.catalog
    places = relocate(state.path, state.segments.generation, keys)
    named = {r[0] for r in cat.execute("SELECT name FROM segments")}
    for (h, kind), (segment, pool, slot, f) in sorted(places.items()):
        if segment not in named:  # an intact file whose name the catalog lost
            target = state.segments.path(segment)
            if f.path != target:  # set aside by a sweep: moved back under its name
                try:
                    os.rename(f.path, target)
                    f.path = target
                except OSError:
                    continue
            cat.execute(
                "INSERT INTO segments (name, bytes, slots, pools) VALUES (?, ?, ?, ?)",
                (
                    segment,
                    os.path.getsize(f.path),
                    sum(sum(1 for k in ks if k is not None) for ks in f.keys.values()),
                    orjson.dumps(sorted(f.keys)).decode(),
                ),
            )
            named.add(segment)
        dtype, _, dims = pool.partition("__")
        shape = orjson.dumps([] if dims == "s" else [int(d) for d in dims.split("x")]).decode()
        cat.execute(
            # Upserted: a row the catalog holds keeps its id (the series rows name it).
            "INSERT INTO arrays (hash, kind, dtype, shape, pool, slot, segment) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hash, kind) DO UPDATE SET "
            "dtype = excluded.dtype, shape = excluded.shape, pool = excluded.pool, "
            "slot = excluded.slot, segment = excluded.segment",
            (h, kind, dtype, shape, pool, slot, segment),
        )
        state.segments.forget(segment)
    return len(places)


def _list_again(state: StoreState, names: list[str]) -> None:
    """Give back their ``segments`` rows to segments the catalog's arrays are placed in
    but its segments table does not list (diagnose found them there, this store's and
    sound): a damaged name in a row must not cost the series in them."""
    cat = state.catalog
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
                os.path.getsize(state.segments.path(name)),
                int(slots),
                orjson.dumps(pools).decode(),
            ),
        )


def _drop_pending(state: StoreState, names: list[str]) -> None:
    """Delete pending files the catalog, read under the write lock, showed uncommitted."""
    for name in names:
        for path in (state.segments.path(name), state.segments.path(name + PENDING_SUFFIX)):
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


def _salvage(state: StoreState, found: Diagnosis) -> int:
    """Copy every array of a damaged segment that reads and re-hashes into this
    transaction's segment; returns how many."""
    cat = state.catalog
    segs = state.segments
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
                # The shape is the pool's, as read (the catalog's text of it may be the
                # damaged cell): written with the arrays, and into their rows again.
                shape = pool_shape(group[0][3], arrays)
                try:
                    told = orjson.loads(group[0][3])
                except orjson.JSONDecodeError:
                    told = None
                if told != shape:
                    text = orjson.dumps(shape).decode()
                    cat.executemany(
                        "UPDATE arrays SET shape = ? WHERE hash = ? AND kind = ?",
                        [(text, g[0], g[1]) for g in group],
                    )
                target, first = segs.write(
                    pool,
                    group[0][2],
                    shape,
                    arrays,
                    [(bytes(g[0]), g[1]) for g in group],
                )
                updates.extend((target, first + i, g[0], g[1]) for i, g in enumerate(group))
            cat.executemany(
                "UPDATE arrays SET segment = ?, slot = ? WHERE hash = ? AND kind = ?", updates
            )
            copied += len(updates)
    return copied


def _drop_lost(state: StoreState, found: Diagnosis, queries: Queries, writing: Writing) -> None:
    """Remove the series rows whose arrays are lost, the lost arrays' rows and the
    damaged segments' rows."""
    cat = state.catalog
    # Rows that no longer decode cannot be made SeriesRow objects: deleted as they are.
    cat.executemany(
        "DELETE FROM time_series_associations WHERE id = ?", [(i,) for i in found.bad_rows]
    )
    ids = [s.id for s in found.series_lost if s.id not in found.bad_rows]
    # remove_rows also frees what nothing names any more (arrays, feature maps).
    writing.remove_rows(queries.rows_by_ids(ids) if ids else [])
    cat.executemany("DELETE FROM arrays WHERE hash = ? AND kind = ?", sorted(found.lost_keys))
    if found.damaged_segments:
        cat.executemany(
            "DELETE FROM segments WHERE name = ?", [(n,) for n in found.damaged_segments]
        )


def _report(
    state: StoreState, found: Diagnosis, folder: Path | None, *, dry_run: bool
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
        + [str(state.segments.path(n)) for n in found.sealed],
        "folder": str(folder) if folder is not None else None,
        "series_kept": kept,
        "series_lost": lost,
        "arrays_lost": arrays_lost,
        "catalog_errors": list(found.catalog.get("errors", [])),
        "restore": restore_hint(str(state.path)) if lost else None,
    }


# ---------------------------------------------------------------------- the catalog rebuilt

_SQLITE_HEADER = b"SQLite format 3\x00"


def catalog_unusable(path: str | Path) -> str | None:
    """Why the catalog of the store directory ``path`` cannot be opened at all (missing,
    empty, not an SQLite file, unreadable), or None. Only for a directory with a
    ``segments`` folder: anything else is not a store for repair to rebuild."""
    root = Path(path)
    if not (root / SEGMENT_DIR).is_dir():
        return None
    cat = catalog_file(root)
    try:
        with open(cat, "rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return f"the catalog {cat} is missing"
    except OSError as exc:
        return f"the catalog {cat} cannot be read: {describe_os_error(exc)}"
    if not head:
        return f"the catalog {cat} is empty (0 bytes)"
    if head != _SQLITE_HEADER:
        return f"the catalog {cat} is not an SQLite database (its header is damaged)"
    import apsw  # only here: the catalog's own module wraps every other use

    try:
        conn = apsw.Connection(str(cat), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            conn.execute("SELECT count(*) FROM time_series_associations").fetchall()
            conn.execute("SELECT count(*) FROM segments").fetchall()
        finally:
            conn.close()
    except apsw.Error as exc:
        return f"the catalog {cat} does not read ({' '.join(str(exc).split())[:200]})"
    return None


def recover_catalog(
    path: str | Path, *, dry_run: bool = False, generation: str | None = None, why: str = ""
) -> dict[str, Any]:
    """Rebuild the catalog of the store directory ``path`` from its segments' records
    (``rebuild.py``) and swap it in: the old catalog (with its -wal, -shm, -journal) is
    moved into ``<store>/damaged-<UTC time>/``, never deleted; segment files the new
    catalog names that were set aside or renamed are moved back under their recorded
    names; then the new file is renamed over ``catalog.sqlite`` (atomic). Nothing else
    may have the store open. With ``dry_run`` nothing changes. Returns repair's report,
    with ``catalog_rebuilt``."""
    root = Path(path)
    work = root / f".catalog.rebuilding-{os.getpid()}-{uuid.uuid4().hex[:12]}.sqlite"
    try:
        found = rebuild_catalog(root, into=work, generation=generation)
        folder: Path | None = None
        old: list[str] = []
        if not dry_run:
            folder, old = _swap_in(root, work, found["moves"])
    finally:
        for p in (work, Path(f"{work}-wal"), Path(f"{work}-shm")):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()  # this call's own work file (a dry run's, or a failed one's)
    LOG.info("rebuilt the catalog of %s from its segments: %d series", root, found["series"])
    lost = found["series_lost"]
    return {
        "dry_run": dry_run,
        "ok_before": False,
        "set_aside": old,
        "folder": str(folder) if folder is not None else None,
        "series_kept": found["series"],
        "series_lost": lost,
        "arrays_lost": 0,
        "catalog_errors": [why] if why else [],
        "restore": restore_hint(str(root)) if lost else None,
        "catalog_rebuilt": {
            "from": "segments",
            "series": found["series"],
            "transactions": found["transactions"],
            "gaps": found["gaps"],
            "moved": [list(m) for m in found["moves"]],
        },
    }


def _swap_in(root: Path, work: Path, moves: list[tuple[str, str]]) -> tuple[Path | None, list[str]]:
    """The rebuilt catalog ``work`` put in place (see :func:`recover_catalog`)."""
    cat = catalog_file(root)
    folder = aside_folder(root)
    old: list[str] = []
    sides = [Path(f"{cat}{suffix}") for suffix in ("-wal", "-shm", "-journal")]
    try:
        if cat.exists() or any(p.exists() for p in sides):
            folder.mkdir()  # only when something goes into it
        # The old catalog is linked aside first and replaced by the rename at the end, so
        # a kill at any point leaves a catalog file (old or new) or none to rebuild again.
        if cat.exists():
            try:
                os.link(cat, folder / cat.name)
            except OSError:
                shutil.copyfile(cat, folder / cat.name)
                fsync_path(folder / cat.name)
            old.append(str(cat))
        for side in sides:
            if side.exists():
                os.rename(side, folder / side.name)  # never applied to the new catalog
                old.append(str(side))
        if old:
            fsync_path(folder)
        for src, dst in moves:
            if not Path(dst).exists():
                os.rename(src, dst)
        fsync_path(root / SEGMENT_DIR)
        os.rename(work, cat)
        fsync_path(root)
    except OSError as exc:
        raise StorageError(
            f"cannot put the rebuilt catalog in place in {root}: {describe_os_error(exc)}; the "
            f"old catalog is kept in {folder}"
        ) from exc
    return (folder if old else None), old


def rebuild_open_store(state: StoreState, *, dry_run: bool, why: str) -> dict[str, Any]:
    """Rebuild the catalog of an open store (stale, or damaged beyond its indexes): its
    files closed, the catalog rebuilt and swapped in, the store opened again in place."""
    root = Path(state.path)
    generation = state.segments.generation
    if dry_run:
        return recover_catalog(root, dry_run=True, generation=generation, why=why)
    state.check_writable()
    timeout = state.catalog.timeout
    state.segments.close()
    state.catalog.close()
    try:
        report = recover_catalog(root, generation=generation, why=why)
    finally:
        fresh = open_state(root, timeout=timeout)
        state.catalog, state.segments = fresh.catalog, fresh.segments
    return report
