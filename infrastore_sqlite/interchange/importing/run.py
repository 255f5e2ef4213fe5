"""The import run: partition by partition, in one transaction, one per partition, or
none (a dry run), and the report's entries filled from each partition's result.

:func:`import_partition` reads, checks and builds one partition's series
(:mod:`.specs`, :mod:`.building`) and files them (:mod:`.batches`); :func:`run_import`
runs it over every partition a container found.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np

from ...core.gcpause import gc_paused
from ...errors import InvalidParameterError, TimeSeriesError
from ...store.conflicts import OUTCOMES
from .batches import Filing, Settle
from .building import build_grids
from .keys import ArrayKeys, IdValues
from .options import Context
from .places import TEXT_HINT, PartitionSource, Place, key_text
from .report import ImportReport, PartitionResult
from .specs import Spec, SpecColumns, read_columns

#: How far ahead of the core the entries a reader asks for are kept made (a SQLite run
#: reads at most 256 arrays ahead).
_MADE_AHEAD = 1024
_ITER_BLOCK = 1024  # entries whose columns iteration takes to lists at once


class _Wanted(Sequence[tuple[tuple[str, str], list[int], Spec | None]]):
    """What a reader is asked for (:meth:`PartitionSource.groups`): one entry
    ``(key, array ids, first series row naming it)`` per array key in key order, made
    when read from a few int64 columns rather than held as a tuple, a list and a dict
    entry per key (a partition may hold millions of arrays).

    ``packed`` holds the partition's series rows; :meth:`take_specs` makes a key's Specs
    for the core, after which the entries up to it name none (a reader only looks ahead).
    """

    def __init__(self, arrays: Mapping[int, tuple[str, str]], packed: SpecColumns) -> None:
        self._arrays = arrays
        self._packed = packed
        if isinstance(arrays, ArrayKeys):
            ids, cuts = arrays.key_columns()
        else:
            ids, cuts = _key_order(arrays)
        # Array ids in (key, id) order, and where each key's ids start among them.
        self._ids = np.asarray(ids, dtype=np.int64)
        self._cuts: np.ndarray | range = np.asarray(cuts, dtype=np.int64)
        del ids, cuts
        # Each series' key number, from its array id; then where each key's series start
        # and end in (key, id) order.
        by_key = self._ids
        number = np.repeat(np.arange(len(self._cuts) - 1), np.diff(self._cuts))
        by_id = np.argsort(by_key, kind="stable")
        sorted_ids, numbers = by_key[by_id], number[by_id]
        del number, by_id  # (only the two columns a search needs stay, to the sort)

        def entry_of(aids: np.ndarray) -> np.ndarray:
            # Every series' array id is one of ``arrays`` (SeriesRows refused any other).
            return numbers[np.searchsorted(sorted_ids, aids)]

        entries = packed.sort(entry_of)
        # Where each key's series start in (key, id) order, and (last) their count: key
        # ``k``'s series are ``_lo[k]`` to ``_lo[k + 1]`` (the keys are whole numbers, so
        # where k + 1 starts is where k ends; one column, not two).
        self._lo = _counted(np.searchsorted(entries, np.arange(len(self._cuts)), side="left"))
        del entries
        # A key of one array (every array distinct, the common case) is cut at its own
        # position: then no column is held for the cuts.
        self._cuts = _counted(self._cuts)
        self._done = 0  # entries before this one have been handed to the core
        #: Entries made ahead of the core (key, first Spec), by position.
        self._made: dict[int, tuple[tuple[str, str], Spec | None]] = {}
        self._by_part: np.ndarray | None = None  # _part_ms, once run_columns is asked

    def __len__(self) -> int:
        return len(self._cuts) - 1

    def key(self, at: int) -> tuple[str, str]:
        """The array key of entry ``at``."""
        return self._arrays[int(self._ids[self._cuts[at]])]

    def _entry(self, at: int) -> tuple[tuple[str, str], list[int], Spec | None]:
        made = self._made.get(at)
        if made is None:
            key = self.key(at)
            lo, hi = int(self._lo[at]), int(self._lo[at + 1])
            first = self._packed.spec(lo, key) if lo < hi and at >= self._done else None
            made = (key, first)
            if at >= self._done and at - self._done < _MADE_AHEAD:
                # A reader looks a run ahead (its entries are asked for again, and the
                # group's Specs start with this one): made once.
                self._made[at] = made
        key, first = made
        return key, self._ids[self._cuts[at] : self._cuts[at + 1]].tolist(), first

    @overload
    def __getitem__(self, at: int) -> tuple[tuple[str, str], list[int], Spec | None]: ...

    @overload
    def __getitem__(self, at: slice) -> list[tuple[tuple[str, str], list[int], Spec | None]]: ...

    def __getitem__(self, at: int | slice) -> Any:
        if isinstance(at, slice):
            return [self._entry(i) for i in range(*at.indices(len(self)))]
        if not -len(self) <= at < len(self):
            raise IndexError(at)
        return self._entry(at % len(self))

    def __iter__(self) -> Iterator[tuple[tuple[str, str], list[int], Spec | None]]:
        # A block of entries' columns taken to Python lists at once (their keys, ids and
        # series spans), each entry then made as it is asked for (a Spec is made only
        # for an entry the core has not passed: :meth:`take` moves that mark as the
        # reader goes). An entry made from numpy scalars one at a time cost ~4 µs.
        for start in range(0, len(self), _ITER_BLOCK):
            yield from self._block(start, min(start + _ITER_BLOCK, len(self)))

    def _block(
        self, start: int, stop: int
    ) -> Iterator[tuple[tuple[str, str], list[int], Spec | None]]:
        """Entries ``start`` to ``stop`` as :meth:`_entry` makes them."""
        cuts = self._cuts[start : stop + 1]
        cuts = list(cuts) if type(cuts) is range else cuts.tolist()
        base = cuts[0]
        ids = self._ids[base : cuts[-1]].tolist()
        los = self._lo[start : stop + 1]
        los = list(los) if type(los) is range else los.tolist()
        firsts = self._ids[np.asarray(cuts[:-1], dtype=np.int64)]
        arrays = self._arrays
        if isinstance(arrays, ArrayKeys):
            keys = arrays.keys_of(firsts)
        else:
            keys = [arrays[aid] for aid in firsts.tolist()]
        # The first Spec of each entry that names series and that the core has not
        # passed (iteration hands an entry over before the core takes it), made at once.
        todo = [
            k
            for k in range(stop - start)
            if los[k] < los[k + 1] and start + k >= self._done and start + k not in self._made
        ]
        made_now = dict(
            zip(
                todo,
                self._packed.first_specs([los[k] for k in todo], [keys[k] for k in todo]),
                strict=True,
            )
        )
        for k, at in enumerate(range(start, stop)):
            made = self._made.get(at)
            if made is None:
                key = keys[k]
                made = (key, made_now.get(k))
                if at >= self._done and at - self._done < _MADE_AHEAD:
                    self._made[at] = made
            yield made[0], ids[cuts[k] - base : cuts[k + 1] - base], made[1]

    def take(self, at: int) -> tuple[tuple[str, str], list[Spec]]:
        """The key of entry ``at`` and its Specs, in id order; the entries up to it are
        done (they name no series row any more)."""
        made = self._made.pop(at, None)
        key, first = made if made is not None else (self.key(at), None)
        lo, hi = int(self._lo[at]), int(self._lo[at + 1])
        self._done = at + 1
        if first is None:
            return key, self._packed.specs(lo, hi, key) if lo < hi else []
        return key, [first, *self._packed.specs(lo + 1, hi, key)] if lo + 1 < hi else [first]

    def _part_ms(self) -> np.ndarray:
        """Shared part number -> its fixed resolution in ms (0: a calendar one, or none)."""
        packed = self._packed
        by_part = np.zeros(max(packed.parts, default=-1) + 1, dtype=np.int64)
        for number, part in packed.parts.items():
            res = part[5]
            if res is not None and not res.calendar:
                by_part[number] = res.ms
        return by_part

    def _first_ms(self, entries: slice, by_part: np.ndarray) -> np.ndarray:
        """The fixed resolution (ms) of the first series row naming each of ``entries``
        (0: none names it, or its resolution is a calendar one)."""
        start, stop, _ = entries.indices(len(self))
        lo, hi = np.asarray(self._lo[start:stop]), np.asarray(self._lo[start + 1 : stop + 1])
        named = lo < hi
        ms = np.zeros(len(lo), dtype=np.int64)
        rows = self._packed.order[lo[named]]
        # The parts column as it is held (typed buffer), not copied per call.
        parts = np.frombuffer(self._packed.part, dtype=np.int32)
        ms[named] = by_part[parts[rows]]
        return ms

    def res_ms(self) -> IdValues:
        """Array id -> the fixed resolution (ms) of the first series row naming its key,
        for the first id of each key (none for a calendar resolution or none at all):
        what a reader checks a batch's grids by, as columns."""
        ms = self._first_ms(slice(None), self._part_ms())
        keep = ms != 0
        return IdValues(self._ids[np.asarray(self._cuts[:-1])][keep], ms[keep])

    def run_columns(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Entries ``start`` to ``stop`` as int64 columns, without making them: each one's
        first array id, how many ids its key spreads over, and the fixed resolution (ms) of
        the first series row naming it (0: none, or a calendar one). What a reader plans
        its run reads by, a block of entries at a time (:class:`PartitionSource`)."""
        if self._by_part is None:
            self._by_part = self._part_ms()
        cuts = np.asarray(self._cuts[start : stop + 1])
        return (
            self._ids[cuts[:-1]],
            np.diff(cuts),
            self._first_ms(slice(start, stop), self._by_part),
        )


def _counted(col: np.ndarray) -> np.ndarray | range:
    """``col`` (ascending int64), or the range it equals when it counts 0, 1, 2, ...
    (a range indexes and slices as the column does, and holds nothing per entry)."""
    n = len(col)
    if n and int(col[0]) == 0 and int(col[-1]) == n - 1 and bool((np.diff(col) == 1).all()):
        return range(n)
    return col


def _key_order(arrays: Mapping[int, tuple[str, str]]) -> tuple[list[int], list[int]]:
    """:meth:`ArrayKeys.key_order` of a dict (the arrays of ids or hashes a column
    cannot hold)."""
    # Sorted by id, then (stable) by key: the keys compared are the arrays' own tuples.
    ids = sorted(arrays)
    ids.sort(key=arrays.__getitem__)
    cuts: list[int] = []
    prev: tuple[str, str] | None = None
    for i, aid in enumerate(ids):
        key = arrays[aid]
        if key != prev:
            prev = key
            cuts.append(i)
    cuts.append(len(ids))
    return ids, cuts


def _partition_entry(t: Place) -> dict[str, Any]:
    return {
        "name": t.base,
        "values_table": t.values,
        "series_table": t.series,
        "arrays_table": t.arrays,
        "time_series_type": t.type.name,
        "status": "skipped",
        "series": [],
        "ids": [],
        "arrays": 0,
        "rows": 0,
        **dict.fromkeys(OUTCOMES, 0),
        "error": None,
    }


def _fill_entry(entry: dict[str, Any], result: PartitionResult, ids: list[int]) -> None:
    entry["series"] = result.series
    entry["ids"] = ids
    entry["arrays"] = result.arrays
    entry["rows"] = result.rows
    for outcome, count in result.counts.items():
        entry[outcome] += count
    if not result.series:  # a plain import gathers no per-series entries (ctx.report)
        return
    for s, outcome in zip(result.series, result.outcomes, strict=True):
        s["outcome"] = outcome
    for s, i in zip(result.series, ids, strict=False):
        s["id"] = i


def _run_per_partition(
    ctx: Context, sources: Sequence[PartitionSource], report: ImportReport
) -> ImportReport:
    """One transaction per partition; whatever stops the run carries the report.

    Any exception, KeyboardInterrupt included (BaseException): the partitions committed
    before it stay, and a caller that prints what is left (the CLI's Ctrl-C line, its
    error's list) finds them in ``exc.report``.
    """
    entry: dict[str, Any] | None = None
    try:
        for source, entry in zip(sources, report.partitions, strict=True):
            with ctx.store.transaction():
                result, ids = import_partition(ctx, source, write=True)
            entry["status"] = "committed"
            _fill_entry(entry, result, ids)
            entry = None  # filled: a stop from here on belongs to no partition
        ctx.finish()
    except BaseException as exc:
        if entry is not None:
            entry["status"] = "failed"
            entry["error"] = str(exc) or type(exc).__name__
        # Every exception instance takes attributes (BaseException has a __dict__).
        exc.report = report.seal()  # type: ignore[attr-defined]
        raise
    return report.seal()


def _run_dry(
    ctx: Context, sources: Sequence[PartitionSource], report: ImportReport
) -> ImportReport:
    first: TimeSeriesError | None = None
    for source, entry in zip(sources, report.partitions, strict=True):
        try:
            result, _ = import_partition(ctx, source, write=False)
        except TimeSeriesError as exc:
            entry["status"] = "failed"
            entry["error"] = str(exc)
            first = first or exc
            continue
        entry["status"] = "would_add"
        _fill_entry(entry, result, [])
    ctx.finish()
    if first is not None:
        first.report = report.seal()  # type: ignore[attr-defined]
        raise first
    return report.seal()


def run_import(
    ctx: Context,
    sources: Sequence[PartitionSource],
    report: ImportReport,
    *,
    dry_run: bool,
    per_partition: bool,
) -> ImportReport:
    """Import every partition in order: one transaction for all of them, one per
    partition (``per_partition``), or none (``dry_run``); see ``import_sqlite``.

    Returns the report, whatever the flags: the list of the ids committed, with every
    partition's entry (a plain import's entries hold no per-series detail)."""
    report.partitions = [_partition_entry(s.place) for s in sources]
    if dry_run:
        return _run_dry(ctx, sources, report)
    if per_partition:
        return _run_per_partition(ctx, sources, report)
    if ctx.on_conflict != "error":
        with ctx.store.transaction():
            for source, entry in zip(sources, report.partitions, strict=True):
                result, ids = import_partition(ctx, source, write=True)
                entry["status"] = "committed"
                _fill_entry(entry, result, ids)
        ctx.finish()
        return report.seal()
    # No per-series entries: a plain import's caller wants the ids, and gathering a dict
    # per series would cost a big import its time and memory.
    ctx.report = False
    done: list[tuple[dict[str, Any], PartitionResult, list[int]]] = []
    with ctx.store.transaction():
        for source, entry in zip(sources, report.partitions, strict=True):
            result, ids = import_partition(ctx, source, write=True)
            done.append((entry, result, ids))
    # Committed only now: the one transaction is all or nothing.
    for entry, result, ids in done:
        entry["status"] = "committed"
        _fill_entry(entry, result, ids)
    ctx.finish()
    return report.seal()


def import_partition(
    ctx: Context, source: PartitionSource, *, write: bool
) -> tuple[PartitionResult, list[int]]:
    """Read, check and build one partition's series; file them when ``write``.

    Returns what the report says of the partition and the new ids (none for a dry run).
    """
    # Several objects per series (its Spec, series object, catalog row) and no cycles
    # among them: the cyclic collector would only rescan them, ever more of them as the
    # partition goes on (as for the store's bulk add).
    with source.reading(), gc_paused():
        result, ids = _import_partition(ctx, source, write=write)
    # A list only now, the partition's columns let go: its Python ints (~36 bytes a
    # series) are never held beside them.
    return result, ids.tolist()


def _import_partition(
    ctx: Context, source: PartitionSource, *, write: bool
) -> tuple[PartitionResult, array]:
    tables = source.place
    arrays, packed = read_columns(source, ctx.opts)
    total_rows = source.values_count()
    result = PartitionResult()
    if not len(packed):
        if total_rows:
            raise InvalidParameterError(
                f"{tables.series} is empty but {tables.values} is not; {TEXT_HINT}",
                table=tables.series,
            )
        return result, array("q")
    dtype = packed.parts[packed.part[0]][1].dtype  # the element type of the first row
    wanted = _Wanted(arrays, packed)
    filing = Filing(ctx, result, write=write)
    settle = Settle(ctx, source, result, filing)
    try:
        source.open_values(arrays)
        try:
            for at, group in enumerate(source.groups(wanted, dtype)):
                # A group's Specs are made as it is read, from the packed rows: the Specs
                # of the series filed do not live to the end of the partition (a reader
                # only looks ahead of the group it is at).
                key, group_specs = wanted.take(at)
                if group is None:
                    if group_specs:
                        raise InvalidParameterError(
                            f"a series row names an array {key_text(key)} the values file does "
                            "not hold; a partition's values and series come from one export and "
                            f"must describe the same arrays ({tables.series} id "
                            f"{group_specs[0].file_id})",
                            table=tables.series,
                            key=key,
                        )
                    continue
                if not group_specs:
                    raise InvalidParameterError(
                        f"the values file holds an array {key_text(key)} that no series row "
                        "names; a partition's values and series come from one export and must "
                        f"describe the same arrays ({tables.values}, array_id "
                        f"{', '.join(map(str, group.ids))})",
                        table=tables.values,
                        key=key,
                    )
                settle.add(
                    key, group.n, group_specs, build_grids(tables, group, group_specs, ctx.opts)
                )
                del group
        except Exception:
            # The groups read before the failing one are settled first, so a refusal of
            # theirs (a checksum, a series the file holds twice) is still the one raised,
            # as when every group was settled as soon as it was read.
            settle.pending_only()
            raise
        settle.run()
        if result.rows != total_rows:  # pragma: no cover - check_claimed refuses these first
            source.check_unclaimed()
            raise InvalidParameterError(
                f"{tables.values} holds {total_rows} rows but its arrays claim {result.rows}; "
                f"{TEXT_HINT}",
                table=tables.values,
            )
        filing.flush()
    finally:
        source.close_values()
    return result, filing.ids
