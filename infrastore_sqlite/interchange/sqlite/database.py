"""Opening an interchange database and writing to it in one transaction.

The exporter, the importer and ``rehash`` all open a user's SQLite file; this is where
that file's failures become this package's errors (apsw errors never escape), and where
the file is kept from acting: whoever wrote it may have stored triggers, views or schema
functions in it, and none of them runs here (see :func:`harden`).
"""

from __future__ import annotations

import contextlib
import os
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
    through_link: bool = True,
    views: bool = False,
) -> apsw.Connection:
    """Open ``path`` and prove it is an SQLite database.

    ``through_link=False`` (``rehash``, ``unshare``: they edit a file someone handed
    over) refuses a ``path`` that is a symbolic link; side files (``-journal``, ``-wal``,
    ``-shm``) that are links are refused always. ``views=True`` (the exporter, which may
    read the views it writes) leaves views enabled; every reader keeps them off.

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
        raise InvalidParameterError(
            f"{path} is not a file" + ("" if p.exists() else " (nothing exists at that path)")
        )
    refuse_links(p, writing=not (read_only or through_link))
    if read_only:
        flags = apsw.SQLITE_OPEN_READONLY
    else:
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
    fresh = create and not p.exists()
    try:
        conn = apsw.Connection(str(p), flags=flags)
        # Before the first statement reads the schema: nothing the file holds may run.
        harden(conn, defensive=not fresh, views=views)
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


#: The files SQLite keeps beside a database while it is written (and reads when present).
SIDE_FILES = ("-journal", "-wal", "-shm")


def refuse_links(path: Path, *, writing: bool) -> None:
    """Refuse a database whose side files are symbolic links (SQLite would write or roll
    back through them, into a file outside the directory), or, to be written, that is one.

    Raises
    ------
    InvalidParameterError
        Naming the link and what to do.
    """
    for suffix in SIDE_FILES:
        side = Path(f"{path}{suffix}")
        if side.is_symlink():
            raise InvalidParameterError(
                f"{side} is a symbolic link (to {os.readlink(side)}); SQLite would read and "
                f"write {path}'s {suffix.lstrip('-')} through it, outside the file's "
                "directory. Remove the link (a journal or WAL file that is not the file's "
                "own cannot be trusted) and try again",
                table=str(path),
            )
    if writing and path.is_symlink():
        raise InvalidParameterError(
            f"{path} is a symbolic link (to {os.readlink(path)}); it is written in place, "
            "never through a link: name the file itself",
            table=str(path),
        )


def harden(conn: apsw.Connection, *, defensive: bool = True, views: bool = False) -> None:
    """Keep the file on ``conn`` from acting: its triggers never fire, its views are never
    evaluated, the functions its schema names run only if SQLite deems them harmless, and
    SQL cannot corrupt it (``SQLITE_DBCONFIG_DEFENSIVE``).

    Parameters
    ----------
    conn
        A connection no statement has run on yet.
    defensive
        False only for a file this package is creating (its export turns the rollback
        journal off, which defensive mode forbids; nobody else has written to it).
    views
        True only for the exporter, which may read the views it writes itself.
    """
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, 0)
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_VIEW, 1 if views else 0)
    conn.config(apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
    if defensive:
        conn.config(apsw.SQLITE_DBCONFIG_DEFENSIVE, 1)


def triggers_in(conn: apsw.Connection) -> list[str]:
    """The names of the triggers the file holds (none of which runs on a hardened
    connection), in name order."""
    return [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name"
        )
    ]


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
