"""Clipping a series to a window (``read_by_id(start_time=, len=, count=)``) or to a
half-open time range (``read_by_ids_range``, ``export --time-range``).

Both return a new series object of the same type that describes the slice: its own
anchor, length or count, and array (the series' trusted ``replace``). The range
semantics are the reference's: a regular series keeps every step whose interval overlaps
the range, a persistent one also keeps the breakpoint in force at the start, a forecast
keeps whole windows issued in range. A bound is read on each series' own clock
(:func:`~.base.bound_ms`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

import numpy as np

from ..core.periods import Period, grid, grid_index, step
from ..core.timeref import ms_to_axis_instant
from ..errors import InvalidParameterError
from .base import Gridded, Series, bound_ms
from .forecasts import Forecast
from .static import Irregular, PersistentTimeSeries, SingleTimeSeries

#: A series in, the same type out.
S = TypeVar("S", bound=Series)
F = TypeVar("F", bound=Forecast)


def _check_regrid(series: Gridded, period: Period, i0: int, n: int, label: str, what: str) -> None:
    """A slice re-anchored at step ``i0`` must regenerate the stored grid.

    On a calendar grid anchored on a day that shorter months clamp (the 29th-31st), the
    grid stepped from a later point names other dates (Jan 31 + 1 month is Feb 29, but
    Feb 29 + 1 month is Mar 29, not the stored Mar 31); such a slice is refused.
    """
    if i0 == 0 or n < 2 or not period.calendar:
        return
    anchor = series.initial_ms
    stored = grid(anchor, period, i0 + n)[i0:]
    if not np.array_equal(grid(int(stored[0]), period, n), stored):
        raise InvalidParameterError(
            f"{label}: a {period} slice starting at {what} {i0} cannot be expressed as a grid "
            f"of its own: the stored grid steps from {ms_to_axis_instant(anchor)}, "
            f"a day of the month that shorter months clamp, so re-anchored at "
            f"{ms_to_axis_instant(int(stored[0]))} it would name other dates than the stored "
            "ones. Read from the start of the series (or a single step), or store the values "
            "with explicit instants as a NonSequentialTimeSeries."
        )


def _take_windows(series: F, j0: int, j1: int, label: str) -> F:
    itv = series.interval_period
    if itv.is_positive:
        _check_regrid(series, itv, j0, j1 - j0, label, "window")
    data = series.stored_array
    # The array axis that indexes forecast windows.
    index = [slice(None)] * data.ndim
    index[series.time_series_type.leading_dims - 1] = slice(j0, j1)
    anchor = step(series.initial_ms, itv, j0) if itv.is_positive else series.initial_ms
    return series.replace(data=data[tuple(index)], initial_ms=anchor, count=j1 - j0)


def _issue_index(series: Forecast, t: int, label: str) -> int:
    """Window index of issue time ``t`` (clamped to 0 before the first window)."""
    anchor, itv = series.initial_ms, series.interval_period
    if t <= anchor:
        return 0
    if not itv.is_positive:
        raise InvalidParameterError(
            f"forecast start_time must align to a window boundary; {label} has a single window"
        )
    k = int(grid_index(anchor, itv, np.array([t], dtype=np.int64))[0])
    if k < 0:
        near = ""
        if not itv.calendar:
            # The boundaries either side of t, so the refusal names a start that works.
            j = (t - anchor) // itv.ms
            before, after = (step(anchor, itv, i) for i in (j, j + 1))
            near = f", such as {ms_to_axis_instant(before)} or {ms_to_axis_instant(after)}"
        raise InvalidParameterError(
            f"forecast start_time {ms_to_axis_instant(t)} must align to a window boundary "
            f"(initial_timestamp + k·interval) of {label}: its windows start at "
            f"{ms_to_axis_instant(anchor)} and every {itv}; give a start on one "
            f"of them{near}"
        )
    return k


def slice_range(series: S, time_range: tuple[datetime, datetime], label: str) -> S:
    """Clip ``series`` to ``[start, end)``; see the module docstring for the semantics."""
    try:
        start_dt, end_dt = time_range
    except (TypeError, ValueError):
        raise InvalidParameterError("time_range must be a (start, end) pair of datetimes") from None
    start = bound_ms(start_dt, series, label, "time_range start")
    end = bound_ms(end_dt, series, label, "time_range end")
    if end < start:
        raise InvalidParameterError(f"time_range end < start ({end_dt} < {start_dt})")
    data = series.stored_array
    if isinstance(series, SingleTimeSeries):
        n = series.length
        res = series.resolution_period
        times = grid(series.initial_ms, res, n + 1)
        keep = np.nonzero((times[1:] > start) & (times[:-1] < end))[0]
        if keep.size == 0:
            # An empty slice is anchored where the range would begin: the step in force
            # at ``start``, clamped to the series (the reference does the same).
            i0 = int(np.count_nonzero(times[1:] <= start))
            return series.replace(data=data[i0:i0], initial_ms=int(times[i0]))
        i0, i1 = int(keep[0]), int(keep[-1]) + 1
        _check_regrid(series, res, i0, i1 - i0, label, "timestep")
        return series.replace(data=data[i0:i1], initial_ms=int(times[i0]))
    if isinstance(series, Irregular):
        ts = series.timestamps_ms
        i0 = int(np.searchsorted(ts, start, side="left"))
        i1 = int(np.searchsorted(ts, end, side="left"))
        # An empty range selects nothing, not even the breakpoint in force (the reference's rule).
        persistent = isinstance(series, PersistentTimeSeries)
        if persistent and end > start and (i0 >= ts.size or ts[i0] != start):
            if i0 == 0:
                raise InvalidParameterError(
                    f"{label} has no value at the range start {ms_to_axis_instant(start)}: it is "
                    "before the first breakpoint, where a step function is undefined"
                )
            i0 -= 1  # the breakpoint in force at start keeps its own timestamp
        i1 = max(i1, i0)
        return series.replace(data=data[i0:i1], timestamps_ms=ts[i0:i1].copy())
    if not isinstance(series, Forecast):
        raise _not_a_series(series, label)
    # Forecasts: whole windows issued in [start, end).
    count, anchor, itv = series.count, series.initial_ms, series.interval_period
    j0 = _issue_index(series, start, label)
    if j0 >= count:
        raise InvalidParameterError(
            f"forecast start_time is past the last window of {label} (resolves to window index "
            f"{j0}, but only {count} window(s) are stored)"
        )
    issues = (
        np.array([step(anchor, itv, j) for j in range(count)], dtype=np.int64)
        if itv.is_positive
        else np.full(count, anchor, dtype=np.int64)
    )
    j1 = int(np.searchsorted(issues, end, side="left"))
    j1 = max(j0, min(j1, count))
    return _take_windows(series, j0, j1, label)


def _not_a_series(series: object, label: str) -> InvalidParameterError:
    return InvalidParameterError(
        f"{label} is a {type(series).__name__}, not one of the series types a read slices"
    )


def _check_len(length: int | None, label: str) -> None:
    if length is not None and int(length) == 0:
        raise InvalidParameterError(
            f"{label}: requested 0 timesteps; a read selects at least one (omit len to read "
            "to the end)"
        )


def slice_window(
    series: S,
    *,
    start_time: datetime | None = None,
    length: int | None = None,
    count: int | None = None,
) -> S:
    """The exact window a read names; every bound must land on the series' grid."""
    label = f"'{series.name}'"
    if isinstance(series, Forecast):
        if length is not None:
            raise InvalidParameterError("len applies to static series; use count for forecasts")
        j0 = (
            0
            if start_time is None
            else _issue_index(series, bound_ms(start_time, series, label, "start_time"), label)
        )
        if (
            start_time is not None
            and bound_ms(start_time, series, label, "start_time") < series.initial_ms
        ):
            raise InvalidParameterError(f"start_time is before the first window of {label}")
        stored = series.count
        if j0 >= stored:
            raise InvalidParameterError(
                f"start_time is past the last window of {label} (resolves to window index "
                f"{j0}, but only {stored} window(s) are stored)"
            )
        n = stored - j0 if count is None else int(count)
        if n == 0:
            raise InvalidParameterError(
                f"{label}: requested 0 windows; a read selects at least one (omit count to "
                "read to the last window)"
            )
        if j0 + n > stored or n < 0:
            raise InvalidParameterError(
                f"{label} has {stored} window(s); window {j0} + count {n} is past the end"
            )
        return _take_windows(series, j0, j0 + n, label)
    if count is not None:
        raise InvalidParameterError("count applies to forecasts; use len for static series")
    data = series.stored_array
    if isinstance(series, SingleTimeSeries):
        i0 = 0
        anchor, res = series.initial_ms, series.resolution_period
        if start_time is not None:
            t = bound_ms(start_time, series, label, "start_time")
            i0 = int(grid_index(anchor, res, np.array([t], dtype=np.int64))[0])
            if i0 < 0 or i0 >= series.length:
                raise InvalidParameterError(
                    f"start_time {ms_to_axis_instant(t)} is not a timestep of {label}"
                )
        n = series.length - i0 if length is None else int(length)
        _check_len(length, label)
        if n < 0 or i0 + n > series.length:
            raise InvalidParameterError(
                f"{label} has {series.length} steps; step {i0} + len {n} is past the end"
            )
        _check_regrid(series, res, i0, n, label, "timestep")
        return series.replace(data=data[i0 : i0 + n], initial_ms=int(step(anchor, res, i0)))
    if not isinstance(series, Irregular):
        raise _not_a_series(series, label)
    ts = series.timestamps_ms
    i0 = 0
    if start_time is not None:
        t = bound_ms(start_time, series, label, "start_time")
        i0 = int(np.searchsorted(ts, t))
        if i0 >= ts.size or ts[i0] != t:
            raise InvalidParameterError(f"start_time is not one of the timestamps of {label}")
    n = ts.size - i0 if length is None else int(length)
    _check_len(length, label)
    if n < 0 or i0 + n > ts.size:
        raise InvalidParameterError(
            f"{label} has {ts.size} steps; step {i0} + len {n} is past the end"
        )
    return series.replace(data=data[i0 : i0 + n], timestamps_ms=ts[i0 : i0 + n].copy())
