"""Unit tests of export planning and row generation (``infrastore_sqlite.plan``).

The plan decides partitions, the distinct array keys and their ids, and the refusals that
fire before a file is touched; ``row_block`` lays one array out as table rows. These tests
run on a real store but never open an export database.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
    Store,
    TimeSeriesType,
)
from infrastore_sqlite.core.elements import parse_element_type, shrink
from infrastore_sqlite.core.hashing import data_hash, timestamps_hash
from infrastore_sqlite.core.periods import Period, step
from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.plan import (
    _key_of,
    export_object,
    iter_partition_arrays,
    plan_export,
    row_block,
)
from infrastore_sqlite.interchange.selection import Selection

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
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


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = Store.create(tmp_path / "s.h5")
    yield s
    s.close()


def add(store: Store, ts, owner: int = 1, features: dict | None = None) -> int:
    return store.add_time_series(owner, "Gen", "Component", ts, features=features)


def sts(name: str, data, start: datetime = T0, res: str = "PT1H", **kw) -> SingleTimeSeries:
    return SingleTimeSeries(start, res, np.asarray(data), name, **kw)


def varied(store: Store) -> None:
    add(store, sts("a", [1.0, 2.0, 3.0]))
    add(store, sts("b", np.arange(4, dtype=np.int32)))
    add(store, sts("c", [[1.0, 2.0], [3.0, 4.0]]))
    add(store, NonSequentialTimeSeries([T0, T0 + 3 * H], np.array([1.0, 2.0]), "ns"))
    add(store, PersistentTimeSeries([T0, T0 + 3 * H], np.array([1.0, 2.0]), "pers"))
    add(store, Deterministic(T0, "PT1H", "PT3H", "PT2H", 2, np.arange(6.0).reshape(3, 2), "det"))
    add(
        store,
        Probabilistic(
            T0, "PT1H", "PT2H", "PT1H", 3, [0.1, 0.9], np.arange(12.0).reshape(2, 2, 3), "prob"
        ),
    )
    add(store, Scenarios(T0, "PT1H", "PT2H", "PT1H", 2, np.arange(12.0).reshape(3, 2, 2), "scen"))
    add(
        store,
        sts("pwl", [[2.0, 0, 0, 1, 1], [1, 5, 5, 0, 0]], element_type="piecewise_linear"),
    )


# ---------------------------------------------------------------------- partitions and summary


def test_summary_in_key_order_with_the_reference_keys(store: Store) -> None:
    varied(store)
    plan = plan_export(store)
    summary = plan.summary()
    assert all(list(d) == SUMMARY_KEYS for d in summary)
    assert [(d["time_series_type"], d["value_type"]) for d in summary] == [
        ("SingleTimeSeries", "f64"),
        ("SingleTimeSeries", "f64_2"),  # (dtype, shape): f64 [2] sorts before i32 []
        ("SingleTimeSeries", "i32"),
        ("SingleTimeSeries", "piecewise_linear"),
        ("NonSequentialTimeSeries", "f64"),
        ("Deterministic", "f64"),
        ("Probabilistic", "f64"),
        ("Scenarios", "f64"),
        ("PersistentTimeSeries", "f64"),
    ]
    rows = {d["values_table"]: d["rows"] for d in summary}
    assert rows["Probabilistic_f64_utc_values"] == 12
    assert rows["Scenarios_f64_utc_values"] == 12
    assert rows["Deterministic_f64_utc_values"] == 6
    assert rows["SingleTimeSeries_f64_2_utc_values"] == 2
    assert plan.total_rows == sum(rows.values())
    assert all(d["time_reference"] == "utc" for d in summary)


def test_prefix_reaches_every_name(store: Store) -> None:
    add(store, sts("a", [1.0]))
    (d,) = plan_export(store, table_prefix="run1_").summary()
    assert d["values_table"] == "run1_SingleTimeSeries_f64_utc_values"
    assert d["series_table"] == "run1_SingleTimeSeries_f64_utc_series"
    assert d["arrays_table"] == "run1_SingleTimeSeries_f64_utc_arrays"


def test_array_ids_rank_the_keys_as_bytes(store: Store) -> None:
    for i in range(8):
        add(store, sts(f"s{i}", [float(i), 1.0], start=T0 + (i % 3) * H))
    (pp,) = plan_export(store).partitions
    keys = sorted(pp.array_ids, key=lambda k: (k[0].encode(), k[1].encode()))
    assert [pp.array_ids[k] for k in keys] == list(range(1, 9))
    for s in pp.series:
        assert s.key[0] == store.list_metadata(name=s.row.name)[0]["data_hash"]


def test_shared_arrays_are_one_array(store: Store) -> None:
    data = [10.0, 20.0, 30.0]
    for owner in (1, 2, 3):
        add(store, sts("shared", data), owner=owner)
    add(store, sts("later", data, start=T0 + 5 * H), owner=4)
    (pp,) = plan_export(store).partitions
    assert len(pp.series) == 4
    assert len(pp.array_ids) == 2
    assert pp.rows == 6  # each distinct array's rows once
    keys = sorted(pp.array_ids, key=pp.array_ids.get)
    # One hash, two axes: adjacent ids ordered by the axis.
    assert keys[0][0] == keys[1][0]
    assert keys[0][1] < keys[1][1]
    assert {s.key for s in pp.series if s.row.owner_id in (1, 2, 3)} == {
        (keys[0][0], "R3/2024-01-01T00:00:00Z/PT1H")
    }


@pytest.mark.parametrize("compare_slice", [1, 2, 3])
def test_keys_compared_a_slice_at_a_time_give_the_same_ids(
    store: Store, monkeypatch, compare_slice: int
) -> None:
    """The sorted keys are compared in slices; every cut (between series of one key or
    of two) must give the ids, hashes and first series one whole comparison gives."""
    from infrastore_sqlite.interchange import plan as plan_mod

    for owner in (1, 2, 3):
        add(store, sts("shared", [10.0, 20.0, 30.0]), owner=owner)
    add(store, sts("later", [10.0, 20.0, 30.0], start=T0 + 5 * H), owner=4)
    for i in range(5):
        add(store, sts(f"own{i}", [float(i), 1.0]), owner=10 + i)
    add(store, sts("again", [3.0, 1.0]), owner=20)
    (whole,) = plan_export(store).partitions
    monkeypatch.setattr(plan_mod, "_COMPARE_SLICE", compare_slice)
    (sliced,) = plan_export(store).partitions
    assert len(whole.hashes) == 7  # 9 series, two arrays shared
    assert sliced.aids.tolist() == whole.aids.tolist()
    assert sliced.firsts.tolist() == whole.firsts.tolist()
    assert list(sliced.hashes) == list(whole.hashes)
    assert list(sliced.axes) == list(whole.axes)


def test_catalog_key_matches_the_key_read_from_the_values(store: Store) -> None:
    varied(store)
    add(store, sts("pre1970", [1.0, 2.0], start=datetime(1969, 12, 31, 23, tzinfo=UTC)))
    add(store, sts("p1m", [1.0, 2.0, 3.0], start=datetime(2024, 1, 31), res="P1M"))
    plan = plan_export(store)
    for pp in plan.partitions:
        for s in pp.series:
            (row,) = store.select_rows(name=s.row.name)
            ((_, stored, ts),) = next(store.iter_arrays([row]))
            obj = export_object(store, row, stored, ts, None)
            h, axis, anchor, n = _key_of(obj)
            assert s.key == (h, axis)
            assert s.initial_ms == anchor
            assert (s.count if row.type.is_forecast else s.length) == n


def test_a_range_covering_everything_plans_like_no_range(store: Store) -> None:
    varied(store)
    whole = plan_export(store)
    # From the first instant (a Persistent series has no value before its first breakpoint).
    ranged = plan_export(store, Selection.of(time_range=(T0, T0 + 100 * H)))
    assert ranged.summary() == whole.summary()
    for a, b in zip(whole.partitions, ranged.partitions, strict=True):
        assert a.array_ids == b.array_ids
        assert [(s.key, s.initial_ms, s.length, s.count) for s in a.series] == [
            (s.key, s.initial_ms, s.length, s.count) for s in b.series
        ]


def test_irregular_axis_is_the_timestamps_hash(store: Store) -> None:
    ts = [T0, T0 + timedelta(minutes=7), T0 + timedelta(hours=5, milliseconds=500)]
    add(store, NonSequentialTimeSeries(ts, np.array([1.0, 2.0, 3.0]), "ns"))
    (pp,) = plan_export(store).partitions
    ms = np.array([int(t.timestamp() * 1000) for t in ts], dtype=np.int64)
    assert pp.series[0].key[1] == timestamps_hash(ms).hex()


# ---------------------------------------------------------------------- derived series


def test_derived_series_are_left_out_unless_asked(store: Store) -> None:
    add(store, sts("a", np.arange(4.0)))
    store.transform_single_time_series("PT2H", "PT1H")
    assert [p.partition.key.type for p in plan_export(store).partitions] == [
        TimeSeriesType.SingleTimeSeries
    ]
    with_derived = plan_export(store, Selection.of(include_derived=True))
    assert [p.partition.base for p in with_derived.partitions] == [
        "SingleTimeSeries_f64_utc",
        "DeterministicSingleTimeSeries_f64_utc",
    ]
    dsts = with_derived.partitions[1]
    (s,) = dsts.series
    # Materialized windows: [H=2, count=3]; the hash is over them, not the source's.
    windows = np.array([[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]])
    assert s.key == (data_hash(windows).hex(), "R3/2024-01-01T00:00:00Z/PT1H/PT2H/PT1H")
    assert dsts.rows == 6


@pytest.mark.parametrize(
    "tst", [TimeSeriesType.DeterministicSingleTimeSeries, "DeterministicSingleTimeSeries"]
)
def test_a_derived_filter_needs_include_derived(store: Store, tst) -> None:
    add(store, sts("a", np.arange(4.0)))
    store.transform_single_time_series("PT2H", "PT1H")
    with pytest.raises(InvalidParameterError, match="include_derived"):
        plan_export(store, Selection.of(time_series_type=tst))
    plan = plan_export(store, Selection.of(time_series_type=tst, include_derived=True))
    assert [p.partition.key.type for p in plan.partitions] == [
        TimeSeriesType.DeterministicSingleTimeSeries
    ]


# ---------------------------------------------------------------------- refusals


def test_empty_series_are_all_named_in_catalog_order(store: Store) -> None:
    add(store, sts("e1", np.zeros(0)), owner=1)
    add(store, sts("ok", [1.0]), owner=2)
    add(store, NonSequentialTimeSeries([], np.zeros(0), "e2"), owner=3)
    with pytest.raises(InvalidParameterError) as err:
        plan_export(store)
    assert str(err.value).startswith(
        "2 of the selected series hold no values and cannot be exported: "
        "'e1' (owner 1), 'e2' (owner 3)."
    )
    assert err.value.series == ["'e1' (owner 1)", "'e2' (owner 3)"]
    # Narrowing past them works.
    assert len(plan_export(store, Selection.of(name="ok")).partitions) == 1


def test_series_emptied_by_the_range_are_named(store: Store) -> None:
    add(store, sts("a", [1.0, 2.0, 3.0]), owner=1)
    add(store, sts("b", [1.0, 2.0], start=T0 + 24 * H), owner=2)
    add(store, NonSequentialTimeSeries([T0 + 48 * H], np.array([1.0]), "c"), owner=3)
    with pytest.raises(InvalidParameterError, match=r"^2 of the selected .*'b' \(owner 2\), 'c'"):
        plan_export(store, Selection.of(time_range=(T0, T0 + 2 * H)))


@pytest.mark.parametrize(
    ("time_range", "match"),
    [
        ((T0 + H, T0), "end < start"),
        ((T0, datetime(2024, 1, 2)), "naive"),
        ((T0,), "pair"),
        (("2024-01-01", "2024-01-02"), "datetimes"),
    ],
)
def test_bad_ranges(store: Store, time_range, match: str) -> None:
    add(store, sts("a", [1.0]))
    with pytest.raises(InvalidParameterError, match=match):
        plan_export(store, Selection.of(time_range=time_range))


def test_bad_prefix_is_refused_first(store: Store) -> None:
    with pytest.raises(InvalidParameterError, match="must end in"):
        plan_export(store, table_prefix="run1")


def test_empty_selection_plans_nothing(store: Store) -> None:
    add(store, sts("a", [1.0]))
    assert plan_export(store, Selection.of(name="nope")).partitions == []


# ---------------------------------------------------------------------- time_range keys


def test_sliced_keys_describe_the_slice(store: Store) -> None:
    add(store, sts("a", np.arange(6.0)))
    add(store, Deterministic(T0, "PT1H", "PT3H", "PT2H", 3, np.arange(9.0).reshape(3, 3), "det"))
    plan = plan_export(
        store, Selection.of(name="a", time_range=(T0 + timedelta(minutes=90), T0 + 4 * H))
    )
    s_sts = plan.partitions[0].series[0]
    assert s_sts.key == (data_hash(np.arange(1.0, 4.0)).hex(), "R3/2024-01-01T01:00:00Z/PT1H")
    assert (s_sts.initial_ms, s_sts.length, s_sts.rows) == (
        int((T0 + H).timestamp() * 1000),
        3,
        3,
    )
    plan = plan_export(store, Selection.of(name="det", time_range=(T0 + 2 * H, T0 + 3 * H)))
    s_det = plan.partitions[0].series[0]
    # One whole window (index 1), which keeps its interval.
    assert s_det.key == (
        data_hash(np.arange(9.0).reshape(3, 3)[:, 1:2]).hex(),
        "R1/2024-01-01T02:00:00Z/PT2H/PT3H/PT1H",
    )
    assert (s_det.count, s_det.rows) == (1, 3)


def test_sliced_composites_are_hashed_at_their_own_minimal_width(store: Store) -> None:
    rows = np.array([[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0], [1, 6, 6, 0, 0]])
    add(store, sts("pwl", rows, element_type="piecewise_linear"))
    plan = plan_export(store, Selection.of(time_range=(T0 + H, T0 + 3 * H)))
    (s,) = plan.partitions[0].series
    minimal = np.array([[1.0, 5.0, 5.0], [1.0, 6.0, 6.0]])
    assert s.key[0] == data_hash(minimal).hex()
    assert s.key[0] == data_hash(shrink(parse_element_type("piecewise_linear"), rows[1:])).hex()
    (block,) = iter_partition_arrays(store, plan, plan.partitions[0])
    assert block.values.shape == (2, 3)
    np.testing.assert_array_equal(block.values, minimal)


# ---------------------------------------------------------------------- row blocks


def _expected_coordinates(obj) -> list[tuple]:
    """Brute force: (issue_time, timestamp, lane) of every row, window-major."""
    tst = obj.time_series_type
    out = []
    if not tst.is_forecast:
        n = obj._data.shape[0]
        return [(None, step(obj._initial_ms, obj._resolution, k), 0) for k in range(n)]
    lanes = obj._data.shape[0] if tst.leading_dims == 3 else 1
    steps = obj._data.shape[tst.leading_dims - 2]
    for j in range(obj._count):
        issue = step(obj._initial_ms, obj._interval, j)
        for h in range(steps):
            for lane in range(lanes):
                out.append((issue, step(issue, obj._resolution, h), lane))
    return out


def _value_at(obj, issue_index: int, h: int, lane: int):
    data = obj._data
    if obj.time_series_type.leading_dims == 3:
        return data[lane, h, issue_index]
    return data[h, issue_index]


@pytest.mark.parametrize("calendar", [False, True])
def test_forecast_rows_are_window_major(store: Store, calendar: bool) -> None:
    res, hor, itv = ("P1M", "P2M", "P1M") if calendar else ("PT1H", "PT2H", "PT1H")
    start = datetime(2024, 1, 31, tzinfo=UTC)
    add(store, Deterministic(start, res, hor, itv, 3, np.arange(6.0).reshape(2, 3), "det"))
    add(
        store,
        Probabilistic(
            start, res, hor, itv, 3, [0.1, 0.5, 0.9], np.arange(18.0).reshape(3, 2, 3), "prob"
        ),
    )
    add(store, Scenarios(start, res, hor, itv, 3, np.arange(12.0).reshape(2, 2, 3), "scen"))
    add(store, sts("sts", np.arange(5.0), start=start, res=res))
    for row in store.select_rows():
        ((_, stored, ts),) = next(store.iter_arrays([row]))
        obj = export_object(store, row, stored, ts, None)
        block = row_block(obj, ("h", "a"), 1)
        assert (block.affine is None) == calendar
        coords = block.coordinates()
        expected = _expected_coordinates(obj)
        assert block.n == len(expected)
        assert coords["timestamp"].tolist() == [e[1] for e in expected]
        if row.type.is_forecast:
            assert coords["issue_time"].tolist() == [e[0] for e in expected]
            issues = sorted({e[0] for e in expected})
            for r, (issue, ts_ms, lane) in enumerate(expected):
                h = [x for x in expected if x[0] == issue and x[2] == lane].index(
                    (issue, ts_ms, lane)
                )
                assert block.values[r] == _value_at(obj, issues.index(issue), h, lane)
        else:
            assert "issue_time" not in coords
            np.testing.assert_array_equal(block.values, obj._data)
        if row.type is TimeSeriesType.Probabilistic:
            assert coords["percentile"].tolist() == [[0.1, 0.5, 0.9][e[2]] for e in expected]
        if row.type is TimeSeriesType.Scenarios:
            assert coords["scenario"].tolist() == [e[2] for e in expected]


def test_irregular_rows_carry_their_timestamps(store: Store) -> None:
    ts = [datetime(1960, 1, 1, tzinfo=UTC), T0]
    add(store, PersistentTimeSeries(ts, np.array([[1, 2], [3, 4]], dtype=np.int16), "p"))
    (row,) = store.select_rows()
    ((_, stored, tsms),) = next(store.iter_arrays([row]))
    block = row_block(export_object(store, row, stored, tsms, None), ("h", "a"), 7)
    assert block.coordinates()["timestamp"].tolist() == [-315_619_200_000, 1_704_067_200_000]
    assert block.values.dtype == np.int16 and block.values.shape == (2, 2)
    assert block.array_id == 7


def test_partition_arrays_stream_in_id_order_once_each(store: Store) -> None:
    ids = []
    for i, owner in enumerate([5, 1, 3, 2, 4]):
        ids.append(add(store, sts("s", [float(i % 3), 9.0]), owner=owner))
    plan = plan_export(store)
    (pp,) = plan.partitions
    blocks = list(iter_partition_arrays(store, plan, pp, batch_bytes=8))
    assert [b.array_id for b in blocks] == [1, 2, 3]
    assert [b.key for b in blocks] == sorted(pp.array_ids, key=pp.array_ids.get)
    # Labels of every series sharing an array, in catalog order.
    by_value = {float(b.values[0]): b.labels for b in blocks}
    assert by_value[0.0] == ["'s' (owner 5)", "'s' (owner 2)"]
    assert by_value[1.0] == ["'s' (owner 1)", "'s' (owner 4)"]
    assert by_value[2.0] == ["'s' (owner 3)"]


def test_period_helper_used_for_affine_grids() -> None:
    # The affine fast path is only taken for fixed periods.
    from infrastore_sqlite.interchange.layout import period_ms

    assert period_ms("PT1H") == 3_600_000
    assert period_ms("P1D") == 86_400_000
    assert period_ms("P1M") is None
    assert period_ms("P1Y") is None
    assert Period.parse("PT0.5S").ms == 500


# ---------------------------------------------------------------------- whole stored series
def _bits(a: np.ndarray) -> tuple:
    return a.dtype.str, a.shape, np.ascontiguousarray(a).tobytes()


def _nan(payload: int) -> float:
    return float(np.frombuffer(np.uint64(0x7FF0000000000000 | payload).tobytes(), np.float64)[0])


def _every_kind_of_static(store: Store) -> None:
    specials = [_nan(0x123), _nan(0x8_0000_0000_0001), -0.0, np.inf, -np.inf, 0.0, 1.5]
    add(store, sts("f64", np.array(specials)), owner=1)
    f32 = np.array([-0.0, np.inf, -np.inf, 0.1], dtype=np.float32)
    f32_nan = np.frombuffer(np.uint32(0x7FC00042).tobytes(), np.float32)
    add(store, sts("f32", np.concatenate([f32, f32_nan])), owner=2)
    for i, dt in enumerate(
        [np.int64, np.int32, np.int16, np.int8, np.uint32, np.uint16, np.uint8, np.bool_]
    ):
        info = np.iinfo(dt) if dt is not np.bool_ else None
        data = np.array([0, 1] if info is None else [info.min, info.max, 0], dtype=dt)
        add(store, sts(f"int{i}", data), owner=10 + i)
    add(store, sts("u64", np.array([0, 2**63 - 1], dtype=np.uint64)), owner=20)
    add(store, sts("shaped", np.arange(6.0).reshape(3, 2)), owner=21)
    add(store, sts("tuple", [[1.0, 2.0, 3.0]], element_type="tuple(3,f64)"), owner=22)
    add(store, sts("quad", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], element_type="quadratic_function"))
    month = datetime(2024, 1, 31, tzinfo=UTC)
    add(store, sts("calendar", [1.0, 2.0, 3.0], start=month, res="P1M"), owner=23)
    add(store, sts("pre1970", [1.0, 2.0], start=datetime(1969, 12, 31, 23, tzinfo=UTC)), owner=24)
    # One array, three series (two on another grid): labels of all of them ride along.
    for owner in (30, 31):
        add(store, sts("shared", [7.0, 8.0]), owner=owner)
    add(store, sts("shared", [7.0, 8.0], start=T0 + H), owner=32)


def test_whole_stored_series_blocks_match_the_series_object_route(store: Store) -> None:
    """SingleTimeSeries without a range go straight from the stored array into a block;
    every block must equal the one the series object would have made, bit for bit."""
    _every_kind_of_static(store)
    plan = plan_export(store)
    seen = 0
    for pp in plan.partitions:
        labels = pp.labels_by_array()
        for block in iter_partition_arrays(store, plan, pp, batch_bytes=64):
            sid = int(pp.ids[pp.firsts[block.array_id - 1]])
            (row,) = store.rows_by_ids([sid])
            ((_, stored, ts),) = next(store.iter_arrays([row]))
            ref = row_block(export_object(store, row, stored, ts, None), block.key, block.array_id)
            assert _bits(block.values) == _bits(ref.values), row.name
            assert block.affine == ref.affine
            if ref.timestamps is None:
                assert block.timestamps is None
            else:
                assert block.timestamps.tolist() == ref.timestamps.tolist()
            assert block.labels == labels(block.array_id)
            assert block.key == pp.key(block.array_id)
            seen += 1
    assert seen == sum(len(pp.hashes) for pp in plan.partitions)


def test_shared_arrays_name_every_series_that_holds_them(store: Store) -> None:
    _every_kind_of_static(store)
    plan = plan_export(store)
    labels = {}
    for pp in plan.partitions:
        for block in iter_partition_arrays(store, plan, pp):
            labels[(pp.partition.base, block.key)] = block.labels
    shared = [v for v in labels.values() if any("'shared'" in x for x in v)]
    assert sorted(shared) == [
        ["'shared' (owner 30)", "'shared' (owner 31)"],
        ["'shared' (owner 32)"],
    ]


# ---------------------------------------------------------------------- series rows
@pytest.mark.parametrize("chunk", [4096, 3], ids=["one-chunk", "many-chunks"])
def test_series_records_are_series_values_as_tuples(store: Store, monkeypatch, chunk) -> None:
    from infrastore_sqlite.interchange import series_rows
    from infrastore_sqlite.interchange.layout import series_columns
    from infrastore_sqlite.interchange.plan import series_records, series_values

    # Rows are converted a chunk at a time: across chunk boundaries too, nothing moves.
    monkeypatch.setattr(series_rows, "_ROWS_CHUNK", chunk)

    varied(store)
    _every_kind_of_static(store)
    add(store, sts("feat", [1.0]), owner=40, features={"b": 2, "a": float("inf"), "c": "x"})
    plan = plan_export(store)
    for pp in plan.partitions:
        cols = ["array_id", "id", *series_columns(pp.partition.key.type)]
        by_id = sorted(pp.series, key=lambda s: s.row.id)
        expected = [tuple(d[c] for c in cols) for d in series_values(store, pp, by_id)]
        assert list(series_records(store, pp)) == expected
        by_array = sorted(pp.series, key=lambda s: (pp.array_ids[s.key], s.row.id))
        expected = [tuple(d[c] for c in cols) for d in series_values(store, pp, by_array)]
        assert list(series_records(store, pp, order="array")) == expected
    (feat,) = [r for pp in plan.partitions for r in series_records(store, pp) if r[6] == "feat"]
    assert '{"a":null,"b":2,"c":"x"}' in feat


@pytest.mark.parametrize("order", ["id", "array"])
def test_series_removed_after_planning_is_named(store: Store, order: str) -> None:
    from infrastore_sqlite.errors import NotFoundError
    from infrastore_sqlite.interchange.plan import series_records

    ids = [add(store, sts(f"s{i}", [float(i)]), owner=i + 1) for i in range(5)]
    plan = plan_export(store)
    store.remove_by_ids([ids[2]])
    with pytest.raises(NotFoundError, match=str(ids[2])):
        list(series_records(store, plan.partitions[0], order=order))


def test_array_ids_is_a_mapping_over_the_columns(store: Store) -> None:
    data = [10.0, 20.0]
    for owner in (1, 2):
        add(store, sts("shared", data), owner=owner)
    add(store, sts("later", data, start=T0 + 5 * H), owner=3)  # one hash, two axes
    add(store, sts("other", [1.0]), owner=4)
    (pp,) = plan_export(store).partitions
    ids = pp.array_ids
    assert len(ids) == 3
    assert list(ids.values()) == [1, 2, 3]
    for key, i in ids.items():
        assert ids[key] == i == list(ids).index(key) + 1
        assert pp.key(i) == key
    assert ("00" * 32, "R2/2024-01-01T00:00:00Z/PT1H") not in ids
    assert ids.get(("not hex", "x")) is None
    h = next(iter(ids))[0]
    assert ids.get((h, "R9/2024-01-01T00:00:00Z/PT1H")) is None


def _held_by_plan(path: Path, n: int) -> int:
    """Bytes a plan of ``n`` distinct 4-value series holds once made (tracemalloc)."""
    import tracemalloc

    s = Store.create(path)
    try:
        s.add_time_series_bulk(
            {
                "owner_id": i,
                "owner_type": "Generator",
                "owner_category": "Component",
                "time_series": sts(f"s{i}", np.arange(4.0) + i),
            }
            for i in range(n)
        )
        tracemalloc.start()
        try:
            plan = plan_export(s)
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert len(plan.partitions[0].ids) == n
        return held
    finally:
        s.close()


def test_a_plan_holds_a_few_bytes_per_series(tmp_path: Path) -> None:
    """What a plan keeps grows by columns (some 100 bytes a series; lists of Python
    objects held 225): compared between two sizes, so what every plan holds regardless
    of size cancels out."""
    small = _held_by_plan(tmp_path / "a.h5", 1000)
    large = _held_by_plan(tmp_path / "b.h5", 5000)
    per_series = (large - small) / 4000
    assert per_series < 150, f"{per_series:.0f} bytes held per planned series"
