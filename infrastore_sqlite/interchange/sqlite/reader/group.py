"""One values group of the SQLite reader, read for the import core.

A contiguous group on a fixed grid is read by one statement that checks every row's
coordinates inside SQLite as it fetches the values (the fused read; the group reaches
the core vouched for, ``Group.affine``); anything else is read column by column (the
general read) and placed by the core. A cell longer than its element can need is
refused here without being read.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import apsw
import numpy as np

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.importing import Group, Spec, bad_value
from infrastore_sqlite.interchange.layout import values_columns, values_key_columns
from infrastore_sqlite.model import TimeSeriesType

from ..cells import oversized_cell
from ..schema import q
from .decoding import bad_cell, decode
from .lookup import ValuesLookup
from .tables import PartitionTables


class GroupReader:
    """One values group of a partition: the fused read on a fixed grid, or the general
    read; built from the partition's tables and the lookup that finds a group's rows."""

    def __init__(self, tables: PartitionTables, lookup: ValuesLookup) -> None:
        self.tables = tables
        self.lookup = lookup
        # The tables' members every read uses, held here rather than reached through
        # ``tables`` on each group.
        self.conn = tables.conn
        self.place = tables.place
        self.type: TimeSeriesType = tables.type
        self.limits = tables.limits
        self.V = tables.V

    def _get(self, column: str, where: str, params: tuple) -> list:
        """One column of the values rows ``where`` selects."""
        return self.tables.column(f"SELECT {column} FROM {self.V} WHERE {where}", params)

    def read(
        self,
        key: tuple[str, str],
        ids: list[int],
        spec: Spec | None,
        dtype: str,
    ) -> Group | None:
        """The rows of the array ``key`` (spread over ``ids``), or None when it has none."""
        self.place.naming = spec
        spans: list[tuple[int, tuple[int, int] | None]] = []
        for aid in ids:
            span = None
            if self.lookup.by_range:
                span = self.lookup.span(aid)
                if span is None:
                    continue  # no rows
            spans.append((aid, span))
        if not spans:
            return None
        self._bound_rows(key, spans)
        if len(spans) == 1 and spec is not None and spans[0][1] is not None:
            group = self._fast(key, spans[0][0], spans[0][1], spec, dtype)
            if group is not None:
                return group
        return self._general(key, spans, dtype)

    def row_limit(self) -> int:
        """The most rows one array may have: the bound at 8 bytes a row and column."""
        columns = 3 + len(values_key_columns(self.type))
        return max(1, self.limits.max_array_bytes // (8 * columns))

    def _bound_rows(
        self, key: tuple[str, str], spans: list[tuple[int, tuple[int, int] | None]]
    ) -> None:
        """Refuse an array whose rowid spans hold more rows than the store reads in one
        array (8 bytes a row and column read), before reading them. (Without spans, in a
        table whose rows have no rowid order to go by, the rows are counted as read.)"""
        rows = sum(hi - lo + 1 for _aid, span in spans if span is not None for lo, hi in [span])
        limit = self.row_limit()
        if rows > limit:
            where = self.place.row_text(key, [], None, series=True)
            raise self.limits.too_many_rows(f"{where}", rows, table=self.place.values, limit=limit)

    # The fused fast path: the rows of one contiguous rowid span, checked inside SQLite
    # against the grid the series row declares; a row that breaks the pattern comes back
    # as a blob, which no valid value cell is, and sends the group to the general path.
    def _fast(
        self, key: tuple[str, str], aid: int, span: tuple[int, int], spec: Spec, dtype: str
    ) -> Group | None:
        tst = self.type
        lo, hi = span
        n = hi - lo + 1
        if tst is TimeSeriesType.SingleTimeSeries:
            assert spec.res is not None
            if spec.res.calendar:
                return None
            first = self.lookup.head(aid, lo)[0]
            if type(first) is not int:
                return None
            cond = "timestamp IS (?1 + (rowid - ?2) * ?3)"
            params: tuple = (first, lo, spec.res.ms, hi, aid)
            affine: tuple = ("sts", first, spec.res.ms)
        elif tst is TimeSeriesType.Deterministic:
            assert spec.res is not None and spec.itv is not None and spec.steps is not None
            if spec.res.calendar or spec.itv.calendar:
                return None
            steps = spec.steps
            if n % steps or (not spec.itv.is_positive and n != steps):
                return None
            first = self.lookup.head(aid, lo)[1]
            if type(first) is not int:
                return None
            issue = "(?1 + ((rowid - ?2) / ?6) * ?3)"
            # The step as an offset from the (verified) issue time: fewer operations per
            # row. An overflowing difference turns REAL and far off, so it never matches.
            cond = f"issue_time IS {issue} AND timestamp - issue_time IS ((rowid - ?2) % ?6) * ?7"
            params = (first, lo, spec.itv.ms, hi, aid, steps, spec.res.ms)
            affine = ("det", first, spec.itv.ms, spec.res.ms, steps, n // steps)
        elif tst in (TimeSeriesType.Probabilistic, TimeSeriesType.Scenarios):
            found = self._fast_lanes(lo, hi, aid, spec)
            if found is None:
                return None
            cond, params, affine = found
        elif tst.is_irregular:
            return self._fast_irregular(key, aid, lo, hi, dtype)
        else:
            return None
        if not self.lookup.tiled:
            cond = f"array_id = ?5 AND {cond}"
        cells = self.tables.column(
            f"SELECT CASE WHEN {cond} THEN value ELSE x'00' END "
            f"FROM {self.V} WHERE rowid BETWEEN ?2 AND ?4",
            # ?5 (array_id) is a parameter only when the query still uses it, or when a
            # later one (?6, ?7) makes SQLite count it anyway.
            params if len(params) > 5 or not self.lookup.tiled else params[:4],
        )
        if len(cells) != n:
            return None  # a gap in the span: rows of the array are interleaved with others
        try:
            values = decode(cells, dtype, fused=True)
        except InvalidParameterError:
            return None  # the general path reads the group again and names the row
        if values is None:
            return None
        return Group(key, [aid], n, values, affine=affine, rowids=lambda: list(range(lo, hi + 1)))

    def _fast_lanes(
        self, lo: int, hi: int, aid: int, spec: Spec
    ) -> tuple[str, tuple, tuple] | None:
        """The fused check of a Probabilistic or Scenarios group written window by window,
        step by step, lane by lane (what every export writes), or None to read it whole.

        The lanes are the rows of the first (window, step); a percentile lane must be a
        finite, non-zero float, and the lanes strictly increasing, so that they are the
        sorted distinct percentiles the general path would find and compare bit for bit.
        """
        assert spec.res is not None and spec.itv is not None and spec.steps is not None
        if spec.res.calendar or spec.itv.calendar:
            return None
        n = hi - lo + 1
        steps = spec.steps
        t0, first = self.lookup.head(aid, lo)
        if type(t0) is not int or type(first) is not int:
            return None
        nxt = self.conn.execute(
            f"SELECT rowid FROM {self.V} WHERE rowid > ?1 AND rowid <= ?2 AND "
            "(timestamp IS NOT ?3 OR issue_time IS NOT ?4) ORDER BY rowid LIMIT 1",
            (lo, hi, t0, first),
        ).get
        lanes = n if nxt is None else nxt - lo
        if lanes < 1 or lanes > 512:
            return None
        block = steps * lanes
        if n % block or (not spec.itv.is_positive and n != block):
            return None
        count = n // block
        # i = rowid - ?2: window i / block, step i % block / lanes, lane i % lanes (the
        # fewest operators per row; each one costs on every row of the group).
        issue = f"(?1 + ((rowid - ?2) / {block}) * ?3)" if count > 1 else "?1"
        offset = f"((rowid - ?2) % {block} / {lanes}) * ?6"
        params: list[Any] = [first, lo, spec.itv.ms, hi, aid, spec.res.ms]
        if self.type is TimeSeriesType.Scenarios:
            lane_cond = f"scenario IS ((rowid - ?2) % {lanes})"
            lane_values = np.arange(lanes, dtype=np.int64)
        else:
            pct = self.tables.column(
                f"SELECT percentile FROM {self.V} WHERE rowid BETWEEN ? AND ?",
                (lo, lo + lanes - 1),
            )
            if len(pct) != lanes or any(
                type(p) is not float or not math.isfinite(p) or p == 0.0 for p in pct
            ):
                return None
            if any(a >= b for a, b in itertools.pairwise(pct)):
                return None
            whens = []
            for i, p in enumerate(pct):
                params.append(p)
                whens.append(f"WHEN {i} THEN ?{len(params)}")
            lane_cond = f"percentile IS (CASE (rowid - ?2) % {lanes} {' '.join(whens)} END)"
            lane_values = np.array(pct, dtype=np.float64)
        cond = f"issue_time IS {issue} AND timestamp - issue_time IS {offset} AND {lane_cond}"
        affine = ("lanes", first, spec.itv.ms, spec.res.ms, steps, count, lanes, lane_values)
        return cond, tuple(params), affine

    def _fast_irregular(
        self, key: tuple[str, str], aid: int, lo: int, hi: int, dtype: str
    ) -> Group | None:
        """A NonSequential group's contiguous span: integer timestamps and the values."""
        n = hi - lo + 1
        own = "" if self.lookup.tiled else " AND array_id = ?3"
        params = (lo, hi) if self.lookup.tiled else (lo, hi, aid)
        cells = self.tables.column(
            "SELECT CASE WHEN typeof(timestamp) = 'integer'"
            f"{own} THEN value ELSE x'00' END FROM {self.V} WHERE rowid BETWEEN ?1 AND ?2",
            params,
        )
        if len(cells) != n:
            return None
        try:
            values = decode(cells, dtype, fused=True)
        except InvalidParameterError:
            return None
        if values is None:
            return None
        ts = self.tables.column(
            f"SELECT timestamp FROM {self.V} WHERE rowid BETWEEN ? AND ?", (lo, hi)
        )
        if len(ts) != n:  # pragma: no cover - one snapshot
            return None
        group = Group(key, [aid], n, values, rowids=lambda: list(range(lo, hi + 1)))
        group.timestamp = np.fromiter(ts, dtype=np.int64, count=n)
        return group

    def _general(
        self, key: tuple[str, str], spans: list[tuple[int, tuple[int, int] | None]], dtype: str
    ) -> Group | None:
        tst = self.type
        columns = ["timestamp", *(c for c, _ in values_key_columns(tst))]
        got: dict[str, list] = {c: [] for c in [*columns, "value"]}
        wheres = []
        limit = self.row_limit()
        for aid, span in spans:
            where, params = self.lookup.where(aid, span)
            if span is None:
                # No rowid span bounded it before the read (a table without rowids, or
                # rows in no rowid order): one row past what the bound leaves is read at
                # most, and the array refused if it is there.
                room = limit - len(got["value"])
                where = f"{where} LIMIT {room + 1}"
            first = self._get("value", where, params)
            if span is None and len(first) > room:
                what = self.place.row_text(key, [], None, series=True)
                raise self.limits.too_many_rows(
                    what, limit + 1, table=self.place.values, limit=limit, at_least=True
                )
            if span is not None and 2 * len(first) < span[1] - span[0] + 1:
                # A sparse span: this partition's arrays are interleaved, so from the next
                # group on the index finds their rows faster than a range scan would.
                self.lookup.found_sparse()
            wheres.append((where, params))
            got["value"].extend(first)
            for c in columns:
                got[c].extend(self._get(c, where, params))
        n = len(got["value"])
        if n == 0:
            return None

        def rowids() -> list[int]:
            if not self.place.numbered:
                return list(range(1, n + 1))
            out: list[int] = []
            for where, params in wheres:
                out.extend(self._get("rowid", where, params))
            return out

        group = Group(key, [a for a, _ in spans], n, np.empty(0), rowids=rowids)
        try:
            # The series rows declare a scalar element: the layout's column holds numbers.
            scalar = self.place.cell_shape == ()
            group.values = decode(got["value"], dtype, scalar=scalar)
        except InvalidParameterError as exc:
            i = bad_cell(got["value"], dtype)
            raise bad_value(self.place, key, rowids(), i, exc) from None
        group.timestamp = self.place.ints(got["timestamp"], "timestamp", key, rowids, ms=True)
        if tst.is_forecast:
            group.issue = self.place.ints(got["issue_time"], "issue_time", key, rowids, ms=True)
        if tst is TimeSeriesType.Probabilistic:
            group.lane = self.place.floats(got["percentile"], "percentile", key, rowids)
        elif tst is TimeSeriesType.Scenarios:
            group.lane = self.place.ints(got["scenario"], "scenario", key, rowids, ms=False)
        return group

    def oversized(self, key: tuple[str, str], ids: list[int], limit: int) -> Exception:
        """The refusal of the first cell of the array ``key`` longer than ``limit``.

        Asked only after SQLite refused a cell. The search runs under the same limit, so
        the cell is still never read: the group's rows are walked in rowid order until
        SQLite refuses one, and that row's columns are tried one by one. (``octet_length``
        cannot tell the size without reading: a REAL column loads the cell to apply its
        affinity.)
        """
        assert self.place.cell_shape is not None
        where = self.place.row_text(key, [], None, series=True)
        marks = ", ".join("?" * len(ids))
        conn = self.conn
        before = conn.limit(apsw.SQLITE_LIMIT_LENGTH, limit)
        try:
            rowid, column = self._too_big(marks, ids)
        finally:
            conn.limit(apsw.SQLITE_LIMIT_LENGTH, before)
        if rowid is not None:
            where += f", rowid {rowid}"
        what = f"column `{column}`: the cell" if column else "a cell"
        refusal = oversized_cell(None, self.place.cell_shape, what=what)
        return InvalidParameterError(
            f"{where}, {refusal.message} (the bound follows the widest `element_shape` of "
            f"{self.place.series}; if the cell is right, that column is not)",
            table=self.place.values,
        )

    def _too_big(self, marks: str, ids: list[int]) -> tuple[int | None, str | None]:
        """``(rowid, column)`` of the first cell SQLite refuses to read (see oversized)."""
        if not self.place.numbered:
            return None, None
        conn = self.conn
        cols = ", ".join(q(c) for c in values_columns(self.type))
        base = f"FROM {self.V} WHERE array_id IN ({marks})"
        last = None
        try:
            for row in conn.execute(f"SELECT rowid, {cols} {base} ORDER BY rowid", ids):
                last = row[0]
        except apsw.TooBigError:
            pass
        after, params = ("", ids) if last is None else (" AND rowid > ?", [*ids, last])
        rowid = conn.execute(f"SELECT rowid {base}{after} ORDER BY rowid LIMIT 1", params).get
        if rowid is None:  # pragma: no cover - SQLite refused a cell of this array
            return None, None
        for column in values_columns(self.type):
            try:
                conn.execute(
                    f"SELECT {q(column)} FROM {self.V} WHERE rowid = ?", (rowid,)
                ).fetchall()
            except apsw.TooBigError:
                return rowid, column
        return rowid, None  # pragma: no cover - one of its cells was refused
