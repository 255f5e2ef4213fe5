"""The SQLite reader of one partition, as the import core reads it (a
:class:`PartitionSource`): the values groups in key order, consecutive short arrays read
a run at a time by one statement.

A store of many short arrays pays more for one statement per array than for its rows,
so consecutive arrays that tile one rowid range with one length and resolution are read
and checked together; a run that fails any check is read again one group at a time
(:mod:`.group`), which names the row at fault.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import apsw
import numpy as np

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.importing import Group, Spec
from infrastore_sqlite.model import TimeSeriesType

from ..cells import max_cell_bytes
from .decoding import _decode
from .group import GroupReader
from .tables import _column

# The most arrays, and rows, one run statement reads: enough to spread the statement's
# cost over short arrays, few enough that the run's cells stay a small buffer (a long
# array pays little for its own statement, and is read alone).
_RUN_ARRAYS = 256
_RUN_ROWS = 16_384


class _PartitionReader(GroupReader):
    """Reads one partition for the import core (a :class:`PartitionSource`): its arrays
    and series tables row by row, its values group by group, in key order."""

    def groups(
        self, wanted: Sequence[tuple[tuple[str, str], list[int], Spec | None]], dtype: str
    ) -> Iterator[Group | None]:
        # SQLite itself refuses to hand over a cell longer than its length limit, before
        # reading it from the file: a hostile cell of gigabytes then costs nothing. The
        # limit is what the widest element the series rows declare can need.
        # Never above the store's bound: the shape is the file's word, and a shape of 10⁸
        # elements would lift the limit (or overflow SQLite's C int).
        shape = self.place.cell_shape
        store_bound = self.limits.max_cell_bytes
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
                    yield self.read_group(key, ids, spec, dtype)
                    continue
                self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, limit)
                try:
                    group = self.read_group(key, ids, spec, dtype)
                except apsw.TooBigError:
                    self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, before)
                    raise self._oversized(key, ids, limit) from None
                finally:
                    self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, before)
                yield group
        finally:
            self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, before)

    def _run_member(self, item: tuple[tuple[str, str], list[int], Spec | None]) -> Any:
        """``(lo, hi, first, ms)`` of a group the run read can take (a lone SingleTimeSeries
        array in a tiled rowid span, of a fixed resolution, an integer first timestamp),
        else None."""
        _key, ids, spec = item
        if self.type is not TimeSeriesType.SingleTimeSeries or spec is None or len(ids) != 1:
            return None
        span = self._spans.get(ids[0])
        if span is None or spec.res is None or spec.res.calendar:
            return None
        first = self._heads.get(ids[0], (None, None))[0]
        if type(first) is not int:
            return None
        return span[0], span[1], first, spec.res.ms

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
        if self._mode != "range" or not self._tiled:
            return [], 1
        head = self._run_member(wanted[at])
        if head is None:
            return [], 1
        lo, hi, first, ms = head
        n = hi - lo + 1
        if n > self.row_limit():
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
                cells = _column(
                    self.conn,
                    "SELECT CASE WHEN timestamp IS (?1 + ((rowid - ?2) % ?3) * ?4) "
                    f"THEN value ELSE x'00' END FROM {self.V} WHERE rowid BETWEEN ?2 AND ?5",
                    (firsts.pop(), lo, n, ms, end),
                )
            else:
                cells = _column(
                    self.conn,
                    "SELECT CASE WHEN v.timestamp IS (h.timestamp + (v.rowid - b.value) * ?2) "
                    f"THEN v.value ELSE x'00' END FROM carray(?1) AS b CROSS JOIN {self.V} AS h "
                    f"CROSS JOIN {self.V} AS v WHERE h.rowid = b.value "
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
            values = _decode(cells, dtype, fused=True)
        except InvalidParameterError:
            return [], len(los)
        if values is None:
            return [], len(los)
        out = []
        for k, start in enumerate(los):
            key, ids, _spec = wanted[at + k]
            first = self._heads[ids[0]][0]
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
