"""An interchange database's views in DuckDB (``query --db``): the file attached read-only
through DuckDB's SQLite extension (loaded from its wheel), so that one query runs over
``all_values``, ``all_series``, the typed companions and the ``flat_`` views as DuckDB
binds them, with the same output as ``query --parquet``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...errors import InvalidParameterError
from ..duckdb_session import connect, load_extension

__all__ = ["connect_sqlite"]


def connect_sqlite(db: str | os.PathLike[str]) -> Any:
    """A DuckDB connection with the interchange database ``db`` attached read-only and
    in use (its views answer by their names).

    Raises
    ------
    InvalidParameterError
        No such file, or a path DuckDB's ATTACH cannot be given as a value (one with a
        quote or a control character: ATTACH takes no bound parameter).
    """
    path = Path(db).resolve()
    if not path.is_file():
        raise InvalidParameterError(
            f"{db} is not a file: name an interchange database", table=str(db)
        )
    text = str(path)
    if any(c == "'" or ord(c) < 32 for c in text):
        raise InvalidParameterError(
            f"{db}: DuckDB attaches a database by a path spelled in its SQL, and this one "
            "holds a quote or a control character; copy or rename the file and query that",
            table=str(db),
        )
    con = connect()
    load_extension(con, "sqlite_scanner", "duckdb_extension_sqlite_scanner")
    # The path is checked above to hold no quote: a literal that cannot end early.
    con.execute(f"ATTACH '{text}' AS export (TYPE sqlite, READ_ONLY)")
    con.execute("USE export")
    return con
