"""Drop-in cases for the series classes and the element helpers: construction, every
property a caller reads, the Arrow forms, the persistent lookups, and the refusals a
caller's code catches (interop: runs the reference)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from harness import Case, check, params

pytestmark = pytest.mark.interop

T0 = datetime(2024, 1, 1)
H = timedelta(hours=1)
DENVER = ZoneInfo("America/Denver")
LIN = {"proportional": 1.0, "constant": 2.0}
ZONES = {"naive": None, "utc": UTC, "offset": timezone(timedelta(hours=-7)), "denver": DENVER}


def _at(zone: str, *args: int) -> datetime:
    return datetime(2024, 1, 1, *args, tzinfo=ZONES[zone])


def _sts(lib: Any, zone: str = "naive", **kw: Any) -> Any:
    return lib.SingleTimeSeries(_at(zone), "PT1H", np.arange(4.0), "load", **kw)


def _det(lib: Any, zone: str = "naive") -> Any:
    return lib.Deterministic(
        _at(zone), "PT1H", "PT2H", "PT1H", 3, np.arange(6.0).reshape(2, 3), "fc"
    )


KINDS: dict[str, Any] = {
    "single": _sts,
    "single-described": lambda lib, z: _sts(
        lib,
        z,
        units="MW",
        quantity_kind="ActivePower",
        unit_system="natural_units",
        component_field="max_active_power",
        application_data='{"k": 1}',
    ),
    "single-monthly": lambda lib, z: lib.SingleTimeSeries(
        datetime(2024, 1, 31, tzinfo=ZONES[z] if z != "denver" else None),
        "P1M",
        np.arange(3.0),
        "m",
    ),
    "single-tuple": lambda lib, z: lib.SingleTimeSeries(
        _at(z), "PT15M", np.arange(6.0).reshape(3, 2), "t", element_type="tuple(2,f64)"
    ),
    "single-int": lambda lib, z: lib.SingleTimeSeries(_at(z), "PT1H", np.arange(3), "i"),
    "single-bool": lambda lib, z: lib.SingleTimeSeries(
        _at(z), "PT1H", np.array([True, False]), "b"
    ),
    "single-f32": lambda lib, z: lib.SingleTimeSeries(
        _at(z), "PT1H", np.array([1.5, np.nan], np.float32), "f"
    ),
    "nonsequential": lambda lib, z: lib.NonSequentialTimeSeries(
        [_at(z), _at(z, 5), _at(z, 7)], np.array([1.0, -0.0, np.nan]), "ns"
    ),
    "persistent": lambda lib, z: lib.PersistentTimeSeries(
        [_at(z), _at(z, 6)], np.array([[1.0, 2.0], [3.0, 4.0]]), "p", element_type="tuple(2,f64)"
    ),
    "deterministic": _det,
    "probabilistic": lambda lib, z: lib.Probabilistic(
        _at(z), "PT1H", "PT2H", "PT1H", 2, [0.1, 0.9], np.arange(8.0).reshape(2, 2, 2), "pr"
    ),
    "scenarios": lambda lib, z: lib.Scenarios(
        _at(z), "PT1H", "PT2H", "PT1H", 2, np.arange(12.0).reshape(2, 2, 3), "sc"
    ),
    "linear-function": lambda lib, z: lib.SingleTimeSeries.from_values(
        _at(z), "PT1H", [LIN, LIN], "lf"
    ),
    "piecewise": lambda lib, z: lib.NonSequentialTimeSeries.from_values(
        [_at(z), _at(z, 1)],
        [[{"x": 0.0, "y": 1.0}, {"x": 1.0, "y": 2.0}], [{"x": 3.0, "y": 4.0}]],
        "pw",
    ),
}

# Calendar steps cannot run in an IANA zone (both refuse), so that pair is a refusal.
CONSTRUCT = [
    Case(f"construct {kind} {zone}", lambda lib, ctx, k=kind, z=zone: KINDS[k](lib, z))
    for kind in KINDS
    for zone in ZONES
]

REPR = [
    Case(f"repr {kind} {zone}", lambda lib, ctx, k=kind, z=zone: repr(KINDS[k](lib, z)))
    for kind in ("single", "nonsequential", "persistent", "deterministic", "probabilistic")
    for zone in ("naive", "denver")
]

ARROW = [
    Case(f"to_arrow {kind} {zone}", lambda lib, ctx, k=kind, z=zone: KINDS[k](lib, z).to_arrow())
    for kind in ("single", "single-described", "single-tuple", "nonsequential", "persistent")
    for zone in ZONES
]

WINDOWS = [
    Case(
        f"to_arrow_windows {zone}",
        lambda lib, ctx, z=zone: list(_det(lib, z).to_arrow_windows().items()),
    )
    for zone in ZONES
]


def _from_arrow(kind: str) -> Any:
    def call(lib: Any, ctx: Any) -> Any:
        table = KINDS[kind](lib, "utc").to_arrow()
        cls = type(KINDS[kind](lib, "utc"))
        return cls.from_arrow(table)

    return call


FROM_ARROW = [
    Case(f"from_arrow {kind}", _from_arrow(kind))
    for kind in ("single", "single-described", "nonsequential", "persistent")
]

_P = lambda lib: KINDS["persistent"](lib, "utc")  # noqa: E731
LOOKUPS = [
    Case(
        f"persistent {method} at +{hours}h",
        lambda lib, ctx, m=method, h=hours: getattr(_P(lib), m)(_at("utc") + h * H),
    )
    for method in ("value_at", "index_at", "breakpoint_at")
    for hours in (-1, 0, 3, 6, 100)
]

ELEMENTS = [
    Case(
        "encode/decode linear functions",
        lambda lib, ctx: lib.decode_element_values(
            lib.encode_element_values([LIN, LIN], "linear_function"), "linear_function"
        ),
    ),
    Case(
        "encode quadratic",
        lambda lib, ctx: lib.encode_element_values(
            [{"quadratic": 1.0, "proportional": 2.0, "constant": 3.0}], "quadratic_function"
        ),
    ),
    Case(
        "decode tuple",
        lambda lib, ctx: lib.decode_element_values(np.arange(4.0).reshape(2, 2), "tuple(2,f64)"),
    ),
    Case(
        "encode unknown element type",
        lambda lib, ctx: lib.encode_element_values([1.0], "bogus"),
    ),
]

FROM_TIMESTAMPS = [
    Case(
        "from_timestamps hourly",
        lambda lib, ctx: lib.SingleTimeSeries.from_timestamps(
            [T0, T0 + H, T0 + 2 * H], np.zeros(3), "x"
        ),
    ),
    Case(
        "from_timestamps uneven",
        lambda lib, ctx: lib.SingleTimeSeries.from_timestamps(
            [T0, T0 + H, T0 + 3 * H], np.arange(3.0), "x"
        ),
        words=("not on a regular grid", "NonSequentialTimeSeries"),
    ),
]

EQUALITY = [
    Case(
        "equal series",
        lambda lib, ctx: [_sts(lib) == _sts(lib), _sts(lib) != _sts(lib, units="MW")],
    ),
    Case("len of forecast", lambda lib, ctx: len(_det(lib))),
]

_MODEL = "infrastore_sqlite/model.py"
REFUSALS = [
    Case(
        "start is a string",
        lambda lib, ctx: lib.SingleTimeSeries("2024-01-01", "PT1H", np.zeros(2), "x"),
        words=("expected a datetime",),
    ),
    Case(
        "forecast start is an int",
        lambda lib, ctx: lib.Deterministic(5, "PT1H", "PT1H", "PT1H", 1, np.zeros((1, 1)), "x"),
        words=("expected a datetime",),
    ),
    Case(
        "irregular timestamp is a string",
        lambda lib, ctx: lib.NonSequentialTimeSeries(["2024-01-01"], np.zeros(1), "x"),
        words=("expected a datetime",),
    ),
    Case(
        "irregular timestamps unsorted",
        lambda lib, ctx: lib.NonSequentialTimeSeries([T0 + H, T0], np.zeros(2), "x"),
        words=("strictly increasing",),
    ),
    Case(
        "irregular timestamps mixed spellings",
        lambda lib, ctx: lib.NonSequentialTimeSeries(
            [T0, datetime(2024, 1, 2, tzinfo=UTC)], np.zeros(2), "x"
        ),
        words=("disagree about how they are spelled",),
    ),
    Case(
        "irregular count mismatch",
        lambda lib, ctx: lib.NonSequentialTimeSeries([T0], np.zeros(2), "x"),
    ),
    Case(
        "resolution bogus",
        lambda lib, ctx: lib.SingleTimeSeries(T0, "bogus", np.zeros(2), "x"),
        words=("invalid ISO-8601 period 'bogus'",),
    ),
    Case(
        "resolution too fine text",
        lambda lib, ctx: lib.SingleTimeSeries(T0, "PT0.0001S", np.zeros(2), "x"),
        words=("invalid ISO-8601 period 'PT0.0001S'",),
    ),
    Case(
        "name is an int",
        lambda lib, ctx: lib.SingleTimeSeries(T0, "PT1H", np.zeros(2), 3),
    ),
    Case(
        "units is an int",
        lambda lib, ctx: lib.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x", units=3),
    ),
    Case(
        "count is a string",
        lambda lib, ctx: lib.Deterministic(T0, "PT1H", "PT1H", "PT1H", "1", np.zeros((1, 1)), "x"),
    ),
    Case(
        "horizon with microseconds",
        lambda lib, ctx: lib.Deterministic(
            T0, "PT1H", timedelta(hours=1, microseconds=5), "PT1H", 1, np.zeros((1, 1)), "x"
        ),
    ),
    Case(
        "interval with microseconds",
        lambda lib, ctx: lib.Deterministic(
            T0, "PT1H", "PT1H", timedelta(hours=1, microseconds=5), 1, np.zeros((1, 1)), "x"
        ),
    ),
]

# Documented *different* (docs/compatibility.md, at the series constructors): the reference
# builds these and refuses them only at add_time_series; here they are refused when built,
# with the words the reference's add uses, so the object that holds a grid the store cannot
# represent never exists. Each case: the reference builds it; ours refuses, and its message
# carries the words.
SUB_MS = [
    (
        "irregular sub-millisecond built",
        lambda lib: lib.NonSequentialTimeSeries(
            [T0, T0 + timedelta(microseconds=1500)], np.zeros(2), "x"
        ),
        ("timestamp 1", "finer than a millisecond"),
    ),
    (
        "start sub-millisecond built",
        lambda lib: lib.SingleTimeSeries(T0 + timedelta(microseconds=1), "PT1H", np.zeros(2), "x"),
        ("initial_timestamp", "finer than a millisecond"),
    ),
    (
        "resolution 1 microsecond built",
        lambda lib: lib.SingleTimeSeries(T0, timedelta(microseconds=1), np.zeros(2), "x"),
        ("not a positive whole number of milliseconds",),
    ),
    (
        "resolution zero built",
        lambda lib: lib.SingleTimeSeries(T0, "PT0S", np.zeros(2), "x"),
        ("PT0S", "not a positive whole number of milliseconds"),
    ),
]


@pytest.mark.parametrize(("make", "words"), [pytest.param(m, w, id=n) for n, m, w in SUB_MS])
def test_sub_millisecond_series_are_refused_when_built(make: Any, words: tuple) -> None:
    import infrastore

    import infrastore_sqlite

    assert make(infrastore).name == "x"  # the reference builds it (and refuses it on add)
    with pytest.raises(infrastore_sqlite.InvalidParameterError) as caught:
        make(infrastore_sqlite)
    for word in words:
        assert word in str(caught.value)


def _add(make: Any) -> Any:
    def call(lib: Any, ctx: Any) -> Any:
        s = ctx.store()
        return s.get_metadata_by_id(s.add_time_series(1, "G", ctx.comp, make(lib)))

    return call


ADD_REFUSALS = [
    Case(
        "add irregular sub-millisecond",
        _add(
            lambda lib: lib.NonSequentialTimeSeries(
                [T0, T0 + timedelta(microseconds=1500)], np.zeros(2), "x"
            )
        ),
        # ". Truncate": the hint is a sentence of its own after the message
        words=("timestamp 1", "finer than a millisecond", ". Truncate"),
    ),
    Case(
        "add start sub-millisecond",
        _add(
            lambda lib: lib.SingleTimeSeries(
                T0 + timedelta(microseconds=1), "PT1H", np.zeros(2), "x"
            )
        ),
        words=("initial_timestamp", "finer than a millisecond", ". Truncate"),
    ),
    Case(
        "add resolution 1.5 ms",
        _add(lambda lib: lib.SingleTimeSeries(T0, timedelta(microseconds=1500), np.zeros(2), "x")),
        words=("not a positive whole number of milliseconds",),
    ),
    Case(
        "add resolution 1 microsecond",
        _add(lambda lib: lib.SingleTimeSeries(T0, timedelta(microseconds=1), np.zeros(2), "x")),
        words=("not a positive whole number of milliseconds",),
    ),
]


_REFERENCES = [
    "utc",
    "UTC",
    "zoneless",
    "+05:30",
    "-07:00",
    "America/Denver",
    "Etc/GMT+7",
    "bogus",
    "",
]
TIME_REFERENCES = [
    Case(
        f"time_reference {ref!r} on a {'naive' if naive else 'utc'} start",
        lambda lib, ctx, r=ref, n=naive: lib.SingleTimeSeries(
            T0 if n else _at("utc"), "PT1H", np.zeros(2), "x", time_reference=r
        ),
    )
    for ref in _REFERENCES
    for naive in (True, False)
]

_FEATURES = [{"a": 1}, {"a": 1.5}, {"a": True}, {"a": "1"}, {"a": None}, {"b": [1]}, {"": 1}]
FEATURES = [
    Case(
        f"features {features!r}",
        lambda lib, ctx, f=features: (
            lambda s: (
                s.add_time_series(1, "G", ctx.comp, _sts(lib), features=f),
                s.list_metadata(),
                s.list_metadata(features={"a": 1}),
                s.list_metadata(features={"a": "1"}),
                s.list_metadata(features=f, features_exact=True),
            )
        )(ctx.store()),
    )
    for features in _FEATURES
]


def _stored(kind: str, zone: str, read: Any) -> Any:
    """The series added to a store, then what ``read(store, id)`` gives back."""

    def call(lib: Any, ctx: Any) -> Any:
        s = ctx.store()
        i = s.add_time_series(7, "Gen", ctx.comp, KINDS[kind](lib, zone))
        return s.get_metadata_by_id(i), read(s, i)

    return call


_READS: dict[str, Any] = {
    "whole": lambda s, i: s.read_by_id(i),
    "from the second step": lambda s, i: (
        s.read_by_id(i, start_time=s.read_by_id(i).timestamps[1])
        if hasattr(s.read_by_id(i), "timestamps")
        else s.read_by_id(i, start_time=s.read_by_id(i).initial_timestamp, count=1)
    ),
    "listed aware": lambda s, i: s.list_metadata(zoneless=False),
}
# (Most of these agree: tests/store/test_store_interop.py draws many more at random; these
# are the caller's everyday reads, kept few so the harness runs in seconds.)
STORED = [
    Case(f"stored {kind} {zone} {how}", _stored(kind, zone, read))
    for kind in KINDS
    if kind != "single-monthly"
    for zone, reads in (("naive", ("whole", "from the second step")), ("denver", _READS))
    for how, read in _READS.items()
    if how in reads
]


@pytest.mark.parametrize(
    "case",
    params(
        STORED
        + TIME_REFERENCES
        + FEATURES
        + CONSTRUCT
        + REPR
        + ARROW
        + WINDOWS
        + FROM_ARROW
        + LOOKUPS
        + ELEMENTS
        + FROM_TIMESTAMPS
        + EQUALITY
        + REFUSALS
        + ADD_REFUSALS
    ),
)
def test_series_calls_agree(tmp_path, case: Case) -> None:
    check(case, tmp_path)
