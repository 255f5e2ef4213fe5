"""The typed companions an export writes beside the three fixed-name views, and the
provenance table.

``all_values`` unions REAL cells (scalar partitions), INTEGER cells and JSON text (shaped,
tuple and composite partitions) in one column, and NULL key columns (``issue_time`` of a
static series, ``percentile`` of all but a Probabilistic), which readers that type a
column once from its first rows (Polars, connectorx, ADBC, pandas, DuckDB) cannot read.
Its text is the contract's (the reference writes the same bytes), so SQLite gives its
``value`` the affinity of the first partition: integers above 2**53 read back rounded
when a float partition sorts first. The companions keep each column one type, never NULL
but for a NaN ``value``:

* ``<prefix>all_values_<class>_<kind>``: ``all_values`` split by the storage class of
  ``value`` (``real``, ``integer``, ``json``) and by the key columns the partitions have
  (``static``: none; ``deterministic``: ``issue_time``; ``probabilistic``: and
  ``percentile``; ``scenarios``: and ``scenario``), written only when some partition is
  of that class and kind;
* ``<prefix>flat_<base>``: one per partition, its series joined to its values (the
  layout's "a view flattens it once"), with the instants also as ISO-8601 text in the
  partition's time reference, written in SQL that SQLite and DuckDB both bind (DuckDB
  types a view it cannot bind as all text).

No companion name ends in ``_values``, ``_series`` or ``_arrays``, and every one is a
view, so no import takes one for a partition. The provenance table
(``infrastore_exports``) gets one row per export; it too ends in none of those words.

Every statement is built from validated names (:func:`.schema.q`); data goes in as bound
parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np
import orjson

from ..._version import __version__
from ...core.distinct import distinct_ints
from ...core.periods import Period
from ...core.timeref import reference_kind, zone_info
from ...errors import InvalidParameterError
from ...model import TimeSeriesType
from ..layout import (
    FLAT_SERIES_COLUMNS,
    KEY_KINDS,
    Partition,
    key_kind,
    values_key_columns,
)
from ..plan import ExportPlan
from .cells import sql_value_type
from .schema import ViewSource, q

if TYPE_CHECKING:
    from ...store import Store

COMPANION_MARKER = "infrastore-sqlite: typed companion"
PROVENANCE_TABLE = "infrastore_exports"

# The typed views over all_values, by the declared type of a partition's value column
# and by its key columns (a view's rows all have the same keys, so none reads as NULL).
TYPED_VIEWS = {
    "REAL": "all_values_real",
    "INTEGER": "all_values_integer",
    "TEXT": "all_values_json",
}
# The names of the typed views before they were split by kind (one view per class, with
# NULL key columns): an export drops ours under them, so a file it adds to holds no view
# that stopped spanning its partitions.
LEGACY_TYPED_VIEWS = tuple(TYPED_VIEWS.values())
FLAT_PREFIX = "flat_"

PROVENANCE_COLUMNS = (
    ("id", "INTEGER PRIMARY KEY"),
    ("written_at", "TEXT NOT NULL"),
    ("tool", "TEXT NOT NULL"),
    ("tool_version", "TEXT NOT NULL"),
    ("store", "TEXT NOT NULL"),
    ("table_prefix", "TEXT NOT NULL"),
    ("selection", "TEXT NOT NULL"),
    ("time_range_start", "TEXT"),
    ("time_range_end", "TEXT"),
    ("include_derived", "INTEGER NOT NULL"),
    ("partitions", "TEXT NOT NULL"),
    ("series", "INTEGER NOT NULL"),
    ("rows", "INTEGER NOT NULL"),
)


@dataclass(frozen=True, slots=True)
class CompanionSource:
    """One partition as the companions read it."""

    base: str
    type: TimeSeriesType
    value_sql_type: str  # REAL, INTEGER or TEXT: the declared type of ``value``
    time_reference: str | None
    #: ``(first_ms, last_ms)`` covering the partition's instants (its ISO text is built
    #: over that span only); None before the tables are written.
    span: tuple[int, int] | None = None
    #: In a zone whose offsets and changes fall on whole UTC hours over the span: its
    #: ISO text is read from ``infrastore_zone_hours`` (one row per hour of its data).
    hourly: bool = False


def typed_view_name(prefix: str, value_sql_type: str, kind: str) -> str:
    return f"{prefix}{TYPED_VIEWS[value_sql_type]}_{kind}"


def flat_view_name(prefix: str, base: str) -> str:
    return f"{prefix}{FLAT_PREFIX}{base}"


def _typed_groups(
    sources: Sequence[CompanionSource],
) -> list[tuple[str, str, list[CompanionSource]]]:
    """``(class, kind, members)`` of each typed view, in name order of class then kind."""
    out = []
    for cls in TYPED_VIEWS:
        for kind in KEY_KINDS.values():
            members = [s for s in sources if s.value_sql_type == cls and key_kind(s.type) == kind]
            if members:
                out.append((cls, kind, members))
    return out


def companion_names(prefix: str, sources: Sequence[CompanionSource]) -> list[str]:
    """Every companion view the sources give, typed views first."""
    typed = [typed_view_name(prefix, c, k) for c, k, _ in _typed_groups(sources)]
    return typed + [flat_view_name(prefix, s.base) for s in sources]


def companion_sql(
    prefix: str, sources: Sequence[CompanionSource], zone_ids: dict[str, int] | None = None
) -> list[str]:
    """``CREATE VIEW`` statements of every companion over ``sources`` (``zone_ids``: each
    zone's id in ``infrastore_zones``, from :func:`write_calendar`)."""
    return [sql for _, sql in _companion_views(prefix, sources, zone_ids, set())]


def _companion_views(
    prefix: str,
    sources: Sequence[CompanionSource],
    zone_ids: dict[str, int] | None,
    lead: set[str],
) -> list[tuple[str, str]]:
    """``(name, CREATE VIEW)`` of every companion; the views named in ``lead`` put the
    first row holding a value first (see :func:`_led`)."""
    out = []
    for c, k, m in _typed_groups(sources):
        name = typed_view_name(prefix, c, k)
        out.append((name, _typed_view(prefix, c, k, m, lead=name in lead)))
    ids = zone_ids or {}
    for s in sorted(sources, key=lambda s: s.base.encode()):
        name = flat_view_name(prefix, s.base)
        out.append((name, _flat_view(prefix, s, ids.get(s.time_reference or ""), name in lead)))
    return out


def _typed_view(
    prefix: str, cls: str, kind: str, members: Sequence[CompanionSource], *, lead: bool = False
) -> str:
    # Every member has the same key columns, so no column of the view is NULL by
    # construction: a reader that types a column from its first rows (Polars over
    # sqlite3, pandas) finds the type there. Every member's ``value`` is declared the
    # same type, so the affinity SQLite gives the union's column (its first SELECT's)
    # changes no value: integers stay exact. Only a NaN ``value`` (NULL: SQLite holds
    # no NaN) is NULL; ``lead`` is for a view whose first row is one (see :func:`_led`).
    keys = [c for c, _ in values_key_columns(members[0].type)]
    cols = ["array_id", "timestamp", *keys, "value"]
    parts = []
    for s in sorted(members, key=lambda s: s.base.encode()):
        literal = "'" + s.base.replace("'", "''") + "'"
        parts.append((literal, q(prefix + s.base + "_values")))
    head = f"CREATE VIEW {q(typed_view_name(prefix, cls, kind))} AS /* {COMPANION_MARKER} */ "
    if not lead:
        plain = ", ".join(cols)
        return head + " UNION ALL ".join(
            f"SELECT {lit} AS partition_name, {plain} FROM {t}" for lit, t in parts
        )
    # The first row holding a value first: ``lead`` names its partition and rowid (one
    # scan up to that row, made once per read); then every row but that one, in order.
    found = " UNION ALL ".join(
        f"SELECT {lit}, rowid FROM {t} WHERE value IS NOT NULL" for lit, t in parts
    )
    aliased = ", ".join(f"v.{c} AS {c}" for c in cols)
    first = [
        f"SELECT lead.p AS partition_name, {aliased} FROM lead JOIN {t} AS v "
        f"ON v.rowid = lead.r WHERE lead.p = {lit}"
        for lit, t in parts
    ]
    rest = [
        f"SELECT {lit} AS partition_name, {', '.join(cols)} FROM {t} "
        f"WHERE {_not_lead('rowid', f'(SELECT r FROM lead WHERE p = {lit})')}"
        for lit, t in parts
    ]
    return head + f"WITH lead(p, r) AS ({found} LIMIT 1) " + " UNION ALL ".join(first + rest)


def _not_lead(rowid: str, lead: str) -> str:
    """True for a row that is not the leading one (``lead`` NULL: there is none), in the
    SQL SQLite and DuckDB share (``1 = 1``: both dialects' true)."""
    return f"coalesce({rowid} <> {lead}, 1 = 1)"


def _flat_view(prefix: str, s: CompanionSource, zone_id: int | None, lead: bool = False) -> str:
    series = [f"s.{c}" if c == alias else f"s.{c} AS {alias}" for c, alias in FLAT_SERIES_COLUMNS]
    joins, iso = iso_sql("v.timestamp", s.time_reference, "ts", zone_id, hourly=s.hourly)
    cols = [*series, "v.timestamp", f"{iso} AS timestamp_iso"]
    for c, _ in values_key_columns(s.type):
        cols.append(f"v.{c}")
        if c == "issue_time":
            more, issue = iso_sql(
                "v.issue_time", s.time_reference, "issue", zone_id, hourly=s.hourly
            )
            joins += more
            cols.append(f"{issue} AS issue_time_iso")
    cols.append("v.value")
    values = q(prefix + s.base + "_values")
    body = (
        f"SELECT {', '.join(cols)} FROM {values} AS v "
        # ``+v.array_id``: the values are scanned in their order and each series found
        # by its array_id (the joins to the calendar would otherwise lead SQLite to
        # walk the values through their index, a lookup per row).
        f"JOIN {q(prefix + s.base + '_series')} AS s ON s.array_id = +v.array_id{joins}"
    )
    head = f"CREATE VIEW {q(flat_view_name(prefix, s.base))} AS /* {COMPANION_MARKER} */ "
    if not lead:
        return head + body
    # The first row holding a value first, then the others in order (see :func:`_led`).
    found = f"(SELECT rowid FROM {values} WHERE value IS NOT NULL LIMIT 1)"
    return (
        head
        + f"{body} WHERE v.rowid = {found} UNION ALL {body} WHERE {_not_lead('v.rowid', found)}"
    )


# ---------------------------------------------------------------------- ISO-8601 text
# The ISO text is written in the SQL that SQLite and DuckDB share, so DuckDB's SQLite
# reader (which binds a view's SQL in its own dialect, and types every column of a view
# it cannot bind as text) reads the flat views typed: no ``strftime`` (the two disagree
# on it), integer division spelled so both give the same integer (SQLite divides
# integers to an integer, DuckDB to a double), and ``printf``, which both have.
#
# The calendar is data, not SQL, so a view's text is the same few hundred bytes whatever
# the span (it grew ~9 KB a year when the months were a CASE): ``infrastore_days`` names
# each day ('YYYY-MM-DD'), and ``infrastore_zone_days`` gives a zone's offset on each UTC
# day (its offset at the day's start, the instant of a change in the day and the offset
# after it) and the local dates the day's instants fall on (the date up to the first
# local midnight in the day, and after each: at most three, with a change in the day).
# A view joins one of them on the day, an integer key: one lookup per row (a zone's
# second lookup, of the date, made its views 1.2x slower to read than the comparison
# tree of offsets they replaced; the choice between a day's offsets and dates, 1.17x).
# A zone whose offsets are whole hours and change on whole UTC hours over the span (most
# zones since the early 1900s) reads ``infrastore_zone_hours`` instead: one row per UTC
# hour of its data, the wall clock's 'YYYY-MM-DDTHH:' and the offset, the rest from the
# instant, no choice in the row's path (0.92x the comparison tree).
_DAY = 86_400_000
#: Milliseconds from 0000-03-01 (proleptic Gregorian) to 1970-01-01: instants shifted by
#: it are non-negative from year 0 on, so integer division is floor division.
_SHIFT = 719_468 * _DAY
DAYS_TABLE = "infrastore_days"
ZONES_TABLE = "infrastore_zones"
ZONE_TABLE = "infrastore_zone_days"
#: A zone's days are keyed ``zone id * ZONE_KEY + day`` (days up to the year 27,000).
ZONE_KEY = 10_000_000
HOURS_TABLE = "infrastore_zone_hours"
_HOUR = 3_600_000
#: A zone's hours are keyed ``zone id * HOUR_KEY + hour`` (hours counted from
#: 0000-03-01, up to the year 11,000).
HOUR_KEY = 100_000_000
CALENDAR_COLUMNS = {
    DAYS_TABLE: (("day", "INTEGER PRIMARY KEY"), ("date", "TEXT NOT NULL")),
    ZONES_TABLE: (("id", "INTEGER PRIMARY KEY"), ("reference", "TEXT NOT NULL UNIQUE")),
    ZONE_TABLE: (
        ("key", "INTEGER PRIMARY KEY"),
        ("reference", "TEXT NOT NULL"),
        ("day", "INTEGER NOT NULL"),
        ("offset_s", "INTEGER NOT NULL"),
        ("offset_text", "TEXT NOT NULL"),
        ("change_ms", "INTEGER NOT NULL"),
        ("after_s", "INTEGER NOT NULL"),
        ("after_text", "TEXT NOT NULL"),
        # What a view adds to an instant to have its wall clock in the days' count:
        # the shift from 1970 to 0000-03-01 plus the offset, in ms (before the change,
        # after it), so a row needs no arithmetic on the offset.
        ("shift_ms", "INTEGER NOT NULL"),
        ("after_shift_ms", "INTEGER NOT NULL"),
        # The local date of the day's instants: ``date0`` before ``flip1``, ``date1``
        # from it to ``flip2``, and so on (a flip past the day's end: not reached).
        ("flip1_ms", "INTEGER NOT NULL"),
        ("flip2_ms", "INTEGER NOT NULL"),
        ("flip3_ms", "INTEGER NOT NULL"),
        ("date0", "TEXT NOT NULL"),
        ("date1", "TEXT NOT NULL"),
        ("date2", "TEXT NOT NULL"),
        ("date3", "TEXT NOT NULL"),
    ),
    # A zone whose offsets and changes fall on whole UTC hours: one row per UTC hour
    # holding instants, its wall clock's 'YYYY-MM-DDTHH:' and its offset. Within such
    # an hour the date, hour and offset are one, and the minutes, seconds and
    # milliseconds are the instant's own: a row's text is one lookup and arithmetic on
    # the instant, no choice between offsets or dates (the day rows need both, and read
    # 1.17x slower than the CASE tree of offsets they replaced).
    HOURS_TABLE: (
        ("key", "INTEGER PRIMARY KEY"),
        ("prefix", "TEXT NOT NULL"),
        ("suffix", "TEXT NOT NULL"),
    ),
}


def calendar_ddl() -> list[str]:
    """``CREATE TABLE IF NOT EXISTS`` of the calendar tables."""
    return [
        f"CREATE TABLE IF NOT EXISTS {q(t)} ({', '.join(f'{c} {d}' for c, d in cs)})"
        for t, cs in CALENDAR_COLUMNS.items()
    ]


def _zone_known(time_reference: str | None) -> bool:
    return (
        reference_kind(time_reference or None) == "zone" and zone_info(time_reference) is not None
    )


def iso_sql(
    column: str,
    time_reference: str | None,
    alias: str,
    zone_id: int | None = None,
    *,
    hourly: bool = False,
) -> tuple[str, str]:
    """``(joins, expression)``: the joins to add to a ``FROM`` that has ``column`` (a
    millisecond instant), and the SQL rendering it as ISO-8601 text, as the reference
    reads it back: UTC with ``Z`` (utc, unspecified), at the fixed offset, in the zone
    (its offset at that instant), or a bare wall clock (zoneless). ``alias`` names the
    joined tables (``d_<alias>``, ``z_<alias>``), one set per column; ``zone_id`` is the
    zone's id in ``infrastore_zones`` (what :func:`write_calendar` returns).

    The wall clock is the instant shifted (``local``, in ms from 0000-03-01): its day
    names the date (``infrastore_days``), and the time of day is arithmetic. In a zone
    the shift comes from the zone's row for the instant's UTC day (one lookup by an
    integer key). An instant whose day the calendar tables do not hold reads NULL (an
    export writes the days of the UTC years its partitions span).

    ``hourly`` (a zone that :func:`hour_aligned` accepts over the data's span, whose
    hours :func:`write_zone_hours` wrote): the text is the hour's row
    (``infrastore_zone_hours``) and the instant's minutes, seconds and milliseconds; an
    instant whose hour has no row reads NULL."""
    kind = reference_kind(time_reference or None)
    d, z = q(f"d_{alias}"), q(f"z_{alias}")
    if hourly and _zone_known(time_reference):
        assert zone_id is not None, "a zone's ISO text needs its id in infrastore_zones"
        h = q(f"h_{alias}")
        c = f"({column} + {_SHIFT})"
        parts = [
            f"CAST((({c} % {_HOUR}) - ({c} % 60000)) / 60000 AS BIGINT)",
            f"CAST((({c} % 60000) - ({c} % 1000)) / 1000 AS BIGINT)",
            f"({c} % 1000)",
            f"{h}.suffix",
        ]
        joins = (
            f" LEFT JOIN {q(HOURS_TABLE)} AS {h} ON {h}.key = "
            f"{zone_id * HOUR_KEY} + {_div(c, _HOUR)}"
        )
        return joins, f"{h}.prefix || printf('%02d:%02d.%03d%s', {', '.join(parts)})"
    if _zone_known(time_reference):
        assert zone_id is not None, "a zone's ISO text needs its id in infrastore_zones"
        after = f"{column} >= {z}.change_ms"
        local = f"({column} + CASE WHEN {after} THEN {z}.after_shift_ms ELSE {z}.shift_ms END)"
        fmt, args = (
            "T%02d:%02d:%02d.%03d%s",
            [f"CASE WHEN {after} THEN {z}.after_text ELSE {z}.offset_text END"],
        )
        joins = (
            f" LEFT JOIN {q(ZONE_TABLE)} AS {z} ON {z}.key = "
            f"{zone_id * ZONE_KEY} + {_div(f'({column} + {_SHIFT})', _DAY)}"
        )
        # The date from the zone's row: no second lookup.
        date = (
            f"CASE WHEN {column} < {z}.flip1_ms THEN {z}.date0 "
            f"WHEN {column} < {z}.flip2_ms THEN {z}.date1 "
            f"WHEN {column} < {z}.flip3_ms THEN {z}.date2 ELSE {z}.date3 END"
        )
    else:
        if kind == "offset":
            assert time_reference is not None
            sign = -1 if time_reference[0] == "-" else 1
            minutes = sign * (int(time_reference[1:3]) * 60 + int(time_reference[4:6]))
            text = time_reference
        else:
            minutes, text = 0, {"zoneless": "", "zone": "+00:00"}.get(kind, "Z")
        local = f"({column} + {_SHIFT + minutes * 60_000})"
        fmt, args = f"T%02d:%02d:%02d.%03d{text}", []
        joins = f" LEFT JOIN {q(DAYS_TABLE)} AS {d} ON {d}.day = {_div(local, _DAY)}"
        date = f"{d}.date"
    # Each part is a difference of remainders, divisible, so the division is exact in
    # both dialects; the milliseconds are the instant's (offsets are whole seconds).
    ms = f"(({column} + {_SHIFT}) % 1000)"
    parts = [
        f"CAST((({local} % {_DAY}) - ({local} % 3600000)) / 3600000 AS BIGINT)",
        f"CAST((({local} % 3600000) - ({local} % 60000)) / 60000 AS BIGINT)",
        f"CAST((({local} % 60000) - {ms}) / 1000 AS BIGINT)",
        ms,
        *args,
    ]
    return joins, f"{date} || printf('{fmt}', {', '.join(parts)})"


def _div(a: str, b: int) -> str:
    """``floor(a / b)`` for ``a >= 0``, the same integer in SQLite and DuckDB."""
    return f"CAST(({a} - {a} % {b}) / {b} AS BIGINT)"


def _years(span: tuple[int, int] | None) -> tuple[int, int]:
    """The UTC years a millisecond span touches (1970–2099 without one), kept where
    datetime and the tz database answer (instants past them render as NULL)."""
    if span is None:
        return 1970, 2099

    def year(ms: int) -> int:
        ms = min(max(ms, _MIN_MS), _MAX_MS)
        return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)).year

    return year(span[0]), year(span[1])


def _year_ms(year: int) -> int:
    return int(datetime(year, 1, 1, tzinfo=UTC).timestamp()) * 1000


_MIN_MS = _year_ms(1900)
_MAX_MS = _year_ms(2200) - 1


def calendar_rows(
    time_reference: str | None, span: tuple[int, int] | None, zone_id: int | None = None
) -> tuple[list[tuple[int, str]], list[tuple]]:
    """The rows of ``infrastore_days`` and ``infrastore_zone_days`` the ISO text of a
    partition in ``time_reference`` over ``span`` needs: every day of its UTC years
    (and the day on either side, where an offset carries the wall clock), and for a
    zone (``zone_id``) its offset on each UTC day of those years.

    A zone row holds the offset at the day's start and the first change in the day (a
    zone changes its offset at most once a day; were it to change twice, the instants
    after the second change of that day would show the offset of the first)."""
    first, last = _years(span)
    day0 = (_year_ms(first) + _SHIFT) // _DAY - 1
    day1 = (_year_ms(last + 1) + _SHIFT) // _DAY
    start = date(first, 1, 1) - timedelta(days=1)
    days = [(day0 + i, (start + timedelta(days=i)).isoformat()) for i in range(day1 - day0 + 1)]
    zone: list[tuple] = []
    if _zone_known(time_reference) and zone_id is not None:
        assert time_reference is not None
        changes = zone_offsets(time_reference, first, last)
        i, current = 0, changes[0][1]
        for day in range(day0 + 1, day1):
            lo = day * _DAY - _SHIFT
            hi = lo + _DAY
            while i + 1 < len(changes) and changes[i + 1][0] <= lo:
                i += 1
                current = changes[i][1]
            if i + 1 < len(changes) and changes[i + 1][0] < hi:
                change, after = changes[i + 1]
            else:
                change, after = hi, current
            flips, dates = _local_dates(lo, hi, change, current, after)
            zone.append(
                (
                    zone_id * ZONE_KEY + day,
                    time_reference,
                    day,
                    current,
                    _offset_text(current),
                    change,
                    after,
                    _offset_text(after),
                    _SHIFT + 1000 * current,
                    _SHIFT + 1000 * after,
                    *flips,
                    *dates,
                )
            )
    return days, zone


_EPOCH_DATE = date(1970, 1, 1)  # day _SHIFT // _DAY of the views' count


def _date_of(local_day: int) -> str:
    """'YYYY-MM-DD' of a day counted from 0000-03-01 (the views' day numbers)."""
    return (_EPOCH_DATE + timedelta(days=local_day - _SHIFT // _DAY)).isoformat()


def _local_dates(
    lo: int, hi: int, change: int, before: int, after: int
) -> tuple[list[int], list[str]]:
    """``([flip1, flip2, flip3], [date0, date1, date2, date3])`` of the UTC day
    ``[lo, hi)`` in a zone at offset ``before`` (seconds) until ``change`` and ``after``
    from it: the instants at which the local date changes and the dates between them
    (unused flips lie past the day, their dates repeat the last one). Within one offset
    the wall clock runs forward less than a day, so each offset's stretch crosses at
    most one local midnight."""
    breaks: list[tuple[int, int]] = []
    for start, end, offset in ((lo, change, before), (change, hi, after)):
        if start >= end:
            continue
        shift = _SHIFT + 1000 * offset
        first = (start + shift) // _DAY
        if not breaks or breaks[-1][1] != first:
            breaks.append((start, first))
        midnight = (first + 1) * _DAY - shift  # the instant the next local day starts
        if midnight < end:
            breaks.append((midnight, first + 1))
    flips = [at for at, _ in breaks[1:]] + [hi] * (4 - len(breaks))
    dates = [_date_of(d) for _, d in breaks]
    dates += [dates[-1]] * (4 - len(dates))
    return flips, dates


def write_calendar(
    conn: Any,
    sources: Sequence[tuple[str | None, tuple[int, int] | None]],
    *,
    hourly: Sequence[bool] = (),
) -> dict[str, int]:
    """Create the calendar tables when missing, add the rows ``(time_reference, span)``
    of each source needs (rows already there are kept: they are the same), and return
    each zone's id in ``infrastore_zones``. A source marked in ``hourly`` reads its
    zone's hours (:func:`write_zone_hours`) and gets no day rows; a zone's day rows
    carry their dates, so a zone gets none of ``infrastore_days``."""
    for ddl in calendar_ddl():
        conn.execute(ddl)
    ids: dict[str, int] = {}
    for reference, _ in sources:
        if _zone_known(reference) and reference not in ids:
            assert reference is not None
            conn.execute(
                f"INSERT OR IGNORE INTO {q(ZONES_TABLE)} (reference) VALUES (?)", (reference,)
            )
            row = conn.execute(
                f"SELECT id FROM {q(ZONES_TABLE)} WHERE reference = ?", (reference,)
            ).fetchone()
            ids[reference] = int(row[0])
    days: dict[int, str] = {}
    zone: list[tuple] = []
    marked = list(hourly) + [False] * (len(sources) - len(hourly))
    for (reference, span), by_hour in zip(sources, marked, strict=True):
        if by_hour:
            continue
        d, z = calendar_rows(reference, span, ids.get(reference or ""))
        if not _zone_known(reference):
            days.update(d)
        zone.extend(z)
    conn.executemany(f"INSERT OR IGNORE INTO {q(DAYS_TABLE)} VALUES (?, ?)", list(days.items()))
    marks = ", ".join("?" * len(CALENDAR_COLUMNS[ZONE_TABLE]))
    conn.executemany(f"INSERT OR IGNORE INTO {q(ZONE_TABLE)} VALUES ({marks})", zone)
    return ids


def hour_aligned(time_reference: str | None, span: tuple[int, int] | None) -> bool:
    """Whether a zone's offsets over the UTC years of ``span`` are whole hours and change
    on whole UTC hours (most zones since the early 20th century; not India's +05:30,
    nor a zone's local mean time), so :func:`write_zone_hours` can serve its ISO text."""
    if span is None or not _zone_known(time_reference):
        return False
    assert time_reference is not None
    changes = zone_offsets(time_reference, *_years(span))
    return all(off % 3600 == 0 for _, off in changes) and all(
        at % _HOUR == 0 for at, _ in changes[1:]
    )


def write_zone_hours(
    conn: Any,
    time_reference: str,
    zone_id: int,
    hours: Sequence[int] | np.ndarray,
    span: tuple[int, int],
) -> None:
    """Add the rows of ``infrastore_zone_hours`` for the UTC ``hours`` (counted from
    0000-03-01, as the views count them) of a zone that :func:`hour_aligned` accepts
    over ``span``; hours outside 1900–2199 get none (their instants read NULL)."""
    changes = zone_offsets(time_reference, *_years(span))
    starts = np.array([at for at, _ in changes], dtype=np.int64)
    offsets = np.array([off for _, off in changes], dtype=np.int64)
    lo, hi = (_MIN_MS + _SHIFT) // _HOUR, (_MAX_MS + _SHIFT) // _HOUR
    hour = np.asarray(hours, dtype=np.int64)
    hour = hour[(hour >= lo) & (hour <= hi)]
    # Vectorized: an hourly series over 30 years has ~260,000 hours to write.
    offset = offsets[np.searchsorted(starts, hour * _HOUR - _SHIFT, side="right") - 1]
    local = hour + offset // 3600  # the wall clock's hour, counted as ``hour`` is
    days, day_of = np.unique(local // 24, return_inverse=True)
    dates = [f"{_date_of(int(d))}T" for d in days]
    texts = {int(o): _offset_text(int(o)) for o in distinct_ints(offset)}
    rows = [
        (key, dates[d] + _HOURS[h], texts[o])
        for key, d, h, o in zip(
            (zone_id * HOUR_KEY + hour).tolist(),
            day_of.ravel().tolist(),
            (local % 24).tolist(),
            offset.tolist(),
            strict=True,
        )
    ]
    conn.executemany(f"INSERT OR IGNORE INTO {q(HOURS_TABLE)} VALUES (?, ?, ?)", rows)


_HOURS = [f"{h:02d}:" for h in range(24)]


def _offset_text(seconds: int) -> str:
    sign = "-" if seconds < 0 else "+"
    minutes = abs(seconds) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


@lru_cache(maxsize=256)
def zone_offsets(
    name: str, first_year: int = 1970, last_year: int = 2099
) -> tuple[tuple[int, int], ...]:
    """``(from_ms, offset_seconds)`` for each offset the zone takes in the UTC years
    ``first_year`` to ``last_year``, the first from the start of time.

    Cached per zone and span, and each year's changes per zone and year, for the
    process: an export of a few zones over a year or two costs milliseconds, not the
    ~60 ms a zone over 1970–2099 takes."""
    if zone_info(name) is None:
        return ((-(1 << 62), 0),)  # shown in UTC, as the reference does
    first_offset, _ = _year_changes(name, first_year)
    out = [(-(1 << 62), first_offset)]
    for year in range(first_year, last_year + 1):
        out.extend(_year_changes(name, year)[1])
    return tuple(out)


@lru_cache(maxsize=4096)
def _year_changes(name: str, year: int) -> tuple[int, tuple[tuple[int, int], ...]]:
    """The zone's offset at the start of the UTC ``year`` and ``(from_ms, offset)`` for
    each change in it (one at the next new year's instant included). Found by stepping
    a day at a time and bisecting each change to the second (zone rules change offsets
    at most a few times a year)."""
    tz = zone_info(name)
    assert tz is not None

    def offset(t: datetime) -> int:
        delta = t.astimezone(tz).utcoffset() or timedelta(0)
        return int(delta.total_seconds())

    t = datetime(year, 1, 1, tzinfo=UTC)
    end = datetime(year + 1, 1, 1, tzinfo=UTC)
    start = current = offset(t)
    out = []
    day = timedelta(days=1)
    while t < end:
        nxt = t + day
        if offset(nxt) != current:
            lo, hi = t, nxt
            while hi - lo > timedelta(seconds=1):
                mid = lo + (hi - lo) / 2
                if offset(mid) == current:
                    lo = mid
                else:
                    hi = mid
            current = offset(nxt)
            # The change is the whole second in (lo, hi]: floor, not int(), which
            # rounds a negative (pre-1970) instant up a second.
            out.append((math.floor(hi.timestamp()) * 1000, current))
        t = nxt
    return start, tuple(out)


# ---------------------------------------------------------------------- in a database
def rebuild_companions(
    conn: apsw.Connection, prefix: str, earlier: list[ViewSource], plan: ExportPlan
) -> None:
    """Drop our companion views under ``prefix`` and write them again over every
    partition there (the earlier exports' and this one's)."""
    companions = [
        _with_span(conn, prefix, s) for s in _companion_sources(conn, prefix, earlier, plan)
    ]
    hourly = [hour_aligned(c.time_reference, c.span) for c in companions]
    zone_ids = write_calendar(conn, [(c.time_reference, c.span) for c in companions], hourly=hourly)
    companions = [
        _with_hours(conn, prefix, c, zone_ids) if h else c
        for c, h in zip(companions, hourly, strict=True)
    ]
    legacy = [prefix + name for name in LEGACY_TYPED_VIEWS]
    for name in [*legacy, *companion_names(prefix, companions)]:
        actual = _our_companion(conn, name)
        if actual is not None:
            conn.execute(f"DROP VIEW {q(actual)}")
    views = _companion_views(prefix, companions, zone_ids, set())
    for _, sql in views:
        conn.execute(sql)
    led = _led(conn, [name for name, _ in views])
    if led:
        for name, sql in _companion_views(prefix, companions, zone_ids, led):
            if name in led:
                conn.execute(f"DROP VIEW {q(name)}")
                conn.execute(sql)


def _led(conn: apsw.Connection, names: list[str]) -> set[str]:
    """The views among ``names`` whose first row has a NULL ``value`` (a NaN: SQLite holds
    none), written again with the first row holding a value first.

    Polars (over sqlite3 or SQLAlchemy) types a column from its first 100 rows and
    fails on the first value past them when those were all NULL; ADBC and connectorx
    read the first rows too. Such a view gives its first row with a value first, then
    every other row in order (the leading NaN rows follow it), so every reader finds a
    number at once; a view whose first row holds a value is written as it is, and reads
    no slower."""
    out = set()
    for name in names:
        row = conn.execute(f"SELECT value IS NULL FROM {q(name)} LIMIT 1").fetchone()
        if row is not None and row[0]:
            out.add(name)
    return out


def _with_hours(
    conn: apsw.Connection, prefix: str, s: CompanionSource, zone_ids: dict[str, int]
) -> CompanionSource:
    """``s`` (its zone :func:`hour_aligned` over its span) marked hourly, with the rows
    of ``infrastore_zone_hours`` its instants (and issue times) need: the span's hours
    when the values have at least as many rows, else the hours that hold instants. So
    never more rows than the data has, whatever the span."""
    assert s.time_reference is not None and s.span is not None
    values = q(prefix + s.base + "_values")
    columns = ["timestamp", *(["issue_time"] if s.type.is_forecast else [])]
    first = (max(s.span[0], _MIN_MS) + _SHIFT) // _HOUR
    last = (min(s.span[1], _MAX_MS) + _SHIFT) // _HOUR
    (top,) = conn.execute(f"SELECT max(rowid) FROM {values}").fetchone()
    if top is not None and last - first < top:
        # No fewer rows than the span has hours (an upper bound: one B-tree descent):
        # every hour of the span, without reading the values.
        hours = np.arange(first, last + 1, dtype=np.int64)
    else:
        # Sparser: the hours that hold instants. One statement, SQLite dedupes (UNION).
        sql = " UNION ".join(
            f"SELECT {_div(f'({c} + {_SHIFT})', _HOUR)} FROM {values} WHERE {c} BETWEEN ? AND ?"
            for c in columns
        )
        cursor = conn.execute(sql, (_MIN_MS, _MAX_MS) * len(columns))
        hours = np.fromiter((h for (h,) in cursor), dtype=np.int64)
    write_zone_hours(conn, s.time_reference, zone_ids[s.time_reference], hours, s.span)
    return replace(s, hourly=True)


def _with_span(conn: apsw.Connection, prefix: str, s: CompanionSource) -> CompanionSource:
    """``s`` with the span of its instants (the flat view's ISO text covers it).

    A grid's span comes from its series rows, one row per distinct grid (cheap: no
    value row is read); it may reach a little past the last instant (the longest
    series from the latest start), which only adds a year's offsets. The irregular
    types have no grid, and a grid whose rows do not parse (another writer's file) is
    not trusted: their values are scanned for the smallest and largest instant."""
    span = None
    if not s.type.is_irregular:
        try:
            span = _grid_span(conn, q(prefix + s.base + "_series"), s.type.is_forecast)
        except (InvalidParameterError, TypeError, ValueError):
            span = None
    if span is None:
        row = conn.execute(
            f"SELECT min(timestamp), max(timestamp) FROM {q(prefix + s.base + '_values')}"
        ).fetchone()
        span = (int(row[0]), int(row[1])) if row and row[0] is not None else None
    return replace(s, span=span)


def _grid_span(conn: apsw.Connection, series: str, forecast: bool) -> tuple[int, int] | None:
    """First and (at least) last instant of the grids in the series table ``series``."""
    if forecast:
        grids = conn.execute(
            "SELECT min(initial_timestamp), max(initial_timestamp), interval, horizon, "
            f"max(count) FROM {series} GROUP BY interval, horizon"
        ).fetchall()
        ends = [
            (lo, hi + max(n - 1, 0) * _upper_ms(interval) + _upper_ms(horizon))
            for lo, hi, interval, horizon, n in grids
        ]
    else:
        grids = conn.execute(
            "SELECT min(initial_timestamp), max(initial_timestamp), resolution, max(length) "
            f"FROM {series} GROUP BY resolution"
        ).fetchall()
        ends = [(lo, hi + max(n, 1) * _upper_ms(res)) for lo, hi, res, n in grids]
    if not ends:
        return None
    return int(min(lo for lo, _ in ends)), int(max(hi for _, hi in ends))


def _upper_ms(text: str) -> int:
    """A period's length in ms, or for a calendar period an upper bound (31-day months)."""
    period = Period.parse(text)
    return period.months * 31 * 86_400_000 if period.calendar else period.ms


def value_sql_type(p: Partition) -> str:
    """The declared type of a partition's ``value`` column: REAL, INTEGER or TEXT."""
    et = p.key.et
    return "TEXT" if et.is_composite else sql_value_type(et.dtype, p.key.element_shape)


def _companion_sources(
    conn: apsw.Connection, prefix: str, earlier: list[ViewSource], plan: ExportPlan
) -> list[CompanionSource]:
    """Every partition under ``prefix`` as the companion views read it."""
    out = []
    for src in earlier:
        # An earlier export's partition: its value type and reference from its tables.
        columns = conn.execute(f"PRAGMA table_info({q(prefix + src.base + '_values')})")
        declared = {c[1]: (c[2] or "").upper() for c in columns}
        reference = conn.execute(
            f"SELECT time_reference FROM {q(prefix + src.base + '_series')} LIMIT 1"
        ).fetchall()
        vtype = declared.get("value", "TEXT")
        out.append(
            CompanionSource(
                src.base,
                src.type,
                vtype if vtype in ("REAL", "INTEGER") else "TEXT",
                (reference[0][0] or None) if reference else None,
            )
        )
    for pp in plan.partitions:
        p = pp.partition
        out.append(CompanionSource(p.base, p.key.type, value_sql_type(p), p.key.time_reference))
    return out


def _our_companion(conn: apsw.Connection, name: str) -> str | None:
    """The name SQLite holds for our companion view ``name`` (matched case-insensitively),
    or None when there is none."""
    row = conn.execute(
        "SELECT name, type, sql FROM sqlite_master WHERE lower(name) = lower(?)", (name,)
    ).fetchone()
    if row is None or row[1] != "view" or COMPANION_MARKER not in (row[2] or ""):
        return None
    return row[0]


def check_companions(
    conn: apsw.Connection, prefix: str, earlier: list[ViewSource], plan: ExportPlan
) -> None:
    """Refuse, before anything is written, a name a companion view or the provenance
    table would take that something else holds."""
    existing = {
        name.lower(): (kind, sql)
        for name, kind, sql in conn.execute("SELECT name, type, sql FROM sqlite_master")
    }
    hits = []
    for name in companion_names(prefix, _companion_sources(conn, prefix, earlier, plan)):
        entry = existing.get(name.lower())
        if entry is not None and not (entry[0] == "view" and COMPANION_MARKER in (entry[1] or "")):
            hits.append(name)
    ours = {PROVENANCE_TABLE: PROVENANCE_COLUMNS, **CALENDAR_COLUMNS}
    for table, columns in ours.items():
        entry = existing.get(table.lower())
        if entry is not None:
            have = {c[1] for c in conn.execute(f"PRAGMA table_info({q(table)})")}
            if entry[0] != "table" or not {c for c, _ in columns} <= have:
                hits.append(table)
    if hits:
        raise InvalidParameterError(
            f"the database already holds {', '.join(hits)}, which this export writes beside "
            "its tables (typed views, the export log, the calendar) and which is not one of "
            "ours; nothing "
            "was written. Rename or drop it, or export into a new file.",
            table=hits[0],
        )


# ---------------------------------------------------------------------- provenance
class ExportOrigin:
    """What the provenance row records about an export: its source and selection."""

    def __init__(
        self,
        store: Store,
        prefix: str,
        time_range: tuple[datetime, datetime] | None,
        include_derived: bool,
        filters: dict[str, Any],
        provenance: str = "name",
    ) -> None:
        # A file is handed out: by default it names the store (its directory's name), not
        # where the store lives (a path says whose machine, whose home, which project).
        path = Path(store.path).resolve()
        self.store = str(path) if provenance == "full" else path.name
        self.prefix = prefix
        self.time_range = time_range
        self.include_derived = include_derived
        self.filters = filters

    def row(self, plan: ExportPlan) -> tuple[Any, ...]:
        """The provenance row's values, in ``PROVENANCE_COLUMNS`` order (after ``id``)."""
        start, end = self.time_range or (None, None)
        values = (
            datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "infrastore-sqlite",
            __version__,
            self.store,
            self.prefix,
            orjson.dumps(self.filters, default=_plain, option=orjson.OPT_SORT_KEYS).decode(),
            None if start is None else start.isoformat(),
            None if end is None else end.isoformat(),
            int(self.include_derived),
            orjson.dumps([pp.partition.base for pp in plan.partitions]).decode(),
            sum(len(pp.ids) for pp in plan.partitions),
            plan.total_rows,
        )
        assert len(values) == len(PROVENANCE_COLUMNS) - 1
        return values


def _plain(value: Any) -> Any:
    """A selection value as JSON holds it (sets and tuples as lists, the rest as text)."""
    if isinstance(value, set | frozenset | tuple):
        return sorted(value, key=str) if isinstance(value, set | frozenset) else list(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def provenance_ddl() -> str:
    body = ", ".join(f"{c} {t}" for c, t in PROVENANCE_COLUMNS)
    return f"CREATE TABLE IF NOT EXISTS {q(PROVENANCE_TABLE)} ({body})"


def provenance_insert() -> str:
    cols = [c for c, _ in PROVENANCE_COLUMNS[1:]]
    return (
        f"INSERT INTO {q(PROVENANCE_TABLE)} ({', '.join(cols)}) "
        f"VALUES ({', '.join('?' * len(cols))})"
    )
