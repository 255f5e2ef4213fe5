"""ISO-8601 text of millisecond instants, in SQL that SQLite and DuckDB both bind.

The flat views (:mod:`.companions`) show each instant as text in its partition's time
reference. DuckDB's SQLite reader binds a view's SQL in its own dialect and types every
column of a view it cannot bind as text, so the SQL here uses only what both engines
read alike: no ``strftime`` (they disagree on it), integer division spelled so both
give the same integer (SQLite divides integers to an integer, DuckDB to a double), and
``printf``, which both have.

The calendar date is integer arithmetic (days from the epoch to a proleptic Gregorian
year, month and day), so the SQL is a few hundred bytes whatever the data's span; only
a zone needs a CASE, over its offset changes in the UTC years the data touches.

May import: :mod:`infrastore_sqlite.core` and below.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from ...core.timeref import reference_kind, zone_info

_DAY = 86_400_000
# 400 Gregorian years: 146097 days. Instants are shifted forward by _ERAS of them before
# any division, so every dividend is non-negative from the year 1 on (the civil
# arithmetic counts from 0000-03-01, 719468 days before the epoch).
_ERA_DAYS = 146_097
_ERAS = 5
_SHIFT_MS = _ERAS * _ERA_DAYS * _DAY
_EPOCH_FROM_0000_03_01 = 719_468


def _year_ms(year: int) -> int:
    return int(datetime(year, 1, 1, tzinfo=UTC).timestamp()) * 1000


# The instants rendered without a span: the years 1–9999 ISO's four digits (and Python's
# datetime) hold. Outside them the text is NULL.
_FIRST_MS = _year_ms(1)
_LAST_MS = _year_ms(9999) + 365 * _DAY - 1
# A zone's offsets are taken where datetime and the tz database answer.
_MIN_MS = _year_ms(1900)
_MAX_MS = _year_ms(2200) - 1


def _div(a: str, b: int) -> str:
    """``floor(a / b)`` for ``a >= 0``, the same integer in SQLite and DuckDB."""
    return f"CAST(({a} - {a} % {b}) / {b} AS BIGINT)"


def iso_stages(
    column: str, name: str, time_reference: str | None, span: tuple[int, int] | None = None
) -> tuple[list[list[tuple[str, str]]], str]:
    """The ISO text of the instant ``column`` as derived-table stages and a last
    expression.

    Parameters
    ----------
    column
        SQL naming the millisecond instant in the innermost stage's ``FROM``.
    name
        A prefix for the intermediate columns (``name + "o"`` …), unique in the query.
    time_reference
        The partition's time reference.
    span
        First and last millisecond of the data; a zone's offsets cover its UTC years
        (1970–2099 without one), and its text is NULL outside them.

    Returns
    -------
    stages, last
        ``stages[i]`` is the ``(alias, expression)`` list the ``i``-th nested ``SELECT``
        adds (each reads only columns of the stages before it, the first only
        ``column``); ``last`` is the ISO text over the last stage's columns.
    """
    kind = reference_kind(time_reference or None)
    c, o = f"{name}c", f"{name}o"
    in_range = f"{column} >= {_FIRST_MS} AND {column} <= {_LAST_MS}"
    if kind == "zone":
        assert time_reference is not None
        first, last = _years(span) if span is not None else (1970, 2099)
        lo, hi = _year_ms(first), _year_ms(last + 1)
        tree = _tree(column, _segments(zone_offsets(time_reference, first, last), lo, hi))
        offset = f"CASE WHEN {column} >= {lo} AND {column} < {hi} THEN {tree} END"
        suffix = "%s%02d:%02d"
        zone_parts = [
            f"CASE WHEN {o} < 0 THEN '-' ELSE '+' END",
            _div(f"abs({o})", 3_600_000),
            _div(f"(abs({o}) % 3600000)", 60_000),
        ]
    else:
        fixed = 0
        if kind == "offset":
            assert time_reference is not None
            sign = -1 if time_reference[0] == "-" else 1
            fixed = sign * (int(time_reference[1:3]) * 60 + int(time_reference[4:6])) * 60_000
        offset = f"CASE WHEN {in_range} THEN {fixed} END"
        text = {"zoneless": "", "offset": time_reference, "utc": "Z", "unspecified": "Z"}[kind]
        suffix, zone_parts = text or "", []
    d, f, e, a, y, r, m = (f"{name}{x}" for x in "dfeayrm")
    shifted = f"({c} + {o} + {_SHIFT_MS})"
    stages = [
        [(c, column), (o, offset)],
        [(o, o), (d, _div(shifted, _DAY)), (f, f"{shifted} % {_DAY}")],
        [
            (o, o),
            (f, f),
            (e, _div(f"({d} + {_EPOCH_FROM_0000_03_01})", _ERA_DAYS)),
            (a, f"({d} + {_EPOCH_FROM_0000_03_01}) % {_ERA_DAYS}"),
        ],
        # The year of the era (from March), then the day of that year, then the month
        # from March (0–11): the days-to-civil steps, each its own column so no step's
        # SQL is written twice.
        [
            (o, o),
            (f, f),
            (e, e),
            (a, a),
            (y, _div(f"({a} - {_div(a, 1460)} + {_div(a, 36524)} - {_div(a, 146096)})", 365)),
        ],
        [(o, o), (f, f), (e, e), (y, y), (r, f"{a} - (365 * {y} + {_div(y, 4)} - {_div(y, 100)})")],
        [(o, o), (f, f), (e, e), (y, y), (r, r), (m, _div(f"(5 * {r} + 2)", 153))],
    ]
    parts = [
        f"{e} * 400 - {_ERAS * 400} + {y} + CASE WHEN {m} >= 10 THEN 1 ELSE 0 END",
        f"{m} + CASE WHEN {m} < 10 THEN 3 ELSE -9 END",
        f"{r} - {_div(f'(153 * {m} + 2)', 5)} + 1",
        _div(f, 3_600_000),
        _div(f"({f} % 3600000)", 60_000),
        _div(f"({f} % 60000)", 1000),
        f"{f} % 1000",
        *zone_parts,
    ]
    last = (
        f"CASE WHEN {o} IS NOT NULL THEN "
        f"printf('%04d-%02d-%02dT%02d:%02d:%02d.%03d{suffix}', {', '.join(parts)}) END"
    )
    return stages, last


def iso_sql(column: str, time_reference: str | None, span: tuple[int, int] | None = None) -> str:
    """One SQL expression rendering the millisecond instant ``column`` as ISO-8601 text,
    as the reference reads it back: UTC with ``Z`` (utc, unspecified), at the fixed
    offset, in the zone (its offset at that instant), or a bare wall clock (zoneless).

    A scalar subquery over :func:`iso_stages` (a view reads the stages as derived
    tables instead). NULL outside the years 1–9999, and in a zone outside the UTC years
    ``span`` touches (1970–2099 without one)."""
    stages, last = iso_stages(column, "iso_", time_reference, span)
    return "(" + nest(stages, last, "") + ")"


def nest(stages: Sequence[Sequence[tuple[str, str]]], last: str, source: str) -> str:
    """``SELECT last FROM (… (SELECT stage 0 FROM source) …)``: each stage a derived
    table over the one before (``source`` is the innermost ``FROM`` clause, or empty)."""
    sql = ""
    for i, stage in enumerate(stages):
        cols = ", ".join(f"{expr} AS {alias}" for alias, expr in stage)
        sql = f"SELECT {cols} " + (f"FROM ({sql}) AS iso_{i}" if i else source)
    return f"SELECT {last} FROM ({sql}) AS iso_{len(stages)}"


def _years(span: tuple[int, int]) -> tuple[int, int]:
    """The UTC years a millisecond span touches, kept where datetime and the tz
    database answer (instants past them render as NULL)."""

    def year(ms: int) -> int:
        ms = min(max(ms, _MIN_MS), _MAX_MS)
        return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)).year

    return year(span[0]), year(span[1])


def _segments(changes: Sequence[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """``(from_ms, offset_ms)`` for each offset in ``[lo, hi)``, equal neighbours merged."""
    out: list[tuple[int, int]] = []
    bounds = [*(ch[0] for ch in changes[1:]), 1 << 62]
    for (start, offset), end in zip(changes, bounds, strict=True):
        if max(start, lo) < min(end, hi) and (not out or out[-1][1] != offset * 1000):
            out.append((max(start, lo), offset * 1000))
    return out


def _tree(column: str, segments: Sequence[tuple[int, int]]) -> str:
    """A balanced CASE over the segments' offsets: about log2(n) tests a row."""
    if len(segments) == 1:
        return str(segments[0][1])
    mid = len(segments) // 2
    left, right = _tree(column, segments[:mid]), _tree(column, segments[mid:])
    return f"CASE WHEN {column} < {segments[mid][0]} THEN {left} ELSE {right} END"


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
            out.append((int(hi.timestamp()) * 1000, current))
        t = nxt
    return start, tuple(out)
