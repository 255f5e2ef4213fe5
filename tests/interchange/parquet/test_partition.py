"""``interchange/parquet/partition.py``: the grids of a batch's arrays found at once.

``_sts_grids`` must vouch for exactly the arrays ``_affine`` vouches for one at a time (an
array it wrongly vouched for would be filed unplaced), and an import whose batches cut
arrays anywhere must give back the store it came from.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from varied_store import add, new_store, snapshot, sts

from infrastore_sqlite.core.periods import as_period
from infrastore_sqlite.interchange.importing import Group
from infrastore_sqlite.interchange.parquet import partition
from infrastore_sqlite.model import TimeSeriesType

H = 3_600_000
T0 = 1_704_067_200_000

# Every test runs with the values file read in line and read ahead (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("read_mode")


def _batch() -> tuple[np.ndarray, np.ndarray, list[int], dict]:
    """Eight arrays in one batch, each a different case."""
    arrays: list[tuple[int, np.ndarray, str | None]] = []
    grid = T0 + H * np.arange(5)
    arrays.append((1, grid, "PT1H"))  # on its grid
    shifted = grid.copy()
    shifted[2] += 1
    arrays.append((2, shifted, "PT1H"))  # one row off
    arrays.append((3, grid[::-1].copy(), "PT1H"))  # every row there, out of order
    arrays.append((4, np.array([T0 + 7]), "PT1H"))  # a single row
    arrays.append((5, grid, "P1M"))  # a calendar resolution: never vouched for here
    arrays.append((6, grid, None))  # no series row names it
    arrays.append((7, T0 + 2 * H * np.arange(4), "PT2H"))  # another resolution
    arrays.append((8, T0 + 2 * H * np.arange(4), "PT1H"))  # steps of two hours, not one
    ts = np.concatenate([a[1] for a in arrays]).astype(np.int64)
    heads = np.array([a[0] for a in arrays], dtype=np.int64)
    bounds = [0, *np.cumsum([a[1].size for a in arrays]).tolist()]
    specs = {a: SimpleNamespace(res=as_period(r)) for a, _, r in arrays if r is not None}
    return ts, heads, bounds, specs


def _res_ms(specs: dict) -> dict[int, int]:
    """What the reader hands ``_sts_grids``: each array's fixed resolution."""
    return {a: s.res.ms for a, s in specs.items() if not s.res.calendar}


def _affine_one_by_one(ts: np.ndarray, heads: np.ndarray, bounds: list[int], specs: dict) -> list:
    """What ``_affine`` vouches for, each array of the batch on its own."""
    out = []
    for k, a in enumerate(heads.tolist()):
        part = ts[bounds[k] : bounds[k + 1]]
        group = Group(("k", "a"), [a], part.size, np.zeros(part.size), timestamp=part)
        spec = specs.get(a)
        out.append(
            None
            if spec is None
            else partition.affine_of(TimeSeriesType.SingleTimeSeries, group, spec)
        )
    return out


def test_sts_grids_vouch_as_affine_does_one_array_at_a_time() -> None:
    ts, heads, bounds, specs = _batch()
    got = partition.sts_grids(ts, heads, bounds, _res_ms(specs))
    assert got == _affine_one_by_one(ts, heads, bounds, specs)
    assert [g is not None for g in got] == [True, False, False, True, False, False, True, False]


@pytest.mark.parametrize("seed", range(40))
def test_sts_grids_agree_with_affine_on_random_batches(seed: int) -> None:
    # Runs of any length (a batch cuts its first and last anywhere), one resolution for
    # all or several, some without a series row, some nudged off their grid, some near
    # the ends of int64 (where the steps wrap, as the grid's arithmetic does).
    rng = np.random.default_rng(seed)
    periods = ["PT1H", "PT15M", "PT2H"][: 1 + seed % 3]
    pieces, heads, specs = [], [], {}
    for a in range(1, int(rng.integers(1, 12)) + 1):
        period = as_period(str(rng.choice(periods)))
        n = int(rng.integers(1, 9))
        base = int(rng.choice([T0, 2**63 - 3 * H, -(2**63) + 5]))
        with np.errstate(over="ignore"):
            run = (np.int64(base) + np.arange(n, dtype=np.int64) * np.int64(period.ms)).astype(
                np.int64
            )
        case = rng.integers(0, 5)
        if case == 0 and n > 1:
            run[int(rng.integers(1, n))] += 1  # one row off the grid
        elif case == 1 and n > 1:
            run = run[::-1].copy()  # every row there, out of order
        if rng.integers(0, 6):
            specs[a] = SimpleNamespace(res=period)
        pieces.append(run)
        heads.append(a)
    ts = np.concatenate(pieces)
    bounds = [0, *np.cumsum([p.size for p in pieces]).tolist()]
    heads_arr = np.array(heads, dtype=np.int64)
    got = partition.sts_grids(ts, heads_arr, bounds, _res_ms(specs))
    assert got == _affine_one_by_one(ts, heads_arr, bounds, specs)


def test_sts_grids_without_any_fixed_resolution() -> None:
    ts, heads, bounds, specs = _batch()
    calendar = {a: SimpleNamespace(res=as_period("P1M")) for a in specs}
    assert partition.sts_grids(ts, heads, bounds, _res_ms(calendar)) == [None] * len(heads)


@pytest.mark.parametrize("batch_rows", [4, 5, 1 << 18])
def test_batches_that_cut_arrays_anywhere_import_the_same_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_rows: int
) -> None:
    src = new_store(tmp_path / "src.h5")
    try:
        for owner, n in enumerate((3, 12, 3, 7, 1, 5), start=1):
            data = np.arange(float(n)) + owner
            data[0] = -0.0 if owner % 2 else np.nan
            add(src, sts("s", data), owner=owner)
        src.export_parquet(tmp_path / "out")
        values = tmp_path / "out" / "SingleTimeSeries.f64.utc.values.parquet"
        # Rewrite the file with the rows of its fourth array reversed: still importable,
        # placed by its coordinates, never vouched for as a grid.
        table = pq.read_table(values)
        aid = table.column("array_id").to_numpy()
        fourth = np.unique(aid)[3]
        rows = np.flatnonzero(aid == fourth)
        order = np.arange(len(aid))
        order[rows] = rows[::-1]
        pq.write_table(table.take(pa.array(order)), values, row_group_size=5)
        monkeypatch.setattr(partition, "_BATCH_ROWS", batch_rows)
        dst = new_store(tmp_path / "dst.h5")
        try:
            dst.import_parquet(tmp_path / "out")
            want, got = snapshot(src, derived=False), snapshot(dst, derived=False)
            assert sorted(want) == sorted(got)
            for key, (_meta, series) in want.items():
                a, b = np.asarray(series.data), np.asarray(got[key][1].data)
                assert a.tobytes() == b.tobytes(), key
        finally:
            dst.close()
    finally:
        src.close()


def test_an_arrays_file_whose_time_axis_is_not_text_is_refused(tmp_path: Path) -> None:
    src = new_store(tmp_path / "src.h5")
    try:
        add(src, sts("s", np.arange(3.0)))
        src.export_parquet(tmp_path / "out")
    finally:
        src.close()
    arrays = tmp_path / "out" / "SingleTimeSeries.f64.utc.arrays.parquet"
    table = pq.read_table(arrays)
    at = table.schema.get_field_index("time_axis")
    table = table.set_column(at, "time_axis", pa.array([7] * len(table), type=pa.int64()))
    pq.write_table(table, arrays)
    dst = new_store(tmp_path / "dst.h5")
    try:
        with pytest.raises(Exception, match=r"holds a int in `time_axis`, which is text"):
            dst.import_parquet(tmp_path / "out")
    finally:
        dst.close()


def _forecast_group(
    rng: np.random.Generator, tst: TimeSeriesType
) -> tuple[Group, SimpleNamespace, bool]:
    """A forecast's rows as an export writes them (window, step, lane), then perhaps
    perturbed in one of the ways a query engine or a hand edit could leave them; says
    whether it was."""
    count, steps = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    lanes = 1 if tst is TimeSeriesType.Deterministic else int(rng.integers(1, 4))
    itv = as_period(str(rng.choice(["PT1H", "PT2H", "PT0S"] if count == 1 else ["PT1H", "PT3H"])))
    res = as_period("PT1H")
    spec = SimpleNamespace(res=res, itv=itv, steps=steps, label="'s' (owner 1, id 1 in f)")
    r = np.arange(count * steps * lanes, dtype=np.int64)
    issue = T0 + (r // (steps * lanes)) * itv.ms
    ts = issue + (r // lanes % steps) * res.ms
    lane_head = (
        np.arange(lanes, dtype=np.int64)
        if tst is TimeSeriesType.Scenarios
        else np.sort(rng.choice([0.1, 0.25, 0.5, 0.75, 0.9], lanes, replace=False))
    )
    lane = None if tst is TimeSeriesType.Deterministic else np.tile(lane_head, count * steps)
    values = rng.normal(size=r.size)
    n = r.size
    case = int(rng.integers(0, 8))
    perturbed = True
    if case == 1 and n > 1:  # two rows swapped
        i, j = rng.choice(n, 2, replace=False)
        for col in (ts, issue, values, *(() if lane is None else (lane,))):
            col[[i, j]] = col[[j, i]]
    elif case == 2 and lane is not None:  # one lane value changed
        lane[int(rng.integers(0, n))] += 1
    elif case == 3 and lane is not None and tst is TimeSeriesType.Probabilistic:
        # A first lane the fast check does not take: zero, negative zero or NaN.
        head = lane[:lanes].copy()
        head[0] = rng.choice([0.0, -0.0, np.nan])
        lane[:] = np.tile(head, count * steps)
    elif case == 4 and n > 1:  # a row dropped
        keep = np.arange(n) != int(rng.integers(0, n))
        ts, issue, values = ts[keep], issue[keep], values[keep]
        lane = None if lane is None else lane[keep]
    elif case == 5 and lane is not None and lanes > 1:  # lanes in another order
        lane[:] = np.tile(lane[:lanes][::-1].copy(), count * steps)
    elif case == 6:  # one target time moved off its step
        ts[int(rng.integers(0, ts.size))] += 1
    else:
        perturbed = False
    group = Group(("k", "a"), [1], ts.size, values, timestamp=ts, issue=issue, lane=lane)
    return group, spec, perturbed


@pytest.mark.parametrize("tst", ["Deterministic", "Probabilistic", "Scenarios"])
@pytest.mark.parametrize("seed", range(60))
def test_a_vouched_forecast_builds_as_the_core_places_it(tst: str, seed: int) -> None:
    # What _affine vouches for skips the core's placing: it must be exactly what the
    # placing builds, never something the placing refuses, and every group in the order
    # an export writes must be vouched for.
    from infrastore_sqlite.core.elements import parse_element_type
    from infrastore_sqlite.interchange import importing

    kind = TimeSeriesType[tst]
    group, spec, perturbed = _forecast_group(np.random.default_rng(seed), kind)
    place = importing.Place("p", kind, "v", "s", "a", row_word="row", word="file")
    et = parse_element_type("f64")
    affine = partition.affine_of(kind, group, spec)
    assert affine is not None or perturbed
    try:
        placed = importing.build_one(place, group, spec, et)  # group.affine is None: placed
    except Exception:
        assert affine is None
        return
    if affine is None:
        return
    group.affine = affine
    fast = importing.build_one(place, group, spec, et)
    assert fast.data.shape == placed.data.shape
    assert fast.data.tobytes() == placed.data.tobytes()
    assert (fast.initial_ms, fast.count, fast.percentiles) == (
        placed.initial_ms,
        placed.count,
        placed.percentiles,
    )
