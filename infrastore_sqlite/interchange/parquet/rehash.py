"""Recompute the ``data_hash`` of Parquet files after their values were edited.

The import treats each arrays row's ``data_hash`` as a checksum of its values, and the
arrays file is the only place the hash lives (``parquet-layout.md`` §7). :func:`rehash_parquet`
recomputes it exactly as the import does (the same reader and the core's
:func:`~infrastore_sqlite.interchange.importing.build_group`), then writes the arrays file
again. The arrays file's keys must ascend with their ids, so when new hashes break that
order the partition is renumbered: ids are given again in key order and the values and
series files are rewritten with the new ``array_id``\\ s, in the new order. Two arrays that
an edit made equal become one (the series rows of the second point at the first).

Unlike the import, a rehash that renumbers holds the partition's values file in memory.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InvalidParameterError
from ...model import TimeSeriesType
from ..importing import Options, build_group, first_specs, read_rows
from .discovery import discover
from .layout import require_pyarrow
from .partition import PartitionReader
from .parts import arrow_schema, open_parquet
from .storage import is_uri

__all__ = ["rehash_parquet"]


def rehash_parquet(
    directory: str | os.PathLike[str],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Rewrite the ``data_hash`` of every arrays file in ``directory`` from its values.

    Parameters
    ----------
    directory
        A directory ``export_parquet`` wrote (values may since have been edited), or one
        partition's file or stem.
    progress
        Called as ``progress(done_rows, total_rows)``.

    Returns
    -------
    int
        How many arrays got a new ``data_hash``.

    Raises
    ------
    InvalidParameterError
        What the import would refuse in the values themselves (nulls, rows off the grid,
        cells that do not fit the element type, ...). Nothing is written then. Also an
        object-storage URI: rehash rewrites files in place, which object storage cannot.
    """
    if is_uri(directory):
        where = os.fspath(directory)
        raise InvalidParameterError(
            f"rehash rewrites files in place and cannot rewrite {where} in object "
            f"storage: copy it to a local directory, rehash --dir that directory, then "
            f"export or copy the files back (with --overwrite)",
            table=where,
        )
    pa, pq = require_pyarrow()
    found = discover(directory)
    readers = [
        PartitionReader(pa, pq, p, found.where)
        for p in found.partitions
        if not p.foreign and p.type is not TimeSeriesType.DeterministicSingleTimeSeries
    ]
    total = sum(r.values_count() for r in readers)
    done = 0
    plans = []
    opts = Options()
    # Every partition is hashed before anything is written: a refusal writes nothing.
    for reader in readers:
        with reader.reading():
            arrays, specs = read_rows(reader, opts)
            first = first_specs(specs)
            reader.open_values(arrays)
            wanted = [(key, [aid], first.get(key)) for aid, key in sorted(arrays.items())]
            dtype = specs[0].et.dtype if specs else "f64"
            new = dict(arrays)
            for (key, ids, spec), group in zip(wanted, reader.groups(wanted, dtype), strict=True):
                if group is None or spec is None:
                    continue  # no rows, or no series row to place them by: left as it is
                built = build_group(reader.place, group, [spec], opts)[spec.grid_key]
                done += group.n
                if progress is not None:
                    progress(done, total)
                new[ids[0]] = (built.hash_hex, key[1])
            reader.close_values()
        plans.append((reader, arrays, new))
    changed = 0
    for reader, old, new in plans:
        changed += _apply(pa, pq, reader, old, new)
    return changed


def _apply(
    pa: Any, pq: Any, reader: PartitionReader, old: dict[int, Any], new: dict[int, Any]
) -> int:
    moved = [aid for aid in old if new[aid] != old[aid]]
    if not moved:
        return 0
    files = {role: Path(p) for role, p in reader.files.items()}
    # Ids again in key order; arrays that became one key keep the first one's id.
    keys = sorted(set(new.values()))
    rank = {key: i for i, key in enumerate(keys, start=1)}
    remap = {aid: rank[key] for aid, key in new.items()}
    identity = all(remap[a] == a for a in remap) and len(keys) == len(new)
    token = uuid.uuid4().hex[:8]
    temps: dict[Path, Path] = {}
    schema = arrow_schema(reader.part.metadata["arrays"])
    table = pa.table(
        {
            "id": pa.array(range(1, len(keys) + 1), pa.int64()),
            "data_hash": pa.array([k[0] for k in keys], pa.string()),
            "time_axis": pa.array([k[1] for k in keys], pa.string()),
        }
    )
    try:
        temps[files["arrays"]] = _write(pq, schema, table, files["arrays"], token)
        if not identity:
            _renumber(pa, pq, reader, files, new, remap, temps, token)
        for final, tmp in temps.items():
            _replace(tmp, final, token)
    finally:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
    return len(moved)


def _replace(tmp: Path, final: Path, token: str) -> None:
    """``tmp`` renamed to ``final``; a directory of part files there is set aside beside
    it first (``.<name>.<token>.parts``: never removed, and skipped by every reader)."""
    if final.is_dir():
        os.replace(final, final.with_name(f".{final.name}.{token}.parts"))
    os.replace(tmp, final)


def _renumber(
    pa: Any,
    pq: Any,
    reader: PartitionReader,
    files: dict[str, Path],
    new: dict[int, Any],
    remap: dict[int, int],
    temps: dict[Path, Path],
    token: str,
) -> None:
    """The values and series files again with the new ids, in their order."""
    # Keep one values group per key: the first array of each new key.
    keep = {}
    for aid in sorted(new):
        keep.setdefault(remap[aid], aid)
    kept = set(keep.values())
    for role in ("series", "values"):
        t = open_parquet(pq, files[role], reader.part.metadata[role], role).read()
        aid = t.column("array_id").to_numpy(zero_copy_only=False).astype(np.int64)
        if role == "values":
            mask = np.isin(aid, list(kept))
            t, aid = t.filter(pa.array(mask)), aid[mask]
        mapped = np.array([remap[int(a)] for a in aid], dtype=np.int64)
        # A stable sort by the new id keeps each array's own row order.
        order = np.argsort(mapped, kind="stable")
        field = t.schema.field("array_id")
        t = t.set_column(
            t.schema.get_field_index("array_id"), field, pa.array(mapped).cast(field.type)
        ).take(pa.array(order))
        temps[files[role]] = _write(pq, t.schema, t, files[role], token)


def _write(pq: Any, schema: Any, table: Any, final: Path, token: str) -> Path:
    """``table`` in ``final``'s schema (footer kept) under a temporary name beside it."""
    tmp = final.with_name(f".{final.name}.{token}.partial")
    # The columns the table has, in the file's types; an engine's extra columns (Dask's
    # index) are not written again, nor its description of them (pandas' metadata).
    import pyarrow as pa

    fields = [
        schema.field(n) if n in schema.names else table.schema.field(n) for n in table.schema.names
    ]
    meta = {k: v for k, v in (schema.metadata or {}).items() if k != b"pandas"}
    target = pa.schema(fields, metadata=meta or None)
    table = table.cast(target) if table.schema != target else table
    pq.write_table(table.replace_schema_metadata(target.metadata), tmp, compression="zstd")
    return tmp
