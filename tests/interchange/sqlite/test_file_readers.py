"""The readers colleagues open an export with, through the real libraries (issues 24, 38):
Polars (sqlite3, SQLAlchemy, connectorx, ADBC), pandas (SQLAlchemy, sqlite3), DuckDB's
SQLite extension (loaded from its PyPI wheel, offline), Datasette and sqlite-utils, each
with its defaults.

Each reader reads the contract's ``all_values`` and every typed companion of several
exports: the demo, the varied store, and one store per kind of partition that sorts
first (float, integer, bool, shaped, forecast), which is what decides the affinity
SQLite gives ``all_values.value`` and what a reader sees in the first rows. The tests
check that every companion arrives typed in every reader on every file, and the matrix
they observe is docs/readers.md (``INFRASTORE_SQLITE_WRITE_DOCS=1`` rewrites it;
otherwise a stale page fails).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import warnings
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import exported_db
from repo_root import REPO_ROOT
from varied_store import add, build_varied, sts

from infrastore_sqlite import Deterministic, NonSequentialTimeSeries, Probabilistic, Scenarios
from infrastore_sqlite.demo import build_demo_store

pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")

PAGE = REPO_ROOT / "docs" / "readers.md"
WRITE_ENV = "INFRASTORE_SQLITE_WRITE_DOCS"

# An integer a double cannot hold: 2**53 + 1 reads back as 9007199254740992.0 through a
# column of REAL affinity.
BIG = 2**53 + 1
BIG_PARTITION = "SingleTimeSeries_i64_utc"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _first(kind: str) -> Callable[[Any], None]:
    """A store whose first partition (in the views' order) is of ``kind``, followed by
    a float, an integer (``BIG``), a bool, a shaped and two forecast partitions that
    sort after it. A NonSequential or Deterministic partition sorts before every
    SingleTimeSeries one (the views order partitions by name)."""

    def build(store: Any) -> None:
        times = [T0, datetime(2024, 1, 2, tzinfo=UTC)]
        hours = [T0 + timedelta(hours=h) for h in range(NAN_ROWS + 3)]
        first = {
            "float": lambda: NonSequentialTimeSeries(times, np.array([0.5, 1.5]), "first"),
            "NaN": lambda: NonSequentialTimeSeries(
                hours, np.r_[np.full(NAN_ROWS, np.nan), 0.25, np.nan, 2.5], "first"
            ),
            "integer": lambda: NonSequentialTimeSeries(times, np.array([BIG, 2]), "first"),
            "bool": lambda: NonSequentialTimeSeries(times, np.array([True, False]), "first"),
            "shaped": lambda: NonSequentialTimeSeries(
                times, np.array([[0.5, 1.0], [2.0, 3.0]]), "first"
            ),
            "forecast": lambda: Deterministic(
                T0, "PT1H", "PT2H", "PT1H", 2, np.arange(4.0).reshape(2, 2), "first"
            ),
        }[kind]()
        add(store, first)
        add(store, sts("f64", np.linspace(0.0, 1.0, 150)))
        add(store, sts("i64", np.array([BIG, -BIG, 0], dtype=np.int64)))
        add(store, sts("bool", np.array([True, False])))
        add(store, sts("f64_2", [[1.0, 2.0], [3.0, 4.0]]))
        lanes = np.arange(12.0).reshape(3, 2, 2)  # percentiles x steps x windows
        add(store, Probabilistic(T0, "PT1H", "PT2H", "PT1H", 2, [0.1, 0.5, 0.9], lanes, "prob"))
        scenarios = np.arange(12, dtype=np.int64).reshape(2, 2, 3)
        add(store, Scenarios(T0, "PT1H", "PT2H", "PT1H", 3, scenarios, "scen"))

    return build


KINDS = ("float", "NaN", "integer", "bool", "shaped", "forecast")
# The NaN file's first partition starts with more NaN values (NULL in SQLite) than the
# 100 rows Polars types a column from.
NAN_ROWS = 150
FILES = ("demo", "varied", *(f"{k} first" for k in KINDS))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {"varied": exported_db(tmp_path_factory, "readers_varied", build_varied)}
    d = tmp_path_factory.mktemp("readers_demo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        demo = build_demo_store(d / "demo-store")
    try:
        demo.export_sqlite(d / "demo.db")
    finally:
        demo.close()
    out["demo"] = d / "demo.db"
    for kind in KINDS:
        out[f"{kind} first"] = exported_db(tmp_path_factory, f"readers_{kind}", _first(kind))
    return {name: out[name] for name in FILES}


@pytest.fixture(scope="module")
def db(files: dict[str, Path]) -> Path:
    return files["varied"]


def views_of(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]


# The typed companions, in the page's order, and the type their ``value`` has.
CLASSES = {"real": "FLOAT", "integer": "INTEGER", "json": "TEXT"}
TYPED = [
    f"all_values_{c}_{k}"
    for c in CLASSES
    for k in ("static", "deterministic", "probabilistic", "scenarios")
]
# Two flattened partitions (a zone reference, a forecast with its issue time).
FLAT = (
    "flat_SingleTimeSeries_f64_America_Denver",
    "flat_Deterministic_f64_utc",
    "flat_NonSequentialTimeSeries_f64_utc",
)
# The columns a cell of the matrix names, when the view has them.
SHOWN = ("timestamp", "timestamp_iso", "issue_time", "percentile", "scenario", "value")


# ---------------------------------------------------------------------- the readers
# Each returns ({column: the type the reader gave it}, the rows as dicts) for
# ``SELECT * FROM view``, with the reader's defaults.
Read = tuple[dict[str, str], list[dict[str, Any]]]


def _polars(df: Any) -> Read:
    return {c: str(t) for c, t in df.schema.items()}, df.to_dicts()


def polars_sqlite3(db: Path, view: str) -> Read:
    with sqlite3.connect(db) as conn:
        return _polars(pl.read_database(f"SELECT * FROM {view}", conn))


def polars_sqlalchemy(db: Path, view: str) -> Read:
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        return _polars(pl.read_database(f"SELECT * FROM {view}", engine))
    finally:
        engine.dispose()


def polars_connectorx(db: Path, view: str) -> Read:
    pytest.importorskip("connectorx")
    uri = f"sqlite://{db}"
    return _polars(pl.read_database_uri(f"SELECT * FROM {view}", uri, engine="connectorx"))


def polars_adbc(db: Path, view: str) -> Read:
    dbapi = pytest.importorskip("adbc_driver_sqlite.dbapi")
    with dbapi.connect(str(db)) as conn:
        return _polars(pl.read_database(f"SELECT * FROM {view}", conn))


def _pandas(df: Any) -> Read:
    types = {c: _pandas_type(t) for c, t in df.dtypes.items()}
    rows = df.astype(object).where(df.notna(), None).to_dict("records")
    return types, rows


def pandas_sqlalchemy(db: Path, view: str) -> Read:
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        return _pandas(pd.read_sql_table(view, engine))
    finally:
        engine.dispose()


def pandas_sqlite3(db: Path, view: str) -> Read:
    with sqlite3.connect(db) as conn:
        return _pandas(pd.read_sql(f"SELECT * FROM {view}", conn))


def _pandas_type(dtype: Any) -> str:
    return "str" if isinstance(dtype, pd.StringDtype) else str(dtype)


def duckdb_attach(db: Path, view: str) -> Read:
    con = _duckdb()
    con.execute(f"ATTACH '{db}' AS f (TYPE sqlite, READ_ONLY)")
    rel = con.execute(f"SELECT * FROM f.{view}")
    rows = rel.fetchall()
    names = [d[0] for d in rel.description]
    return {d[0]: str(d[1]) for d in rel.description}, [
        dict(zip(names, r, strict=True)) for r in rows
    ]


def _duckdb() -> Any:
    """A DuckDB connection with the SQLite extension loaded from its wheel: no download
    (autoinstall off), so a machine offline reads the file too."""
    duckdb = pytest.importorskip("duckdb")
    wheel = pytest.importorskip("duckdb_extension_sqlite_scanner")
    found = sorted(Path(wheel.__file__).parent.glob("extensions/*/sqlite_scanner.duckdb_extension"))
    assert found, "the duckdb-extension-sqlite-scanner wheel holds no extension file"
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    con.load_extension(str(found[-1]))
    return con


def datasette_json(db: Path, view: str) -> Read:
    """Datasette's JSON API: the Python type of each column's first non-null cell."""
    datasette_app = pytest.importorskip("datasette.app")

    async def fetch() -> list[dict[str, Any]]:
        ds = datasette_app.Datasette([str(db)])
        await ds.invoke_startup()
        response = await ds.client.get(f"/{db.stem}/{view}.json?_shape=array&_size=max")
        assert response.status_code == 200, response.text
        return response.json()

    rows = asyncio.run(fetch())
    out: dict[str, str] = {}
    for row in rows:
        for column, cell in row.items():
            if cell is not None and column not in out:
                out[column] = type(cell).__name__
    return out, rows


def sqlite_utils_columns(db: Path, view: str) -> Read:
    sqlite_utils = pytest.importorskip("sqlite_utils")
    database = sqlite_utils.Database(db)
    try:
        types = {c: t.__name__ for c, t in database[view].columns_dict.items()}
        return types, list(database[view].rows)
    finally:
        database.close()


READERS: dict[str, Callable[[Path, str], Read]] = {
    "Polars `read_database` (sqlite3)": polars_sqlite3,
    "Polars `read_database` (SQLAlchemy)": polars_sqlalchemy,
    "Polars `read_database_uri` (connectorx)": polars_connectorx,
    "Polars `read_database` (ADBC)": polars_adbc,
    "pandas `read_sql_table` (SQLAlchemy)": pandas_sqlalchemy,
    "pandas `read_sql` (sqlite3)": pandas_sqlite3,
    "DuckDB `ATTACH … (TYPE sqlite)`": duckdb_attach,
    "Datasette (JSON API)": datasette_json,
    "sqlite-utils `columns_dict`": sqlite_utils_columns,
}

# What each reader must call a column of each kind on the companions.
KIND_NAMES = {
    "FLOAT": {"Float64", "float64", "DOUBLE", "float"},
    "INTEGER": {"Int64", "int64", "BIGINT", "int"},
    "TEXT": {"String", "str", "VARCHAR"},
}
FLOAT, INTEGER, TEXT = KIND_NAMES["FLOAT"], KIND_NAMES["INTEGER"], KIND_NAMES["TEXT"]
KEY_TYPES = {"timestamp": INTEGER, "issue_time": INTEGER, "percentile": FLOAT, "scenario": INTEGER}


def observe(reader: Callable[[Path, str], Read], db: Path, view: str) -> tuple[str, str]:
    """One cell of the matrix: the shown columns' types, or the error the reader raised;
    and what the reader gave for the integer ``BIG`` (when the view holds it)."""
    try:
        types, rows = reader(db, view)
    except pytest.skip.Exception:
        raise
    except Exception as exc:  # what the reader does with the view is the observation
        return f"fails ({type(exc).__name__})", f"fails ({type(exc).__name__})"
    shown = ", ".join(f"{c} {types[c]}" for c in SHOWN if c in types)
    big = [
        r["value"]
        for r in rows
        if r.get("partition_name") == BIG_PARTITION and _as_float(r["value"]) == float(BIG)
    ]
    return shown, (_big(big[0]) if big else "")


def _as_float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _big(value: Any) -> str:
    if isinstance(value, int | np.integer) and not isinstance(value, bool) and value == BIG:
        return "exact"
    return f"`{value!r}`"


@pytest.fixture(scope="module")
def observed(files: dict[str, Path]) -> dict[str, dict[str, dict[str, tuple[str, str]]]]:
    """reader -> view -> file -> (types, BIG), for every view a file has."""
    out: dict[str, dict[str, dict[str, tuple[str, str]]]] = {}
    for name, reader in READERS.items():
        per_view: dict[str, dict[str, tuple[str, str]]] = {}
        for label, db in files.items():
            for view in views_of(db):
                if view == "all_values" or view in TYPED or view in FLAT:
                    per_view.setdefault(view, {})[label] = observe(reader, db, view)
        out[name] = per_view
    return out


# ---------------------------------------------------------------------- the checks
def _check_typed(types: dict[str, str], view: str) -> None:
    value = CLASSES[view.split("_")[2]]
    assert types["value"] in KIND_NAMES[value], (view, types)
    assert types["partition_name"] in TEXT, (view, types)
    for column, names in KEY_TYPES.items():
        if column in types:
            assert types[column] in names, (view, column, types)
    kind = view.split("_")[3]
    assert ("issue_time" in types) == (kind != "static"), (view, types)


@pytest.mark.parametrize("reader", list(READERS))
def test_every_typed_view_reads_typed_in_every_file(files: dict[str, Path], reader: str) -> None:
    """Every typed companion of every file reads with the reader's defaults, each
    column one type (numbers as numbers, instants as integers), integers exact."""
    seen = set()
    for label, db in files.items():
        for view in views_of(db):
            if view not in TYPED:
                continue
            types, rows = READERS[reader](db, view)
            _check_typed(types, view)
            seen.add(view)
            if view == "all_values_integer_static" and label.endswith("first"):
                big = [r["value"] for r in rows if r["partition_name"] == BIG_PARTITION]
                assert BIG in big and all(isinstance(v, int) for v in big), (label, big)
    # Every class, and every kind of key columns, occurs in some file.
    assert seen >= {
        *(f"all_values_real_{k}" for k in ("static", "deterministic", "probabilistic")),
        "all_values_real_scenarios",
        "all_values_integer_static",
        "all_values_integer_scenarios",
        "all_values_json_static",
        "all_values_json_deterministic",
    }, seen


def test_every_kind_of_first_partition_is_exported(files: dict[str, Path]) -> None:
    """The files the page is built from do have the kind of partition named first."""
    expected = {
        "float first": "NonSequentialTimeSeries_f64_utc",
        "NaN first": "NonSequentialTimeSeries_f64_utc",
        "integer first": "NonSequentialTimeSeries_i64_utc",
        "bool first": "NonSequentialTimeSeries_bool_utc",
        "shaped first": "NonSequentialTimeSeries_f64_2_utc",
        "forecast first": "Deterministic_f64_utc",
    }
    for label, base in expected.items():
        with sqlite3.connect(files[label]) as conn:
            first = conn.execute("SELECT partition_name FROM all_values LIMIT 1").fetchone()
        assert first == (base,), label
    with sqlite3.connect(files["NaN first"]) as conn:
        head = conn.execute(
            "SELECT value FROM NonSequentialTimeSeries_f64_utc_values ORDER BY rowid LIMIT ?",
            (NAN_ROWS + 1,),
        ).fetchall()
    assert [v for (v,) in head] == [None] * NAN_ROWS + [0.25]


LED = ("all_values_real_static", "flat_NonSequentialTimeSeries_f64_utc")


@pytest.mark.parametrize("reader", list(READERS))
def test_views_whose_first_rows_are_nan_read_typed(files: dict[str, Path], reader: str) -> None:
    """A float partition whose first 150 values are NaN (NULL in SQLite) sorts first:
    its typed view and its flat view read with the reader's defaults, ``value`` a
    float, the first row one holding a value, and every row of the partition there
    once (the leading NaN rows after it, the rest in order)."""
    db = files["NaN first"]
    with sqlite3.connect(db) as conn:
        stored = conn.execute(
            "SELECT timestamp, value FROM NonSequentialTimeSeries_f64_utc_values ORDER BY rowid"
        ).fetchall()
    for view in LED:
        types, rows = READERS[reader](db, view)
        assert types["value"] in FLOAT, (view, types)
        assert _as_float(rows[0]["value"]) == 0.25, (view, rows[0])
        ours = [
            (int(r["timestamp"]), _nan_as_none(r["value"]))
            for r in rows
            if r.get("partition_name", "NonSequentialTimeSeries_f64_utc")
            == "NonSequentialTimeSeries_f64_utc"
        ]
        # The row holding the first value leads; the others keep their order.
        lead = stored.index((stored[NAN_ROWS][0], 0.25))
        assert ours == [stored[lead], *stored[:lead], *stored[lead + 1 :]], view


def _nan_as_none(value: Any) -> float | None:
    value = _as_float(value)
    return None if value is None or value != value else value


def test_a_view_whose_first_row_holds_a_value_keeps_its_plain_form(
    files: dict[str, Path],
) -> None:
    """Only a view whose first row is NaN is written with its first value leading: the
    others are the plain union and join (they read no slower)."""
    with sqlite3.connect(files["NaN first"]) as conn:
        led = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'"))
    with sqlite3.connect(files["float first"]) as conn:
        plain = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'"))
    for view in LED:
        assert "IS NOT NULL" in led[view] and "IS NOT NULL" not in plain[view], view
    assert "IS NOT NULL" not in led["all_values_integer_static"]


def _float_then_integer(store: Any) -> None:
    times = [T0, datetime(2024, 1, 2, tzinfo=UTC)]
    add(store, NonSequentialTimeSeries(times, np.array([0.5, 1.5]), "first"))
    add(store, sts("i64", np.array([BIG, 0], dtype=np.int64)))


def test_all_values_rounds_where_sqlite_does_and_the_companion_does_not(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """``all_values`` is the reference's view, byte for byte (the interop tests compare
    the DDL): SQLite gives its ``value`` the affinity of the first partition, so a float
    partition before an integer one rounds ``BIG``. The typed companion and the
    partition's table keep it (docs/readers.md points to both)."""
    db = exported_db(tmp_path_factory, "float_then_integer", _float_then_integer)
    with sqlite3.connect(db) as conn:
        got = conn.execute(
            "SELECT value FROM all_values WHERE partition_name = ? AND value > 1",
            (BIG_PARTITION,),
        ).fetchone()[0]
        exact = conn.execute(
            "SELECT value FROM all_values_integer_static WHERE value > 1"
        ).fetchone()[0]
        base = conn.execute(f"SELECT value FROM {BIG_PARTITION}_values WHERE value > 1").fetchone()[
            0
        ]
    assert got == float(BIG) and isinstance(got, float)
    assert exact == BIG and isinstance(exact, int)
    assert base == BIG and isinstance(base, int)


@pytest.mark.parametrize("reader", list(READERS))
def test_flattened_views_read_typed_with_iso_times(db: Path, reader: str) -> None:
    types, _ = READERS[reader](db, "flat_Deterministic_f64_utc")
    for column in ("series_id", "owner_id", "timestamp", "issue_time"):
        assert types[column] in INTEGER, types
    for column in ("owner_type", "name", "timestamp_iso", "issue_time_iso"):
        assert types[column] in TEXT, types
    assert types["value"] in FLOAT, types


def test_duckdb_gives_the_iso_text_sqlite_gives(db: Path) -> None:
    """DuckDB binds the flat views in its own SQL and computes the ISO text itself: it
    must be SQLite's text, in a zone (across a DST change), a forecast and zoneless."""
    con = _duckdb()
    con.execute(f"ATTACH '{db}' AS f (TYPE sqlite, READ_ONLY)")
    views = (
        "flat_SingleTimeSeries_f64_America_Denver",
        "flat_Deterministic_f64_utc",
        "flat_SingleTimeSeries_f64_zoneless",
        "flat_SingleTimeSeries_f64_offset_minus07_00",
    )
    for view in views:
        cols = "series_id, timestamp, timestamp_iso" + (
            ", issue_time, issue_time_iso" if "Deterministic" in view else ""
        )
        query = f"SELECT {cols} FROM {{}}{view} ORDER BY series_id, timestamp" + (
            ", issue_time" if "Deterministic" in view else ""
        )
        theirs = con.execute(query.format("f.")).fetchall()
        with sqlite3.connect(db) as conn:
            ours = conn.execute(query.format("")).fetchall()
        assert theirs == ours and ours, view
    flat = con.execute(
        "SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views() "
    ).fetchall()
    flat = [n for (n,) in flat if n.startswith("flat_")]
    assert len(flat) > 5
    for view in flat:  # every partition kind: typed, not the all-text fallback
        rel = con.execute(f"SELECT * FROM f.{view}")
        types = {d[0]: str(d[1]) for d in rel.description}
        assert types["timestamp"] == "BIGINT" and types["timestamp_iso"] == "VARCHAR", view


def test_iso_times_follow_the_partition_reference(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        denver = conn.execute(
            "SELECT timestamp_iso FROM flat_SingleTimeSeries_f64_America_Denver ORDER BY timestamp"
        ).fetchall()
        offset = conn.execute(
            "SELECT timestamp_iso FROM flat_SingleTimeSeries_f64_offset_minus07_00 LIMIT 1"
        ).fetchone()
        zoneless = conn.execute(
            "SELECT timestamp_iso FROM flat_SingleTimeSeries_f64_zoneless LIMIT 1"
        ).fetchone()
    # The spring-forward night of 2024 in Denver: -07:00 until 02:00, then -06:00.
    assert [r[0] for r in denver] == [
        "2024-03-10T00:00:00.000-07:00",
        "2024-03-10T01:00:00.000-07:00",
        "2024-03-10T03:00:00.000-06:00",
        "2024-03-10T04:00:00.000-06:00",
    ]
    assert offset[0].endswith("-07:00")
    assert zoneless[0][-1].isdigit()  # a wall clock carries no offset


def test_datasette_facets_a_flattened_view(db: Path) -> None:
    datasette_app = pytest.importorskip("datasette.app")

    async def fetch() -> dict[str, Any]:
        ds = datasette_app.Datasette([str(db)])
        await ds.invoke_startup()
        response = await ds.client.get(
            f"/{db.stem}/flat_SingleTimeSeries_f64_utc.json"
            "?_facet=owner_id&_facet=name&_facet=units"
        )
        assert response.status_code == 200, response.text
        return response.json()

    doc = asyncio.run(fetch())
    facets = doc["facet_results"]
    facets = facets.get("results", facets)  # the shape differs between Datasette versions
    assert {"owner_id", "name", "units"} <= set(facets)
    names = {r["value"] for r in facets["name"]["results"]}
    with sqlite3.connect(db) as conn:
        expected = {n for (n,) in conn.execute("SELECT name FROM SingleTimeSeries_f64_utc_series")}
    assert names == expected


# ---------------------------------------------------------------------- the page
def _cell(per_file: dict[str, str]) -> str:
    """One cell over the files: the observation when every file gave the same, else
    each distinct observation with the files that gave it."""
    by_value: dict[str, list[str]] = {}
    for label in FILES:
        if label in per_file:
            by_value.setdefault(per_file[label], []).append(label)
    if len(by_value) == 1:
        return next(iter(by_value))
    return "; ".join(f"{', '.join(labels)}: {value}" for value, labels in by_value.items())


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def render(observed: dict[str, dict[str, dict[str, tuple[str, str]]]]) -> str:
    views = ["all_values", *(v for v in TYPED if any(v in o for o in observed.values())), *FLAT]
    types_rows = [
        [f"`{v}`", *(_cell({f: c[0] for f, c in observed[r].get(v, {}).items()}) for r in READERS)]
        for v in views
    ]
    big_views = ("all_values", "all_values_integer_static")
    big_rows = [
        [
            f"`{v}`",
            *(_cell({f: c[1] for f, c in observed[r].get(v, {}).items() if c[1]}) for r in READERS),
        ]
        for v in big_views
    ]
    readers = list(READERS)
    return "\n".join(
        [
            "# Which reader gets what",
            "",
            "<!-- Generated by tests/interchange/sqlite/test_file_readers.py from the exports",
            f"     listed below; {WRITE_ENV}=1 rewrites it. Do not edit by hand. -->",
            "",
            "Each reader here is called with its defaults (`SELECT * FROM <view>`, or the",
            "view's name) on eight exports: the demo (`infrastore_sqlite.demo`), the varied",
            "store of the tests (every type, value type and time reference), and six whose",
            "first partition in the views' order is of one kind (a float, a float whose",
            f"first {NAN_ROWS} values are NaN, an integer, a bool, a shaped `[2]`, a",
            "forecast), each followed by float, integer, bool, shaped, Probabilistic and",
            "Scenarios partitions. Which partition comes first decides what SQLite and the",
            "readers make of `all_values`.",
            "",
            "## The types each reader gives",
            "",
            "Each cell names the types the reader gave the columns `timestamp`,",
            "`timestamp_iso`, `issue_time`, `percentile`, `scenario` and `value` where the",
            "view has them, or the error it raised; where the files differ, the cell says",
            "which file gave what. `all_values` is the contract's view (one `value` column",
            "for REAL, INTEGER and JSON cells, NULL key columns where a partition has none);",
            "the others are the typed companions the export writes beside it (see",
            "docs/interchange.md, *Typed companions*): `all_values_<class>_<kind>` holds the",
            "partitions whose `value` is of one class (`real`, `integer`, `json`) and whose",
            "key columns are of one kind (`static`: none; `deterministic`: `issue_time`;",
            "`probabilistic`: and `percentile`; `scenarios`: and `scenario`), so no column",
            "is NULL but a NaN `value`, and every reader types every column from the first",
            "rows. A companion exists when some partition is of its class and kind.",
            "",
            "SQLite holds a NaN as NULL. Polars (over sqlite3 or SQLAlchemy) types a column",
            "from its first 100 rows and fails on the first number after 100 NULLs, so a",
            "typed or `flat_` view whose first row is a NaN is written with the first row",
            "holding a value first and every other row after it, in order (the NaN file:",
            "its `all_values_real_static` and `flat_NonSequentialTimeSeries_f64_utc`); a",
            "view whose first row holds a value is the plain union or join.",
            "",
            *_table(["view", *readers], types_rows),
            "",
            "## Integers above 2^53",
            "",
            "**`all_values` rounds integers above 2^53 when a REAL partition sorts first.**",
            "Read integers from `all_values_integer_<kind>` or from the partition's",
            "`_values` table: both are exact whatever sorts first.",
            "",
            f"What each reader gave for the integer {BIG} (2^53 + 1) of the partition",
            f'`{BIG_PARTITION}` ("exact", or what came back). `all_values` is written byte',
            "for byte as the reference implementation writes it (the contract), and SQLite",
            "gives a `UNION ALL` column the affinity of its first `SELECT` (the newer SQLite",
            "of apsw here, 3.54, weighs every `SELECT`, and with a text column among them",
            "gives none): when a float partition sorts first, the column is REAL and the",
            "integer comes back rounded to a double (9007199254740992.0). The reference's",
            "own view does the same, so the contract cannot hold it.",
            "",
            *_table(["view", *readers], big_rows),
            "",
            "## DuckDB",
            "",
            "DuckDB binds an attached SQLite view in its own SQL, and a view it cannot bind",
            "(SQLite's `strftime`, say) comes through with every column as text. So the",
            "`flat_` views write their ISO text in the SQL both share (no `strftime`; integer",
            "division spelled so both give the same integer; `printf`), and DuckDB computes",
            "the same text SQLite does. Its SQLite extension loads without a download from",
            "the PyPI wheel that matches the DuckDB release",
            "(`pip install duckdb-extension-sqlite-scanner==<duckdb version>`): connect with",
            "`autoinstall_known_extensions` off and `load_extension` the wheel's",
            "`extensions/*/sqlite_scanner.duckdb_extension`, as these tests do.",
            "",
        ]
    )


def test_reader_matrix_page_is_current(
    observed: dict[str, dict[str, dict[str, tuple[str, str]]]],
) -> None:
    text = render(observed)
    if os.environ.get(WRITE_ENV, "") not in ("", "0"):
        PAGE.write_text(text)
    assert PAGE.read_text() == text, f"docs/readers.md is stale; rerun this test with {WRITE_ENV}=1"
