"""The interchange layout, independent of any container.

Partition keys and their order, table names and slugs, the array key (``data_hash``,
``time_axis``), the per-type columns, the table-prefix rules, and the DDL and view SQL of
the SQLite container. Nothing here touches a database: the exporter, the importer and a
future Parquet writer all plan with these functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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


# The columns of the fixed-name views (after ``partition_name``), the same in the SQLite
# file and in ``query --parquet``'s DuckDB views.
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

# The series columns a flattened view (``flat_<base>``) carries (what a spreadsheet user
# filters and facets by); ``id`` is renamed so the view's own columns do not read as a
# catalog.
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

# The kind of a partition's key columns (``values_key_columns``), the suffix of its typed
# companion view (``all_values_<class>_<kind>``): every row of such a view has the same
# key columns, so none reads as NULL (the SQLite file's views and ``query --parquet``'s).
KEY_KINDS = {
    (): "static",
    ("issue_time",): "deterministic",
    ("issue_time", "percentile"): "probabilistic",
    ("issue_time", "scenario"): "scenarios",
}


def key_kind(tst: TimeSeriesType) -> str:
    """The kind of a partition's key columns: static, deterministic, probabilistic or
    scenarios (the suffix of its typed companion view)."""
    return KEY_KINDS[tuple(c for c, _ in values_key_columns(tst))]


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
