"""Export to the SQLite interchange layout.

The plan (``plan.py``) decides partitions, names and keys; this module only writes them.
Values reach SQLite as buffers through apsw's ``carray`` binding: one statement per
distinct array, or per run of short arrays on one grid, with array ids and fixed-period
coordinates computed inside SQLite from the row number; irregular or calendar grids bind
their coordinates through a temporary table keyed by row number. The ``array_id`` index
is created with the table, before the rows: they arrive in array_id order (the plan
walks each partition's arrays in key order), so every index entry is an append at the
right edge of the B-tree, whose path stays in the page cache. Built afterwards instead,
the index went through SQLite's sorter, which spills to temporary files once the table
outgrows the cache and made the export slow down with size.

A worker thread reads the store and encodes the value cells (``pipeline.Prefetch``)
while this thread runs the inserts, which release the GIL, so the two overlap.

A new file of 100 M value rows or more (``WRITE_BEHIND_ROWS``, ~4 GB) goes to the disk
as it grows and leaves the page cache (``write_behind.WriteBehind``, a window behind the
inserts): such a file does not pile up in memory, whose fresh pages cost a fault each on
a virtual machine.

Atomicity: a new file is written under a temporary name beside the target
(``.<name>.partial-<pid>-<id>``) and linked into place only when complete; a link never
replaces a file, so a target that appeared meanwhile (another export) is refused, not
overwritten. A partial file of an export that was killed is removed by the next export
to the same target (its process is gone). An existing database gets one transaction,
rolled back before the call returns if anything fails.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import apsw
import numpy as np

from ...errors import (
    OTHER_PREFIX,
    OVERWRITE,
    InvalidParameterError,
    StorageError,
    TimeSeriesError,
    shown,
)
from ...model import TimeSeriesType
from ...store.arrays import describe_os_error
from ...store.segments import remove_tree, stale_work_dirs, work_dir
from ..layout import (
    VIEW_MARKER,
    VIEW_NAMES,
    Partition,
    series_columns,
    type_of_table,
    values_columns,
)
from ..options import ExportOptions, export_options
from ..pipeline import Prefetch, release_free_heap
from ..plan import (
    ExportPlan,
    ExportSummary,
    PartitionPlan,
    RowBlock,
    iter_partition_arrays,
    plan_export,
    series_records,
)
from ..write_behind import WriteBehind
from .cells import encode_json_cells, encode_scalar_cells, has_negative_zero
from .companions import (
    ExportOrigin,
    check_companions,
    provenance_ddl,
    provenance_insert,
    rebuild_companions,
    value_sql_type,
)
from .database import open_database, write_transaction
from .schema import ViewSource, arrays_ddl, index_ddl, q, series_ddl, values_ddl, view_sql

if TYPE_CHECKING:
    from ...store import Store

Progress = Callable[[int, int], None]


def export_sqlite(
    store: Store,
    path: str | os.PathLike[str],
    *,
    table_prefix: str = "",
    time_range: tuple[datetime, datetime] | None = None,
    include_derived: bool = False,
    ids: Sequence[int] | None = None,
    dry_run: bool = False,
    overwrite: bool = False,
    progress: Progress | None = None,
    provenance: Literal["name", "full"] = "name",
    options: ExportOptions | None = None,
    **filters: Any,
) -> ExportSummary:
    """Export the series the filters select into the SQLite database at ``path``.

    Beside the layout's tables and its three views it writes the typed companion views
    (``all_values_<class>_<kind>``, ``flat_<partition>``) and appends a
    row to ``infrastore_exports`` (see :mod:`.companions`); both imports ignore them.

    Parameters
    ----------
    store
        The source store.
    path
        The database; created if absent, otherwise tables are added to it.
    table_prefix
        Prepended to every table and view name (``run1_``); see the layout's rules.
    time_range
        ``(start, end)``, half-open; each series is clipped as ``read_by_ids_range`` does.
    include_derived
        Also export DeterministicSingleTimeSeries (materialized windows).
    ids
        Only the series of these catalog ids among those the filters select; an id the
        store does not hold is refused before anything is written.
    dry_run
        Plan only: return the partitions that would be written, touch nothing.
    overwrite
        Replace an existing database with this export instead of adding tables to it:
        the new file is built beside it and renamed over it only when complete, so a
        failed export leaves the old file as it was. Everything the old file held goes,
        other prefixes' tables included.
    progress
        Called as ``progress(rows_done, rows_total)`` while values are written. When it
        also has a ``phase(name)`` method, that is called as each step starts:
        ``"writing values"``, ``"writing series"``, ``"writing views"`` (the CLI's bar
        shows them; the index is filled with the rows, so it has no step of its own).
    provenance
        What the provenance row (``infrastore_exports.store``) says of the source store:
        ``"name"`` (the default) its name, the last part of its path, since the file is
        handed out; ``"full"`` its absolute path.
    options
        The selection, ``dry_run``, ``overwrite`` and ``progress`` as one
        :class:`~infrastore_sqlite.interchange.options.ExportOptions` (what the command
        line passes), instead of those keywords; giving both is refused.
    **filters
        ``list_metadata``'s keywords.

    Returns
    -------
    ExportSummary
        A list with one dict per partition: ``values_table``, ``series_table``,
        ``arrays_table``, ``time_series_type``, ``value_type``, ``time_reference``,
        ``arrays``, ``series``, ``rows``; its ``derived_left_out`` counts the derived
        series the selection matched and the export left out (``notices`` says so in
        words).

    Raises
    ------
    InvalidParameterError
        A refusal (prefix, name collision, empty series, scalar -0.0, u64 overflow, …);
        nothing was written.
    """
    if provenance not in ("name", "full"):
        raise InvalidParameterError(
            f'provenance must be "name" or "full", got {provenance!r}', key="provenance"
        )
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
    selection = opts.selection
    plan = plan_export(store, selection, table_prefix=table_prefix, progress=progress)
    target = Path(path)
    if not plan.partitions:
        return plan.summary()
    origin = ExportOrigin(
        store,
        table_prefix,
        selection.time_range,
        selection.include_derived,
        dict(selection.filters),
        provenance,
    )
    exists = target.exists()
    if exists and not overwrite:
        with _open_existing(target) as conn:
            if dry_run:
                _check_collisions(conn, plan, table_prefix, str(target))
                earlier = _existing_partitions(conn, table_prefix, str(target))
                check_companions(conn, table_prefix, earlier, plan)
            else:
                _write(conn, store, plan, origin, str(target), progress, fresh=False)
        return plan.summary()
    if exists:
        # Only a database is replaced: --overwrite pointed at another file is a mistake.
        with _open_existing(target):
            pass
    if dry_run:
        return plan.summary()
    if not target.parent.exists():
        # StorageError, as the reference raises: the file system said no, not the arguments.
        raise StorageError(
            f"cannot create {target}: the directory {target.parent} does not exist",
            table=str(target),
        )
    for stale in stale_work_dirs(target.parent, target.name, "partial"):
        remove_tree(stale)
    tmp = work_dir(target.parent, target.name, "partial")
    try:
        conn = _create(tmp, target)
        try:
            # A fresh file is only renamed into place when complete, so it needs no
            # rollback journal; dropping it is what makes the export fast.
            # The page size follows the biggest planned values table (see
            # _page_size); the cache bounds memory.
            for pragma in (
                f"page_size={_page_size(max(pp.rows for pp in plan.partitions))}",
                "journal_mode=OFF",
                "synchronous=OFF",
                f"cache_size={_CACHE_KIB}",
            ):
                # One statement each: a pragma that answers with a row (journal_mode)
                # would otherwise leave the statements after it unrun.
                conn.execute(f"PRAGMA {pragma}").fetchall()
            # A file of WRITE_BEHIND_ROWS or more leaves the page cache as it grows (see
            # ``write_behind.py``); a smaller one stays there for the next reader.
            behind = WriteBehind(tmp) if plan.total_rows >= WRITE_BEHIND_ROWS else None
            try:
                _write(conn, store, plan, origin, str(target), progress, fresh=True,
                       behind=behind)  # fmt: skip
            finally:
                if behind is not None:
                    behind.close()
            conn.execute("PRAGMA journal_mode=DELETE")
        finally:
            conn.close()
        if overwrite:
            os.replace(tmp, target)  # asked for: the complete file takes the name
        else:
            _link_into_place(tmp, target)
    finally:
        for leftover in (tmp, Path(str(tmp) + "-journal")):
            leftover.unlink(missing_ok=True)
    return plan.summary()


def _link_into_place(tmp: Path, target: Path) -> None:
    """Give the finished file its name without replacing anything that is there now."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise InvalidParameterError(
            f"{target} appeared while this export ran (another process wrote it); nothing "
            "was overwritten and this export was dropped. Export again to add to that "
            "database, or pick another path"
        ) from None
    except OSError:
        # A file system without hard links: the same check, with a short window.
        if target.exists():
            raise InvalidParameterError(
                f"{target} appeared while this export ran (another process wrote it); "
                "nothing was overwritten. Export again to add to it, or pick another path"
            ) from None
        os.rename(tmp, target)


def _page_size(largest_partition_rows: int) -> int:
    """Page size for a new file whose biggest values table has this many rows.

    Small pages keep a file compact: every table and index ends in a part-filled page,
    and interior pages are mostly empty on small tables. Big pages made the index build
    of one very large values table much cheaper when the sorter built it after the rows
    (now it fills with them: 8 KiB and 32 KiB measured the same within this machine's
    noise on one table of 88 M rows, so the big pages stayed). Measured on bench/scenarios.py (bytes
    per row against the reference's 4 KiB file, and time): 8 KiB is the most compact on
    every store and costs nothing measurable while each values table stays below about
    2 M rows (e.g. 10 tables of up to 0.7 M rows, 2.4 M in all: 47.74 B/row at 8 KiB,
    47.88 at 32 KiB, reference 47.85; time within 3 %); one table of 4.4 M rows builds
    its index about 30 % faster at 32 KiB, still at or under the reference's bytes.
    """
    return 8192 if largest_partition_rows < 2_000_000 else 32768


# The export file's page cache (negative: KiB). The rows and their index entries are both
# appended, so only the right edge of each B-tree is hot: 1 MiB to 64 MiB measured the
# same (within noise) on 8.8 M and 88 M rows, and a big cache costs its size in memory.
_CACHE_KIB = -4096


# ---------------------------------------------------------------------- connections
def _connect(path: Path, *, create: bool) -> apsw.Connection:
    return open_database(
        path,
        create=create,
        not_a_db_hint="export into a new file or an existing database",
        views=True,
    )


def _create(tmp: Path, target: Path) -> apsw.Connection:
    """The new file, built under its temporary name; a refusal names the path the caller
    gave, not the hidden one beside it."""
    try:
        return _connect(tmp, create=True)
    except TimeSeriesError as exc:
        reason = str(exc).replace(str(tmp), str(target))
        raise InvalidParameterError(
            f"cannot create {target} ({reason}); nothing was written. Export to a path in a "
            "directory you can write to",
            key=str(target),
        ) from None


@contextlib.contextmanager
def _open_existing(path: Path):
    conn = _connect(path, create=False)
    try:
        yield conn
    finally:
        conn.close()


# ---------------------------------------------------------------------- checks
def _existing_names(conn: apsw.Connection) -> dict[str, tuple[str, str | None]]:
    out = {}
    for name, kind, sql in conn.execute("SELECT name, type, sql FROM sqlite_master"):
        out[name.lower()] = (kind, sql)
    return out


def _is_our_view(entry: tuple[str, str | None] | None) -> bool:
    return entry is not None and entry[0] == "view" and VIEW_MARKER in (entry[1] or "")


def _check_collisions(conn: apsw.Connection, plan: ExportPlan, prefix: str, where: str) -> None:
    existing = _existing_names(conn)
    hits = [n for pp in plan.partitions for n in pp.partition.names() if n.lower() in existing]
    for view in VIEW_NAMES:
        name = prefix + view
        entry = existing.get(name.lower())
        if entry is not None and not _is_our_view(entry):
            hits.append(name)
    if hits:
        raise InvalidParameterError(
            f"the database already holds {len(hits)} of the names this export would create "
            f"({shown(hits)}); nothing was written. Three ways out:\n"
            f"  - {{overwrite}}: replace {where} with this export (built beside it, swapped in "
            "when complete; everything the file held goes);\n"
            "  - {table_prefix}: add this export beside the old tables under another "
            "prefix;\n"
            "  - export into a new file (or drop those tables first).",
            table=hits[0],
            terms={"overwrite": OVERWRITE, "table_prefix": OTHER_PREFIX},
        )


def _existing_partitions(conn: apsw.Connection, prefix: str, where: str) -> list[ViewSource]:
    """Partitions an earlier export left under ``prefix`` (the views must span them)."""
    tables = {
        name: name
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    out = []
    for name in sorted(tables):
        tst = type_of_table(name, prefix, "_values")
        if tst is None:
            continue
        base = name[len(prefix) : -len("_values")]
        for sibling in ("_series", "_arrays"):
            if f"{prefix}{base}{sibling}" not in tables:
                raise InvalidParameterError(
                    f"the database {where} holds {name} but no {prefix}{base}{sibling} beside it; "
                    "a partition's tables come from one export. Drop or complete it first.",
                    table=name,
                )
        columns = {}
        for suffix in ("_values", "_series", "_arrays"):
            cols = conn.execute(f"PRAGMA table_info({q(prefix + base + suffix)})").fetchall()
            columns[suffix] = {c[1] for c in cols}
        out.append(ViewSource(base, tst, columns))
    return out


# ---------------------------------------------------------------------- writing
def _phase(progress: Progress | None, name: str) -> None:
    """Tell a progress object that knows phases (one with a ``phase(name)`` method, as
    the CLI's bar has) which step the export is in: a plain ``(done, total)`` callable
    sees rows only, and the series rows or the views would look like a stalled bar."""
    announce = getattr(progress, "phase", None)
    if callable(announce):
        announce(name)


#: A new file of this many value rows or more (~4 GB) is written behind
#: (``write_behind.WriteBehind``) from its first page. On this project's VM the export of a
#: 7 GB file (the `year` store of 20,000 series, 175 M rows) spent a third of its CPU
#: faulting in fresh page-cache memory: 54-59 s, 20-24 s of it system CPU; written behind,
#: 36-37 s, system CPU 3.4-4.0 s (from 4 GiB on only: 39-42 s). A smaller file stays
#: cached for whoever reads it next: written behind, the 2.2 GB file of 300,000 small
#: series (50 M rows) was imported right after in 34.5 s from the disk, against 23.3 s
#: from the cache.
WRITE_BEHIND_ROWS = 100_000_000


def _advance(behind: WriteBehind, where: str) -> None:
    """``behind.advance()``; a write error the disk reports there (full, failing) is the
    export's, naming the file."""
    try:
        behind.advance()
    except OSError as exc:
        raise StorageError(
            f"writing {where} failed: {describe_os_error(exc)}; nothing was written",
            table=where,
        ) from exc


def _write(
    conn: apsw.Connection,
    store: Store,
    plan: ExportPlan,
    origin: ExportOrigin,
    where: str,
    progress: Progress | None,
    *,
    fresh: bool,
    behind: WriteBehind | None = None,
) -> None:
    prefix = origin.prefix
    with write_transaction(conn, where, "writing"):
        if not fresh:
            _check_collisions(conn, plan, prefix, where)
        earlier = [] if fresh else _existing_partitions(conn, prefix, where)
        if not fresh:
            check_companions(conn, prefix, earlier, plan)
        _phase(progress, "writing values")
        writer = _ValueWriter(conn)
        done = 0
        total = plan.total_rows
        negative_zero: list[tuple[str, tuple[str, str]]] = []
        insert: Callable[[list[RowBlock], Any], None] | None = None
        tails: dict[int, tuple[list[tuple], list[tuple]]] = {}
        # The store is read (and values encoded) in a worker thread while this one runs
        # the inserts, which release the GIL: the two overlap instead of taking turns.
        with Prefetch(_prepared(store, plan)) as steps:
            for kind, pp, payload in steps:
                p = pp.partition
                if kind == "tail":
                    tails[id(pp)] = payload
                elif kind == "begin":
                    # Tables per partition, as they come (sqlite_master keeps the
                    # reference's order: each partition's tables, then its index).
                    _create_tables(conn, p)
                    # The index before the rows, which come in array_id order: each
                    # entry is appended (see the module docstring).
                    conn.execute(index_ddl(p))
                    insert = writer.statement(p, p.key.type)
                elif kind == "rows":
                    blocks, cells = payload
                    if cells is None:
                        negative_zero.append((p.base, blocks[0].key))
                        continue
                    if not negative_zero:
                        assert insert is not None
                        insert(blocks, cells)
                        if behind is not None:
                            _advance(behind, where)
                    done += sum(b.n for b in blocks)
                    if progress:
                        progress(done, total)
        # The arrays and series rows go in once the worker is done: executemany steps
        # SQLite once per row, and each step would wait for the GIL while the worker
        # holds it. (The worker made the rows of the smaller partitions while the last
        # statements ran; the others stream from the catalog here.)
        _phase(progress, "writing series")
        # The worker is done: what its read batches freed goes back before this thread
        # grows its own heap for the series rows (see ``release_free_heap``).
        release_free_heap()
        for pp in plan.partitions:
            arrays, series = tails.pop(id(pp), (None, None))
            _insert_arrays(conn, pp, arrays)
            _insert_series(conn, store, pp, series)
        if negative_zero:
            # Named in catalog order, whatever order the partitions and arrays came in.
            flagged = set(negative_zero)
            affected = sorted(
                (
                    s
                    for pp in plan.partitions
                    for s in pp.series
                    if (pp.partition.base, s.key) in flagged
                ),
                key=lambda s: s.row.id,
            )
            labels = [s.row.label for s in affected]
            raise InvalidParameterError(
                f"{len(labels)} of the selected series hold a scalar -0.0, which a SQLite "
                f"REAL cannot store (it reads back as +0.0): {', '.join(labels)}. Nothing "
                "was written. Narrow the selection past them.",
                series=labels,
            )
        _phase(progress, "writing views")
        _rebuild_views(conn, prefix, earlier, plan)
        conn.execute(provenance_ddl())
        conn.execute(provenance_insert(), origin.row(plan))


def _value_type(p: Partition) -> str:
    """The declared type of the values table's ``value`` column."""
    return value_sql_type(p)


def _create_tables(conn: apsw.Connection, p: Partition) -> None:
    conn.execute(arrays_ddl(p))
    conn.execute(values_ddl(p, _value_type(p)))
    conn.execute(series_ddl(p))


def _insert_arrays(
    conn: apsw.Connection, pp: PartitionPlan, rows: Iterable[tuple] | None = None
) -> None:
    conn.executemany(
        f"INSERT INTO {q(pp.partition.arrays_table)} (id, data_hash, time_axis) VALUES (?, ?, ?)",
        _array_rows(pp) if rows is None else rows,
    )


def _array_rows(pp: PartitionPlan) -> Iterator[tuple[int, str, str]]:
    for i, (h, axis) in enumerate(zip(pp.hashes, pp.axes, strict=True), 1):
        yield i, h.hex(), axis


# One step of the export, as the worker hands it over: the partition it belongs to and
# ("begin", None) or ("rows", (blocks, cells)). ``blocks`` are arrays of
# consecutive ids whose rows one statement writes (see _batches); ``cells`` their value
# cells end to end, or None for a lone block holding a scalar -0.0.
_Step = tuple[str, PartitionPlan, Any]

# Rows one statement writes when it carries several short arrays: each statement costs
# a fixed overhead and a hand-over of the GIL, so short arrays go in by the batch.
_BATCH_ROWS = 1 << 16


# Bytes of stored arrays read at a time: large, so that the slots of a batch, scattered
# over the store's pools (arrays come in key order, pools hold them in the order they
# were added), lie close enough for the store to read runs of them in one call (see
# the Parquet export's ``_READ_BATCH_BYTES``, which measured it, for the figures).
_READ_BATCH_BYTES = 16 << 20


# Series rows the worker makes ahead, in all (the rows of a partition are held until
# the values are in, so this bounds what they cost in memory).
_TAIL_SERIES = 8192


def _prepared(store: Store, plan: ExportPlan) -> Iterator[_Step]:
    """Everything the writer needs from the store, partition by partition (worker side),
    then the arrays and series rows of the smaller partitions as ``("tail", pp, (arrays,
    series))``: made while the writer runs the last statements instead of after them."""
    for pp in plan.partitions:
        yield ("begin", pp, None)
        for blocks, cells in _runs(store, plan, pp):
            yield ("rows", pp, (blocks, cells))
    budget = _TAIL_SERIES
    for pp in plan.partitions:
        if len(pp.ids) <= budget:
            budget -= len(pp.ids)
            yield ("tail", pp, (list(_array_rows(pp)), list(series_records(store, pp))))


def _runs(
    store: Store, plan: ExportPlan, pp: PartitionPlan
) -> Iterator[tuple[list[RowBlock], Any]]:
    """A partition's arrays as runs that one statement writes each, with their cells.

    A run of scalar arrays is encoded in one pass over its values joined end to end
    (per-array numpy calls are what an export of many short arrays costs).
    """
    vtype = _value_type(pp.partition)
    run: list[RowBlock] = []
    rows = 0
    # The first runs are shorter (each twice the last, up to _BATCH_ROWS): the writer
    # waits for the first one before its first statement.
    limit = _BATCH_ROWS // 8
    for block in iter_partition_arrays(store, plan, pp, batch_bytes=_READ_BATCH_BYTES):
        if run and (not _joinable(run[-1], block) or rows + block.n > limit):
            yield from _encoded_run(run, vtype)
            run, rows = [], 0
            limit = min(2 * limit, _BATCH_ROWS)
        run.append(block)
        rows += block.n
    if run:
        yield from _encoded_run(run, vtype)


def _encoded_run(run: list[RowBlock], vtype: str) -> Iterator[tuple[list[RowBlock], Any]]:
    """One run's cells. A scalar run is checked and encoded whole; one the whole pass
    refuses (a scalar -0.0, a u64 above i64 max), and any JSON run, goes array by
    array, so each refusal names its own series and the other arrays still go in."""
    if vtype != "TEXT":
        values = run[0].values if len(run) == 1 else np.concatenate([b.values for b in run])
        if not (vtype == "REAL" and has_negative_zero(values)):
            try:
                yield run, encode_scalar_cells(values)
                return
            except InvalidParameterError:
                pass  # named below, by the array that holds it
    yield from _batches(_encoded(run, vtype))


def _encoded(blocks: list[RowBlock], vtype: str) -> Iterator[tuple[RowBlock, Any]]:
    """Each block with its value cells (None: it holds a scalar -0.0)."""
    for block in blocks:
        cells: Any
        try:
            if vtype == "TEXT":
                cells = tuple(encode_json_cells(block.values))
            elif vtype == "REAL" and has_negative_zero(block.values):
                cells = None
            else:
                cells = encode_scalar_cells(block.values)
        except InvalidParameterError as exc:
            raise _name_series(exc, block) from None
        yield block, cells


def _batches(encoded: Iterator[tuple[RowBlock, Any]]) -> Iterator[tuple[list[RowBlock], Any]]:
    """Runs of consecutive encoded blocks that one statement can write.

    A run shares everything the row-number arithmetic needs (affine grid with the same
    anchor, length and lanes; same percentiles), so a row's array id and coordinates
    follow from its position alone. Blocks without an affine grid go alone.
    """
    run: list[RowBlock] = []
    cells: list[Any] = []
    rows = 0
    for block, c in encoded:
        if run and (c is None or not _joinable(run[-1], block) or rows + block.n > _BATCH_ROWS):
            yield run, _joined(cells)
            run, cells, rows = [], [], 0
        if c is None:
            yield [block], None
            continue
        run.append(block)
        cells.append(c)
        rows += block.n
    if run:
        yield run, _joined(cells)


def _joinable(last: RowBlock, block: RowBlock) -> bool:
    return (
        last.affine is not None
        and last.affine == block.affine
        and last.n == block.n
        and block.array_id == last.array_id + 1
        and (
            last.lane_values is None
            or (
                block.lane_values is not None
                and np.array_equal(last.lane_values, block.lane_values)
            )
        )
    )


def _joined(cells: list[Any]) -> Any:
    if len(cells) == 1:
        return cells[0]
    if isinstance(cells[0], tuple):
        return tuple(itertools.chain.from_iterable(cells))
    return np.concatenate(cells)


def _name_series(exc: InvalidParameterError, block: RowBlock) -> InvalidParameterError:
    names = ", ".join(block.labels)
    return InvalidParameterError(
        f"{exc.message} (series {names}). Nothing was written. Narrow the selection past them.",
        series=block.labels,
        key=exc.key,
    )


def _insert_series(
    conn: apsw.Connection, store: Store, pp: PartitionPlan, rows: Iterable[tuple] | None = None
) -> None:
    p = pp.partition
    cols = ["array_id", "id", *series_columns(p.key.type)]
    sql = (
        f"INSERT INTO {q(p.series_table)} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    )
    # The plan keeps only columns of ids and keys: the full rows stream back from the
    # catalog a chunk at a time, in catalog order, straight into executemany.
    conn.executemany(sql, series_records(store, pp, order="id") if rows is None else rows)


class _ValueWriter:
    """Inserts one block's rows with as little Python per row as possible."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        self._temp_ready: set[str] = set()

    def statement(self, p: Partition, tst: TimeSeriesType) -> Callable[[RowBlock, Any], None]:
        table = q(p.values_table)
        cols = values_columns(tst)
        col_list = ", ".join(cols)

        def insert(blocks: list[RowBlock], cells: Any) -> None:
            carr = apsw.carray(cells)
            block = blocks[0]
            if block.affine is not None:
                a = block.affine
                lanes, steps = a.lanes, a.steps
                # Row i = rowid - 1. Blocks of one length n go end to end: array k holds
                # rows k*n .. k*n + n - 1, and its own row number is r = i % n. Within an
                # array, window j = r / (steps*lanes), step h = i % (steps*lanes) / lanes
                # and lane = i % lanes (steps*lanes divides n, so i serves for r there).
                # Each operator costs per row: these are the fewest (a third of the
                # insert's time on a forecast table went to spelling them out).
                i = "(rowid - 1)"
                if len(blocks) == 1:
                    array_id, r = "?1", i
                else:
                    array_id, r = f"(?1 + {i} / {block.n})", f"({i} % {block.n})"
                if tst.is_forecast:
                    sl = steps * lanes
                    window = f"{r} / {sl}" if block.n > sl else "0"
                    step = f"{i} % {sl}" + (f" / {lanes}" if lanes > 1 else "")
                    issue = f"?2 + ({window}) * ?3"
                    exprs = [array_id, f"{issue} + ({step}) * ?4", issue]
                else:
                    exprs = [array_id, f"?2 + {r} * ?4"]
                params: list[Any] = [block.array_id, a.anchor, a.interval_ms, a.resolution_ms]
                if tst is TimeSeriesType.Probabilistic:
                    exprs.append(_lane_case(block.lane_values, lanes, params))
                elif tst is TimeSeriesType.Scenarios:
                    exprs.append(f"{i} % {lanes}")
                exprs.append("value")
                self.conn.execute(
                    f"INSERT INTO {table} ({col_list}) SELECT {', '.join(exprs)} "
                    f"FROM carray(?{len(params) + 1})",
                    [*params, carr],
                )
                return
            assert len(blocks) == 1
            joins = self._coordinates(block)
            exprs = ["?1", "c_t.x"]
            if tst.is_forecast:
                exprs.append("c_it.x")
            if tst in (TimeSeriesType.Probabilistic, TimeSeriesType.Scenarios):
                exprs.append("c_lane.x")
            exprs.append("v.value")
            self.conn.execute(
                f"INSERT INTO {table} ({col_list}) SELECT {', '.join(exprs)} "
                f"FROM carray(?2) AS v {joins}",
                (block.array_id, carr),
            )

        return insert

    def _coordinates(self, block: RowBlock) -> str:
        """Load one block's coordinates into temp tables keyed by row number.

        A carray cannot be searched by rowid, so each coordinate vector goes into its own
        temp table with an INTEGER PRIMARY KEY and the insert drives from the values.
        """
        coords = block.coordinates()
        joins = []
        for column, name in (
            ("timestamp", "t"),
            ("issue_time", "it"),
            ("percentile", "lane"),
            ("scenario", "lane"),
        ):
            if column not in coords:
                continue
            table = f"temp.export_{name}"
            if name not in self._temp_ready:
                self.conn.execute(
                    f"CREATE TEMP TABLE IF NOT EXISTS export_{name} (i INTEGER PRIMARY KEY, x)"
                )
                self._temp_ready.add(name)
            self.conn.execute(f"DELETE FROM {table}")
            dtype = np.float64 if column == "percentile" else np.int64
            self.conn.execute(
                f"INSERT INTO {table} (i, x) SELECT rowid, value FROM carray(?)",
                (apsw.carray(np.ascontiguousarray(coords[column], dtype=dtype)),),
            )
            joins.append(f"JOIN {table} AS c_{name} ON c_{name}.i = v.rowid")
        return " ".join(joins)


def _lane_case(lane_values: np.ndarray, lanes: int, params: list[Any]) -> str:
    """``CASE (rowid-1) % lanes WHEN 0 THEN ?p0 …`` with the percentiles bound."""
    parts = []
    for i in range(lanes):
        params.append(float(lane_values[i]))
        parts.append(f"WHEN {i} THEN ?{len(params)}")
    return f"CASE (rowid - 1) % {lanes} {' '.join(parts)} END"


def _rebuild_views(
    conn: apsw.Connection, prefix: str, earlier: list[ViewSource], plan: ExportPlan
) -> None:
    sources = list(earlier) + [
        ViewSource(pp.partition.base, pp.partition.key.type) for pp in plan.partitions
    ]
    existing = _existing_names(conn)
    for view in VIEW_NAMES:
        entry = existing.get((prefix + view).lower())
        if _is_our_view(entry):
            # Drop by the name SQLite holds (matching is case-insensitive).
            actual = conn.execute(
                "SELECT name FROM sqlite_master WHERE lower(name) = lower(?)", (prefix + view,)
            ).fetchone()[0]
            conn.execute(f"DROP VIEW {q(actual)}")
    for view in ("all_values", "all_series", "all_arrays"):
        conn.execute(view_sql(prefix, view, sources))
    rebuild_companions(conn, prefix, earlier, plan)
