"""``Store.export_sqlite`` of a time range (§13.2): each kind of series sliced as the layout
says, refusals that create no file, hashes that rederive."""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from export_sqlite_helpers import (
    H_MS,
    T0_MS,
    array_of,
    connect,
    partitions,
    series_row,
)
from varied_store import T0, H, add, new_store, sts

from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    Store,
)
from infrastore_sqlite.core.hashing import data_hash, timestamps_hash
from infrastore_sqlite.errors import InvalidParameterError

# ---------------------------------------------------------------------- time_range (§13.2)


@pytest.fixture
def ranged(tmp_path: Path) -> Store:
    store = new_store(tmp_path / "s.h5")
    add(store, sts("sts", np.arange(6.0)))
    ts = [T0, T0 + timedelta(minutes=90), T0 + 4 * H]
    add(store, NonSequentialTimeSeries(ts, np.arange(3.0), "ns"))
    add(store, PersistentTimeSeries(ts, np.arange(3.0), "pers"))
    add(store, Deterministic(T0, "PT1H", "PT3H", "PT2H", 3, np.arange(9.0).reshape(3, 3), "det"))
    add(
        store,
        Probabilistic(
            T0, "PT1H", "PT3H", "PT2H", 3, [0.1, 0.9], np.arange(18.0).reshape(2, 3, 3), "prob"
        ),
    )
    add(store, Scenarios(T0, "PT1H", "PT3H", "PT2H", 3, np.arange(18.0).reshape(2, 3, 3), "scen"))
    add(
        store,
        sts(
            "pwl",
            [[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0], [1, 6, 6, 0, 0]],
            element_type="piecewise_linear",
        ),
    )
    yield store
    store.close()


def export_range(store: Store, path: Path, start: datetime, end: datetime, **filters: Any):
    result = store.export_sqlite(path, time_range=(start, end), **filters)
    return result, sqlite3.connect(path)


def test_range_static_floors_to_the_grid(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(
        ranged, tmp_path / "e.sqlite", T0 + timedelta(minutes=90), T0 + 4 * H, name="sts"
    )
    assert c.execute(
        'SELECT timestamp, value FROM "SingleTimeSeries_f64_utc_values"'
    ).fetchall() == [
        (T0_MS + H_MS, 1.0),
        (T0_MS + 2 * H_MS, 2.0),
        (T0_MS + 3 * H_MS, 3.0),
    ]
    r = series_row(c, "SingleTimeSeries_f64_utc", "sts")
    assert (r["initial_timestamp"], r["length"]) == (T0_MS + H_MS, 3)
    ((h, axis),) = c.execute('SELECT data_hash, time_axis FROM "SingleTimeSeries_f64_utc_arrays"')
    assert axis == "R3/2024-01-01T01:00:00Z/PT1H"
    assert h == data_hash(np.array([1.0, 2.0, 3.0])).hex()


def test_range_nonsequential_is_half_open(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(
        ranged, tmp_path / "e.sqlite", T0 + timedelta(minutes=90), T0 + 4 * H, name="ns"
    )
    rows = c.execute('SELECT timestamp, value FROM "NonSequentialTimeSeries_f64_utc_values"')
    assert rows.fetchall() == [(T0_MS + 90 * 60_000, 1.0)]
    ((axis,),) = c.execute('SELECT time_axis FROM "NonSequentialTimeSeries_f64_utc_arrays"')
    assert axis == timestamps_hash(np.array([T0_MS + 90 * 60_000])).hex()


def test_range_persistent_keeps_the_breakpoint_in_force(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(ranged, tmp_path / "e.sqlite", T0 + 2 * H, T0 + 5 * H, name="pers")
    rows = c.execute('SELECT timestamp, value FROM "PersistentTimeSeries_f64_utc_values"')
    assert rows.fetchall() == [(T0_MS + 90 * 60_000, 1.0), (T0_MS + 4 * H_MS, 2.0)]


def test_range_persistent_before_the_first_breakpoint(ranged: Store, tmp_path: Path) -> None:
    out = tmp_path / "e.sqlite"
    with pytest.raises(InvalidParameterError, match="before the first breakpoint"):
        ranged.export_sqlite(out, name="pers", time_range=(T0 - H, T0 + H))
    assert not out.exists()


def test_range_forecasts_keep_whole_windows(ranged: Store, tmp_path: Path) -> None:
    # Issue times 0h, 2h, 4h: [2h, 4h+1min) keeps windows 1 and 2, both whole.
    result, c = export_range(
        ranged, tmp_path / "e.sqlite", T0 + 2 * H, T0 + 4 * H + timedelta(minutes=1)
    )
    rows = {d["time_series_type"]: d["rows"] for d in result}
    assert rows["Deterministic"] == 6
    assert rows["Probabilistic"] == rows["Scenarios"] == 12
    det = c.execute(
        'SELECT issue_time, timestamp, value FROM "Deterministic_f64_utc_values"'
    ).fetchall()
    assert det[0] == (T0_MS + 2 * H_MS, T0_MS + 2 * H_MS, 1.0)
    assert det[-1] == (T0_MS + 4 * H_MS, T0_MS + 6 * H_MS, 8.0)  # runs past the end
    r = series_row(c, "Deterministic_f64_utc", "det")
    assert (r["initial_timestamp"], r["count"]) == (T0_MS + 2 * H_MS, 2)
    ((h, axis),) = c.execute('SELECT data_hash, time_axis FROM "Deterministic_f64_utc_arrays"')
    assert axis == "R2/2024-01-01T02:00:00Z/PT2H/PT3H/PT1H"
    assert h == data_hash(np.arange(9.0).reshape(3, 3)[:, 1:]).hex()


def test_range_one_window_keeps_its_interval(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(ranged, tmp_path / "e.sqlite", T0 + 2 * H, T0 + 3 * H, name="det")
    ((axis,),) = c.execute('SELECT time_axis FROM "Deterministic_f64_utc_arrays"')
    assert axis == "R1/2024-01-01T02:00:00Z/PT2H/PT3H/PT1H"


def test_range_before_the_first_window_clamps(ranged: Store, tmp_path: Path) -> None:
    result, c = export_range(
        ranged, tmp_path / "e.sqlite", T0 - 10 * H, T0 + 2 * H + timedelta(minutes=1), name="det"
    )
    assert result[0]["rows"] == 6
    r = series_row(c, "Deterministic_f64_utc", "det")
    assert (r["initial_timestamp"], r["count"]) == (T0_MS, 2)


@pytest.mark.parametrize(
    ("start", "end", "match"),
    [
        (T0 + H, T0 + 2 * H, "align to a window boundary"),
        (T0 + 6 * H, T0 + 9 * H, "past the last window"),
        (T0 + 2 * H, T0 + 2 * H, "hold no values"),
        (T0 + H, T0, "end < start"),
        # Naive bounds are the series' own wall clock (UTC here): the same 01:00 as above.
        (datetime(2024, 1, 1, 1), datetime(2024, 1, 1, 4), "align to a window boundary"),
    ],
)
def test_range_refusals_create_no_file(ranged: Store, tmp_path: Path, start, end, match) -> None:
    out = tmp_path / "e.sqlite"
    with pytest.raises(InvalidParameterError, match=match):
        ranged.export_sqlite(out, name="det", time_range=(start, end))
    assert os.listdir(tmp_path).count("e.sqlite") == 0
    assert not [p for p in os.listdir(tmp_path) if "partial" in p]


def test_range_composites_are_written_at_the_slice_width(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(ranged, tmp_path / "e.sqlite", T0 + H, T0 + 3 * H, name="pwl")
    base = "SingleTimeSeries_piecewise_linear_utc"
    assert [r[0] for r in c.execute(f'SELECT value FROM "{base}_values"')] == [
        "[1.0,5.0,5.0]",
        "[1.0,6.0,6.0]",
    ]
    ((h,),) = c.execute(f'SELECT data_hash FROM "{base}_arrays"')
    assert h == data_hash(array_of(c, base, 1)).hex()
    assert h == data_hash(np.array([[1.0, 5.0, 5.0], [1.0, 6.0, 6.0]])).hex()


def test_range_every_hash_rederives(ranged: Store, tmp_path: Path) -> None:
    _, c = export_range(ranged, tmp_path / "e.sqlite", T0 + 2 * H, T0 + 5 * H)
    for base in partitions(c):
        for array_id, h in c.execute(f'SELECT id, data_hash FROM "{base}_arrays"').fetchall():
            assert data_hash(array_of(c, base, array_id)).hex() == h, base


def test_range_slice_of_derived_series(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    add(store, sts("src", np.arange(6.0)))
    store.transform_single_time_series("PT2H", "PT1H")
    out = tmp_path / "e.sqlite"
    store.export_sqlite(out, include_derived=True, time_range=(T0 + 2 * H, T0 + 4 * H))
    with connect(out) as c:
        base = "DeterministicSingleTimeSeries_f64_utc"
        rows = c.execute(f'SELECT issue_time, timestamp, value FROM "{base}_values"').fetchall()
        assert rows == [
            (T0_MS + j * H_MS, T0_MS + (j + h) * H_MS, float(j + h)) for j in (2, 3) for h in (0, 1)
        ]
        ((h, axis),) = c.execute(f'SELECT data_hash, time_axis FROM "{base}_arrays"')
        assert axis == "R2/2024-01-01T02:00:00Z/PT1H/PT2H/PT1H"
        assert h == data_hash(np.array([[2.0, 3.0], [3.0, 4.0]])).hex()
