"""Unit tests of the container-independent interchange layout (``infrastore_sqlite.layout``).

Expected values are spelled out from the peer contract (peer-contract.md §2-§6, §8, §11):
prefix rules, value and reference slugs, partition order, collision suffixes, the DDL of
every partition kind and the SQL of the three fixed-name views.
"""

from __future__ import annotations

import random
import re

import pytest

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.layout import (
    TYPE_NAMES,
    VIEW_MARKER,
    Partition,
    PartitionKey,
    assign_names,
    forecast_axis,
    series_columns,
    static_axis,
    type_of_table,
    validate_prefix,
    value_shape_for,
    values_columns,
)
from infrastore_sqlite.interchange.sqlite.schema import (
    ViewSource,
    arrays_ddl,
    index_ddl,
    series_ddl,
    values_ddl,
    view_sql,
)
from infrastore_sqlite.model import TimeSeriesType as T

STS = T.SingleTimeSeries
NS = T.NonSequentialTimeSeries
PERS = T.PersistentTimeSeries
DET = T.Deterministic
DSTS = T.DeterministicSingleTimeSeries
PROB = T.Probabilistic
SCEN = T.Scenarios


def key(
    tst: T = STS, et: str = "f64", shape: tuple[int, ...] = (), tr: str | None = "utc"
) -> PartitionKey:
    return PartitionKey(tst, et, shape, tr)


# ---------------------------------------------------------------------- prefix rules (§11)

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
# (prefix, the rule that refuses it first)
REFUSED = [
    ("run1", 4),
    ("all", 4),
    ("a", 4),
    ("_a", 4),
    ("sqlite", 4),
    ("x_SingleTimeSeries", 4),
    ("1a_", 2),
    ("1_", 2),
    ("9sqlite_", 2),
    ("1a", 2),
    ("sqlite_x_", 3),
    ("SQLITE_a_", 3),
    ("Sqlite_a", 3),
    ("sqlite_1", 3),
    ("a-b_", 1),
    ("a b", 1),
    ("runé", 1),
    ("é_", 1),
    ("-a_", 1),
    ("1-a", 1),
    ("x_SingleTimeSeries_", 5),
    ("_SingleTimeSeries_", 5),
    ("Scenarios_", 5),
    ("a__Scenarios_", 5),
    ("a_Deterministic_", 5),
    ("DeterministicSingleTimeSeries_", 5),
    ("Probabilistic_x_", 5),
    ("NonSequentialTimeSeries_", 5),
    ("PersistentTimeSeries_", 5),
]
RULE_TEXT = {
    1: "may only contain ASCII letters, digits and '_'",
    2: "must not start with a digit",
    3: 'starts with "sqlite_", which SQLite reserves',
    4: "must end in '_'",
    5: "contains the time-series type name",
}


@pytest.mark.parametrize("prefix", ACCEPTED)
def test_accepted_prefixes(prefix: str) -> None:
    assert validate_prefix(prefix) == prefix


@pytest.mark.parametrize(("prefix", "rule"), REFUSED)
def test_refused_prefixes_name_the_first_rule_broken(prefix: str, rule: int) -> None:
    with pytest.raises(InvalidParameterError) as err:
        validate_prefix(prefix)
    message = str(err.value)
    assert RULE_TEXT[rule] in message
    assert f'"{prefix}"' in message
    for other, text in RULE_TEXT.items():
        if other != rule:
            assert text not in message


def test_rule_four_suggests_the_fixed_prefix() -> None:
    with pytest.raises(InvalidParameterError, match=re.escape('(e.g. "run1_")')):
        validate_prefix("run1")


def test_rule_five_names_the_type() -> None:
    with pytest.raises(InvalidParameterError, match='type name "Scenarios"'):
        validate_prefix("a__Scenarios_")
    # Case-sensitive: a lower-case segment is not a type name.
    assert validate_prefix("a_scenarios_") == "a_scenarios_"


def test_prefix_must_be_a_string() -> None:
    with pytest.raises(InvalidParameterError):
        validate_prefix(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        validate_prefix(b"run1_")  # type: ignore[arg-type]


# ---------------------------------------------------------------------- slugs (§5.1, §6.1)


@pytest.mark.parametrize(
    ("et", "shape", "slug"),
    [
        ("f64", (), "f64"),
        ("f32", (), "f32"),
        ("u8", (), "u8"),
        ("bool", (), "bool"),
        ("f64", (2,), "f64_2"),
        ("bool", (2,), "bool_2"),
        ("f64", (2, 3), "f64_2x3"),
        ("i32", (2, 3), "i32_2x3"),
        ("u16", (3, 2, 4), "u16_3x2x4"),
        ("tuple(3,f64)", (3,), "tuple3_f64"),
        ("tuple(2,i32)", (2,), "tuple2_i32"),
        ("linear_function", (), "linear_function"),
        ("quadratic_function", (), "quadratic_function"),
        ("piecewise_linear", (), "piecewise_linear"),
        ("piecewise_step", (), "piecewise_step"),
    ],
)
def test_value_slug(et: str, shape: tuple[int, ...], slug: str) -> None:
    assert key(et=et, shape=shape).value_slug == slug


def test_composites_partition_by_kind_alone() -> None:
    assert value_shape_for("piecewise_linear", (9,)) == ()
    assert value_shape_for("piecewise_step", (4,)) == ()
    assert value_shape_for("linear_function", (2,)) == ()
    assert value_shape_for("f64", (2, 3)) == (2, 3)
    assert value_shape_for("tuple(3,f64)", (3,)) == (3,)


@pytest.mark.parametrize(
    ("tr", "slug", "label"),
    [
        (None, "unspecified", "unspecified"),
        ("utc", "utc", "utc"),
        ("zoneless", "zoneless", "zoneless"),
        ("-07:00", "offset_minus07_00", "-07:00"),
        ("+05:30", "offset_plus05_30", "+05:30"),
        ("+00:00", "offset_plus00_00", "+00:00"),
        ("America/Denver", "America_Denver", "America/Denver"),
        ("Etc/GMT+1", "Etc_GMT_1", "Etc/GMT+1"),
        ("Etc/GMT-1", "Etc_GMT_1", "Etc/GMT-1"),
        ("America/Argentina/Buenos_Aires", "America_Argentina_Buenos_Aires", None),
        ("UTC", "UTC", "UTC"),
        ("CON", "x_CON", "CON"),
        ("nul", "x_nul", "nul"),
        ("LPT9", "x_LPT9", "LPT9"),
        ("COM1", "x_COM1", "COM1"),
        ("Europe/CON", "Europe_CON", None),
        ("Nul/x", "Nul_x", None),
        ("unspecified", "unspecified", "unspecified"),
    ],
)
def test_reference_slug_and_label(tr: str | None, slug: str, label: str | None) -> None:
    k = key(tr=tr)
    assert k.stem == f"SingleTimeSeries_f64_{slug}"
    assert k.reference_label == (label or tr)
    assert re.fullmatch(r"[A-Za-z0-9_]+", k.stem)


@pytest.mark.parametrize("tst", list(T))
def test_stem_starts_with_the_type_name(tst: T) -> None:
    assert key(tst=tst, et="f64", shape=(2, 3), tr="-07:00").stem == (
        f"{tst.name}_f64_2x3_offset_minus07_00"
    )


# ---------------------------------------------------------------------- partition order (§6.3)


def _sorted(keys: list[PartitionKey]) -> list[PartitionKey]:
    shuffled = list(keys)
    random.Random(7).shuffle(shuffled)
    return sorted(shuffled, key=PartitionKey.sort_key)


def test_type_order_is_not_the_int_codes() -> None:
    order = [STS, NS, DET, DSTS, PROB, SCEN, PERS]
    keys = [key(tst=t) for t in order]
    assert _sorted(keys) == keys


def test_dtype_order() -> None:
    dtypes = ["f64", "f32", "i64", "i32", "u64", "bool", "i16", "i8", "u32", "u16", "u8"]
    keys = [key(et=d) for d in dtypes]
    assert _sorted(keys) == keys


def test_shapes_compare_as_integer_vectors() -> None:
    keys = [key(shape=s) for s in [(), (2,), (2, 3), (3, 2), (10,)]]
    assert _sorted(keys) == keys


def test_plain_then_tuples_then_composites() -> None:
    keys = [
        key(et="f64"),
        key(et="u8", shape=(10,)),
        key(et="tuple(2,f64)", shape=(2,)),
        key(et="tuple(2,i32)", shape=(2,)),
        key(et="tuple(3,f64)", shape=(3,)),
        key(et="tuple(3,u8)", shape=(3,)),
        key(et="linear_function"),
        key(et="quadratic_function"),
        key(et="piecewise_linear"),
        key(et="piecewise_step"),
    ]
    assert _sorted(keys) == keys


def test_reference_order() -> None:
    refs = [
        None,
        "utc",
        "+01:00",
        "+10:00",
        "+14:00",
        "-00:30",
        "-01:00",
        "-10:00",
        "America/Denver",
        "Europe/Paris",
        "UTC",
        "a/b",
        "a_b",
        "zoneless",
    ]
    keys = [key(tr=r) for r in refs]
    assert _sorted(keys) == keys


def test_type_outranks_value_outranks_reference() -> None:
    keys = [
        key(STS, "u8", (), "zoneless"),
        key(NS, "f64", (), None),
        key(NS, "f64", (), "zoneless"),
        key(NS, "f32", (), None),
        key(PERS, "f64", (), None),
    ]
    assert _sorted(keys) == keys


# ---------------------------------------------------------------------- names (§2, §6.2)


def _bases(refs: list[str | None], prefix: str = "") -> list[str]:
    keys = [key(tr=r) for r in refs]
    random.Random(3).shuffle(keys)
    return [p.base for p in assign_names(keys, prefix)]


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        (["utc", "UTC", "Utc"], ["utc", "UTC_2", "Utc_3"]),
        (
            ["Etc/GMT+1", "Etc/GMT-1", "Etc/GMT_1", "Etc/GMT_1_2"],
            ["Etc_GMT_1", "Etc_GMT_1_2", "Etc_GMT_1_3", "Etc_GMT_1_2_2"],
        ),
        (["CON", "Con", "x_CON"], ["x_CON", "x_Con_2", "x_CON_3"]),
        (["+05:30", "offset_plus05_30"], ["offset_plus05_30", "offset_plus05_30_2"]),
        (["Zoneless", "zoneless"], ["Zoneless", "zoneless_2"]),
        (["a/b", "a_b"], ["a_b", "a_b_2"]),
    ],
)
def test_collision_suffixes_in_key_order(refs: list[str], expected: list[str]) -> None:
    assert _bases(refs) == [f"SingleTimeSeries_f64_{e}" for e in expected]


def test_collisions_only_within_one_partition_stem() -> None:
    # Distinct stems never get a suffix, whatever the prefix.
    refs = ["utc", "-07:00", "America/Denver", None, "zoneless"]
    parts = assign_names([key(tr=r) for r in refs], "run1_")
    assert [p.base for p in parts] == [p.key.stem for p in parts]
    assert all(p.values_table == f"run1_{p.key.stem}_values" for p in parts)


def test_assign_names_dedups_keys_and_applies_the_prefix() -> None:
    k = key(DET, "f64", (2,), "America/Denver")
    parts = assign_names([k, k], "run1_")
    assert len(parts) == 1
    p = parts[0]
    assert p.base == "Deterministic_f64_2_America_Denver"
    assert p.values_table == "run1_Deterministic_f64_2_America_Denver_values"
    assert p.series_table == "run1_Deterministic_f64_2_America_Denver_series"
    assert p.arrays_table == "run1_Deterministic_f64_2_America_Denver_arrays"
    assert p.index_name == "run1_Deterministic_f64_2_America_Denver_values_key"
    assert p.names() == [p.values_table, p.index_name, p.series_table, p.arrays_table]


def test_assign_names_is_deterministic() -> None:
    refs = ["utc", "UTC", "Utc", "Etc/GMT+1", "Etc/GMT-1", None, "+05:30"]
    first = _bases(refs)
    for seed in range(5):
        keys = [key(tr=r) for r in refs]
        random.Random(seed).shuffle(keys)
        assert [p.base for p in assign_names(keys)] == first


# ---------------------------------------------------------------------- the array key (§8.1)


def test_static_axis() -> None:
    assert static_axis(48, 1_710_054_000_000, "PT1H") == "R48/2024-03-10T07:00:00Z/PT1H"
    assert static_axis(5, 1_706_659_200_000, "P1M") == "R5/2024-01-31T00:00:00Z/P1M"
    assert static_axis(1, 1_704_067_200_500, "PT1S") == "R1/2024-01-01T00:00:00.500Z/PT1S"
    assert static_axis(4, -7_200_000, "PT1H") == "R4/1969-12-31T22:00:00Z/PT1H"


def test_forecast_axis_order_is_interval_horizon_resolution() -> None:
    assert (
        forecast_axis(2, 1_704_067_200_000, "PT2H", "PT3H", "PT1H")
        == "R2/2024-01-01T00:00:00Z/PT2H/PT3H/PT1H"
    )
    assert (
        forecast_axis(1, 1_704_067_200_000, "PT0S", "PT2H", "PT1H")
        == "R1/2024-01-01T00:00:00Z/PT0S/PT2H/PT1H"
    )


# ---------------------------------------------------------------------- columns and DDL (§3)

SERIES_HEAD = (
    "owner_id INTEGER NOT NULL, owner_type TEXT NOT NULL, owner_category TEXT NOT NULL, "
    "time_series_type TEXT NOT NULL, name TEXT NOT NULL, "
)
SERIES_TAIL = (
    "features TEXT NOT NULL, element_type TEXT NOT NULL, element_shape TEXT NOT NULL, "
    "time_reference TEXT NOT NULL, units TEXT NOT NULL, quantity_kind TEXT NOT NULL, "
    "unit_system TEXT NOT NULL, component_field TEXT NOT NULL, application_data TEXT NOT NULL"
)
FORECAST_GRID = (
    "initial_timestamp INTEGER NOT NULL, resolution TEXT NOT NULL, interval TEXT NOT NULL, "
    "horizon TEXT NOT NULL, count INTEGER NOT NULL, "
)
GRID = {
    STS: "initial_timestamp INTEGER NOT NULL, resolution TEXT NOT NULL, length INTEGER NOT NULL, ",
    NS: "",
    PERS: "",
    DET: FORECAST_GRID,
    DSTS: FORECAST_GRID,
    PROB: FORECAST_GRID,
    SCEN: FORECAST_GRID,
}
VALUE_KEYS = {
    STS: "",
    NS: "",
    PERS: "",
    DET: ", issue_time INTEGER NOT NULL",
    DSTS: ", issue_time INTEGER NOT NULL",
    PROB: ", issue_time INTEGER NOT NULL, percentile REAL NOT NULL",
    SCEN: ", issue_time INTEGER NOT NULL, scenario INTEGER NOT NULL",
}


@pytest.mark.parametrize("tst", list(T))
@pytest.mark.parametrize("value_type", ["REAL", "INTEGER", "TEXT"])
def test_ddl_verbatim(tst: T, value_type: str) -> None:
    p = Partition(key(tst=tst, tr="-07:00"), "B_x", "P_")
    arrays, values, series = '"P_B_x_arrays"', '"P_B_x_values"', '"P_B_x_series"'
    assert arrays_ddl(p) == (
        f"CREATE TABLE {arrays} (id INTEGER PRIMARY KEY, data_hash TEXT NOT NULL, "
        "time_axis TEXT NOT NULL, UNIQUE (data_hash, time_axis))"
    )
    assert values_ddl(p, value_type) == (
        f"CREATE TABLE {values} (array_id INTEGER NOT NULL REFERENCES {arrays} (id), "
        f"timestamp INTEGER NOT NULL{VALUE_KEYS[tst]}, value {value_type})"
    )
    assert series_ddl(p) == (
        f"CREATE TABLE {series} (array_id INTEGER NOT NULL REFERENCES {arrays} (id), "
        f"id INTEGER PRIMARY KEY, {SERIES_HEAD}{GRID[tst]}{SERIES_TAIL})"
    )
    assert index_ddl(p) == f'CREATE INDEX "P_B_x_values_key" ON {values} (array_id)'


def test_column_lists_follow_the_ddl() -> None:
    assert values_columns(STS) == ["array_id", "timestamp", "value"]
    assert values_columns(PROB) == ["array_id", "timestamp", "issue_time", "percentile", "value"]
    assert values_columns(SCEN) == ["array_id", "timestamp", "issue_time", "scenario", "value"]
    assert values_columns(DSTS) == ["array_id", "timestamp", "issue_time", "value"]
    for tst in T:
        ddl = series_ddl(Partition(key(tst=tst), "B"))
        body = ddl[ddl.index("id INTEGER PRIMARY KEY, ") + len("id INTEGER PRIMARY KEY, ") :]
        assert [c.split()[0] for c in body.rstrip(")").split(", ")] == series_columns(tst)
    assert "percentiles" not in series_columns(PROB)
    assert "scenario_count" not in series_columns(SCEN)


# ---------------------------------------------------------------------- views (§4)

VALUES_VIEW = ["array_id", "timestamp", "issue_time", "percentile", "scenario", "value"]
SERIES_VIEW = [
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
# §4's table of the columns that read as NULL.
NULLS = {
    STS: ({"issue_time", "percentile", "scenario"}, {"interval", "horizon", "count"}),
    NS: (
        {"issue_time", "percentile", "scenario"},
        {"initial_timestamp", "resolution", "length", "interval", "horizon", "count"},
    ),
    PERS: (
        {"issue_time", "percentile", "scenario"},
        {"initial_timestamp", "resolution", "length", "interval", "horizon", "count"},
    ),
    DET: ({"percentile", "scenario"}, {"length"}),
    DSTS: ({"percentile", "scenario"}, {"length"}),
    PROB: ({"scenario"}, {"length"}),
    SCEN: ({"percentile"}, {"length"}),
}


def _select(view: str, base: str, prefix: str, cols: list[str], nulls: set[str]) -> str:
    table = {"all_values": "_values", "all_series": "_series", "all_arrays": "_arrays"}[view]
    spelled = [f"NULL AS {c}" if c in nulls else c for c in cols]
    return f"SELECT '{base}' AS partition_name, {', '.join(spelled)} FROM \"{prefix}{base}{table}\""


@pytest.mark.parametrize("prefix", ["", "run1_"])
def test_view_sql_verbatim(prefix: str) -> None:
    sources = [ViewSource(f"{t.name}_f64_utc", t) for t in T]
    random.Random(1).shuffle(sources)
    order = sorted(sources, key=lambda s: s.base.encode())
    for view, cols, which in [
        ("all_values", VALUES_VIEW, 0),
        ("all_series", SERIES_VIEW, 1),
        ("all_arrays", ["id", "data_hash", "time_axis"], None),
    ]:
        selects = [
            _select(view, s.base, prefix, cols, set() if which is None else NULLS[s.type][which])
            for s in order
        ]
        expected = f'CREATE VIEW "{prefix}{view}" AS /* {VIEW_MARKER} */ ' + " UNION ALL ".join(
            selects
        )
        assert view_sql(prefix, view, sources) == expected


def test_view_order_is_binary_on_the_base() -> None:
    bases = [
        "SingleTimeSeries_f64_utc",
        "SingleTimeSeries_f64_UTC_2",
        "SingleTimeSeries_f64_offset_minus07_00",
        "NonSequentialTimeSeries_f64_utc",
    ]
    sql = view_sql("", "all_arrays", [ViewSource(b, STS) for b in bases])
    found = re.findall(r"SELECT '([^']+)' AS partition_name", sql)
    assert found == [
        "NonSequentialTimeSeries_f64_utc",
        "SingleTimeSeries_f64_UTC_2",
        "SingleTimeSeries_f64_offset_minus07_00",
        "SingleTimeSeries_f64_utc",
    ]


def test_view_marker_text() -> None:
    assert VIEW_MARKER == "infrastore: every partition under this prefix"
    assert f"/* {VIEW_MARKER} */" in view_sql("", "all_values", [ViewSource("X_f64_utc", STS)])


def test_view_reads_the_columns_an_existing_table_has() -> None:
    # An earlier partition is read with the columns it actually holds.
    src = ViewSource(
        "SingleTimeSeries_f64_utc",
        STS,
        {"_values": {"array_id", "timestamp", "value"}, "_series": set(), "_arrays": set()},
    )
    sql = view_sql("", "all_values", [src])
    assert "NULL AS issue_time" in sql and ", value FROM" in sql


# ---------------------------------------------------------------------- table discovery


@pytest.mark.parametrize(
    ("name", "prefix", "expected"),
    [
        ("SingleTimeSeries_f64_utc_values", "", STS),
        ("DeterministicSingleTimeSeries_f64_utc_values", "", DSTS),
        ("Deterministic_f64_utc_values", "", DET),
        ("Deterministic_x_values", "", DET),
        ("run1_Scenarios_f64_utc_values", "run1_", SCEN),
        ("run1_Scenarios_f64_utc_values", "", None),
        ("Scenarios_f64_utc_values", "run1_", None),
        ("singletimeseries_f64_utc_values", "", None),
        ("SingleTimeSeries_values", "", None),
        ("SingleTimeSeries__values", "", None),
        ("SingleTimeSeries_f64_utc_series", "", None),
        ("SingleTimeSeriesX_f64_values", "", None),
        ("Foo_values", "", None),
        ("b_PersistentTimeSeries_f64_utc_values", "", None),
        ("b_PersistentTimeSeries_f64_utc_values", "b_", PERS),
    ],
)
def test_type_of_table(name: str, prefix: str, expected: T | None) -> None:
    assert type_of_table(name, prefix, "_values") is expected


def test_type_names_are_the_seven_types() -> None:
    assert set(TYPE_NAMES) == {t.name for t in T}
    assert len(TYPE_NAMES) == 7
