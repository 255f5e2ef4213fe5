"""What every series type shares: ``Series`` (the array, its element type, the name and
descriptors) and the checks and keyword plumbing the constructors share.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar, Self

import numpy as np

from ..core.elements import (
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
from ..core.periods import Period
from ..core.timeref import (
    datetime_to_ms,
    ms_to_datetime,
    ms_to_rfc3339,
    normalize_time_reference,
    render_zone,
    resolve_time_reference,
)
from ..errors import ZONED, InvalidParameterError, ParameterTypeError
from .kinds import DESCRIPTORS, UNIT_SYSTEMS, TimeSeriesType


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


def check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise ParameterTypeError(f"a time series name is a str, not {type(name).__name__}")
    if not name:
        raise InvalidParameterError("a time series needs a non-empty string name")
    return name


class Series:
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
        self.name = check_name(name)
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
    def stored_array(self) -> np.ndarray:
        """The array in the store's physical form (C-contiguous, little-endian), without a
        copy: a read-only view, for the store and the containers, which read a series'
        array without paying for :attr:`data`'s copy."""
        view = self._data.view()
        view.flags.writeable = False
        return view

    def replace(self, *, data: np.ndarray) -> Self:
        """A copy of this series over ``data``; every other part is kept (the regular,
        irregular and forecast series also take their grid's new parts, see theirs).

        A *trusted* constructor, like :meth:`restore`: nothing is checked, so ``data``
        must be in the stored form and agree with the grid, as a slice of this series'
        own array (:mod:`.slicing`) or the same values at another width do. It is made
        C-contiguous if it is not.
        """
        out = copy.copy(self)
        out._data = np.ascontiguousarray(data)
        return out

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
        if not isinstance(other, Series):
            return NotImplemented
        if self._identity() != other._identity() or self._grid_key() != other._grid_key():
            return False
        a, b = self._data, other._data
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()

    # Equal by content yet mutable by nothing: still unhashable, as in the reference.
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        # The reference's fields and order (an irregular series shows its length).
        return (
            f'{type(self).__name__}(name="{self.name}", length={len(self)}, '
            f"shape={list(self._data.shape)}, time_reference={self._tr or 'unspecified'})"
        )


class Gridded(Series):
    """What the series on a regular grid share (``SingleTimeSeries`` and the forecasts):
    the anchor in milliseconds and the resolution."""

    __slots__ = ("_initial_ms", "_resolution")

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

    def replace(self, *, data: np.ndarray, initial_ms: int | None = None) -> Self:
        """As :meth:`Series.replace`, re-anchored at ``initial_ms`` (milliseconds) when
        given."""
        out = super().replace(data=data)
        if initial_ms is not None:
            out._initial_ms = initial_ms
        return out


def bound_ms(value: datetime, series: Series, label: str, what: str) -> int:
    """The stored milliseconds a query bound means for ``series`` (a range's ends, a read's
    ``start_time``, a persistent series' ``at``).

    One range may be given to a selection that mixes zoneless and zoned series (the demo
    store does), so the rule is per series:

    - a naive bound is read on the series' own wall clock: as is for a zoneless series,
      in UTC for a ``utc`` or unspecified one, at its offset or in its IANA zone otherwise
      (``2024-07-01T00:00`` is midnight where each series lives; a wall time that a DST
      change skips or repeats is read as the zone gives it, ``fold=0``);
    - an aware bound is an instant: it applies to every zoned series as it is, and a
      zoneless series, which records no instants, refuses it.

    Raises
    ------
    InvalidParameterError
        ``value`` is no datetime, or it is aware and ``series`` zoneless (naming ``label``
        and the way out, ``{zoned}``).
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


def wall_utc(ms: int) -> str:
    """An instant as the reference's reprs show it: the UTC wall clock, ``… 07:00:00 UTC``
    for midnight in Denver, a zoneless instant read as UTC."""
    return ms_to_rfc3339(ms)[: -len("+00:00")].replace("T", " ") + " UTC"


def keywords(scope: dict[str, Any], **override: Any) -> dict[str, Any]:
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


def reference_for(ts: Any, explicit: str | None) -> str | None:
    if explicit is not None:
        return normalize_time_reference(explicit)
    if isinstance(ts, datetime):
        return resolve_time_reference(ts, None)
    if isinstance(ts, np.datetime64):
        return "zoneless"
    return None


def anchor_ms(initial_timestamp: Any) -> int:
    if isinstance(initial_timestamp, datetime | np.datetime64):
        return datetime_to_ms(initial_timestamp, what="initial_timestamp")
    # The reference's words, which callers match on.
    raise InvalidParameterError(
        f"initial_timestamp: expected a datetime, got {type(initial_timestamp).__name__}"
    )


def positive(period: Period, what: str) -> Period:
    """``period``, refused unless positive (in the words of a sub-millisecond refusal:
    PT0S, from a timedelta of a few microseconds too, is no whole number of ms)."""
    if not period.is_positive:
        raise InvalidParameterError(
            f"{what} {period} is not a positive whole number of milliseconds; the store "
            "cannot represent it"
        )
    return period


def values_data(
    values: Sequence[Any], element_type: str | None, lead: list[int] | None
) -> tuple[np.ndarray, str]:
    """``from_values``: the element type the values name (``element_type`` asserts it),
    and the values encoded into an array with the leading axes ``lead``."""
    et = infer_element_type(values, declared=element_type)
    return encode_element_values(values, et, lead), et
