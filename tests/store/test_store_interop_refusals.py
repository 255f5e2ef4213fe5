"""Refusals against the reference implementation (infrastore 0.15.1): the same refusal for
the same bad input, and nothing written."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest
import store_interop_helpers
from store_interop_helpers import (
    NAIVE,
    T0,
    H,
    Pair,
    Spec,
    assert_same_series,
    cat,
    store_state,
    sts_spec,
)

base = store_interop_helpers.base


# =========================================================================== refusals
def _add(
    spec: Spec | Callable[[Any], Any],
    owner_id: Any = 1,
    owner_type: Any = "Gen",
    category: str = "Component",
    features: Any = None,
) -> Callable[[Any, Any], Any]:
    """Build the series *and* add it: the refusal may come from either step."""

    def run(lib: Any, store: Any) -> Any:
        ts = spec.build(lib) if isinstance(spec, Spec) else spec(lib)
        return store.add_time_series(
            owner_id, owner_type, cat(lib, category), ts, features=features
        )

    return run


ODD = timezone(timedelta(seconds=30))
PERIOD_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "wrong forecast shape": _add(
        Spec("Deterministic", (T0, "PT1H", "PT2H", "PT1H", 4, np.zeros((4, 2)), "x"), {})
    ),
    "wrong lane shape": _add(
        Spec("Probabilistic", (T0, "PT1H", "PT2H", "PT1H", 1, [0.5], np.zeros((2, 2, 1)), "x"), {})
    ),
    "bad period spelling": _add(sts_spec("x", res="1h")),
    "zero resolution": _add(sts_spec("x", res="PT0S")),
    "negative resolution": _add(sts_spec("x", res="-PT1H")),
    "fractional days": _add(sts_spec("x", res="P1.5D")),
    "mixed calendar and fixed": _add(sts_spec("x", res="P1MT1H")),
    "horizon not a multiple": _add(
        Spec("Deterministic", (T0, "PT2H", "PT3H", "PT2H", 1, np.zeros((1, 1)), "x"), {})
    ),
    "zero interval, two windows": _add(
        Spec("Deterministic", (T0, "PT1H", "PT2H", "PT0S", 2, np.zeros((2, 2)), "x"), {})
    ),
    "empty percentiles": _add(
        Spec("Probabilistic", (T0, "PT1H", "PT2H", "PT1H", 1, [], np.zeros((0, 2, 1)), "x"), {})
    ),
    "unsorted percentiles": _add(
        Spec(
            "Probabilistic",
            (T0, "PT1H", "PT2H", "PT1H", 1, [0.9, 0.1], np.zeros((2, 2, 1)), "x"),
            {},
        )
    ),
    "sub-millisecond start": _add(sts_spec("x", start=T0 + timedelta(microseconds=5))),
    "sub-millisecond timestamp": _add(
        Spec(
            "NonSequentialTimeSeries",
            ([T0, T0 + timedelta(microseconds=1500)], np.zeros(2), "x"),
            {},
        )
    ),
    "start not a datetime": _add(sts_spec("x", start="2024-01-01T00:00:00Z")),
    "bad zone": _add(sts_spec("x", time_reference="bad zone!")),
    "empty zone": _add(sts_spec("x", time_reference="")),
    "offset out of range": _add(sts_spec("x", time_reference="+25:00")),
    "sub-minute offset": _add(sts_spec("x", start=datetime(2024, 1, 1, tzinfo=ODD))),
    "day resolution in a zone": _add(sts_spec("x", res="P1D", time_reference="America/Denver")),
    "month resolution in a zone": _add(sts_spec("x", res="P1M", time_reference="Europe/Paris")),
    "day interval in a zone": _add(
        Spec(
            "Deterministic",
            (T0, "PT1H", "P2D", "P1D", 2, np.zeros((48, 2)), "x"),
            {"time_reference": "America/Denver"},
        )
    ),
    "non-increasing timestamps": _add(
        Spec("NonSequentialTimeSeries", ([T0, T0], np.zeros(2), "x"), {})
    ),
    "decreasing breakpoints": _add(
        Spec("PersistentTimeSeries", ([T0 + H, T0], np.zeros(2), "x"), {})
    ),
    "timestamp count": _add(Spec("NonSequentialTimeSeries", ([T0, T0 + H], np.zeros(3), "x"), {})),
    "mixed naive and aware": _add(
        Spec("NonSequentialTimeSeries", ([T0, NAIVE + H], np.zeros(2), "x"), {})
    ),
    "mixed zones": _add(
        Spec(
            "PersistentTimeSeries",
            ([T0, (T0 + H).astimezone(timezone(2 * H))], np.zeros(2), "x"),
            {},
        )
    ),
    "utc and UTC zone": _add(
        Spec(
            "NonSequentialTimeSeries",
            ([T0, (T0 + H).astimezone(ZoneInfo("UTC"))], np.zeros(2), "x"),
            {},
        )
    ),
}
ELEMENT_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "element_type disagrees with dtype": _add(sts_spec("x", element_type="i64")),
    "unknown element_type": _add(sts_spec("x", element_type="float64")),
    "capitalized dtype": _add(sts_spec("x", element_type="F64")),
    "tuple of zero": _add(sts_spec("x", np.zeros((3, 0)), element_type="tuple(0,f64)")),
    "tuple width": _add(sts_spec("x", np.zeros((3, 2)), element_type="tuple(3,f64)")),
    "linear of ints": _add(
        sts_spec("x", np.zeros((3, 2), np.int64), element_type="linear_function")
    ),
    "quadratic width": _add(sts_spec("x", np.zeros((3, 2)), element_type="quadratic_function")),
    "even piecewise_linear": _add(sts_spec("x", np.zeros((3, 2)), element_type="piecewise_linear")),
    "odd piecewise_step": _add(sts_spec("x", np.zeros((3, 3)), element_type="piecewise_step")),
    "too many points": _add(
        sts_spec("x", np.array([[3.0, 0, 0]]), element_type="piecewise_linear")
    ),
    "fractional count": _add(
        sts_spec("x", np.array([[0.5, 0, 0]]), element_type="piecewise_linear")
    ),
    "negative count": _add(sts_spec("x", np.array([[-1.0, 0]]), element_type="piecewise_step")),
    "NaN count": _add(sts_spec("x", np.array([[np.nan, 0, 0]]), element_type="piecewise_linear")),
    "complex data": _add(sts_spec("x", np.zeros(3, complex))),
    "float16 data": _add(sts_spec("x", np.zeros(3, np.float16))),
    "string data": _add(sts_spec("x", np.array(["a", "b"]))),
    "0-d data": _add(sts_spec("x", np.float64(3.0))),
    "1-d forecast": _add(
        Spec("Deterministic", (T0, "PT1H", "PT1H", "PT1H", 1, np.zeros(1), "x"), {})
    ),
}
ADD_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "duplicate": _add(sts_spec("base", np.ones(10))),
    "duplicate, other owner_type": _add(sts_spec("base"), owner_type="Other"),
    "duplicate, other start": _add(sts_spec("base", start=T0 + H)),
    "duplicate, other horizon": _add(
        Spec("Deterministic", (T0, "PT1H", "PT3H", "PT3H", 1, np.zeros((3, 1)), "det"), {})
    ),
    "duplicate irregular": _add(Spec("NonSequentialTimeSeries", ([T0 + H], np.ones(1), "ns"), {})),
    "reserved feature name": _add(sts_spec("x"), features={"name": "x"}),
    "reserved id feature": _add(sts_spec("x"), features={"time_reference": "utc"}),
    "NaN feature": _add(sts_spec("x"), features={"a": float("nan")}),
    "negative zero feature": _add(sts_spec("x"), features={"a": -0.0}),
    "None feature": _add(sts_spec("x"), features={"a": None}),
    "list feature": _add(sts_spec("x"), features={"a": [1]}),
    "not a series": lambda lib, s: s.add_time_series(1, "Gen", cat(lib), np.zeros(3)),
    "Deterministic beside a view": _add(
        Spec("Deterministic", (T0, "PT1H", "PT2H", "PT5H", 2, np.zeros((2, 2)), "base"), {})
    ),
    "bulk with a duplicate": lambda lib, s: s.add_time_series_bulk(
        [
            {
                "owner_id": 9,
                "owner_type": "G",
                "owner_category": cat(lib),
                "time_series": sts_spec(n).build(lib),
            }
            for n in ("fresh", "fresh")
        ]
    ),
    "bulk with a misspelled key": lambda lib, s: s.add_time_series_bulk(
        [
            {
                "owner_id": 9,
                "owner_type": "G",
                "owner_category": cat(lib),
                "time_series": sts_spec("fresh").build(lib),
                "feautres": {},
            }
        ]
    ),
}
STORE_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "transform: interval longer than horizon": lambda lib, s: s.transform_single_time_series(
        "PT2H", "PT3H"
    ),
    "transform: horizon longer than series": lambda lib, s: s.transform_single_time_series(
        "PT11H", "PT1H"
    ),
    "transform: horizon not a multiple": lambda lib, s: s.transform_single_time_series(
        "PT90M", "PT1H"
    ),
    "transform: zero interval, short horizon": lambda lib, s: s.transform_single_time_series(
        "PT3H", "PT0S"
    ),
    "transform: negative interval": lambda lib, s: s.transform_single_time_series("PT3H", "-PT1H"),
    "transform: zero horizon": lambda lib, s: s.transform_single_time_series("PT0S", "PT1H"),
    "transform: calendar horizon": lambda lib, s: s.transform_single_time_series("P1M", "P1M"),
    "transform: bad spelling": lambda lib, s: s.transform_single_time_series("3h", "PT1H"),
    "transform: view with another horizon": lambda lib, s: s.transform_single_time_series(
        "PT4H", "PT2H"
    ),
    "remove a view's source": lambda lib, s: s.remove_by_ids([1]),
    "remove a missing id": lambda lib, s: s.remove_by_ids([3, 999]),
    "remove with only owner_id": lambda lib, s: s.remove_by_ids([3], owner_id=1),
    "remove another owner's series": lambda lib, s: s.remove_by_ids(
        [3], owner_id=424242, owner_category=cat(lib)
    ),
    "read a missing id": lambda lib, s: s.read_by_id(999),
    "read missing among many": lambda lib, s: s.read_by_ids([1, 999]),
    "range of a missing id": lambda lib, s: s.read_by_ids_range([999], (T0, T0 + H)),
    "metadata of a missing id": lambda lib, s: s.list_metadata_by_ids([1, 999]),
    "unknown filter keyword": lambda lib, s: s.list_metadata(nme="x"),
    "unknown type name": lambda lib, s: s.list_metadata(time_series_type="weekly"),
    "bad filter period": lambda lib, s: s.list_metadata(resolution="1h"),
    "None feature filter": lambda lib, s: s.list_metadata(features={"a": None}),
}
REFUSALS = {**PERIOD_CASES, **ELEMENT_CASES, **ADD_CASES, **STORE_CASES}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_same_refusal_and_nothing_written(base: Pair, case: str) -> None:
    before = [store_state(store) for _, store in base.stores()]
    assert before[0] == before[1]
    ref, ours = base.call(REFUSALS[case])
    assert ref[0] == "raised", f"the reference accepted it: {ref}"
    assert ours[0] == "raised", f"we accepted it: {ours}"
    assert ours[1] == ref[1], f"reference: {ref[1]}: {ref[2]}\nours: {ours[1]}: {ours[2]}"
    assert [store_state(store) for _, store in base.stores()] == before
    # the next good add works on both sides and reads back the same
    ids = base.add(sts_spec(f"after {case}", np.arange(3.0) + len(case)))
    assert_same_series(base, ids)


@pytest.mark.parametrize(
    "features",
    [{"name": "x"}, {"a": float("nan")}, {"a": -0.0}, {"year": float("inf")}, {"nope": 1}],
)
@pytest.mark.parametrize("exact", [False, True])
def test_unstorable_feature_filters_match_nothing(base: Pair, features: dict, exact: bool) -> None:
    ref, ours = base.call(lambda lib, s: s.list_metadata(features=features, features_exact=exact))
    assert ref == ours == ("ok", [])
