"""The SQLite export of a time range against the reference implementation (infrastore
0.15.1): the same files, the same refusals, and the reference imports our sliced export."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from export_interop_helpers import (
    OURS,
    REF,
    T0,
    H,
    compare_databases,
    rederive_hashes,
)

from infrastore_sqlite.core.elements import parse_element_type, shrink


def range_specs(L: ModuleType) -> list[tuple]:
    """A store whose series all overlap the first hours of 2024 (UTC), for slicing."""
    C = L.OwnerCategory.Component
    STS = L.SingleTimeSeries
    ts = [T0, T0 + timedelta(minutes=90), T0 + 4 * H, T0 + 7 * H]
    pwl = np.array(
        [[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0], [1, 6, 6, 0, 0], [0, 0, 0, 0, 0]], dtype=float
    )
    series = [
        STS(T0, "PT1H", np.array([1.0, np.nan, np.inf, 4.0, 5.0, 6.0]), "sts"),
        STS(T0, "PT1H", np.arange(6, dtype=np.int32), "sts_i32"),
        STS(T0, "PT1H", np.arange(12.0).reshape(6, 2), "sts_2"),
        STS(T0, "PT1H", pwl, "pwl", element_type="piecewise_linear"),
        STS(
            T0,
            "PT1H",
            np.array([[2, 0, 1, 5], [1, 3, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0]], dtype=float),
            "pws",
            element_type="piecewise_step",
        ),
        STS(T0, "PT30M", np.arange(12.0), "sts_30m"),
        L.NonSequentialTimeSeries(ts, np.array([1.0, 2.0, np.nan, 4.0]), "ns"),
        L.NonSequentialTimeSeries(ts, np.array([[1, 2]] * 4, dtype=np.uint16), "ns_2"),
        L.PersistentTimeSeries(ts, np.array([5.0, 6.0, 7.0, 8.0]), "pers"),
        L.Deterministic(T0, "PT1H", "PT3H", "PT2H", 3, np.arange(9.0).reshape(3, 3), "det"),
        L.Deterministic(
            T0,
            "PT1H",
            "PT2H",
            "PT2H",
            3,
            np.array([[[1, 5, 5, 0, 0]] * 3, [[2, 0, 0, 1, 1]] * 3], dtype=float),
            "det_pwl",
            element_type="piecewise_linear",
        ),
        L.Probabilistic(
            T0, "PT1H", "PT2H", "PT2H", 3, [0.1, 0.9], np.arange(12.0).reshape(2, 2, 3), "prob"
        ),
        L.Scenarios(T0, "PT1H", "PT2H", "PT2H", 3, np.arange(12.0).reshape(2, 2, 3), "scen"),
    ]
    return [(1, "Gen", C, ts_, None) for ts_ in series]


def build_ranged(L: ModuleType, path: Path) -> Any:
    store = L.Store.create(path)
    for owner, ot, cat, ts, feats in range_specs(L):
        store.add_time_series(owner, ot, cat, ts, features=feats)
    store.add_time_series(
        2, "Gen", L.OwnerCategory.Component, L.SingleTimeSeries(T0, "PT15M", np.arange(8.0), "src")
    )
    store.transform_single_time_series("PT1H", "PT30M", resolution="PT15M")
    return store


@pytest.fixture(scope="module")
def ranged(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("ranged")
    ref = build_ranged(REF, d / "ref.h5")
    ours = build_ranged(OURS, d / "ours.h5")
    yield ref, ours
    ref.close()
    ours.close()


RANGES = [
    (T0 + timedelta(minutes=90), T0 + 4 * H),
    (T0 + 2 * H, T0 + 3 * H),
    (T0 + 2 * H, T0 + 4 * H + timedelta(minutes=1)),
    (T0, T0 + 2 * H),
    (T0 + 4 * H, T0 + 8 * H),
]


@pytest.mark.parametrize(("start", "end"), RANGES)
def test_same_time_range_exports(ranged, tmp_path: Path, start, end) -> None:
    ref, ours = ranged
    filters: list[dict] = [
        {"time_series_type": "SingleTimeSeries", "owner_id": 1},
        {"time_series_type": "NonSequentialTimeSeries"},
        {"time_series_type": "PersistentTimeSeries"},
        {"name_glob": "[dps][ecr]*", "owner_id": 1},
        {"include_derived": True, "time_series_type": "DeterministicSingleTimeSeries"},
    ]
    compared = 0
    for i, f in enumerate(filters):
        outcome = []
        for store, tag in ((ref, "r"), (ours, "o")):
            path = tmp_path / f"{tag}{i}.sqlite"
            try:
                outcome.append(store.export_sqlite(path, time_range=(start, end), **f))
            except (REF.InvalidParameterError, OURS.InvalidParameterError):
                outcome.append("refused")
                assert not path.exists()
        assert outcome[1] == outcome[0], f
        if outcome[0] != "refused":
            compared += 1
            compare_databases(tmp_path / f"r{i}.sqlite", tmp_path / f"o{i}.sqlite")
            rederive_hashes(tmp_path / f"o{i}.sqlite")
    assert compared >= 3


@pytest.mark.parametrize(
    ("start", "end", "filters"),
    [
        (T0 + H, T0 + 2 * H, {"name": "det"}),  # not on a window boundary
        (T0 + 9 * H, T0 + 12 * H, {"name": "det"}),  # past the last window
        (T0 - H, T0 + H, {"name": "pers"}),  # before the first breakpoint
        (T0 + 2 * H, T0 + 2 * H, {"name": "det"}),  # empties the series
        (T0 + 100 * H, T0 + 200 * H, {"name": "sts"}),  # empties the series
        (T0 + H, T0, {"name": "sts"}),  # end < start
    ],
)
def test_same_time_range_refusals(ranged, tmp_path: Path, start, end, filters) -> None:
    ref, ours = ranged
    for store, name in ((ref, "r"), (ours, "o")):
        with pytest.raises((REF.InvalidParameterError, OURS.InvalidParameterError)):
            store.export_sqlite(tmp_path / f"{name}.sqlite", time_range=(start, end), **filters)
    assert not (tmp_path / "o.sqlite").exists()


def test_naive_bounds_on_a_utc_series_are_its_wall_clock_where_the_reference_refuses(
    ranged, tmp_path: Path
) -> None:
    # A deliberate difference (issue 11): one naive range serves a mixed selection.
    ref, ours = ranged
    naive = (datetime(2024, 1, 1, 1), datetime(2024, 1, 1, 4))
    with pytest.raises(REF.InvalidParameterError):
        ref.export_sqlite(tmp_path / "r.sqlite", time_range=naive, name="sts")
    aware = tuple(t.replace(tzinfo=UTC) for t in naive)
    assert ours.export_sqlite(tmp_path / "o.sqlite", time_range=naive, name="sts") == (
        ours.export_sqlite(tmp_path / "o2.sqlite", time_range=aware, name="sts")
    )


def test_the_reference_imports_our_sliced_export(ranged, tmp_path: Path) -> None:
    ref, ours = ranged
    window = (T0 + 2 * H, T0 + 4 * H + timedelta(minutes=1))
    ours.export_sqlite(tmp_path / "o.sqlite", time_range=window, owner_id=1)
    fresh = REF.Store.create(tmp_path / "fresh.h5")
    ids = fresh.import_sqlite(tmp_path / "o.sqlite")
    originals = ref.read_by_ids_range([m["id"] for m in ref.list_metadata(owner_id=1)], window)
    assert len(ids) == len(originals) == len(range_specs(REF))
    by_name = {m["name"]: m["id"] for m in fresh.list_metadata()}
    for a in originals:
        b = fresh.read_by_id(by_name[a.name])
        et = parse_element_type(a.element_type)
        x = np.asarray(a.data)
        x = shrink(et, x) if et.is_ragged else x
        assert x.tobytes() == np.asarray(b.data).tobytes(), a.name
        if hasattr(a, "timestamps"):
            assert a.timestamps == b.timestamps, a.name
        else:
            assert (a.initial_timestamp, a.count) == (b.initial_timestamp, b.count), a.name
    fresh.close()
