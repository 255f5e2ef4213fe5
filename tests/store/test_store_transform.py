"""``transform_single_time_series``: the derived series, its refusals and the DST rules."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from store_helpers import DST, SA, T0, H, add, snapshot, sts

from infrastore_sqlite import (
    Deterministic,
    IntegrityError,
    InvalidParameterError,
    SingleTimeSeries,
    Store,
    TimeSeriesType,
)


# =========================================================================== transform
def test_transform_single_time_series(store: Store) -> None:
    s = add(store, sts("load", units="MW"), features={"k": 1})
    add(store, sts("other", np.arange(10.0) * 2), owner_id=2)
    assert store.transform_single_time_series("PT3H", "PT2H") == 2
    assert store.num_distinct_arrays() == 2  # no array data written
    dst = store.list_metadata(time_series_type=DST)
    assert [m["name"] for m in dst] == ["load", "other"]
    meta = dst[0]
    src = store.get_metadata_by_id(s)
    for key in (
        "owner_id",
        "owner_type",
        "name",
        "data_hash",
        "initial_timestamp",
        "length",
        "resolution",
        "element_type",
        "element_shape",
        "features",
        "units",
        "time_reference",
    ):
        assert meta[key] == src[key], key
    assert (meta["horizon"], meta["interval"], meta["count"]) == ("PT3H", "PT2H", 4)
    view = store.read_by_id(meta["id"])
    assert type(view) is Deterministic  # a DST reads as a Deterministic
    np.testing.assert_array_equal(view.data, [[0, 2, 4, 6], [1, 3, 5, 7], [2, 4, 6, 8]])
    assert view.count == 4 and view.horizon == "PT3H"
    # windows of the view
    part = store.read_by_id(meta["id"], start_time=T0 + 2 * H, count=2)
    np.testing.assert_array_equal(part.data, [[2, 4], [3, 5], [4, 6]])
    # a query for Deterministic also matches DST, one for DST only DST
    assert len(store.list_metadata(time_series_type=TimeSeriesType.Deterministic)) == 2
    # idempotent
    assert store.transform_single_time_series("PT3H", "PT2H") == 0
    # another interval is another DST
    assert store.transform_single_time_series("PT2H", "PT1H") == 2
    assert len(store.list_metadata(time_series_type=DST)) == 4


def test_transform_whole_series_window(store: Store) -> None:
    add(store, sts())
    assert store.transform_single_time_series("PT10H", "PT0S") == 1
    m = store.list_metadata(time_series_type=DST)[0]
    assert (m["interval"], m["count"]) == ("PT0S", 1)
    np.testing.assert_array_equal(store.read_by_id(m["id"]).data[:, 0], np.arange(10.0))


@pytest.mark.parametrize(
    ("horizon", "interval", "exc", "message"),
    [
        ("PT2H", "PT3H", InvalidParameterError, "which would leave gaps"),
        ("PT11H", "PT1H", InvalidParameterError, "horizon PT11H is longer than"),
        ("PT90M", "PT1H", InvalidParameterError, "not a whole multiple"),
        ("PT3H", "PT0S", InvalidParameterError, "only allowed when the horizon spans"),
        ("PT3H", "PT90M", InvalidParameterError, "not a whole multiple"),
        ("P1M", "P1M", InvalidParameterError, "different kinds of period"),
        ("3h", "PT1H", InvalidParameterError, "did you mean 'PT3H'"),
    ],
)
def test_transform_refusals_write_nothing(store: Store, horizon, interval, exc, message) -> None:
    add(store, sts("a"))
    add(store, sts("b"), owner_id=2)
    before = snapshot(store)
    with pytest.raises(exc, match=message):
        store.transform_single_time_series(horizon, interval)
    assert snapshot(store) == before


def test_transform_needs_one_grid_per_resolution(store: Store) -> None:
    add(store, sts("a"))
    add(store, sts("b", np.arange(5.0)))
    add(store, sts("c", res="PT30M"))
    with pytest.raises(IntegrityError, match="more than one \\(initial_timestamp, length\\) pair"):
        store.transform_single_time_series("PT2H", "PT1H")
    assert store.transform_single_time_series("PT1H", "PT1H", resolution="PT30M") == 1
    assert store.transform_single_time_series("PT1H", "PT1H", owner_category=SA) == 0


def test_transform_is_all_or_nothing(store: Store) -> None:
    add(store, sts("a"))
    add(store, sts("b", res="PT2H"))
    before = snapshot(store)
    with pytest.raises(InvalidParameterError, match="not a whole multiple"):
        store.transform_single_time_series("PT3H", "PT3H")  # fine for PT1H, not for PT2H
    assert snapshot(store) == before


def test_dst_rules(store: Store) -> None:
    s = add(store, sts("load"))
    store.transform_single_time_series("PT3H", "PT2H")
    dst = store.list_metadata(time_series_type=DST)[0]["id"]
    before = snapshot(store)
    with pytest.raises(InvalidParameterError, match=r"with interval PT2H and another horizon"):
        store.transform_single_time_series("PT4H", "PT2H")
    with pytest.raises(InvalidParameterError, match="cannot sit beside it"):
        add(store, Deterministic(T0, "PT1H", "PT2H", "PT5H", 2, np.zeros((2, 2)), "load"))
    with pytest.raises(InvalidParameterError, match="backs the DeterministicSingleTimeSeries"):
        store.remove_by_ids([s])
    with pytest.raises(InvalidParameterError, match="backs the DeterministicSingleTimeSeries"):
        store.remove_by_filter(time_series_type=TimeSeriesType.SingleTimeSeries)
    assert snapshot(store) == before
    assert store.remove_by_ids([s, dst]) == 2
    assert store.num_distinct_arrays() == 0
    # and the other way round: a Deterministic blocks the view
    add(store, sts("load"))
    add(store, Deterministic(T0, "PT1H", "PT2H", "PT5H", 2, np.zeros((2, 2)), "load"))
    with pytest.raises(InvalidParameterError, match="cannot sit beside it"):
        store.transform_single_time_series("PT3H", "PT2H")
    assert len(store.list_metadata(time_series_type=DST)) == 0


@pytest.mark.parametrize(
    ("start", "horizon", "interval", "ok"),
    [
        (datetime(2024, 1, 31, tzinfo=UTC), "P2M", "P1M", False),  # window 1 from Feb 29
        (datetime(2024, 1, 31, tzinfo=UTC), "P2M", "P2M", True),  # Mar 31 + 1 month is Apr 30
        (datetime(2024, 1, 31, tzinfo=UTC), "P4M", "P1M", True),  # one window only
        (datetime(2024, 1, 28, tzinfo=UTC), "P2M", "P1M", True),
        (datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), "P2M", "P1M", False),
    ],
)
def test_dst_on_a_clamped_calendar_grid(store: Store, start, horizon, interval, ok) -> None:
    add(store, sts("m", np.arange(4.0), start=start, res="P1M"))
    if not ok:
        with pytest.raises(InvalidParameterError, match="shorter months clamp"):
            store.transform_single_time_series(horizon, interval)
        assert store.list_metadata(time_series_type=DST) == []
        return
    assert store.transform_single_time_series(horizon, interval) == 1
    view = store.read_by_id(store.list_metadata(time_series_type=DST)[0]["id"])
    source = store.read_by_id(1)
    stamps = dict(zip(source.timestamps, source.data, strict=True))
    months = int(interval[1:-1])
    for j in range(view.count):
        issue = source.timestamps[j * months]
        for h in range(view.steps):
            # every value of the view sits at the source's own timestamp for it
            when = source.timestamps[j * months + h]
            assert view.data[h, j] == stamps[when]
            assert when == (SingleTimeSeries(issue, "P1M", np.zeros(h + 1), "t").timestamps[h])


def test_dst_of_composite_and_shaped_sources(store: Store) -> None:
    pw = np.array(
        [[1, 5, 6, 0, 0, 0, 0], [2, 1, 2, 3, 4, 0, 0], [0] * 7, [1, 7, 7, 0, 0, 0, 0]], float
    )
    add(store, sts("pw", pw, element_type="piecewise_linear"))  # over-padded: stored at width 5
    shaped = np.arange(24, dtype=np.int16).reshape(4, 3, 2)
    add(store, sts("m", shaped))
    assert store.transform_single_time_series("PT2H", "PT1H") == 2
    views = {
        m["name"]: store.read_by_id(m["id"]) for m in store.list_metadata(time_series_type=DST)
    }
    assert views["pw"].data.shape == (2, 3, 7)
    np.testing.assert_array_equal(views["pw"].data[:, 1], pw[1:3])
    assert views["m"].data.dtype == np.int16
    np.testing.assert_array_equal(views["m"].data[1, 2], shaped[3])
