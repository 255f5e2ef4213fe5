"""The SQLite form of the interchange layout: table DDL, the views over every partition,
and the layout written out as data (``schemas/interchange.json``).

Every statement here is built from validated names (:func:`q` quotes them); no data is
ever spliced in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ...model import TimeSeriesType
from ..layout import (
    SERIES_HEAD,
    SERIES_TAIL,
    VIEW_COLUMNS,
    VIEW_MARKER,
    Partition,
    PartitionKey,
    series_columns,
    series_grid_columns,
    values_columns,
    values_key_columns,
)


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
