"""Floors for the SQLite export and import: the same tables, by the shortest honest route.

``prepare_export(db)`` reads an export of ours (not timed) into memory, every column of
every table as one buffer, and returns the write: a new file with the export's own page
size and pragmas, each values table filled by ``carray`` inserts (a run of arrays of one
length on one grid is one statement, its array ids and coordinates computed from the row
number; any other table binds its coordinates through temporary tables keyed by row
number), the series and arrays tables by ``executemany``, each index created with the
tables (the rows come in array_id order, as the export writes them, so the index is
filled by appends, as the export's is), the views after, one transaction. No store is read, no cell encoded, no plan made: what is left is
what SQLite itself costs to write those rows.

``read_back(db)`` is the import's floor: the values of every values table read back into
one numpy array per array (two column fetches, split at the array-id boundaries), the
series and arrays tables fetched whole. No HDF5 and no catalog are written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import apsw
import numpy as np

_PRAGMAS = ("journal_mode=OFF", "synchronous=OFF", "cache_size=-4096")  # the export's own


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _column(conn: apsw.Connection, sql: str) -> list:
    """One column as a list, fetched as one object (``Cursor.get``; None for no rows)."""
    got = conn.execute(sql).get
    if got is None:
        return [r[0] for r in conn.execute(sql).fetchall()]
    return got if type(got) is list else [got]


def _buffer(cells: list) -> Any:
    """A column as what ``carray`` binds: int64 or float64 buffer (None as NaN, which
    SQLite stores as NULL, as the export did), or a tuple of text."""
    kinds = {type(c) for c in cells}
    if kinds <= {int}:
        return np.array(cells, dtype=np.int64)
    if kinds <= {float, type(None), int}:
        return np.array(cells, dtype=np.float64)
    if kinds <= {str}:
        return tuple(cells)
    raise SystemExit(f"floor: a values column of {sorted(k.__name__ for k in kinds)} cells")


def _affine_runs(aid: np.ndarray, coords: dict[str, np.ndarray]) -> list[tuple] | None:
    """``(lo, hi, first_id, n, {column: (anchor, step)})`` for runs of consecutive arrays
    of one length whose coordinates are ``anchor + r * step`` (``r`` the row in the
    array), all on one grid; None when some array is not affine."""
    if not len(aid):
        return []
    starts = np.flatnonzero(np.r_[True, aid[1:] != aid[:-1]])
    ends = np.r_[starts[1:], len(aid)]
    lengths = ends - starts
    within = np.arange(len(aid)) - np.repeat(starts, lengths)
    grids = {}
    for col, c in coords.items():
        anchor = c[starts]
        second = np.where(lengths > 1, c[np.minimum(starts + 1, len(c) - 1)], anchor)
        step = second - anchor
        if not np.array_equal(c, np.repeat(anchor, lengths) + within * np.repeat(step, lengths)):
            return None
        grids[col] = (anchor, step)
    runs = []
    k = 0
    while k < len(starts):
        j = k
        while (
            j + 1 < len(starts)
            and lengths[j + 1] == lengths[k]
            and aid[starts[j + 1]] == aid[starts[j]] + 1
            and all(a[j + 1] == a[k] and s[j + 1] == s[k] for a, s in grids.values())
        ):
            j += 1
        runs.append(
            (
                int(starts[k]),
                int(ends[j]),
                int(aid[starts[k]]),
                int(lengths[k]),
                {col: (a[k].item(), s[k].item()) for col, (a, s) in grids.items()},
            )
        )
        k = j + 1
    return runs


def _values_writer(table: str, cols: list[str], data: dict[str, Any]) -> Callable:
    """The inserts of one values table (its columns' buffers in ``data``)."""
    t = _q(table)
    col_list = ", ".join(_q(c) for c in cols)
    coord_cols = [c for c in cols if c not in ("array_id", "value")]
    aid = data["array_id"]
    runs = _affine_runs(aid, {c: data[c] for c in coord_cols})
    values = data["value"]

    def by_runs(conn: apsw.Connection) -> None:
        for lo, hi, first, n, grids in runs:
            i = "(rowid - 1)"
            exprs = {"array_id": f"(?1 + {i} / {n})" if hi - lo > n else "?1"}
            params: list[Any] = [first]
            r = f"({i} % {n})" if hi - lo > n else i
            for c, (anchor, step) in grids.items():
                params += [anchor, step]
                exprs[c] = f"?{len(params) - 1} + {r} * ?{len(params)}"
            exprs["value"] = "value"
            params.append(apsw.carray(values, start=lo, stop=hi))
            conn.execute(
                f"INSERT INTO {t} ({col_list}) SELECT {', '.join(exprs[c] for c in cols)} "
                f"FROM carray(?{len(params)})",
                params,
            )

    def by_temp_tables(conn: apsw.Connection) -> None:
        if not len(aid):
            return
        joins, exprs = [], {"value": "v.value"}
        for k, c in enumerate(["array_id", *coord_cols]):
            conn.execute(f"CREATE TEMP TABLE floor_c{k} (i INTEGER PRIMARY KEY, x)")
            conn.execute(
                f"INSERT INTO temp.floor_c{k} (i, x) SELECT rowid, value FROM carray(?)",
                (apsw.carray(data[c]),),
            )
            joins.append(f"JOIN temp.floor_c{k} AS c{k} ON c{k}.i = v.rowid")
            exprs[c] = f"c{k}.x"
        conn.execute(
            f"INSERT INTO {t} ({col_list}) SELECT {', '.join(exprs[c] for c in cols)} "
            f"FROM carray(?) AS v {' '.join(joins)}",
            (apsw.carray(values),),
        )
        for k in range(len(coord_cols) + 1):
            conn.execute(f"DROP TABLE temp.floor_c{k}")

    return by_runs if runs is not None else by_temp_tables


def prepare_export(src: str) -> tuple[Callable[[str], None], int]:
    """The timed write of ``src``'s tables into a new file, and their value rows."""
    conn = apsw.Connection(src, flags=apsw.SQLITE_OPEN_READONLY)
    page_size = conn.execute("PRAGMA page_size").get
    master = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    ).fetchall()
    tables = [(name, sql) for kind, name, sql in master if kind == "table"]
    indexes = [sql for kind, _, sql in master if kind == "index"]
    views = [sql for kind, _, sql in master if kind == "view"]
    steps: list[Callable[[apsw.Connection], None]] = []
    rows = 0
    for name, _ in tables:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({_q(name)})")]
        if name.endswith("_values") and "value" in cols:
            data = {
                c: _column(conn, f"SELECT {_q(c)} FROM {_q(name)} ORDER BY rowid") for c in cols
            }
            data = {c: _buffer(v) for c, v in data.items()}
            rows += len(data["value"])
            steps.append(_values_writer(name, cols, data))
        else:
            content = conn.execute(f"SELECT * FROM {_q(name)} ORDER BY rowid").fetchall()
            sql = f"INSERT INTO {_q(name)} VALUES ({', '.join('?' * len(cols))})"
            steps.append(lambda c, sql=sql, content=content: c.executemany(sql, content))
    conn.close()

    def write(out: str) -> None:
        dst = apsw.Connection(out, flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
        for pragma in (f"page_size={page_size}", *_PRAGMAS):
            dst.execute(f"PRAGMA {pragma}").fetchall()
        dst.execute("BEGIN")
        for _, sql in tables:
            dst.execute(sql)
        for sql in indexes:  # before the rows, as the export does: filled by appends
            dst.execute(sql)
        for step in steps:
            step(dst)
        for sql in views:
            dst.execute(sql)
        dst.execute("COMMIT")
        dst.execute("PRAGMA journal_mode=DELETE").fetchall()
        dst.close()

    return write, rows


def read_back(db: str) -> int:
    """Every array's values as its own numpy array (and the other tables fetched);
    returns the value rows read."""
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    rows = 0
    arrays: list[np.ndarray] = []
    for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
    ).fetchall():
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({_q(name)})")]
        if name.endswith("_values") and "value" in cols:
            aid = np.array(_column(conn, f"SELECT array_id FROM {_q(name)}"), dtype=np.int64)
            cells = _column(conn, f"SELECT value FROM {_q(name)}")
            values = _buffer(cells)
            if isinstance(values, tuple):
                values = np.array(values, dtype=object)
            cuts = np.flatnonzero(aid[1:] != aid[:-1]) + 1
            arrays += np.split(values, cuts)
            rows += len(aid)
        else:
            conn.execute(f"SELECT * FROM {_q(name)}").fetchall()
    conn.close()
    assert rows == sum(len(a) for a in arrays)
    return rows
