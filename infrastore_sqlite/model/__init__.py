"""The value classes: one per series type, with the reference's constructors and properties.

A series object is self-contained: it holds its array in the store's physical form
(C-contiguous, little-endian, one of the eleven dtypes) and its grid in integer
milliseconds, so the store never has to re-validate what a constructor accepted.

The package holds ``kinds`` (``TimeSeriesType``, ``OwnerCategory``, the descriptor names),
``base`` (``Series``, what every type shares), ``arrow`` (a series as an Arrow table),
``static`` (``SingleTimeSeries`` and the irregular series) and ``forecasts``
(``Deterministic``, ``Probabilistic``, ``Scenarios``);
this module re-exports their names (the private ones the store and the containers use too)
and maps each type to its class.

Layer: imports ``core`` and ``errors`` (``tests/test_layers.py`` checks it).
"""

from __future__ import annotations

from .base import KEYWORDS, Series, check_name
from .forecasts import Deterministic, Forecast, Probabilistic, Scenarios
from .kinds import DESCRIPTORS, UNIT_SYSTEMS, OwnerCategory, TimeSeriesType
from .static import (
    Irregular,
    NonSequentialTimeSeries,
    PersistentTimeSeries,
    SingleTimeSeries,
    infer_resolution,
)

SERIES_CLASSES: dict[TimeSeriesType, type[Series]] = {
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

__all__ = [
    "DESCRIPTORS",
    "KEYWORDS",
    "SERIES_CLASSES",
    "UNIT_SYSTEMS",
    "AnySeries",
    "Deterministic",
    "Forecast",
    "Irregular",
    "NonSequentialTimeSeries",
    "OwnerCategory",
    "PersistentTimeSeries",
    "Probabilistic",
    "Scenarios",
    "Series",
    "SingleTimeSeries",
    "TimeSeriesType",
    "check_name",
    "infer_resolution",
]
