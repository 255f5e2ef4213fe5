"""The Python API side by side with the reference (infrastore 0.15.1): the same call on
both packages gives the same result, or both refuse with the same exception class."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
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


# ------------------------------------------------------------------ write_buffer_bytes
def test_write_buffer_bytes_sets_gets_and_refuses_as_the_reference(tmp_path) -> None:
    def session(lib):
        path = tmp_path / f"wb_{lib.__name__}.h5"
        s = lib.Store.create(str(path))
        out: list[Any] = [type(s.write_buffer_bytes).__name__]
        for value in (1 << 30, 1, True):
            s.write_buffer_bytes = value
            out.append(s.write_buffer_bytes)
        for value in (0, -1, 1.5, "10", None, 2**70):
            try:
                s.write_buffer_bytes = value
                out.append(("accepted", value))
            except Exception as exc:
                out.append(type(exc).__name__)
        out.append(s.write_buffer_bytes)  # a refusal changed nothing
        s.write_buffer_bytes = 4096
        s.add_time_series(
            1,
            "Gen",
            lib.OwnerCategory.Component,
            lib.SingleTimeSeries(T0, "PT1H", np.arange(9.0), "x"),
        )
        s.close()
        # not persisted: a reopened store (read-only too) is back to its default
        r = lib.Store.open(str(path), read_only=True)
        out.append(r.write_buffer_bytes == default[lib.__name__])
        r.write_buffer_bytes = 5
        out.append(r.write_buffer_bytes)
        out.append(r.read_by_id(1).data.tolist())
        r.close()
        return out

    default = {}
    for lib in LIBS:
        fresh = lib.Store.create(str(tmp_path / f"d_{lib.__name__}.h5"))
        default[lib.__name__] = fresh.write_buffer_bytes
        fresh.close()
    ours, theirs = both(session)[::-1]
    assert ours == theirs
    assert ours[:4] == ["int", 1 << 30, 1, 1]
    assert ours[4:10] == [
        "InvalidParameterError",
        "OverflowError",
        "TypeError",
        "TypeError",
        "TypeError",
        "OverflowError",
    ]


def test_write_buffer_bytes_bounds_the_writes_queued_ahead(tmp_path, monkeypatch) -> None:
    from infrastore_sqlite.store.arrays import ArrayFile

    seen: list[tuple[int, int]] = []
    real = ArrayFile.write

    def write(self, *args):
        real(self, *args)
        seen.append((self._pending_bytes, self.max_pending_bytes))

    monkeypatch.setattr(ArrayFile, "write", write)
    with infrastore_sqlite.Store.create(tmp_path / "s.h5") as s:
        s.write_buffer_bytes = 2000
        with s.transaction():
            for k in range(30):
                ts = infrastore_sqlite.SingleTimeSeries(T0, "PT1H", np.arange(100.0) + k, "x")
                s.add_time_series(k + 1, "Gen", "Component", ts)  # 800 bytes each
            s.write_buffer_bytes = 1000  # the open transaction's writer follows
            ts = infrastore_sqlite.SingleTimeSeries(T0, "PT1H", np.arange(100.0) - 1, "y")
            s.add_time_series(99, "Gen", "Component", ts)
        assert len(s.list_metadata()) == 31
    assert seen and all(pending <= cap for pending, cap in seen)
    assert {cap for _, cap in seen} == {2000, 1000}


# ------------------------------------------------------------------ init_tracing
TRACING_CASES = [
    "debug",
    "warn,infrastore_core=trace",
    "",
    "INFO",
    "bogus!!=",
    "==",
    "info,foo=bar",
    5,
]


@pytest.mark.parametrize("directive", TRACING_CASES, ids=[repr(c) for c in TRACING_CASES])
def test_init_tracing_accepts_and_refuses_as_the_reference(directive) -> None:
    # Once per process in both, so each call runs in a fresh interpreter.
    script = (
        "import sys, {lib}\n"
        "try:\n"
        "    r = {lib}.init_tracing({arg})\n"
        "    print('ok', r, {lib}.init_tracing('trace'))\n"
        "except Exception as e:\n"
        "    print(type(e).__name__)\n"
    )
    got = []
    for lib in ("infrastore", "infrastore_sqlite"):
        done = subprocess.run(
            [sys.executable, "-c", script.format(lib=lib, arg=repr(directive))],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "RUST_LOG": ""},
        )
        assert done.returncode == 0, done.stderr
        got.append(done.stdout.strip())
    assert got[0] == got[1], got
    assert inspect.signature(infrastore_sqlite.init_tracing).parameters.keys() == {"filter"}


@pytest.mark.parametrize(
    ("directive", "logged"),
    [("debug", True), ("infrastore_core=debug", True), ("warn", False), ("off", False)],
)
def test_init_tracing_logs_the_stores_operations(tmp_path, directive, logged) -> None:
    script = (
        "import numpy as np, infrastore_sqlite as ist\n"
        "from datetime import datetime\n"
        f"ist.init_tracing({directive!r})\n"
        f"with ist.Store.create({str(tmp_path / 's.h5')!r}) as s:\n"
        "    s.add_time_series(1, 'Gen', 'Component',"
        " ist.SingleTimeSeries(datetime(2024, 1, 1), 'PT1H', np.arange(3.0), 'x'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    wrote = [line for line in lines if "committed a write to the store" in line]
    assert bool(wrote) is logged, done.stderr
    if logged:
        assert any("created the store" in line for line in lines)
        assert any("sealed segment" in line and "fsynced" in line for line in lines)
