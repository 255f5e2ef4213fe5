"""The forecasts: ``Deterministic``, ``Probabilistic`` and ``Scenarios`` over their base
``Forecast`` (windows issued on a grid, each ``steps`` values long).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Self

import numpy as np

from ..core.elements import ElementType
from ..core.periods import Period, as_period, divide, step
from ..core.timeref import (
    check_period_for_reference,
)
from ..errors import InvalidParameterError, ParameterTypeError
from . import arrow
from .base import (
    Gridded,
    anchor_ms,
    keywords,
    positive,
    reference_for,
    values_data,
    wall_utc,
)
from .kinds import TimeSeriesType


class Forecast(Gridded):
    __slots__ = ("_count", "_horizon", "_interval")

    @classmethod
    def restore(
        cls,
        *,
        name: str,
        data: np.ndarray,
        element_type: ElementType,
        time_reference: str | None,
        initial_ms: int,
        resolution: Period,
        horizon: Period,
        interval: Period,
        count: int,
        percentiles: list[float] | None = None,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        application_data: str | None = None,
    ) -> Self:
        """A stored forecast from parts already checked (a *trusted* constructor, as
        :meth:`SingleTimeSeries.restore`): ``initial_ms`` is the first window's issue
        time, ``horizon`` / ``interval`` / ``count`` the windows' grid as the constructor
        takes them (parsed), ``data`` the window array (``[H, count, *E]``, or
        ``[lanes, H, count, *E]``), and ``percentiles`` a ``Probabilistic``'s lanes (its
        own list; None for the other forecasts)."""
        # Plain attribute stores, spelled out in each family's restore: a read builds one
        # series object per series, and a shared helper's call would double the cost.
        obj = cls.__new__(cls)
        obj.name = name
        obj._data = data
        obj._et = element_type
        obj._tr = time_reference
        obj.units = units
        obj.quantity_kind = quantity_kind
        obj.unit_system = unit_system
        obj.component_field = component_field
        obj.application_data = application_data
        obj._initial_ms = initial_ms
        obj._resolution = resolution
        obj._horizon = horizon
        obj._interval = interval
        obj._count = count
        if percentiles is not None:
            obj._percentiles = percentiles
        return obj

    def replace(
        self, *, data: np.ndarray, initial_ms: int | None = None, count: int | None = None
    ) -> Self:
        """As :meth:`_Series.replace`, re-anchored at the issue time ``initial_ms`` and
        holding ``count`` windows when given."""
        out = super().replace(data=data, initial_ms=initial_ms)
        if count is not None:
            out._count = count
        return out

    def _init_forecast(
        self,
        initial_timestamp: datetime,
        resolution: Any,
        horizon: Any,
        interval: Any,
        count: Any,
        data: Any,
        name: str,
        kw: dict[str, Any],
        lanes: int | None,
    ) -> None:
        tr = reference_for(initial_timestamp, kw.pop("time_reference", None))
        self._initial_ms = anchor_ms(initial_timestamp)
        # exact=True: a sub-millisecond part is refused, never truncated into another grid.
        res = positive(as_period(resolution, what="resolution", exact=True), "resolution")
        hor = positive(as_period(horizon, what="horizon", exact=True), "horizon")
        itv = as_period(interval, what="interval", exact=True)
        if not isinstance(count, int | np.integer) or isinstance(count, bool):
            raise ParameterTypeError(f"count must be a non-negative integer, got {count!r}")
        if count < 0:
            raise InvalidParameterError(f"count must be a non-negative integer, got {count!r}")
        count = int(count)
        if not itv.is_positive and not (str(itv) == "PT0S" and count <= 1):
            raise InvalidParameterError(
                f"interval must be positive (PT0S only for a single window), got {itv} "
                f"with count {count}"
            )
        h = divide(hor, res, what="horizon")
        check_period_for_reference(res, tr, what="resolution")
        if itv.is_positive:
            check_period_for_reference(itv, tr, what="interval")
        self._resolution, self._horizon, self._interval, self._count = res, hor, itv, count
        self._init_common(data, name, time_reference=tr, **kw)
        shape = self._data.shape
        lead = self.time_series_type.leading_dims
        expected = [h, count] if lanes is None else [lanes, h, count]
        if lanes is None and lead == 3:
            expected = [shape[0], h, count]
        if list(shape[:lead]) != expected:
            raise InvalidParameterError(
                f"{type(self).__name__}: expected shape {expected}, got {list(shape[:lead])}"
            )

    @property
    def horizon(self) -> str:
        return str(self._horizon)

    @property
    def interval(self) -> str:
        return str(self._interval)

    @property
    def horizon_period(self) -> Period:
        return self._horizon

    @property
    def interval_period(self) -> Period:
        return self._interval

    @property
    def count(self) -> int:
        return self._count

    @property
    def steps(self) -> int:
        """H: the number of steps in one window (horizon / resolution)."""
        return int(self._data.shape[self.time_series_type.leading_dims - 2])

    def _grid_key(self) -> tuple:
        periods = (str(self._resolution), str(self._horizon), str(self._interval))
        lanes = tuple(getattr(self, "_percentiles", ()))
        return (self._initial_ms, *periods, self._count, lanes)

    def issue_times_ms(self) -> np.ndarray:
        return np.array(
            [step(self._initial_ms, self._interval, j) for j in range(self._count)], dtype=np.int64
        )

    def __repr__(self) -> str:
        # The reference's fields and order; the percentiles of a Probabilistic too.
        lanes = getattr(self, "_percentiles", None)
        pct = "" if lanes is None else f"percentiles={list(lanes)}, "
        return (
            f'{type(self).__name__}(name="{self.name}", '
            f"initial_timestamp={wall_utc(self._initial_ms)}, count={self.count}, "
            f"horizon={self.horizon}, interval={self.interval}, resolution={self.resolution}, "
            f"{pct}shape={list(self._data.shape)}, time_reference={self._tr or 'unspecified'})"
        )


def _steps(horizon: Any, resolution: Any) -> int:
    return divide(
        as_period(horizon, what="horizon"),
        as_period(resolution, what="resolution"),
        what="horizon",
    )


class Deterministic(Forecast):
    """Forecast windows: ``data[h, j]`` is window j's step h; shape ``[H, count, *E]``."""

    time_series_type = TimeSeriesType.Deterministic
    __slots__ = ()

    def __init__(
        self,
        initial_timestamp: datetime,
        resolution: str | timedelta | Period,
        horizon: str | timedelta | Period,
        interval: str | timedelta | Period,
        count: int,
        data: Any,
        name: str,
        *,
        application_data: str | None = None,
        element_type: str | None = None,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        time_reference: str | None = None,
    ) -> None:
        self._init_forecast(
            initial_timestamp,
            resolution,
            horizon,
            interval,
            count,
            data,
            name,
            keywords(locals()),
            None,
        )

    @classmethod
    def from_values(
        cls,
        initial_timestamp: datetime,
        resolution: str | timedelta | Period,
        horizon: str | timedelta | Period,
        interval: str | timedelta | Period,
        count: int,
        values: Sequence[Any],
        name: str,
        *,
        application_data: str | None = None,
        element_type: str | None = None,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        time_reference: str | None = None,
    ) -> Deterministic:
        """Build from per-step composite values, ``H * count`` of them, step-major
        (``values[h * count + j]`` is window j's step h); the values name the element
        type as in :meth:`SingleTimeSeries.from_values`."""
        data, et = values_data(values, element_type, [_steps(horizon, resolution), count])
        return cls(
            initial_timestamp,
            resolution,
            horizon,
            interval,
            count,
            data,
            name,
            **keywords(locals(), element_type=et),
        )

    def to_arrow_windows(self) -> dict[datetime, Any]:
        """One Arrow table per window, keyed by its issue time (needs pyarrow).

        Each table is what :meth:`SingleTimeSeries.to_arrow` gives for that window, with
        ``interval``, ``horizon``, ``count`` and ``issue_time`` added to its metadata.
        """
        return arrow.windows_to_arrow(self)


class Probabilistic(Forecast):
    """Forecast with percentile lanes: shape ``[P, H, count, *E]``."""

    time_series_type = TimeSeriesType.Probabilistic
    __slots__ = ("_percentiles",)

    def __init__(
        self,
        initial_timestamp: datetime,
        resolution: str | timedelta | Period,
        horizon: str | timedelta | Period,
        interval: str | timedelta | Period,
        count: int,
        percentiles: Sequence[float],
        data: Any,
        name: str,
        *,
        application_data: str | None = None,
        element_type: str | None = None,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        time_reference: str | None = None,
    ) -> None:
        pct = [float(p) for p in percentiles]
        if not pct:
            raise InvalidParameterError("percentiles must not be empty")
        if any(not np.isfinite(p) for p in pct) or any(b <= a for a, b in itertools.pairwise(pct)):
            raise InvalidParameterError(
                f"percentiles must be finite and strictly increasing, got {pct}"
            )
        self._percentiles = pct
        self._init_forecast(
            initial_timestamp,
            resolution,
            horizon,
            interval,
            count,
            data,
            name,
            keywords(locals()),
            len(pct),
        )

    @classmethod
    def from_values(
        cls,
        initial_timestamp: datetime,
        resolution: str | timedelta | Period,
        horizon: str | timedelta | Period,
        interval: str | timedelta | Period,
        count: int,
        percentiles: Sequence[float],
        values: Sequence[Any],
        name: str,
        *,
        application_data: str | None = None,
        element_type: str | None = None,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        time_reference: str | None = None,
    ) -> Probabilistic:
        """Build from ``P * H * count`` per-step composite values, row-major over
        ``[P, H, count]``; the values name the element type."""
        lead = [len(percentiles), _steps(horizon, resolution), count]
        data, et = values_data(values, element_type, lead)
        return cls(
            initial_timestamp,
            resolution,
            horizon,
            interval,
            count,
            percentiles,
            data,
            name,
            **keywords(locals(), element_type=et),
        )

    @property
    def percentiles(self) -> list[float]:
        return list(self._percentiles)


class Scenarios(Forecast):
    """Forecast with scenario lanes: shape ``[S, H, count, *E]``."""

    time_series_type = TimeSeriesType.Scenarios
    __slots__ = ()

    def __init__(
        self,
        initial_timestamp: datetime,
        resolution: str | timedelta | Period,
        horizon: str | timedelta | Period,
        interval: str | timedelta | Period,
        count: int,
        data: Any,
        name: str,
        *,
        application_data: str | None = None,
        element_type: str | None = None,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        time_reference: str | None = None,
    ) -> None:
        self._init_forecast(
            initial_timestamp,
            resolution,
            horizon,
            interval,
            count,
            data,
            name,
            keywords(locals()),
            None,
        )

    @classmethod
    def from_values(
        cls,
        initial_timestamp: datetime,
        resolution: str | timedelta | Period,
        horizon: str | timedelta | Period,
        interval: str | timedelta | Period,
        count: int,
        scenario_count: int,
        values: Sequence[Any],
        name: str,
        *,
        application_data: str | None = None,
        element_type: str | None = None,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        time_reference: str | None = None,
    ) -> Scenarios:
        """Build from ``S * H * count`` per-step composite values, row-major over
        ``[S, H, count]``; the values name the element type."""
        lead = [scenario_count, _steps(horizon, resolution), count]
        data, et = values_data(values, element_type, lead)
        return cls(
            initial_timestamp,
            resolution,
            horizon,
            interval,
            count,
            data,
            name,
            **keywords(locals(), element_type=et),
        )

    @property
    def scenario_count(self) -> int:
        return int(self._data.shape[0])
