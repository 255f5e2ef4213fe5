"""Reading an exported SQLite file, and the varied store's export, shared by the SQLite
export's test modules."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import ADDITIONS
from varied_store import FORECASTS, LANES, build_varied, new_store

from infrastore_sqlite import (
    Store,
)
from infrastore_sqlite.core.elements import parse_element_type
from infrastore_sqlite.interchange.sqlite.cells import decode_cells

T0_MS = 1_704_067_200_000
H_MS = 3_600_000
SUMMARY_KEYS = [
    "values_table",
    "series_table",
    "arrays_table",
    "time_series_type",
    "value_type",
    "time_reference",
    "arrays",
    "series",
    "rows",
]


# ---------------------------------------------------------------------- helpers


def connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def master(path: Path) -> list[tuple]:
    with connect(path) as con:
        return con.execute(
            f"SELECT type, name, tbl_name, sql FROM sqlite_master WHERE NOT {ADDITIONS}"
        ).fetchall()


def partitions(con: sqlite3.Connection, prefix: str = "") -> list[str]:
    """Base names of the partitions under a prefix (from the _values tables)."""
    names = [
        r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
    ]
    return [
        n[len(prefix) : -len("_values")]
        for n in names
        if n.startswith(prefix) and n.endswith("_values")
    ]


def series_type(con: sqlite3.Connection, table: str) -> tuple[str, str]:
    ((tst, et),) = con.execute(
        f'SELECT DISTINCT time_series_type, element_type FROM "{table}"'
    ).fetchall()
    return tst, et


def array_of(con: sqlite3.Connection, base: str, array_id: int) -> np.ndarray:
    """The stored-form array one array_id's rows spell, rebuilt from the table."""
    tst, et = series_type(con, f"{base}_series")
    dtype = parse_element_type(et).dtype
    lane = LANES.get(tst)
    order = (
        ("issue_time, " if tst in FORECASTS else "") + "timestamp" + (f", {lane}" if lane else "")
    )
    rows = con.execute(
        f'SELECT value, timestamp{", issue_time" if tst in FORECASTS else ""} FROM "{base}_values" '
        f"WHERE array_id = ? ORDER BY {order}",
        (array_id,),
    ).fetchall()
    flat = decode_cells([r[0] for r in rows], dtype)
    if tst not in FORECASTS:
        return flat
    count = len({r[2] for r in rows})
    lanes = (
        len({r[0] for r in con.execute(f'SELECT DISTINCT {lane} FROM "{base}_values"')})
        if lane
        else 1
    )
    if lane:
        lanes = con.execute(
            f'SELECT count(DISTINCT {lane}) FROM "{base}_values" WHERE array_id = ?', (array_id,)
        ).fetchone()[0]
    steps = len(rows) // (count * lanes)
    cube = flat.reshape(count, steps, lanes, *flat.shape[1:])
    if lane:
        return np.ascontiguousarray(np.transpose(cube, (2, 1, 0, *range(3, cube.ndim))))
    return np.ascontiguousarray(np.swapaxes(cube[:, :, 0], 0, 1))


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------- the varied store


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path, list[dict]]:
    d = tmp_path_factory.mktemp("varied")
    store = new_store(d / "s.h5")
    build_varied(store)
    out = d / "e.sqlite"
    result = store.export_sqlite(out, include_derived=True)
    yield store, out, result
    store.close()


@pytest.fixture
def con(varied) -> sqlite3.Connection:
    c = connect(varied[1])
    yield c
    c.close()


def series_row(con: sqlite3.Connection, base: str, name: str, owner: int = 1) -> dict:
    cur = con.execute(
        f'SELECT * FROM "{base}_series" WHERE name = ? AND owner_id = ?', (name, owner)
    )
    cols = [c[0] for c in cur.description]
    return dict(zip(cols, cur.fetchone(), strict=True))


def table_info(con: sqlite3.Connection, table: str) -> list[tuple]:
    return [(c[1], c[2], c[3], c[5]) for c in con.execute(f'PRAGMA table_info("{table}")')]
