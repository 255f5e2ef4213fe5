"""One ``time_range`` over a selection that mixes zoneless and zoned series.

The rule (model.base.bound_ms): a naive bound is read on each series' own wall clock; an aware
bound is an instant, which a zoneless series refuses, naming ``--zoned`` /
``zoneless=False`` as the way out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from infrastore_sqlite import InvalidParameterError, SingleTimeSeries
from infrastore_sqlite.model.slicing import slice_range

DAY = (datetime(2024, 7, 2), datetime(2024, 7, 3))  # naive: a wall-clock day


def hourly(start: datetime, n: int = 72) -> SingleTimeSeries:
    return SingleTimeSeries(start, "PT1H", np.arange(float(n)), "s")


@pytest.mark.parametrize(
    ("start", "first_hour"),
    [
        (datetime(2024, 7, 1), 24),  # zoneless: the wall clock as given
        (datetime(2024, 7, 1, tzinfo=UTC), 24),  # utc: the wall clock is UTC
        # Denver is UTC-6 in July: its July 2 starts at 06:00 UTC, 30 h after the anchor.
        (datetime(2024, 7, 1, tzinfo=ZoneInfo("America/Denver")), 24),
        (datetime(2024, 7, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))), 24),
    ],
)
def test_naive_bounds_are_each_series_own_wall_clock(start: datetime, first_hour: int) -> None:
    s = hourly(start)
    out = slice_range(s, DAY, "'s'")
    # Every series was anchored at its own local midnight of July 1, so its own July 2 is
    # steps 24..47 whatever its zone.
    assert out.data.tolist() == [float(i) for i in range(first_hour, first_hour + 24)]


def test_naive_bounds_on_a_zone_pick_other_instants_than_utc() -> None:
    denver = hourly(datetime(2024, 7, 1, tzinfo=UTC))
    denver._tr = "America/Denver"  # same instants, read in Denver
    out = slice_range(denver, DAY, "'s'")
    # July 2 00:00 in Denver is 06:00 UTC: step 30 of a UTC-midnight anchor.
    assert out.data[0] == 30.0 and out.length == 24


def test_aware_bounds_are_instants_and_refused_by_a_zoneless_series() -> None:
    aware = (datetime(2024, 7, 2, tzinfo=UTC), datetime(2024, 7, 3, tzinfo=UTC))
    zoned = hourly(datetime(2024, 7, 1, tzinfo=ZoneInfo("America/Denver")))
    # 2024-07-02T00:00Z is 18:00 July 1 in Denver: step 18.
    assert slice_range(zoned, aware, "'s'").data[0] == 18.0
    with pytest.raises(InvalidParameterError, match="is zoneless") as info:
        slice_range(hourly(datetime(2024, 7, 1)), aware, "'s' (owner 1)")
    assert info.value.series == "'s' (owner 1)"
    assert "naive bounds" in str(info.value)


# --------------------------------------------------------------------------- on the demo store
@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    from infrastore_sqlite.demo import build_demo_store

    store = build_demo_store(tmp_path_factory.mktemp("demo") / "demo.h5")
    try:
        yield store
    finally:
        store.close()


def test_export_of_the_mixed_demo_with_naive_bounds_clips_every_series(demo, tmp_path) -> None:
    kinds = {m["time_reference"] for m in demo.list_metadata()}
    assert "zoneless" in kinds and len(kinds) > 1  # the demo is a mixed store
    parts = demo.export_sqlite(
        tmp_path / "day.db",
        time_series_type="SingleTimeSeries",
        time_range=(datetime(2024, 7, 2), datetime(2024, 7, 3)),
    )
    assert {p["series"] for p in parts} and sum(p["series"] for p in parts) == 8
    assert all(p["rows"] == 24 * p["arrays"] for p in parts)


def test_export_with_aware_bounds_names_the_zoneless_series_and_the_way_out(demo, tmp_path) -> None:
    aware = (datetime(2024, 7, 2, tzinfo=UTC), datetime(2024, 7, 3, tzinfo=UTC))
    with pytest.raises(InvalidParameterError, match="1 of the selected series are zoneless") as e:
        demo.export_sqlite(tmp_path / "x.db", time_series_type="SingleTimeSeries", time_range=aware)
    assert "'requirement' (owner 501)" in str(e.value)
    assert "zoneless=False" in str(e.value)
    cli = e.value.render("cli", command="infrastore-sqlite --store demo.h5 export --db x.db")
    assert "`infrastore-sqlite --store demo.h5 export --db x.db --zoned`" in cli
    assert not (tmp_path / "x.db").exists()
    # The way out works: the zoned series alone take the aware range.
    parts = demo.export_sqlite(
        tmp_path / "x.db", time_series_type="SingleTimeSeries", time_range=aware, zoneless=False
    )
    assert sum(p["series"] for p in parts) == 7


def test_export_says_how_many_derived_series_it_left_out(tmp_path) -> None:
    from infrastore_sqlite.demo import build_demo_store

    with build_demo_store(tmp_path / "d.h5") as store:
        plain = store.export_sqlite(tmp_path / "a.db")
        assert plain.derived_left_out == 0 and plain.notices == []
        added = store.transform_single_time_series("PT6H", "PT6H", resolution="PT1H")
        parts = store.export_sqlite(tmp_path / "b.db")
        assert parts.derived_left_out == added > 0
        assert f"{added} derived series" in parts.notices[0]
        assert "include_derived=True" in parts.notices[0]
        assert "--include-derived" in parts.messages()[0].render("cli")
        assert [p["values_table"] for p in parts] == [p["values_table"] for p in plain]
        with_derived = store.export_sqlite(tmp_path / "c.db", include_derived=True)
        assert with_derived.derived_left_out == 0
