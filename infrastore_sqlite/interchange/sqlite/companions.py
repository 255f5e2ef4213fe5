"""The typed companions an export writes beside the three fixed-name views, and the
provenance table.

``all_values`` unions REAL cells (scalar partitions), INTEGER cells and JSON text (shaped,
tuple and composite partitions) in one column, which readers that type a column once
(Polars, connectorx, ADBC, pandas, DuckDB) cannot read. The companions keep each column
one type:

* ``<prefix>all_values_real``, ``…_integer``, ``…_json``: ``all_values`` split by the
  storage class of ``value`` (a view is written only when some partition has that class;
  a key column none of its partitions has is left out rather than read as all NULL);
* ``<prefix>flat_<base>``: one per partition, its series joined to its values (the
  layout's "a view flattens it once"), with the instants also as ISO-8601 text in the
  partition's time reference, written in SQL that SQLite and DuckDB both bind (DuckDB
  types a view it cannot bind as all text).

No companion name ends in ``_values``, ``_series`` or ``_arrays``, and every one is a
view, so no import takes one for a partition. The provenance table
(``infrastore_exports``) gets one row per export; it too ends in none of those words.

Every statement is built from validated names (:func:`.schema.q`); data goes in as bound
parameters. May import: :mod:`infrastore_sqlite.interchange.layout`, :mod:`.schema`,
:mod:`.isotext` (the ISO text's SQL), :mod:`infrastore_sqlite.core` and below.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import orjson

from ..._version import __version__
from ...core.periods import Period
from ...errors import InvalidParameterError
from ...model import TimeSeriesType
from ..layout import Partition, values_key_columns
from ..plan import ExportPlan
from .cells import sql_value_type

# iso_sql and zone_offsets: re-exported where callers found them before isotext existed.
from .isotext import iso_sql as iso_sql
from .isotext import iso_stages
from .isotext import zone_offsets as zone_offsets
from .schema import ViewSource, q

if TYPE_CHECKING:
    from ...store import Store

COMPANION_MARKER = "infrastore-sqlite: typed companion"
PROVENANCE_TABLE = "infrastore_exports"

# The typed views over all_values, by the declared type of a partition's value column.
TYPED_VIEWS = {
    "REAL": "all_values_real",
    "INTEGER": "all_values_integer",
    "TEXT": "all_values_json",
}
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
    #: ``(first_ms, last_ms)`` covering the partition's instants (a zone's offsets are
    #: written for that span's UTC years only); None before the tables are written.
    span: tuple[int, int] | None = None


def typed_view_name(prefix: str, value_sql_type: str) -> str:
    return prefix + TYPED_VIEWS[value_sql_type]


def flat_view_name(prefix: str, base: str) -> str:
    return f"{prefix}{FLAT_PREFIX}{base}"


def companion_names(prefix: str, sources: Sequence[CompanionSource]) -> list[str]:
    """Every companion view the sources give, typed views first."""
    classes = {s.value_sql_type for s in sources}
    typed = [typed_view_name(prefix, c) for c in TYPED_VIEWS if c in classes]
    return typed + [flat_view_name(prefix, s.base) for s in sources]


def companion_sql(prefix: str, sources: Sequence[CompanionSource]) -> list[str]:
    """``CREATE VIEW`` statements of every companion over ``sources``."""
    out = []
    for cls in TYPED_VIEWS:
        members = [s for s in sources if s.value_sql_type == cls]
        if members:
            out.append(_typed_view(prefix, cls, members))
    out.extend(_flat_view(prefix, s) for s in sorted(sources, key=lambda s: s.base.encode()))
    return out


def _typed_view(prefix: str, cls: str, members: Sequence[CompanionSource]) -> str:
    present = {c for s in members for c, _ in values_key_columns(s.type)}
    keys = [c for c in ("issue_time", "percentile", "scenario") if c in present]
    ordered = sorted(members, key=lambda s: s.base.encode())
    # A column a member lacks comes from a subquery of no rows over a table that has
    # it, joined on: NULL like a literal, but a column with a declared type, so readers
    # that type a column by its declaration (connectorx, DuckDB, SQLAlchemy) find one
    # even when the first row holds NULL there. (``LIMIT 0`` keeps the join free; a
    # ``LEFT JOIN … ON 0`` would scan the other table once per row.)
    carrier = {c: next(s for s in ordered if c in _key_names(s)) for c in keys}
    selects = []
    for s in ordered:
        have = _key_names(s)
        cols = ["v.array_id", "v.timestamp"]
        joins = []
        for c in keys:
            if c in have:
                cols.append(f"v.{c}")
            else:
                table = q(prefix + carrier[c].base + "_values")
                joins.append(f" LEFT JOIN (SELECT {c} FROM {table} LIMIT 0) AS n_{c} ON 1")
                cols.append(f"n_{c}.{c}")
        literal = s.base.replace("'", "''")
        selects.append(
            f"SELECT '{literal}' AS partition_name, {', '.join(cols)}, v.value "
            f"FROM {q(prefix + s.base + '_values')} AS v{''.join(joins)}"
        )
    return (
        f"CREATE VIEW {q(typed_view_name(prefix, cls))} AS /* {COMPANION_MARKER} */ "
        + " UNION ALL ".join(selects)
    )


def _key_names(s: CompanionSource) -> set[str]:
    return {c for c, _ in values_key_columns(s.type)}


def _flat_view(prefix: str, s: CompanionSource) -> str:
    """The flat view: the values (with the steps of their ISO text as columns of nested
    derived tables, so no step's SQL is written twice) joined to their series."""
    series = [f"s.{c}" if c == alias else f"s.{c} AS {alias}" for c, alias in FLAT_SERIES_COLUMNS]
    keys = [c for c, _ in values_key_columns(s.type)]
    instants = [("timestamp", "ts_")] + [("issue_time", "it_")] * ("issue_time" in keys)
    built = [iso_stages(f"v.{c}", name, s.time_reference, s.span) for c, name in instants]
    # Every stage carries the values table's columns on, beside both instants' steps.
    plain = ["array_id", "timestamp", *keys, "value"]
    sql = f"FROM {q(prefix + s.base + '_values')} AS v"
    for i in range(len(built[0][0])):
        carried = [f"v.{c}" if i == 0 else f"x{i}.{c}" for c in plain]
        steps = [f"{expr} AS {alias}" for stages, _ in built for alias, expr in stages[i]]
        sql = f"SELECT {', '.join(carried + steps)} " + (sql if i == 0 else f"FROM ({sql}) AS x{i}")
    cols = [*series, "x.timestamp", f"{built[0][1]} AS timestamp_iso"]
    for c in keys:
        cols.append(f"x.{c}")
        if c == "issue_time":
            cols.append(f"{built[1][1]} AS issue_time_iso")
    cols.append("x.value")
    return (
        f"CREATE VIEW {q(flat_view_name(prefix, s.base))} AS /* {COMPANION_MARKER} */ "
        f"SELECT {', '.join(cols)} FROM ({sql}) AS x "
        f"JOIN {q(prefix + s.base + '_series')} AS s USING (array_id)"
    )


# ---------------------------------------------------------------------- in a database
def rebuild_companions(
    conn: apsw.Connection, prefix: str, earlier: list[ViewSource], plan: ExportPlan
) -> None:
    """Drop our companion views under ``prefix`` and write them again over every
    partition there (the earlier exports' and this one's)."""
    companions = [
        _with_span(conn, prefix, s) for s in _companion_sources(conn, prefix, earlier, plan)
    ]
    for name in companion_names(prefix, companions):
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
    ) -> None:
        self.store = str(Path(store.path).resolve())
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
