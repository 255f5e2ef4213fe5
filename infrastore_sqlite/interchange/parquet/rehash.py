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
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import orjson

from ...errors import InvalidParameterError
from ...model import TimeSeriesType
from ..importing import Options, build_group, first_specs, read_rows
from ..importing.limits import Limits
from .discovery import discover
from .layout import require_pyarrow
from .location import MANIFEST, Location
from .partition import PartitionReader
from .parts import arrow_schema, open_parquet

__all__ = ["rehash_parquet"]


def rehash_parquet(
    directory: str | os.PathLike[str],
    *,
    progress: Callable[[int, int], None] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    max_array_bytes: int | None = None,
    max_cell_bytes: int | None = None,
) -> int:
    """Rewrite the ``data_hash`` of every arrays file in ``directory`` from its values.

    Parameters
    ----------
    directory
        A directory ``export_parquet`` wrote (values may since have been edited), or one
        partition's file or stem.
    progress
        Called as ``progress(done_rows, total_rows)``.
    storage_options
        For an object-storage URI, as for ``import_parquet``: there each file rehash
        writes is one PUT (the arrays files; the values and series files too when a
        partition is renumbered), and the export's manifest is updated last.
    max_array_bytes, max_cell_bytes
        The store's bounds on what the files may make it read, as for the import.

    Returns
    -------
    int
        How many arrays got a new ``data_hash``.

    Raises
    ------
    InvalidParameterError
        What the import would refuse in the values themselves (nulls, rows off the grid,
        cells that do not fit the element type, ...). Nothing is written then.
    """
    pa, pq = require_pyarrow()
    limits = Limits.of(max_array_bytes=max_array_bytes, max_cell_bytes=max_cell_bytes)
    found = discover(directory, storage_options)
    readers = [
        PartitionReader(pa, pq, p, found.where)
        for p in found.partitions
        if not p.foreign and p.type is not TimeSeriesType.DeterministicSingleTimeSeries
    ]
    for reader in readers:
        reader.limits = limits
        for final in reader.part.files.values():
            link = final.link_target()
            if link is not None:
                # Replacing the file would put the new one in the link's place, and
                # writing through it would change a file this directory does not hold.
                raise InvalidParameterError(
                    f"{final} is a symbolic link (to {link}); rehash rewrites "
                    "the files in place and never through a link or over one: copy the "
                    "file itself there and rehash again. Nothing was written",
                    table=str(final),
                )
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
    sizes: dict[Any, dict[str, int]] = {}
    for reader, old, new in plans:
        written = _apply(pa, pq, reader, old, new)
        changed += written.pop("moved", 0)
        sizes.setdefault(reader.part.files["arrays"].parent, {}).update(written)
    for where, written in sizes.items():
        if written:
            # Last: the manifest lists the files as rehash left them.
            update_manifest(where, written)
    return changed


def _apply(
    pa: Any, pq: Any, reader: PartitionReader, old: dict[int, Any], new: dict[int, Any]
) -> dict[str, int]:
    """Write the partition's new arrays file (and, renumbered, its series and values
    files); returns ``{file name: size}`` of what was written (nothing when no hash
    moved)."""
    moved = [aid for aid in old if new[aid] != old[aid]]
    if not moved:
        return {}
    # Ids again in key order; arrays that became one key keep the first one's id.
    keys = sorted(set(new.values()))
    rank = {key: i for i, key in enumerate(keys, start=1)}
    remap = {aid: rank[key] for aid, key in new.items()}
    identity = all(remap[a] == a for a in remap) and len(keys) == len(new)
    table = pa.table(
        {
            "id": pa.array(range(1, len(keys) + 1), pa.int64()),
            "data_hash": pa.array([k[0] for k in keys], pa.string()),
            "time_axis": pa.array([k[1] for k in keys], pa.string()),
        }
    )
    tables = {"arrays": _fit(pa, arrow_schema(reader.part.metadata["arrays"]), table)}
    if not identity:
        tables.update(_renumber(pa, pq, reader, new, remap))
    written = _publish(pq, reader.part.files, tables)
    return {"moved": len(moved), **written}


def _publish(pq: Any, files: dict[str, Location], tables: dict[str, Any]) -> dict[str, int]:
    """Each table written over its role's file, values first and arrays last, by the
    place that holds them (:meth:`Location.rewrite`: on disk under temporary names renamed
    into place once all are written; in object storage one PUT each). A directory of part
    files is set aside first, never removed."""
    order = [r for r in ("values", "series", "arrays") if r in tables]

    def writer(table: Any) -> Any:
        return lambda sink: pq.write_table(table, sink, compression="zstd")

    where = files["arrays"].parent
    return where.rewrite([(files[role].name, writer(tables[role])) for role in order])


def update_manifest(where: Location, sizes: dict[str, int]) -> None:
    """The export's manifest in ``where`` (when there is one) made to list ``sizes`` for
    the files rehash wrote, written last."""
    manifest = where / MANIFEST
    if not manifest.is_file():
        return
    try:
        doc = orjson.loads(manifest.read_bytes())
        for f in doc["files"]:
            if f.get("name") in sizes:
                f["size"] = sizes[f["name"]]
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return  # not a manifest this build reads: the import says so, naming it
    manifest.replace_with(orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def _renumber(
    pa: Any,
    pq: Any,
    reader: PartitionReader,
    new: dict[int, Any],
    remap: dict[int, int],
) -> dict[str, Any]:
    """The values and series files again with the new ids, in their order."""
    # Keep one values group per key: the first array of each new key.
    keep = {}
    for aid in sorted(new):
        keep.setdefault(remap[aid], aid)
    kept = set(keep.values())
    out = {}
    for role in ("series", "values"):
        meta = reader.part.metadata[role]
        t = open_parquet(pq, reader.part.files[role], meta, role).read()
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
        out[role] = _fit(pa, arrow_schema(meta), t)
    return out


def _fit(pa: Any, schema: Any, table: Any) -> Any:
    """``table`` in the file's schema (its types, its footer). The columns the table has:
    an engine's extra columns (Dask's index) are not written again, nor its description
    of them (pandas' metadata)."""
    names = table.schema.names
    fields = [schema.field(n) if n in schema.names else table.schema.field(n) for n in names]
    meta = {k: v for k, v in (schema.metadata or {}).items() if k != b"pandas"}
    target = pa.schema(fields, metadata=meta or None)
    table = table.cast(target) if table.schema != target else table
    return table.replace_schema_metadata(target.metadata)
