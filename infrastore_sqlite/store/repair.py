"""Repairing a damaged store: damaged segments set aside, what still reads salvaged.

:func:`repair` is ``Store.repair``. It is one write transaction under the store's write
lock, like every other write (``transactions.py``):

1. :func:`~.damage.diagnose` the store, holding the lock, so nothing changes under it;
2. every array of a damaged segment that still reads and re-hashes to its key is copied
   into the transaction's new segment and its catalog row pointed there;
3. the catalog rows of the series whose arrays are lost are removed (with the arrays and
   feature rows only they used), and the damaged segments' rows deleted;
4. the damaged files are hard-linked (copied where links are not possible) into
   ``<store>/damaged-<UTC time>/`` before the commit, and unlinked from ``segments/``
   after it. A kill before the commit leaves the store as it was (and a folder of
   copies); a kill after it leaves the damaged files both aside and in ``segments/``,
   where the next writer deletes the second name as the leftover it now is.

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
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import IntegrityError, StorageError, damage_terms
from .arrays import describe_os_error, fsync_path
from .damage import ArraysDamaged, Diagnosis, arrays_in, catalog_check, diagnose, read_group
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
    moved: list[tuple[Path, Path]] = []
    folder: Path | None = None
    with store.transaction():
        found = diagnose(store)
        if not found.catalog["ok"]:
            _reindex(store)
            found = diagnose(store)
        if found.ok:
            return _report(store, found, None, dry_run=False)
        if found.damaged_segments:
            folder = aside_folder(store.path)
        salvaged = _salvage(store, found)
        _drop_lost(store, found)
        if found.damaged_segments:
            assert folder is not None
            moved = _set_aside(store, found.damaged_segments, folder)
        # The transaction's segment is sealed and named by the commit that ends the block.
    for original, _copy in moved:
        with contextlib.suppress(FileNotFoundError):
            original.unlink()
    if moved:
        with contextlib.suppress(OSError):
            fsync_path(store._segments.dir)
    LOG.info("repaired the store %s: %d arrays salvaged", store.path, salvaged)
    out = _report(store, found, folder, dry_run=False)
    out["arrays_salvaged"] = salvaged
    return out


def _reindex(store: Store) -> None:
    """Rebuild the catalog's indexes; refuse when the catalog is damaged beyond them."""
    cat = store._catalog
    with contextlib.suppress(StorageError):
        cat.execute("REINDEX")
    problems = catalog_check(store)
    if problems:
        raise IntegrityError(
            f"the catalog {cat.path} is damaged beyond what repair rebuilds ({problems[0]}); "
            "restore catalog.sqlite from a backup of this store, or export what still reads "
            "into a new store",
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
                target, first = segs.write(
                    pool,
                    group[0][2],
                    orjson.loads(group[0][3]),
                    arrays,
                    [(bytes(g[0]), g[1]) for g in group],
                )
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


def _set_aside(store: Store, names: list[str], folder: Path) -> list[tuple[Path, Path]]:
    """Link (or copy) the damaged segment files into ``folder``, durable before the
    commit; the originals are unlinked after it."""
    segs = store._segments
    try:
        folder.mkdir()
        out = []
        for name in names:
            segs.forget(name)
            src = segs.path(name)
            dst = folder / name
            if not src.exists():
                continue  # a missing segment: nothing to keep
            try:
                os.link(src, dst)
            except OSError:  # a file system without hard links: a copy keeps the bytes
                shutil.copyfile(src, dst)
                fsync_path(dst)
            out.append((src, dst))
        fsync_path(folder)
        fsync_path(store.path)
    except OSError as exc:
        raise StorageError(
            f"cannot set the damaged segments aside in {folder}: {describe_os_error(exc)}; "
            "nothing was changed"
        ) from exc
    return out


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
        "set_aside": [s.file for s in found.segments],
        "folder": str(folder) if folder is not None else None,
        "series_kept": kept,
        "series_lost": lost,
        "arrays_lost": arrays_lost,
        "catalog_errors": list(found.catalog.get("errors", [])),
        "restore": restore_hint(str(store.path)) if lost else None,
    }
