"""End-to-end tests of ``Store.export_sqlite``: what lands in the database.

One varied store is exported once per module and inspected table by table: the DDL and
storage classes of every partition kind, sqlite_master order, the arrays table (ids, time
axes, hashes re-derived from the exported rows), the values (timestamps, forecast
coordinates, row order, NaN/inf, JSON cells, composite widths) and the series columns.
Then time_range, dry_run, the return value and the container facts.
Refusals, views, faults and the reference comparison have files of their own.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import warnings
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from catalog_rows import recheck_rows
from conftest import ADDITIONS
from varied_store import FORECASTS, LANES, SERIES_TAIL, T0, H, add, build_varied, new_store, sts

from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
    Store,
)
from infrastore_sqlite.core.elements import parse_element_type
from infrastore_sqlite.core.hashing import data_hash, timestamps_hash
from infrastore_sqlite.errors import InvalidParameterError
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


# ---------------------------------------------------------------------- partitions and names


def test_partitions_in_key_order(varied) -> None:
    _, _, result = varied
    assert all(list(d) == SUMMARY_KEYS for d in result)
    got = [(d["time_series_type"], d["value_type"], d["time_reference"]) for d in result]
    assert got == [
        ("SingleTimeSeries", "f64", "utc"),
        ("SingleTimeSeries", "f64", "-07:00"),
        ("SingleTimeSeries", "f64", "America/Denver"),
        ("SingleTimeSeries", "f64", "zoneless"),
        ("SingleTimeSeries", "f64_2", "utc"),
        ("SingleTimeSeries", "f64_2x3", "utc"),
        ("SingleTimeSeries", "f32", "utc"),
        ("SingleTimeSeries", "i64", "utc"),
        ("SingleTimeSeries", "i32", "utc"),
        ("SingleTimeSeries", "i32_2x3", "utc"),
        ("SingleTimeSeries", "u64", "utc"),
        ("SingleTimeSeries", "bool", "utc"),
        ("SingleTimeSeries", "bool_2", "utc"),
        ("SingleTimeSeries", "i16", "utc"),
        ("SingleTimeSeries", "i8", "utc"),
        ("SingleTimeSeries", "u32", "utc"),
        ("SingleTimeSeries", "u16", "utc"),
        ("SingleTimeSeries", "u8", "utc"),
        ("SingleTimeSeries", "tuple3_f64", "utc"),
        ("SingleTimeSeries", "linear_function", "utc"),
        ("SingleTimeSeries", "quadratic_function", "utc"),
        ("SingleTimeSeries", "piecewise_linear", "utc"),
        ("SingleTimeSeries", "piecewise_step", "utc"),
        ("NonSequentialTimeSeries", "f64", "utc"),
        ("Deterministic", "f64", "utc"),
        ("Deterministic", "f64_2", "utc"),
        ("DeterministicSingleTimeSeries", "f64", "utc"),
        ("DeterministicSingleTimeSeries", "f64_2", "utc"),
        ("Probabilistic", "f64", "utc"),
        ("Scenarios", "f64", "utc"),
        ("Scenarios", "i64", "utc"),
        ("PersistentTimeSeries", "i32_2", "utc"),
    ]
    names = [d["values_table"] for d in result]
    assert names[1] == "SingleTimeSeries_f64_offset_minus07_00_values"
    assert names[2] == "SingleTimeSeries_f64_America_Denver_values"
    assert names[-1] == "PersistentTimeSeries_i32_2_utc_values"
    for d in result:
        base = d["values_table"][: -len("_values")]
        assert d["series_table"] == base + "_series"
        assert d["arrays_table"] == base + "_arrays"


def test_result_counts_match_the_tables(varied, con) -> None:
    _, _, result = varied
    for d in result:
        assert con.execute(f'SELECT count(*) FROM "{d["values_table"]}"').fetchone()[0] == d["rows"]
        assert (
            con.execute(f'SELECT count(*) FROM "{d["series_table"]}"').fetchone()[0] == d["series"]
        )
        assert (
            con.execute(f'SELECT count(*) FROM "{d["arrays_table"]}"').fetchone()[0] == d["arrays"]
        )


def test_sqlite_master_order(varied) -> None:
    _, out, result = varied
    entries = [(t, n) for t, n, _, _ in master(out)]
    expected = []
    for d in result:
        base = d["values_table"][: -len("_values")]
        expected += [
            ("table", f"{base}_arrays"),
            ("index", f"sqlite_autoindex_{base}_arrays_1"),
            ("table", f"{base}_values"),
            ("table", f"{base}_series"),
            ("index", f"{base}_values_key"),
        ]
    expected += [("view", "all_values"), ("view", "all_series"), ("view", "all_arrays")]
    assert entries == expected


# ---------------------------------------------------------------------- DDL and storage classes

SERIES_COMMON = [
    ("array_id", "INTEGER", 1, 0),
    ("id", "INTEGER", 0, 1),
    ("owner_id", "INTEGER", 1, 0),
    ("owner_type", "TEXT", 1, 0),
    ("owner_category", "TEXT", 1, 0),
    ("time_series_type", "TEXT", 1, 0),
    ("name", "TEXT", 1, 0),
]
FORECAST_GRID = [
    ("initial_timestamp", "INTEGER", 1, 0),
    ("resolution", "TEXT", 1, 0),
    ("interval", "TEXT", 1, 0),
    ("horizon", "TEXT", 1, 0),
    ("count", "INTEGER", 1, 0),
]
GRID = {
    "SingleTimeSeries": [
        ("initial_timestamp", "INTEGER", 1, 0),
        ("resolution", "TEXT", 1, 0),
        ("length", "INTEGER", 1, 0),
    ],
    "NonSequentialTimeSeries": [],
    "PersistentTimeSeries": [],
    **{t: FORECAST_GRID for t in FORECASTS},
}
KEYS = {
    "SingleTimeSeries": [],
    "NonSequentialTimeSeries": [],
    "PersistentTimeSeries": [],
    "Deterministic": [("issue_time", "INTEGER", 1, 0)],
    "DeterministicSingleTimeSeries": [("issue_time", "INTEGER", 1, 0)],
    "Probabilistic": [("issue_time", "INTEGER", 1, 0), ("percentile", "REAL", 1, 0)],
    "Scenarios": [("issue_time", "INTEGER", 1, 0), ("scenario", "INTEGER", 1, 0)],
}


def value_sql_type(value_slug: str) -> str:
    if value_slug in ("f64", "f32"):
        return "REAL"
    if value_slug in ("i64", "i32", "u64", "i16", "i8", "u32", "u16", "u8", "bool"):
        return "INTEGER"
    return "TEXT"


def table_info(con: sqlite3.Connection, table: str) -> list[tuple]:
    return [(c[1], c[2], c[3], c[5]) for c in con.execute(f'PRAGMA table_info("{table}")')]


def test_columns_of_every_partition_kind(varied, con) -> None:
    _, _, result = varied
    kinds = set()
    for d in result:
        tst = d["time_series_type"]
        kinds.add(tst)
        assert table_info(con, d["arrays_table"]) == [
            ("id", "INTEGER", 0, 1),
            ("data_hash", "TEXT", 1, 0),
            ("time_axis", "TEXT", 1, 0),
        ]
        assert table_info(con, d["values_table"]) == [
            ("array_id", "INTEGER", 1, 0),
            ("timestamp", "INTEGER", 1, 0),
            *KEYS[tst],
            ("value", value_sql_type(d["value_type"]), 0, 0),
        ]
        assert table_info(con, d["series_table"]) == SERIES_COMMON + GRID[tst] + SERIES_TAIL
        # array_id references the arrays table; UNIQUE (data_hash, time_axis); one index.
        fks = con.execute(f'PRAGMA foreign_key_list("{d["values_table"]}")').fetchall()
        assert [(f[2], f[3], f[4]) for f in fks] == [(d["arrays_table"], "array_id", "id")]
        fks = con.execute(f'PRAGMA foreign_key_list("{d["series_table"]}")').fetchall()
        assert [(f[2], f[3], f[4]) for f in fks] == [(d["arrays_table"], "array_id", "id")]
        idx = con.execute(f'PRAGMA index_list("{d["arrays_table"]}")').fetchall()
        assert [(i[2], i[3]) for i in idx] == [(1, "u")]
        (uniq,) = idx
        assert [c[2] for c in con.execute(f'PRAGMA index_info("{uniq[1]}")')] == [
            "data_hash",
            "time_axis",
        ]
        idx = con.execute(f'PRAGMA index_list("{d["values_table"]}")').fetchall()
        assert [(i[1], i[2]) for i in idx] == [(d["values_table"] + "_key", 0)]
        assert [c[2] for c in con.execute(f'PRAGMA index_info("{idx[0][1]}")')] == ["array_id"]
    assert kinds == {
        "SingleTimeSeries",
        "NonSequentialTimeSeries",
        "PersistentTimeSeries",
        "Deterministic",
        "DeterministicSingleTimeSeries",
        "Probabilistic",
        "Scenarios",
    }


def test_ddl_text_quotes_every_name(varied) -> None:
    _, out, result = varied
    sql = {n: s for _, n, _, s in master(out)}
    for d in result:
        v, s, a = d["values_table"], d["series_table"], d["arrays_table"]
        assert sql[a].startswith(f'CREATE TABLE "{a}" (id INTEGER PRIMARY KEY, ')
        assert sql[v].startswith(
            f'CREATE TABLE "{v}" (array_id INTEGER NOT NULL REFERENCES "{a}" (id), '
            "timestamp INTEGER NOT NULL"
        )
        assert sql[v].endswith(f", value {value_sql_type(d['value_type'])})")
        assert sql[s].startswith(
            f'CREATE TABLE "{s}" (array_id INTEGER NOT NULL REFERENCES "{a}" (id), '
            "id INTEGER PRIMARY KEY, owner_id INTEGER NOT NULL, "
        )
        assert sql[v + "_key"] == f'CREATE INDEX "{v}_key" ON "{v}" (array_id)'


STORAGE = {
    "array_id": {"integer"},
    "id": {"integer"},
    "owner_id": {"integer"},
    "timestamp": {"integer"},
    "issue_time": {"integer"},
    "initial_timestamp": {"integer"},
    "length": {"integer"},
    "count": {"integer"},
    "scenario": {"integer"},
    "percentile": {"real"},
}


def test_storage_classes(varied, con) -> None:
    _, _, result = varied
    for d in result:
        for table in (d["values_table"], d["series_table"], d["arrays_table"]):
            for col, *_ in table_info(con, table):
                classes = {
                    r[0] for r in con.execute(f'SELECT DISTINCT typeof("{col}") FROM "{table}"')
                }
                if col == "value":
                    vt = value_sql_type(d["value_type"])
                    allowed = {"REAL": {"real", "null"}, "INTEGER": {"integer"}, "TEXT": {"text"}}
                    assert classes <= allowed[vt], (table, classes)
                else:
                    assert classes == STORAGE.get(col, {"text"}), (table, col, classes)


def test_index_is_filled_with_the_rows(tmp_path: Path) -> None:
    """The index exists before the rows and grows with them (appends, as the rows come
    in array_id order), stays consistent, and is at most a little larger than the
    index SQLite's sorter builds from the finished table."""
    store = new_store(tmp_path / "s.h5")
    add(store, sts("big", np.arange(30_000.0)))
    add(store, sts("big2", np.arange(30_000.0) + 0.5))
    out = tmp_path / "e.sqlite"
    store.export_sqlite(out)
    values, index = "SingleTimeSeries_f64_utc_values", "SingleTimeSeries_f64_utc_values_key"

    def pages(c: sqlite3.Connection) -> dict[str, list[int]]:
        found = defaultdict(list)
        for name, pageno in c.execute("SELECT name, pageno FROM dbstat"):
            found[name].append(pageno)
        return found

    with connect(out) as c:
        before = pages(c)
        assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert len(before[values]) > 3
    # Filled together: index pages sit among the table's, not after them all.
    assert min(before[index]) < max(before[values])
    copy = tmp_path / "rebuilt.sqlite"
    shutil.copyfile(out, copy)
    with sqlite3.connect(copy) as c:
        c.execute(f'REINDEX "{index}"')
        c.execute("VACUUM")
    c.close()
    with connect(copy) as c:
        rebuilt = pages(c)
    assert len(before[index]) <= 1.2 * len(rebuilt[index])


# ---------------------------------------------------------------------- the arrays table


def test_array_ids_are_the_rank_of_the_key(varied, con) -> None:
    _, _, result = varied
    for d in result:
        rows = con.execute(f'SELECT id, data_hash, time_axis FROM "{d["arrays_table"]}"').fetchall()
        ranked = sorted(rows, key=lambda r: (r[1].encode(), r[2].encode()))
        assert [r[0] for r in ranked] == list(range(1, len(rows) + 1))
        # Every array is used by a series and has values; nothing dangles.
        used = {r[0] for r in con.execute(f'SELECT array_id FROM "{d["series_table"]}"')}
        with_values = {
            r[0] for r in con.execute(f'SELECT DISTINCT array_id FROM "{d["values_table"]}"')
        }
        assert used == with_values == {r[0] for r in rows}


def test_every_hash_rederives_from_the_exported_rows(varied, con) -> None:
    for base in partitions(con):
        for array_id, h in con.execute(f'SELECT id, data_hash FROM "{base}_arrays"').fetchall():
            assert data_hash(array_of(con, base, array_id)).hex() == h, (base, array_id)


def test_hashes_equal_the_catalog_for_stored_arrays(varied, con) -> None:
    store, _, _ = varied
    catalog = {(m["owner_id"], m["name"], m["time_series_type"]): m for m in store.list_metadata()}
    for base in partitions(con):
        for owner, name, tst, h in con.execute(
            f'SELECT s.owner_id, s.name, s.time_series_type, a.data_hash FROM "{base}_series" s '
            f'JOIN "{base}_arrays" a ON a.id = s.array_id'
        ):
            if tst == "DeterministicSingleTimeSeries":
                continue  # hashed over the materialized windows, not the source
            assert h == catalog[(owner, name, tst)]["data_hash"], (owner, name)


def axis_of(con: sqlite3.Connection, base: str, name: str, owner: int = 1) -> str:
    return con.execute(
        f'SELECT a.time_axis FROM "{base}_series" s JOIN "{base}_arrays" a ON a.id = s.array_id '
        "WHERE s.name = ? AND s.owner_id = ?",
        (name, owner),
    ).fetchone()[0]


def test_time_axis_spellings(varied, con) -> None:
    assert axis_of(con, "SingleTimeSeries_f64_utc", "f64") == "R6/2024-01-01T00:00:00Z/PT1H"
    assert axis_of(con, "SingleTimeSeries_f64_utc", "pre1970") == "R3/1969-12-31T22:00:00Z/PT1H"
    assert (
        axis_of(con, "SingleTimeSeries_f64_offset_minus07_00", "offset")
        == "R2/2024-01-01T07:00:00Z/PT1H"
    )
    assert (
        axis_of(con, "SingleTimeSeries_f64_America_Denver", "denver")
        == "R4/2024-03-10T07:00:00Z/PT1H"
    )
    assert axis_of(con, "SingleTimeSeries_f64_zoneless", "p1m") == "R5/2024-01-31T00:00:00Z/P1M"
    ts = np.array([T0_MS, T0_MS + 7 * 60_000, T0_MS + 5 * H_MS + 500], dtype=np.int64)
    assert axis_of(con, "NonSequentialTimeSeries_f64_utc", "ns") == timestamps_hash(ts).hex()
    assert axis_of(con, "PersistentTimeSeries_i32_2_utc", "pers") == timestamps_hash(ts).hex()
    assert axis_of(con, "Deterministic_f64_utc", "det") == "R2/2024-01-01T00:00:00Z/PT2H/PT3H/PT1H"
    assert axis_of(con, "Deterministic_f64_utc", "det1") == "R1/2024-01-01T00:00:00Z/PT0S/PT2H/PT1H"
    assert axis_of(con, "Scenarios_f64_utc", "scen_m") == "R2/2024-01-31T00:00:00Z/P1M/P2M/P1M"
    assert (
        axis_of(con, "DeterministicSingleTimeSeries_f64_utc", "src", owner=7)
        == "R5/2024-01-01T00:00:00Z/PT15M/PT30M/PT15M"
    )


def test_shared_arrays_are_written_once(varied, con) -> None:
    base = "SingleTimeSeries_f64_utc"
    rows = con.execute(
        f'SELECT s.owner_id, s.owner_category, s.array_id, a.time_axis FROM "{base}_series" s '
        f'JOIN "{base}_arrays" a ON a.id = s.array_id WHERE s.name LIKE ? ORDER BY s.id',
        ("shared%",),
    ).fetchall()
    assert [r[:2] for r in rows] == [
        (2, "Component"),
        (3, "Component"),
        (4, "SupplementalAttribute"),
        (5, "Component"),
    ]
    assert rows[0][2] == rows[1][2] == rows[2][2] != rows[3][2]
    assert abs(rows[3][2] - rows[0][2]) == 1  # one hash, two axes: adjacent ids
    n = con.execute(
        f'SELECT count(*) FROM "{base}_values" WHERE array_id = ?', (rows[0][2],)
    ).fetchone()[0]
    assert n == 3


# ---------------------------------------------------------------------- values


def values_of(con: sqlite3.Connection, base: str, name: str, owner: int = 1) -> list[tuple]:
    """Every values column but array_id, in rowid order, for one series."""
    cols = [c[0] for c in table_info(con, f"{base}_values")][1:]
    return con.execute(
        f'SELECT {", ".join(cols)} FROM "{base}_values" WHERE array_id = (SELECT array_id FROM '
        f'"{base}_series" WHERE name = ? AND owner_id = ?) ORDER BY rowid',
        (name, owner),
    ).fetchall()


def test_scalar_values(varied, con) -> None:
    t = [T0_MS + k * H_MS for k in range(6)]
    got = values_of(con, "SingleTimeSeries_f64_utc", "f64")
    assert got[0] == (t[0], 1.5)
    assert got[1] == (t[1], None)  # NaN is NULL
    assert got[2] == (t[2], float("inf"))
    assert got[3] == (t[3], float("-inf"))
    assert got[4:] == [(t[4], 1e-7), (t[5], 1e16)]
    assert values_of(con, "SingleTimeSeries_f32_utc", "f32") == [
        (t[0], 1.100000023841858),
        (t[1], None),
        (t[2], float("-inf")),
    ]
    assert [v for _, v in values_of(con, "SingleTimeSeries_i64_utc", "int64")] == [
        -(2**63),
        0,
        2**63 - 1,
    ]
    assert [v for _, v in values_of(con, "SingleTimeSeries_u64_utc", "uint64")] == [
        0,
        0,
        2**63 - 1,
    ]
    assert [v for _, v in values_of(con, "SingleTimeSeries_u8_utc", "uint8")] == [0, 0, 255]
    assert [v for _, v in values_of(con, "SingleTimeSeries_i8_utc", "int8")] == [-128, 0, 127]
    assert [v for _, v in values_of(con, "SingleTimeSeries_bool_utc", "bool")] == [1, 0, 1]


def test_timestamps_are_integer_ms_negative_before_1970(varied, con) -> None:
    assert [r[0] for r in values_of(con, "SingleTimeSeries_f64_utc", "pre1970")] == [
        -7_200_000,
        -3_600_000,
        0,
    ]
    assert [r[0] for r in values_of(con, "NonSequentialTimeSeries_f64_utc", "ns_old")] == [
        -315_619_200_000,
        T0_MS,
    ]
    # Offsets and zones are instants; zoneless wall time reads as if UTC; P1M clamps.
    assert values_of(con, "SingleTimeSeries_f64_offset_minus07_00", "offset")[0][0] == (
        T0_MS + 7 * H_MS
    )
    denver = [r[0] for r in values_of(con, "SingleTimeSeries_f64_America_Denver", "denver")]
    assert np.diff(denver).tolist() == [H_MS] * 3
    months = [r[0] for r in values_of(con, "SingleTimeSeries_f64_zoneless", "p1m")]
    assert [datetime.fromtimestamp(m / 1000, UTC).day for m in months] == [31, 29, 31, 30, 31]
    ns = [r[0] for r in values_of(con, "NonSequentialTimeSeries_f64_utc", "ns")]
    assert ns == [T0_MS, T0_MS + 420_000, T0_MS + 5 * H_MS + 500]


def test_json_cells(varied, con) -> None:
    def cells(base: str, name: str, owner: int = 1) -> list[str]:
        return [r[-1] for r in values_of(con, base, name, owner)]

    assert cells("SingleTimeSeries_f64_2_utc", "f64_2") == [
        "[1.0,-0.0]",
        '[null,"Infinity"]',
        "[0.1,1e+300]",
    ]
    assert cells("SingleTimeSeries_f64_2x3_utc", "f64_2x3") == [
        "[[0.0,0.5,1.0],[1.5,2.0,2.5]]",
        "[[3.0,3.5,4.0],[4.5,5.0,5.5]]",
    ]
    assert cells("SingleTimeSeries_i32_2x3_utc", "i32_2x3") == [
        "[[-6,-5,-4],[-3,-2,-1]]",
        "[[0,1,2],[3,4,5]]",
    ]
    assert cells("SingleTimeSeries_bool_2_utc", "bool_2") == ["[1,0]", "[0,1]"]
    assert cells("SingleTimeSeries_tuple3_f64_utc", "tup") == [
        "[1.0,2.0,-0.0]",
        '[null,"-Infinity",3.5]',
    ]
    assert cells("SingleTimeSeries_linear_function_utc", "lin") == ["[2.5,-1.0]", "[0.0,0.0]"]
    assert cells("SingleTimeSeries_quadratic_function_utc", "quad") == ["[0.5,2.0,3.0]"]
    assert cells("SingleTimeSeries_piecewise_step_utc", "pws") == [
        "[2.0,0.0,1.0,5.0]",
        "[1.0,3.0,0.0,0.0]",
    ]
    assert cells("PersistentTimeSeries_i32_2_utc", "pers") == ["[1,2]", "[3,4]", "[5,6]"]


def test_over_padded_composite_is_shrunk_and_shares_the_array(varied, con) -> None:
    base = "SingleTimeSeries_piecewise_linear_utc"
    rows = con.execute(
        f'SELECT owner_id, array_id, element_shape FROM "{base}_series" ORDER BY id'
    ).fetchall()
    # The series row keeps the catalog's element_shape; both share one array.
    assert rows == [(1, 1, "[5]"), (9, 1, "[9]")]
    assert con.execute(f'SELECT count(*) FROM "{base}_arrays"').fetchone()[0] == 1
    assert [r[-1] for r in values_of(con, base, "pwl", 9)] == [
        "[2.0,0.0,0.0,1.0,1.5]",
        "[1.0,5.0,5.0,0.0,0.0]",
    ]


def test_forecast_rows_are_window_major(varied, con) -> None:
    det = values_of(con, "Deterministic_f64_utc", "det")
    # data[h, j]: window j issued at T0 + j*2h, step h at issue + h*1h.
    assert det == [
        (T0_MS + (2 * j + h) * H_MS, T0_MS + 2 * j * H_MS, float(h * 2 + j))
        for j in range(2)
        for h in range(3)
    ]
    prob = values_of(con, "Probabilistic_f64_utc", "prob")
    data = np.arange(12.0).reshape(3, 2, 2)
    assert prob == [
        (T0_MS + (j + h) * H_MS, T0_MS + j * H_MS, p, float(data[lane, h, j]))
        for j in range(2)
        for h in range(2)
        for lane, p in enumerate([0.1, 0.5, 0.9])
    ]
    scen = values_of(con, "Scenarios_i64_utc", "scen")
    data = np.arange(12).reshape(2, 2, 3)
    assert scen == [
        (T0_MS + (j + h) * H_MS, T0_MS + j * H_MS, s, int(data[s, h, j]))
        for j in range(3)
        for h in range(2)
        for s in range(2)
    ]
    # Calendar forecast: issue times step from the anchor, targets from their issue time,
    # clamped to month end (Feb 29 + P1M is Mar 29, as the reference writes it).
    months = values_of(con, "Scenarios_f64_utc", "scen_m")
    days = [
        (datetime.fromtimestamp(i / 1000, UTC).date(), datetime.fromtimestamp(t / 1000, UTC).date())
        for t, i, _, _ in months
    ]
    assert [d for k, d in enumerate(days) if k % 2 == 0] == [
        (datetime(2024, 1, 31).date(), datetime(2024, 1, 31).date()),
        (datetime(2024, 1, 31).date(), datetime(2024, 2, 29).date()),
        (datetime(2024, 2, 29).date(), datetime(2024, 2, 29).date()),
        (datetime(2024, 2, 29).date(), datetime(2024, 3, 29).date()),
    ]


def test_rows_within_an_array_are_sorted_by_issue_time_timestamp_lane(varied, con) -> None:
    for base in partitions(con):
        tst, _ = series_type(con, f"{base}_series")
        cols = ["array_id"] + (["issue_time"] if tst in FORECASTS else []) + ["timestamp"]
        if tst in LANES:
            cols.append(LANES[tst])
        got = con.execute(
            f'SELECT {", ".join(cols)} FROM "{base}_values" ORDER BY rowid'
        ).fetchall()
        by_array = defaultdict(list)
        for r in got:
            by_array[r[0]].append(r)
        for rows in by_array.values():
            assert rows == sorted(rows), base
            assert len(set(rows)) == len(rows), base
        # Each array's rows are contiguous.
        order = [r[0] for r in got]
        assert len([k for k in range(len(order)) if k == 0 or order[k] != order[k - 1]]) == len(
            by_array
        )


def test_derived_series_write_proper_cells(varied, con) -> None:
    # DSTS of a [2] source: materialized windows, each cell a whole [2] value.
    rows = values_of(con, "DeterministicSingleTimeSeries_f64_2_utc", "src2", owner=7)
    src = np.arange(12.0).reshape(6, 2)
    step = 900_000
    assert rows == [
        (
            T0_MS + (j + h) * step,
            T0_MS + j * step,
            json.dumps(src[j + h].tolist(), separators=(",", ":")),
        )
        for j in range(5)
        for h in range(2)
    ]
    ((shape, count),) = con.execute(
        'SELECT element_shape, count FROM "DeterministicSingleTimeSeries_f64_2_utc_series"'
    ).fetchall()
    assert (shape, count) == ("[2]", 5)


# ---------------------------------------------------------------------- the series table


def series_row(con: sqlite3.Connection, base: str, name: str, owner: int = 1) -> dict:
    cur = con.execute(
        f'SELECT * FROM "{base}_series" WHERE name = ? AND owner_id = ?', (name, owner)
    )
    cols = [c[0] for c in cur.description]
    return dict(zip(cols, cur.fetchone(), strict=True))


def test_series_columns(varied, con) -> None:
    store, _, _ = varied
    r = series_row(con, "SingleTimeSeries_f64_utc", "f64")
    assert r["id"] == store.list_metadata(name="f64")[0]["id"]
    assert r["owner_type"] == "Gen"
    assert r["owner_category"] == "Component"
    assert r["time_series_type"] == "SingleTimeSeries"
    assert (r["initial_timestamp"], r["resolution"], r["length"]) == (T0_MS, "PT1H", 6)
    # Keys by byte order, compact, UTF-8 raw, floats keep a fraction.
    assert r["features"] == '{"Z":1.0,"flag":true,"w":0.5,"year":2030,"zone":"north","ü":"é"}'
    assert (r["element_type"], r["element_shape"], r["time_reference"]) == ("f64", "[]", "utc")
    assert [r[k] for k in ("units", "quantity_kind", "unit_system", "component_field")] == [
        "MW",
        "power",
        "natural_units",
        "max_active_power",
    ]
    assert r["application_data"] == '{"a":1}'
    plain = series_row(con, "SingleTimeSeries_f32_utc", "f32")
    assert plain["features"] == "{}"
    assert [
        plain[k]
        for k in ("units", "quantity_kind", "unit_system", "component_field", "application_data")
    ] == [""] * 5
    sa = series_row(con, "SingleTimeSeries_f64_utc", "shared", owner=4)
    assert (sa["owner_type"], sa["owner_category"]) == ("Weather", "SupplementalAttribute")
    assert (
        series_row(con, "SingleTimeSeries_f64_offset_minus07_00", "offset")["time_reference"]
        == "-07:00"
    )
    assert (
        series_row(con, "SingleTimeSeries_f64_America_Denver", "denver")["time_reference"]
        == "America/Denver"
    )
    assert series_row(con, "SingleTimeSeries_tuple3_f64_utc", "tup")["element_type"] == (
        "tuple(3,f64)"
    )
    det = series_row(con, "Deterministic_f64_utc", "det")
    assert [
        det[k] for k in ("initial_timestamp", "resolution", "interval", "horizon", "count")
    ] == [
        T0_MS,
        "PT1H",
        "PT2H",
        "PT3H",
        2,
    ]
    assert det["element_shape"] == "[2]"  # the catalog's: the array shape minus its lead
    prob = series_row(con, "Probabilistic_f64_utc", "prob")
    assert prob["element_shape"] == "[2,2]"
    ns = series_row(con, "NonSequentialTimeSeries_f64_utc", "ns")
    assert "initial_timestamp" not in ns and "length" not in ns


def test_unspecified_reference(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    add(store, sts("u", [1.0, 2.0]))
    add(store, sts("v", [1.0, 2.0], time_reference="unspecified"), owner=2)
    store.close()
    cat = sqlite3.connect(tmp_path / "s.h5" / "catalog.sqlite")
    cat.execute("UPDATE time_series_associations SET time_reference = NULL WHERE name = 'u'")
    recheck_rows(cat, "name = 'u'")  # as an earlier release's row, migrated
    cat.commit()
    cat.close()
    store = Store.open(tmp_path / "s.h5")
    out = tmp_path / "e.sqlite"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = store.export_sqlite(out)
    # The catalog NULL and a zone literally named "unspecified" spell one slug: _2.
    assert [(d["values_table"], d["time_reference"]) for d in result] == [
        ("SingleTimeSeries_f64_unspecified_values", "unspecified"),
        ("SingleTimeSeries_f64_unspecified_2_values", "unspecified"),
    ]
    with connect(out) as c:
        assert c.execute(
            'SELECT time_reference FROM "SingleTimeSeries_f64_unspecified_series"'
        ).fetchall() == [("unspecified",)]
    store.close()


# ---------------------------------------------------------------------- time_range (§13.2)


@pytest.fixture
def ranged(tmp_path: Path) -> Store:
    store = new_store(tmp_path / "s.h5")
    add(store, sts("sts", np.arange(6.0)))
    ts = [T0, T0 + timedelta(minutes=90), T0 + 4 * H]
    add(store, NonSequentialTimeSeries(ts, np.arange(3.0), "ns"))
    add(store, PersistentTimeSeries(ts, np.arange(3.0), "pers"))
    add(store, Deterministic(T0, "PT1H", "PT3H", "PT2H", 3, np.arange(9.0).reshape(3, 3), "det"))
    add(
        store,
        Probabilistic(
            T0, "PT1H", "PT3H", "PT2H", 3, [0.1, 0.9], np.arange(18.0).reshape(2, 3, 3), "prob"
        ),
    )
    add(store, Scenarios(T0, "PT1H", "PT3H", "PT2H", 3, np.arange(18.0).reshape(2, 3, 3), "scen"))
    add(
        store,
        sts(
            "pwl",
            [[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0], [1, 6, 6, 0, 0]],
            element_type="piecewise_linear",
        ),
    )
    yield store
    store.close()


def export_range(store: Store, path: Path, start: datetime, end: datetime, **filters: Any):
    result = store.export_sqlite(path, time_range=(start, end), **filters)
    return result, sqlite3.connect(path)


def test_range_static_floors_to_the_grid(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(
        ranged, tmp_path / "e.sqlite", T0 + timedelta(minutes=90), T0 + 4 * H, name="sts"
    )
    assert c.execute(
        'SELECT timestamp, value FROM "SingleTimeSeries_f64_utc_values"'
    ).fetchall() == [
        (T0_MS + H_MS, 1.0),
        (T0_MS + 2 * H_MS, 2.0),
        (T0_MS + 3 * H_MS, 3.0),
    ]
    r = series_row(c, "SingleTimeSeries_f64_utc", "sts")
    assert (r["initial_timestamp"], r["length"]) == (T0_MS + H_MS, 3)
    ((h, axis),) = c.execute('SELECT data_hash, time_axis FROM "SingleTimeSeries_f64_utc_arrays"')
    assert axis == "R3/2024-01-01T01:00:00Z/PT1H"
    assert h == data_hash(np.array([1.0, 2.0, 3.0])).hex()


def test_range_nonsequential_is_half_open(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(
        ranged, tmp_path / "e.sqlite", T0 + timedelta(minutes=90), T0 + 4 * H, name="ns"
    )
    rows = c.execute('SELECT timestamp, value FROM "NonSequentialTimeSeries_f64_utc_values"')
    assert rows.fetchall() == [(T0_MS + 90 * 60_000, 1.0)]
    ((axis,),) = c.execute('SELECT time_axis FROM "NonSequentialTimeSeries_f64_utc_arrays"')
    assert axis == timestamps_hash(np.array([T0_MS + 90 * 60_000])).hex()


def test_range_persistent_keeps_the_breakpoint_in_force(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(ranged, tmp_path / "e.sqlite", T0 + 2 * H, T0 + 5 * H, name="pers")
    rows = c.execute('SELECT timestamp, value FROM "PersistentTimeSeries_f64_utc_values"')
    assert rows.fetchall() == [(T0_MS + 90 * 60_000, 1.0), (T0_MS + 4 * H_MS, 2.0)]


def test_range_persistent_before_the_first_breakpoint(ranged: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.sqlite"
    with pytest.raises(InvalidParameterError, match="before the first breakpoint"):
        ranged.export_sqlite(out, name="pers", time_range=(T0 - H, T0 + H))
    assert not out.exists()


def test_range_forecasts_keep_whole_windows(ranged: Store, tmp_path: Path) -> None:
    # Issue times 0h, 2h, 4h: [2h, 4h+1min) keeps windows 1 and 2, both whole.
    result, c = export_range(
        ranged, tmp_path / "e.sqlite", T0 + 2 * H, T0 + 4 * H + timedelta(minutes=1)
    )
    rows = {d["time_series_type"]: d["rows"] for d in result}
    assert rows["Deterministic"] == 6
    assert rows["Probabilistic"] == rows["Scenarios"] == 12
    det = c.execute(
        'SELECT issue_time, timestamp, value FROM "Deterministic_f64_utc_values"'
    ).fetchall()
    assert det[0] == (T0_MS + 2 * H_MS, T0_MS + 2 * H_MS, 1.0)
    assert det[-1] == (T0_MS + 4 * H_MS, T0_MS + 6 * H_MS, 8.0)  # runs past the end
    r = series_row(c, "Deterministic_f64_utc", "det")
    assert (r["initial_timestamp"], r["count"]) == (T0_MS + 2 * H_MS, 2)
    ((h, axis),) = c.execute('SELECT data_hash, time_axis FROM "Deterministic_f64_utc_arrays"')
    assert axis == "R2/2024-01-01T02:00:00Z/PT2H/PT3H/PT1H"
    assert h == data_hash(np.arange(9.0).reshape(3, 3)[:, 1:]).hex()


def test_range_one_window_keeps_its_interval(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(ranged, tmp_path / "e.sqlite", T0 + 2 * H, T0 + 3 * H, name="det")
    ((axis,),) = c.execute('SELECT time_axis FROM "Deterministic_f64_utc_arrays"')
    assert axis == "R1/2024-01-01T02:00:00Z/PT2H/PT3H/PT1H"


def test_range_before_the_first_window_clamps(ranged: Store, tmp_path: Path) -> None:
    result, c = export_range(
        ranged, tmp_path / "e.sqlite", T0 - 10 * H, T0 + 2 * H + timedelta(minutes=1), name="det"
    )
    assert result[0]["rows"] == 6
    r = series_row(c, "Deterministic_f64_utc", "det")
    assert (r["initial_timestamp"], r["count"]) == (T0_MS, 2)


@pytest.mark.parametrize(
    ("start", "end", "match"),
    [
        (T0 + H, T0 + 2 * H, "align to a window boundary"),
        (T0 + 6 * H, T0 + 9 * H, "past the last window"),
        (T0 + 2 * H, T0 + 2 * H, "hold no values"),
        (T0 + H, T0, "end < start"),
        # Naive bounds are the series' own wall clock (UTC here): the same 01:00 as above.
        (datetime(2024, 1, 1, 1), datetime(2024, 1, 1, 4), "align to a window boundary"),
    ],
)
def test_range_refusals_create_no_file(ranged: Store, tmp_path: Path, start, end, match) -> None:
    out = tmp_path / "e.sqlite"
    with pytest.raises(InvalidParameterError, match=match):
        ranged.export_sqlite(out, name="det", time_range=(start, end))
    assert os.listdir(tmp_path).count("e.sqlite") == 0
    assert not [p for p in os.listdir(tmp_path) if "partial" in p]


def test_range_composites_are_written_at_the_slice_width(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(ranged, tmp_path / "e.sqlite", T0 + H, T0 + 3 * H, name="pwl")
    base = "SingleTimeSeries_piecewise_linear_utc"
    assert [r[0] for r in c.execute(f'SELECT value FROM "{base}_values"')] == [
        "[1.0,5.0,5.0]",
        "[1.0,6.0,6.0]",
    ]
    ((h,),) = c.execute(f'SELECT data_hash FROM "{base}_arrays"')
    assert h == data_hash(array_of(c, base, 1)).hex()
    assert h == data_hash(np.array([[1.0, 5.0, 5.0], [1.0, 6.0, 6.0]])).hex()


def test_range_every_hash_rederives(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(ranged, tmp_path / "e.sqlite", T0 + 2 * H, T0 + 5 * H)
    for base in partitions(c):
        for array_id, h in c.execute(f'SELECT id, data_hash FROM "{base}_arrays"').fetchall():
            assert data_hash(array_of(c, base, array_id)).hex() == h, base


def test_range_slice_of_derived_series(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    add(store, sts("src", np.arange(6.0)))
    store.transform_single_time_series("PT2H", "PT1H")
    out = tmp_path / "e.sqlite"
    store.export_sqlite(out, include_derived=True, time_range=(T0 + 2 * H, T0 + 4 * H))
    with connect(out) as c:
        base = "DeterministicSingleTimeSeries_f64_utc"
        rows = c.execute(f'SELECT issue_time, timestamp, value FROM "{base}_values"').fetchall()
        assert rows == [
            (T0_MS + j * H_MS, T0_MS + (j + h) * H_MS, float(j + h)) for j in (2, 3) for h in (0, 1)
        ]
        ((h, axis),) = c.execute(f'SELECT data_hash, time_axis FROM "{base}_arrays"')
        assert axis == "R2/2024-01-01T02:00:00Z/PT1H/PT2H/PT1H"
        assert h == data_hash(np.array([[2.0, 3.0], [3.0, 4.0]])).hex()


# ---------------------------------------------------------------------- dry_run and the result


def test_dry_run_touches_nothing(varied, tmp_path: Path) -> None:
    store, _, result = varied
    out = tmp_path / "e.sqlite"
    assert store.export_sqlite(out, include_derived=True, dry_run=True) == result
    assert os.listdir(tmp_path) == []
    # An existing database is left byte-identical, and the plan ignores earlier partitions.
    other = tmp_path / "other.sqlite"
    store.export_sqlite(other, name="f64")
    before = file_digest(other)
    plan = store.export_sqlite(other, name="f32", dry_run=True)
    assert [d["values_table"] for d in plan] == ["SingleTimeSeries_f32_utc_values"]
    assert file_digest(other) == before
    assert sorted(os.listdir(tmp_path)) == ["other.sqlite"]


def test_dry_run_reports_refusals(varied, tmp_path: Path) -> None:
    store, _, _ = varied
    out = tmp_path / "e.sqlite"
    store.export_sqlite(out, name="f64")
    before = file_digest(out)
    with pytest.raises(InvalidParameterError, match="already holds 4 of the names"):
        store.export_sqlite(out, name="f64", dry_run=True)
    with pytest.raises(InvalidParameterError, match="must end in"):
        store.export_sqlite(out, name="f64", dry_run=True, table_prefix="x")
    assert file_digest(out) == before


def test_empty_selection_returns_nothing_and_creates_nothing(varied, tmp_path: Path) -> None:
    store, _, _ = varied
    assert store.export_sqlite(tmp_path / "e.sqlite", name="no such series") == []
    assert os.listdir(tmp_path) == []


def test_progress_reaches_the_total(varied, tmp_path: Path) -> None:
    store, _, _ = varied
    seen: list[tuple[int, int]] = []
    result = store.export_sqlite(tmp_path / "e.sqlite", progress=lambda d, t: seen.append((d, t)))
    total = sum(d["rows"] for d in result)
    assert seen and seen[-1] == (total, total)
    assert all(t == total for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_module_level_function(varied, tmp_path: Path) -> None:
    from infrastore_sqlite.interchange.sqlite.writer import export_sqlite

    store, _, _ = varied
    assert export_sqlite(store, tmp_path / "e.sqlite", name="f64")


def test_filters(varied, tmp_path: Path) -> None:
    store, _, _ = varied
    result = store.export_sqlite(tmp_path / "e.sqlite", owner_category="SupplementalAttribute")
    assert [(d["series"], d["arrays"], d["rows"]) for d in result] == [(1, 1, 3)]
    result = store.export_sqlite(tmp_path / "f.sqlite", features={"zone": "north"})
    assert [d["series"] for d in result] == [1]
    result = store.export_sqlite(tmp_path / "g.sqlite", name_glob="shared*", table_prefix="run1_")
    assert [d["values_table"] for d in result] == ["run1_SingleTimeSeries_f64_utc_values"]


# ---------------------------------------------------------------------- the container


def test_one_file_in_delete_mode(varied, tmp_path: Path) -> None:
    store, _, _ = varied
    out = tmp_path / "e.sqlite"
    store.export_sqlite(out, name="f64")
    store.export_sqlite(out, name="f32")  # into the existing database
    assert os.listdir(tmp_path) == ["e.sqlite"]
    with connect(out) as c:
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert c.execute("PRAGMA foreign_key_check").fetchall() == []
        assert c.execute("PRAGMA user_version").fetchone()[0] == 0
        assert c.execute("PRAGMA application_id").fetchone()[0] == 0


def test_the_varied_export_is_consistent(varied) -> None:
    _, out, _ = varied
    assert sorted(os.listdir(out.parent)) == ["e.sqlite", "s.h5"]
    with connect(out) as c:
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert c.execute("PRAGMA foreign_key_check").fetchall() == []


def test_short_arrays_of_one_grid_share_a_statement_and_keep_their_rows(tmp_path: Path) -> None:
    # Arrays of one length and anchor are written several to a statement (ids and
    # coordinates from the row number); each must still get exactly its own rows.
    import infrastore_sqlite.interchange.sqlite.writer as export_module

    s = Store.create(tmp_path / "s.h5")
    rng = np.random.default_rng(7)
    n = 5
    sts = [rng.normal(size=24) for _ in range(n)]
    det = [rng.normal(size=(3, 4)) for _ in range(n)]
    prob = [np.sort(rng.normal(size=(3, 2, 4)), axis=0) for _ in range(n)]
    scen = [rng.normal(size=(2, 2, 4)) for _ in range(n)]
    for k in range(n):
        add = lambda ts, k=k: s.add_time_series(k + 1, "Gen", "Component", ts)  # noqa: E731
        add(SingleTimeSeries(T0, "PT1H", sts[k], "sts"))
        add(Deterministic(T0, "PT1H", "PT3H", "PT2H", 4, det[k], "det"))
        add(Probabilistic(T0, "PT1H", "PT2H", "PT2H", 4, [10.0, 50.0, 90.0], prob[k], "prob"))
        add(Scenarios(T0, "PT1H", "PT2H", "PT2H", 4, scen[k], "scen"))
    statements: list[int] = []
    real = export_module._ValueWriter.statement

    def counting(self: Any, p: Any, tst: Any) -> Any:
        insert = real(self, p, tst)

        def wrapped(blocks: list[Any], cells: Any) -> None:
            statements.append(len(blocks))
            insert(blocks, cells)

        return wrapped

    export_module._ValueWriter.statement = counting  # type: ignore[method-assign]
    try:
        s.export_sqlite(tmp_path / "out.db")
    finally:
        export_module._ValueWriter.statement = real  # type: ignore[method-assign]
    assert statements == [n, n, n, n]  # one statement per partition
    con = sqlite3.connect(tmp_path / "out.db")
    for k in range(n):
        owner = k + 1
        assert values_of(con, "SingleTimeSeries_f64_utc", "sts", owner=owner) == [
            (T0_MS + h * H_MS, float(sts[k][h])) for h in range(24)
        ]
        assert values_of(con, "Deterministic_f64_utc", "det", owner=owner) == [
            (T0_MS + (2 * j + h) * H_MS, T0_MS + 2 * j * H_MS, float(det[k][h, j]))
            for j in range(4)
            for h in range(3)
        ]
        assert values_of(con, "Probabilistic_f64_utc", "prob", owner=owner) == [
            (T0_MS + (2 * j + h) * H_MS, T0_MS + 2 * j * H_MS, p, float(prob[k][lane, h, j]))
            for j in range(4)
            for h in range(2)
            for lane, p in enumerate([10.0, 50.0, 90.0])
        ]
        assert values_of(con, "Scenarios_f64_utc", "scen", owner=owner) == [
            (T0_MS + (2 * j + h) * H_MS, T0_MS + 2 * j * H_MS, sc, float(scen[k][sc, h, j]))
            for j in range(4)
            for h in range(2)
            for sc in range(2)
        ]
    con.close()
    s.close()
