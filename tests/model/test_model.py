"""The series value classes: constructors, validation, properties (no store involved)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from infrastore_sqlite import (
    Deterministic,
    InvalidParameterError,
    NonSequentialTimeSeries,
    OwnerCategory,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
    TimeSeriesType,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)


# --------------------------------------------------------------------------- enums
def test_type_python_ints_and_catalog_codes_differ_as_in_the_reference() -> None:
    python = {t.name: int(t) for t in TimeSeriesType}
    assert python == {
        "SingleTimeSeries": 0,
        "NonSequentialTimeSeries": 1,
        "PersistentTimeSeries": 2,
        "Deterministic": 3,
        "DeterministicSingleTimeSeries": 4,
        "Probabilistic": 5,
        "Scenarios": 6,
    }
    codes = {t.name: t.catalog_code for t in TimeSeriesType}
    assert codes == {
        "SingleTimeSeries": 0,
        "NonSequentialTimeSeries": 1,
        "Deterministic": 2,
        "DeterministicSingleTimeSeries": 3,
        "Probabilistic": 4,
        "Scenarios": 5,
        "PersistentTimeSeries": 6,
    }
    for t in TimeSeriesType:
        assert TimeSeriesType.from_catalog_code(t.catalog_code) is t


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        ("SingleTimeSeries", TimeSeriesType.SingleTimeSeries),
        ("single", TimeSeriesType.SingleTimeSeries),
        ("non_sequential", TimeSeriesType.NonSequentialTimeSeries),
        ("deterministic_single", TimeSeriesType.DeterministicSingleTimeSeries),
        ("PROBABILISTIC", TimeSeriesType.Probabilistic),
        ("persistent", TimeSeriesType.PersistentTimeSeries),
        (5, TimeSeriesType.Probabilistic),
        (TimeSeriesType.Scenarios, TimeSeriesType.Scenarios),
    ],
)
def test_type_coerce(spelling: object, expected: TimeSeriesType) -> None:
    assert TimeSeriesType.coerce(spelling) is expected


def test_type_coerce_refuses_unknown_names_listing_the_valid_ones() -> None:
    with pytest.raises(
        InvalidParameterError, match=r"unknown time_series_type 'weekly'.*Scenarios"
    ):
        TimeSeriesType.coerce("weekly")


def test_type_shape_facts() -> None:
    lead = {t.name: t.leading_dims for t in TimeSeriesType}
    assert lead == {
        "SingleTimeSeries": 1,
        "NonSequentialTimeSeries": 1,
        "PersistentTimeSeries": 1,
        "Deterministic": 2,
        "DeterministicSingleTimeSeries": 2,
        "Probabilistic": 3,
        "Scenarios": 3,
    }
    assert {t.name for t in TimeSeriesType if t.is_forecast} == {
        "Deterministic",
        "DeterministicSingleTimeSeries",
        "Probabilistic",
        "Scenarios",
    }
    assert {t.name for t in TimeSeriesType if t.is_irregular} == {
        "NonSequentialTimeSeries",
        "PersistentTimeSeries",
    }


def test_owner_category() -> None:
    assert int(OwnerCategory.Component) == 0
    assert int(OwnerCategory.SupplementalAttribute) == 1
    assert OwnerCategory.coerce("supplemental_attribute") is OwnerCategory.SupplementalAttribute
    assert OwnerCategory.coerce(0) is OwnerCategory.Component
    for bad in ("Comp", 2, None, 1.0):
        with pytest.raises(InvalidParameterError, match="owner_category"):
            OwnerCategory.coerce(bad)


# --------------------------------------------------------------------------- SingleTimeSeries
def test_single_time_series_properties() -> None:
    ts = SingleTimeSeries(
        T0, "PT60M", np.arange(4.0), "load", units="MW", unit_system="natural_units"
    )
    assert ts.name == "load"
    assert ts.resolution == "PT1H"  # canonical spelling
    assert ts.length == 4
    assert ts.initial_timestamp == T0
    assert ts.time_reference == "utc"
    assert ts.timestamps == [T0 + k * H for k in range(4)]
    assert ts.element_type == "f64"
    assert ts.element_shape == ()
    assert ts.units == "MW"
    assert ts.unit_system == "natural_units"
    assert ts.quantity_kind is None
    assert ts.decoded_values() is None  # a method, as in the reference; scalars decode to None


def test_data_is_a_fresh_copy_of_a_normalized_array() -> None:
    be = np.arange(6, dtype=">f8").reshape(3, 2)
    source = np.asfortranarray(be)
    ts = SingleTimeSeries(T0, "PT1H", source, "x")
    assert ts.data.dtype == np.dtype("<f8")
    assert ts.data.flags.c_contiguous
    np.testing.assert_array_equal(ts.data, be)
    edited = ts.data
    edited[0, 0] = 5.0  # writable, as the reference's, and the series is untouched
    source[1, 1] = 7.0
    assert ts.data[0, 0] == 0.0 and ts.data[1, 1] == 3.0


def test_list_input_gets_numpy_default_dtype() -> None:
    assert SingleTimeSeries(T0, "PT1H", [1.0, 2.0], "x").element_type == "f64"
    assert SingleTimeSeries(T0, "PT1H", [1, 2], "x").element_type == "i64"


@pytest.mark.parametrize(
    ("initial", "reference"),
    [
        (T0, "utc"),
        (datetime(2024, 1, 1), "zoneless"),
        (datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))), "+05:30"),
        (datetime(2024, 1, 1, tzinfo=timezone(-timedelta(hours=7))), "-07:00"),
        (datetime(2024, 1, 1, tzinfo=ZoneInfo("America/Denver")), "America/Denver"),
    ],
)
def test_time_reference_is_inferred_from_the_datetime(initial: datetime, reference: str) -> None:
    ts = SingleTimeSeries(initial, "PT1H", np.zeros(2), "x")
    assert ts.time_reference == reference
    assert ts.initial_timestamp == initial
    assert ts.initial_timestamp.utcoffset() == initial.utcoffset()


def test_explicit_time_reference_is_normalized() -> None:
    ts = SingleTimeSeries(T0, "PT1H", np.zeros(2), "x", time_reference="-0700")
    assert ts.time_reference == "-07:00"
    naive = SingleTimeSeries(
        datetime(2024, 1, 1, 5), "PT1H", np.zeros(2), "x", time_reference="utc"
    )
    assert naive.initial_timestamp == datetime(2024, 1, 1, 5, tzinfo=UTC)


def test_sub_millisecond_timedelta_resolution_is_refused() -> None:
    # Truncating 1500 µs to PT0.001S would put every value on another grid, silently.
    with pytest.raises(InvalidParameterError, match="not a positive whole number of millis"):
        SingleTimeSeries(T0, timedelta(microseconds=1500), np.zeros(2), "x")
    assert SingleTimeSeries(T0, timedelta(milliseconds=2), np.zeros(2), "x").resolution == (
        "PT0.002S"
    )


def test_calendar_resolution_clamps_to_month_end() -> None:
    ts = SingleTimeSeries(datetime(2024, 1, 31, tzinfo=UTC), "P1M", np.zeros(4), "x")
    assert [t.date().isoformat() for t in ts.timestamps] == [
        "2024-01-31",
        "2024-02-29",
        "2024-03-31",
        "2024-04-30",
    ]


def test_from_timestamps_infers_the_resolution() -> None:
    fixed = SingleTimeSeries.from_timestamps([T0, T0 + 15 * timedelta(minutes=1)], [1.0, 2.0], "x")
    assert fixed.resolution == "PT15M"
    months = [datetime(2024, m, 1, tzinfo=UTC) for m in (1, 2, 3)]
    assert SingleTimeSeries.from_timestamps(months, [1.0, 2.0, 3.0], "x").resolution == "P1M"
    with pytest.raises(InvalidParameterError, match="not on a regular grid"):
        SingleTimeSeries.from_timestamps([T0, T0 + H, T0 + 3 * H], [1.0, 2.0, 3.0], "x")
    with pytest.raises(InvalidParameterError, match="at least two"):
        SingleTimeSeries.from_timestamps([T0], [1.0], "x")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"resolution": "PT0S"}, "resolution PT0S is not a positive whole number"),
        ({"resolution": "-PT1H"}, "resolution -PT1H is not a positive whole number"),
        ({"resolution": "1h"}, "did you mean 'PT1H'"),
        ({"initial": T0 + timedelta(microseconds=5)}, "finer than a millisecond"),
        ({"initial": "2024-01-01T00:00:00Z"}, "expected a datetime, got str"),
        ({"time_reference": "bad zone!"}, "not shaped like an IANA name"),
        ({"time_reference": "America/Denver", "resolution": "P1D"}, "P1D resolution cannot"),
        ({"time_reference": "America/Denver", "resolution": "P1M"}, "P1M resolution cannot"),
        ({"name": ""}, "non-empty string name"),
        ({"data": np.float64(3.0)}, "at least 1 dimension"),
        ({"data": np.zeros(3, dtype=np.float16)}, "unsupported dtype 'float16'"),
        ({"data": np.zeros(3, dtype=complex)}, "unsupported dtype"),
        ({"element_type": "i64"}, "does not match the data's dtype f64"),
        ({"element_type": "float64"}, 'unknown element_type "float64"'),
        ({"units": 5}, "units must be a string"),
        ({"unit_system": "si"}, 'unknown unit_system "si"'),
    ],
)
def test_single_time_series_refusals(kwargs: dict, message: str) -> None:
    initial = kwargs.pop("initial", T0)
    resolution = kwargs.pop("resolution", "PT1H")
    data = kwargs.pop("data", np.zeros(3))
    name = kwargs.pop("name", "x")
    with pytest.raises(InvalidParameterError, match=message):
        SingleTimeSeries(initial, resolution, data, name, **kwargs)


def test_sub_minute_offset_is_refused() -> None:
    odd = timezone(timedelta(seconds=30))
    with pytest.raises(InvalidParameterError, match="whole number of minutes"):
        SingleTimeSeries(datetime(2024, 1, 1, tzinfo=odd), "PT1H", np.zeros(2), "x")


def test_iana_reference_allows_sub_day_fixed_resolutions() -> None:
    ts = SingleTimeSeries(T0, "PT1H", np.zeros(2), "x", time_reference="America/Denver")
    assert ts.time_reference == "America/Denver"


# --------------------------------------------------------------------------- element types
@pytest.mark.parametrize(
    ("data", "element_type", "message"),
    [
        (np.zeros((3, 2)), "tuple(3,f64)", r"needs per-step element dims \[3\], got \[2\]"),
        (np.zeros((3, 2)), "piecewise_linear", "width is odd"),
        (np.zeros((3, 5)), "piecewise_step", "row width 5"),
        (np.array([[3.0, 0, 0]]), "piecewise_linear", "declares 3 points, which needs 7 slots"),
        (np.array([[0.5, 0, 0]]), "piecewise_linear", "not a non-negative whole number"),
        (np.array([[-1.0, 0, 0]]), "piecewise_linear", "not a non-negative whole number"),
        (np.array([[np.nan, 0, 0]]), "piecewise_linear", "leading count is NaN"),
        (np.array([[2.0, 0]]), "piecewise_step", "declares 2 points, which needs 4 slots"),
        (np.zeros((3, 2), dtype=np.int64), "linear_function", "holds f64 values"),
        (np.zeros((3, 3)), "linear_function", r"needs per-step element dims \[2\], got \[3\]"),
        (np.zeros(3), "quadratic_function", r"needs per-step element dims \[3\], got \[\]"),
    ],
)
def test_element_type_refusals(data: np.ndarray, element_type: str, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        SingleTimeSeries(T0, "PT1H", data, "x", element_type=element_type)


def test_element_type_spelling_is_canonicalized() -> None:
    ts = SingleTimeSeries(T0, "PT1H", np.zeros((2, 3)), "x", element_type="tuple( 3 ,f64 )")
    assert ts.element_type == "tuple(3,f64)"
    assert ts.decoded_values() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_shaped_scalar_elements_keep_their_per_step_shape() -> None:
    ts = SingleTimeSeries(T0, "PT1H", np.zeros((4, 2, 3), dtype=np.int16), "x")
    assert ts.element_type == "i16"
    assert ts.element_shape == (2, 3)
    assert ts.length == 4


def test_from_values_encodes_composites() -> None:
    lin = SingleTimeSeries.from_values(
        T0,
        "PT1H",
        [{"proportional": 2.0, "constant": 1.0}, {"proportional": 3.0, "constant": 0.0}],
        "lin",
        element_type="linear_function",
    )
    np.testing.assert_array_equal(lin.data, [[2.0, 1.0], [3.0, 0.0]])
    pwl = SingleTimeSeries.from_values(
        T0,
        "PT1H",
        [[{"x": 0.0, "y": 1.0}, {"x": 2.0, "y": 3.0}], [], [{"x": 5.0, "y": 6.0}]],
        "pwl",
        element_type="piecewise_linear",
    )
    # width = 1 + 2 * (max points over the whole array); rows zero-padded
    np.testing.assert_array_equal(pwl.data, [[2, 0, 1, 2, 3], [0, 0, 0, 0, 0], [1, 5, 6, 0, 0]])
    assert pwl.decoded_values() == [
        [{"x": 0.0, "y": 1.0}, {"x": 2.0, "y": 3.0}],
        [],
        [{"x": 5.0, "y": 6.0}],
    ]
    step = SingleTimeSeries.from_values(
        T0,
        "PT1H",
        [{"x": [0.0, 1.0], "y": [5.0]}, {"x": [], "y": []}],
        "s",
        element_type="piecewise_step",
    )
    np.testing.assert_array_equal(step.data, [[2, 0, 1, 5], [0, 0, 0, 0]])


# --------------------------------------------------------------------------- irregular types
def test_non_sequential_time_series() -> None:
    stamps = [T0, T0 + 2 * H, T0 + 5 * H]
    ts = NonSequentialTimeSeries(stamps, np.array([1, 2, 3], dtype=np.int32), "ns")
    assert ts.length == 3
    assert ts.timestamps == stamps
    assert ts.element_type == "i32"
    assert ts.time_reference == "utc"
    np.testing.assert_array_equal(ts.timestamps_ms, [1704067200000, 1704074400000, 1704085200000])


@pytest.mark.parametrize("cls", [NonSequentialTimeSeries, PersistentTimeSeries])
def test_irregular_refusals(cls: type) -> None:
    with pytest.raises(InvalidParameterError, match="strictly increasing"):
        cls([T0, T0], np.zeros(2), "x")
    with pytest.raises(InvalidParameterError, match="strictly increasing"):
        cls([T0 + H, T0], np.zeros(2), "x")
    with pytest.raises(InvalidParameterError, match="2 timestamps but data has 3 steps"):
        cls([T0, T0 + H], np.zeros(3), "x")
    with pytest.raises(InvalidParameterError, match="finer than a millisecond"):
        cls([T0, T0 + timedelta(microseconds=1500)], np.zeros(2), "x")


@pytest.mark.parametrize(
    "second",
    [
        datetime(2024, 1, 1, 3),
        datetime(2024, 1, 1, 3, tzinfo=timezone(timedelta(hours=2))),
        datetime(2024, 1, 1, 3, tzinfo=ZoneInfo("UTC")),
    ],
)
def test_irregular_timestamps_must_share_one_spelling(second: datetime) -> None:
    with pytest.raises(InvalidParameterError, match="disagree about how they are spelled"):
        NonSequentialTimeSeries([T0, second], np.zeros(2), "x")
    with pytest.raises(InvalidParameterError, match="element 0 is utc but element 1"):
        PersistentTimeSeries([T0, second], np.zeros(2), "x", time_reference="utc")


def test_same_zone_different_offsets_is_one_spelling() -> None:
    denver = ZoneInfo("America/Denver")
    stamps = [datetime(2024, 1, 1, 3, tzinfo=denver), datetime(2024, 7, 1, 3, tzinfo=denver)]
    ts = NonSequentialTimeSeries(stamps, np.zeros(2), "x")
    assert ts.time_reference == "America/Denver"
    assert [t.utcoffset() for t in ts.timestamps] == [-7 * H, -6 * H]


def test_empty_irregular_series_has_an_unspecified_reference() -> None:
    for cls in (NonSequentialTimeSeries, PersistentTimeSeries):
        ts = cls([], np.zeros(0), "x")
        assert ts.length == 0
        assert ts.time_reference is None


def test_persistent_step_function() -> None:
    ts = PersistentTimeSeries([T0, T0 + 2 * H], np.array([10.0, 20.0]), "p")
    for method in (ts.index_at, ts.value_at, ts.breakpoint_at):
        with pytest.raises(InvalidParameterError, match="before the first breakpoint"):
            method(T0 - H)
    assert ts.index_at(T0) == 0
    assert ts.value_at(T0 + H) == 10.0
    assert ts.breakpoint_at(T0 + H) == T0
    assert ts.value_at(T0 + 2 * H) == 20.0
    assert ts.value_at(T0 + 1000 * H) == 20.0  # holds forever after the last breakpoint


# --------------------------------------------------------------------------- forecasts
def test_deterministic_layout() -> None:
    data = np.arange(6.0).reshape(2, 3)  # [H=2, count=3]
    d = Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, data, "d")
    assert (d.horizon, d.interval, d.count, d.steps) == ("PT2H", "PT1H", 3, 2)
    np.testing.assert_array_equal(
        d.issue_times_ms(), [1704067200000 + k * 3600000 for k in range(3)]
    )
    # from_values: flat entry i*count + j is window j step i
    rows = [[v, -v] for v in data.ravel()]
    flat = Deterministic.from_values(T0, "PT1H", "PT2H", "PT1H", 3, rows, "d")
    assert flat.element_type == "tuple(2,f64)"
    np.testing.assert_array_equal(flat.data[..., 0], data)
    with pytest.raises(InvalidParameterError, match="is `data=` on the constructor"):
        Deterministic.from_values(T0, "PT1H", "PT2H", "PT1H", 3, data.ravel(), "d")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("PT1H", "PT2H", "PT1H", 4, np.zeros((4, 2))), r"expected shape \[2, 4\], got \[4, 2\]"),
        (("PT2H", "PT3H", "PT1H", 1, np.zeros((1, 1))), "not a whole multiple"),
        (("PT1H", "PT2H", "PT0S", 2, np.zeros((2, 2))), "PT0S only for a single window"),
        (("PT1H", "PT2H", "-PT1H", 1, np.zeros((2, 1))), "interval must be positive"),
        (
            ("PT1H", "PT0S", "PT1H", 1, np.zeros((0, 1))),
            "horizon PT0S is not a positive whole number",
        ),
        (("PT1H", "PT2H", "PT1H", -1, np.zeros((2, 0))), "count must be a non-negative integer"),
        (("PT1H", "PT2H", "PT1H", 1.0, np.zeros((2, 1))), "count must be a non-negative integer"),
        (("PT1H", "P1M", "PT1H", 1, np.zeros((2, 1))), "different kinds of period"),
        (("PT1H", "PT2H", "PT1H", 1, np.zeros(2)), "at least 2 dimension"),
    ],
)
def test_deterministic_refusals(args: tuple, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        Deterministic(T0, *args, "d")


def test_single_window_forecast_may_have_zero_interval() -> None:
    d = Deterministic(T0, "PT1H", "PT2H", "PT0S", 1, np.zeros((2, 1)), "d")
    assert d.interval == "PT0S"


def test_deterministic_refuses_unknown_keywords() -> None:
    with pytest.raises(TypeError, match="feautres"):
        Deterministic(T0, "PT1H", "PT1H", "PT1H", 1, np.zeros((1, 1)), "d", feautres={})


def test_probabilistic_layout_and_refusals() -> None:
    data = np.arange(12.0).reshape(2, 2, 3)  # [P, H, count]
    p = Probabilistic(T0, "PT1H", "PT2H", "PT1H", 3, [0.1, 0.9], data, "p")
    assert p.percentiles == [0.1, 0.9]
    rows = [[v] for v in data.ravel()]
    flat = Probabilistic.from_values(T0, "PT1H", "PT2H", "PT1H", 3, [0.1, 0.9], rows, "p")
    np.testing.assert_array_equal(flat.data[..., 0], data)  # entry (p*H + i)*count + j
    for pct, message in (
        ([], "must not be empty"),
        ([0.5, 0.5], "strictly increasing"),
        ([0.9, 0.1], "strictly increasing"),
        ([0.1, float("nan")], "finite"),
    ):
        with pytest.raises(InvalidParameterError, match=message):
            Probabilistic(T0, "PT1H", "PT2H", "PT1H", 3, pct, np.zeros((len(pct), 2, 3)), "p")
    with pytest.raises(InvalidParameterError, match=r"expected shape \[1, 2, 3\]"):
        Probabilistic(T0, "PT1H", "PT2H", "PT1H", 3, [0.5], data, "p")


def test_scenarios_layout() -> None:
    data = np.arange(24.0).reshape(4, 2, 3)  # [S, H, count]
    s = Scenarios(T0, "PT1H", "PT2H", "PT1H", 3, data, "s")
    assert s.scenario_count == 4
    rows = [[v] for v in data.ravel()]
    flat = Scenarios.from_values(T0, "PT1H", "PT2H", "PT1H", 3, 4, rows, "s")
    np.testing.assert_array_equal(flat.data[..., 0], data)
    with pytest.raises(InvalidParameterError, match=r"23 decoded timesteps .* \(24 expected\)"):
        Scenarios.from_values(T0, "PT1H", "PT2H", "PT1H", 3, 4, rows[:23], "s")
    with pytest.raises(InvalidParameterError, match=r"expected shape \[4, 2, 3\], got \[4, 3, 2\]"):
        Scenarios(T0, "PT1H", "PT2H", "PT1H", 3, np.zeros((4, 3, 2)), "s")


def test_forecast_with_composite_elements() -> None:
    data = np.zeros((2, 3, 3))  # [H, count, 3] quadratic rows
    data[..., 0] = 1.0
    d = Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, data, "q", element_type="quadratic_function")
    assert d.element_shape == (3,)
    assert d.decoded_values()[0] == {"quadratic": 1.0, "proportional": 0.0, "constant": 0.0}
    assert len(d.decoded_values()) == 6


def test_forecast_with_calendar_interval_and_iana_reference_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="P1D interval cannot"):
        Deterministic(
            T0, "PT1H", "P2D", "P1D", 2, np.zeros((48, 2)), "d", time_reference="America/Denver"
        )
    # the horizon is unrestricted
    Deterministic(
        T0, "PT1H", "P2D", "PT12H", 2, np.zeros((48, 2)), "d", time_reference="Europe/Paris"
    )
