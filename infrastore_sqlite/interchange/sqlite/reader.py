"""Import the SQLite interchange layout back into a store: the SQLite reader.

A database holds partitions of three tables each (``<prefix><base>_values``, ``_series``
and ``_arrays``); see ``interchange/layout.py`` and the interchange description. This
module finds them and reads them for the import core (``interchange/importing.py``), which
does the checking, building, hashing and filing and words every refusal. The import is a
merge join keyed by the array key ``(data_hash, time_axis)``, never by the local ids or by
row order: the arrays table is read whole and walked in key order, and for each key its
values group is read as one object and handed to the core as numpy columns. Peak memory is
the arrays and series tables plus one group (and a bounded batch of pending writes), never
a partition.

Reading a group goes through the values table's ``array_id`` index to the group's rowid
span, then scans that span: a contiguous group (what every export writes) is one sequential
range, and for the common grids (a SingleTimeSeries or Deterministic on a fixed period) the
coordinates are verified inside SQLite in the same pass that fetches the values, so only
the value column ever crosses into Python and the group reaches the core vouched for
(``Group.affine``). Anything the fast path cannot vouch for (an edited, re-sorted or
damaged group) is read column by column, and the core places it by its coordinates.

What is SQLite's own is checked here, with the core's wording: cells of the wrong storage
class (timestamps that are not whole milliseconds, text where a number belongs), NULLs
outside ``value``, values rows of no array, missing tables and columns.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np

from ...errors import InvalidParameterError, StorageError, rehash_term
from ...model import TimeSeriesType
from ..filing import OnConflict, check_on_conflict
from ..importing import (
    Context,
    Group,
    ImportReport,
    Options,
    Place,
    Progress,
    Spec,
    bad_value,
    check_columns_present,
    derived_refused,
    missing_sibling,
    no_partitions,
    rows_as_batches,
    run_import,
    stray_values_row,
)
from ..layout import type_of_table, validate_prefix, values_columns, values_key_columns
from .cells import decode_cells, max_cell_bytes, oversized_cell
from .database import open_database
from .schema import q

if TYPE_CHECKING:
    from ...store import Store

__all__ = ["ImportReport", "discover", "import_sqlite"]


# ------------------------------------------------------------------------------ entry point
def import_sqlite(
    store: Store,
    path: str | Path,
    *,
    table_prefix: str = "",
    skip_checksum: bool = False,
    dry_run: bool = False,
    overrides: Mapping[str, Any] | None = None,
    per_partition: bool = False,
    on_conflict: OnConflict = "error",
    progress: Progress | None = None,
    diff: bool = False,
) -> list[int] | ImportReport:
    """Add every series an interchange database holds under ``table_prefix``.

    Parameters
    ----------
    store
        The store to add to.
    path
        The SQLite database (as ``export_sqlite`` wrote it, possibly edited since).
    table_prefix
        The prefix the export used; ``""`` for none.
    skip_checksum
        Waive the comparison of each array with its recorded ``data_hash`` (after values
        were edited in place). The catalog always records the recomputed hash.
    dry_run
        Read and check everything, checksums included, and write nothing; returns an
        :class:`ImportReport` with the series each partition would add.
    overrides
        The CLI's inline flags. Overrides replace a column for every series
        (``owner_id``, ``owner_type``, ``owner_category``, ``name``, ``features`` as a
        dict, ``time_reference``, and the five descriptors, where ``""`` clears one);
        assertions (``element_type``, ``element_shape``, ``resolution``, ``type``) must
        agree with the file.
    per_partition
        Commit one transaction per partition (the CLI) and return an
        :class:`ImportReport`; a failing partition leaves those before it committed, and
        the exception it raises carries the report as ``exc.report``.
    on_conflict
        What to do with a series whose identity (owner id and category, type, name,
        resolution, interval, features) the store already holds: ``"error"`` (the
        default) refuses; ``"replace"`` updates it in place from the file (it keeps its
        catalog id; an identical one is left untouched and reported ``unchanged``);
        ``"ignore"`` leaves it as it is (``skipped``), which is how an interrupted import
        is resumed.
    progress
        Called as ``progress(done_rows, total_rows)`` while values are read.
    diff
        With ``dry_run``: each series entry also says what importing it with
        ``on_conflict="replace"`` would change (see :func:`diff_sqlite`).

    Returns
    -------
    list of int or ImportReport
        The new ids in read order (partitions in binary order of their values table,
        series by ``(data_hash, time_axis, id)`` within one); a report for ``dry_run``,
        ``per_partition`` or an ``on_conflict`` other than ``"error"``, whose partitions
        count the series ``added``, ``replaced``, ``unchanged`` and ``skipped``.

    Raises
    ------
    InvalidParameterError
        Anything the file or the arguments get wrong; each message names the table, the
        series or array, and the row. Nothing is added (per partition: nothing of the
        failing partition).
    DuplicateTimeSeriesError
        A series the store already holds, or two rows of the file with one identity.
    ReadOnlyStoreError
        The store is read-only (a dry run is allowed).
    """
    validate_prefix(table_prefix)
    opts = Options.parse(overrides)
    check_on_conflict(on_conflict)
    if dry_run:
        store._open()
    else:
        store._writable()
    where = str(path)
    conn = open_database(path, read_only=True)
    try:
        try:
            conn.execute("BEGIN")  # one consistent snapshot of the file
            parts = discover(conn, table_prefix, where)
            readers = [_PartitionReader(conn, t, where) for t in parts]
            total = sum(r.values_count() for r in readers)
        except apsw.Error as exc:
            raise StorageError(f"reading {where} failed: {exc}") from exc
        ctx = Context(store, opts, skip_checksum, progress, total)
        ctx.on_conflict = on_conflict
        ctx.diff = diff
        report = ImportReport(where, table_prefix, dry_run)
        return run_import(ctx, readers, report, dry_run=dry_run, per_partition=per_partition)
    finally:
        with contextlib.suppress(apsw.Error):
            conn.close()


# ------------------------------------------------------------------------------ database
def discover(
    conn: apsw.Connection, prefix: str, where: str, *, allow_derived: bool = False
) -> list[Place]:
    """The partitions under ``prefix``, in binary order of their values table.

    Raises
    ------
    InvalidParameterError
        No partition at all; a values table without its series or arrays table; any
        DeterministicSingleTimeSeries partition (the whole prefix is refused).
    """
    tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    lower = {n.lower(): n for n in tables}
    found: list[Place] = []
    for name in sorted(tables, key=lambda n: n.encode()):
        tst = type_of_table(name, prefix, "_values")
        if tst is None:
            continue
        base = name[len(prefix) : -len("_values")]
        siblings = []
        for suffix in ("_series", "_arrays"):
            sibling = lower.get(f"{prefix}{base}{suffix}".lower())
            if sibling is None:
                raise missing_sibling(where, name, f"{prefix}{base}{suffix}")
            siblings.append(sibling)
        found.append(Place(base, tst, name, siblings[0], siblings[1]))
    if not allow_derived and any(
        t.type is TimeSeriesType.DeterministicSingleTimeSeries for t in found
    ):
        raise derived_refused(
            next(t.values for t in found if t.type is TimeSeriesType.DeterministicSingleTimeSeries)
        )
    if not found:
        raise no_partitions(where, prefix)
    return found


def _column(conn: apsw.Connection, sql: str, params: Any = ()) -> list:
    """One column of a query as a list, fetched as one object (``Cursor.get``).

    ``get`` gives a lone value for a single row and None both for no rows and for a
    single NULL, so a None is asked again, row by row.
    """
    result = conn.execute(sql, params).get
    if type(result) is list:
        return result
    if result is None:
        return [r[0] for r in conn.execute(sql, params).fetchall()]
    return [result]


# ------------------------------------------------------------------------------ reader
# The most arrays, and rows, one run statement reads: enough to spread the statement's
# cost over short arrays, few enough that the run's cells stay a small buffer (a long
# array pays little for its own statement, and is read alone).
_RUN_ARRAYS = 256
_RUN_ROWS = 16_384


class _PartitionReader:
    """Reads one partition for the import core (a :class:`PartitionSource`): its arrays
    and series tables row by row, its values group by group, in key order."""

    def __init__(self, conn: apsw.Connection, place: Place, where: str) -> None:
        self.conn = conn
        self.place = place
        self.where = where
        self.rehash = rehash_term(where)
        self.checksum = True
        self.type = place.type
        self.V = q(place.values)
        self.S = q(place.series)
        self.A = q(place.arrays)
        self._count: int | None = None
        self._checked = False
        self._mode = "range"  # or "index": how a group's rows are found
        self._temp: str | None = None  # temp table standing in for a missing index
        self._spans: dict[int, tuple[int, int] | None] = {}
        self._heads: dict[int, tuple[Any, Any]] = {}  # first row's (timestamp, issue_time)
        # True when the arrays' rowid spans do not overlap: every row inside a span is
        # then the array's own (check_claimed has refused rows of no array).
        self._tiled = False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """The interchange file failing under us (corrupt pages, an odd table definition)
        becomes a StorageError naming the partition."""
        try:
            yield
        except UnicodeDecodeError:
            # apsw decodes TEXT as UTF-8, and SQLite stores whatever bytes it was given.
            raise self._invalid_text() from None
        except apsw.Error as exc:
            raise StorageError(
                f"reading {self.place.values} (and its series and arrays tables) from "
                f"{self.where} failed: {exc}",
                table=self.place.values,
            ) from exc

    def _invalid_text(self) -> InvalidParameterError:
        """The first TEXT cell of the partition's tables that is not UTF-8, as a refusal
        naming its table, row and column (found by a scan that runs only after a decode
        failed)."""
        conn = self.conn
        for table in (self.place.arrays, self.place.series, self.place.values):
            for col in [r[1] for r in conn.execute(f"PRAGMA table_info({q(table)})")]:
                sql = (
                    f"SELECT rowid, CAST({q(col)} AS BLOB) FROM {q(table)} "
                    f"WHERE typeof({q(col)}) = 'text'"
                )
                for rowid, raw in conn.execute(sql):
                    try:
                        bytes(raw).decode("utf-8")
                    except UnicodeDecodeError as exc:
                        bad = bytes(raw)[exc.start : exc.start + 1].hex()
                        return InvalidParameterError(
                            f"{table}, row with rowid {rowid}, column `{col}`: the text is not "
                            f"valid UTF-8 (byte {exc.start} is 0x{bad}); write that cell again "
                            "as UTF-8 text and import again. Nothing of this partition was added",
                            table=table,
                        )
        return InvalidParameterError(
            f"{self.where} holds text that is not valid UTF-8 in the tables of "
            f"{self.place.values}; write it again as UTF-8 and import again",
            table=self.place.values,
        )

    def values_count(self) -> int:
        if self._count is None:
            self._count = int(self.conn.execute(f"SELECT count(*) FROM {self.V}").get or 0)
        return self._count

    def _columns(self, table: str) -> set[str]:
        return {r[1] for r in self.conn.execute(f"PRAGMA table_info({q(table)})")}

    def check_columns(self) -> None:
        if self._checked:
            return
        check_columns_present(self.place, self._columns)
        try:
            self.conn.execute(f"SELECT rowid FROM {self.V} LIMIT 0").fetchall()
        except apsw.SQLError:
            self.place.numbered = False
            self._mode = "index"
        self._checked = True

    def _has_index(self) -> bool:
        for row in self.conn.execute(f"PRAGMA index_list({self.V})"):
            info = self.conn.execute(f"PRAGMA index_info({q(row[1])})").fetchall()
            if info and info[0][2] == "array_id" and not row[4]:  # not a partial index
                return True
        return False

    def prepare_lookup(self) -> None:
        """Make sure a group's rows can be found without scanning the table."""
        if self._has_index() or not self.place.numbered:
            return
        # No index on array_id (dropped, or a rebuilt table): build one in TEMP, which
        # a read-only connection may still write.
        name = f"imp_rows_{abs(hash(self.place.values)) % 10**8}"
        self.conn.execute(
            f"DROP TABLE IF EXISTS temp.{name}; "
            f"CREATE TEMP TABLE {name} (a INTEGER, r INTEGER); "
            f"INSERT INTO temp.{name} SELECT array_id, rowid FROM {self.V}; "
            f"CREATE INDEX temp.{name}_a ON {name} (a, r)"
        )
        self._temp = name

    def drop_lookup(self) -> None:
        if self._temp is not None:
            with contextlib.suppress(apsw.Error):
                self.conn.execute(f"DROP TABLE IF EXISTS temp.{self._temp}")
            self._temp = None

    # -- rows for the core ---------------------------------------------------------------
    def array_rows(self) -> Iterable[Sequence[Any]]:
        return self.conn.execute(f"SELECT id, data_hash, time_axis FROM {self.A}")

    def series_batches(self, columns: Sequence[str]) -> Iterable[Sequence[Sequence[Any]]]:
        # The columns are the layout's (series_columns), never the file's.
        return rows_as_batches(self.conn.execute(f"SELECT {', '.join(columns)} FROM {self.S}"))

    def open_values(self, arrays: Mapping[int, tuple[str, str]]) -> None:
        """Find every group's rows (an index, or one built in TEMP) and refuse values rows
        of no array."""
        self.prepare_lookup()
        self.check_claimed(arrays)
        self.find_spans(list(arrays))

    def groups(
        self, wanted: Sequence[tuple[tuple[str, str], list[int], Spec | None]], dtype: str
    ) -> Iterator[Group | None]:
        # SQLite itself refuses to hand over a cell longer than its length limit, before
        # reading it from the file: a hostile cell of gigabytes then costs nothing. The
        # limit is what the widest element the series rows declare can need.
        shape = self.place.cell_shape
        limit = max_cell_bytes(shape) if shape is not None else None
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
        los = [lo]
        firsts = {first}
        end = hi
        most = min(_RUN_ARRAYS, _RUN_ROWS // n)
        for item in wanted[at + 1 : at + most]:
            member = self._run_member(item)
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

    def _oversized(self, key: tuple[str, str], ids: list[int], limit: int) -> Exception:
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
        """``(rowid, column)`` of the first cell SQLite refuses to read (see _oversized)."""
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

    def check_unclaimed(self) -> None:
        self._check_stray_scan()

    def close_values(self) -> None:
        self.drop_lookup()

    def check_claimed(self, arrays: Mapping[int, Any]) -> None:
        """Refuse a values row whose array_id is NULL or not in the arrays table.

        The distinct ids are walked through the index (one seek each), so this costs a
        few lookups per array rather than a pass over the values.
        """
        if self._temp is not None:
            table, col = f"temp.{self._temp}", "a"
        elif self._has_index():
            table, col = self.V, "array_id"
        else:
            self._check_stray_scan()
            return
        if self.conn.execute(f"SELECT 1 FROM {table} WHERE {col} IS NULL LIMIT 1").get:
            self._raise_stray(None)
        # The distinct ids in order, one index seek each, walked inside SQLite; the first
        # that is not an integer id of the arrays table (if any) comes back.
        rows = self.conn.execute(
            f"WITH RECURSIVE d(x) AS (SELECT min({col}) FROM {table} UNION ALL "
            f"SELECT (SELECT min({col}) FROM {table} WHERE {col} > d.x) FROM d "
            "WHERE d.x IS NOT NULL) "
            "SELECT x FROM d WHERE x IS NOT NULL AND (typeof(x) <> 'integer' OR "
            f"x NOT IN (SELECT id FROM {self.A} WHERE typeof(id) = 'integer')) LIMIT 1"
        ).fetchall()
        for (aid,) in rows:
            if type(aid) is not int or aid not in arrays:
                self._raise_stray(aid)
            raise AssertionError(f"array_id {aid!r} is claimed")  # pragma: no cover

    def _check_stray_scan(self) -> None:
        row = self.conn.execute(
            f"SELECT array_id FROM {self.V} WHERE array_id IS NULL OR array_id NOT IN "
            f"(SELECT id FROM {self.A}) LIMIT 1"
        ).fetchone()
        if row is not None:
            self._raise_stray(row[0])

    def _raise_stray(self, aid: Any) -> None:
        rowid = None
        if self.place.numbered:
            cond = "array_id IS NULL" if aid is None else "array_id = ?"
            rowid = self.conn.execute(
                f"SELECT rowid FROM {self.V} WHERE {cond} LIMIT 1", () if aid is None else (aid,)
            ).get
        raise stray_values_row(self.place, aid, rowid)

    def find_spans(self, ids: Sequence[int]) -> None:
        """The rowid span of every array (two index seeks each, all in one query), and
        whether they tile."""
        if self._mode != "range":
            return
        if self._temp is not None:
            table, col, rid = f"temp.{self._temp}", "a", "r"
        else:
            table, col, rid = self.V, "array_id", "rowid"
        # One statement for every array: each correlated min/max is a single index seek,
        # and the coordinates of the first row (which the fast path anchors on) one more.
        issue = "s.issue_time" if self.type.is_forecast else "NULL"
        found: dict[int, tuple[int, int]] = {}
        heads: dict[int, tuple[Any, Any]] = {}
        for aid, lo, hi, t0, i0 in self.conn.execute(
            f"SELECT x.id, x.lo, x.hi, s.timestamp, {issue} FROM (SELECT id, "
            f"(SELECT min({rid}) FROM {table} WHERE {col} = a.id) AS lo, "
            f"(SELECT max({rid}) FROM {table} WHERE {col} = a.id) AS hi FROM {self.A} AS a) "
            f"AS x LEFT JOIN {self.V} AS s ON s.rowid = x.lo"
        ):
            found[aid] = (lo, hi)
            if lo is not None:
                heads[aid] = (t0, i0)
        self._heads = heads
        self._spans = {}
        for aid in ids:
            span = found.get(aid)
            if span is None:
                self._spans[aid] = self._span(aid)
            else:
                self._spans[aid] = None if span[0] is None else span
        spans = sorted(sp for sp in self._spans.values() if sp is not None)
        self._tiled = all(a[1] < b[0] for a, b in itertools.pairwise(spans))

    def _span(self, aid: int) -> tuple[int, int] | None:
        if self._temp is not None:
            lo = self.conn.execute(f"SELECT min(r) FROM temp.{self._temp} WHERE a = ?", (aid,)).get
            if lo is None:
                return None
            hi = self.conn.execute(f"SELECT max(r) FROM temp.{self._temp} WHERE a = ?", (aid,)).get
            return lo, hi
        lo = self.conn.execute(f"SELECT min(rowid) FROM {self.V} WHERE array_id = ?", (aid,)).get
        if lo is None:
            return None
        hi = self.conn.execute(f"SELECT max(rowid) FROM {self.V} WHERE array_id = ?", (aid,)).get
        return lo, hi

    def _head(self, aid: int, lo: int) -> tuple[Any, Any]:
        """``(timestamp, issue_time)`` of the row ``lo`` (the first of the array ``aid``);
        ``issue_time`` is None in a table without one."""
        head = self._heads.get(aid)
        if head is not None:
            return head
        issue = "issue_time" if self.type.is_forecast else "NULL"
        rows = self.conn.execute(
            f"SELECT timestamp, {issue} FROM {self.V} WHERE rowid = ?", (lo,)
        ).fetchall()
        return rows[0] if len(rows) == 1 else (None, None)

    def _where(self, aid: int, span: tuple[int, int] | None) -> tuple[str, tuple]:
        """A WHERE clause selecting one array's rows, and its parameters."""
        if self._mode == "range" and span is not None:
            return "rowid BETWEEN ? AND ? AND +array_id = ?", (span[0], span[1], aid)
        if self._temp is not None:
            return f"rowid IN (SELECT r FROM temp.{self._temp} WHERE a = ?)", (aid,)
        return "array_id = ?", (aid,)

    def _get(self, column: str, where: str, params: tuple) -> list:
        return _column(self.conn, f"SELECT {column} FROM {self.V} WHERE {where}", params)

    def read_group(
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
            if self._mode == "range":
                span = self._spans[aid] if aid in self._spans else self._span(aid)
                if span is None:
                    continue  # no rows
            spans.append((aid, span))
        if not spans:
            return None
        if len(spans) == 1 and spec is not None and spans[0][1] is not None:
            group = self._fast(key, spans[0][0], spans[0][1], spec, dtype)
            if group is not None:
                return group
        return self._general(key, spans, dtype)

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
            first = self._head(aid, lo)[0]
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
            first = self._head(aid, lo)[1]
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
        if not self._tiled:
            cond = f"array_id = ?5 AND {cond}"
        cells = _column(
            self.conn,
            f"SELECT CASE WHEN {cond} THEN value ELSE x'00' END "
            f"FROM {self.V} WHERE rowid BETWEEN ?2 AND ?4",
            # ?5 (array_id) is a parameter only when the query still uses it, or when a
            # later one (?6, ?7) makes SQLite count it anyway.
            params if len(params) > 5 or not self._tiled else params[:4],
        )
        if len(cells) != n:
            return None  # a gap in the span: rows of the array are interleaved with others
        try:
            values = _decode(cells, dtype, fused=True)
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
        t0, first = self._head(aid, lo)
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
            pct = _column(
                self.conn,
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
        own = "" if self._tiled else " AND array_id = ?3"
        params = (lo, hi) if self._tiled else (lo, hi, aid)
        cells = _column(
            self.conn,
            "SELECT CASE WHEN typeof(timestamp) = 'integer'"
            f"{own} THEN value ELSE x'00' END FROM {self.V} WHERE rowid BETWEEN ?1 AND ?2",
            params,
        )
        if len(cells) != n:
            return None
        try:
            values = _decode(cells, dtype, fused=True)
        except InvalidParameterError:
            return None
        if values is None:
            return None
        ts = _column(
            self.conn, f"SELECT timestamp FROM {self.V} WHERE rowid BETWEEN ? AND ?", (lo, hi)
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
        for aid, span in spans:
            where, params = self._where(aid, span)
            first = self._get("value", where, params)
            if span is not None and 2 * len(first) < span[1] - span[0] + 1:
                # A sparse span: this partition's arrays are interleaved, so from the next
                # group on the index finds their rows faster than a range scan would.
                self._mode = "index"
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
            group.values = _decode(got["value"], dtype)
        except InvalidParameterError as exc:
            i = _bad_cell(got["value"], dtype)
            raise bad_value(self.place, key, rowids(), i, exc) from None
        group.timestamp = self.place.ints(got["timestamp"], "timestamp", key, rowids, ms=True)
        if tst.is_forecast:
            group.issue = self.place.ints(got["issue_time"], "issue_time", key, rowids, ms=True)
        if tst is TimeSeriesType.Probabilistic:
            group.lane = self.place.floats(got["percentile"], "percentile", key, rowids)
        elif tst is TimeSeriesType.Scenarios:
            group.lane = self.place.ints(got["scenario"], "scenario", key, rowids, ms=False)
        return group


# ------------------------------------------------------------------------------ decoding
_FLOAT_CELLS = frozenset({float, type(None)})


def _floats_only(cells: list) -> np.ndarray | None:
    """``cells`` as float64 when every one is a float (no NULL, text or blob), else None.

    numpy's own type inference is the cheapest check there is: it gives float64 only
    for a list of floats (and ints, which a REAL column never returns); a None makes it
    an object array, a string or a blob a string array.
    """
    arr = np.array(cells)
    if arr.dtype == np.float64 and arr.ndim == 1:
        return arr
    return None


def _decode(cells: list, dtype: str, *, fused: bool = False) -> np.ndarray | None:
    """Decode one group's value cells.

    With ``fused`` the cells come from the query that checks the grid as it reads: a
    row that failed the check comes back as a blob sentinel, and the answer is None.
    """
    if dtype == "f64":
        arr = _floats_only(cells)
        if arr is not None:
            return arr
    types = set(map(type, cells))
    if dtype == "f64" and types <= _FLOAT_CELLS:
        return np.fromiter(cells, dtype=np.float64, count=len(cells))
    if fused and bytes in types:
        return None
    return decode_cells(cells, dtype)


def _bad_cell(cells: list, dtype: str) -> int | None:
    """The index of the first cell that cannot be decoded, or that differs in shape."""
    first_shape = None
    for i, cell in enumerate(cells):
        try:
            arr = decode_cells([cell], dtype)
        except InvalidParameterError:
            return i
        if first_shape is None:
            first_shape = arr.shape[1:]
        elif arr.shape[1:] != first_shape:
            return i
    return None
