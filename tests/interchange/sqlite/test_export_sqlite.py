"""End-to-end tests of ``Store.export_sqlite``: what lands in the database.

One varied store is exported once per module and inspected table by table: the DDL and
storage classes of every partition kind, sqlite_master order, the arrays table (ids, time
axes, hashes re-derived from the exported rows), the values (timestamps, forecast
coordinates, row order, NaN/inf, JSON cells, composite widths) and the series columns.
Then time_range, dry_run, the return value and the container facts.
Refusals, views, faults and the reference comparison have files of their own.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import export_sqlite_helpers
import numpy as np
import pytest
from export_sqlite_helpers import (
    H_MS,
    SUMMARY_KEYS,
    T0_MS,
    array_of,
    connect,
    file_digest,
    master,
    partitions,
    table_info,
)
from varied_store import FORECASTS, SERIES_TAIL, add, new_store, sts

from infrastore_sqlite.core.hashing import data_hash, timestamps_hash
from infrastore_sqlite.errors import InvalidParameterError

con = export_sqlite_helpers.con
varied = export_sqlite_helpers.varied

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
