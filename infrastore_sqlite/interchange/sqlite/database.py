"""Opening an interchange database and writing to it in one transaction.

The exporter, the importer and ``rehash`` all open a user's SQLite file; this is where
that file's failures become this package's errors (apsw errors never escape).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import apsw

from ...errors import InvalidParameterError, StorageError, TimeSeriesError


def open_database(
    path: str | Path,
    *,
    read_only: bool = False,
    create: bool = False,
    not_a_db_hint: str = "pass a file export_sqlite wrote",
) -> apsw.Connection:
    """Open ``path`` and prove it is an SQLite database.

    Raises
    ------
    InvalidParameterError
        The file is missing (unless ``create``), or a directory to be read.
    StorageError
        The file is not an SQLite database, a directory is to be written, or SQLite
        cannot open or read it (the reference's class for each: a caller's ``except
        StorageError`` catches them in both packages).
    """
    p = Path(path)
    if not create and not read_only and p.is_dir():
        raise StorageError(
            f"cannot open {path} as a database: it is a directory; name a file (a new one, "
            "or an existing database)"
        )
    if not create and not p.is_file():
        raise InvalidParameterError(f"{path} is not a file")
    if read_only:
        flags = apsw.SQLITE_OPEN_READONLY
    else:
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
    try:
        conn = apsw.Connection(str(p), flags=flags)
        conn.setbusytimeout(5000)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except apsw.NotADBError as exc:
        raise StorageError(f"{path} is not an SQLite database; {not_a_db_hint}") from exc
    except apsw.ReadOnlyError as exc:
        journal = Path(str(p) + "-journal")
        if read_only and journal.exists():
            raise StorageError(
                f"{path} has a hot journal ({journal}): a process that was writing the file "
                "was killed, so it holds half of that write, and reading it needs the journal "
                "rolled back first, which a read-only open cannot do. Open it once with write "
                f"access (e.g. `sqlite3 {path} 'PRAGMA integrity_check'`), which restores its "
                "last committed state, then try again"
            ) from exc
        raise StorageError(f"cannot open {path}: {exc}") from exc
    except apsw.Error as exc:
        raise StorageError(f"cannot open {path}: {exc}") from exc
    return conn


@contextlib.contextmanager
def write_transaction(conn: apsw.Connection, where: str, doing: str) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; any failure rolls back and says nothing was written.

    Parameters
    ----------
    conn
        The open database.
    where
        How messages name the file.
    doing
        What the block does, for messages (``writing``, ``rehashing``).
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except apsw.Error as exc:
        raise StorageError(f"cannot write to {where}: {exc}") from exc
    try:
        yield
        conn.execute("COMMIT")
    except TimeSeriesError:
        conn.execute("ROLLBACK")
        raise
    except apsw.Error as exc:
        with contextlib.suppress(apsw.Error):
            conn.execute("ROLLBACK")
        raise StorageError(f"{doing} {where} failed: {exc}; nothing was written") from exc
    except BaseException:
        with contextlib.suppress(apsw.Error):
            conn.execute("ROLLBACK")
        raise
