"""The varied store: every partition kind, value type and time reference in one store.

Shared by the SQLite and Parquet export tests (built once per module there), with the
helpers that add series to it.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
    Store,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
FORECASTS = {"Deterministic", "DeterministicSingleTimeSeries", "Probabilistic", "Scenarios"}
LANES = {"Probabilistic": "percentile", "Scenarios": "scenario"}


def new_store(path: Path) -> Store:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Store.create(path)


def add(store: Store, ts: Any, owner: int = 1, features: dict | None = None, **kw: Any) -> int:
    return store.add_time_series(
        owner, kw.get("owner_type", "Gen"), kw.get("category", "Component"), ts, features=features
    )


def sts(name: str, data: Any, start: datetime = T0, res: str = "PT1H", **kw: Any):
    # Composites and tuples hold f64; plain lists of ints would default to i64.
    arr = np.asarray(data, dtype=np.float64 if "element_type" in kw else None)
    return SingleTimeSeries(start, res, arr, name, **kw)


def build_varied(store: Store) -> None:
    nan_inf = np.array([1.5, np.nan, np.inf, -np.inf, 1e-7, 1e16])
    add(
        store,
        sts(
            "f64",
            nan_inf,
            units="MW",
            quantity_kind="power",
            unit_system="natural_units",
            component_field="max_active_power",
            application_data='{"a":1}',
        ),
        features={"zone": "north", "year": 2030, "w": 0.5, "flag": True, "ü": "é", "Z": 1.0},
    )
    add(store, sts("f32", np.array([1.1, np.nan, -np.inf], dtype=np.float32)))
    for dt in ("int64", "int32", "uint64", "int16", "int8", "uint32", "uint16", "uint8"):
        info = np.iinfo(dt)
        add(store, sts(dt, np.array([info.min, 0, min(info.max, 2**63 - 1)], dtype=dt)))
    add(store, sts("bool", np.array([True, False, True])))
    add(store, sts("f64_2", [[1.0, -0.0], [np.nan, np.inf], [0.1, 1e300]]))
    add(store, sts("f64_2x3", np.arange(12.0).reshape(2, 2, 3) * 0.5))
    add(store, sts("i32_2x3", np.arange(12, dtype=np.int32).reshape(2, 2, 3) - 6))
    add(store, sts("bool_2", np.array([[True, False], [False, True]])))
    add(store, sts("tup", [[1.0, 2.0, -0.0], [np.nan, -np.inf, 3.5]], element_type="tuple(3,f64)"))
    add(store, sts("lin", [[2.5, -1.0], [0.0, 0.0]], element_type="linear_function"))
    add(store, sts("quad", [[0.5, 2.0, 3.0]], element_type="quadratic_function"))
    pwl = np.array([[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0]])
    add(store, sts("pwl", pwl, element_type="piecewise_linear"))
    wide = np.concatenate([pwl, np.zeros((2, 4))], axis=1)  # width 9, 2 points at most
    add(store, sts("pwl", wide, element_type="piecewise_linear"), owner=9)
    add(store, sts("pws", [[2, 0, 1, 5], [1, 3, 0, 0]], element_type="piecewise_step"))
    shared = [10.0, 20.0, 30.0]
    add(store, sts("shared", shared), owner=2)
    add(store, sts("shared", shared), owner=3)
    add(
        store,
        sts("shared", shared),
        owner=4,
        owner_type="Weather",
        category="SupplementalAttribute",
    )
    add(store, sts("shared_later", shared, start=T0 + 5 * H), owner=5)
    add(store, sts("offset", [1.0, 2.0], start=datetime(2024, 1, 1, tzinfo=timezone(-7 * H))))
    add(
        store,
        sts(
            "denver", np.arange(4.0), start=datetime(2024, 3, 10, tzinfo=ZoneInfo("America/Denver"))
        ),
    )
    add(store, sts("p1m", np.arange(5.0), start=datetime(2024, 1, 31), res="P1M"))
    add(store, sts("pre1970", np.arange(3.0), start=datetime(1969, 12, 31, 22, tzinfo=UTC)))
    ts = [T0, T0 + timedelta(minutes=7), T0 + timedelta(hours=5, milliseconds=500)]
    add(store, NonSequentialTimeSeries(ts, np.array([1.0, np.nan, -2.0]), "ns"))
    add(
        store, NonSequentialTimeSeries([datetime(1960, 1, 1, tzinfo=UTC), T0], np.ones(2), "ns_old")
    )
    add(store, PersistentTimeSeries(ts, np.array([[1, 2], [3, 4], [5, 6]], dtype=np.int32), "pers"))
    add(store, Deterministic(T0, "PT1H", "PT3H", "PT2H", 2, np.arange(6.0).reshape(3, 2), "det"))
    add(store, Deterministic(T0, "PT1H", "PT2H", "PT0S", 1, np.arange(2.0).reshape(2, 1), "det1"))
    add(
        store,
        Deterministic(T0, "PT1H", "PT2H", "PT1H", 2, np.arange(8.0).reshape(2, 2, 2), "det_2"),
    )
    add(
        store,
        Probabilistic(
            T0, "PT1H", "PT2H", "PT1H", 2, [0.1, 0.5, 0.9], np.arange(12.0).reshape(3, 2, 2), "prob"
        ),
    )
    add(store, Scenarios(T0, "PT1H", "PT2H", "PT1H", 3, np.arange(12).reshape(2, 2, 3), "scen"))
    add(
        store,
        Scenarios(
            datetime(2024, 1, 31, tzinfo=UTC),
            "P1M",
            "P2M",
            "P1M",
            2,
            np.arange(8.0).reshape(2, 2, 2),
            "scen_m",
        ),
    )
    add(store, sts("src", np.arange(6.0), res="PT15M"), owner=7)
    add(store, sts("src2", np.arange(12.0).reshape(6, 2), res="PT15M"), owner=7)
    store.transform_single_time_series("PT30M", "PT15M", resolution="PT15M")


SERIES_TAIL = [
    (c, "TEXT", 1, 0)
    for c in (
        "features",
        "element_type",
        "element_shape",
        "time_reference",
        "units",
        "quantity_kind",
        "unit_system",
        "component_field",
        "application_data",
    )
]


def varied_store_file(path: Path) -> Path:
    """A closed store at ``path`` holding :func:`build_varied`'s series (a module's
    fixture opens it read-only as often as it likes)."""
    s = new_store(path)
    try:
        build_varied(s)
    finally:
        s.close()
    return path


def identity(meta: dict[str, Any]) -> tuple:
    """A series' identity in the store (its key), from its metadata."""
    return (
        meta["owner_id"],
        meta["owner_category"],
        meta["time_series_type"],
        meta["name"],
        meta["resolution"],
        meta["interval"],
        tuple(sorted(meta["features"].items())),
    )


def snapshot(store: Store, *, derived: bool = True) -> dict[tuple, tuple[dict, Any]]:
    """identity -> (metadata without id, the series read back); ``derived=False`` leaves
    out the DeterministicSingleTimeSeries, which an export leaves out by default."""
    out = {}
    for meta in store.list_metadata():
        if meta["time_series_type"] == "DeterministicSingleTimeSeries" and not derived:
            continue
        full = dict(store.get_metadata_by_id(meta["id"]))
        sid = full.pop("id")
        out[identity(full)] = (full, store.read_by_id(sid))
    return out
