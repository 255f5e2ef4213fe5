"""How the SQLite reader finds a values group's rows, and refuses the rows of no group.

A group's rows are found through the values table's ``array_id`` index (or one built in
TEMP when the file has none), as the rowid span of each array, with its first row's
coordinates (what the fused reads anchor on); whether the spans tile the table decides
how much each read must check. Values rows whose ``array_id`` names no array are refused
here, with a few index seeks per array.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import apsw
import numpy as np

from infrastore_sqlite.interchange.importing import stray_values_row
from infrastore_sqlite.interchange.importing.keys import SortedIds

from ..schema import q
from .tables import PartitionTables

# How many arrays' span rows are taken into numpy at once (a list of tuples while taken).
_SPAN_CHUNK = 8192


class ArraySpans:
    """Each array's rowid span and its first row's ``(timestamp, issue_time)``, as int64
    columns sorted by array id (``spans.get(aid)``: ``(lo, hi)``, None for an array
    without rows; ``spans.head(aid)``: the first row's coordinates, None when they are
    not integers, which the reader then reads again)."""

    __slots__ = ("_at", "_has", "_hi", "_i0", "_ids", "_lo", "_ok", "_t0")

    def __init__(
        self,
        ids: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
        t0: np.ndarray,
        i0: np.ndarray | None,
        has: np.ndarray,
        ok: np.ndarray,
    ) -> None:
        if len(ids) > 1 and not bool((ids[1:] >= ids[:-1]).all()):
            # (An arrays table is read in id order: no copy of the columns then.)
            order = np.argsort(ids, kind="stable")
            ids, lo, hi, t0 = ids[order], lo[order], hi[order], t0[order]
            i0 = i0[order] if i0 is not None else None
            has, ok = has[order], ok[order]
        n = len(ids)
        if n and int(ids[-1]) - int(ids[0]) == n - 1 and bool((np.diff(ids) == 1).all()):
            # An export numbers its arrays 1..n: the ids are a range, held as one (a
            # position is then a subtraction), not as a column of 8 bytes an array.
            ids = range(int(ids[0]), int(ids[0]) + n)
        self._ids: np.ndarray | range = ids
        self._lo, self._hi, self._t0, self._i0 = lo, hi, t0, i0
        self._has, self._ok = has, ok
        self._at = SortedIds(self._ids).at  # the position of an id, or -1

    @classmethod
    def collect(
        cls, rows: Iterable[Sequence[int]], *, forecast: bool, size_hint: int = 0
    ) -> ArraySpans:
        """From integer rows ``(id, has, lo, hi, ok, timestamp, issue_time)`` (``has``: the
        array has rows; ``ok``: its first row's coordinates are integers; the others 0
        where they do not apply), taken a chunk of rows at a time into int64 columns, so
        no per-array object stays and none is made per value.

        The columns are made ``size_hint`` rows long (the arrays table's count) and
        filled in place, each in its final type (flags as booleans, no issue times
        outside a forecast table): collecting chunks and concatenating them held every
        column twice at once (~112 B an array, 32 MB for 300,000). A wrong hint costs a
        copy, not a wrong result."""
        cap = max(int(size_hint), 0)
        ints = [np.empty(cap, dtype=np.int64) for _ in range(5 if forecast else 4)]
        flags = [np.empty(cap, dtype=np.bool_) for _ in range(2)]
        n = 0
        it = iter(rows)
        while chunk := list(itertools.islice(it, _SPAN_CHUNK)):
            block = np.array(chunk, dtype=np.int64).reshape(len(chunk), 7)
            del chunk
            end = n + len(block)
            if end > cap:  # more rows than the hint: grow (by half at least)
                cap = max(end, cap + cap // 2)
                ints = [np.resize(col, cap) for col in ints]
                flags = [np.resize(col, cap) for col in flags]
            # Row layout: id, has, lo, hi, ok, timestamp, issue_time.
            for col, at in zip(ints, (0, 2, 3, 5, 6), strict=False):
                col[n:end] = block[:, at]
            flags[0][n:end] = block[:, 1] != 0
            flags[1][n:end] = block[:, 4] != 0
            n = end
        if n != cap:
            ints = [col[:n].copy() for col in ints]
            flags = [col[:n].copy() for col in flags]
        ids, lo, hi, t0, *rest = ints
        return cls(ids, lo, hi, t0, rest[0] if forecast else None, flags[0], flags[1])

    def __contains__(self, aid: object) -> bool:
        return type(aid) is int and self._at(aid) >= 0

    def get(self, aid: int, default: Any = None) -> tuple[int, int] | None:
        at = self._at(aid)
        if at < 0:
            return default
        return (int(self._lo[at]), int(self._hi[at])) if self._has[at] else None

    def __getitem__(self, aid: int) -> tuple[int, int] | None:
        if self._at(aid) < 0:
            raise KeyError(aid)
        return self.get(aid)

    def head(self, aid: int) -> tuple[int, int | None] | None:
        at = self._at(aid)
        if at < 0 or not self._ok[at]:
            return None
        return int(self._t0[at]), (int(self._i0[at]) if self._i0 is not None else None)

    def columns(
        self, aids: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For each of ``aids`` at once: ``(found, lo, hi, t0, ok)``: whether it is an
        array with rows, its rowid span, its first row's timestamp, and whether that is
        an integer (with its issue time, in a forecast table); lo, hi and t0 are 0 where
        not found."""
        if not len(self._ids):
            none = np.zeros(len(aids), dtype=np.int64)
            return none.astype(bool), none, none, none, none.astype(bool)
        last = len(self._ids) - 1
        if type(self._ids) is range:
            at = np.asarray(aids, dtype=np.int64) - self._ids.start
            held = (at >= 0) & (at <= last)
            at = np.clip(at, 0, last)
        else:
            at = np.minimum(np.searchsorted(self._ids, aids), last)
            held = self._ids[at] == aids
        found = held & self._has[at]
        zero = np.int64(0)
        lo = np.where(found, self._lo[at], zero)
        hi = np.where(found, self._hi[at], zero)
        t0 = np.where(found, self._t0[at], zero)
        return found, lo, hi, t0, found & self._ok[at]

    def tiled(self) -> bool:
        """Whether the spans of the arrays that have rows overlap nowhere."""
        lo, hi = self._lo[self._has], self._hi[self._has]
        order = np.argsort(lo, kind="stable")
        lo, hi = lo[order], hi[order]
        return bool(np.all(hi[:-1] < lo[1:]))


class ValuesLookup:
    """How each values group's rows are found in one partition's values table (its
    ``array_id`` index or one built in TEMP; each array's rowid span and first row), and
    the refusal of values rows of no array.

    Built from the partition's :class:`PartitionTables`; the group reader
    (:class:`.group.GroupReader`) asks it where a group's rows are.
    """

    def __init__(self, tables: PartitionTables) -> None:
        self.tables = tables
        self._temp: str | None = None  # temp table standing in for a missing index
        # Each array's rowid span and its first row's coordinates, once found.
        self.spans = ArraySpans.collect((), forecast=tables.type.is_forecast)
        # True when the arrays' rowid spans do not overlap: every row inside a span is
        # then the array's own (check_claimed has refused rows of no array).
        self.tiled = False
        self._sparse = False  # an interleaved span was met: find rows by index from now

    @property
    def by_range(self) -> bool:
        """Whether a group's rows are read as its rowid span (else by ``array_id``): not
        in a values table without rowids, nor once a group's span proved sparse."""
        return not self._sparse and self.tables.place.numbered

    def found_sparse(self) -> None:
        """A group's span held fewer than half its own rows (the arrays interleave): the
        index finds the next groups' rows faster than a range scan would."""
        self._sparse = True

    def _has_index(self) -> bool:
        t = self.tables
        for row in t.conn.execute(f"PRAGMA index_list({t.V})"):
            info = t.conn.execute(f"PRAGMA index_info({q(row[1])})").fetchall()
            if info and info[0][2] == "array_id" and not row[4]:  # not a partial index
                return True
        return False

    def prepare(self) -> None:
        """Make sure a group's rows can be found without scanning the table."""
        t = self.tables
        if self._has_index() or not t.place.numbered:
            return
        # No index on array_id (dropped, or a rebuilt table): build one in TEMP, which
        # a read-only connection may still write.
        name = f"imp_rows_{abs(hash(t.place.values)) % 10**8}"
        t.conn.execute(
            f"DROP TABLE IF EXISTS temp.{name}; "
            f"CREATE TEMP TABLE {name} (a INTEGER, r INTEGER); "
            f"INSERT INTO temp.{name} SELECT array_id, rowid FROM {t.V}; "
            f"CREATE INDEX temp.{name}_a ON {name} (a, r)"
        )
        self._temp = name

    def drop(self) -> None:
        """Drop what :meth:`prepare` built (a TEMP table)."""
        if self._temp is not None:
            with contextlib.suppress(apsw.Error):
                self.tables.conn.execute(f"DROP TABLE IF EXISTS temp.{self._temp}")
            self._temp = None

    def open(self, arrays: Mapping[int, tuple[str, str]]) -> None:
        """Find every group's rows (an index, or one built in TEMP) and refuse values rows
        of no array."""
        self.prepare()
        self.check_claimed(arrays)
        # Every id of ``arrays`` is a row of the arrays table (read from it), so the spans
        # of that table's ids are every group's.
        self.find_spans()

    def check_claimed(self, arrays: Mapping[int, Any]) -> None:
        """Refuse a values row whose array_id is NULL or not in the arrays table.

        The distinct ids are walked through the index (one seek each), so this costs a
        few lookups per array rather than a pass over the values.
        """
        t = self.tables
        if self._temp is not None:
            table, col = f"temp.{self._temp}", "a"
        elif self._has_index():
            table, col = t.V, "array_id"
        else:
            self.check_stray_scan()
            return
        if t.conn.execute(f"SELECT 1 FROM {table} WHERE {col} IS NULL LIMIT 1").get:
            self._raise_stray(None)
        # The distinct ids in order, one index seek each, walked inside SQLite; the first
        # that is not an integer id of the arrays table (if any) comes back.
        rows = t.conn.execute(
            f"WITH RECURSIVE d(x) AS (SELECT min({col}) FROM {table} UNION ALL "
            f"SELECT (SELECT min({col}) FROM {table} WHERE {col} > d.x) FROM d "
            "WHERE d.x IS NOT NULL) "
            "SELECT x FROM d WHERE x IS NOT NULL AND (typeof(x) <> 'integer' OR "
            f"x NOT IN (SELECT id FROM {t.A} WHERE typeof(id) = 'integer')) LIMIT 1"
        ).fetchall()
        for (aid,) in rows:
            if type(aid) is not int or aid not in arrays:
                self._raise_stray(aid)
            raise AssertionError(f"array_id {aid!r} is claimed")  # pragma: no cover

    def check_stray_scan(self) -> None:
        """Refuse a values row of no array, by one pass over the values table."""
        t = self.tables
        row = t.conn.execute(
            f"SELECT array_id FROM {t.V} WHERE array_id IS NULL OR array_id NOT IN "
            f"(SELECT id FROM {t.A}) LIMIT 1"
        ).fetchone()
        if row is not None:
            self._raise_stray(row[0])

    def _raise_stray(self, aid: Any) -> None:
        t = self.tables
        rowid = None
        if t.place.numbered:
            cond = "array_id IS NULL" if aid is None else "array_id = ?"
            rowid = t.conn.execute(
                f"SELECT rowid FROM {t.V} WHERE {cond} LIMIT 1", () if aid is None else (aid,)
            ).get
        raise stray_values_row(t.place, aid, rowid)

    def find_spans(self) -> None:
        """The rowid span of every array of the arrays table (two index seeks each, all
        in one query), and whether they tile."""
        if not self.by_range:
            return
        t = self.tables
        if self._temp is not None:
            table, col, rid = f"temp.{self._temp}", "a", "r"
        else:
            table, col, rid = t.V, "array_id", "rowid"
        # One statement for every array: each correlated min/max is a single index seek,
        # and the coordinates of the first row (which the fast path anchors on) one more.
        # What comes back is held as int64 columns (a few bytes per array, not a dict
        # entry and tuples of Python ints: a partition may hold millions of arrays).
        # Every column comes back an integer (0 where it does not apply), so the rows go
        # into numpy a chunk at a time, with no test per row in Python.
        if t.type.is_forecast:
            ok = "typeof(s.timestamp) = 'integer' AND typeof(s.issue_time) = 'integer'"
            issue = "CASE WHEN typeof(s.issue_time) = 'integer' THEN s.issue_time ELSE 0 END"
        else:
            ok, issue = "typeof(s.timestamp) = 'integer'", "0"
        self.spans = ArraySpans.collect(
            t.conn.execute(
                f"SELECT x.id, x.lo IS NOT NULL, coalesce(x.lo, 0), coalesce(x.hi, 0), "
                f"x.lo IS NOT NULL AND {ok}, "
                "CASE WHEN typeof(s.timestamp) = 'integer' THEN s.timestamp ELSE 0 END, "
                f"{issue} FROM (SELECT id, "
                f"(SELECT min({rid}) FROM {table} WHERE {col} = a.id) AS lo, "
                f"(SELECT max({rid}) FROM {table} WHERE {col} = a.id) AS hi FROM {t.A} AS a "
                # LIMIT -1 (no limit) keeps the subquery a subquery: flattened into the
                # join, its min() seek ran once for each of the four places x.lo is named
                # (five seeks an array instead of two: 2,000 arrays 5.7 -> 4.3 ms).
                f"LIMIT -1) AS x LEFT JOIN {t.V} AS s ON s.rowid = x.lo"
            ),
            forecast=t.type.is_forecast,
            # (Capped: a hostile count reserves nothing; past it the columns grow.)
            size_hint=min(t.conn.execute(f"SELECT count(*) FROM {t.A}").get or 0, 1 << 24),
        )
        self.tiled = self.spans.tiled()

    def span(self, aid: int) -> tuple[int, int] | None:
        """The rowid span of the array ``aid`` (None: it has no rows), as found by
        :meth:`find_spans` or else asked now."""
        if aid in self.spans:
            return self.spans[aid]
        t = self.tables
        if self._temp is not None:
            lo = t.conn.execute(f"SELECT min(r) FROM temp.{self._temp} WHERE a = ?", (aid,)).get
            if lo is None:
                return None
            hi = t.conn.execute(f"SELECT max(r) FROM temp.{self._temp} WHERE a = ?", (aid,)).get
            return lo, hi
        lo = t.conn.execute(f"SELECT min(rowid) FROM {t.V} WHERE array_id = ?", (aid,)).get
        if lo is None:
            return None
        hi = t.conn.execute(f"SELECT max(rowid) FROM {t.V} WHERE array_id = ?", (aid,)).get
        return lo, hi

    def head(self, aid: int, lo: int) -> tuple[Any, Any]:
        """``(timestamp, issue_time)`` of the row ``lo`` (the first of the array ``aid``);
        ``issue_time`` is None in a table without one."""
        head = self.spans.head(aid)
        if head is not None:
            return head
        # Not held (a first row whose coordinates are not integers): read it again.
        t = self.tables
        issue = "issue_time" if t.type.is_forecast else "NULL"
        rows = t.conn.execute(
            f"SELECT timestamp, {issue} FROM {t.V} WHERE rowid = ?", (lo,)
        ).fetchall()
        return rows[0] if len(rows) == 1 else (None, None)

    def where(self, aid: int, span: tuple[int, int] | None) -> tuple[str, tuple]:
        """A WHERE clause selecting one array's rows, and its parameters."""
        if self.by_range and span is not None:
            return "rowid BETWEEN ? AND ? AND +array_id = ?", (span[0], span[1], aid)
        if self._temp is not None:
            return f"rowid IN (SELECT r FROM temp.{self._temp} WHERE a = ?)", (aid,)
        return "array_id = ?", (aid,)
