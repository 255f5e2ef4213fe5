"""Every refusal of ``export_sqlite`` writes nothing.

For a new target no file appears (nor a ``.partial`` or journal beside it); an existing
database is byte-identical afterwards. Covered: scalar -0.0 (every series named, catalog
order), u64 above i64 max (naming the series), empty series (including ones a time_range
empties), a derived-type filter without include_derived, every table-prefix rule, names
that already exist (tables, indexes, views, triggers, any case), and a stray partition.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ADDITIONS

from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    Probabilistic,
    SingleTimeSeries,
    Store,
    TimeSeriesType,
)
from infrastore_sqlite.errors import InvalidParameterError, TimeSeriesError

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    (tmp_path / "store").mkdir()
    s = Store.create(tmp_path / "store" / "s.h5")
    yield s
    s.close()


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    return d


def add(store: Store, ts: Any, owner: int = 1) -> int:
    return store.add_time_series(owner, "Gen", "Component", ts)


def sts(name: str, data: Any, start: datetime = T0, **kw: Any) -> SingleTimeSeries:
    return SingleTimeSeries(start, "PT1H", np.asarray(data), name, **kw)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused_new(store: Store, out_dir: Path, match: str, **kwargs: Any) -> TimeSeriesError:
    """Export into a fresh path: refused, and the directory stays empty."""
    target = out_dir / "new.sqlite"
    with pytest.raises(InvalidParameterError, match=match) as err:
        store.export_sqlite(target, **kwargs)
    assert os.listdir(out_dir) == []
    return err.value


def existing_db(store: Store, out_dir: Path) -> Path:
    """A database holding an earlier export (its views included) and a user table."""
    target = out_dir / "old.sqlite"
    add(store, NonSequentialTimeSeries([T0], np.array([1.0]), "earlier"), owner=99)
    store.export_sqlite(target, name="earlier")
    con = sqlite3.connect(target)
    con.execute("CREATE TABLE notes (x)")
    con.execute("INSERT INTO notes VALUES ('keep me')")
    con.commit()
    con.close()
    return target


def refused_existing(store: Store, target: Path, match: str, **kwargs: Any) -> TimeSeriesError:
    """Export into an existing database: refused, and the file is byte-identical."""
    before = digest(target)
    listing = sorted(os.listdir(target.parent))
    with pytest.raises(InvalidParameterError, match=match) as err:
        store.export_sqlite(target, **kwargs)
    assert digest(target) == before
    assert sorted(os.listdir(target.parent)) == listing
    return err.value


# ---------------------------------------------------------------------- scalar -0.0


def negative_zero_store(store: Store) -> None:
    add(store, sts("a", [1.0, -0.0]), owner=1)
    add(store, sts("ok", [2.0]), owner=2)
    add(store, sts("b", np.array([-0.0], dtype=np.float32)), owner=3)
    add(store, Deterministic(T0, "PT1H", "PT1H", "PT1H", 1, np.array([[-0.0]]), "c"), owner=4)
    add(store, sts("json_ok", [[-0.0, 1.0]]), owner=5)
    add(store, sts("tuple_ok", [[-0.0, 1.0, 2.0]], element_type="tuple(3,f64)"), owner=6)


NEG_ZERO = (
    "3 of the selected series hold a scalar -0.0, which a SQLite REAL cannot store "
    r"\(it reads back as \+0.0\): 'a' \(owner 1\), 'b' \(owner 3\), 'c' \(owner 4\)\. "
    "Nothing was written"
)


def test_negative_zero_new_target(store: Store, out_dir: Path) -> None:
    negative_zero_store(store)
    err = refused_new(store, out_dir, NEG_ZERO)
    assert err.series == ["'a' (owner 1)", "'b' (owner 3)", "'c' (owner 4)"]


def test_negative_zero_existing_target(store: Store, out_dir: Path) -> None:
    target = existing_db(store, out_dir)
    negative_zero_store(store)
    refused_existing(store, target, NEG_ZERO, name_glob="[abcjto]*")


def test_negative_zero_is_named_in_catalog_order(store: Store, out_dir: Path) -> None:
    # Partitions (f32 after f64, Deterministic after both) and arrays (by hash) come in
    # another order than the catalog; the message follows the catalog.
    add(store, sts("a", np.array([-0.0], dtype=np.float32)), owner=1)
    add(store, Deterministic(T0, "PT1H", "PT1H", "PT1H", 1, np.array([[-0.0]]), "b"), owner=2)
    for i in range(6):
        add(store, sts(f"c{i}", [-0.0, float(i)]), owner=3 + i)
    add(store, sts("shared", [-0.0, 0.0]), owner=20)
    add(store, sts("shared", [-0.0, 0.0]), owner=10)
    add(
        store,
        Probabilistic(T0, "PT1H", "PT1H", "PT1H", 1, [0.5], np.array([[[-0.0]]]), "p"),
        owner=30,
    )
    err = refused_new(store, out_dir, "^11 of the selected series hold a scalar -0.0")
    assert err.series == [
        "'a' (owner 1)",
        "'b' (owner 2)",
        *(f"'c{i}' (owner {3 + i})" for i in range(6)),
        "'shared' (owner 20)",
        "'shared' (owner 10)",
        "'p' (owner 30)",
    ]
    assert ", ".join(err.series) in str(err)


def test_negative_zero_inside_json_or_sliced_away_exports(store: Store, out_dir: Path) -> None:
    add(store, sts("json", [[-0.0, 1.0]]))
    add(store, sts("sliced", [-0.0, 1.0, 2.0]))
    target = out_dir / "e.sqlite"
    store.export_sqlite(target, name="sliced", time_range=(T0 + H, T0 + 3 * H))
    con = sqlite3.connect(target)
    assert con.execute('SELECT value FROM "SingleTimeSeries_f64_utc_values"').fetchall() == [
        (1.0,),
        (2.0,),
    ]
    con.close()
    store.export_sqlite(out_dir / "f.sqlite", name="json")
    con = sqlite3.connect(out_dir / "f.sqlite")
    assert con.execute('SELECT value FROM "SingleTimeSeries_f64_2_utc_values"').fetchall() == [
        ("[-0.0,1.0]",)
    ]
    con.close()


def test_positive_zero_is_fine(store: Store, out_dir: Path) -> None:
    add(store, sts("z", [0.0, 1.0]))
    store.export_sqlite(out_dir / "e.sqlite")


# ---------------------------------------------------------------------- u64 above i64 max


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (np.array([1, 2**63], dtype=np.uint64), 2**63),
        (np.array([[1, 2**64 - 1]], dtype=np.uint64), 2**64 - 1),
    ],
)
def test_u64_above_i64_max(store: Store, out_dir: Path, data: np.ndarray, value: int) -> None:
    add(store, sts("ok", [1.0]), owner=1)
    add(store, sts("big", data), owner=2)
    add(store, sts("big", data), owner=3)
    err = refused_new(store, out_dir, f"u64 value {value} does not fit a SQLite INTEGER")
    assert "'big' (owner 2)" in str(err)
    assert "'big' (owner 3)" in str(err)
    target = existing_db(store, out_dir)
    refused_existing(store, target, f"u64 value {value}", name_glob="[ob]*")


def test_u64_refusal_comes_before_negative_zero(store: Store, out_dir: Path) -> None:
    add(store, sts("negz", [-0.0]), owner=1)
    add(store, sts("big", np.array([2**63], dtype=np.uint64)), owner=2)
    refused_new(store, out_dir, "^u64 value 9223372036854775808")


def test_u64_at_i64_max_is_written(store: Store, out_dir: Path) -> None:
    add(store, sts("max", np.array([0, 2**63 - 1], dtype=np.uint64)))
    store.export_sqlite(out_dir / "e.sqlite")
    con = sqlite3.connect(out_dir / "e.sqlite")
    assert con.execute('SELECT value FROM "SingleTimeSeries_u64_utc_values"').fetchall() == [
        (0,),
        (2**63 - 1,),
    ]
    con.close()


# ---------------------------------------------------------------------- empty series


def test_empty_series_are_all_named(store: Store, out_dir: Path) -> None:
    add(store, sts("e1", np.zeros(0)), owner=1)
    add(store, sts("ok", [1.0]), owner=2)
    add(store, NonSequentialTimeSeries([], np.zeros(0), "e2"), owner=3)
    add(store, Deterministic(T0, "PT1H", "PT1H", "PT1H", 0, np.zeros((1, 0)), "e3"), owner=4)
    match = (
        r"^3 of the selected series hold no values and cannot be exported: "
        r"'e1' \(owner 1\), 'e2' \(owner 3\), 'e3' \(owner 4\)\. Narrow the selection"
    )
    refused_new(store, out_dir, match)
    target = existing_db(store, out_dir)
    refused_existing(store, target, match)


def test_series_emptied_by_the_range_are_named(store: Store, out_dir: Path) -> None:
    add(store, sts("a", [1.0, 2.0, 3.0]), owner=1)
    add(store, sts("b", [1.0, 2.0], start=T0 + 24 * H), owner=2)
    add(store, NonSequentialTimeSeries([T0 + 48 * H], np.array([1.0]), "c"), owner=3)
    match = r"^2 of the selected series hold no values .*'b' \(owner 2\), 'c' \(owner 3\)\."
    refused_new(store, out_dir, match, time_range=(T0, T0 + 2 * H))
    target = existing_db(store, out_dir)
    refused_existing(store, target, match, time_range=(T0, T0 + 2 * H), name_glob="[abc]")


# ---------------------------------------------------------------------- derived-type filter


@pytest.mark.parametrize(
    "tst", [TimeSeriesType.DeterministicSingleTimeSeries, "DeterministicSingleTimeSeries"]
)
def test_derived_filter_without_include_derived(store: Store, out_dir: Path, tst) -> None:
    add(store, sts("a", np.arange(4.0)))
    store.transform_single_time_series("PT2H", "PT1H")
    refused_new(store, out_dir, "include_derived", time_series_type=tst)
    target = existing_db(store, out_dir)
    refused_existing(store, target, "include_derived", time_series_type=tst)
    # With the flag it works.
    result = store.export_sqlite(out_dir / "d.sqlite", time_series_type=tst, include_derived=True)
    assert [d["time_series_type"] for d in result] == ["DeterministicSingleTimeSeries"]


# ---------------------------------------------------------------------- table prefix (§11)

ACCEPTED = [
    "",
    "run1_",
    "a_",
    "A_",
    "_",
    "__",
    "a_1_",
    "main_",
    "all_",
    "all_values_",
    "xSingleTimeSeries_",
    "SingleTimeSeriesx_",
    "a_singletimeseries_",
    "p" * 200 + "_",
]
REFUSED = {
    "may only contain ASCII letters": ["a-b_", "a b", "runé", "é_", "-a_", "1-a"],
    "must not start with a digit": ["1a_", "1_", "9sqlite_", "1a"],
    'starts with "sqlite_"': ["sqlite_x_", "SQLITE_a_", "Sqlite_a", "sqlite_1"],
    "must end in '_'": ["run1", "all", "a", "_a", "sqlite", "x_SingleTimeSeries"],
    "contains the time-series type name": [
        "x_SingleTimeSeries_",
        "_SingleTimeSeries_",
        "Scenarios_",
        "a__Scenarios_",
        "a_Deterministic_",
        "DeterministicSingleTimeSeries_",
        "Probabilistic_x_",
    ],
}


def test_every_refused_prefix_writes_nothing(store: Store, out_dir: Path) -> None:
    add(store, sts("a", [1.0]))
    target = existing_db(store, out_dir)
    for rule, prefixes in REFUSED.items():
        for prefix in prefixes:
            before = sorted(os.listdir(out_dir))
            with pytest.raises(InvalidParameterError, match=rule):
                store.export_sqlite(out_dir / "new.sqlite", table_prefix=prefix, name="a")
            assert sorted(os.listdir(out_dir)) == before, prefix
            refused_existing(store, target, rule, table_prefix=prefix, name="a")
            with pytest.raises(InvalidParameterError, match=rule):
                store.export_sqlite(
                    out_dir / "new.sqlite", table_prefix=prefix, name="a", dry_run=True
                )


def test_every_accepted_prefix_exports(store: Store, out_dir: Path) -> None:
    add(store, sts("a", [1.0]))
    target = out_dir / "e.sqlite"
    # "A_" after "a_" would collide (names compare case-insensitively): own file.
    for prefix in [p for p in ACCEPTED if p != "A_"]:
        (d,) = store.export_sqlite(target, table_prefix=prefix)
        assert d["values_table"] == f"{prefix}SingleTimeSeries_f64_utc_values"
    con = sqlite3.connect(target)
    views = {
        r[0]
        for r in con.execute(
            f"SELECT name FROM sqlite_master WHERE type='view' AND NOT {ADDITIONS}"
        )
    }
    assert views == {
        f"{p}{v}" for p in ACCEPTED if p != "A_" for v in ("all_values", "all_series", "all_arrays")
    }
    assert "all_all_values" in views
    # Each prefix's views span only its own partition.
    for prefix in ACCEPTED:
        if prefix != "A_":
            assert con.execute(f'SELECT count(*) FROM "{prefix}all_series"').fetchone()[0] == 1
    con.close()
    refused_existing(store, target, "already holds 4 of the names", table_prefix="A_")
    (d,) = store.export_sqlite(out_dir / "upper.sqlite", table_prefix="A_")
    assert d["values_table"] == "A_SingleTimeSeries_f64_utc_values"


# ---------------------------------------------------------------------- name collisions (§12)


def collision_store(store: Store) -> None:
    add(store, sts("a", [1.0]))
    add(store, sts("b", np.array([1], dtype=np.int32)))


@pytest.mark.parametrize(
    ("ddl", "names"),
    [
        ("CREATE TABLE SingleTimeSeries_f64_utc_values (x)", ["SingleTimeSeries_f64_utc_values"]),
        (
            "CREATE TABLE singletimeseries_f64_utc_VALUES_KEY (x)",
            ["SingleTimeSeries_f64_utc_values_key"],
        ),
        (
            "CREATE TABLE t (x); CREATE INDEX SingleTimeSeries_i32_utc_series ON t (x)",
            ["SingleTimeSeries_i32_utc_series"],
        ),
        (
            "CREATE VIEW SingleTimeSeries_i32_utc_arrays AS SELECT 1",
            ["SingleTimeSeries_i32_utc_arrays"],
        ),
        ("CREATE VIEW all_values AS SELECT 1", ["all_values"]),
        ("CREATE VIEW all_values AS /* infrastore */ SELECT 1", ["all_values"]),
        ("CREATE TABLE ALL_SERIES (x)", ["all_series"]),
        (
            "CREATE TABLE t (x); CREATE TRIGGER all_arrays AFTER INSERT ON t BEGIN SELECT 1; END",
            ["all_arrays"],
        ),
        (
            "CREATE TABLE SingleTimeSeries_f64_utc_series (x); CREATE TABLE all_arrays (x); "
            "CREATE TABLE SingleTimeSeries_i32_utc_values_key (x)",
            [
                "SingleTimeSeries_f64_utc_series",
                "SingleTimeSeries_i32_utc_values_key",
                "all_arrays",
            ],
        ),
    ],
)
def test_existing_names_refuse_the_export(
    store: Store, out_dir: Path, ddl: str, names: list[str]
) -> None:
    collision_store(store)
    target = out_dir / "e.sqlite"
    con = sqlite3.connect(target)
    con.executescript(ddl)
    con.close()
    err = refused_existing(
        store, target, f"the database already holds {len(names)} of the names this export would"
    )
    assert f"({', '.join(names)}); nothing was written" in str(err)
    with pytest.raises(InvalidParameterError, match="already holds"):
        store.export_sqlite(target, dry_run=True)


def test_exporting_the_same_selection_twice_fails(store: Store, out_dir: Path) -> None:
    collision_store(store)
    target = out_dir / "e.sqlite"
    store.export_sqlite(target)
    err = refused_existing(store, target, "already holds 8 of the names")
    assert (
        "(SingleTimeSeries_f64_utc_values, SingleTimeSeries_f64_utc_values_key, "
        "SingleTimeSeries_f64_utc_series, SingleTimeSeries_f64_utc_arrays, "
        "SingleTimeSeries_i32_utc_values, " in str(err)
    )
    # Another prefix in the same file is independent.
    store.export_sqlite(target, table_prefix="run2_")


def test_collisions_across_exports_are_not_renamed(store: Store, out_dir: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        add(store, sts("z", [1.0], time_reference="UTC"), owner=1)
    add(store, sts("u", [1.0]), owner=2)
    target = out_dir / "e.sqlite"
    (d,) = store.export_sqlite(target, name="z")
    assert d["values_table"] == "SingleTimeSeries_f64_UTC_values"
    refused_existing(store, target, "SingleTimeSeries_f64_utc_values", name="u")


def test_prefixed_names_collide_only_under_their_prefix(store: Store, out_dir: Path) -> None:
    collision_store(store)
    target = out_dir / "e.sqlite"
    con = sqlite3.connect(target)
    con.executescript(
        "CREATE TABLE all_values (x); CREATE VIEW SingleTimeSeries_f64_utc_values AS SELECT 1"
    )
    con.close()
    store.export_sqlite(target, table_prefix="p_")
    refused_existing(store, target, "already holds", table_prefix="P_")


# ---------------------------------------------------------------------- stray partitions


@pytest.mark.parametrize(
    ("tables", "missing"),
    [
        (["Deterministic_x_values", "Deterministic_x_arrays"], "Deterministic_x_series"),
        (["Deterministic_x_values", "Deterministic_x_series"], "Deterministic_x_arrays"),
        (["Scenarios_f64_utc_values"], "Scenarios_f64_utc_series"),
        (["DeterministicSingleTimeSeries_a_values"], "DeterministicSingleTimeSeries_a_series"),
    ],
)
def test_a_stray_partition_refuses_the_export(
    store: Store, out_dir: Path, tables: list[str], missing: str
) -> None:
    collision_store(store)
    target = out_dir / "e.sqlite"
    con = sqlite3.connect(target)
    for t in tables:
        con.execute(f'CREATE TABLE "{t}" (x)')
    con.close()
    refused_existing(store, target, f"holds {tables[0]} but no {missing} beside it")
    with pytest.raises(InvalidParameterError, match="beside it"):
        store.export_sqlite(target, dry_run=True)


def test_stray_under_the_prefix_only(store: Store, out_dir: Path) -> None:
    collision_store(store)
    target = out_dir / "e.sqlite"
    con = sqlite3.connect(target)
    con.executescript(
        "CREATE TABLE run1_Deterministic_x_values (x);"
        "CREATE TABLE Foo_values (x);"
        "CREATE TABLE SingleTimeSeries_f64_utc_other (x);"
        "CREATE TABLE singletimeseries_x_values (x);"
        "CREATE TABLE b_Deterministic_x_values (x);"
        "CREATE TABLE Deterministic_x_series (x);"
    )
    con.close()
    # None of these is an unprefixed partition's _values: the export goes through.
    assert len(store.export_sqlite(target)) == 2
    refused_existing(store, target, "run1_Deterministic_x_values but no", table_prefix="run1_")


# ---------------------------------------------------------------------- the target itself


def test_a_target_that_is_not_a_database(store: Store, out_dir: Path) -> None:
    collision_store(store)
    target = out_dir / "e.sqlite"
    target.write_bytes(b"hello, this is not a database at all\n" * 200)
    before = digest(target)
    with pytest.raises(TimeSeriesError, match="not"):
        store.export_sqlite(target)
    assert digest(target) == before
    assert os.listdir(out_dir) == ["e.sqlite"]


def test_a_missing_directory(store: Store, out_dir: Path) -> None:
    collision_store(store)
    with pytest.raises(TimeSeriesError, match="does not exist"):
        store.export_sqlite(out_dir / "nope" / "e.sqlite")
    assert os.listdir(out_dir) == []


# ---------------------------------------------------------------------- refusals inside a run
# Short arrays on one grid are checked and encoded as one run; a refusal found there is
# named by the arrays that hold it, never by the whole run.


def test_negative_zero_in_the_middle_of_a_run_names_that_series(
    store: Store, out_dir: Path
) -> None:
    for i in range(12):
        data = [float(i), 1.0, 2.0]
        if i in (4, 9):
            data[1] = -0.0
        add(store, sts(f"s{i}", data), owner=i + 1)
    err = refused_new(store, out_dir, "^2 of the selected series hold a scalar -0.0")
    assert err.series == ["'s4' (owner 5)", "'s9' (owner 10)"]


def test_u64_in_the_middle_of_a_run_names_that_series(store: Store, out_dir: Path) -> None:
    for i in range(10):
        data = np.array([i, 1, 2], dtype=np.uint64)
        if i == 6:
            data[2] = np.uint64(2**64 - 1)
        add(store, sts(f"u{i}", data), owner=i + 1)
    err = refused_new(store, out_dir, f"u64 value {2**64 - 1} does not fit a SQLite INTEGER")
    assert err.series == ["'u6' (owner 7)"]
