"""Reads against the reference implementation (infrastore 0.15.1): windows, ranges and
many ids; time references, zones and calendar slices."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import infrastore
import numpy as np
import pytest
import store_interop_helpers
from store_interop_helpers import (
    NAIVE,
    T0,
    H,
    Pair,
    Spec,
    assert_same_series,
    state,
    sts_spec,
    without_id,
)

import infrastore_sqlite

base = store_interop_helpers.base
pair = store_interop_helpers.pair


# =========================================================================== windows and ranges
def _ids(pair: Pair) -> dict[str, tuple[int, int]]:
    ref = {
        m["name"]
        + ("/view" if m["time_series_type"] == "DeterministicSingleTimeSeries" else ""): m["id"]
        for m in pair.ref.list_metadata()
    }
    ours = {
        m["name"]
        + ("/view" if m["time_series_type"] == "DeterministicSingleTimeSeries" else ""): m["id"]
        for m in pair.ours.list_metadata()
    }
    return {k: (ref[k], ours[k]) for k in ref}


def _compare(pair: Pair, fn: Callable[[Any, int], Any], ids: tuple[int, int]) -> None:
    results = []
    for (_, store), i in zip(pair.stores(), ids, strict=True):
        try:
            results.append(("ok", [state(x) for x in fn(store, i)]))
        except Exception as exc:  # comparing whatever each side raises
            results.append(("raised", type(exc).__name__, str(exc)))
    ref, ours = results
    assert ours[:2] == ref[:2], f"reference: {ref}\nours: {ours}"


def _naive_is_the_wall_clock(pair: Pair, fn: Callable[[Any, int, datetime], Any], ids) -> None:
    """A deliberate difference (issue 11): the reference refuses a naive bound on a zoned
    series; ours reads it on the series' wall clock (UTC for these), so one naive range
    serves a selection that mixes zoneless and zoned series."""
    with pytest.raises(infrastore.InvalidParameterError):
        fn(pair.ref, ids[0], NAIVE)
    results = []
    for t in (NAIVE, NAIVE.replace(tzinfo=UTC)):
        try:
            results.append(("ok", [state(x) for x in fn(pair.ours, ids[1], t)]))
        except infrastore_sqlite.InvalidParameterError as exc:
            results.append(("raised", str(exc)))
    assert results[0] == results[1]


WINDOW_SERIES = ["base", "ns", "pe", "det", "prob", "sc", "base/view", "empty_ns", "det0"]
OFFSETS = [None, -3, 0, 0.5, 1, 2, 3, 5, 6, 9, 10, 12]


@pytest.mark.parametrize("series", WINDOW_SERIES)
def test_read_windows_agree(base: Pair, series: str) -> None:
    ids = _ids(base)[series]
    for offset, length, count in itertools.product(OFFSETS, [None, 0, 1, 2, 20], [None, 0, 1, 3]):
        start = None if offset is None else T0 + offset * H

        def read(s: Any, i: int, start=start, length=length, count=count) -> list:
            return [s.read_by_id(i, start_time=start, len=length, count=count)]

        _compare(base, read, ids)
    _naive_is_the_wall_clock(base, lambda s, i, t: [s.read_by_id(i, start_time=t)], ids)


RANGE_BOUNDS = [-5, -3, -1, 0, 1, 1.5, 2, 3, 4, 5, 6, 7.5, 9, 9.5, 10, 11, 12, 15, 40]


@pytest.mark.parametrize("series", WINDOW_SERIES)
def test_read_ranges_agree(base: Pair, series: str) -> None:
    ids = _ids(base)[series]
    for a, b in itertools.product(RANGE_BOUNDS, RANGE_BOUNDS):
        _compare(base, lambda s, i, r=(T0 + a * H, T0 + b * H): s.read_by_ids_range([i, i], r), ids)
    _naive_is_the_wall_clock(base, lambda s, i, t: s.read_by_ids_range([i], (t, t + H)), ids)


def test_reading_many_ids_agrees(base: Pair) -> None:
    ids = _ids(base)
    names = ["sc", "base", "base/view", "ns", "base", "prob"]
    ref_ids = [ids[n][0] for n in names]
    our_ids = [ids[n][1] for n in names]
    assert [state(x) for x in base.ours.read_by_ids(our_ids)] == [
        state(x) for x in base.ref.read_by_ids(ref_ids)
    ]
    forecasts = ["sc", "det", "prob", "det"]
    ref_f, our_f = [ids[n][0] for n in forecasts], [ids[n][1] for n in forecasts]
    ref = [state(x) for x in base.ref.read_by_ids(ref_f, start_time=T0 + 3 * H, count=1)]
    assert [state(x) for x in base.ours.read_by_ids(our_f, start_time=T0 + 3 * H, count=1)] == ref
    meta_ref = [without_id(m) for m in base.ref.list_metadata_by_ids(ref_ids)]
    assert [without_id(m) for m in base.ours.list_metadata_by_ids(our_ids)] == meta_ref
    for n in ("ns", "pe", "empty_ns", "base"):
        assert without_id(base.ours.get_metadata_by_id(ids[n][1])) == without_id(
            base.ref.get_metadata_by_id(ids[n][0])
        )


# =========================================================================== time references
DENVER = ZoneInfo("America/Denver")
FALL_BACK = [  # 2024-11-03: 01:30 happens twice in Denver
    datetime(2024, 11, 3, 7, 30, tzinfo=UTC).astimezone(DENVER),
    datetime(2024, 11, 3, 8, 30, tzinfo=UTC).astimezone(DENVER),
    datetime(2024, 11, 3, 9, 30, tzinfo=UTC).astimezone(DENVER),
]
ZONED_CASES = [
    Spec("NonSequentialTimeSeries", (FALL_BACK, np.arange(3.0), "fold"), {}),
    Spec(
        "PersistentTimeSeries",
        (
            [
                datetime(2024, 3, 10, 1, 30, tzinfo=DENVER),
                datetime(2024, 3, 10, 3, 30, tzinfo=DENVER),
            ],
            np.arange(2.0),
            "spring",
        ),
        {},
    ),
    Spec(
        "SingleTimeSeries",
        (datetime(2024, 11, 3, 0, 30, tzinfo=DENVER), "PT30M", np.arange(6.0), "sts-fold"),
        {},
    ),
    Spec("SingleTimeSeries", (datetime(1960, 1, 1, tzinfo=UTC), "PT1H", np.arange(3.0), "old"), {}),
    Spec(
        "SingleTimeSeries",
        (
            datetime(2024, 1, 31, 12, tzinfo=timezone(timedelta(hours=5, minutes=30))),
            "P1M",
            np.arange(4.0),
            "ist-months",
        ),
        {},
    ),
    Spec(
        "SingleTimeSeries",
        (datetime(2024, 1, 1, 0, 0, 0, 500000), "PT0.25S", np.arange(4.0), "zoneless-ms"),
        {},
    ),
    Spec(
        "SingleTimeSeries",
        (T0, "PT1H", np.arange(2.0), "explicit-offset"),
        {"time_reference": "-0700"},
    ),
    Spec(
        "SingleTimeSeries",
        (T0, "PT1H", np.arange(2.0), "explicit-zero"),
        {"time_reference": "+00:00"},
    ),
    Spec("SingleTimeSeries", (T0, "PT1H", np.arange(2.0), "zone-UTC"), {"time_reference": "UTC"}),
    Spec(
        "SingleTimeSeries",
        (T0, "PT1H", np.arange(2.0), "unchecked-zone"),
        {"time_reference": "Foo/Bar"},
    ),
    Spec(
        "SingleTimeSeries",
        (NAIVE, "PT1H", np.arange(2.0), "naive-as-utc"),
        {"time_reference": "utc"},
    ),
    Spec(
        "Deterministic",
        (
            datetime(2024, 1, 1, tzinfo=DENVER),
            "PT1H",
            "P2D",
            "PT12H",
            2,
            np.zeros((48, 2)),
            "denver-det",
        ),
        {},
    ),
    Spec(
        "Deterministic",
        (
            datetime(2024, 1, 31, tzinfo=UTC),
            "P1M",
            "P2M",
            "P1M",
            3,
            np.arange(6.0).reshape(2, 3),
            "month-det",
        ),
        {},
    ),
]


@pytest.mark.parametrize("spec", ZONED_CASES, ids=lambda s: s.name)
def test_time_references_agree(pair: Pair, spec: Spec) -> None:
    ids = pair.add(spec)
    assert_same_series(pair, ids)
    if spec.kind == "SingleTimeSeries":
        start = pair.ref.read_by_id(ids[0]).timestamps[1]
        got = pair.call(
            lambda lib, s: [
                state(
                    s.read_by_id(ids[0] if lib is infrastore else ids[1], start_time=start, len=2)
                )
            ]
        )
        assert got[0][:2] == got[1][:2]


@pytest.fixture(scope="module")
def monthly(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    p = Pair(Path(tmp_path_factory.mktemp("monthly")))
    jan31 = datetime(2024, 1, 31, 12, tzinfo=UTC)
    p.add(sts_spec("clamped", np.arange(6.0), start=jan31, res="P1M"))
    p.add(sts_spec("first", np.arange(6.0), start=datetime(2024, 1, 1, tzinfo=UTC), res="P1M"))
    p.add(
        sts_spec(
            "ist",
            np.arange(6.0),
            start=jan31.astimezone(timezone(timedelta(hours=5, minutes=30))),
            res="P1M",
        )
    )
    p.add(
        Spec(
            "Deterministic",
            (jan31, "P1M", "P2M", "P1M", 5, np.arange(10.0).reshape(2, 5), "det"),
            {},
        )
    )
    p.add(
        Spec(
            "Scenarios",
            (jan31, "PT1H", "PT2H", "P2M", 3, np.arange(12.0).reshape(2, 2, 3), "sc"),
            {},
        )
    )
    yield p
    p.close()


@pytest.mark.parametrize("name", ["clamped", "first", "ist", "det", "sc"])
def test_calendar_slices_agree(monthly: Pair, name: str) -> None:
    """Re-anchoring a clamped calendar grid mid-series is refused by both, elsewhere allowed."""
    from infrastore_sqlite.core.timeref import ms_to_datetimes

    ids = _ids(monthly)[name]
    ours = monthly.ours.read_by_id(ids[1])
    if hasattr(ours, "timestamps"):
        points, extent = list(ours.timestamps), "len"
    else:
        points, extent = ms_to_datetimes(ours.issue_times_ms(), ours.time_reference), "count"
    assert len(points) >= 3
    starts = points + [t + timedelta(days=1) for t in points]
    for start, n in itertools.product(starts, [None, 1, 2, 3]):
        _compare(
            monthly,
            lambda s, i, t=start, kw={extent: n}: [s.read_by_id(i, start_time=t, **kw)],
            ids,
        )
    bounds = [*points, points[-1] + timedelta(days=40), points[0] - timedelta(days=40)]
    for a, b in itertools.product(bounds, bounds):
        _compare(monthly, lambda s, i, r=(a, b): s.read_by_ids_range([i], r), ids)
