"""The embedded store end to end: adds, reads, identity, failed writes, reading by id,
filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from store_helpers import DST, SA, T0, C, H, add, snapshot, sts

from infrastore_sqlite import (
    Deterministic,
    DuplicateTimeSeriesError,
    InvalidParameterError,
    NonSequentialTimeSeries,
    NotFoundError,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    Store,
    TimeSeriesType,
)
from infrastore_sqlite.core.hashing import data_hash_hex


# =========================================================================== adding and reading
def test_metadata_of_a_single_time_series(store: Store) -> None:
    i = add(
        store,
        sts(units="MW", quantity_kind="power", component_field="max_active_power"),
        owner_id=7,
        owner_type="Generator",
        features={"year": 2030, "scen": "hi", "w": 0.5, "on": True},
    )
    assert store.get_metadata_by_id(i) == {
        "owner_id": 7,
        "owner_type": "Generator",
        "owner_category": "Component",
        "time_series_type": "SingleTimeSeries",
        "name": "load",
        "data_hash": data_hash_hex(np.arange(10.0)),
        "id": i,
        "initial_timestamp": "2024-01-01T00:00:00+00:00",
        "length": 10,
        "resolution": "PT1H",
        "horizon": None,
        "interval": None,
        "count": None,
        "percentiles": None,
        "element_type": "f64",
        "element_shape": [],
        "timestamps": None,
        "features": {"on": True, "scen": "hi", "w": 0.5, "year": 2030},
        "units": "MW",
        "quantity_kind": "power",
        "unit_system": None,
        "time_reference": "utc",
        "component_field": "max_active_power",
        "application_data": None,
    }
    assert store.get_metadata_by_id(i + 100) is None
    assert store.counts_by_type() == {"SingleTimeSeries": 1}
    assert not store.is_empty()


def test_every_type_round_trips(store: Store) -> None:
    p_data = np.arange(12.0).reshape(2, 2, 3)
    series = [
        sts(values=np.arange(6, dtype=np.uint16).reshape(3, 2)),
        NonSequentialTimeSeries([T0, T0 + 2 * H], np.array([True, False]), "ns"),
        PersistentTimeSeries([T0 - 24 * H, T0], np.array([1.5, -0.0]), "pe"),
        Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, np.arange(6.0).reshape(2, 3), "det"),
        Probabilistic(T0, "PT1H", "PT2H", "PT1H", 3, [0.1, 0.9], p_data, "prob"),
        Scenarios(T0, "PT1H", "PT2H", "PT1H", 3, p_data, "sc"),
    ]
    ids = [add(store, s) for s in series]
    back = store.read_by_ids(ids)
    for want, got in zip(series, back, strict=True):
        assert type(got) is type(want)
        assert got.data.dtype == want.data.dtype
        assert got.data.tobytes() == want.data.tobytes()
        assert got.name == want.name
        assert got.element_type == want.element_type
        assert got.time_reference == want.time_reference
        for attr in ("initial_timestamp", "resolution", "horizon", "interval", "count"):
            if hasattr(want, attr):
                assert getattr(got, attr) == getattr(want, attr), attr
        if hasattr(want, "timestamps"):
            assert got.timestamps == want.timestamps
    assert back[4].percentiles == [0.1, 0.9]
    assert back[5].scenario_count == 2
    # Probabilistic and Scenarios hold the same array: one copy
    assert store.num_distinct_arrays() == 5
    meta = {m["name"]: m for m in store.list_metadata()}
    # the catalog quirk: length = shape[0], element_shape = shape[1:]
    assert (meta["det"]["length"], meta["det"]["element_shape"]) == (2, [3])
    assert (meta["prob"]["length"], meta["prob"]["element_shape"]) == (2, [2, 3])
    assert meta["prob"]["percentiles"] == [0.1, 0.9]
    assert meta["load"]["element_type"] == "u16"
    assert meta["load"]["element_shape"] == [2]
    assert meta["ns"]["initial_timestamp"] is None and meta["ns"]["resolution"] is None
    assert meta["ns"]["timestamps"] is None  # list_metadata leaves the axis out
    assert store.get_metadata_by_id(ids[2])["timestamps"] == [
        "2023-12-31T00:00:00+00:00",
        "2024-01-01T00:00:00+00:00",
    ]
    assert store.counts_by_type() == {
        "SingleTimeSeries": 1,
        "NonSequentialTimeSeries": 1,
        "Deterministic": 1,
        "Probabilistic": 1,
        "Scenarios": 1,
        "PersistentTimeSeries": 1,
    }


def test_empty_series_round_trip(store: Store) -> None:
    ids = [
        add(store, sts("e", np.zeros(0))),
        add(store, NonSequentialTimeSeries([], np.zeros((0, 2)), "n")),
        add(store, Deterministic(T0, "PT1H", "PT2H", "PT1H", 0, np.zeros((2, 0)), "d")),
    ]
    e, n, d = store.read_by_ids(ids)
    assert e.length == 0 and e.initial_timestamp == T0
    assert n.data.shape == (0, 2) and n.timestamps == [] and n.time_reference is None
    assert d.data.shape == (2, 0) and d.count == 0
    assert store.get_metadata_by_id(ids[1])["time_reference"] is None


def test_time_references_round_trip(store: Store) -> None:
    from zoneinfo import ZoneInfo

    denver = datetime(2024, 3, 10, 1, tzinfo=ZoneInfo("America/Denver"))
    ids = [
        add(store, sts("z", start=datetime(2024, 1, 1, 5))),
        add(store, sts("d", start=denver)),
        add(
            store,
            NonSequentialTimeSeries(
                [datetime(2024, 1, 1), datetime(2024, 1, 2, 0, 0, 0, 1000)], np.zeros(2), "nz"
            ),
        ),
        add(store, sts("ms", start=T0 + timedelta(milliseconds=500), res="PT0.25S")),
    ]
    z, d, nz, ms = store.read_by_ids(ids)
    assert z.initial_timestamp == datetime(2024, 1, 1, 5) and z.time_reference == "zoneless"
    assert d.initial_timestamp == denver and d.initial_timestamp.tzinfo == ZoneInfo(
        "America/Denver"
    )
    # 01:00 MST + 1 h is 03:00 MDT (daylight saving starts): compare instants
    assert d.timestamps[1].astimezone(UTC) == denver.astimezone(UTC) + H
    assert d.timestamps[1].utcoffset() == -6 * H and d.timestamps[1].hour == 3
    assert nz.timestamps[1] == datetime(2024, 1, 2, 0, 0, 0, 1000)
    assert ms.timestamps[1] == T0 + timedelta(milliseconds=750)
    # the API shows a zoneless wall clock without an offset; instants as UTC text
    assert store.get_metadata_by_id(ids[0])["initial_timestamp"] == "2024-01-01T05:00:00"
    assert store.get_metadata_by_id(ids[1])["initial_timestamp"] == "2024-03-10T08:00:00+00:00"
    assert store.get_metadata_by_id(ids[2])["timestamps"] == [
        "2024-01-01T00:00:00",
        "2024-01-02T00:00:00.001",
    ]
    assert store.get_metadata_by_id(ids[3])["initial_timestamp"] == "2024-01-01T00:00:00.500+00:00"
    # the catalog itself keeps the UTC-style text for every reference
    text = store._catalog.scalar(
        "SELECT initial_timestamp FROM time_series_associations WHERE id = ?", (ids[0],)
    )
    assert text == "2024-01-01T05:00:00+00:00"


def test_nan_payloads_negative_zero_and_inf(store: Store) -> None:
    bits_a = np.array(
        [0x7FF8000000000001, 0xFFF0000000000001, 0x8000000000000000, 0x7FF0000000000000], np.uint64
    )
    bits_b = np.array(
        [0x7FF8000000000002, 0x7FF8000000000000, 0x8000000000000000, 0x7FF0000000000000], np.uint64
    )
    a = add(store, sts("a", bits_a.view(np.float64)))
    b = add(store, sts("b", bits_b.view(np.float64)))
    # NaNs hash alike, so b shares a's array and reads a's bits (as the reference does)
    assert store.num_distinct_arrays() == 1
    assert store.read_by_id(a).data.view(np.uint64).tolist() == bits_a.tolist()
    assert store.read_by_id(b).data.view(np.uint64).tolist() == bits_a.tolist()
    # -0.0 and +0.0 are different arrays
    add(store, sts("pz", np.array([0.0])))
    nz = add(store, sts("nz", np.array([-0.0])))
    assert store.num_distinct_arrays() == 3
    assert np.signbit(store.read_by_id(nz).data[0])
    f32 = np.array([0x7FC00001, 0xFFC00000, 0x80000000], np.uint32)
    c = add(store, sts("f32", f32.view(np.float32)))
    assert store.read_by_id(c).data.view(np.uint32).tolist() == f32.tolist()


def test_over_padded_composites_share_the_minimal_array(store: Store) -> None:
    minimal = np.array([[1, 5, 6, 0, 0], [2, 1, 2, 3, 4]], dtype=float)
    wide = np.array([[1, 5, 6, 0, 0, 0, 0], [2, 1, 2, 3, 4, 0, 0]], dtype=float)
    garbage = np.array([[1, 5, 6, 9, 9, 9, 9], [2, 1, 2, 3, 4, 9, 9]], dtype=float)
    i = add(store, sts("min", minimal, element_type="piecewise_linear"))
    j = add(store, sts("wide", wide, element_type="piecewise_linear"))
    k = add(store, sts("garbage", garbage, element_type="piecewise_linear"))
    assert store.num_distinct_arrays() == 1
    hashes = {store.get_metadata_by_id(x)["data_hash"] for x in (i, j, k)}
    assert hashes == {data_hash_hex(minimal)}
    assert store.get_metadata_by_id(j)["element_shape"] == [7]  # the width the caller gave
    got_min, got_wide, got_garbage = store.read_by_ids([i, j, k])
    np.testing.assert_array_equal(got_min.data, minimal)
    np.testing.assert_array_equal(got_wide.data, wide)
    np.testing.assert_array_equal(got_garbage.data, wide)  # canonical: padding zeroed
    assert (
        got_garbage.decoded_values()
        == sts("x", minimal, element_type="piecewise_linear").decoded_values()
    )
    # the same bytes as a plain f64 array are a different element type but the same hash
    plain = add(store, sts("plain", minimal))
    assert store.num_distinct_arrays() == 1
    assert store.read_by_id(plain).element_type == "f64"


def test_negative_zero_step_count_is_canonical(store: Store) -> None:
    step = np.array([[-0.0], [0.0]])
    i = add(store, sts("s", step, element_type="piecewise_step"))
    assert not np.signbit(store.read_by_id(i).data).any()


# =========================================================================== identity
def test_identity_rules(store: Store) -> None:
    add(store, sts(), features={"k": 1})
    for dup in (
        {"ts": sts(values=np.ones(10))},  # other data
        {"owner_type": "Other"},
        {"ts": sts(units="kW")},
        {"ts": sts(start=T0 + H)},
        {"ts": sts(values=np.ones(3))},  # other length
    ):
        with pytest.raises(DuplicateTimeSeriesError, match="already exists: 'load' \\(owner 1\\)"):
            add(
                store,
                dup.get("ts", sts()),
                owner_type=dup.get("owner_type", "Gen"),
                features={"k": 1},
            )
    # each of these is a new identity
    add(store, sts(), category=SA, features={"k": 1})
    add(store, sts(res="PT2H"), features={"k": 1})
    add(store, sts(), features={"k": 1.0})
    add(store, sts(), features={"k": True})
    add(store, sts(), features={"k": "1"})
    add(store, sts())
    add(store, sts(), owner_id=2, features={"k": 1})
    assert len(store.list_metadata()) == 8
    assert store.num_distinct_arrays() == 1


def test_infinite_features_read_back(store: Store) -> None:
    feats = {"hi": float("inf"), "lo": float("-inf"), "big": 1e308, "n": 1, "b": False}
    i = add(store, sts(), features=feats)
    assert store.get_metadata_by_id(i)["features"] == feats
    assert store.list_metadata(features={"hi": float("inf")})[0]["features"] == feats
    assert store.list_metadata(features=feats, features_exact=True)[0]["id"] == i
    j = add(store, sts(), features={**feats, "hi": float("-inf")})  # another identity
    assert store.get_metadata_by_id(j)["features"]["hi"] == float("-inf")


def test_forecast_identity_includes_interval_not_horizon(store: Store) -> None:
    add(store, Deterministic(T0, "PT1H", "PT2H", "PT1H", 1, np.zeros((2, 1)), "d"))
    with pytest.raises(DuplicateTimeSeriesError):
        add(store, Deterministic(T0, "PT1H", "PT3H", "PT1H", 1, np.zeros((3, 1)), "d"))
    add(store, Deterministic(T0, "PT1H", "PT2H", "PT2H", 1, np.zeros((2, 1)), "d"))
    ns = NonSequentialTimeSeries([T0], np.zeros(1), "n")
    add(store, ns)
    with pytest.raises(DuplicateTimeSeriesError):  # NULL resolution/interval collide
        add(store, NonSequentialTimeSeries([T0 + H], np.ones(1), "n"))


# =========================================================================== failed writes
BAD_ADDS = {
    "reserved feature": (
        {"features": {"name": "x"}},
        InvalidParameterError,
        'feature name "name" is reserved',
    ),
    "NaN feature": ({"features": {"x": float("nan")}}, InvalidParameterError, "NaN"),
    "-0.0 feature": ({"features": {"x": -0.0}}, InvalidParameterError, "negative zero"),
    "None feature": ({"features": {"x": None}}, InvalidParameterError, "is None"),
    "list feature": ({"features": {"x": [1]}}, InvalidParameterError, "type list"),
    "i64 overflow feature": ({"features": {"x": 2**63}}, InvalidParameterError, "64-bit"),
    "owner_id str": ({"owner_id": "1"}, InvalidParameterError, "owner_id must be an integer"),
    "owner_id bool": ({"owner_id": True}, InvalidParameterError, "owner_id must be an integer"),
    "owner_id huge": ({"owner_id": 2**63}, InvalidParameterError, "signed 64-bit"),
    "owner_type empty": ({"owner_type": ""}, InvalidParameterError, "owner_type must be"),
    "category": ({"category": "Comp"}, InvalidParameterError, "unknown owner_category"),
    "not a series": ({"ts": np.zeros(3)}, InvalidParameterError, "must be a series object"),
    "duplicate": ({}, DuplicateTimeSeriesError, "already exists"),
}


@pytest.mark.parametrize("case", list(BAD_ADDS))
def test_failed_add_writes_nothing(store: Store, case: str) -> None:
    add(store, sts("load"))
    before = snapshot(store)
    kw, exc, message = BAD_ADDS[case]
    ts = kw.pop("ts", sts("load", np.arange(10.0) + 1))  # new data: would need a new array
    with pytest.raises(exc, match=message):
        store.add_time_series(
            kw.get("owner_id", 1),
            kw.get("owner_type", "Gen"),
            kw.get("category", C),
            ts,
            features=kw.get("features"),
        )
    assert snapshot(store) == before
    i = add(store, sts("next", np.arange(10.0) + 2))
    np.testing.assert_array_equal(store.read_by_id(i).data, np.arange(10.0) + 2)
    assert i == 2  # the failed add consumed no id


def test_bulk_add_is_all_or_nothing(store: Store) -> None:
    add(store, sts("existing"))
    store.transform_single_time_series("PT1H", "PT1H")  # so a Deterministic "existing" clashes
    before = snapshot(store)

    def item(name: str, values: np.ndarray, **kw) -> dict:
        return {
            "owner_id": 1,
            "owner_type": "Gen",
            "owner_category": C,
            "time_series": sts(name, values),
            **kw,
        }

    batches = {
        "duplicate in batch": [item("a", np.ones(10)), item("a", np.full(10, 2.0))],
        "duplicate of stored": [item("b", np.ones(10)), item("existing", np.full(10, 3.0))],
        "bad features late": [item("c", np.ones(10)), item("d", np.ones(10), features={"id": 1})],
        "unknown key": [item("e", np.ones(10)), item("f", np.ones(10), feautres={})],
        "not a dict": [item("g", np.ones(10)), ("h",)],
        "family clash": [
            item("i", np.ones(10)),
            {
                "owner_id": 1,
                "owner_type": "Gen",
                "owner_category": C,
                "time_series": Deterministic(
                    T0, "PT1H", "PT1H", "PT1H", 1, np.ones((1, 1)), "existing"
                ),
            },
        ],
    }
    for name, batch in batches.items():
        with pytest.raises((DuplicateTimeSeriesError, InvalidParameterError)):
            store.add_time_series_bulk(batch)
        assert snapshot(store) == before, name
    ids = store.add_time_series_bulk([item("x", np.full(10, 4.0)), item("y", np.full(10, 4.0))])
    assert ids == [3, 4]
    assert store.num_distinct_arrays() == 2
    assert [s.data[0] for s in store.read_by_ids(ids)] == [4.0, 4.0]
    assert store.add_time_series_bulk([]) == []


def test_bulk_add_refusals_name_the_offending_item(store: Store) -> None:
    add(store, sts("existing"))
    store.transform_single_time_series("PT1H", "PT1H")

    def item(name: str, ts=None, owner_id: int = 1) -> dict:
        return {
            "owner_id": owner_id,
            "owner_type": "Gen",
            "owner_category": C,
            "time_series": ts if ts is not None else sts(name, np.full(10, float(owner_id))),
        }

    det = Deterministic(T0, "PT1H", "PT1H", "PT1H", 1, np.ones((1, 1)), "existing")
    ok = [item(f"ok{k}", owner_id=k + 1) for k in range(5)]
    with pytest.raises(DuplicateTimeSeriesError, match=r"'dup' \(owner 7\)"):
        store.add_time_series_bulk([*ok, item("dup", owner_id=7), item("dup", owner_id=7)])
    with pytest.raises(InvalidParameterError, match=r"'existing' \(owner 1\) already has a Det"):
        store.add_time_series_bulk([*ok, item("x", det)])
    assert len(store.list_metadata()) == 2


def test_bulk_ids_follow_the_highest_id_ever_used(store: Store) -> None:
    ids = store.add_time_series_bulk(
        [
            {"owner_id": k, "owner_type": "Gen", "owner_category": C, "time_series": sts()}
            for k in range(3)
        ]
    )
    assert ids == [1, 2, 3]
    store.remove_by_ids([3])
    again = store.add_time_series_bulk(
        [
            {"owner_id": k, "owner_type": "Gen", "owner_category": C, "time_series": sts()}
            for k in (7, 8)
        ]
    )
    assert again == [4, 5]  # AUTOINCREMENT: id 3 is not reused
    assert [m["owner_id"] for m in store.list_metadata_by_ids(again)] == [7, 8]


# =========================================================================== reading by id
def test_read_by_ids_order_repeats_and_missing(store: Store) -> None:
    a = add(store, sts("a", np.zeros(2)))
    b = add(store, sts("b", np.ones(2)))
    assert [s.name for s in store.read_by_ids([b, a, b])] == ["b", "a", "b"]
    assert store.read_by_ids([]) == []
    with pytest.raises(NotFoundError, match=r"no series with id 99; list_metadata"):
        store.read_by_ids([a, 99])
    with pytest.raises(NotFoundError, match=r"id 100, 101, .*, 109 …"):
        store.read_by_ids(list(range(100, 120)))
    with pytest.raises(NotFoundError):
        store.read_by_id(99)
    # list_metadata_by_ids: order, repeats, and a missing id is an error (as in the reference)
    assert [m["name"] for m in store.list_metadata_by_ids([b, a, b])] == ["b", "a", "b"]
    with pytest.raises(NotFoundError):
        store.list_metadata_by_ids([a, 99])


@pytest.mark.parametrize("route", ["search", "scan"])
def test_read_by_ids_many_every_dtype_bit_exact(
    store: Store, route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read of many series (locations found by key search, or by one pass over the
    arrays table) gives back each series' own bytes: NaN payloads, -0.0, ±inf, integer
    extremes, every dtype; in the order asked, repeats included, each a writable copy."""
    from bitpatterns import grid_data

    from infrastore_sqlite.core.elements import DTYPE_NAMES
    from infrastore_sqlite.store import reading as reading_module

    monkeypatch.setattr(reading_module, "_SCAN_FROM", 1 if route == "scan" else 10**9)
    added: dict[int, tuple[str, np.ndarray]] = {}
    stamps = [T0 + k * H for k in (0, 2, 3, 7)]
    for seed, dtype in enumerate(DTYPE_NAMES):
        for copy in range(3):  # the third shares the first one's array
            data = grid_data(dtype, (), (4,), seed * 10 + copy % 2)
            ts = sts(f"{dtype}-{copy}", data, element_type=dtype)
            added[add(store, ts)] = ("SingleTimeSeries", data)
        data = grid_data(dtype, (), (4,), seed)
        irregular = NonSequentialTimeSeries(stamps, data, f"n{dtype}", element_type=dtype)
        added[add(store, irregular)] = ("NonSequentialTimeSeries", data)
    u64 = np.array([0, 1, 2**63, 2**64 - 1], dtype=np.uint64)
    added[add(store, sts("u64max", u64, element_type="u64"))] = ("SingleTimeSeries", u64)
    ids = list(added)
    order = [*reversed(ids), ids[0], ids[len(ids) // 2], ids[0]]
    got = store.read_by_ids(order)
    for i, g in zip(order, got, strict=True):
        kind, want = added[i]
        assert type(g).__name__ == kind
        data = g.data
        assert data.dtype == want.dtype and data.shape == want.shape
        assert data.tobytes() == want.tobytes(), i
        data[...] = 0  # a fresh writable copy: the series keeps its values
        assert g.data.tobytes() == want.tobytes()
    # An id no int64 holds is no series, named as such (not an overflow).
    with pytest.raises(NotFoundError, match=str(2**64)):
        store.read_by_ids([ids[0], 2**64])
    import gc

    assert gc.isenabled()  # the read pauses the collector, and gives it back on a refusal


def test_read_by_ids_takes_ids_in_any_integer_form_and_refuses_the_rest(store: Store) -> None:
    """Plain ints go to the catalog in one conversion; numpy integers, tuples and arrays
    give the same series; a bool, a float or a string is refused as a single read refuses
    it; an id no int64 holds is missing; an empty array reads back with no slot."""
    from infrastore_sqlite.errors import ParameterTypeError

    a = add(store, sts("a", np.arange(3.0)))
    b = add(store, sts("b", np.arange(3.0) + 1))
    e = add(store, sts("e", np.zeros(0)))
    want = [x.data.tolist() for x in store.read_by_ids([b, a, e])]
    assert want == [[1.0, 2.0, 3.0], [0.0, 1.0, 2.0], []]
    for ids in ((b, a, e), np.array([b, a, e]), [np.int64(b), a, np.int32(e)]):
        assert [x.data.tolist() for x in store.read_by_ids(ids)] == want
    for bad in (True, 1.0, "1"):
        with pytest.raises(ParameterTypeError, match="a series id is an int"):
            store.read_by_ids([a, bad])
    for missing in (2**63, -(2**63) - 1, 10**6):
        with pytest.raises(NotFoundError, match=str(missing)):
            store.read_by_ids([a, missing])
    assert store.read_by_ids([]) == []


def test_windows_and_ranges_through_the_store(store: Store) -> None:
    s = add(store, sts())
    d = add(store, Deterministic(T0, "PT1H", "PT2H", "PT3H", 4, np.arange(8.0).reshape(2, 4), "d"))
    got = store.read_by_id(s, start_time=T0 + 2 * H, len=3)
    assert got.data.tolist() == [2.0, 3.0, 4.0] and got.initial_timestamp == T0 + 2 * H
    got = store.read_by_id(d, start_time=T0 + 3 * H, count=2)
    assert got.data.tolist() == [[1.0, 2.0], [5.0, 6.0]] and got.count == 2
    both = store.read_by_ids([s, s], start_time=T0 + 8 * H)
    assert [x.data.tolist() for x in both] == [[8.0, 9.0], [8.0, 9.0]]
    with pytest.raises(InvalidParameterError, match="len applies to static"):
        store.read_by_ids([s, d], len=2)
    clipped = store.read_by_ids_range([s, d, s], (T0 + 3 * H, T0 + 5.5 * H))
    assert clipped[0].data.tolist() == [3.0, 4.0, 5.0]
    assert clipped[0].initial_timestamp == T0 + 3 * H
    assert clipped[1].count == 1 and clipped[1].initial_timestamp == T0 + 3 * H
    assert clipped[2].data.tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(InvalidParameterError, match="must align to a window boundary"):
        store.read_by_ids_range([s, d], (T0 + 1.5 * H, T0 + 4 * H))
    with pytest.raises(InvalidParameterError, match=r"'d' \(owner 1\).*resolves to window index 4"):
        store.read_by_ids_range([d], (T0 + 12 * H, T0 + 13 * H))
    # reads never change what is stored
    assert store.read_by_id(s).data.tolist() == list(range(10))


def test_iter_arrays_batches_reads(store: Store) -> None:
    ids = [add(store, sts(f"s{k}", np.full(100, float(k)))) for k in range(5)]
    ids.append(add(store, sts("dup", np.full(100, 0.0))))
    rows = store.rows_by_ids(ids)
    batches = list(store.iter_arrays(rows, batch_bytes=1000))
    # 800 bytes per array, so a batch holds one distinct array; "dup" repeats s0's array
    # after s0's batch was dropped, so it is read again in a batch of its own
    assert len(batches) == 6
    flat = [(r.name, float(a[0])) for batch in batches for r, a, _ in batch]
    assert flat == [("s0", 0.0), ("s1", 1.0), ("s2", 2.0), ("s3", 3.0), ("s4", 4.0), ("dup", 0.0)]


# =========================================================================== filters
@pytest.fixture
def filled(store: Store) -> Store:
    add(
        store,
        sts("load", component_field="max_active_power"),
        features={"year": 2030, "scen": "hi"},
    )
    add(store, sts("load"), features={"year": 2030, "scen": "lo"})
    add(store, sts("load"), features={"year": 2030.0})
    add(store, sts("load"))
    add(store, sts("load", res="PT30M"), owner_id=2, owner_type="Load")
    add(store, sts("wall", start=datetime(2024, 1, 1)), owner_id=3, owner_type="Attr", category=SA)
    add(store, sts("late", np.arange(5.0), start=T0 + H), owner_id=3, owner_type="Attr")
    add(store, NonSequentialTimeSeries([T0, T0 + 2 * H], np.arange(2.0), "ns"), owner_id=4)
    add(
        store,
        Deterministic(T0, "PT1H", "PT2H", "PT3H", 4, np.zeros((2, 4)), "det"),
        features={"year": 2030},
    )
    add(store, Probabilistic(T0, "PT1H", "PT2H", "PT3H", 4, [0.5], np.zeros((1, 2, 4)), "prob"))
    store.transform_single_time_series("PT2H", "PT1H", resolution="PT30M")
    return store


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        ({"owner_id": 1}, [1, 2, 3, 4, 9, 10]),
        ({"owner_id": np.int64(3)}, [6, 7]),
        ({"owner_category": SA}, [6]),
        ({"owner_category": "Component", "owner_id": 3}, [7]),
        ({"owner_type": "Attr"}, [6, 7]),
        ({"time_series_type": TimeSeriesType.Deterministic}, [9, 11]),
        ({"time_series_type": DST}, [11]),
        ({"time_series_type": "probabilistic"}, [10]),
        ({"name": "load"}, [1, 2, 3, 4, 5, 11]),
        ({"name_glob": "*a*"}, [1, 2, 3, 4, 5, 6, 7, 11]),
        ({"name_glob": "L*"}, []),  # GLOB is case-sensitive
        ({"name": "load", "name_glob": "d*"}, []),
        ({"component_field": "max_active_power"}, [1]),
        ({"zoneless": True}, [6]),
        ({"zoneless": False}, [1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
        ({"resolution": "PT60M"}, [1, 2, 3, 4, 6, 7, 9, 10]),
        ({"resolution": timedelta(minutes=30)}, [5, 11]),
        ({"interval": "PT3H"}, [9, 10]),
        ({"interval": timedelta(hours=1)}, [11]),
        ({"initial_timestamp": T0 + H}, [7]),
        ({"initial_timestamp": T0}, [1, 2, 3, 4, 5, 6, 9, 10, 11]),
        ({"length": 5}, [7]),
        ({"features": {"year": 2030}}, [1, 2, 9]),
        ({"features": {"year": 2030.0}}, [3]),  # a float feature is not the int
        ({"features": {"year": 2030, "scen": "hi"}}, [1]),
        ({"features": {"year": 2030}, "features_exact": True}, [9]),
        ({"features": {}, "features_exact": True}, [4, 5, 6, 7, 8, 10, 11]),
        ({"features_exact": True}, [4, 5, 6, 7, 8, 10, 11]),
        ({"features": {}}, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        ({"features": {"name": "x"}}, []),  # unstorable feature: matches nothing
        ({"features": {"x": float("nan")}, "features_exact": True}, []),
        ({"features": {"x": -0.0}}, []),
        ({"owner_id": None, "name": None}, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
    ],
)
def test_list_metadata_filters(filled: Store, filters: dict, expected: list) -> None:
    assert [m["id"] for m in filled.list_metadata(**filters)] == expected


@pytest.mark.parametrize(
    ("filters", "exc", "message"),
    [
        ({"nme": "x"}, TypeError, "unknown filter keyword"),
        ({"owner_id": "1"}, InvalidParameterError, "owner_id must be an integer"),
        ({"time_series_type": "weekly"}, InvalidParameterError, "unknown time_series_type"),
        ({"owner_category": "Comp"}, InvalidParameterError, "unknown owner_category"),
        ({"resolution": "1h"}, InvalidParameterError, "did you mean 'PT1H'"),
        ({"initial_timestamp": "2024-01-01"}, InvalidParameterError, "expected a datetime"),
        ({"features": {"x": None}}, InvalidParameterError, "is None"),
        ({"features": {"name": None}}, InvalidParameterError, "is None"),
        ({"features": {"x": float("nan"), "y": [1]}}, InvalidParameterError, "type list"),
        ({"features": {1: 1}}, InvalidParameterError, "not a str"),
        ({"features": [("year", 2030)]}, InvalidParameterError, "must be a mapping"),
    ],
)
def test_filter_refusals(filled: Store, filters: dict, exc: type, message: str) -> None:
    with pytest.raises(exc, match=message):
        filled.list_metadata(**filters)


def test_a_failed_background_array_write_rolls_the_catalog_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infrastore_sqlite.errors import StorageError
    from infrastore_sqlite.store.arrays import ArrayFile

    kept = add(store, sts("kept", np.arange(3.0)))
    real = ArrayFile._write_now

    def failing(self: ArrayFile, *args: Any) -> None:
        raise StorageError("writing pool f64__3 failed: disk full (simulated)")

    monkeypatch.setattr(ArrayFile, "_write_now", failing)
    with pytest.raises(StorageError, match="disk full"):
        store.add_time_series_bulk(
            [
                {
                    "owner_id": 2,
                    "owner_type": "Gen",
                    "time_series": sts("lost", np.arange(3.0) + 1),
                },
                {
                    "owner_id": 3,
                    "owner_type": "Gen",
                    "time_series": sts("lost", np.arange(3.0) + 2),
                },
            ]
        )
    assert [r["name"] for r in store.list_metadata()] == ["kept"]
    assert store._catalog.scalar("SELECT count(*) FROM arrays") == 1
    monkeypatch.setattr(ArrayFile, "_write_now", real)
    again = add(store, sts("lost", np.arange(3.0) + 1), owner_id=2)
    assert store.read_by_id(again).data.tolist() == [1.0, 2.0, 3.0]
    assert store.read_by_id(kept).data.tolist() == [0.0, 1.0, 2.0]


def test_features_hash_of_caches_by_exact_type_and_bits() -> None:
    """The bulk add's feature-hash cache gives features_hash's answer for every map,
    however many share a key by ==: 1, 1.0 and True, 0.0 and -0.0 stay apart."""
    from infrastore_sqlite.core.hashing import features_hash
    from infrastore_sqlite.store.prepare import _features_hash_of

    maps = [
        {"a": 1},
        {"a": 1.0},
        {"a": True},
        {"a": 0.0},
        {"a": -0.0},
        {"a": "1"},
        {"a": 1, "b": "x"},
        {"b": "x", "a": 1},
        {"a": np.int64(1)},
        {"a": float("inf")},
        {},
    ]
    for _ in range(2):  # the second pass is answered from the cache
        assert [_features_hash_of(m) for m in maps] == [features_hash(m) for m in maps]
    assert _features_hash_of({"a": 0.0}) != _features_hash_of({"a": -0.0})


def test_series_tally_counts_what_the_rows_hold(tmp_path: Path) -> None:
    """``series_tally`` (what ``info`` prints) agrees with counting the catalog rows."""
    from tests.varied_store import build_varied, new_store

    s = new_store(tmp_path / "varied.h5")
    try:
        build_varied(s)
        rows = s.select_rows()
        refs: dict[str, int] = {}
        for r in rows:
            refs[r.time_reference or "unspecified"] = (
                refs.get(r.time_reference or "unspecified", 0) + 1
            )
        assert len(refs) > 1  # the store mixes references: the grouping is exercised
        owners = {(r.owner_category, r.owner_id) for r in rows}
        assert len(owners) > 1
        assert s.series_tally() == {
            "series": len(rows),
            "owners": len(owners),
            "time_references": dict(sorted(refs.items())),
        }
    finally:
        s.close()


def test_series_tally_of_an_empty_store(store: Store) -> None:
    assert store.series_tally() == {"series": 0, "owners": 0, "time_references": {}}
