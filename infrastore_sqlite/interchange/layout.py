"""The interchange layout, independent of any container.

Partition keys and their order, table names and slugs, the array key (``data_hash``,
``time_axis``), the per-type columns, the table-prefix rules, and the DDL and view SQL of
the SQLite container. Nothing here touches a database: the exporter, the importer and a
future Parquet writer all plan with these functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..core.elements import DTYPE_NAMES, ElementType, parse_element_type
from ..core.periods import Period
from ..core.timeref import ms_to_axis_instant, reference_kind, reference_slug
from ..errors import InvalidParameterError
from ..model import TimeSeriesType

TYPE_NAMES: tuple[str, ...] = tuple(t.name for t in TimeSeriesType)
VIEW_MARKER = "infrastore: every partition under this prefix"
VIEW_NAMES = ("all_values", "all_series", "all_arrays")
_PREFIX_ALPHABET = re.compile(r"^[A-Za-z0-9_]*$")
_COMPOSITE_ORDER = ("linear_function", "quadratic_function", "piecewise_linear", "piecewise_step")


# ---------------------------------------------------------------------- prefix rules
def validate_prefix(prefix: str) -> str:
    """Check a table prefix against the layout's rules, in the reference's order.

    Raises
    ------
    InvalidParameterError
        Naming the rule the prefix breaks and how to fix it.
    """
    if not isinstance(prefix, str):
        raise InvalidParameterError(f"table prefix must be a string, not {type(prefix).__name__}")
    if prefix == "":
        return prefix
    if not _PREFIX_ALPHABET.match(prefix):
        raise InvalidParameterError(
            f"table prefix \"{prefix}\" may only contain ASCII letters, digits and '_'"
        )
    if prefix[0].isdigit():
        raise InvalidParameterError(
            f'table prefix "{prefix}" must not start with a digit, which would make its table '
            "names need quoting"
        )
    if prefix.lower().startswith("sqlite_"):
        raise InvalidParameterError(
            f'table prefix "{prefix}" starts with "sqlite_", which SQLite reserves for its own '
            "tables"
        )
    if not prefix.endswith("_"):
        raise InvalidParameterError(f'table prefix "{prefix}" must end in \'_\' (e.g. "{prefix}_")')
    for segment in prefix.split("_"):
        if segment in TYPE_NAMES:
            raise InvalidParameterError(
                f'table prefix "{prefix}" contains the time-series type name "{segment}", which '
                "would make its tables readable as another prefix's"
            )
    return prefix


# ---------------------------------------------------------------------- partition keys
@dataclass(frozen=True, slots=True)
class PartitionKey:
    """(time_series_type, value type, time_reference) — one set of three tables."""

    type: TimeSeriesType
    element_type: str  # canonical element type
    element_shape: tuple[int, ...]  # per-step shape E; () for composites (kind alone)
    time_reference: str | None

    @property
    def et(self) -> ElementType:
        return parse_element_type(self.element_type)

    @property
    def value_slug(self) -> str:
        et = self.et
        if et.is_composite:
            return et.kind
        if et.kind == "tuple":
            return f"tuple{et.n}_{et.dtype}"
        if self.element_shape:
            return f"{et.dtype}_{'x'.join(map(str, self.element_shape))}"
        return et.dtype

    @property
    def reference_label(self) -> str:
        """The reference as the return dict and views spell it (``unspecified`` for None)."""
        return "unspecified" if self.time_reference is None else self.time_reference

    @property
    def stem(self) -> str:
        """``<Type>_<value-slug>_<reference-slug>``, before any collision suffix."""
        return f"{self.type.name}_{self.value_slug}_{reference_slug(self.time_reference)}"

    @property
    def file_stem(self) -> str:
        """``<Type>.<value-slug>.<reference-slug>``: the Parquet files' stem, before any
        collision suffix (the slugs keep their own ``_``)."""
        return f"{self.type.name}.{self.value_slug}.{reference_slug(self.time_reference)}"

    def sort_key(self) -> tuple:
        """The reference's partition order: type, value type, reference."""
        et = self.et
        if et.is_composite:
            value = (2, _COMPOSITE_ORDER.index(et.kind), 0, ())
        elif et.kind == "tuple":
            value = (1, et.n or 0, DTYPE_NAMES.index(et.dtype), ())
        else:
            value = (0, DTYPE_NAMES.index(et.dtype), 0, self.element_shape)
        return (self.type.catalog_code, value, _reference_order(self.time_reference))


def _reference_order(tr: str | None) -> tuple[int, bytes]:
    rank = {"unspecified": 0, "utc": 1, "offset": 2, "zone": 3, "zoneless": 4}
    kind = reference_kind(tr)
    return (rank[kind], (tr or "").encode())


def value_shape_for(element_type: str, element_shape: Sequence[int]) -> tuple[int, ...]:
    """The shape that keys a partition: E for plain values, () for composites."""
    return () if parse_element_type(element_type).is_composite else tuple(element_shape)


@dataclass(slots=True)
class Partition:
    """A partition with its final names under a prefix."""

    key: PartitionKey
    base: str
    prefix: str = ""
    # The collision suffix (``''``, ``_2``, …), kept so the Parquet stem carries the
    # same one as the SQLite base without being rebuilt from it.
    suffix: str = ""

    @property
    def file_stem(self) -> str:
        """The Parquet files' stem: ``<Type>.<value-slug>.<reference-slug>[_<n>]``."""
        return self.key.file_stem + self.suffix

    @property
    def values_table(self) -> str:
        return f"{self.prefix}{self.base}_values"

    @property
    def series_table(self) -> str:
        return f"{self.prefix}{self.base}_series"

    @property
    def arrays_table(self) -> str:
        return f"{self.prefix}{self.base}_arrays"

    @property
    def index_name(self) -> str:
        return f"{self.prefix}{self.base}_values_key"

    def names(self) -> list[str]:
        """Every object name this partition creates, in the collision report's order."""
        return [self.values_table, self.index_name, self.series_table, self.arrays_table]


def assign_names(keys: Iterable[PartitionKey], prefix: str = "") -> list[Partition]:
    """Order the keys and give each a base name, suffixing ``_2``, ``_3`` on a
    case-insensitive clash within this export."""
    taken: set[str] = set()
    out = []
    for key in sorted(set(keys), key=PartitionKey.sort_key):
        stem = key.stem
        base, n, suffix = stem, 1, ""
        while base.lower() in taken:
            n += 1
            suffix = f"_{n}"
            base = stem + suffix
        taken.add(base.lower())
        out.append(Partition(key, base, prefix, suffix))
    return out


# ---------------------------------------------------------------------- the array key
def static_axis(length: int, anchor_ms: int, resolution: str) -> str:
    """``R<length>/<anchor>/<resolution>`` for a SingleTimeSeries."""
    return f"R{length}/{ms_to_axis_instant(anchor_ms)}/{resolution}"


def forecast_axis(count: int, anchor_ms: int, interval: str, horizon: str, resolution: str) -> str:
    """``R<count>/<anchor>/<interval>/<horizon>/<resolution>`` for every forecast type."""
    return f"R{count}/{ms_to_axis_instant(anchor_ms)}/{interval}/{horizon}/{resolution}"


# ---------------------------------------------------------------------- columns
def values_key_columns(tst: TimeSeriesType) -> list[tuple[str, str]]:
    """The columns between ``timestamp`` and ``value`` in a values table."""
    if tst is TimeSeriesType.Probabilistic:
        return [("issue_time", "INTEGER"), ("percentile", "REAL")]
    if tst is TimeSeriesType.Scenarios:
        return [("issue_time", "INTEGER"), ("scenario", "INTEGER")]
    if tst.is_forecast:
        return [("issue_time", "INTEGER")]
    return []


def series_grid_columns(tst: TimeSeriesType) -> list[tuple[str, str]]:
    """The columns between ``name`` and ``features`` in a series table."""
    if tst.is_forecast:
        return [
            ("initial_timestamp", "INTEGER"),
            ("resolution", "TEXT"),
            ("interval", "TEXT"),
            ("horizon", "TEXT"),
            ("count", "INTEGER"),
        ]
    if tst is TimeSeriesType.SingleTimeSeries:
        return [("initial_timestamp", "INTEGER"), ("resolution", "TEXT"), ("length", "INTEGER")]
    return []


SERIES_HEAD = [
    ("owner_id", "INTEGER"),
    ("owner_type", "TEXT"),
    ("owner_category", "TEXT"),
    ("time_series_type", "TEXT"),
    ("name", "TEXT"),
]
SERIES_TAIL = [
    ("features", "TEXT"),
    ("element_type", "TEXT"),
    ("element_shape", "TEXT"),
    ("time_reference", "TEXT"),
    ("units", "TEXT"),
    ("quantity_kind", "TEXT"),
    ("unit_system", "TEXT"),
    ("component_field", "TEXT"),
    ("application_data", "TEXT"),
]


def series_columns(tst: TimeSeriesType) -> list[str]:
    """Every column of a series table after ``array_id`` and ``id``, in order."""
    return [c for c, _ in SERIES_HEAD + series_grid_columns(tst) + SERIES_TAIL]


def values_columns(tst: TimeSeriesType) -> list[str]:
    return ["array_id", "timestamp", *(c for c, _ in values_key_columns(tst)), "value"]


# ---------------------------------------------------------------------- SQLite DDL
def q(name: str) -> str:
    """Quote an identifier that came from a validated name (never from user data)."""
    return '"' + name.replace('"', '""') + '"'


def arrays_ddl(p: Partition) -> str:
    return (
        f"CREATE TABLE {q(p.arrays_table)} (id INTEGER PRIMARY KEY, data_hash TEXT NOT NULL, "
        "time_axis TEXT NOT NULL, UNIQUE (data_hash, time_axis))"
    )


def values_ddl(p: Partition, value_sql_type: str) -> str:
    keys = "".join(f", {c} {t} NOT NULL" for c, t in values_key_columns(p.key.type))
    return (
        f"CREATE TABLE {q(p.values_table)} (array_id INTEGER NOT NULL REFERENCES "
        f"{q(p.arrays_table)} (id), timestamp INTEGER NOT NULL{keys}, value {value_sql_type})"
    )


def series_ddl(p: Partition) -> str:
    cols = SERIES_HEAD + series_grid_columns(p.key.type) + SERIES_TAIL
    body = ", ".join(f"{c} {t} NOT NULL" for c, t in cols)
    return (
        f"CREATE TABLE {q(p.series_table)} (array_id INTEGER NOT NULL REFERENCES "
        f"{q(p.arrays_table)} (id), id INTEGER PRIMARY KEY, {body})"
    )


def index_ddl(p: Partition) -> str:
    return f"CREATE INDEX {q(p.index_name)} ON {q(p.values_table)} (array_id)"


# ---------------------------------------------------------------------- views
VIEW_COLUMNS: dict[str, list[str]] = {
    "all_values": ["array_id", "timestamp", "issue_time", "percentile", "scenario", "value"],
    "all_series": [
        "array_id",
        "id",
        "owner_id",
        "owner_type",
        "owner_category",
        "time_series_type",
        "name",
        "initial_timestamp",
        "resolution",
        "length",
        "interval",
        "horizon",
        "count",
        "features",
        "element_type",
        "element_shape",
        "time_reference",
        "units",
        "quantity_kind",
        "unit_system",
        "component_field",
        "application_data",
    ],
    "all_arrays": ["id", "data_hash", "time_axis"],
}


@dataclass(slots=True)
class ViewSource:
    """One partition as a view reads it: its base name and the columns its tables have."""

    base: str
    type: TimeSeriesType
    table_columns: dict[str, set[str]] = field(default_factory=dict)


def view_sql(prefix: str, view: str, sources: Sequence[ViewSource]) -> str:
    """``CREATE VIEW`` for one of the three fixed-name views over ``sources``."""
    suffix = {"all_values": "_values", "all_series": "_series", "all_arrays": "_arrays"}[view]
    selects = []
    for src in sorted(sources, key=lambda s: s.base.encode()):
        table = f"{prefix}{src.base}{suffix}"
        have = src.table_columns.get(suffix) or _columns_of(src.type, suffix)
        cols = [c if c in have else f"NULL AS {c}" for c in VIEW_COLUMNS[view]]
        literal = src.base.replace("'", "''")
        selects.append(f"SELECT '{literal}' AS partition_name, {', '.join(cols)} FROM {q(table)}")
    return f"CREATE VIEW {q(prefix + view)} AS /* {VIEW_MARKER} */ " + " UNION ALL ".join(selects)


def _columns_of(tst: TimeSeriesType, suffix: str) -> set[str]:
    if suffix == "_values":
        return set(values_columns(tst))
    if suffix == "_series":
        return {"array_id", "id", *series_columns(tst)}
    return {"id", "data_hash", "time_axis"}


def type_of_table(name: str, prefix: str, suffix: str) -> TimeSeriesType | None:
    """The series type a table under ``prefix`` belongs to, if it follows the naming."""
    if not name.startswith(prefix) or not name.endswith(suffix):
        return None
    rest = name[len(prefix) : len(name) - len(suffix)]
    # Longest name first: "DeterministicSingleTimeSeries" before "Deterministic".
    for tname in sorted(TYPE_NAMES, key=len, reverse=True):
        if rest.startswith(tname + "_") and len(rest) > len(tname) + 1:
            return TimeSeriesType[tname]
    return None


def period_ms(text: str) -> int | None:
    """Fixed period length in ms, or None for a calendar period (no affine grid)."""
    p = Period.parse(text)
    return None if p.calendar else p.ms


# ---------------------------------------------------------------------- the contract
def contract() -> dict:
    """The interchange layout as data: per type, the DDL of its three tables (with
    placeholder names), and the views' columns. ``schemas/interchange.json`` is this,
    written out; a test keeps the two equal."""
    types = {}
    for tst in TimeSeriesType:
        key = PartitionKey(tst, "f64", (), "utc")
        p = Partition(key, "{base}", "{prefix}")
        types[tst.name] = {
            "values_columns": [
                ["array_id", "INTEGER NOT NULL"],
                ["timestamp", "INTEGER NOT NULL"],
                *([c, f"{t} NOT NULL"] for c, t in values_key_columns(tst)),
                ["value", "REAL | INTEGER | TEXT (nullable)"],
            ],
            "series_columns": [
                ["array_id", "INTEGER NOT NULL"],
                ["id", "INTEGER PRIMARY KEY"],
                *(
                    [c, f"{t} NOT NULL"]
                    for c, t in SERIES_HEAD + series_grid_columns(tst) + SERIES_TAIL
                ),
            ],
            "ddl": [arrays_ddl(p), values_ddl(p, "{value_type}"), series_ddl(p), index_ddl(p)],
            "importable": tst is not TimeSeriesType.DeterministicSingleTimeSeries,
        }
    return {
        "title": "infrastore-sqlite interchange layout (SQLite container)",
        "table_names": "{prefix}{Type}_{value_slug}_{reference_slug}[_{n}]_{values|series|arrays}",
        "value_sql_type": {
            "REAL": "f64/f32 scalar (NaN stored as NULL)",
            "INTEGER": "integer and bool scalar",
            "TEXT": "any per-step shape, tuple or composite: compact JSON, "
            '"Infinity"/"-Infinity" strings, null for NaN',
        },
        "array_key": ["data_hash", "time_axis"],
        "time_axis": {
            "SingleTimeSeries": "R{length}/{anchor}/{resolution}",
            "irregular": "{timestamps_hash hex}",
            "forecast": "R{count}/{anchor}/{interval}/{horizon}/{resolution}",
        },
        "view_marker": VIEW_MARKER,
        "views": {name: ["partition_name", *cols] for name, cols in VIEW_COLUMNS.items()},
        "types": types,
    }
