"""Clipping a series to a window (``read_by_id(start_time=, len=, count=)``) or to a
half-open time range (``read_by_ids_range``, ``export --time-range``).

Both return a new series object of the same type that describes the slice: its own
anchor, length or count, and array. The range semantics are the reference's: a regular
series keeps every step whose interval overlaps the range, a persistent one also keeps
the breakpoint in force at the start, a forecast keeps whole windows issued in range.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import ZONED, InvalidParameterError
from .periods import grid, grid_index, step
from .timeref import datetime_to_ms, ms_to_axis_instant, render_zone


def _bound(value: datetime, series: Any, label: str, what: str) -> int:
    """The stored milliseconds a range bound means for ``series``.

    One range may be given to a selection that mixes zoneless and zoned series (the demo
    store does), so the rule is per series:

    - a naive bound is read on the series' own wall clock: as is for a zoneless series,
      in UTC for a ``utc`` or unspecified one, at its offset or in its IANA zone otherwise
      (``2024-07-01T00:00`` is midnight where each series lives; a wall time that a DST
      change skips or repeats is read as the zone gives it, ``fold=0``);
    - an aware bound is an instant: it applies to every zoned series as it is, and a
      zoneless series, which records no instants, refuses it.
    """
    if not isinstance(value, datetime):
        raise InvalidParameterError(f"{what} must be a datetime, got {type(value).__name__}")
    zoneless = series.time_reference == "zoneless"
    if value.tzinfo is not None and zoneless:
        raise InvalidParameterError(
            f"the query bounds carry a zone, but {label} is zoneless (wall clock only): give "
            "naive bounds (read on each series' own wall clock), or leave the zoneless "
            "series out with {zoned}",
            series=label,
            terms={"zoned": ZONED},
        )
    if value.tzinfo is None and not zoneless:
        value = value.replace(tzinfo=render_zone(series.time_reference))
    return datetime_to_ms(value, what=what)


def _clone(series: Any, data: np.ndarray, **fields: Any) -> Any:
    out = copy.copy(series)
    out._data = np.ascontiguousarray(data)
    for k, v in fields.items():
        setattr(out, k, v)
    return out


def _window_axis(series: Any) -> int:
    """The array axis that indexes forecast windows."""
    return series.time_series_type.leading_dims - 1


def _check_regrid(series: Any, period: Any, i0: int, n: int, label: str, what: str) -> None:
    """A slice re-anchored at step ``i0`` must regenerate the stored grid.

    On a calendar grid anchored on a day that shorter months clamp (the 29th-31st), the
    grid stepped from a later point names other dates (Jan 31 + 1 month is Feb 29, but
    Feb 29 + 1 month is Mar 29, not the stored Mar 31); such a slice is refused.
    """
    if i0 == 0 or n < 2 or not period.calendar:
        return
    stored = grid(series._initial_ms, period, i0 + n)[i0:]
    if not np.array_equal(grid(int(stored[0]), period, n), stored):
        raise InvalidParameterError(
            f"{label}: a {period} slice starting at {what} {i0} cannot be expressed as a grid "
            f"of its own: the stored grid steps from {ms_to_axis_instant(series._initial_ms)}, "
            f"a day of the month that shorter months clamp, so re-anchored at "
            f"{ms_to_axis_instant(int(stored[0]))} it would name other dates than the stored "
            "ones. Read from the start of the series (or a single step), or store the values "
            "with explicit instants as a NonSequentialTimeSeries."
        )


def _take_windows(series: Any, j0: int, j1: int, label: str) -> Any:
    if series._interval.is_positive:
        _check_regrid(series, series._interval, j0, j1 - j0, label, "window")
    axis = _window_axis(series)
    index = [slice(None)] * series._data.ndim
    index[axis] = slice(j0, j1)
    anchor = (
        step(series._initial_ms, series._interval, j0)
        if series._interval.is_positive
        else series._initial_ms
    )
    return _clone(series, series._data[tuple(index)], _initial_ms=anchor, _count=j1 - j0)


def _issue_index(series: Any, t: int, label: str) -> int:
    """Window index of issue time ``t`` (clamped to 0 before the first window)."""
    if t <= series._initial_ms:
        return 0
    if not series._interval.is_positive:
        raise InvalidParameterError(
            f"forecast start_time must align to a window boundary; {label} has a single window"
        )
    k = int(grid_index(series._initial_ms, series._interval, np.array([t], dtype=np.int64))[0])
    if k < 0:
        itv = series._interval
        near = ""
        if not itv.calendar:
            # The boundaries either side of t, so the refusal names a start that works.
            j = (t - series._initial_ms) // itv.ms
            before, after = (step(series._initial_ms, itv, i) for i in (j, j + 1))
            near = f", such as {ms_to_axis_instant(before)} or {ms_to_axis_instant(after)}"
        raise InvalidParameterError(
            f"forecast start_time {ms_to_axis_instant(t)} must align to a window boundary "
            f"(initial_timestamp + k·interval) of {label}: its windows start at "
            f"{ms_to_axis_instant(series._initial_ms)} and every {itv}; give a start on one "
            f"of them{near}"
        )
    return k


def slice_range(series: Any, time_range: tuple[datetime, datetime], label: str) -> Any:
    """Clip ``series`` to ``[start, end)``; see the module docstring for the semantics."""
    try:
        start_dt, end_dt = time_range
    except (TypeError, ValueError):
        raise InvalidParameterError("time_range must be a (start, end) pair of datetimes") from None
    start = _bound(start_dt, series, label, "time_range start")
    end = _bound(end_dt, series, label, "time_range end")
    if end < start:
        raise InvalidParameterError(f"time_range end < start ({end_dt} < {start_dt})")
    kind = series.time_series_type.name
    if kind == "SingleTimeSeries":
        n = series.length
        times = grid(series._initial_ms, series._resolution, n + 1)
        keep = np.nonzero((times[1:] > start) & (times[:-1] < end))[0]
        if keep.size == 0:
            # An empty slice is anchored where the range would begin: the step in force
            # at ``start``, clamped to the series (the reference does the same).
            i0 = int(np.count_nonzero(times[1:] <= start))
            return _clone(series, series._data[i0:i0], _initial_ms=int(times[i0]))
        i0, i1 = int(keep[0]), int(keep[-1]) + 1
        _check_regrid(series, series._resolution, i0, i1 - i0, label, "timestep")
        return _clone(series, series._data[i0:i1], _initial_ms=int(times[i0]))
    if kind in ("NonSequentialTimeSeries", "PersistentTimeSeries"):
        ts = series._ts_ms
        i0 = int(np.searchsorted(ts, start, side="left"))
        i1 = int(np.searchsorted(ts, end, side="left"))
        # An empty range selects nothing, not even the breakpoint in force (the reference's rule).
        if kind == "PersistentTimeSeries" and end > start and (i0 >= ts.size or ts[i0] != start):
            if i0 == 0:
                raise InvalidParameterError(
                    f"{label} has no value at the range start {ms_to_axis_instant(start)}: it is "
                    "before the first breakpoint, where a step function is undefined"
                )
            i0 -= 1  # the breakpoint in force at start keeps its own timestamp
        i1 = max(i1, i0)
        return _clone(series, series._data[i0:i1], _ts_ms=ts[i0:i1].copy())
    # Forecasts: whole windows issued in [start, end).
    count = series._count
    j0 = _issue_index(series, start, label)
    if j0 >= count:
        raise InvalidParameterError(
            f"forecast start_time is past the last window of {label} (resolves to window index "
            f"{j0}, but only {count} window(s) are stored)"
        )
    issues = (
        np.array(
            [step(series._initial_ms, series._interval, j) for j in range(count)], dtype=np.int64
        )
        if series._interval.is_positive
        else np.full(count, series._initial_ms, dtype=np.int64)
    )
    j1 = int(np.searchsorted(issues, end, side="left"))
    j1 = max(j0, min(j1, count))
    return _take_windows(series, j0, j1, label)


def _check_len(length: int | None, label: str) -> None:
    if length is not None and int(length) == 0:
        raise InvalidParameterError(
            f"{label}: requested 0 timesteps; a read selects at least one (omit len to read "
            "to the end)"
        )


def slice_window(
    series: Any,
    *,
    start_time: datetime | None = None,
    length: int | None = None,
    count: int | None = None,
) -> Any:
    """The exact window a read names; every bound must land on the series' grid."""
    label = f"'{series.name}'"
    kind = series.time_series_type
    if kind.is_forecast:
        if length is not None:
            raise InvalidParameterError("len applies to static series; use count for forecasts")
        j0 = (
            0
            if start_time is None
            else _issue_index(series, _bound(start_time, series, label, "start_time"), label)
        )
        if (
            start_time is not None
            and _bound(start_time, series, label, "start_time") < series._initial_ms
        ):
            raise InvalidParameterError(f"start_time is before the first window of {label}")
        if j0 >= series._count:
            raise InvalidParameterError(
                f"start_time is past the last window of {label} (resolves to window index "
                f"{j0}, but only {series._count} window(s) are stored)"
            )
        n = series._count - j0 if count is None else int(count)
        if n == 0:
            raise InvalidParameterError(
                f"{label}: requested 0 windows; a read selects at least one (omit count to "
                "read to the last window)"
            )
        if j0 + n > series._count or n < 0:
            raise InvalidParameterError(
                f"{label} has {series._count} window(s); window {j0} + count {n} is past the end"
            )
        return _take_windows(series, j0, j0 + n, label)
    if count is not None:
        raise InvalidParameterError("count applies to forecasts; use len for static series")
    if kind.name == "SingleTimeSeries":
        i0 = 0
        if start_time is not None:
            t = _bound(start_time, series, label, "start_time")
            i0 = int(
                grid_index(series._initial_ms, series._resolution, np.array([t], dtype=np.int64))[0]
            )
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
        _check_regrid(series, series._resolution, i0, n, label, "timestep")
        anchor = int(step(series._initial_ms, series._resolution, i0))
        return _clone(series, series._data[i0 : i0 + n], _initial_ms=anchor)
    ts = series._ts_ms
    i0 = 0
    if start_time is not None:
        t = _bound(start_time, series, label, "start_time")
        i0 = int(np.searchsorted(ts, t))
        if i0 >= ts.size or ts[i0] != t:
            raise InvalidParameterError(f"start_time is not one of the timestamps of {label}")
    n = ts.size - i0 if length is None else int(length)
    _check_len(length, label)
    if n < 0 or i0 + n > ts.size:
        raise InvalidParameterError(
            f"{label} has {ts.size} steps; step {i0} + len {n} is past the end"
        )
    return _clone(series, series._data[i0 : i0 + n], _ts_ms=ts[i0 : i0 + n].copy())
