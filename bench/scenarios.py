"""Deterministic synthetic stores for the benchmark harness (``bench/run.py``).

Every builder first draws plain numpy arrays and a description of each series from a
seeded generator (:func:`specs`), independent of the implementation; only then are the
series objects constructed with the module under test (:func:`build_items`). Both
implementations therefore store exactly the same values, names, owners and timestamps.

Builders (``n`` is the builder's size parameter):

``sts``
    ``n`` hourly one-year (8,760 values) f64 SingleTimeSeries over ``n // 4`` distinct
    arrays: every profile is shared by 4 series of different owners.
``mixed``
    ``n`` owners, each with 11 series: three utc SingleTimeSeries (f64, shaped ``[2]``,
    ``quadratic_function``), a ``piecewise_linear`` one, an America/Denver half-hourly one,
    a NonSequentialTimeSeries, and Deterministic (utc and America/Denver), Probabilistic
    and Scenarios forecasts.
``small``
    ``n`` hourly one-week (168 values) f64 SingleTimeSeries, every array distinct.
``year``
    ``n`` hourly one-year (8,760 values) f64 SingleTimeSeries, every array distinct (the
    large stores of ``bench/scale.py``; built in chunks, never held whole).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

T0 = datetime(2024, 1, 1, tzinfo=UTC)
DENVER = ZoneInfo("America/Denver")
T0_DENVER = datetime(2024, 1, 1, tzinfo=DENVER)

BUILDERS = ("sts", "mixed", "small", "year")

# One size parameter per builder and size label (see the module docstring).
SIZES: dict[str, dict[str, int]] = {
    "sts": {"quick": 100, "small": 400, "medium": 1000, "large": 2000},
    "mixed": {"quick": 4, "small": 40, "medium": 100, "large": 200},
    "small": {"quick": 1000, "small": 2000, "medium": 10000, "large": 20000},
    "year": {"quick": 20, "small": 2000, "medium": 20000, "large": 50000},
}

# Each emits series of `ROWS_PER_UNIT` logical value rows per unit of `n` (for sts the
# export holds a quarter of them: arrays are shared by 4 series).
STS_LEN = 8760
SMALL_LEN = 168
SERIES_PER_ARRAY = 4


@dataclass
class Spec:
    """One series, implementation-free: the class name, its arguments and its owner."""

    owner_id: int
    owner_type: str
    kind: str
    args: tuple
    kwargs: dict[str, Any] = field(default_factory=dict)
    features: dict[str, Any] = field(default_factory=dict)
    rows: int = 0  # logical value rows (product of the leading dims)


def _rng(builder: str, n: int) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{builder}:{n}".encode()))


def _profile(rng: np.random.Generator, length: int, period: int = 24) -> np.ndarray:
    """A load-like f64 profile: a daily shape, a slow trend, noise; values in about [0, 2]."""
    h = np.arange(length, dtype=np.float64)
    scale = rng.uniform(0.5, 1.5)
    phase = rng.uniform(0, 2 * np.pi)
    base = 1.0 + 0.4 * np.sin(2 * np.pi * h / period + phase) + 0.1 * np.sin(2 * np.pi * h / 8760)
    return np.ascontiguousarray(scale * base + rng.normal(0.0, 0.05, length))


def _sts_specs(n: int) -> Iterator[Spec]:
    rng = _rng("sts", n)
    n_arrays = max(1, n // SERIES_PER_ARRAY)
    arrays = [_profile(rng, STS_LEN) for _ in range(n_arrays)]
    for k in range(n):
        # Series k uses array k % n_arrays: the 4 users of a profile are 4 different owners.
        yield Spec(
            owner_id=k + 1,
            owner_type="Load",
            kind="SingleTimeSeries",
            args=(T0, "PT1H", arrays[k % n_arrays], "max_active_power"),
            features={"year": 2024},
            rows=STS_LEN,
        )


def _small_specs(n: int) -> Iterator[Spec]:
    rng = _rng("small", n)
    for k in range(n):
        yield Spec(
            owner_id=k + 1,
            owner_type="Generator",
            kind="SingleTimeSeries",
            args=(T0, "PT1H", _profile(rng, SMALL_LEN), "max_active_power"),
            rows=SMALL_LEN,
        )


def _year_specs(n: int) -> Iterator[Spec]:
    rng = _rng("year", n)
    for k in range(n):
        yield Spec(
            owner_id=k + 1,
            owner_type="Generator",
            kind="SingleTimeSeries",
            args=(T0, "PT1H", _profile(rng, STS_LEN), "max_active_power"),
            rows=STS_LEN,
        )


def _piecewise(rng: np.random.Generator, steps: int, max_points: int = 3) -> np.ndarray:
    """``piecewise_linear`` rows ``[n, x1, y1, ..., xn, yn, 0 ...]`` of width ``1 + 2 max``."""
    out = np.zeros((steps, 1 + 2 * max_points))
    counts = rng.integers(1, max_points + 1, steps)
    for i, c in enumerate(counts):
        xs = np.sort(rng.uniform(0, 100, c))
        ys = np.cumsum(rng.uniform(0, 10, c))
        out[i, 0] = c
        out[i, 1 : 1 + 2 * c : 2] = xs
        out[i, 2 : 2 + 2 * c : 2] = ys
    return out


def _mixed_specs(n: int) -> Iterator[Spec]:
    rng = _rng("mixed", n)
    month = 720  # hourly steps in 30 days
    for u in range(n):
        owner = u + 1
        otype = "ThermalStandard" if u % 2 else "RenewableDispatch"

        def spec(kind: str, args: tuple, rows: int, kwargs=None, owner=owner, otype=otype, u=u):
            return Spec(owner, otype, kind, args, kwargs or {}, {"unit": u % 7}, rows)

        yield spec(
            "SingleTimeSeries", (T0, "PT1H", _profile(rng, month), "max_active_power"), month
        )
        pair = np.stack([_profile(rng, month), _profile(rng, month)], axis=1)
        yield spec("SingleTimeSeries", (T0, "PT1H", pair, "reactive_limits"), month)
        quad = np.ascontiguousarray(rng.uniform(0, 5, (month, 3)))
        yield spec(
            "SingleTimeSeries",
            (T0, "PT1H", quad, "heat_rate"),
            month,
            {"element_type": "quadratic_function"},
        )
        yield spec(
            "SingleTimeSeries",
            (T0, "PT1H", _piecewise(rng, 168), "cost_curve"),
            168,
            {"element_type": "piecewise_linear"},
        )
        yield spec(
            "SingleTimeSeries",
            (T0_DENVER, "PT30M", _profile(rng, 2 * month, period=48), "local_load"),
            2 * month,
        )
        gaps = np.cumsum(rng.integers(1, 12, 200))
        stamps = [T0 + timedelta(hours=int(g)) for g in gaps]
        yield spec("NonSequentialTimeSeries", (stamps, _profile(rng, 200), "outages"), 200)
        det = np.ascontiguousarray(rng.uniform(0, 2, (48, 30)))
        yield spec("Deterministic", (T0, "PT1H", "PT48H", "PT24H", 30, det, "forecast"), 48 * 30)
        det_mt = np.ascontiguousarray(rng.uniform(0, 2, (48, 14)))
        yield spec(
            "Deterministic",
            (T0_DENVER, "PT30M", "PT24H", "PT12H", 14, det_mt, "local_forecast"),
            48 * 14,
        )
        prob = np.ascontiguousarray(np.sort(rng.uniform(0, 2, (3, 24, 30)), axis=0))
        yield spec(
            "Probabilistic",
            (T0, "PT1H", "PT24H", "PT24H", 30, [10.0, 50.0, 90.0], prob, "prob_forecast"),
            3 * 24 * 30,
        )
        scen = np.ascontiguousarray(rng.uniform(0, 2, (5, 24, 30)))
        yield spec(
            "Scenarios", (T0, "PT1H", "PT24H", "PT24H", 30, scen, "scenario_forecast"), 5 * 24 * 30
        )


#: Eight zones: the ``zones`` builder's series fall into eight similar partitions (one
#: per time reference), the shape a parallel Parquet export spreads over its workers.
ZONES = (
    "Europe/Berlin",
    "Europe/Lisbon",
    "America/Denver",
    "America/Chicago",
    "Asia/Tokyo",
    "Australia/Sydney",
    "Africa/Cairo",
    "America/Sao_Paulo",
)


def _zones_specs(n: int) -> Iterator[Spec]:
    """``n`` year-long hourly f64 series, dealt round-robin over the eight zones (bench/
    objstore.py's ``--jobs`` store; not one of run.py's scenarios)."""
    rng = _rng("zones", n)
    for k in range(n):
        start = T0.astimezone(ZoneInfo(ZONES[k % len(ZONES)]))
        yield Spec(
            owner_id=k + 1,
            owner_type="Load",
            kind="SingleTimeSeries",
            args=(start, "PT1H", _profile(rng, STS_LEN), "max_active_power"),
            rows=STS_LEN,
        )


_SPECS = {
    "sts": _sts_specs,
    "mixed": _mixed_specs,
    "small": _small_specs,
    "year": _year_specs,
    "zones": _zones_specs,
}


def iter_specs(builder: str, n: int) -> Iterator[Spec]:
    """The series of builder ``builder`` at size ``n``, one at a time (a year store of
    50,000 series holds 3.5 GB of values: the builders must not hold them all)."""
    try:
        make = _SPECS[builder]
    except KeyError:
        raise ValueError(f"unknown builder {builder!r}; expected one of {BUILDERS}") from None
    return make(n)


def specs(builder: str, n: int) -> list[Spec]:
    """The series of builder ``builder`` at size ``n`` (deterministic for a given pair)."""
    return list(iter_specs(builder, n))


def build_items(mod: ModuleType, builder: str, n: int) -> list[dict[str, Any]]:
    """``add_time_series_bulk`` items of prebuilt series objects of module ``mod``."""
    return _objects(mod, specs(builder, n))


def summary(builder: str, n: int) -> dict[str, int]:
    """Series count and logical value rows (each series' leading-dim product, summed)."""
    series = rows = 0
    for s in iter_specs(builder, n):
        series += 1
        rows += s.rows
    return {"series": series, "rows": rows}


def build_store(mod: ModuleType, path: str, builder: str, n: int, chunk: int = 5000) -> list[int]:
    """Create a store at ``path`` holding the builder's series; returns their ids."""
    store = mod.Store.create(path)
    ids: list[int] = []
    try:
        it = iter_specs(builder, n)
        # In chunks drawn from the generator, so only one chunk's arrays are alive.
        while batch := list(itertools.islice(it, chunk)):
            ids.extend(store.add_time_series_bulk(_objects(mod, batch)))
    finally:
        store.close()
    return ids


def _objects(mod: ModuleType, ss: list[Spec]) -> list[dict[str, Any]]:
    category = mod.OwnerCategory.Component
    return [
        {
            "owner_id": s.owner_id,
            "owner_type": s.owner_type,
            "owner_category": category,
            "time_series": getattr(mod, s.kind)(*s.args, **s.kwargs),
            "features": s.features,
        }
        for s in ss
    ]


__all__ = [
    "BUILDERS",
    "SIZES",
    "Spec",
    "build_items",
    "build_store",
    "iter_specs",
    "specs",
    "summary",
]
