"""A DuckDB session for the query commands (``query --parquet`` / ``query --db``): DuckDB
is an optional extra (``pip install 'infrastore-sqlite[query]'``), and its extensions
(SQLite's reader, httpfs for object storage) are loaded from their PyPI wheels
(``duckdb-extension-*``), never downloaded. The session's zone is UTC, so that what the
views show does not move with the machine's zone.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import InvalidParameterError, MissingDependencyError

__all__ = ["QUERY_INSTALL", "connect", "load_extension", "require_duckdb", "run_sql"]

#: The install command that brings DuckDB and its extensions.
QUERY_INSTALL = "pip install 'infrastore-sqlite[query]'"


def require_duckdb() -> ModuleType:
    """The ``duckdb`` module, or an error naming the install command."""
    try:
        import duckdb
    except ImportError:
        raise MissingDependencyError(
            f"querying an export needs DuckDB, which is not installed; run {QUERY_INSTALL}"
        ) from None
    return duckdb


def connect(*, search_path: str | None = None) -> Any:
    """An in-memory DuckDB connection that loads nothing by itself, its zone UTC;
    relative file names found under ``search_path`` (DuckDB's ``file_search_path``)."""
    duckdb = require_duckdb()
    config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    if search_path is not None:
        config["file_search_path"] = search_path
    con = duckdb.connect(config=config)
    con.execute("SET TimeZone = 'UTC'")
    return con


def load_extension(con: Any, name: str, wheel: str) -> None:
    """Load extension ``name`` from the ``wheel`` package (``duckdb_extension_…``) built
    for this DuckDB release, or say what to install."""
    duckdb = require_duckdb()
    try:
        module = __import__(wheel)
    except ImportError:
        module = None
    version = f"v{duckdb.__version__}"
    found = (
        sorted(Path(module.__file__).parent.glob(f"extensions/*/{name}.duckdb_extension"))
        if module is not None and module.__file__
        else []
    )
    exact = [f for f in found if f.parent.name == version]
    if not (exact or found):
        package = wheel.replace("_", "-")
        raise MissingDependencyError(
            f"DuckDB's {name} extension is not installed; run pip install "
            f"{package}=={duckdb.__version__} (or {QUERY_INSTALL})"
        )
    con.load_extension(str((exact or found)[-1]))


def _plain(table: Any) -> Any:
    """``table`` with its dictionary columns (an ENUM, as ``query --parquet``'s
    ``partition_name``) as their values' type: text, as the SQLite form gives it."""
    import pyarrow as pa

    if not any(pa.types.is_dictionary(f.type) for f in table.schema):
        return table
    fields = [
        f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f
        for f in table.schema
    ]
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def run_sql(con: Any, sql: str, *, arrow: bool) -> Any:
    """``sql`` run in ``con``: a relation (or an Arrow table); DuckDB's refusal of the
    SQL as an InvalidParameterError that lists the views."""
    import duckdb

    try:
        rel = con.sql(sql)
        if rel is None:
            raise InvalidParameterError("the SQL returned no rows to show: give one SELECT")
        return _plain(rel.to_arrow_table()) if arrow else rel
    except duckdb.Error as exc:
        views = sorted(
            r[0]
            for r in con.execute(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal"
            ).fetchall()
        )
        # (The fixed names end as a partition's tables do: kept by name.)
        fixed = {"all_values", "all_series", "all_arrays"}
        shown = [
            v for v in views if v in fixed or not v.endswith(("_values", "_series", "_arrays"))
        ]
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidParameterError(
            f"DuckDB refused the SQL ({first}); the views are {', '.join(shown)}, and each "
            "partition's <base>_values, <base>_series and <base>_arrays"
        ) from None
