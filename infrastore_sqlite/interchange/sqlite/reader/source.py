"""The SQLite reader of one partition, as the import core reads it (a
:class:`PartitionSource`): the values groups in key order, consecutive short arrays read
a run at a time by one statement.

A store of many short arrays pays more for one statement per array than for its rows,
so arrays consecutive in key order with one length and resolution are read and checked
together, wherever each one's rowid span lies (:class:`RunPlan` picks them from int64
columns, a block of entries at a time); a run that fails any check is read again one
group at a time (:mod:`.group`), which names the row at fault.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import apsw
import numpy as np

from infrastore_sqlite.errors import InvalidParameterError, Term, rehash_term
from infrastore_sqlite.interchange.importing import Group, Place, Spec
from infrastore_sqlite.interchange.importing.limits import Limits
from infrastore_sqlite.model import TimeSeriesType

from ..cells import max_cell_bytes
from .decoding import decode
from .group import GroupReader
from .lookup import ValuesLookup
from .tables import PartitionTables

# The most arrays, and rows, one run statement reads: enough to spread the statement's
# cost over short arrays, few enough that the run's cells stay a small buffer (a long
# array pays little for its own statement, and is read alone).
_RUN_ARRAYS = 256
_RUN_ROWS = 16_384
# How many entries a run plan holds as columns at once (a few int64 columns each).
_PLAN_BLOCK = 4096


class PartitionReader:
    """Reads one partition for the import core (a :class:`PartitionSource`): its arrays
    and series tables row by row, its values group by group, in key order.

    Composed of the partition's tables, the lookup that finds each group's rows and the
    group reader (:meth:`of` builds them from a connection and a partition); what the
    core asks of the tables and the lookup is passed on to them.
    """

    def __init__(self, tables: PartitionTables, lookup: ValuesLookup, group: GroupReader) -> None:
        self.tables = tables
        self.lookup = lookup
        self.group = group
        self.place: Place = tables.place
        self.where: str = tables.where
        self.rehash: Term = rehash_term(tables.where)
        self.checksum = True  # an export records every array's hash
        self.type: TimeSeriesType = tables.type
        self.conn = tables.conn

    @classmethod
    def of(
        cls, conn: apsw.Connection, place: Place, where: str, limits: Limits | None = None
    ) -> PartitionReader:
        """The reader of the partition ``place`` of the file open as ``conn``."""
        tables = PartitionTables(conn, place, where, limits)
        lookup = ValuesLookup(tables)
        return cls(tables, lookup, GroupReader(tables, lookup))

    # -- what the core asks of the tables and the lookup ---------------------------------
    def reading(self) -> contextlib.AbstractContextManager[None]:
        return self.tables.reading()

    def check_columns(self) -> None:
        self.tables.check_columns()

    def array_rows(self) -> Iterable[Sequence[Any]]:
        return self.tables.array_rows()

    def series_batches(self, columns: Sequence[str]) -> Iterable[Sequence[Sequence[Any]]]:
        return self.tables.series_batches(columns)

    def values_count(self) -> int:
        return self.tables.values_count()

    def open_values(self, arrays: Mapping[int, tuple[str, str]]) -> None:
        self.lookup.open(arrays)

    def check_unclaimed(self) -> None:
        self.lookup.check_stray_scan()

    def close_values(self) -> None:
        self.lookup.drop()

    # -- the groups, in key order --------------------------------------------------------
    def groups(
        self, wanted: Sequence[tuple[tuple[str, str], list[int], Spec | None]], dtype: str
    ) -> Iterator[Group | None]:
        # SQLite itself refuses to hand over a cell longer than its length limit, before
        # reading it from the file: a hostile cell of gigabytes then costs nothing. The
        # limit is what the widest element the series rows declare can need.
        # Never above the store's bound: the shape is the file's word, and a shape of 10⁸
        # elements would lift the limit (or overflow SQLite's C int).
        shape = self.place.cell_shape
        store_bound = self.tables.limits.max_cell_bytes
        limit = min(max_cell_bytes(shape), store_bound) if shape is not None else None
        before = self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, -1)
        plan = RunPlan(self, wanted) if self._runs_possible() else None
        try:
            ahead: _Run | None = None  # the run read that covers the groups from ahead.at
            run_from = 0  # a run that failed is read one by one, not tried again per group
            for at, (key, ids, spec) in enumerate(wanted):
                if ahead is not None and at >= ahead.end:
                    ahead = None
                if ahead is None and plan is not None and at >= run_from:
                    ahead, tried = self._fast_run(plan, at, dtype, limit, before)
                    if ahead is None:
                        run_from = at + tried
                if ahead is not None:
                    # Read with the run that starts at or before this group.
                    self.place.naming = spec
                    yield ahead.group(at, key, ids)
                    continue
                if limit is None:
                    yield self.group.read(key, ids, spec, dtype)
                    continue
                self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, limit)
                try:
                    group = self.group.read(key, ids, spec, dtype)
                except apsw.TooBigError:
                    self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, before)
                    raise self.group.oversized(key, ids, limit) from None
                finally:
                    self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, before)
                yield group
        finally:
            self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, before)

    def _runs_possible(self) -> bool:
        """Whether any run read can form: SingleTimeSeries arrays found by their tiled
        rowid spans."""
        lookup = self.lookup
        return self.type is TimeSeriesType.SingleTimeSeries and lookup.by_range and lookup.tiled

    def _fast_run(
        self, plan: RunPlan, at: int, dtype: str, limit: int | None, before: int
    ) -> tuple[_Run | None, int]:
        """The run of arrays from ``wanted[at]`` read by one statement, or None to read
        them one by one; and how many groups the run spans.

        A store of many short arrays pays more for one statement per array than for its
        rows. The arrays of a run have one length and resolution (at most ``_RUN_ROWS``
        rows in all) and each tiles its own rowid span; they need not follow each other
        in the table (the reference writes its values in series order, its arrays in
        hash order). The statement checks each row against its array's grid (anchored on
        the array's first row) as :meth:`.group.GroupReader._fast` does, and any row off
        it, a gap or a cell too long sends the run back to the one-by-one read, which
        names the row.
        """
        run = plan.run(at)
        if run is None:
            return None, 1
        los, his, firsts, n, ms = run
        count = len(los)
        if limit is not None:
            self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, limit)
        try:
            one_start = bool((firsts == firsts[0]).all())
            if one_start and bool((los[1:] == his[:-1] + 1).all()):
                # Consecutive arrays that start at one instant (series of one model
                # horizon written in key order, the common case): one range scan, each
                # row checked against the grid by its offset within its array, no join.
                cells = self.tables.column(
                    "SELECT CASE WHEN timestamp IS (?1 + ((rowid - ?2) % ?3) * ?4) "
                    f"THEN value ELSE x'00' END FROM {self.tables.V} WHERE rowid BETWEEN ?2 AND ?5",
                    (int(firsts[0]), int(los[0]), n, ms, int(his[-1])),
                )
            else:
                # Each array's span in turn, its rows checked against the grid anchored
                # on its first row (one more seek an array).
                cells = self.tables.column(
                    "SELECT CASE WHEN v.timestamp IS (h.timestamp + (v.rowid - b.value) * ?2) "
                    f"THEN v.value ELSE x'00' END FROM carray(?1) AS b CROSS JOIN {self.tables.V} AS h "
                    f"CROSS JOIN {self.tables.V} AS v WHERE h.rowid = b.value "
                    "AND v.rowid BETWEEN b.value AND b.value + ?3",
                    (apsw.carray(np.ascontiguousarray(los, dtype=np.int64)), ms, n - 1),
                )
        except apsw.TooBigError:
            return None, count
        finally:
            self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, before)
        if len(cells) != n * count:
            return None, count
        try:
            values = decode(cells, dtype, fused=True)
        except InvalidParameterError:
            return None, count
        if values is None:
            return None, count
        return _Run(at, los, firsts, n, ms, values), count


class _Run:
    """The groups of one run read, handed over one at a time (:meth:`group`)."""

    __slots__ = ("at", "end", "firsts", "los", "ms", "n", "values")

    def __init__(
        self, at: int, los: np.ndarray, firsts: np.ndarray, n: int, ms: int, values: np.ndarray
    ) -> None:
        self.at, self.end = at, at + len(los)
        self.los, self.firsts, self.n, self.ms, self.values = los, firsts, n, ms, values

    def group(self, at: int, key: tuple[str, str], ids: list[int]) -> Group:
        """The group of entry ``at`` (``key``, its one array id ``ids``)."""
        k, n = at - self.at, self.n
        start = int(self.los[k])
        return Group(
            key,
            ids,
            n,
            self.values[k * n : (k + 1) * n],
            affine=("sts", int(self.firsts[k]), self.ms),
            rowids=lambda: list(range(start, start + n)),
        )


class RunPlan:
    """Which entries of ``wanted`` a run read can take together, planned a block of
    entries at a time as int64 columns (each entry's first array id, its rowid span and
    first timestamp, its series row's resolution), never an entry at a time nor the
    whole partition at once.

    An entry can join a run when its key has one array with rows, whose first timestamp
    is an integer, named by a series row of a fixed resolution; a run is the entries from
    one such that share its length and resolution.
    """

    def __init__(
        self,
        reader: PartitionReader,
        wanted: Sequence[tuple[tuple[str, str], list[int], Spec | None]],
    ) -> None:
        self.reader = reader
        self.wanted = wanted
        # The core's entries answer as columns; any other sequence is read an entry at a
        # time, a run's worth ahead.
        columns = getattr(wanted, "run_columns", None)
        self._columns = columns if columns is not None else self._entry_columns
        self._block = _PLAN_BLOCK if columns is not None else _RUN_ARRAYS
        self._row_limit = reader.group.row_limit()
        self._start = self._stop = 0
        self._ok = self._lo = self._hi = self._t0 = self._n = self._ms = np.empty(0, np.int64)

    def _entry_columns(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        first, count, ms = [], [], []
        for k in range(start, stop):
            _key, ids, spec = self.wanted[k]
            first.append(ids[0] if ids else 0)
            count.append(len(ids))
            res = spec.res if spec is not None else None
            ms.append(res.ms if res is not None and not res.calendar else 0)
        return (np.array(first, np.int64), np.array(count, np.int64), np.array(ms, np.int64))

    def _load(self, start: int) -> None:
        """Plan the block of entries from ``start``."""
        stop = min(start + self._block, len(self.wanted))
        first, count, ms = self._columns(start, stop)
        found, lo, hi, t0, ok = self.reader.lookup.spans.columns(first)
        n = hi - lo + 1
        self._ok = ok & found & (count == 1) & (ms > 0) & (n <= self._row_limit)
        self._lo, self._hi, self._t0, self._n, self._ms = lo, hi, t0, n, ms
        self._start, self._stop = start, stop

    def run(self, at: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int] | None:
        """``(los, his, firsts, n, ms)`` of the run from entry ``at`` (two arrays or
        more), or None."""
        if not self._start <= at < self._stop:
            self._load(at)
        k = at - self._start
        if not self._ok[k]:
            return None
        n, ms = int(self._n[k]), int(self._ms[k])
        most = min(_RUN_ARRAYS, _RUN_ROWS // n)
        if at + most > self._stop and self._stop < len(self.wanted):
            self._load(at)  # the run may reach past this block: plan from here on
            k = 0
        end = min(k + most, len(self._ok))
        same = self._ok[k:end] & (self._n[k:end] == n) & (self._ms[k:end] == ms)
        count = len(same) if same.all() else int(np.argmin(same))
        if count < 2:
            return None
        taken = slice(k, k + count)
        return self._lo[taken], self._hi[taken], self._t0[taken], n, ms
