"""Recompute the ``data_hash`` of an interchange database after its values were edited.

The import treats each arrays row's ``data_hash`` as a checksum of its values group, so a
value changed in place with plain SQL is refused until the hash is recomputed (or the
check waived). :func:`rehash_sqlite` recomputes it exactly as the import does: the group is
read, placed on the grid its series row declares, re-encoded into the store's array, and
hashed (composites over their minimal width).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from pathlib import Path

import apsw

from ...errors import FileTriggersWarning
from ...model import TimeSeriesType
from ..importing import Options, build_group, first_specs, read_rows
from ..importing.limits import Limits
from ..layout import validate_prefix
from .database import open_database, triggers_in, write_transaction
from .reader import PartitionReader, discover

__all__ = ["rehash_sqlite"]


def rehash_sqlite(
    path: str | Path,
    table_prefix: str = "",
    *,
    progress: Callable[[int, int], None] | None = None,
    max_array_bytes: int | None = None,
    max_cell_bytes: int | None = None,
) -> int:
    """Rewrite the ``data_hash`` of every arrays row under ``table_prefix`` from its values.

    Parameters
    ----------
    path
        An interchange database (``export_sqlite`` wrote it; values may since have been
        edited with plain SQL).
    table_prefix
        The prefix the export used.
    progress
        Called as ``progress(done_rows, total_rows)``.
    max_array_bytes, max_cell_bytes
        The store's bounds on what the file may make it read, as for the import.

    Returns
    -------
    int
        How many arrays rows got a new ``data_hash``.

    Raises
    ------
    InvalidParameterError
        What the import would refuse in the values themselves (NULLs, rows off the grid,
        cells that do not fit the element type, ...). Nothing is written then.

    Notes
    -----
    An arrays row that no series row names, or whose values group is empty, is left as it
    is: without a series row there is no grid to place its rows on. When an edit makes one
    array equal to another on the same time axis, the two keys become one: the series rows
    of the second are pointed at the first and its duplicate values are dropped, so the
    file keeps one values group per key. DeterministicSingleTimeSeries partitions (which
    no import takes) are left alone.
    """
    validate_prefix(table_prefix)
    limits = Limits.of(max_array_bytes=max_array_bytes, max_cell_bytes=max_cell_bytes)
    where = str(path)
    conn = open_database(path, read_only=False, through_link=False)
    try:
        triggers = triggers_in(conn)
        if triggers:
            warnings.warn(FileTriggersWarning(where, triggers), stacklevel=2)
        with write_transaction(conn, where, "rehashing"):
            changed = _rehash(conn, table_prefix, where, progress, limits)
    finally:
        with contextlib.suppress(apsw.Error):
            conn.close()
    return changed


def _rehash(
    conn: apsw.Connection,
    prefix: str,
    where: str,
    progress: Callable[[int, int], None] | None,
    limits: Limits,
) -> int:
    parts = [
        t
        for t in discover(conn, prefix, where, allow_derived=True)
        if t.type is not TimeSeriesType.DeterministicSingleTimeSeries
    ]
    readers = [PartitionReader.of(conn, t, where, limits) for t in parts]
    total = sum(r.values_count() for r in readers)
    done = 0
    changed = 0
    opts = Options()
    for reader in readers:
        # Read as the import reads: its refusals (a cell not UTF-8, too long, nested too
        # deep) are the import's, never an internal error.
        with reader.reading():
            arrays, specs = read_rows(reader, opts)
        first_spec = first_specs(specs)
        ids_by_key: dict[tuple[str, str], list[int]] = {}
        for aid, key in arrays.items():
            ids_by_key.setdefault(key, []).append(aid)
        new_key: dict[int, tuple[str, str]] = dict(arrays)
        reader.lookup.prepare()
        try:
            for key in sorted(ids_by_key):
                spec = first_spec.get(key)
                if spec is None:
                    continue
                ids = sorted(ids_by_key[key])
                with reader.reading():
                    group = reader.group.read(key, ids, spec, spec.et.dtype)
                if group is None:
                    continue
                built = build_group(reader.place, group, [spec], opts)[spec.grid_key]
                done += group.n
                if progress is not None:
                    progress(done, total)
                if built.hash_hex != key[0]:
                    for aid in ids:
                        new_key[aid] = (built.hash_hex, key[1])
        finally:
            reader.lookup.drop()
        changed += _apply(conn, reader, arrays, new_key)
    return changed


def _apply(
    conn: apsw.Connection,
    reader: PartitionReader,
    old: dict[int, tuple[str, str]],
    new: dict[int, tuple[str, str]],
) -> int:
    """Write the new hashes, merging arrays that became one key."""
    moved = [aid for aid in old if new[aid] != old[aid]]
    if not moved:
        return 0
    A, S, V = reader.tables.A, reader.tables.S, reader.tables.V
    # Park the rows being changed on unique placeholders first, so that no intermediate
    # state trips the UNIQUE (data_hash, time_axis) constraint.
    conn.executemany(
        f"UPDATE {A} SET data_hash = 'rehash:' || id WHERE id = ?", [(a,) for a in moved]
    )
    # Keys that now name more than one original array: keep the smallest id.
    owners: dict[tuple[str, str], dict[tuple[str, str], list[int]]] = {}
    for aid, key in new.items():
        owners.setdefault(key, {}).setdefault(old[aid], []).append(aid)
    drop: list[tuple[int, int]] = []  # (duplicate id, id kept)
    for key, groups in owners.items():
        if len(groups) < 2:
            continue
        # Keep the array that already held the key (it was not edited); else the first.
        keep_ids = groups.get(key) or min(groups.values(), key=min)
        keep = min(keep_ids)
        for ids in groups.values():
            if ids is not keep_ids:
                drop.extend((aid, keep) for aid in ids)
    for dup, keep in drop:
        conn.execute(f"UPDATE {S} SET array_id = ? WHERE array_id = ?", (keep, dup))
        conn.execute(f"DELETE FROM {V} WHERE array_id = ?", (dup,))
        conn.execute(f"DELETE FROM {A} WHERE id = ?", (dup,))
    dropped = {d for d, _ in drop}
    conn.executemany(
        f"UPDATE {A} SET data_hash = ? WHERE id = ?",
        [(new[a][0], a) for a in moved if a not in dropped],
    )
    return len(moved)
