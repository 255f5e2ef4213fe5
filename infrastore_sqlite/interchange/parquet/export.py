"""Export to the Parquet form of the interchange layout: three files per partition.

The plan (``plan.py``) decides partitions, names, keys and ids, exactly as for the
SQLite container; this module only writes them. A worker thread reads the store a
bounded batch at a time (``pipeline.Prefetch``) and lays consecutive distinct arrays out
as column segments: a run of short arrays on one fixed grid gets its coordinates in bulk
(each array's anchor plus the grid's offsets, computed once), its values copied end to
end; a long array is a segment of its own. This thread cuts the segments at array
boundaries into row groups of at most ``ROW_GROUP_ROWS`` rows and hands each to an
encoder thread, where pyarrow encodes and compresses without the GIL, so the three
overlap. At most two row groups are held, one being encoded and the next (or one array,
when a single array is longer than a group). The columns themselves (a grid's key
columns unexpanded, numpy as Arrow, the series and arrays files' row groups) are ``encode.py``'s.

Atomicity (the target's publisher, ``location/``): every file is written under a temporary name in the target
directory and renamed into place only after every partition succeeded, each partition's
values file last; in object storage each file is a multipart upload, completed once its
partition's three files are encoded, and a manifest is put last. On any failure every
file of the export is removed (uploads not completed are aborted).
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.elements import pad
from ...errors import IntegrityError, StorageError
from ...store.tracing import LOG
from ..options import ExportOptions, export_options
from ..pipeline import Prefetch, release_free_heap
from ..plan import SUMMARY_KEYS as SQLITE_SUMMARY_KEYS
from ..plan import (
    ExportPlan,
    PartitionPlan,
    RowBlock,
    iter_partition_arrays,
    plan_export,
)
from ..write_behind import WriteBehind
from .encode import (
    Column,
    Repeated,
    arrays_groups,
    arrow_array,
    block_grid,
    bulk_coordinates,
    expanded,
    hex_array,  # noqa: F401 - importable here, where it was written first
    repeat_into,
    series_groups,
)
from .layout import (
    ROLES,
    ROW_GROUP_ROWS,
    TABLE_GROUP_ROWS,
    file_names,
    require_pyarrow,
    values_schema,
    writer_options,
)
from .location import Publisher, locate
from .parallel import check_jobs, write_parallel

if TYPE_CHECKING:
    from ...store import Store

Progress = Callable[[int, int], None]


def export_parquet(
    store: Store,
    directory: str | os.PathLike[str],
    *,
    time_range: tuple[datetime, datetime] | None = None,
    include_derived: bool = False,
    ids: Sequence[int] | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    jobs: int = 1,
    options: ExportOptions | None = None,
    **filters: Any,
) -> list[dict[str, Any]]:
    """Export the series the filters select as Parquet files in ``directory``.

    Parameters
    ----------
    store
        The source store.
    directory
        Where the files go: a local directory (a path or ``file://``; created if absent,
        its parent must exist) or an object-storage prefix (``s3://bucket/prefix``,
        ``gs://``, ``az://``, ``abfs://``; needs ``pip install
        'infrastore-sqlite[cloud]'``). The export adds files: it refuses when one it
        would create is already there (or, in object storage, an earlier export's
        manifest), unless ``overwrite``. Nothing appears unless everything was written:
        local files under temporary names renamed at the end, objects as multipart
        uploads completed a partition at a time and removed again on a failure, then a
        manifest (``_infrastore_manifest.json``) put last.
    time_range
        ``(start, end)``, half-open; each series is clipped as ``read_by_ids_range`` does.
    include_derived
        Also export DeterministicSingleTimeSeries (materialized windows).
    ids
        Only the series of these catalog ids among those the filters select; an id the
        store does not hold is refused before anything is written.
    dry_run
        Plan and check for existing files only: return the partitions, write nothing.
    progress
        Called as ``progress(rows_done, rows_total)`` while values are written.
    overwrite
        Replace files (objects) of the same names instead of refusing.
    storage_options
        For a URI: credentials, region, endpoint, … as for ``import_parquet``.
    jobs
        Worker processes writing partitions at once (``parallel.py``): the files are
        those of ``jobs=1``, each worker's memory bounded as one export's; a worker's
        failure fails the export and leaves nothing. ``progress`` is then called as each
        worker finishes.
    options
        The selection, ``dry_run``, ``overwrite`` and ``progress`` as one
        :class:`~infrastore_sqlite.interchange.options.ExportOptions`, instead of those
        keywords; giving both is refused.
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
    opts = export_options(
        options,
        time_range=time_range,
        include_derived=include_derived,
        ids=ids,
        dry_run=dry_run,
        overwrite=overwrite,
        progress=progress,
        **filters,
    )
    dry_run, overwrite, progress = opts.dry_run, opts.overwrite, opts.progress
    check_jobs(jobs)
    target = locate(directory, storage_options)
    plan = plan_export(store, opts.selection, progress=progress)
    if not plan.partitions:
        return []
    publisher = target.publisher(plan, overwrite=overwrite)
    publisher.check()
    summary = _summary(directory, plan)
    if dry_run:
        return summary
    if jobs > 1 and not publisher.workers_defer():
        # Workers there would make their partitions visible before the commit: one
        # writer keeps the promise that a failed export leaves nothing.
        LOG.warning(
            "--jobs %d: writing to %s with one writer, since the workers' files there "
            "would be visible before the export commits (parallel writers go to local "
            "directories and s3:// with botocore installed)",
            jobs,
            target,
        )
        jobs = 1
    publisher.begin()
    try:
        if jobs > 1 and len(plan.partitions) > 1:
            write_parallel(
                store, plan, publisher, jobs, write_files=_write_files, progress=progress
            )
        else:
            _write_files(pa, pq, store, plan, publisher, progress)
        publisher.commit()
    except BaseException:
        publisher.rollback()
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


# ---------------------------------------------------------------------- the files
def _write_files(
    pa: ModuleType,
    pq: ModuleType,
    store: Store,
    plan: ExportPlan,
    publisher: Publisher,
    progress: Progress | None,
) -> None:
    """Every partition's three files, where the publisher says (their temporary names,
    or their uploads)."""
    total = plan.total_rows
    done = 0
    group: _Group | None = None
    encoder = ThreadPoolExecutor(1, thread_name_prefix="infrastore-sqlite-parquet")
    try:
        # The store is read and laid out in a worker thread while this one encodes and
        # writes, which pyarrow does without the GIL: the two overlap. The series and
        # arrays files are made here, after the values file, a row group at a time.
        with Prefetch(_prepared(pa, store, plan)) as steps:
            for kind, pp, payload in steps:
                if kind == "begin":
                    group = _Group(
                        pa,
                        pq,
                        pp,
                        publisher.sink(pp, "values"),
                        publisher.final(pp, "values"),
                        encoder,
                        behind=publisher.write_behind(pp, "values"),
                    )
                elif kind == "segments":
                    assert group is not None
                    for seg in payload:
                        done += group.add(seg)
                    if progress:
                        progress(done, total)
                elif kind == "end":
                    assert group is not None
                    done += group.close()
                    group = None
                    publisher.finished(pp, "values")
                    # The values are written: what the worker's read batches and the
                    # encoder freed goes back before this thread makes the series and
                    # arrays files (see ``release_free_heap``).
                    release_free_heap()
                    if progress:
                        progress(done, total)
                else:  # "series" or "arrays": the file, a row group at a time
                    # Both files are made here, one after the other, a group of
                    # TABLE_GROUP_ROWS rows at a time, each group dropped once written:
                    # the export holds one group, never a file, and the groups reuse
                    # the memory the one before freed (in another thread it would come
                    # from that thread's allocator arena, growing the resident memory).
                    if kind == "series":
                        groups = series_groups(pa, store, pp, TABLE_GROUP_ROWS)
                    else:
                        groups = arrays_groups(pa, pp, TABLE_GROUP_ROWS)
                    _write_table(
                        pa, pq, groups, publisher.sink(pp, kind), publisher.final(pp, kind), kind
                    )
                    del groups
                    publisher.finished(pp, kind)
    finally:
        if group is not None:
            group.abandon()
        encoder.shutdown()


# ---------------------------------------------------------------------- values


# Rows the worker lays out before handing them over: one hand-over per short array would
# cost more in thread switches than the array itself (both sides run Python).
_HANDOFF_ROWS = 1 << 16

# Bytes of stored arrays read at a time. The plan walks arrays in key (hash) order and
# the store's pools hold them in the order they were added, so a batch's slots are
# scattered over the pools: the store reads each run of nearby slots in one call, and a
# bigger batch makes the runs longer. On 100,000 series of 168 values reading every
# array took 11.5 s of CPU in 1 MiB batches, 7.0 s in 4 MiB and 2.8 s in 16 MiB (1.9 s
# in 64 MiB, for 86 MB more peak memory); on a store added in key order it changes
# nothing. The SQLite export reads in the same batches (``writer._READ_BATCH_BYTES``).
_READ_BATCH_BYTES = 16 << 20

# Arrays of at least this many rows become segments of their own (their values reach
# pyarrow uncopied, as one chunk); shorter ones are joined into runs, their values copied
# end to end into one buffer, since every chunk costs the writer more than copying a
# short array does.
_CHUNK_ROWS = 4096


def _prepared(
    pa: ModuleType, store: Store, plan: ExportPlan
) -> Iterator[tuple[str, PartitionPlan, Any]]:
    """Per partition: ("begin", pp, None), ("segments", pp, [_Segment, ...]) in key
    order, up to about ``_HANDOFF_ROWS`` rows at a time, ("end", pp, None), then
    ("series", pp, None) and ("arrays", pp, None)."""
    for pp in plan.partitions:
        yield ("begin", pp, None)
        out: list[_Segment] = []
        rows = 0
        blocks = iter_partition_arrays(store, plan, pp, batch_bytes=_READ_BATCH_BYTES)
        for seg in _segments(blocks, pp):
            out.append(seg)
            rows += seg.rows
            if rows >= _HANDOFF_ROWS:
                yield ("segments", pp, out)
                out, rows = [], 0
        if out:
            yield ("segments", pp, out)
        del out
        yield ("end", pp, None)
        # The series and arrays files are made by the writer (see ``_write_files``).
        yield ("series", pp, None)
        yield ("arrays", pp, None)


class _Segment:
    """Consecutive arrays of one partition as the values file's column vectors.

    ``ids`` and ``counts`` give each array's id and rows, in order; ``bounds`` their
    first rows (``counts``' running sum from 0, so ``bounds[-1]`` is every row);
    ``columns`` every column but ``array_id``, which the writer repeats from ``ids``.
    """

    __slots__ = ("bounds", "columns", "counts", "ids", "rows")

    def __init__(self, ids: np.ndarray, counts: np.ndarray, columns: dict[str, Column]):
        self.ids = ids
        self.counts = counts
        self.bounds = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=self.bounds[1:])
        self.rows = int(self.bounds[-1])
        self.columns = columns


def _segments(blocks: Iterator[RowBlock], pp: PartitionPlan) -> Iterator[_Segment]:
    """The blocks of one partition as segments: runs of short arrays up to
    ``_HANDOFF_ROWS`` rows, and each long array alone."""
    cells = _cells_of(pp)
    run: list[RowBlock] = []
    rows = 0
    for block in blocks:
        n = block.n
        if n >= _CHUNK_ROWS:
            if run:
                yield _segment(run, cells)
                run, rows = [], 0
            yield _segment([block], cells)
            continue
        run.append(block)
        rows += n
        if rows >= _HANDOFF_ROWS:
            yield _segment(run, cells)
            run, rows = [], 0
    if run:
        yield _segment(run, cells)


def _segment(run: list[RowBlock], cells: Callable[[RowBlock], np.ndarray]) -> _Segment:
    """One segment of ``run``: the coordinates of each stretch of blocks on one fixed
    grid computed in bulk (anchors plus the grid's offsets), other blocks' one by one."""
    k = len(run)
    ids = np.fromiter((b.array_id for b in run), dtype=np.int64, count=k)
    counts = np.fromiter((b.values.shape[0] for b in run), dtype=np.int64, count=k)
    pieces: list[dict[str, Column]] = []
    i = 0
    while i < k:
        grid_of = block_grid(run[i])
        j = i + 1
        if grid_of is None:
            pieces.append(run[i].coordinates())
        else:
            while j < k and block_grid(run[j]) == grid_of:
                j += 1
            pieces.append(bulk_coordinates(run[i:j], grid_of))
        i = j
    if len(pieces) == 1:
        columns = pieces[0]
    else:  # grids change within the run (rare): its key columns expanded and joined
        columns = {c: np.concatenate([expanded(p[c]) for p in pieces]) for c in pieces[0]}
    values = [cells(b) for b in run]
    columns["value"] = values[0] if k == 1 else np.concatenate(values)
    return _Segment(ids, counts, columns)


def _cells_of(pp: PartitionPlan) -> Callable[[RowBlock], np.ndarray]:
    """``cells(block)``: one array's value cells as the partition's file holds them,
    padded to its width for composites."""
    et = pp.partition.key.et
    width = pp.width
    if not et.is_ragged:
        return lambda block: np.ascontiguousarray(block.values)

    def cells(block: RowBlock) -> np.ndarray:
        values = block.values
        if values.shape[-1] != width:
            if values.shape[-1] > width:
                raise IntegrityError(
                    f"series {', '.join(block.labels)}: its {et.kind} rows are "
                    f"{values.shape[-1]} wide, more than the {width} its catalog row "
                    "records; run verify on the store.",
                    series=block.labels,
                    key=block.key,
                )
            values = pad(et, values, width)
        return np.ascontiguousarray(values)

    return cells


class _Group:
    """One values file: whole arrays gathered into row groups of up to ROW_GROUP_ROWS.

    A group is a list of pieces of segments (views: a segment's arrays are copied only
    once, when the worker joins them), cut at array boundaries. ``array_id`` is kept as
    per-array ids and counts, the key columns of a grid unexpanded; both are expanded
    when the group is written.

    A complete group is written by the ``encoder`` thread (pyarrow encodes and
    compresses without the GIL) while this thread gathers the next one from the
    worker: so the worker is never kept waiting for a group's encoding. A complete group
    is queued before this thread waits for the one before it, so the encoder goes from
    one to the next without waiting for this thread. At most two groups are held: one
    encoding and one queued or gathering. Their key columns are expanded only when
    written, into buffers the file's groups share (``_buffer``).
    """

    def __init__(
        self,
        pa: ModuleType,
        pq: ModuleType,
        pp: PartitionPlan,
        sink: Any,
        where: str,
        encoder: ThreadPoolExecutor,
        *,
        behind: WriteBehind | None = None,
    ) -> None:
        key = pp.partition.key
        self.pa = pa
        #: Sends the file's written part to the disk as it grows (a local file), so the
        #: export does not fill the page cache with it (see ``write_behind.py``).
        self.behind = behind
        #: The file as it will be named once published (for messages).
        self.where = where
        self.encoder = encoder
        self.buffers: dict[str, np.ndarray] = {}  # the key columns' (see _buffer)
        self.schema = values_schema(pa, key, pp.width)
        self.pending: deque[Future[int]] = deque()  # queued groups, oldest first
        self._reset()
        with _storage_errors(where):
            self.writer = pq.ParquetWriter(
                sink, self.schema, **writer_options(pq, pa, self.schema, "values")
            )

    def _reset(self) -> None:
        self.ids: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []
        self.pieces: list[dict[str, Column]] = []
        self.rows = 0

    def add(self, seg: _Segment) -> int:
        """Take one segment; returns the rows the file has received meanwhile (those of
        the group encoded before, when this one completes the next)."""
        written = 0
        bounds = seg.bounds
        start, k = 0, seg.ids.size
        while start < k:
            room = ROW_GROUP_ROWS - self.rows
            # The most arrays from ``start`` on whose rows fit in the group.
            end = int(np.searchsorted(bounds, bounds[start] + room, side="right")) - 1
            if end > start:
                self._take(seg, start, end)
                start = end
            elif self.rows:
                written += self._flush(self.rows)  # the next array would carry it past
            else:
                # One array longer than a group: its own groups, and the next array
                # starts a new one.
                self._take(seg, start, start + 1)
                written += self._flush(ROW_GROUP_ROWS)
                start += 1
        return written

    def _take(self, seg: _Segment, start: int, end: int) -> None:
        lo, hi = int(seg.bounds[start]), int(seg.bounds[end])
        self.ids.append(seg.ids[start:end])
        self.counts.append(seg.counts[start:end])
        if lo == 0 and hi == seg.rows:
            self.pieces.append(seg.columns)
        else:
            self.pieces.append(
                {
                    c: v.arrays(start, end) if isinstance(v, Repeated) else v[lo:hi]
                    for c, v in seg.columns.items()
                }
            )
        self.rows += hi - lo

    def _flush(self, group_rows: int) -> int:
        """Queue the gathered rows for the encoder (as groups of up to ``group_rows``),
        then wait for the group before them; returns the rows that finished.

        Queued before the wait, the group starts the moment the encoder is done with the
        last one, not once this thread has woken up to hand it over (a gap of several
        milliseconds per group, the GIL being busy with the worker's reads).
        """
        if self.rows:
            job = (self.ids, self.counts, self.pieces, self.rows, group_rows)
            self.pending.append(self.encoder.submit(self._write, *job))
            self._reset()
        return self._settle(keep=1)

    def _settle(self, keep: int = 0) -> int:
        """Wait for all but the ``keep`` newest queued groups; their rows (raises what a
        write raised)."""
        written = 0
        while len(self.pending) > keep:
            written += self.pending.popleft().result()
        return written

    def close(self) -> int:
        if not self.pending and self.rows:
            # A partition of one group, the common case, is written here: nothing is
            # left to gather meanwhile, and it costs no hand-over to the encoder.
            written = self._write(self.ids, self.counts, self.pieces, self.rows, self.rows)
            self._reset()
        else:
            written = self._flush(self.rows) + self._settle()
        self.buffers.clear()  # before the series and arrays files are built
        with _storage_errors(self.where):
            self.writer.close()
        if self.behind is not None:
            self.behind.close()
        return written

    def abandon(self) -> None:
        """After a failure: wait for every queued group (their errors are the first
        one's consequences), then close the file, which is removed."""
        while self.pending:
            with contextlib.suppress(Exception):
                self.pending.popleft().result()
        with contextlib.suppress(Exception):
            self.writer.close()
        if self.behind is not None:
            self.behind.close()

    def _write(
        self,
        ids: list[np.ndarray],
        counts: list[np.ndarray],
        pieces: list[dict[str, Column]],
        rows: int,
        group_rows: int,
    ) -> int:
        """One group's columns expanded and written (in the encoder thread, but for a
        partition's last group)."""
        pa = self.pa
        aid = self._buffer("array_id", rows, np.dtype(np.int64))
        repeat_into(aid, np.concatenate(ids), np.concatenate(counts))
        arrays = [arrow_array(pa, aid, self.schema[0].type)]
        # A long array's key column on a grid shared by others (one year, hourly, from
        # one start) is one vector: its chunk is shared by all of them.
        shared: dict[tuple[int, int], np.ndarray] = {}
        for f in list(self.schema)[1:]:
            chunks, at = [], 0
            for piece in pieces:
                column = piece[f.name]
                if isinstance(column, Repeated):
                    if column.count == 1 and column.pattern.size >= _CHUNK_ROWS:
                        anchor = 0 if column.base is None else int(column.base[0])
                        key = (id(column.pattern), anchor)
                        if key not in shared:
                            shared[key] = column.expand()
                        column = shared[key]
                    else:
                        buffer = self._buffer(f.name, rows, column.pattern.dtype)
                        column = column.expand(buffer[at : at + column.rows])
                        at += column.size
                chunks.append(arrow_array(pa, column, f.type))
            arrays.append(pa.chunked_array(chunks, type=f.type))
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        with _storage_errors(self.where):
            self.writer.write_table(table, row_group_size=group_rows)
            if self.behind is not None:
                self.behind.advance()
        return rows

    def _buffer(self, column: str, rows: int, dtype: np.dtype) -> np.ndarray:
        """``rows`` of the export's buffer for ``column``, or a new array for an array
        longer than a group (not kept).

        Groups are written one at a time, so one buffer a key column serves every group
        of the file: a new one per group would be faulted in page by page each time (on
        some machines as costly as the encoding), and freed buffers of that size stay in
        the C heap, growing the export's resident memory.
        """
        if rows > ROW_GROUP_ROWS:
            return np.empty(rows, dtype=dtype)
        buffer = self.buffers.get(column)
        if buffer is None or buffer.dtype != dtype:
            buffer = self.buffers[column] = np.empty(ROW_GROUP_ROWS, dtype=dtype)
        return buffer[:rows]


def _write_table(
    pa: ModuleType, pq: ModuleType, groups: Iterable[Any], sink: Any, where: str, role: str
) -> None:
    """One file to ``sink`` (``where`` once published), a row group per table of
    ``groups`` (at least one), each written as it comes and then dropped.

    ``write_table`` with ``row_group_size`` its rows makes each table exactly one group
    (the writer never joins two calls' rows into one group)."""
    with _storage_errors(where):
        writer = None
        try:
            for table in groups:
                if writer is None:
                    options = writer_options(pq, pa, table.schema, role)
                    writer = pq.ParquetWriter(sink, table.schema, **options)
                writer.write_table(table, row_group_size=max(1, table.num_rows))
                del table
        except BaseException:
            if writer is not None:  # the file is removed: its own error is the first's
                with contextlib.suppress(Exception):
                    writer.close()
            raise
        if writer is not None:
            writer.close()


@contextlib.contextmanager
def _storage_errors(where: str) -> Iterator[None]:
    """pyarrow's and the OS's write errors as a StorageError naming the file (``where``:
    its published name)."""
    import pyarrow

    try:
        yield
    except StorageError as exc:  # an upload's, naming its URI already
        raise StorageError(
            f"{exc.template}; nothing of the export was kept", table=exc.table, terms=exc.terms
        ) from exc
    except (OSError, pyarrow.ArrowException) as exc:
        raise StorageError(
            f"writing {where} failed: {exc}; nothing of the export was kept", table=where
        ) from exc
