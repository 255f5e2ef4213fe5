"""The three fixed-name views ``<prefix>all_values``, ``all_series``, ``all_arrays``.

Each is a UNION ALL over every partition under its prefix, with ``partition_name`` and
NULL for the columns a type lacks (peer-contract §4). A later export under the same prefix
replaces them so they span the earlier partitions and the new ones; another prefix has
views of its own; a view or table under one of the names without the marker is a
collision.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ADDITIONS

from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
    Store,
)
from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.layout import VIEW_MARKER

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
VIEWS = ("all_values", "all_series", "all_arrays")
VALUES_COLS = [
    "partition_name",
    "array_id",
    "timestamp",
    "issue_time",
    "percentile",
    "scenario",
    "value",
]
SERIES_COLS = [
    "partition_name",
    "array_id",
    "id",
    "owner_id",
    "owner_type",
    "owner_category",
    "time_series_type",
    "name",
    "initial_timestamp",
    "resolution",
    "length",
    "interval",
    "horizon",
    "count",
    "features",
    "element_type",
    "element_shape",
    "time_reference",
    "units",
    "quantity_kind",
    "unit_system",
    "component_field",
    "application_data",
]
ARRAYS_COLS = ["partition_name", "id", "data_hash", "time_axis"]
# peer-contract §4: the columns that read as NULL, per type.
NULL_VALUES = {
    "SingleTimeSeries": {"issue_time", "percentile", "scenario"},
    "NonSequentialTimeSeries": {"issue_time", "percentile", "scenario"},
    "PersistentTimeSeries": {"issue_time", "percentile", "scenario"},
    "Deterministic": {"percentile", "scenario"},
    "DeterministicSingleTimeSeries": {"percentile", "scenario"},
    "Probabilistic": {"scenario"},
    "Scenarios": {"percentile"},
}
NULL_SERIES = {
    "SingleTimeSeries": {"interval", "horizon", "count"},
    "NonSequentialTimeSeries": {
        "initial_timestamp",
        "resolution",
        "length",
        "interval",
        "horizon",
        "count",
    },
    "PersistentTimeSeries": {
        "initial_timestamp",
        "resolution",
        "length",
        "interval",
        "horizon",
        "count",
    },
    "Deterministic": {"length"},
    "DeterministicSingleTimeSeries": {"length"},
    "Probabilistic": {"length"},
    "Scenarios": {"length"},
}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store.create(tmp_path / "s.h5")
    add(s, SingleTimeSeries(T0, "PT1H", np.array([1.0, np.nan, 3.0]), "sts"))
    add(s, SingleTimeSeries(T0, "PT1H", np.array([1, 2], dtype=np.int32), "sts_i"))
    ts = [T0, T0 + 2 * H]
    add(s, NonSequentialTimeSeries(ts, np.array([[1.0, 2.0], [3.0, 4.0]]), "ns"))
    add(s, PersistentTimeSeries(ts, np.array([5.0, 6.0]), "pers"))
    add(s, Deterministic(T0, "PT1H", "PT2H", "PT1H", 2, np.arange(4.0).reshape(2, 2), "det"))
    add(
        s,
        Probabilistic(
            T0, "PT1H", "PT2H", "PT1H", 2, [0.1, 0.9], np.arange(8.0).reshape(2, 2, 2), "prob"
        ),
    )
    add(s, Scenarios(T0, "PT1H", "PT2H", "PT1H", 2, np.arange(8.0).reshape(2, 2, 2), "scen"))
    add(s, SingleTimeSeries(T0, "PT15M", np.arange(4, dtype=np.float32), "src", units="MW"), 2)
    s.transform_single_time_series("PT30M", "PT15M", resolution="PT15M")
    yield s
    s.close()


def add(store: Store, ts: Any, owner: int = 1) -> int:
    return store.add_time_series(owner, "Gen", "Component", ts)


def views(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as con:
        return {
            n: s
            for n, s in con.execute(
                f"SELECT name, sql FROM sqlite_master WHERE type='view' AND NOT {ADDITIONS}"
            )
        }


def partition_tables(con: sqlite3.Connection, prefix: str) -> list[str]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    bases = [
        n[len(prefix) : -len("_values")]
        for n in names
        if n.startswith(prefix) and n.endswith("_values")
    ]
    return sorted((b for b in bases if b.split("_")[0] in NULL_VALUES), key=str.encode)


def check_views(path: Path, prefix: str, expected_bases: list[str]) -> None:
    """The views span exactly ``expected_bases``, in binary order, row for row."""
    con = sqlite3.connect(path)
    try:
        assert partition_tables(con, prefix) == sorted(expected_bases, key=str.encode)
        sql = views(path)
        for view, suffix, cols in [
            ("all_values", "_values", VALUES_COLS),
            ("all_series", "_series", SERIES_COLS),
            ("all_arrays", "_arrays", ARRAYS_COLS),
        ]:
            name = prefix + view
            assert VIEW_MARKER in sql[name]
            assert sql[name].startswith(f'CREATE VIEW "{name}" AS /* {VIEW_MARKER} */ SELECT ')
            assert re.findall(r"SELECT '([^']+)' AS partition_name", sql[name]) == sorted(
                expected_bases, key=str.encode
            )
            cur = con.execute(f'SELECT * FROM "{name}"')
            assert [c[0] for c in cur.description] == cols
            got = sorted(cur.fetchall(), key=repr)
            want = []
            for base in expected_bases:
                table = f"{prefix}{base}{suffix}"
                tst = con.execute(
                    f'SELECT DISTINCT time_series_type FROM "{prefix}{base}_series"'
                ).fetchone()[0]
                nulls = {"_values": NULL_VALUES, "_series": NULL_SERIES, "_arrays": {}}[suffix]
                have = [c[1] for c in con.execute(f'PRAGMA table_info("{table}")')]
                for c in cols[1:]:
                    assert (c in have) != (c in nulls.get(tst, set())), (table, c)
                select = ", ".join(c if c in have else "NULL" for c in cols[1:])
                want += [(base, *r) for r in con.execute(f'SELECT {select} FROM "{table}"')]
            assert got == sorted(want, key=repr)
    finally:
        con.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------- one export


def test_one_export_every_type(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.sqlite"
    result = store.export_sqlite(out, include_derived=True)
    bases = [d["values_table"][: -len("_values")] for d in result]
    assert len({d["time_series_type"] for d in result}) == 7
    check_views(out, "", bases)
    assert set(views(out)) == set(VIEWS)


def test_view_nulls_and_values(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.sqlite"
    store.export_sqlite(out)
    con = sqlite3.connect(out)
    # NaN shows through all_values as NULL too.
    rows = con.execute(
        "SELECT v.timestamp, v.issue_time, v.percentile, v.scenario, v.value FROM all_values v "
        "JOIN all_series s USING (partition_name, array_id) WHERE s.name = 'sts' "
        "ORDER BY v.timestamp"
    ).fetchall()
    t0 = 1_704_067_200_000
    assert rows == [
        (t0 + k * 3_600_000, None, None, None, v) for k, v in enumerate([1.0, None, 3.0])
    ]
    prob = con.execute(
        "SELECT issue_time IS NULL, percentile, scenario FROM all_values "
        "WHERE partition_name = 'Probabilistic_f64_utc'"
    ).fetchall()
    assert {r[0] for r in prob} == {0} and {r[1] for r in prob} == {0.1, 0.9}
    assert {r[2] for r in prob} == {None}
    scen = con.execute(
        "SELECT DISTINCT percentile, scenario FROM all_values WHERE partition_name = 'Scenarios_f64_utc'"
    ).fetchall()
    assert sorted(scen) == [(None, 0), (None, 1)]
    # The join idiom of the layout description works across partitions.
    joined = con.execute(
        "SELECT s.partition_name, s.name, count(*) FROM all_series s "
        "JOIN all_values v USING (partition_name, array_id) GROUP BY 1, 2 ORDER BY 1, 2"
    ).fetchall()
    assert ("Deterministic_f64_utc", "det", 4) in joined
    assert ("NonSequentialTimeSeries_f64_2_utc", "ns", 2) in joined
    assert ("SingleTimeSeries_f32_utc", "src", 4) in joined
    assert ("SingleTimeSeries_f64_utc", "sts", 3) in joined
    con.close()


# ---------------------------------------------------------------------- successive exports


def test_one_two_three_exports_under_one_prefix(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.sqlite"
    seen: list[str] = []
    for filters in (
        {"name": "sts"},
        {"name_glob": "[dn]*"},
        {"name_glob": "[ps][cr]*", "include_derived": True},
    ):
        result = store.export_sqlite(out, table_prefix="run1_", **filters)
        seen += [d["values_table"][len("run1_") : -len("_values")] for d in result]
        check_views(out, "run1_", seen)
        # The views are re-created last, after the new partitions' tables.
        con = sqlite3.connect(out)
        kinds = [r[0] for r in con.execute(f"SELECT type FROM sqlite_master WHERE NOT {ADDITIONS}")]
        con.close()
        assert kinds[-3:] == ["view"] * 3
        assert set(views(out)) == {f"run1_{v}" for v in VIEWS}
    assert len(seen) == 7


def test_two_prefixes_are_independent(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.sqlite"
    a1 = store.export_sqlite(out, table_prefix="a_", name="sts")
    b1 = store.export_sqlite(out, table_prefix="b_", name_glob="[dp]*")
    a2 = store.export_sqlite(out, table_prefix="a_", name="ns")
    base = lambda rs, p: [d["values_table"][len(p) : -len("_values")] for d in rs]  # noqa: E731
    check_views(out, "a_", base(a1, "a_") + base(a2, "a_"))
    check_views(out, "b_", base(b1, "b_"))
    assert set(views(out)) == {f"{p}{v}" for p in ("a_", "b_") for v in VIEWS}
    # The unprefixed export beside them has its own views over its own partitions.
    c = store.export_sqlite(out, name="scen")
    check_views(out, "", base(c, ""))
    with sqlite3.connect(out) as con:
        assert con.execute("SELECT count(*) FROM all_series").fetchone()[0] == 1
        assert con.execute("SELECT count(*) FROM a_all_series").fetchone()[0] == 2
        assert con.execute("SELECT count(*) FROM b_all_series").fetchone()[0] == 3


def test_views_survive_a_refused_export(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.sqlite"
    store.export_sqlite(out, name="sts")
    before = digest(out)
    with pytest.raises(InvalidParameterError):
        store.export_sqlite(out, name="sts")
    assert digest(out) == before
    check_views(out, "", ["SingleTimeSeries_f64_utc"])


# ---------------------------------------------------------------------- whose views


@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE VIEW all_values AS SELECT 1 AS x",
        "CREATE VIEW all_values AS /* infrastore */ SELECT 1 AS x",
        "CREATE TABLE all_values (x)",
        "CREATE TABLE t (x); CREATE INDEX all_values ON t (x)",
    ],
)
def test_a_user_object_named_all_values_collides(store: Store, tmp_path: Path, ddl: str) -> None:
    out = tmp_path / "e.sqlite"
    with sqlite3.connect(out) as con:
        con.executescript(ddl)
    before = digest(out)
    with pytest.raises(
        InvalidParameterError, match=r"already holds 1 of the names .*\(all_values\)"
    ):
        store.export_sqlite(out, name="sts")
    assert digest(out) == before
    # Under a prefix the name is free.
    store.export_sqlite(out, name="sts", table_prefix="p_")


def test_a_marked_view_is_ours_whatever_its_case(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.sqlite"
    with sqlite3.connect(out) as con:
        con.execute(f"CREATE VIEW ALL_VALUES AS SELECT 1 AS x /* {VIEW_MARKER} */")
    store.export_sqlite(out, name="sts")
    assert set(views(out)) == set(VIEWS)  # replaced, spelled lowercase
    check_views(out, "", ["SingleTimeSeries_f64_utc"])


def test_a_dropped_view_is_recreated(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.sqlite"
    store.export_sqlite(out, name="sts")
    with sqlite3.connect(out) as con:
        con.execute("DROP VIEW all_series")
    store.export_sqlite(out, name="det")
    check_views(out, "", ["SingleTimeSeries_f64_utc", "Deterministic_f64_utc"])


def test_views_of_other_prefixes_are_left_alone(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.sqlite"
    store.export_sqlite(out, table_prefix="a_", name="sts")
    a_views = {n: s for n, s in views(out).items() if n.startswith("a_")}
    store.export_sqlite(out, table_prefix="b_", name="det")
    store.export_sqlite(out, name="ns")
    assert {n: s for n, s in views(out).items() if n.startswith("a_")} == a_views
