"""The readers colleagues open an export with, through the real libraries (issue 24):
Polars (sqlite3, connectorx, ADBC), pandas (SQLAlchemy, sqlite3), DuckDB's SQLite
extension (loaded from its PyPI wheel, offline), Datasette and sqlite-utils.

Each reader reads the contract's ``all_values`` and the typed companions of one export
of the varied store; the tests check that every companion arrives with the right types,
and the matrix they observe is docs/readers.md (``INFRASTORE_SQLITE_WRITE_DOCS=1``
rewrites it; otherwise a stale page fails).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import exported_db
from repo_root import REPO_ROOT
from varied_store import build_varied

pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")

PAGE = REPO_ROOT / "docs" / "readers.md"
WRITE_ENV = "INFRASTORE_SQLITE_WRITE_DOCS"

# The views of the matrix: the contract's union, the typed companions, and two flattened
# partitions (a zone reference, a forecast with its issue time).
VIEWS = (
    "all_values",
    "all_values_real",
    "all_values_integer",
    "all_values_json",
    "flat_SingleTimeSeries_f64_America_Denver",
    "flat_Deterministic_f64_utc",
)
# The columns a cell of the matrix names, when the view has them.
SHOWN = ("timestamp", "timestamp_iso", "issue_time", "value")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return exported_db(tmp_path_factory, "readers", build_varied)


# ---------------------------------------------------------------------- the readers
# Each returns {column: the type the reader gave it}, for ``SELECT * FROM view``.
def polars_sqlite3(db: Path, view: str) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        df = pl.read_database(f"SELECT * FROM {view}", conn)
    return {c: str(t) for c, t in df.schema.items()}


def polars_connectorx(db: Path, view: str) -> dict[str, str]:
    pytest.importorskip("connectorx")
    df = pl.read_database_uri(f"SELECT * FROM {view}", f"sqlite://{db}", engine="connectorx")
    return {c: str(t) for c, t in df.schema.items()}


def polars_adbc(db: Path, view: str) -> dict[str, str]:
    dbapi = pytest.importorskip("adbc_driver_sqlite.dbapi")
    with dbapi.connect(str(db)) as conn:
        df = pl.read_database(f"SELECT * FROM {view}", conn)
    return {c: str(t) for c, t in df.schema.items()}


def pandas_sqlalchemy(db: Path, view: str) -> dict[str, str]:
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        df = pd.read_sql_table(view, engine)
    finally:
        engine.dispose()
    return {c: _pandas_type(t) for c, t in df.dtypes.items()}


def pandas_sqlite3(db: Path, view: str) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        df = pd.read_sql(f"SELECT * FROM {view}", conn)
    return {c: _pandas_type(t) for c, t in df.dtypes.items()}


def _pandas_type(dtype: Any) -> str:
    return "str" if isinstance(dtype, pd.StringDtype) else str(dtype)


def duckdb_attach(db: Path, view: str) -> dict[str, str]:
    con = _duckdb()
    con.execute(f"ATTACH '{db}' AS f (TYPE sqlite, READ_ONLY)")
    rel = con.execute(f"SELECT * FROM f.{view}")
    rel.fetchall()
    return {d[0]: str(d[1]) for d in rel.description}


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


def datasette_json(db: Path, view: str) -> dict[str, str]:
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
    return out


def sqlite_utils_columns(db: Path, view: str) -> dict[str, str]:
    sqlite_utils = pytest.importorskip("sqlite_utils")
    database = sqlite_utils.Database(db)
    try:
        return {c: t.__name__ for c, t in database[view].columns_dict.items()}
    finally:
        database.close()


READERS: dict[str, Callable[[Path, str], dict[str, str]]] = {
    "Polars `read_database` (sqlite3)": polars_sqlite3,
    "Polars `read_database_uri` (connectorx)": polars_connectorx,
    "Polars `read_database` (ADBC)": polars_adbc,
    "pandas `read_sql_table` (SQLAlchemy)": pandas_sqlalchemy,
    "pandas `read_sql` (sqlite3)": pandas_sqlite3,
    "DuckDB `ATTACH … (TYPE sqlite)`": duckdb_attach,
    "Datasette (JSON API)": datasette_json,
    "sqlite-utils `columns_dict`": sqlite_utils_columns,
}

# What each reader must call a column of each kind on the companions.
FLOAT = {"Float64", "float64", "DOUBLE", "float"}
INTEGER = {"Int64", "int64", "BIGINT", "int"}
TEXT = {"String", "str", "VARCHAR"}


def observe(reader: Callable[[Path, str], dict[str, str]], db: Path, view: str) -> str:
    """One cell of the matrix: the shown columns' types, or the error the reader raised."""
    try:
        types = reader(db, view)
    except pytest.skip.Exception:
        raise
    except Exception as exc:  # what the reader does with the view is the observation
        return f"fails ({type(exc).__name__})"
    return ", ".join(f"{c} {types[c]}" for c in SHOWN if c in types)


@pytest.fixture(scope="module")
def matrix(db: Path) -> dict[str, dict[str, str]]:
    return {name: {v: observe(r, db, v) for v in VIEWS} for name, r in READERS.items()}


# ---------------------------------------------------------------------- the checks
@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize(
    ("view", "value_types"),
    [("all_values_real", FLOAT), ("all_values_integer", INTEGER), ("all_values_json", TEXT)],
)
def test_typed_views_read_with_one_type_per_column(
    db: Path, reader: str, view: str, value_types: set[str]
) -> None:
    types = READERS[reader](db, view)
    assert types["value"] in value_types, types
    assert types["timestamp"] in INTEGER, types
    assert types["partition_name"] in TEXT, types


@pytest.mark.parametrize("reader", list(READERS))
def test_flattened_views_read_typed_with_iso_times(db: Path, reader: str) -> None:
    types = READERS[reader](db, "flat_Deterministic_f64_utc")
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
def render(matrix: dict[str, dict[str, str]]) -> str:
    head = "| reader | " + " | ".join(f"`{v}`" for v in VIEWS) + " |"
    rule = "|---" * (len(VIEWS) + 1) + "|"
    rows = [f"| {r} | " + " | ".join(cells[v] for v in VIEWS) + " |" for r, cells in matrix.items()]
    return "\n".join(
        [
            "# Which reader gets what",
            "",
            "<!-- Generated by tests/interchange/sqlite/test_file_readers.py from an export of the",
            f"     varied store; {WRITE_ENV}=1 rewrites it. Do not edit by hand. -->",
            "",
            "Each cell is what `SELECT * FROM <view>` gives in that reader: the types of the",
            "columns `timestamp`, `timestamp_iso`, `issue_time` and `value` where the view has",
            "them, or the error it raises. `all_values` is the contract's view (one `value`",
            "column for REAL cells and JSON text); the others are the typed companions the",
            "export writes beside it (see docs/interchange.md, *Typed companions*).",
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
            head,
            rule,
            *rows,
            "",
        ]
    )


def test_reader_matrix_page_is_current(matrix: dict[str, dict[str, str]]) -> None:
    text = render(matrix)
    if os.environ.get(WRITE_ENV, "") not in ("", "0"):
        PAGE.write_text(text)
    assert PAGE.read_text() == text, f"docs/readers.md is stale; rerun this test with {WRITE_ENV}=1"
