"""The SQLite reader of one partition, as the import core reads it (a
:class:`PartitionSource`): the values groups in key order, consecutive short arrays read
a run at a time by one statement.

A store of many short arrays pays more for one statement per array than for its rows,
so consecutive arrays that tile one rowid range with one length and resolution are read
and checked together; a run that fails any check is read again one group at a time
(:mod:`.group`), which names the row at fault.
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
        try:
            ahead: list[Group] = []
            run_from = 0  # a run that failed is read one by one, not tried again per group
            for at, (key, ids, spec) in enumerate(wanted):
                if not ahead and at >= run_from:
                    ahead, tried = self._fast_run(wanted, at, dtype, limit, before)
                    if not ahead:
                        run_from = at + tried
                if ahead:
                    # Read with the run that starts at or before this group.
                    self.place.naming = spec
                    yield ahead.pop(0)
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

    def _run_member(
        self, item: tuple[tuple[str, str], list[int], Spec | None]
    ) -> tuple[int, int, int, int] | None:
        """``(lo, hi, first, ms)`` of a group the run read can take (a lone SingleTimeSeries
        array in a tiled rowid span, of a fixed resolution, an integer first timestamp),
        else None."""
        _key, ids, spec = item
        if self.type is not TimeSeriesType.SingleTimeSeries or spec is None or len(ids) != 1:
            return None
        spans = self.lookup.spans
        span = spans.get(ids[0])
        if span is None or spec.res is None or spec.res.calendar:
            return None
        head = spans.head(ids[0])
        if head is None:
            return None
        return span[0], span[1], head[0], spec.res.ms

    def _fast_run(
        self,
        wanted: Sequence[tuple[tuple[str, str], list[int], Spec | None]],
        at: int,
        dtype: str,
        limit: int | None,
        before: int,
    ) -> tuple[list[Group], int]:
        """The groups of the run of consecutive arrays from ``wanted[at]`` read by one
        statement, or ``[]`` to read them one by one; and how many groups the run spans.

        A store of many short arrays pays more for one statement per array than for its
        rows. The arrays of a run tile one rowid range, have one length and resolution
        (at most ``_RUN_ROWS`` rows in all);
        the statement checks each row against its array's grid (anchored on the array's
        first row, one seek per array) as :meth:`_fast` does, and any row off it, a gap or
        a cell too long sends the run back to the one-by-one read, which names the row.
        """
        lookup = self.lookup
        if not lookup.by_range or not lookup.tiled:
            return [], 1
        head = self._run_member(wanted[at])
        if head is None:
            return [], 1
        lo, hi, first, ms = head
        n = hi - lo + 1
        if n > self.group.row_limit():
            return [], 1  # read alone, which refuses it by the store's bound
        los = [lo]
        firsts = {first}
        end = hi
        most = min(_RUN_ARRAYS, _RUN_ROWS // n)
        # One entry at a time, not a slice: the entries are made on demand (the import
        # core builds each one's first Spec), and a run usually ends at its second member
        # when it ends early (a reference export of 4,000 series made 97 entries per
        # series here, 0.19 s of a 0.45 s import).
        for k in range(at + 1, min(at + most, len(wanted))):
            member = self._run_member(wanted[k])
            if member is None or member[0] != end + 1 or member[1] - member[0] + 1 != n:
                break
            if member[3] != ms:
                break
            los.append(member[0])
            firsts.add(member[2])
            end = member[1]
        if len(los) < 2:
            return [], 1
        if limit is not None:
            self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, limit)
        try:
            if len(firsts) == 1:
                # Every array of the run starts at one instant (series of one model
                # horizon, the common case): one range scan, each row checked against
                # the grid by its offset within its array, no join.
                cells = self.tables.column(
                    "SELECT CASE WHEN timestamp IS (?1 + ((rowid - ?2) % ?3) * ?4) "
                    f"THEN value ELSE x'00' END FROM {self.tables.V} WHERE rowid BETWEEN ?2 AND ?5",
                    (firsts.pop(), lo, n, ms, end),
                )
            else:
                cells = self.tables.column(
                    "SELECT CASE WHEN v.timestamp IS (h.timestamp + (v.rowid - b.value) * ?2) "
                    f"THEN v.value ELSE x'00' END FROM carray(?1) AS b CROSS JOIN {self.tables.V} AS h "
                    f"CROSS JOIN {self.tables.V} AS v WHERE h.rowid = b.value "
                    "AND v.rowid BETWEEN b.value AND b.value + ?3",
                    (apsw.carray(np.array(los, dtype=np.int64)), ms, n - 1),
                )
        except apsw.TooBigError:
            return [], len(los)
        finally:
            self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, before)
        if len(cells) != n * len(los):
            return [], len(los)
        try:
            values = decode(cells, dtype, fused=True)
        except InvalidParameterError:
            return [], len(los)
        if values is None:
            return [], len(los)
        out = []
        for k, start in enumerate(los):
            key, ids, _spec = wanted[at + k]
            head = lookup.spans.head(ids[0])
            assert head is not None  # a run member's (_run_member)
            first = head[0]
            out.append(
                Group(
                    key,
                    [ids[0]],
                    n,
                    values[k * n : (k + 1) * n],
                    affine=("sts", first, ms),
                    rowids=lambda s=start: list(range(s, s + n)),
                )
            )
        return out, len(los)
