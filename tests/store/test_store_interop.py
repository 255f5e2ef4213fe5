"""The store against the reference implementation (infrastore 0.15.1).

The same input goes to a reference store and to ours; what each gives back must agree:
data_hash, list_metadata / get_metadata_by_id rows (ids aside), read-back arrays bit for
bit, timestamps and their zones, transform results, filters, read windows and time ranges,
and, for bad input, the refusal (both raise, with the same exception class name, and
neither writes anything).

Composites are generated at their minimal width: our composite data_hash is over the
minimal-width re-packing by design, so an over-padded array legitimately hashes
differently here (test_store / test_roundtrip_store cover over-padding).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import infrastore
import numpy as np
import pytest
import store_interop_helpers
from bitpatterns import grid_data
from hypothesis import given, settings
from hypothesis import strategies as st
from store_interop_helpers import (
    FEATURES,
    LIBS,
    NAIVE,
    NAMES,
    OWNERS,
    SETTINGS,
    T0,
    H,
    Pair,
    Spec,
    assert_same_series,
    cat,
    det_spec,
    element,
    grid,
    specs,
    state,
    store_state,
    sts_spec,
    times,
    without_id,
)

from infrastore_sqlite.core.elements import DTYPE_NAMES

pair = store_interop_helpers.pair


# =========================================================================== random series
@SETTINGS
@given(spec=specs(), who=OWNERS)
def test_random_series_agree(pair: Pair, spec: Spec, who: dict) -> None:
    ids = pair.add(spec, **who)
    assert_same_series(pair, ids)
    listed = [without_id(m) for m in pair.ours.list_metadata(name=spec.name)]
    assert listed == [without_id(m) for m in pair.ref.list_metadata(name=spec.name)]
    assert pair.ours.num_distinct_arrays() == pair.ref.num_distinct_arrays()


@SETTINGS
@given(batch=st.lists(specs(), min_size=1, max_size=4), who=OWNERS)
def test_bulk_adds_agree(pair: Pair, batch: list[Spec], who: dict) -> None:
    ids = []
    for lib, store in pair.stores():
        items = [
            {
                "owner_id": who["owner_id"],
                "owner_type": who["owner_type"],
                "owner_category": cat(lib, who["category"]),
                "time_series": s.build(lib),
                "features": who["features"],
            }
            for s in batch
        ]
        ids.append(store.add_time_series_bulk(items))
    assert ids[0] == ids[1]
    ref_meta = [without_id(m) for m in pair.ref.list_metadata_by_ids(ids[0])]
    assert [without_id(m) for m in pair.ours.list_metadata_by_ids(ids[1])] == ref_meta
    ref_read = [state(x) for x in pair.ref.read_by_ids(ids[0])]
    assert [state(x) for x in pair.ours.read_by_ids(ids[1])] == ref_read


@settings(SETTINGS, max_examples=15)
@given(data=st.data())
def test_transform_agrees(data: st.DataObject) -> None:
    """A fresh pair per example: transform works on every SingleTimeSeries in the store."""
    with tempfile.TemporaryDirectory() as tmp:
        p = Pair(Path(tmp))
        try:
            initial, res = data.draw(grid())
            n = data.draw(st.integers(1, 6))
            for _ in range(data.draw(st.integers(1, 3))):
                element_type, values_of = data.draw(element())
                kw = {} if element_type is None else {"element_type": element_type}
                arr = data.draw(values_of((n,)))
                spec = Spec("SingleTimeSeries", (initial, res, arr, f"s{next(NAMES)}"), kw)
                p.add(spec, owner_id=data.draw(st.integers(0, 3)), features=data.draw(FEATURES))
            h = data.draw(st.integers(1, n + 1))
            k = data.draw(st.integers(0, h + 1))
            horizon, interval = times(res, h), (times(res, k) if k else "PT0S")
            ref, ours = p.call(lambda lib, s: s.transform_single_time_series(horizon, interval))
            assert ref[:2] == ours[:2]
            if ref[0] == "ok":
                again = p.call(lambda lib, s: s.transform_single_time_series(horizon, interval))
                assert again == (("ok", 0), ("ok", 0))
            ref_rows = [without_id(m) for m in p.ref.list_metadata()]
            our_rows = [without_id(m) for m in p.ours.list_metadata()]
            assert our_rows == ref_rows
            for m_ref, m_ours in zip(p.ref.list_metadata(), p.ours.list_metadata(), strict=True):
                assert state(p.ours.read_by_id(m_ours["id"])) == state(
                    p.ref.read_by_id(m_ref["id"])
                )
        finally:
            p.close()


# =========================================================================== filters
@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    p = Pair(Path(tmp_path_factory.mktemp("filled")))
    p.add(
        sts_spec("load", component_field="max_active_power"), features={"year": 2030, "scen": "hi"}
    )
    p.add(sts_spec("load"), features={"year": 2030, "scen": "lo"})
    p.add(sts_spec("load"), features={"year": 2030.0})
    p.add(sts_spec("load"), features={"year": True})
    p.add(sts_spec("load"))
    p.add(sts_spec("load", res="PT30M"), owner_id=2, owner_type="Load")
    p.add(
        sts_spec("wall", start=NAIVE),
        owner_id=3,
        owner_type="Attr",
        category="SupplementalAttribute",
    )
    p.add(sts_spec("late", np.arange(5.0), start=T0 + H), owner_id=3, owner_type="Attr")
    p.add(Spec("NonSequentialTimeSeries", ([T0, T0 + 2 * H], np.arange(2.0), "ns"), {}), owner_id=4)
    p.add(
        Spec("PersistentTimeSeries", ([NAIVE, NAIVE + 2 * H], np.arange(2.0), "pe"), {}), owner_id=4
    )
    p.add(det_spec(), features={"year": 2030})
    p.add(Spec("Deterministic", (T0, "PT1H", "PT2H", "PT1H", 4, np.zeros((2, 4)), "det2"), {}))
    p.add(
        Spec(
            "Probabilistic",
            (T0, "PT1H", "PT2H", "PT3H", 4, [0.1, 0.5], np.zeros((2, 2, 4)), "prob"),
            {},
        )
    )
    p.add(
        Spec("Scenarios", (T0, "PT1H", "PT2H", "PT3H", 4, np.zeros((3, 2, 4)), "sc"), {}),
        owner_id=5,
        category="SupplementalAttribute",
    )
    for _, store in p.stores():
        store.transform_single_time_series("PT2H", "PT1H", resolution="PT30M")
    yield p
    p.close()


FILTERS: dict[str, Callable[[Any], dict]] = {
    "none": lambda lib: {},
    "owner_id": lambda lib: {"owner_id": 1},
    "owner_id matching nothing": lambda lib: {"owner_id": 999},
    "owner_category": lambda lib: {"owner_category": lib.OwnerCategory.SupplementalAttribute},
    "owner_category and id": lambda lib: {
        "owner_category": lib.OwnerCategory.Component,
        "owner_id": 3,
    },
    "owner_type": lambda lib: {"owner_type": "Attr"},
    "type Deterministic (matches the views too)": lambda lib: {
        "time_series_type": lib.TimeSeriesType.Deterministic
    },
    "type DeterministicSingleTimeSeries": lambda lib: {
        "time_series_type": lib.TimeSeriesType.DeterministicSingleTimeSeries
    },
    "type SingleTimeSeries": lambda lib: {"time_series_type": lib.TimeSeriesType.SingleTimeSeries},
    "type Persistent": lambda lib: {"time_series_type": lib.TimeSeriesType.PersistentTimeSeries},
    "type by name": lambda lib: {"time_series_type": "Scenarios"},
    "name": lambda lib: {"name": "load"},
    "name_glob": lambda lib: {"name_glob": "*e*"},
    "name_glob is case-sensitive": lambda lib: {"name_glob": "L*"},
    "name and name_glob": lambda lib: {"name": "load", "name_glob": "d*"},
    "component_field": lambda lib: {"component_field": "max_active_power"},
    "zoneless": lambda lib: {"zoneless": True},
    "not zoneless": lambda lib: {"zoneless": False},
    "resolution": lambda lib: {"resolution": "PT1H"},
    "resolution spelled otherwise": lambda lib: {"resolution": "PT60M"},
    "resolution as timedelta": lambda lib: {"resolution": timedelta(minutes=30)},
    "interval": lambda lib: {"interval": "PT3H"},
    "interval as timedelta": lambda lib: {"interval": timedelta(hours=1)},
    "initial_timestamp": lambda lib: {"initial_timestamp": T0 + H},
    "initial_timestamp shared": lambda lib: {"initial_timestamp": T0},
    "initial_timestamp naive": lambda lib: {"initial_timestamp": NAIVE},
    "length": lambda lib: {"length": 10},
    "length 2": lambda lib: {"length": 2},
    "features subset": lambda lib: {"features": {"year": 2030}},
    "features float kind": lambda lib: {"features": {"year": 2030.0}},
    "features bool kind": lambda lib: {"features": {"year": True}},
    "features two keys": lambda lib: {"features": {"year": 2030, "scen": "hi"}},
    "features_exact": lambda lib: {"features": {"year": 2030}, "features_exact": True},
    "features_exact two keys": lambda lib: {
        "features": {"year": 2030, "scen": "lo"},
        "features_exact": True,
    },
    "empty features": lambda lib: {"features": {}},
    "empty features exact": lambda lib: {"features": {}, "features_exact": True},
    "features_exact alone": lambda lib: {"features_exact": True},
    "combined": lambda lib: {
        "owner_id": 1,
        "time_series_type": lib.TimeSeriesType.SingleTimeSeries,
        "resolution": "PT1H",
        "features": {"scen": "hi"},
    },
}


@pytest.mark.parametrize("case", list(FILTERS))
def test_filters_agree(filled: Pair, case: str) -> None:
    ref, ours = filled.call(
        lambda lib, s: [without_id(m) for m in s.list_metadata(**FILTERS[case](lib))]
    )
    assert ref[0] == ours[0] == "ok", (ref, ours)
    assert ours[1] == ref[1]
    if case not in (
        "owner_id matching nothing",
        "name_glob is case-sensitive",
        "name and name_glob",
    ):
        assert ref[1], "a filter case that matches nothing proves little"


def test_removal_by_filter_agrees(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    try:
        for k in range(4):
            p.add(sts_spec(f"s{k}", np.arange(3.0) + k % 2), owner_id=k % 2, features={"k": k})
        p.add(Spec("NonSequentialTimeSeries", ([T0], np.zeros(1), "ns"), {}))
        for filters in ({"features": {"k": 1}}, {"owner_id": 0}, {"name": "none"}, {}):
            ref, ours = p.call(lambda lib, s, f=filters: s.remove_by_filter(**f))
            assert ref == ours
            assert p.call(lambda lib, s: (store_state(s), s.is_empty())) == (
                ("ok", (store_state(p.ref), p.ref.is_empty())),
                ("ok", (store_state(p.ours), p.ours.is_empty())),
            )
            assert store_state(p.ours) == store_state(p.ref)
    finally:
        p.close()


# =========================================================================== content addressing
def test_content_addressing_agrees(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    try:
        nan_a = np.array([0x7FF8000000000001, 0x8000000000000000], np.uint64).view(np.float64)
        nan_b = np.array([0x7FF8000000000002, 0x8000000000000000], np.uint64).view(np.float64)
        steps: list[Callable[[], Any]] = [
            lambda: p.add(sts_spec("a", nan_a)),
            lambda: p.add(sts_spec("b", nan_b), owner_id=2),  # same hash, other payload
            lambda: p.add(sts_spec("c", np.array([0.0, -0.0]))),
            lambda: p.add(Spec("NonSequentialTimeSeries", ([T0, T0 + H], nan_b, "d"), {})),
            lambda: p.add(sts_spec("e", np.arange(4.0).reshape(2, 2), element_type="tuple(2,f64)")),
            lambda: p.add(
                sts_spec("f", np.arange(4.0).reshape(2, 2), element_type="linear_function")
            ),
            lambda: p.add(
                Spec(
                    "Probabilistic",
                    (T0, "PT1H", "PT1H", "PT1H", 2, [0.5], np.zeros((1, 1, 2)), "g"),
                    {},
                )
            ),
            lambda: p.add(
                Spec("Scenarios", (T0, "PT1H", "PT1H", "PT1H", 2, np.zeros((1, 1, 2)), "h"), {})
            ),
            lambda: p.call(lambda lib, s: s.remove_by_ids([1])),
            lambda: p.call(lambda lib, s: s.remove_by_ids([2, 4])),
            lambda: p.add(sts_spec("i", nan_b)),  # the hash is free again: stored anew
            lambda: p.call(lambda lib, s: s.remove_by_filter(name="g")),
            lambda: p.call(lambda lib, s: s.remove_by_filter(name="h")),
        ]
        for step in steps:
            out = step()
            if isinstance(out, tuple) and isinstance(out[0], int):
                assert out[0] == out[1]  # same ids: AUTOINCREMENT, never reissued
            assert p.ours.num_distinct_arrays() == p.ref.num_distinct_arrays()
            assert store_state(p.ours) == store_state(p.ref)
            for m_ref, m_ours in zip(p.ref.list_metadata(), p.ours.list_metadata(), strict=True):
                assert state(p.ours.read_by_id(m_ours["id"])) == state(
                    p.ref.read_by_id(m_ref["id"])
                )
        assert [m["id"] for m in p.ours.list_metadata()] == [m["id"] for m in p.ref.list_metadata()]
    finally:
        p.close()


def test_transactions_agree(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    try:
        for lib, store in p.stores():
            with pytest.raises(RuntimeError), store.transaction():
                store.add_time_series(1, "G", cat(lib), sts_spec("a").build(lib))
                raise RuntimeError
            store.begin_transaction()
            store.add_time_series(1, "G", cat(lib), sts_spec("b").build(lib))
            assert store.in_transaction is True
            store.rollback_transaction()
            assert store.in_transaction is False
            with store.transaction():
                store.add_time_series(1, "G", cat(lib), sts_spec("c", np.ones(3)).build(lib))
        assert store_state(p.ours) == store_state(p.ref)
        assert [m["id"] for m in p.ours.list_metadata()] == [m["id"] for m in p.ref.list_metadata()]
    finally:
        p.close()


# =========================================================================== from_values
FROM_VALUES = [
    (
        "SingleTimeSeries",
        (T0, "PT1H"),
        [{"proportional": 1.0, "constant": 2.0}] * 3,
        "linear_function",
    ),
    (
        "SingleTimeSeries",
        (T0, "PT1H"),
        [{"quadratic": 1.0, "proportional": 2.0, "constant": 3.0}],
        "quadratic_function",
    ),
    (
        "SingleTimeSeries",
        (T0, "PT1H"),
        [[{"x": 0.0, "y": 1.0}, {"x": 2.0, "y": 3.0}], [], [{"x": 5.0, "y": 6.0}]],
        "piecewise_linear",
    ),
    (
        "NonSequentialTimeSeries",
        ([T0, T0 + H],),
        [{"x": [0.0, 1.0, 4.0], "y": [5.0, 6.0]}, {"x": [], "y": []}],
        "piecewise_step",
    ),
    ("SingleTimeSeries", (T0, "PT1H"), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "tuple(3,f64)"),
    ("NonSequentialTimeSeries", ([T0, T0 + H],), [(1.0, -0.0), (np.nan, 2.0)], "tuple(2,f64)"),
    (
        "PersistentTimeSeries",
        ([T0],),
        [{"quadratic": 1.0, "proportional": 2.0, "constant": 3.0}],
        "quadratic_function",
    ),
    (
        "Deterministic",
        (T0, "PT1H", "PT1H", "PT1H", 2),
        [[{"x": 0.0, "y": 1.0}], [{"x": 1.0, "y": 2.0}, {"x": 2.0, "y": 3.0}]],
        "piecewise_linear",
    ),
    (
        "Deterministic",
        (T0, "PT1H", "PT2H", "PT1H", 2),
        [{"proportional": float(k), "constant": 0.0} for k in range(4)],
        "linear_function",
    ),
    (
        "Probabilistic",
        (T0, "PT1H", "PT1H", "PT1H", 2, [0.1, 0.9]),
        [[{"x": float(k), "y": 1.0}] for k in range(4)],
        "piecewise_linear",
    ),
    (
        "Scenarios",
        (T0, "PT1H", "PT1H", "PT1H", 1, 2),
        [{"x": [float(k)], "y": []} for k in range(2)],
        "piecewise_step",
    ),
]


@pytest.mark.parametrize(("kind", "head", "logical", "element_type"), FROM_VALUES)
@pytest.mark.parametrize("declared", [False, True], ids=["inferred", "declared"])
def test_from_values_agrees(
    pair: Pair, kind: str, head: tuple, logical: Any, element_type: str, declared: bool
) -> None:
    name = f"fv#{next(NAMES)}"
    kw = {"element_type": element_type} if declared else {}
    built = [getattr(lib, kind).from_values(*head, logical, name, **kw) for lib in LIBS]
    assert [b.element_type for b in built] == [element_type] * 2
    assert built[1].data.tobytes() == built[0].data.tobytes()
    assert built[1].data.shape == built[0].data.shape
    assert repr(built[1].decoded_values()) == repr(built[0].decoded_values())  # NaN-safe
    ids = tuple(
        store.add_time_series(1, "G", cat(lib), ts)
        for (lib, store), ts in zip(pair.stores(), built, strict=True)
    )
    assert_same_series(pair, ids)


# =========================================================================== exhaustive grid
GRID_ELEMENTS = [
    *[(d, ()) for d in DTYPE_NAMES],
    ("f64", (2, 3)),
    ("i32", (2,)),
    *[(f"tuple(2,{d})", (2,)) for d in ("f64", "f32", "i8", "u64", "bool")],
    ("linear_function", (2,)),
    ("quadratic_function", (3,)),
    ("piecewise_linear", (5,)),
    ("piecewise_step", (4,)),
]
GRID_TYPES = [
    "SingleTimeSeries",
    "NonSequentialTimeSeries",
    "PersistentTimeSeries",
    "Deterministic",
    "Probabilistic",
    "Scenarios",
]


def _grid_spec(kind: str, element_type: str, e: tuple[int, ...]) -> Spec:
    name = f"grid#{next(NAMES)}"
    start = datetime(2024, 11, 3, 6, tzinfo=UTC).astimezone(ZoneInfo("America/Denver"))
    kw = {"element_type": element_type}
    if kind == "SingleTimeSeries":
        return Spec(kind, (start, "PT30M", grid_data(element_type, e, (5,), 1), name), kw)
    if kind in ("NonSequentialTimeSeries", "PersistentTimeSeries"):
        stamps = [start + timedelta(hours=h) for h in (0, 1, 2, 40, 41)]
        return Spec(kind, (stamps, grid_data(element_type, e, (5,), 2), name), kw)
    head = (start, "PT30M", "PT1H", "PT30M", 3)
    if kind == "Deterministic":
        return Spec(kind, (*head, grid_data(element_type, e, (2, 3), 3), name), kw)
    if kind == "Probabilistic":
        return Spec(kind, (*head, [0.25, 0.75], grid_data(element_type, e, (2, 2, 3), 4), name), kw)
    return Spec(kind, (*head, grid_data(element_type, e, (3, 2, 3), 5), name), kw)


@pytest.mark.parametrize("kind", GRID_TYPES)
@pytest.mark.parametrize(
    ("element_type", "e"), GRID_ELEMENTS, ids=[f"{t}{list(e)}" for t, e in GRID_ELEMENTS]
)
def test_every_element_type_on_every_type_agrees(
    pair: Pair, kind: str, element_type: str, e: tuple
) -> None:
    spec = _grid_spec(kind, element_type, e)
    ids = pair.add(spec, owner_id=77, owner_type="Grid", features={"kind": kind, "w": 0.25})
    assert_same_series(pair, ids)
    window = pair.call(
        lambda lib, s: [
            state(x)
            for x in s.read_by_ids_range(
                [ids[0] if lib is infrastore else ids[1]],
                (datetime(2024, 11, 3, 7, tzinfo=UTC), datetime(2024, 11, 3, 8, 30, tzinfo=UTC)),
            )
        ]
    )
    assert window[0] == window[1]
