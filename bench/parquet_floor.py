"""Floor for the Parquet export: the same work by the shortest honest route.

``prepare(store, src)`` learns, without the clock, what an export needs to know before it
starts: from an earlier Parquet export of ours (``src``) each values file's schema, its
arrays in array_id order with each one's grid (first timestamp and step), and the series
and arrays tables; from the store's catalog where each array sits in the HDF5 segment
files (segment, pool, slot). It returns the timed part, ``write(out)``, which does in one
process what the export does with the store's arrays:

* reads the pools holding them from the store's HDF5 files with h5py (each pool whole,
  the cheapest way h5py reads many rows);
* builds the values table a row group at a time, cut at array boundaries at the export's
  row-group target (``ROW_GROUP_ROWS``): ``array_id`` repeated per array, ``timestamp``
  as each array's anchor plus its grid's offsets, ``value`` the arrays' rows end to end
  (one gather per run of arrays in one pool);
* writes it, and the series and arrays tables, with the export's own writer settings
  (``layout.writer_options``: compression, dictionaries, encodings, statistics, sort
  order) and the same schema.

Left out, because the floor cannot do less than the export only by skipping it: planning
from the catalog, building the series and arrays tables from catalog rows, checks and
refusals, the atomic publish. Scalar arrays on fixed grids only (the ``sts``, ``small``
and ``year`` stores of bench/scenarios.py); any other store is refused.

May import: numpy, h5py, pyarrow, :mod:`infrastore_sqlite.interchange.parquet.layout`
(the export's settings, so the floor and the export cannot drift apart).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROLES = ("values", "series", "arrays")


class _Values:
    """One values file as the floor writes it: each array's place in the store and grid,
    in array_id order."""

    def __init__(self, name: str, schema: Any, ids: np.ndarray, counts: np.ndarray) -> None:
        self.name = name
        self.schema = schema
        self.ids = ids  # array ids, ascending
        self.counts = counts  # rows per array
        self.anchors = np.empty(ids.size, dtype=np.int64)  # first timestamp (schema's unit)
        self.steps = np.empty(ids.size, dtype=np.int64)
        self.places: list[tuple[str, str, int]] = []  # (segment, pool, slot) per array


def _values_of(pq: Any, path: Path) -> _Values:
    """Each array's id, length and grid, from an earlier export's values file."""
    import pyarrow.compute as pc

    table = pq.read_table(path, columns=["array_id", "timestamp"])
    names = pq.read_schema(path).names
    if names != ["array_id", "timestamp", "value"]:
        raise SystemExit(f"parquet floor: {path.name} has columns {names}; scalar series only")
    aid = table.column("array_id").to_numpy()
    ts = pc.cast(table.column("timestamp"), "int64").to_numpy()
    starts = np.flatnonzero(np.r_[True, aid[1:] != aid[:-1]])
    ends = np.r_[starts[1:], aid.size]
    out = _Values(path.name, pq.read_schema(path), aid[starts], ends - starts)
    out.anchors[:] = ts[starts]
    second = np.minimum(starts + 1, ends - 1)
    out.steps[:] = ts[second] - ts[starts]
    # Every array on a fixed grid: its timestamps are its anchor plus k steps.
    expect = np.repeat(out.anchors, out.counts) + (
        np.arange(aid.size) - np.repeat(starts, out.counts)
    ) * np.repeat(out.steps, out.counts)
    if not np.array_equal(expect, ts):
        raise SystemExit(f"parquet floor: {path.name} holds an array off a fixed grid")
    return out


def _places(store: Path, hashes: dict[int, bytes]) -> dict[int, tuple[str, str, int]]:
    """``{array_id: (segment, pool, slot)}`` from the store's catalog."""
    conn = sqlite3.connect(f"file:{store / 'catalog.sqlite'}?mode=ro", uri=True)
    try:
        out = {}
        for aid, h in hashes.items():
            row = conn.execute(
                "SELECT segment, pool, slot, shape FROM arrays WHERE hash = ? AND kind = 'data'",
                (h,),
            ).fetchone()
            if row is None or row[3].count(",") > 0:
                raise SystemExit(f"parquet floor: array {h.hex()} is not a stored 1-D array")
            out[aid] = (row[0], row[1], int(row[2]))
        return out
    finally:
        conn.close()


def prepare(store: str, src: str) -> tuple[Callable[[str], None], int]:
    """Everything the floor learns before the clock starts; returns ``(write, rows)``."""
    import pyarrow.parquet as pq

    src_dir, store_dir = Path(src), Path(store)
    values: list[_Values] = []
    others: list[tuple[str, Any]] = []
    for f in sorted(src_dir.iterdir()):
        role = f.name.rsplit(".", 2)[-2]
        if role == "values":
            values.append(_values_of(pq, f))
        elif role in ROLES:
            others.append((f.name, pq.read_table(f)))
    for v in values:
        arrays = pq.read_table(src_dir / v.name.replace(".values.", ".arrays."))
        hashes = dict(
            zip(
                arrays.column("id").to_pylist(),
                (bytes.fromhex(h) for h in arrays.column("data_hash").to_pylist()),
                strict=True,
            )
        )
        places = _places(store_dir, hashes)
        v.places = [places[int(i)] for i in v.ids]
    rows = int(sum(int(v.counts.sum()) for v in values))

    def write(out: str) -> None:
        _write(pq, store_dir, Path(out), values, others)

    return write, rows


def _groups(counts: np.ndarray, target: int) -> list[tuple[int, int]]:
    """``(first, stop)`` array ranges of each row group: whole arrays up to ``target``
    rows, an array longer than that alone (pyarrow then splits it at the target)."""
    out, start, rows = [], 0, 0
    for k, n in enumerate(counts.tolist()):
        if k > start and rows + n > target:
            out.append((start, k))
            start, rows = k, 0
        rows += n
    if counts.size:
        out.append((start, counts.size))
    return out


def _write(
    pq: Any, store: Path, out: Path, values: list[_Values], others: list[tuple[str, Any]]
) -> None:
    """The timed part: read the arrays, build and write every table."""
    import h5py
    import pyarrow as pa

    from infrastore_sqlite.interchange.parquet.layout import ROW_GROUP_ROWS, writer_options

    out.mkdir()
    for v in values:
        # Each pool the partition reads, whole.
        pools: dict[tuple[str, str], np.ndarray] = {}
        for seg, pool in sorted({(s, p) for s, p, _ in v.places}):
            # The store holds its segments open (without HDF5 file locks): so does this.
            with h5py.File(store / "segments" / seg, "r", locking=False) as f:
                pools[(seg, pool)] = f["pools"][pool][()]
        ts_type = v.schema.field("timestamp").type
        options = writer_options(pq, pa, v.schema, "values")
        with pq.ParquetWriter(out / v.name, v.schema, **options) as writer:
            for lo, hi in _groups(v.counts, ROW_GROUP_ROWS):
                counts = v.counts[lo:hi]
                aid = np.repeat(v.ids[lo:hi], counts)
                anchors, steps = v.anchors[lo:hi], v.steps[lo:hi]
                n = int(counts[0])
                if (counts == n).all() and (steps == steps[0]).all():
                    offsets = np.arange(n, dtype=np.int64) * steps[0]
                    ts = (anchors[:, None] + offsets[None, :]).reshape(-1)
                else:
                    starts = np.repeat(np.cumsum(counts) - counts, counts)
                    ts = np.repeat(anchors, counts) + (np.arange(aid.size) - starts) * np.repeat(
                        steps, counts
                    )
                # One gather per run of consecutive arrays in one pool.
                pieces, k = [], lo
                while k < hi:
                    seg, pool, _ = v.places[k]
                    j = k
                    while j < hi and v.places[j][:2] == (seg, pool):
                        j += 1
                    slots = [p[2] for p in v.places[k:j]]
                    pieces.append(pools[(seg, pool)][slots].reshape(-1))
                    k = j
                vals = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
                table = pa.Table.from_arrays(
                    [pa.array(aid), pa.array(ts, type=pa.int64()).cast(ts_type), pa.array(vals)],
                    schema=v.schema,
                )
                writer.write_table(table, row_group_size=min(aid.size, ROW_GROUP_ROWS))
        del pools
    for name, table in others:
        role = name.rsplit(".", 2)[-2]
        pq.write_table(
            table,
            out / name,
            row_group_size=max(1, table.num_rows),
            **writer_options(pq, pa, table.schema, role),
        )
