"""What a series is and who owns it: ``TimeSeriesType`` and ``OwnerCategory`` with their
catalog codes and loose spellings, and the descriptor names (``DESCRIPTORS``,
``UNIT_SYSTEMS``).
"""

from __future__ import annotations

import enum

from ..errors import InvalidParameterError, ParameterTypeError


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
        if not isinstance(value, int):  # a wrong type, as the reference's TypeError says
            raise ParameterTypeError(
                f"owner_category must be an OwnerCategory or its name, got {value!r} "
                "(Component or SupplementalAttribute)"
            )
        raise InvalidParameterError(
            f"unknown owner_category {value!r}; expected Component or SupplementalAttribute"
        )

    def __str__(self) -> str:
        return f"OwnerCategory.{self.name}"


UNIT_SYSTEMS = ("natural_units", "component_base")
DESCRIPTORS = ("units", "quantity_kind", "unit_system", "component_field", "application_data")
