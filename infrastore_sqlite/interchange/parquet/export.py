"""Export to the Parquet form of the interchange layout: three files per partition.

The plan (``plan.py``) decides partitions, names, keys and ids, exactly as for the
SQLite container; this module only writes them. A worker thread reads the store a
bounded batch at a time and lays each distinct array out as column vectors
(``pipeline.Prefetch``); this thread gathers whole arrays into one row group of at most
``ROW_GROUP_ROWS`` rows and hands it to pyarrow, whose encoding and compression run
without the GIL, so the two overlap. At most one row group is held (or one array, when
a single array is longer than a group).

Atomicity: every file is written under a temporary name in the target directory and
renamed into place only after every partition succeeded, each partition's values file
last; on any failure every file of the export is removed.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.elements import pad
from ...errors import IntegrityError, InvalidParameterError, StorageError
from ..pipeline import Prefetch
from ..plan import SUMMARY_KEYS as SQLITE_SUMMARY_KEYS
from ..plan import ExportPlan, PartitionPlan, RowBlock, iter_partition_arrays, plan_export
from ..plan import series_values as plan_series_values
from .layout import (
    ROLES,
    ROW_GROUP_ROWS,
    arrays_schema,
    file_names,
    require_pyarrow,
    series_column_names,
    series_schema,
    values_schema,
    writer_options,
)

if TYPE_CHECKING:
    from ...store import Store

Progress = Callable[[int, int], None]


def export_parquet(
    store: Store,
    directory: str | os.PathLike[str],
    *,
    time_range: tuple[datetime, datetime] | None = None,
    include_derived: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
    **filters: Any,
) -> list[dict[str, Any]]:
    """Export the series the filters select as Parquet files in ``directory``.

    Parameters
    ----------
    store
        The source store.
    directory
        Where the files go; created if absent (its parent must exist). The export only
        adds files: it refuses when one it would create is already there.
    time_range
        ``(start, end)``, half-open; each series is clipped as ``read_by_ids_range`` does.
    include_derived
        Also export DeterministicSingleTimeSeries (materialized windows).
    dry_run
        Plan and check for existing files only: return the partitions, write nothing.
    progress
        Called as ``progress(rows_done, rows_total)`` while values are written.
    **filters
        ``list_metadata``'s keywords.

    Returns
    -------
    list of dict
        One per partition, in key order: ``values_file``, ``series_file``,
        ``arrays_file`` (paths in ``directory``), ``time_series_type``, ``value_type``,
        ``time_reference``, ``arrays``, ``series``, ``rows``.

    Raises
    ------
    MissingDependencyError
        pyarrow is not installed (the message names the ``pip install`` command).
    InvalidParameterError
        A refusal (a file already there, empty series, a derived-type filter, a bad
        range or directory); nothing was written.
    StorageError
        Writing a file failed; nothing of the export is left.
    """
    pa, pq = require_pyarrow()
    plan = plan_export(
        store,
        time_range=time_range,
        include_derived=include_derived,
        progress=progress,
        **filters,
    )
    if not plan.partitions:
        return []
    target = Path(directory)
    _check_directory(target)
    _check_collisions(target, plan)
    summary = _summary(directory, plan)
    if dry_run:
        return summary
    created = not target.exists()
    if created:
        target.mkdir()
    token = uuid.uuid4().hex[:8]
    temps: dict[Path, Path] = {}  # final path -> temporary path, in rename order
    for pp in plan.partitions:
        names = file_names(pp.partition)
        # Values last: "the partition exists" means "its values file exists".
        for role in ("series", "arrays", "values"):
            final = target / names[role]
            temps[final] = target / f".{names[role]}.{token}.partial"
    renamed: list[Path] = []
    try:
        _write_values(pa, pq, store, plan, temps, target, progress)
        for pp in plan.partitions:
            names = file_names(pp.partition)
            _write_series(pa, pq, store, pp, temps[target / names["series"]])
            _write_arrays(pa, pq, pp, temps[target / names["arrays"]])
        # Someone may have created one of the names while we wrote: never replace it.
        _check_collisions(target, plan)
        for final, tmp in temps.items():
            os.replace(tmp, final)
            renamed.append(final)
    except BaseException:
        for path in (*temps.values(), *renamed):
            path.unlink(missing_ok=True)
        if created:
            with contextlib.suppress(OSError):
                target.rmdir()  # only if empty: never anything we did not write
        raise
    return summary


#: Keys of the per-partition result, in order: the three files, then the SQLite
#: export's keys after its three table names.
SUMMARY_KEYS = ("values_file", "series_file", "arrays_file", *SQLITE_SUMMARY_KEYS[3:])


def _summary(directory: str | os.PathLike[str], plan: ExportPlan) -> list[dict[str, Any]]:
    out = []
    for pp in plan.partitions:
        names = file_names(pp.partition)
        files = [os.path.join(os.fspath(directory), names[role]) for role in ROLES]
        shared = list(pp.summary().values())[3:]
        out.append(dict(zip(SUMMARY_KEYS, [*files, *shared], strict=True)))
    return out


# ---------------------------------------------------------------------- checks
def _check_directory(target: Path) -> None:
    if target.exists():
        if not target.is_dir():
            raise InvalidParameterError(
                f"cannot export Parquet files into {target}: it is a file, not a directory. "
                "Name a directory (it is created if absent)."
            )
    elif not target.parent.is_dir():
        raise InvalidParameterError(
            f"cannot create the directory {target}: its parent {target.parent} does not exist"
        )


def _check_collisions(target: Path, plan: ExportPlan) -> None:
    """Refuse, naming every one, files the export would create that already exist
    (compared case-insensitively, as Windows and macOS file systems do)."""
    if not target.is_dir():
        return
    existing = {name.lower(): name for name in os.listdir(target)}
    hits = [
        existing[name.lower()]
        for pp in plan.partitions
        for name in file_names(pp.partition).values()
        if name.lower() in existing
    ]
    if hits:
        raise InvalidParameterError(
            f"{target} already holds {len(hits)} of the files this export would create "
            f"({', '.join(hits)}); nothing was written. Export into another directory, "
            "or remove those files first.",
            table=hits[0],
        )


# ---------------------------------------------------------------------- values
def _write_values(
    pa: ModuleType,
    pq: ModuleType,
    store: Store,
    plan: ExportPlan,
    temps: dict[Path, Path],
    target: Path,
    progress: Progress | None,
) -> None:
    total = plan.total_rows
    done = 0
    group: _Group | None = None
    try:
        # The store is read and laid out in a worker thread while this one encodes and
        # writes, which pyarrow does without the GIL: the two overlap.
        with Prefetch(_prepared(store, plan)) as steps:
            for kind, pp, payload in steps:
                if kind == "begin":
                    path = temps[target / file_names(pp.partition)["values"]]
                    group = _Group(pa, pq, pp, path)
                elif kind == "blocks":
                    assert group is not None
                    for cols in payload:
                        done += group.add(cols)
                    if progress:
                        progress(done, total)
                else:  # "end"
                    assert group is not None
                    done += group.close()
                    group = None
                    if progress:
                        progress(done, total)
    finally:
        if group is not None:
            group.abandon()


# Rows the worker lays out before handing them over: one hand-over per short array would
# cost more in thread switches than the array itself (both sides run Python).
_HANDOFF_ROWS = 1 << 16


def _prepared(store: Store, plan: ExportPlan) -> Iterator[tuple[str, PartitionPlan, Any]]:
    """("begin", pp, None), ("blocks", pp, [columns of each array]) in key order, a run
    of up to ``_HANDOFF_ROWS`` rows at a time, then ("end", pp, None)."""
    for pp in plan.partitions:
        yield ("begin", pp, None)
        run: list[dict[str, np.ndarray]] = []
        rows = 0
        for block in iter_partition_arrays(store, plan, pp):
            run.append(_columns(block, pp))
            rows += block.n
            if rows >= _HANDOFF_ROWS:
                yield ("blocks", pp, run)
                run, rows = [], 0
        if run:
            yield ("blocks", pp, run)
        yield ("end", pp, None)


def _columns(block: RowBlock, pp: PartitionPlan) -> dict[str, Any]:
    """One array's rows as the values file's column vectors (the cells padded to the
    partition's width for composites)."""
    # array_id is one number per array here; the writer repeats it per row.
    cols: dict[str, Any] = {"array_id": (block.array_id, block.n)}
    cols.update(block.coordinates())
    values = block.values
    et = pp.partition.key.et
    if et.is_ragged and values.shape[-1] != pp.width:
        if values.shape[-1] > pp.width:
            raise IntegrityError(
                f"series {', '.join(block.labels)}: its {et.kind} rows are "
                f"{values.shape[-1]} wide, more than the {pp.width} its catalog row "
                "records; run verify on the store.",
                series=block.labels,
                key=block.key,
            )
        values = pad(et, values, pp.width)
    cols["value"] = np.ascontiguousarray(values)
    return cols


# Arrays of at least this many rows reach pyarrow as chunks of their own (no copy: the
# writer encodes a row group's chunks as one column chunk); shorter ones are copied end
# to end into one buffer, since every chunk costs the writer more than copying a short
# array does.
_CHUNK_ROWS = 4096


class _Group:
    """One values file: whole arrays gathered into row groups of up to ROW_GROUP_ROWS.

    A group is a list of segments, each a set of column vectors: a long array's own, or
    a buffer the short arrays are copied into as they arrive (so their per-array
    vectors are dropped at once and the group is held once, not twice). ``array_id``
    is kept as (id, rows) pairs and repeated when the group is written.
    """

    def __init__(self, pa: ModuleType, pq: ModuleType, pp: PartitionPlan, path: Path) -> None:
        key = pp.partition.key
        self.pa = pa
        self.path = path
        self.schema = values_schema(pa, key, pp.width)
        self.columns = [f.name for f in self.schema][1:]
        self._reset()
        with _storage_errors(path):
            self.writer = pq.ParquetWriter(
                path, self.schema, **writer_options(pq, pa, self.schema, "values")
            )

    def _reset(self) -> None:
        self.ids: list[tuple[int, int]] = []
        self.segments: list[dict[str, np.ndarray]] = []
        self.buffer: dict[str, np.ndarray] | None = None
        self.used = 0
        self.rows = 0

    def add(self, cols: dict[str, Any]) -> int:
        """Take one array; returns the rows written to the file by doing so."""
        array_id, n = cols["array_id"]
        written = 0
        if self.rows and self.rows + n > ROW_GROUP_ROWS:
            written += self._flush()
        if n > ROW_GROUP_ROWS:
            # Longer than a group: its own groups, and the next array starts a new one.
            self.ids.append((array_id, n))
            self.segments.append({c: cols[c] for c in self.columns})
            self._write(ROW_GROUP_ROWS)
            self._reset()
            return written + n
        self.ids.append((array_id, n))
        if n >= _CHUNK_ROWS:
            self._seal()
            self.segments.append({c: cols[c] for c in self.columns})
        else:
            if self.buffer is None:
                # Room for the rest of the group; untouched pages cost no memory.
                room = ROW_GROUP_ROWS - self.rows
                self.buffer = {
                    c: np.empty((room, *cols[c].shape[1:]), dtype=cols[c].dtype)
                    for c in self.columns
                }
            for c in self.columns:
                self.buffer[c][self.used : self.used + n] = cols[c]
            self.used += n
        self.rows += n
        return written

    def _seal(self) -> None:
        if self.buffer is not None and self.used:
            self.segments.append({c: v[: self.used] for c, v in self.buffer.items()})
        self.buffer, self.used = None, 0

    def close(self) -> int:
        written = self._flush()
        with _storage_errors(self.path):
            self.writer.close()
        return written

    def abandon(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()

    def _flush(self) -> int:
        rows = self.rows
        if rows:
            self._seal()
            self._write(rows)
        self._reset()
        return rows

    def _write(self, group_rows: int) -> None:
        pa = self.pa
        ids = np.array(self.ids, dtype=np.int64)
        arrays = [_arrow_array(pa, np.repeat(ids[:, 0], ids[:, 1]), self.schema[0].type)]
        for f in list(self.schema)[1:]:
            chunks = [_arrow_array(pa, seg[f.name], f.type) for seg in self.segments]
            arrays.append(pa.chunked_array(chunks, type=f.type))
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        with _storage_errors(self.path):
            self.writer.write_table(table, row_group_size=group_rows)


def _arrow_array(pa: ModuleType, data: np.ndarray, type_: Any) -> Any:
    """A numpy column as an Arrow array of ``type_``: a primitive straight from its
    buffer, a cell shape as fixed-size lists over the row-major leaf buffer.

    Built from buffers rather than with ``pa.array``, which imports pandas on its first
    call (a third of a second, and its memory) only to ask whether this is a pandas
    object.
    """
    levels = []
    t = type_
    while pa.types.is_fixed_size_list(t):
        levels.append(t)
        t = t.value_type
    flat = data.reshape(-1)
    if pa.types.is_boolean(t):
        buffer = np.packbits(flat, bitorder="little")
    else:
        dtype = np.int64 if pa.types.is_timestamp(t) else t.to_pandas_dtype()
        buffer = np.ascontiguousarray(flat, dtype=np.dtype(dtype).newbyteorder("="))
    arr = pa.Array.from_buffers(t, flat.shape[0], [None, pa.py_buffer(buffer)])
    for level in reversed(levels):
        arr = pa.FixedSizeListArray.from_arrays(arr, type=level)
    return arr


def _python_array(pa: ModuleType, values: list[Any], type_: Any) -> Any:
    """A column of Python values (the series and arrays files) as an Arrow array."""
    if pa.types.is_string(type_):
        encoded = [v.encode() for v in values]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        if offsets[-1] < 2**31:
            offsets = offsets.astype(np.int32)
        else:
            type_ = pa.large_string()  # not reached by any real series file
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        arr = pa.Array.from_buffers(type_, len(encoded), buffers)
        return arr
    return _arrow_array(pa, np.asarray(values, dtype=np.int64), type_)


# ---------------------------------------------------------------------- series, arrays
def _write_series(
    pa: ModuleType, pq: ModuleType, store: Store, pp: PartitionPlan, path: Path
) -> None:
    key = pp.partition.key
    schema = series_schema(pa, key, pp.width)
    # The cell shape of this file, as the footer spells it (the catalog's E elsewhere).
    shape = schema.metadata[b"element_shape"].decode()
    ordered = sorted(pp.series, key=lambda s: (pp.array_ids[s.key], s.row.id))
    names = series_column_names(key.type)
    # Python values a chunk of rows at a time, then Arrow's compact columns: a big
    # selection never holds its series rows as Python objects all at once.
    batches = []
    columns: dict[str, list[Any]] = {c: [] for c in names}
    for i, values in enumerate(plan_series_values(store, pp, ordered), 1):
        values["element_shape"] = shape
        for c in names:
            columns[c].append(values[c])
        if i % _SERIES_CHUNK == 0 or i == len(ordered):
            arrays = [_python_array(pa, columns[f.name], f.type) for f in schema]
            batches.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
            columns = {c: [] for c in names}
    _write_table(pa, pq, pa.Table.from_batches(batches, schema=schema), path, "series")


# Series rows turned into Arrow columns at a time.
_SERIES_CHUNK = 4096


def _write_arrays(pa: ModuleType, pq: ModuleType, pp: PartitionPlan, path: Path) -> None:
    schema = arrays_schema(pa, pp.partition.key, pp.width)
    keyed = sorted(pp.array_ids.items(), key=lambda kv: kv[1])
    table = pa.Table.from_arrays(
        [
            _python_array(pa, [i for _, i in keyed], pa.int64()),
            _python_array(pa, [h for (h, _), _ in keyed], pa.string()),
            _python_array(pa, [axis for (_, axis), _ in keyed], pa.string()),
        ],
        schema=schema,
    )
    _write_table(pa, pq, table, path, "arrays")


def _write_table(pa: ModuleType, pq: ModuleType, table: Any, path: Path, role: str) -> None:
    """One file in one row group."""
    with _storage_errors(path):
        pq.write_table(
            table,
            path,
            row_group_size=max(1, table.num_rows),
            **writer_options(pq, pa, table.schema, role),
        )


@contextlib.contextmanager
def _storage_errors(path: Path) -> Iterator[None]:
    """pyarrow's and the OS's write errors as a StorageError naming the file."""
    import pyarrow

    try:
        yield
    except (OSError, pyarrow.ArrowException) as exc:
        final = path.name.removeprefix(".").rsplit(".", 2)[0]
        raise StorageError(
            f"writing {path.parent / final} failed: {exc}; nothing of the export was kept"
        ) from exc
