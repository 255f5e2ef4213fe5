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
parameters. May import: :mod:`infrastore_sqlite.interchange.layout`, :mod:`.schema`,
:mod:`infrastore_sqlite.core` and below.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import orjson

from ..._version import __version__
from ...core.periods import Period
from ...core.timeref import reference_kind, zone_info
from ...errors import InvalidParameterError
from ...model import TimeSeriesType
from ..layout import KEY_KINDS, Partition, key_kind, values_key_columns
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

# The series columns a flattened view carries (what a spreadsheet user filters and
# facets by); ``id`` is renamed so the view's own columns do not read as a catalog.
FLAT_SERIES_COLUMNS = (
    ("id", "series_id"),
    ("owner_id", "owner_id"),
    ("owner_type", "owner_type"),
    ("owner_category", "owner_category"),
    ("name", "name"),
    ("units", "units"),
    ("quantity_kind", "quantity_kind"),
    ("features", "features"),
)

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


def companion_sql(prefix: str, sources: Sequence[CompanionSource]) -> list[str]:
    """``CREATE VIEW`` statements of every companion over ``sources``."""
    out = [_typed_view(prefix, c, k, m) for c, k, m in _typed_groups(sources)]
    out.extend(_flat_view(prefix, s) for s in sorted(sources, key=lambda s: s.base.encode()))
    return out


def _typed_view(prefix: str, cls: str, kind: str, members: Sequence[CompanionSource]) -> str:
    # Every member has the same key columns, so no column of the view is NULL by
    # construction: a reader that types a column from its first rows (Polars over
    # sqlite3, pandas) finds the type there. Every member's ``value`` is declared the
    # same type, so the affinity SQLite gives the union's column (its first SELECT's)
    # changes no value: integers stay exact.
    keys = [c for c, _ in values_key_columns(members[0].type)]
    cols = ", ".join(["array_id", "timestamp", *keys, "value"])
    selects = []
    for s in sorted(members, key=lambda s: s.base.encode()):
        literal = s.base.replace("'", "''")
        selects.append(
            f"SELECT '{literal}' AS partition_name, {cols} FROM {q(prefix + s.base + '_values')}"
        )
    return (
        f"CREATE VIEW {q(typed_view_name(prefix, cls, kind))} AS /* {COMPANION_MARKER} */ "
        + " UNION ALL ".join(selects)
    )


def _flat_view(prefix: str, s: CompanionSource) -> str:
    series = [f"s.{c}" if c == alias else f"s.{c} AS {alias}" for c, alias in FLAT_SERIES_COLUMNS]
    iso = iso_sql("v.timestamp", s.time_reference, s.span)
    cols = [*series, "v.timestamp", f"{iso} AS timestamp_iso"]
    for c, _ in values_key_columns(s.type):
        cols.append(f"v.{c}")
        if c == "issue_time":
            cols.append(f"{iso_sql('v.issue_time', s.time_reference, s.span)} AS issue_time_iso")
    cols.append("v.value")
    return (
        f"CREATE VIEW {q(flat_view_name(prefix, s.base))} AS /* {COMPANION_MARKER} */ "
        f"SELECT {', '.join(cols)} FROM {q(prefix + s.base + '_values')} AS v "
        f"JOIN {q(prefix + s.base + '_series')} AS s USING (array_id)"
    )


# ---------------------------------------------------------------------- ISO-8601 text
# The ISO text is written in the SQL that SQLite and DuckDB share, so DuckDB's SQLite
# reader (which binds a view's SQL in its own dialect, and types every column of a view
# it cannot bind as text) reads the flat views typed: no ``strftime`` (the two disagree
# on it), integer division spelled so both give the same integer (SQLite divides
# integers to an integer, DuckDB to a double), and ``printf``, which both have.
_DAY = 86_400_000


def iso_sql(column: str, time_reference: str | None, span: tuple[int, int] | None = None) -> str:
    """SQL rendering the millisecond instant ``column`` as ISO-8601 text, as the
    reference reads it back: UTC with ``Z`` (utc, unspecified), at the fixed offset, in
    the zone (its offset at that instant), or a bare wall clock (zoneless).

    The text is built from the months of the UTC years ``span`` (first and last
    millisecond) touches, or of 1970–2099 without one: a balanced CASE finds an
    instant's month (and, in a zone, its offset) in about log2(months) tests, and the
    day and time are arithmetic from the month's start. An instant outside those years
    gives NULL (an export's span covers every instant it writes)."""
    kind = reference_kind(time_reference or None)
    first, last = _years(span) if span is not None else (1970, 2099)
    if kind in ("utc", "unspecified", "zoneless"):
        changes: Sequence[tuple[int, int]] = ((-(1 << 62), 0),)
        suffix = None if kind == "zoneless" else "Z"
    elif kind == "offset":
        assert time_reference is not None
        sign = -1 if time_reference[0] == "-" else 1
        minutes = sign * (int(time_reference[1:3]) * 60 + int(time_reference[4:6]))
        changes, suffix = ((-(1 << 62), minutes * 60),), time_reference
    else:
        assert time_reference is not None
        changes, suffix = zone_offsets(time_reference, first, last), None
    pieces = _pieces(changes, first, last)
    lo, hi = _year_ms(first), _year_ms(last + 1)
    tree = _tree(column, pieces, 0, len(pieces), suffix, kind == "zoneless")
    return f"CASE WHEN {column} >= {lo} AND {column} < {hi} THEN {tree} END"


def _year_ms(year: int) -> int:
    return int(datetime(year, 1, 1, tzinfo=UTC).timestamp()) * 1000


def _years(span: tuple[int, int]) -> tuple[int, int]:
    """The UTC years a millisecond span touches, kept where datetime and the tz
    database answer (instants past them render as NULL)."""

    def year(ms: int) -> int:
        ms = min(max(ms, _MIN_MS), _MAX_MS)
        return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)).year

    return year(span[0]), year(span[1])


_MIN_MS = _year_ms(1900)
_MAX_MS = _year_ms(2200) - 1


@dataclass(frozen=True, slots=True)
class _Piece:
    """Instants from ``start`` (UTC ms) on, up to the next piece: one offset, one month."""

    start: int
    offset: int  # seconds
    month_start: int  # the month's first wall-clock instant minus the offset, in UTC ms
    prefix: str  # "YYYY-MM-"


def _pieces(changes: Sequence[tuple[int, int]], first: int, last: int) -> list[_Piece]:
    """The pieces covering the UTC years ``first``–``last``: each offset segment of
    ``changes`` cut at the wall-clock month starts in it."""
    lo, hi = _year_ms(first), _year_ms(last + 1)
    # Wall-clock months from the December before to the January after: offsets are
    # within a day, so these cover every instant of the years.
    months = [(first - 1, 12)]
    months += [(y, m) for y in range(first, last + 1) for m in range(1, 13)]
    months += [(last + 1, 1), (last + 1, 2)]
    walls = [int(datetime(y, m, 1, tzinfo=UTC).timestamp()) * 1000 for y, m in months]
    out: list[_Piece] = []
    bounds = [*(c[0] for c in changes[1:]), 1 << 62]
    for (start, offset), end in zip(changes, bounds, strict=True):
        a, b = max(start, lo), min(end, hi)
        if a >= b:
            continue
        for i in range(len(months) - 1):
            m_start, m_end = walls[i] - offset * 1000, walls[i + 1] - offset * 1000
            p, q_ = max(a, m_start), min(b, m_end)
            if p < q_:
                y, m = months[i]
                out.append(_Piece(p, offset, m_start, f"{y:04d}-{m:02d}-"))
    return out


def _div(a: str, b: int) -> str:
    """``floor(a / b)`` for ``a >= 0``, the same integer in SQLite and DuckDB."""
    return f"CAST(({a} - {a} % {b}) / {b} AS BIGINT)"


def _leaf(column: str, piece: _Piece, suffix: str | None, zoneless: bool) -> str:
    """The ISO text of an instant in ``piece``: day and time from the month's start."""
    since = f"({column} - {piece.month_start})"  # >= 0 inside the piece
    if suffix is None and not zoneless:
        suffix = _offset_text(piece.offset)
    parts = [
        f"{_div(since, _DAY)} + 1",
        _div(f"({since} % {_DAY})", 3_600_000),
        _div(f"({since} % 3600000)", 60_000),
        _div(f"({since} % 60000)", 1000),
        f"{since} % 1000",
    ]
    fmt = f"{piece.prefix}%02dT%02d:%02d:%02d.%03d{suffix or ''}"
    return f"printf('{fmt}', {', '.join(parts)})"


def _tree(
    column: str, pieces: Sequence[_Piece], lo: int, hi: int, suffix: str | None, zoneless: bool
) -> str:
    """A balanced CASE over the pieces: about log2(n) tests a row."""
    if hi - lo == 1:
        return _leaf(column, pieces[lo], suffix, zoneless)
    mid = (lo + hi) // 2
    left = _tree(column, pieces, lo, mid, suffix, zoneless)
    right = _tree(column, pieces, mid, hi, suffix, zoneless)
    return f"CASE WHEN {column} < {pieces[mid].start} THEN {left} ELSE {right} END"


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
            out.append((int(hi.timestamp()) * 1000, current))
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
    legacy = [prefix + name for name in LEGACY_TYPED_VIEWS]
    for name in [*legacy, *companion_names(prefix, companions)]:
        actual = _our_companion(conn, name)
        if actual is not None:
            conn.execute(f"DROP VIEW {q(actual)}")
    for sql in companion_sql(prefix, companions):
        conn.execute(sql)


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
    entry = existing.get(PROVENANCE_TABLE.lower())
    if entry is not None:
        have = {c[1] for c in conn.execute(f"PRAGMA table_info({q(PROVENANCE_TABLE)})")}
        if entry[0] != "table" or not {c for c, _ in PROVENANCE_COLUMNS} <= have:
            hits.append(PROVENANCE_TABLE)
    if hits:
        raise InvalidParameterError(
            f"the database already holds {', '.join(hits)}, which this export writes beside "
            "its tables (typed views, the export log) and which is not one of ours; nothing "
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
