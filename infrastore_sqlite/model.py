"""The value classes: one per series type, with the reference's constructors and properties.

A series object is self-contained: it holds its array in the store's physical form
(C-contiguous, little-endian, one of the eleven dtypes) and its grid in integer
milliseconds, so the store never has to re-validate what a constructor accepted.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

import numpy as np

from .core.elements import (
    ElementType,
    as_store_array,
    check_composite_rows,
    check_element_shape,
    decode_element_values,
    default_element_type,
    dtype_name,
    encode_element_values,
    infer_element_type,
    parse_element_type,
)
from .core.periods import Period, as_period, divide, grid, step
from .core.slicing import _bound
from .core.timeref import (
    check_period_for_reference,
    datetime_to_ms,
    datetimes_to_ms,
    infer_time_reference,
    ms_to_datetime,
    ms_to_datetimes,
    normalize_time_reference,
    resolve_time_reference,
)
from .errors import InvalidParameterError, ParameterTypeError


class TimeSeriesType(enum.IntEnum):
    """Series types, with the reference's Python integer values (not the catalog codes)."""

    SingleTimeSeries = 0
    NonSequentialTimeSeries = 1
    PersistentTimeSeries = 2
    Deterministic = 3
    DeterministicSingleTimeSeries = 4
    Probabilistic = 5
    Scenarios = 6

    @property
    def catalog_code(self) -> int:
        """The integer the catalog stores (the reference's on-disk code)."""
        return _CATALOG_CODE[self]

    @classmethod
    def from_catalog_code(cls, code: int) -> TimeSeriesType:
        return _FROM_CATALOG_CODE[code]

    @classmethod
    def coerce(cls, value: TimeSeriesType | str | int) -> TimeSeriesType:
        """Accept the enum, its CamelCase name, or the CLI's loose spellings."""
        if isinstance(value, TimeSeriesType):
            return value
        if isinstance(value, str):
            key = value.replace("_", "").replace("-", "").lower()
            found = _LOOSE_TYPE_NAMES.get(key)
            if found is not None:
                return found
            names = ", ".join(t.name for t in cls)
            raise InvalidParameterError(
                f"unknown time_series_type {value!r}; expected one of {names}"
            )
        if isinstance(value, int):
            return cls(value)
        raise InvalidParameterError(f"time_series_type must be a TimeSeriesType, not {value!r}")

    @property
    def is_forecast(self) -> bool:
        return self in _FORECASTS

    @property
    def is_irregular(self) -> bool:
        return self in (
            TimeSeriesType.NonSequentialTimeSeries,
            TimeSeriesType.PersistentTimeSeries,
        )

    @property
    def leading_dims(self) -> int:
        """Axes before the per-step element shape in the stored (or materialized) array."""
        if self in (TimeSeriesType.Probabilistic, TimeSeriesType.Scenarios):
            return 3
        if self.is_forecast:
            return 2
        return 1

    def __str__(self) -> str:
        return f"TimeSeriesType.{self.name}"


_CATALOG_CODE = {
    TimeSeriesType.SingleTimeSeries: 0,
    TimeSeriesType.NonSequentialTimeSeries: 1,
    TimeSeriesType.Deterministic: 2,
    TimeSeriesType.DeterministicSingleTimeSeries: 3,
    TimeSeriesType.Probabilistic: 4,
    TimeSeriesType.Scenarios: 5,
    TimeSeriesType.PersistentTimeSeries: 6,
}
_FROM_CATALOG_CODE = {v: k for k, v in _CATALOG_CODE.items()}
_FORECASTS = frozenset(
    {
        TimeSeriesType.Deterministic,
        TimeSeriesType.DeterministicSingleTimeSeries,
        TimeSeriesType.Probabilistic,
        TimeSeriesType.Scenarios,
    }
)
_LOOSE_TYPE_NAMES: dict[str, TimeSeriesType] = {t.name.lower(): t for t in TimeSeriesType}
_LOOSE_TYPE_NAMES.update(
    {
        "single": TimeSeriesType.SingleTimeSeries,
        "nonsequential": TimeSeriesType.NonSequentialTimeSeries,
        "persistent": TimeSeriesType.PersistentTimeSeries,
        "deterministicsingle": TimeSeriesType.DeterministicSingleTimeSeries,
        "dst": TimeSeriesType.DeterministicSingleTimeSeries,
    }
)


class OwnerCategory(enum.IntEnum):
    """Who owns a series: a component or a supplemental attribute (catalog codes 0 and 1)."""

    Component = 0
    SupplementalAttribute = 1

    @classmethod
    def coerce(cls, value: OwnerCategory | str | int) -> OwnerCategory:
        if isinstance(value, OwnerCategory):
            return value
        if isinstance(value, str):
            for member in cls:
                if member.name.lower() == value.replace("_", "").lower():
                    return member
            raise InvalidParameterError(
                f"unknown owner_category {value!r}; expected Component or SupplementalAttribute"
            )
        if isinstance(value, int) and value in (0, 1):
            return cls(value)
        raise InvalidParameterError(
            f"unknown owner_category {value!r}; expected Component or SupplementalAttribute"
        )

    def __str__(self) -> str:
        return f"OwnerCategory.{self.name}"


UNIT_SYSTEMS = ("natural_units", "component_base")
DESCRIPTORS = ("units", "quantity_kind", "unit_system", "component_field", "application_data")


def _check_descriptor(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParameterTypeError(f"{name} must be a string or None, not {type(value).__name__}")
    if name == "unit_system" and value not in UNIT_SYSTEMS:
        raise InvalidParameterError(
            f'unknown unit_system "{value}"; expected natural_units, component_base or None'
        )
    return value


def _check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise ParameterTypeError(f"a time series name is a str, not {type(name).__name__}")
    if not name:
        raise InvalidParameterError("a time series needs a non-empty string name")
    return name


class _Series:
    """Fields every type shares: the array, its element type, the name and descriptors."""

    time_series_type: ClassVar[TimeSeriesType]
    __slots__ = (
        "_data",
        "_et",
        "_tr",
        "application_data",
        "component_field",
        "name",
        "quantity_kind",
        "unit_system",
        "units",
    )

    def _init_common(
        self,
        data: Any,
        name: Any,
        *,
        element_type: str | None = None,
        units: str | None = None,
        quantity_kind: str | None = None,
        unit_system: str | None = None,
        component_field: str | None = None,
        application_data: str | None = None,
        time_reference: str | None = None,
    ) -> None:
        self.name = _check_name(name)
        arr = as_store_array(data, what=f"{type(self).__name__} data")
        if arr is data or arr.base is not None:
            # The array (or a view of it) is the caller's: without a copy, editing it
            # after construction would change the series and what the store writes.
            arr = arr.copy()
        lead = self.time_series_type.leading_dims
        if arr.ndim < lead:
            raise InvalidParameterError(
                f"{type(self).__name__}: data needs at least {lead} dimension(s), got shape "
                f"{list(arr.shape)}"
            )
        if element_type is None:
            et = default_element_type(arr)
        else:
            et = parse_element_type(element_type)
            if et.kind == "scalar" and et.dtype != dtype_name(arr.dtype):
                raise InvalidParameterError(
                    f"element_type {et} does not match the data's dtype {dtype_name(arr.dtype)}; "
                    "convert the array or drop element_type"
                )
        check_element_shape(et, tuple(arr.shape[lead:]), dtype_name(arr.dtype))
        if et.is_composite and arr.size:
            check_composite_rows(et, arr.reshape(-1, arr.shape[-1]))
        self._data = arr
        self._et = et
        self.units = _check_descriptor("units", units)
        self.quantity_kind = _check_descriptor("quantity_kind", quantity_kind)
        self.unit_system = _check_descriptor("unit_system", unit_system)
        self.component_field = _check_descriptor("component_field", component_field)
        self.application_data = _check_descriptor("application_data", application_data)
        self._tr = time_reference

    # -- shared properties -----------------------------------------------------------
    @property
    def data(self) -> np.ndarray:
        """The array, as a fresh writable copy each time (the reference's contract:
        editing it never changes the series)."""
        return self._data.copy()

    @property
    def element_type(self) -> str:
        return str(self._et)

    @property
    def element_type_info(self) -> ElementType:
        return self._et

    @property
    def time_reference(self) -> str | None:
        """``utc``, ``zoneless``, ``±HH:MM``, an IANA zone, or None (unspecified)."""
        return self._tr

    @property
    def element_shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape[self.time_series_type.leading_dims :])

    def decoded_values(self) -> list | None:
        """The logical per-step values (a method, as in the reference); None for scalars."""
        return decode_element_values(self._data, str(self._et), self.time_series_type.leading_dims)

    def descriptors(self) -> dict[str, str | None]:
        return {d: getattr(self, d) for d in DESCRIPTORS}

    def _render(self, ms: int) -> datetime:
        return ms_to_datetime(ms, self._tr)

    def __len__(self) -> int:
        """Steps of a static series, windows (``count``) of a forecast, as in the reference."""
        return self.count if self.time_series_type.is_forecast else self.length

    def _identity(self) -> tuple:
        """Everything ``==`` compares besides the array: type, name, grid, descriptors."""
        return (type(self), self.name, str(self._et), self._tr, *self.descriptors().values())

    def _grid_key(self) -> tuple:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        """Equal by content, as in the reference: same type, name, descriptors, grid and
        array bit for bit (so NaN equals the same NaN, and -0.0 differs from 0.0)."""
        if not isinstance(other, _Series):
            return NotImplemented
        if self._identity() != other._identity() or self._grid_key() != other._grid_key():
            return False
        a, b = self._data, other._data
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()

    # Equal by content yet mutable by nothing: still unhashable, as in the reference.
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f'{type(self).__name__}(name="{self.name}", shape={list(self._data.shape)}, '
            f"element_type={self._et}, time_reference={self._tr or 'unspecified'})"
        )


def _keywords(scope: dict[str, Any], **override: Any) -> dict[str, Any]:
    """The element type and descriptor keywords of a constructor's or ``from_values``'s
    local scope (spelled out in every signature so that ``help()`` shows them), to pass on."""
    return {**{k: scope[k] for k in KEYWORDS}, **override}


KEYWORDS = (
    "application_data",
    "element_type",
    "units",
    "quantity_kind",
    "unit_system",
    "component_field",
    "time_reference",
)


def _reference_for(ts: Any, explicit: str | None) -> str | None:
    if explicit is not None:
        return normalize_time_reference(explicit)
    if isinstance(ts, datetime):
        return resolve_time_reference(ts, None)
    if isinstance(ts, np.datetime64):
        return "zoneless"
    return None


def _anchor_ms(initial_timestamp: Any) -> int:
    if isinstance(initial_timestamp, datetime | np.datetime64):
        return datetime_to_ms(initial_timestamp, what="initial_timestamp")
    raise InvalidParameterError(
        f"initial_timestamp must be a datetime, not {type(initial_timestamp).__name__}"
    )


def _positive(period: Period, what: str) -> Period:
    if not period.is_positive:
        raise InvalidParameterError(f"{what} must be positive, got {period}")
    return period


class SingleTimeSeries(_Series):
    """A regular series: ``data[k]`` is the value at ``initial_timestamp + k·resolution``."""

    time_series_type = TimeSeriesType.SingleTimeSeries
    __slots__ = ("_initial_ms", "_resolution")

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
        tr = _reference_for(initial_timestamp, time_reference)
        self._initial_ms = _anchor_ms(initial_timestamp)
        self._resolution = _positive(as_period(resolution, what="resolution"), "resolution")
        check_period_for_reference(self._resolution, tr, what="resolution")
        self._init_common(data, name, **_keywords(locals(), time_reference=tr))

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
            (see :func:`~infrastore_sqlite.elements.infer_element_type` for the table).
            Plain numbers are refused: pass them to the constructor as ``data``.
        element_type
            An assertion, refused when the values say otherwise; the only guide for
            empty values.

        Other keyword arguments are the constructor's descriptors.
        """
        data, et = _values_data(values, element_type, None)
        return cls(
            initial_timestamp,
            resolution,
            data,
            name,
            **_keywords(locals(), element_type=et),
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
        res = _infer_resolution(ms)
        return cls(
            timestamps[0],
            res,
            data,
            name,
            **_keywords(locals()),
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
        from .interchange.parquet.arrow import from_arrow

        kw = _keywords(locals())
        return from_arrow(cls, table, name=name, resolution=resolution, kw=kw)

    def to_arrow(self) -> Any:
        """The series as an Arrow table: ``timestamp`` and ``value`` columns, its name,
        type, element type and shape, time reference, resolution and set descriptors in
        the schema metadata (needs pyarrow)."""
        from .interchange.parquet.arrow import to_arrow

        return to_arrow(self)

    @property
    def initial_timestamp(self) -> datetime:
        return self._render(self._initial_ms)

    @property
    def initial_ms(self) -> int:
        return self._initial_ms

    @property
    def resolution(self) -> str:
        return str(self._resolution)

    @property
    def resolution_period(self) -> Period:
        return self._resolution

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
            f'SingleTimeSeries(name="{self.name}", initial_timestamp={self.initial_timestamp}, '
            f"length={self.length}, resolution={self.resolution}, shape={list(self._data.shape)}, "
            f"time_reference={self._tr or 'unspecified'})"
        )


def _infer_resolution(ms: np.ndarray) -> Period:
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


class _Irregular(_Series):
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
        tr = _reference_for(first, time_reference)
        _check_one_spelling(timestamps)
        ms = datetimes_to_ms(timestamps, what="timestamps")
        if ms.size > 1 and not np.all(np.diff(ms) > 0):
            bad = int(np.argmin(np.diff(ms) > 0)) + 1
            raise InvalidParameterError(
                f"{type(self).__name__} '{name}': timestamps must be strictly increasing "
                f"(timestamp {bad} is not after timestamp {bad - 1})"
            )
        self._ts_ms = ms
        self._init_common(data, name, **_keywords(locals(), time_reference=tr))
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
        data, et = _values_data(values, element_type, None)
        return cls(
            timestamps,
            data,
            name,
            **_keywords(locals(), element_type=et),
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
        from .interchange.parquet.arrow import from_arrow

        kw = _keywords(locals())
        return from_arrow(cls, table, name=name, resolution=None, kw=kw)

    def to_arrow(self) -> Any:
        """The series as an Arrow table (``timestamp``, ``value``, metadata; needs pyarrow)."""
        from .interchange.parquet.arrow import to_arrow

        return to_arrow(self)

    @classmethod
    def _from_ms(cls, ms: np.ndarray, data: np.ndarray, name: str, tr: str | None, **kw: Any):
        obj = cls.__new__(cls)
        obj._ts_ms = np.asarray(ms, dtype=np.int64)
        obj._init_common(data, name, time_reference=tr, **kw)
        return obj

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


class NonSequentialTimeSeries(_Irregular):
    """Values at explicit, strictly increasing instants; nothing between them."""

    time_series_type = TimeSeriesType.NonSequentialTimeSeries
    __slots__ = ()


class PersistentTimeSeries(_Irregular):
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
        t = _bound(at, self, f"PersistentTimeSeries '{self.name}'", "at")
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


class _Forecast(_Series):
    __slots__ = ("_count", "_horizon", "_initial_ms", "_interval", "_resolution")

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
        tr = _reference_for(initial_timestamp, kw.pop("time_reference", None))
        self._initial_ms = _anchor_ms(initial_timestamp)
        res = _positive(as_period(resolution, what="resolution"), "resolution")
        hor = _positive(as_period(horizon, what="horizon"), "horizon")
        itv = as_period(interval, what="interval")
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
    def initial_timestamp(self) -> datetime:
        return self._render(self._initial_ms)

    @property
    def initial_ms(self) -> int:
        return self._initial_ms

    @property
    def resolution(self) -> str:
        return str(self._resolution)

    @property
    def horizon(self) -> str:
        return str(self._horizon)

    @property
    def interval(self) -> str:
        return str(self._interval)

    @property
    def resolution_period(self) -> Period:
        return self._resolution

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
        return (
            f'{type(self).__name__}(name="{self.name}", initial_timestamp={self.initial_timestamp}, '
            f"resolution={self.resolution}, horizon={self.horizon}, interval={self.interval}, "
            f"count={self.count}, shape={list(self._data.shape)}, "
            f"time_reference={self._tr or 'unspecified'})"
        )


def _values_data(
    values: Sequence[Any], element_type: str | None, lead: list[int] | None
) -> tuple[np.ndarray, str]:
    """``from_values``: the element type the values name (``element_type`` asserts it),
    and the values encoded into an array with the leading axes ``lead``."""
    et = infer_element_type(values, declared=element_type)
    return encode_element_values(values, et, lead), et


def _steps(horizon: Any, resolution: Any) -> int:
    return divide(
        as_period(horizon, what="horizon"),
        as_period(resolution, what="resolution"),
        what="horizon",
    )


class Deterministic(_Forecast):
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
            _keywords(locals()),
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
        data, et = _values_data(values, element_type, [_steps(horizon, resolution), count])
        return cls(
            initial_timestamp,
            resolution,
            horizon,
            interval,
            count,
            data,
            name,
            **_keywords(locals(), element_type=et),
        )

    def to_arrow_windows(self) -> dict[datetime, Any]:
        """One Arrow table per window, keyed by its issue time (needs pyarrow).

        Each table is what :meth:`SingleTimeSeries.to_arrow` gives for that window, with
        ``interval``, ``horizon``, ``count`` and ``issue_time`` added to its metadata.
        """
        from .interchange.parquet.arrow import windows_to_arrow

        return windows_to_arrow(self)


class Probabilistic(_Forecast):
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
            _keywords(locals()),
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
        data, et = _values_data(values, element_type, lead)
        return cls(
            initial_timestamp,
            resolution,
            horizon,
            interval,
            count,
            percentiles,
            data,
            name,
            **_keywords(locals(), element_type=et),
        )

    @property
    def percentiles(self) -> list[float]:
        return list(self._percentiles)


class Scenarios(_Forecast):
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
            _keywords(locals()),
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
        data, et = _values_data(values, element_type, lead)
        return cls(
            initial_timestamp,
            resolution,
            horizon,
            interval,
            count,
            data,
            name,
            **_keywords(locals(), element_type=et),
        )

    @property
    def scenario_count(self) -> int:
        return int(self._data.shape[0])


SERIES_CLASSES: dict[TimeSeriesType, type[_Series]] = {
    TimeSeriesType.SingleTimeSeries: SingleTimeSeries,
    TimeSeriesType.NonSequentialTimeSeries: NonSequentialTimeSeries,
    TimeSeriesType.PersistentTimeSeries: PersistentTimeSeries,
    TimeSeriesType.Deterministic: Deterministic,
    TimeSeriesType.Probabilistic: Probabilistic,
    TimeSeriesType.Scenarios: Scenarios,
}

AnySeries = (
    SingleTimeSeries
    | NonSequentialTimeSeries
    | PersistentTimeSeries
    | Deterministic
    | Probabilistic
    | Scenarios
)
