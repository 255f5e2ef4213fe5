"""The series on one time axis: ``SingleTimeSeries`` (a regular grid) and the irregular
``NonSequentialTimeSeries`` and ``PersistentTimeSeries`` over their base ``Irregular``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Self

import numpy as np

from ..core.elements import ElementType
from ..core.periods import Period, as_period, grid
from ..core.timeref import (
    check_period_for_reference,
    datetimes_to_ms,
    infer_time_reference,
    ms_to_datetime,
    ms_to_datetimes,
)
from ..errors import InvalidParameterError
from . import arrow
from .base import (
    Gridded,
    Series,
    anchor_ms,
    bound_ms,
    keywords,
    positive,
    reference_for,
    values_data,
    wall_utc,
)
from .kinds import TimeSeriesType


class SingleTimeSeries(Gridded):
    """A regular series: ``data[k]`` is the value at ``initial_timestamp + k·resolution``."""

    time_series_type = TimeSeriesType.SingleTimeSeries
    __slots__ = ()

    def __init__(
        self,
        initial_timestamp: datetime,
        resolution: str | timedelta | Period,
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
        tr = reference_for(initial_timestamp, time_reference)
        self._initial_ms = anchor_ms(initial_timestamp)
        # exact=True: 1500 µs truncated to PT0.001S would be a silently wrong grid.
        self._resolution = positive(
            as_period(resolution, what="resolution", exact=True), "resolution"
        )
        check_period_for_reference(self._resolution, tr, what="resolution")
        self._init_common(data, name, **keywords(locals(), time_reference=tr))

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
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        application_data: str | None = None,
    ) -> Self:
        """A stored series from parts already checked: a *trusted* constructor.

        The store's reads and the imports build series this way (one per series they
        return or file), from parts validated when the series was written or as the
        file was read; nothing is checked or copied here, so a wrong part makes a wrong
        series. Everyone else calls the constructor, which checks everything.

        Parameters
        ----------
        name
            The series' name (non-empty).
        data
            The array in the store's physical form (C-contiguous, little-endian, one of
            the store's dtypes), steps first; it becomes the series' own, uncopied.
        element_type
            The parsed element type the array holds.
        time_reference
            ``utc``, ``zoneless``, ``±HH:MM``, an IANA zone, or None (unspecified).
        initial_ms
            The first step's instant, milliseconds since the epoch.
        resolution
            The step, a positive period.
        units, quantity_kind, unit_system, component_field, application_data
            The descriptors, as the constructor takes them.

        Returns
        -------
        SingleTimeSeries
            The series, equal to the one the constructor would build from the same parts.
        """
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
        return obj

    @classmethod
    def from_values(
        cls,
        initial_timestamp: datetime,
        resolution: str | timedelta | Period,
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
    ) -> SingleTimeSeries:
        """Build from per-timestep composite values; the values name the element type.

        Parameters
        ----------
        values
            One logical value per step, in the shapes :meth:`decoded_values` returns
            (see :func:`~infrastore_sqlite.core.elements.infer_element_type` for the table).
            Plain numbers are refused: pass them to the constructor as ``data``.
        element_type
            An assertion, refused when the values say otherwise; the only guide for
            empty values.

        Other keyword arguments are the constructor's descriptors.
        """
        data, et = values_data(values, element_type, None)
        return cls(
            initial_timestamp,
            resolution,
            data,
            name,
            **keywords(locals(), element_type=et),
        )

    @classmethod
    def from_timestamps(
        cls,
        timestamps: Sequence[datetime],
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
    ) -> SingleTimeSeries:
        """Build from an explicit timestamp vector on a regular (or calendar) grid.

        The resolution is inferred: the spacing of the first two timestamps, or whole
        calendar months (``P2M``, month ends clamped) when the spacing is uneven.

        Raises
        ------
        InvalidParameterError
            Fewer than two timestamps, not one per step of ``data``, a mix of naive and
            aware (or differently zoned) timestamps, or no grid that fits them.
        """
        if len(timestamps) < 2:
            raise InvalidParameterError(
                f"cannot infer a resolution from {len(timestamps)} timestamp(s): a grid "
                "needs at least two to have a step; use the constructor with an explicit "
                "resolution instead"
            )
        _check_one_spelling(timestamps)
        ms = datetimes_to_ms(list(timestamps))
        steps = int(np.shape(data)[0]) if np.ndim(data) else 0
        if ms.size != steps:
            raise InvalidParameterError(
                f"SingleTimeSeries.from_timestamps: {ms.size} timestamps for {steps} "
                "value(s); give one timestamp per step of data"
            )
        res = infer_resolution(ms)
        return cls(
            timestamps[0],
            res,
            data,
            name,
            **keywords(locals()),
        )

    @classmethod
    def from_arrow(
        cls,
        table: Any,
        *,
        name: str | None = None,
        resolution: str | timedelta | Period | None = None,
        application_data: str | None = None,
        element_type: str | None = None,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        time_reference: str | None = None,
    ) -> SingleTimeSeries:
        """Build from an Arrow table with ``timestamp`` and ``value`` columns (needs pyarrow).

        Keywords override the table's schema metadata (what :meth:`to_arrow` writes); the
        resolution comes from ``resolution=``, else the metadata, else the timestamps.

        Raises
        ------
        InvalidParameterError
            A missing column, nulls, sub-millisecond instants, variable-length lists, no
            name, or timestamps off the resolution's grid.
        """
        kw = keywords(locals())
        return arrow.from_arrow(cls, table, name=name, resolution=resolution, kw=kw)

    def to_arrow(self) -> Any:
        """The series as an Arrow table: ``timestamp`` and ``value`` columns, its name,
        type, element type and shape, time reference, resolution and set descriptors in
        the schema metadata (needs pyarrow)."""
        return arrow.to_arrow(self)

    @property
    def length(self) -> int:
        return int(self._data.shape[0])

    @property
    def timestamps(self) -> list[datetime]:
        return ms_to_datetimes(self.timestamps_ms, self._tr)

    @property
    def timestamps_ms(self) -> np.ndarray:
        return grid(self._initial_ms, self._resolution, self.length)

    def _grid_key(self) -> tuple:
        return (self._initial_ms, str(self._resolution))

    def __repr__(self) -> str:
        return (
            f'SingleTimeSeries(name="{self.name}", '
            f"initial_timestamp={wall_utc(self._initial_ms)}, "
            f"length={self.length}, resolution={self.resolution}, shape={list(self._data.shape)}, "
            f"time_reference={self._tr or 'unspecified'})"
        )


def infer_resolution(ms: np.ndarray) -> Period:
    diffs = np.diff(ms)
    if diffs.size and np.all(diffs == diffs[0]) and diffs[0] > 0:
        return Period(ms=int(diffs[0]))
    # Calendar grids (P1M, P2M, P1Y) have uneven spacing: the first step names the
    # number of whole months, and the grid from the anchor must then hit every stamp.
    a, b = (ms_to_datetime(int(t), "utc") for t in ms[:2])
    months = (b.year - a.year) * 12 + b.month - a.month
    if months > 0:
        p = Period(months=months, calendar=True)
        if np.array_equal(grid(int(ms[0]), p, ms.size), ms):
            return p
    bad = int(np.argmax(diffs != diffs[0])) + 1 if diffs.size else 0
    raise InvalidParameterError(
        f"timestamps are not on a regular grid: timestamp {bad} is not one step of "
        f"{Period(ms=int(diffs[0])) if diffs[0] > 0 else 'a positive period'} after "
        f"timestamp {bad - 1}; store them as a NonSequentialTimeSeries (or, if each value "
        "holds until the next, a PersistentTimeSeries)"
    )


class Irregular(Series):
    __slots__ = ("_ts_ms",)

    def __init__(
        self,
        timestamps: Sequence[datetime] | np.ndarray,
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
        first = timestamps[0] if len(timestamps) else None
        tr = reference_for(first, time_reference)
        _check_one_spelling(timestamps)
        ms = datetimes_to_ms(timestamps, what="timestamps")
        if ms.size > 1 and not np.all(np.diff(ms) > 0):
            bad = int(np.argmin(np.diff(ms) > 0)) + 1
            raise InvalidParameterError(
                f"{type(self).__name__} '{name}': timestamps must be strictly increasing "
                f"(timestamp {bad} is not after timestamp {bad - 1})"
            )
        self._ts_ms = ms
        self._init_common(data, name, **keywords(locals(), time_reference=tr))
        if self._data.shape[0] != ms.size:
            raise InvalidParameterError(
                f"{type(self).__name__} '{name}': {ms.size} timestamps but data has "
                f"{self._data.shape[0]} steps (shape {list(self._data.shape)}); they must match"
            )

    @classmethod
    def from_values(
        cls,
        timestamps: Sequence[datetime],
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
    ) -> Any:
        """Build from per-timestep composite values; the values name the element type.

        As :meth:`SingleTimeSeries.from_values`, with one timestamp per value.
        """
        data, et = values_data(values, element_type, None)
        return cls(
            timestamps,
            data,
            name,
            **keywords(locals(), element_type=et),
        )

    @classmethod
    def from_arrow(
        cls,
        table: Any,
        *,
        name: str | None = None,
        application_data: str | None = None,
        element_type: str | None = None,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        time_reference: str | None = None,
    ) -> Any:
        """Build from an Arrow table with ``timestamp`` and ``value`` columns (needs
        pyarrow); keywords override the schema metadata :meth:`to_arrow` writes."""
        kw = keywords(locals())
        return arrow.from_arrow(cls, table, name=name, resolution=None, kw=kw)

    def to_arrow(self) -> Any:
        """The series as an Arrow table (``timestamp``, ``value``, metadata; needs pyarrow)."""
        return arrow.to_arrow(self)

    @classmethod
    def restore(
        cls,
        *,
        name: str,
        data: np.ndarray,
        element_type: ElementType,
        time_reference: str | None,
        timestamps_ms: np.ndarray,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        application_data: str | None = None,
    ) -> Self:
        """A stored irregular series from parts already checked (a *trusted* constructor,
        as :meth:`SingleTimeSeries.restore`), on ``timestamps_ms``: its instants, int64
        milliseconds, strictly increasing, one per step of ``data``."""
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
        obj._ts_ms = timestamps_ms
        return obj

    def replace(self, *, data: np.ndarray, timestamps_ms: np.ndarray | None = None) -> Self:
        """As :meth:`Series.replace`, on ``timestamps_ms`` when given (the instants of
        the new steps)."""
        out = super().replace(data=data)
        if timestamps_ms is not None:
            out._ts_ms = timestamps_ms
        return out

    @property
    def timestamps(self) -> list[datetime]:
        return ms_to_datetimes(self._ts_ms, self._tr)

    @property
    def timestamps_ms(self) -> np.ndarray:
        return self._ts_ms

    @property
    def length(self) -> int:
        return int(self._ts_ms.size)

    def _grid_key(self) -> tuple:
        return (self._ts_ms.tobytes(),)


def _check_one_spelling(timestamps: Any) -> None:
    """Every datetime of one axis must carry the same zone spelling (naive, utc, offset, zone)."""
    if isinstance(timestamps, np.ndarray) or not len(timestamps):
        return
    first = timestamps[0]
    if not isinstance(first, datetime):
        return
    want = infer_time_reference(first)
    for i, t in enumerate(timestamps):
        if isinstance(t, datetime) and t.tzinfo is not first.tzinfo:
            got = infer_time_reference(t)
            if got != want:
                raise InvalidParameterError(
                    f"timestamps disagree about how they are spelled: element 0 is {want} but "
                    f"element {i} is {got}; one series records one spelling. Convert them all "
                    "to one zone (or all naive) first"
                )


class NonSequentialTimeSeries(Irregular):
    """Values at explicit, strictly increasing instants; nothing between them."""

    time_series_type = TimeSeriesType.NonSequentialTimeSeries
    __slots__ = ()


class PersistentTimeSeries(Irregular):
    """A step function: the value at breakpoint i holds until breakpoint i+1 (and after the last)."""

    time_series_type = TimeSeriesType.PersistentTimeSeries
    __slots__ = ()

    def index_at(self, at: datetime) -> int:
        """Index of the breakpoint in force at ``at``.

        Raises
        ------
        InvalidParameterError
            ``at`` is before the first breakpoint (a step function is undefined there),
            or it is aware for a zoneless series (naive for a zoned one).
        """
        t = bound_ms(at, self, f"PersistentTimeSeries '{self.name}'", "at")
        i = int(np.searchsorted(self._ts_ms, t, side="right")) - 1
        if i < 0:
            first = self._render(int(self._ts_ms[0])) if self._ts_ms.size else None
            where = f"the first breakpoint {first}" if first else "any breakpoint (none)"
            raise InvalidParameterError(
                f"PersistentTimeSeries '{self.name}' has no value at {self._render(t)}: it is "
                f"before {where}, where a step function is undefined"
            )
        return i

    def breakpoint_at(self, at: datetime) -> datetime:
        """The breakpoint in force at ``at`` (raises as :meth:`index_at`)."""
        return self._render(int(self._ts_ms[self.index_at(at)]))

    def value_at(self, at: datetime) -> Any:
        """The value in force at ``at``: a numpy scalar, or the step's array for a
        non-scalar element (raises as :meth:`index_at`)."""
        return self._data[self.index_at(at)].copy()
