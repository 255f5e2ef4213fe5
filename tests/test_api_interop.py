"""The Python API side by side with the reference (infrastore 0.15.1): the same call on
both packages gives the same result, or both refuse with the same exception class."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import infrastore
import numpy as np
import pytest

import infrastore_sqlite

pytestmark = pytest.mark.interop

LIBS = (infrastore, infrastore_sqlite)
T0 = datetime(2024, 1, 1)
H = timedelta(hours=1)
LIN = {"proportional": 1.0, "constant": 2.0}


def both(call: Callable[[Any], Any]) -> list[Any]:
    """``call(lib)`` on each package: the results, or the exception class names."""
    out = []
    for lib in LIBS:
        try:
            out.append(call(lib))
        except Exception as exc:  # the class is what is compared
            out.append(type(exc).__name__)
    return out


def test_the_callers_array_is_copied_in_both() -> None:
    def build(lib):
        a = np.arange(3.0)
        s = lib.SingleTimeSeries(T0, "PT1H", a, "x")
        a[0] = 99.0
        return float(s.data[0])

    assert both(build) == [0.0, 0.0]


FROM_VALUES = [
    [LIN, LIN],
    [{"quadratic": 1.0, "proportional": 1.0, "constant": 2.0}],
    [[{"x": 0.0, "y": 1.0}, {"x": 1.0, "y": 2.0}], [], [{"x": 3.0, "y": 4.0}]],
    [[], [{"x": 3.0, "y": 4.0}]],
    [{"x": [0.0, 1.0], "y": [3.0]}, {"x": [0.0], "y": []}],
    [(1.0, 2.0, 3.0), (4.0, 5.0, 6.0)],
    [[1, 2]],
    np.array([[1.0, np.nan]]),
    [1.0, 2.0],
    np.arange(2.0),
    [],
    [[]],
    [[1.0, 2.0], [1.0]],
    [{"x": [0.0, 1.0], "y": [1.0, 2.0]}],
    [None],
]


@pytest.mark.parametrize("values", FROM_VALUES, ids=range(len(FROM_VALUES)))
@pytest.mark.parametrize(
    "element_type",
    [None, "tuple(2,f64)", "linear_function", "piecewise_linear", "f64", "tuple(3,f64)"],
)
def test_from_values_infers_and_asserts_as_the_reference(values, element_type) -> None:
    kw = {} if element_type is None else {"element_type": element_type}

    def build(lib):
        s = lib.SingleTimeSeries.from_values(T0, "PT1H", values, "x", **kw)
        return s.element_type, s.data.shape, s.data.tobytes(), repr(s.decoded_values())

    ours, ref = both(build)[::-1]
    assert ours == ref


@pytest.mark.parametrize(
    ("kind", "head", "values"),
    [
        ("Deterministic", (T0, "PT1H", "PT2H", "PT1H", 3), [LIN] * 6),
        ("Deterministic", (T0, "PT1H", "PT2H", "PT1H", 3), [LIN] * 5),
        ("Deterministic", (T0, "PT1H", "PT2H", "PT1H", 3), [1.0] * 6),
        ("Probabilistic", (T0, "PT1H", "PT2H", "PT1H", 3, [0.1, 0.9]), [[1.0, 2.0]] * 12),
        ("Scenarios", (T0, "PT1H", "PT2H", "PT1H", 3, 2), [[{"x": 1.0, "y": 2.0}]] * 12),
        ("NonSequentialTimeSeries", ([T0, T0 + H],), [LIN, LIN]),
        ("PersistentTimeSeries", ([T0, T0 + H],), [LIN]),
    ],
)
def test_every_from_values_agrees(kind: str, head: tuple, values: list) -> None:
    def build(lib):
        s = getattr(lib, kind).from_values(*head, values, "f")
        return s.element_type, s.data.shape, s.data.tobytes(), len(s)

    ours, ref = both(build)[::-1]
    assert ours == ref


def _pairs(lib) -> list[tuple[Any, Any]]:
    S = lib.SingleTimeSeries
    nan2 = np.frombuffer(np.uint64(0x7FF8000000000001).tobytes(), dtype=np.float64).copy()
    return [
        (S(T0, "PT1H", np.array([np.nan]), "x"), S(T0, "PT1H", np.array([np.nan]), "x")),
        (S(T0, "PT1H", np.array([np.nan]), "x"), S(T0, "PT1H", nan2, "x")),
        (S(T0, "PT1H", np.array([0.0]), "x"), S(T0, "PT1H", np.array([-0.0]), "x")),
        (S(T0, "PT1H", np.array([1.0]), "x"), S(T0, "PT1H", np.array([1.0]), "y")),
        (S(T0, "PT1H", np.zeros(1), "x"), S(T0, "PT1H", np.zeros(1), "x", units="MW")),
        (S(T0, "PT1H", np.zeros(1), "x"), S(T0, "PT60M", np.zeros(1), "x")),
        (S(T0, "PT1H", np.zeros(1), "x"), S(T0, "PT1H", np.zeros(1, np.float32), "x")),
        (S(T0, "PT1H", np.zeros(1), "x"), S(T0, "PT1H", np.zeros(1), "x", time_reference="utc")),
        (S(T0, "PT1H", np.zeros((1, 2)), "x"), S.from_values(T0, "PT1H", [[0.0, 0.0]], "x")),
        (S(T0, "PT1H", np.zeros(1), "x"), lib.NonSequentialTimeSeries([T0], np.zeros(1), "x")),
        (
            lib.Probabilistic(T0, "PT1H", "PT1H", "PT1H", 1, [0.5], np.zeros((1, 1, 1)), "p"),
            lib.Probabilistic(T0, "PT1H", "PT1H", "PT1H", 1, [0.6], np.zeros((1, 1, 1)), "p"),
        ),
        (
            lib.Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, np.zeros((2, 3)), "d"),
            lib.Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, np.zeros((2, 3)), "d"),
        ),
    ]


def test_equality_and_len_agree() -> None:
    ref, ours = (_pairs(lib) for lib in LIBS)
    assert [(a == b, a != b, len(a)) for a, b in ours] == [(a == b, a != b, len(a)) for a, b in ref]
    assert both(lambda lib: hash(_pairs(lib)[0][0])) == ["TypeError", "TypeError"]


def test_transaction_binds_the_store_and_reenters(tmp_path) -> None:
    def run(lib):
        store = lib.Store.create(str(tmp_path / f"{lib.__name__}.h5"))
        ts = lib.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x")
        tx = store.transaction()
        with tx as bound:
            same = bound is store
            bound.add_time_series(1, "G", lib.OwnerCategory.Component, ts)
        with tx:
            with tx:
                nested = store.in_transaction
            store.add_time_series(2, "G", lib.OwnerCategory.Component, ts)
        owners = sorted(m["owner_id"] for m in store.list_metadata())
        store.close()
        return same, nested, owners

    assert both(run) == [(True, True, [1, 2])] * 2


@pytest.mark.parametrize(
    ("method", "offset"),
    [(m, o) for m in ("value_at", "index_at", "breakpoint_at") for o in (-1, 0, 1, 5)],
)
def test_persistent_lookups_agree(method: str, offset: int) -> None:
    def call(lib):
        p = lib.PersistentTimeSeries([T0, T0 + 2 * H], np.array([[1.0, 2.0], [3.0, 4.0]]), "p")
        got = getattr(p, method)(at=T0 + offset * H)
        return got.tolist() if isinstance(got, np.ndarray) else got

    ours, ref = both(call)[::-1]
    assert ours == ref


@pytest.mark.parametrize(
    ("stamps", "n"),
    [
        ([T0, T0 + H, T0 + 2 * H], 2),
        ([T0, datetime(2024, 1, 1, 1, tzinfo=UTC)], 2),
        ([T0, datetime(2024, 3, 1), datetime(2024, 5, 1)], 3),
        ([datetime(2024, 1, 31), datetime(2024, 2, 29), datetime(2024, 3, 31)], 3),
        ([T0, datetime(2025, 1, 1)], 2),
        ([T0, T0 + H, T0 + 3 * H], 3),
        ([T0], 1),
        ([T0, T0 + timedelta(seconds=90)], 2),
    ],
)
def test_from_timestamps_agrees(stamps: list, n: int) -> None:
    def build(lib):
        s = lib.SingleTimeSeries.from_timestamps(stamps, np.zeros(n), "x")
        return s.resolution, s.initial_timestamp, len(s)

    ours, ref = both(build)[::-1]
    assert ours == ref


WRONG_TYPES = {
    "read_by_id": lambda lib, s, ts: s.read_by_id("a"),
    "read_by_ids": lambda lib, s, ts: s.read_by_ids(["a"]),
    "remove_by_ids": lambda lib, s, ts: s.remove_by_ids("a"),
    "get_metadata_by_id": lambda lib, s, ts: s.get_metadata_by_id("a"),
    "owner_id str": lambda lib, s, ts: s.add_time_series("1", "t", lib.OwnerCategory.Component, ts),
    "owner_id float": lambda lib, s, ts: s.add_time_series(
        1.5, "t", lib.OwnerCategory.Component, ts
    ),
    "owner_type int": lambda lib, s, ts: s.add_time_series(1, 2, lib.OwnerCategory.Component, ts),
    "features list": lambda lib, s, ts: s.add_time_series(
        1, "t", lib.OwnerCategory.Component, ts, features=[1]
    ),
    "filter owner_id": lambda lib, s, ts: s.list_metadata(owner_id="1"),
    "name int": lambda lib, s, ts: lib.SingleTimeSeries(T0, "PT1H", np.zeros(2), 3),
    "resolution int": lambda lib, s, ts: lib.SingleTimeSeries(T0, 3, np.zeros(2), "x"),
    "units int": lambda lib, s, ts: lib.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x", units=3),
    "count str": lambda lib, s, ts: lib.Deterministic(
        T0, "PT1H", "PT1H", "PT1H", "1", np.zeros((1, 1)), "x"
    ),
    "transform horizon int": lambda lib, s, ts: s.transform_single_time_series(1, "PT1H"),
}


@pytest.mark.parametrize("call", list(WRONG_TYPES))
def test_a_wrongly_typed_argument_is_a_type_error_in_both(tmp_path, call: str) -> None:
    caught = []
    for lib in LIBS:
        store = lib.Store.create(str(tmp_path / f"{lib.__name__}.h5"))
        ts = lib.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x")
        with pytest.raises(TypeError) as info:
            WRONG_TYPES[call](lib, store, ts)
        caught.append(info.value)
        assert store.list_metadata() == []  # nothing written
        store.close()
    # ours is also an InvalidParameterError, so `except InvalidParameterError` still works
    assert isinstance(caught[1], infrastore_sqlite.InvalidParameterError)
