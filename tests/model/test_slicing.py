"""Clipping series to a half-open time range and to an exact read window.

The range semantics are the reference's ``read_by_ids_range`` (peer-contract §13.2); the
window semantics are ``read_by_id(start_time=, len=, count=)``. Both are tested here on
series objects, without a store; the store and the interop modules test them end to end.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from infrastore_sqlite import (
    Deterministic,
    InvalidParameterError,
    NonSequentialTimeSeries,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
)
from infrastore_sqlite.model.slicing import slice_range, slice_window

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)


def sts(n: int = 10, res: str = "PT1H", start: datetime = T0) -> SingleTimeSeries:
    return SingleTimeSeries(start, res, np.arange(float(n)), "s")


def det(count: int = 4) -> Deterministic:
    # 2 steps of 1 h, windows every 3 h: window j issued at T0 + 3j h
    return Deterministic(
        T0, "PT1H", "PT2H", "PT3H", count, np.arange(2.0 * count).reshape(2, count), "d"
    )


def rng(series, a: float, b: float):
    return slice_range(series, (T0 + a * H, T0 + b * H), "'x'")


# --------------------------------------------------------------------------- SingleTimeSeries ranges
@pytest.mark.parametrize(
    ("a", "b", "values", "anchor"),
    [
        (1.5, 4, [1, 2, 3], 1),  # start floored to the grid, end exclusive
        (2, 4, [2, 3], 2),
        (-5, 40, list(range(10)), 0),
        (-1, 0.5, [0], 0),
        (1.5, 1.5, [1], 1),  # an empty range inside a step still overlaps that step
        (9.5, 9.5, [9], 9),
        # empty results are anchored where the range begins, clamped to the series
        (2, 2, [], 2),
        (-5, -3, [], 0),
        (-5, 0, [], 0),
        (10, 11, [], 10),
        (40, 50, [], 10),
    ],
)
def test_single_time_series_range(a: float, b: float, values: list, anchor: int) -> None:
    out = rng(sts(), a, b)
    assert out.data.tolist() == values
    assert out.initial_timestamp == T0 + anchor * H
    assert out.resolution == "PT1H"
    assert out.length == len(values)


def test_calendar_range_keeps_overlapping_months() -> None:
    s = sts(10, "P1M")  # Jan .. Oct 2024
    out = slice_range(
        s, (datetime(2024, 3, 15, tzinfo=UTC), datetime(2024, 4, 15, tzinfo=UTC)), "x"
    )
    assert out.data.tolist() == [2.0, 3.0]
    assert out.initial_timestamp == datetime(2024, 3, 1, tzinfo=UTC)
    after = slice_range(
        s, (datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC)), "x"
    )
    assert after.length == 0
    assert after.initial_timestamp == datetime(2024, 11, 1, tzinfo=UTC)


def test_range_slices_are_independent_copies() -> None:
    s = sts()
    out = rng(s, 2, 5)
    assert out.data.flags.c_contiguous
    assert s.data.tolist() == list(range(10))  # the source is untouched
    assert out is not s


def test_range_refusals() -> None:
    s = sts()
    with pytest.raises(InvalidParameterError, match="end < start"):
        rng(s, 4, 2)
    zoneless = sts(start=datetime(2024, 1, 1))
    with pytest.raises(InvalidParameterError, match="is zoneless") as info:
        slice_range(zoneless, (T0, T0 + H), "'s'")
    # One message, two spellings of the way out.
    assert "zoneless=False" in str(info.value)
    assert "--zoned" in info.value.render("cli")
    assert "zoneless=False" not in info.value.render("cli")
    with pytest.raises(InvalidParameterError, match="pair of datetimes"):
        slice_range(s, T0, "'s'")
    with pytest.raises(InvalidParameterError, match="must be a datetime"):
        slice_range(s, ("2024-01-01", T0), "'s'")


def test_zoneless_series_takes_naive_bounds() -> None:
    zoneless = sts(start=datetime(2024, 1, 1))
    out = slice_range(zoneless, (datetime(2024, 1, 1, 2), datetime(2024, 1, 1, 4)), "x")
    assert out.data.tolist() == [2.0, 3.0]
    assert out.initial_timestamp == datetime(2024, 1, 1, 2)


# --------------------------------------------------------------------------- irregular ranges
def test_non_sequential_range_is_half_open() -> None:
    ns = NonSequentialTimeSeries([T0, T0 + 2 * H, T0 + 5 * H], np.array([0.0, 1.0, 2.0]), "n")
    out = rng(ns, 1, 5)
    assert out.data.tolist() == [1.0]
    assert out.timestamps == [T0 + 2 * H]
    assert rng(ns, 0, 5.001).timestamps == [T0, T0 + 2 * H, T0 + 5 * H]
    assert rng(ns, 6, 7).length == 0


def test_persistent_range_keeps_the_breakpoint_in_force() -> None:
    p = PersistentTimeSeries([T0, T0 + 2 * H, T0 + 5 * H], np.array([0.0, 1.0, 2.0]), "p")
    out = rng(p, 3, 6)
    assert out.data.tolist() == [1.0, 2.0]
    assert out.timestamps == [T0 + 2 * H, T0 + 5 * H]  # the breakpoint keeps its own time
    assert rng(p, 2, 6).timestamps == [T0 + 2 * H, T0 + 5 * H]
    assert rng(p, 7, 8).timestamps == [T0 + 5 * H]  # after the last: the last holds
    with pytest.raises(InvalidParameterError, match="before the first breakpoint"):
        rng(p, -1, 6)
    empty = PersistentTimeSeries([], np.zeros(0), "e")
    with pytest.raises(InvalidParameterError, match="before the first breakpoint"):
        rng(empty, 0, 1)


# --------------------------------------------------------------------------- forecast ranges
@pytest.mark.parametrize(
    ("a", "b", "windows"),
    [
        (3, 7, [1, 2]),
        (3, 7.5, [1, 2]),
        (3, 6, [1]),  # end exclusive on issue times
        (-3, 4, [0, 1]),  # aligned start before the first window clamps to it
        (-1, 4, [0, 1]),
        (0, 100, [0, 1, 2, 3]),
        (3, 3, []),
    ],
)
def test_forecast_range_keeps_whole_windows(a: float, b: float, windows: list) -> None:
    d = det()
    out = rng(d, a, b)
    assert out.count == len(windows)
    np.testing.assert_array_equal(out.data, d.data[:, windows])
    if windows:
        assert out.initial_timestamp == T0 + 3 * windows[0] * H
    assert out.interval == "PT3H"


def test_forecast_range_refusals() -> None:
    d = det()
    with pytest.raises(InvalidParameterError, match="must align to a window boundary"):
        rng(d, 1, 7)
    with pytest.raises(InvalidParameterError, match="resolves to window index 4, but only 4"):
        rng(d, 12, 14)
    with pytest.raises(InvalidParameterError, match="resolves to window index 5, but only 4"):
        rng(d, 15, 18)
    with pytest.raises(InvalidParameterError, match="resolves to window index 0, but only 0"):
        rng(det(0), 0, 3)


def test_lane_forecasts_slice_the_window_axis() -> None:
    p = Probabilistic(
        T0, "PT1H", "PT2H", "PT3H", 4, [0.1, 0.5], np.arange(16.0).reshape(2, 2, 4), "p"
    )
    out = rng(p, 3, 9)
    np.testing.assert_array_equal(out.data, p.data[:, :, 1:3])
    assert out.percentiles == [0.1, 0.5]
    s = Scenarios(T0, "PT1H", "PT2H", "PT3H", 4, np.arange(24.0).reshape(3, 2, 4), "s")
    np.testing.assert_array_equal(rng(s, 9, 12).data, s.data[:, :, 3:4])


def test_single_window_with_zero_interval() -> None:
    d = Deterministic(T0, "PT1H", "PT2H", "PT0S", 1, np.array([[1.0], [2.0]]), "d")
    assert rng(d, 0, 1).count == 1
    assert rng(d, -2, 1).count == 1
    with pytest.raises(InvalidParameterError, match="single window"):
        rng(d, 1, 2)


# --------------------------------------------------------------------------- windows
def win(series, **kw):
    if "start" in kw:
        kw["start_time"] = T0 + kw.pop("start") * H
    return slice_window(series, **kw)


def test_static_windows() -> None:
    s = sts()
    assert win(s, start=2).data.tolist() == list(range(2, 10))
    out = win(s, start=2, length=3)
    assert out.data.tolist() == [2, 3, 4]
    assert out.initial_timestamp == T0 + 2 * H
    assert win(s, length=3).data.tolist() == [0, 1, 2]
    assert win(s, start=9, length=1).data.tolist() == [9]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"length": 0}, "requested 0 timesteps"),
        ({"start": 0.5}, "not a timestep"),
        ({"start": -1}, "not a timestep"),
        ({"start": 10}, "not a timestep"),
        ({"start": 8, "length": 3}, "past the end"),
        ({"length": 11}, "past the end"),
        ({"count": 2}, "count applies to forecasts"),
    ],
)
def test_static_window_refusals(kw: dict, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        win(sts(), **kw)


def test_irregular_windows() -> None:
    ns = NonSequentialTimeSeries([T0, T0 + 2 * H, T0 + 5 * H], np.array([0.0, 1.0, 2.0]), "n")
    out = win(ns, start=2)
    assert out.data.tolist() == [1.0, 2.0]
    assert out.timestamps == [T0 + 2 * H, T0 + 5 * H]
    assert win(ns, length=2).data.tolist() == [0.0, 1.0]
    for kw, message in (
        ({"start": 3}, "not one of the timestamps"),
        ({"length": 0}, "requested 0 timesteps"),
        ({"start": 5, "length": 2}, "past the end"),
        ({"count": 1}, "count applies to forecasts"),
    ):
        with pytest.raises(InvalidParameterError, match=message):
            win(ns, **kw)
    p = PersistentTimeSeries([T0, T0 + 2 * H], np.array([1.0, 2.0]), "p")
    assert win(p, start=2, length=1).data.tolist() == [2.0]
    with pytest.raises(InvalidParameterError, match="not one of the timestamps"):
        win(p, start=1)


def test_forecast_windows() -> None:
    d = det()
    out = win(d, start=3)
    np.testing.assert_array_equal(out.data, d.data[:, 1:])
    assert out.initial_timestamp == T0 + 3 * H
    assert out.count == 3
    np.testing.assert_array_equal(win(d, start=3, count=2).data, d.data[:, 1:3])
    np.testing.assert_array_equal(win(d, count=1).data, d.data[:, :1])
    np.testing.assert_array_equal(win(d, start=9, count=1).data, d.data[:, 3:])


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"count": 0}, "requested 0 windows"),
        ({"start": 1}, "must align to a window boundary"),
        ({"start": -3}, "before the first window"),
        ({"start": 12}, "past the last window"),
        ({"start": 9, "count": 2}, "past the end"),
        ({"count": 5}, "past the end"),
        ({"length": 2}, "len applies to static series"),
    ],
)
def test_forecast_window_refusals(kw: dict, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        win(det(), **kw)


def test_windows_of_an_empty_forecast_are_refused() -> None:
    with pytest.raises(InvalidParameterError, match="past the last window"):
        win(det(0), start=0)
    with pytest.raises(InvalidParameterError, match="past the last window"):
        win(det(0), count=1)


def test_window_on_a_zoned_series_reads_a_naive_start_on_its_wall_clock() -> None:
    out = slice_window(sts(), start_time=datetime(2024, 1, 1, 2), length=2)
    assert out.data.tolist() == [2.0, 3.0]


# --------------------------------------------------------------------------- clamped calendar grids
JAN31 = datetime(2024, 1, 31, tzinfo=UTC)


def monthly(start: datetime = JAN31, n: int = 6) -> SingleTimeSeries:
    return SingleTimeSeries(start, "P1M", np.arange(float(n)), "m")


def test_calendar_grid_clamps_from_the_anchor() -> None:
    assert [t.day for t in monthly().timestamps] == [31, 29, 31, 30, 31, 30]


@pytest.mark.parametrize(
    ("index", "length", "ok"),
    [
        (0, None, True),
        (1, 1, True),  # one step needs no grid
        (1, 2, False),  # Feb 29 + 1 month is Mar 29, not the stored Mar 31
        (1, None, False),
        (2, None, True),  # Mar 31 regenerates Apr 30, May 31, Jun 30
        (3, 2, False),
        (4, 2, True),
        (5, None, True),
    ],
)
def test_re_anchoring_a_clamped_grid(index: int, length: int | None, ok: bool) -> None:
    s = monthly()
    start = s.timestamps[index]
    if not ok:
        with pytest.raises(InvalidParameterError, match="cannot be expressed as a grid of its own"):
            slice_window(s, start_time=start, length=length)
        return
    out = slice_window(s, start_time=start, length=length)
    assert out.timestamps == s.timestamps[index : index + out.length]


def test_re_anchoring_an_unclamped_grid_is_fine() -> None:
    s = monthly(datetime(2024, 1, 28, tzinfo=UTC))
    assert slice_window(s, start_time=s.timestamps[1]).timestamps == s.timestamps[1:]


def test_calendar_ranges_follow_the_same_rule() -> None:
    s = monthly()
    ts = s.timestamps
    assert slice_range(s, (ts[1], ts[2]), "m").timestamps == [ts[1]]
    assert slice_range(s, (ts[2], ts[4]), "m").timestamps == ts[2:4]
    with pytest.raises(InvalidParameterError, match="starting at timestep 1"):
        slice_range(s, (ts[1], ts[3]), "m")


def test_calendar_forecast_windows_follow_the_same_rule() -> None:
    d = Deterministic(JAN31, "P1M", "P2M", "P1M", 5, np.arange(10.0).reshape(2, 5), "d")
    issues = [JAN31, datetime(2024, 2, 29, tzinfo=UTC), datetime(2024, 3, 31, tzinfo=UTC)]
    assert slice_window(d, start_time=issues[1], count=1).count == 1
    assert slice_window(d, start_time=issues[2]).count == 3
    with pytest.raises(InvalidParameterError, match="starting at window 1"):
        slice_window(d, start_time=issues[1])
    with pytest.raises(InvalidParameterError, match="starting at window 1"):
        slice_range(d, (issues[1], issues[2] + timedelta(days=1)), "d")
