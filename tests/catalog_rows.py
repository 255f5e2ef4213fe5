"""Catalog rows edited past the store in tests that stand for rows an earlier release
wrote (a NULL ``time_reference`` an OpenAPI import left): their checksums (``row_check``,
``infrastore_sqlite/store/rowcheck.py``) made again, as the migration that adds them
gives such rows theirs. A row edited without this is damage, which reads refuse."""

from __future__ import annotations

from typing import Any

from infrastore_sqlite.store.rowcheck import (
    CHECK_COLUMN,
    CHECKED_COLUMNS,
    SQL_FUNCTION,
    sql_row_check,
)


def recheck_rows(conn: Any, where: str, params: tuple = ()) -> None:
    """Give the rows of ``time_series_associations`` ``WHERE where`` the checksum of their
    fields as they now are. ``conn``: an ``sqlite3`` or ``apsw`` connection to one of our
    catalogs (one without the column, the reference's, is left as it is)."""
    columns = [r[1] for r in conn.execute("PRAGMA table_info(time_series_associations)")]
    if CHECK_COLUMN not in columns:
        return
    if hasattr(conn, "create_function"):  # sqlite3
        conn.create_function(SQL_FUNCTION, -1, sql_row_check, deterministic=True)
    else:  # apsw (our catalog's connection has it already)
        conn.create_scalar_function(SQL_FUNCTION, sql_row_check, numargs=-1, deterministic=True)
    conn.execute(
        f"UPDATE time_series_associations SET {CHECK_COLUMN} = "
        f"{SQL_FUNCTION}({', '.join(CHECKED_COLUMNS)}) WHERE {where}",
        params,
    )
