"""The model's trusted doors: ``restore`` (a stored series from checked parts, one per
family), ``replace`` (a copy over another array) and ``stored_array`` (the array
without a copy). The store's reads, the import core, the export plan and slicing build
and read series only through them (issue 35, Must 3)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
)
from infrastore_sqlite.model import AnySeries

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
DESCRIBED = {"units": "MW", "quantity_kind": "power", "application_data": "a"}


def _built() -> list[AnySeries]:
    """One series of each class, as the checking constructors build them."""
    stamps = [T0, T0 + H, T0 + 3 * H]
    return [
        SingleTimeSeries(T0, "PT1H", np.arange(4.0), "s", **DESCRIBED),
        NonSequentialTimeSeries(stamps, np.arange(3, dtype=np.int32), "n", **DESCRIBED),
        PersistentTimeSeries(stamps, np.array([1.0, 2.0, 3.0]), "p"),
        Deterministic(T0, "PT1H", "PT2H", "PT3H", 3, np.arange(6.0).reshape(2, 3), "d"),
        Probabilistic(
            T0, "PT1H", "PT2H", "PT3H", 2, [10.0, 90.0], np.arange(8.0).reshape(2, 2, 2), "q"
        ),
        Scenarios(T0, "PT1H", "PT1H", "PT1H", 2, np.arange(6.0).reshape(3, 1, 2), "c"),
    ]


def _restored(ts: AnySeries) -> AnySeries:
    """``ts`` rebuilt by its class's ``restore`` from its public parts."""
    common = {
        "name": ts.name,
        "data": ts.data,
        "element_type": ts.element_type_info,
        "time_reference": ts.time_reference,
        **ts.descriptors(),
    }
    if isinstance(ts, NonSequentialTimeSeries | PersistentTimeSeries):
        return type(ts).restore(timestamps_ms=ts.timestamps_ms.copy(), **common)
    if isinstance(ts, SingleTimeSeries):
        return type(ts).restore(initial_ms=ts.initial_ms, resolution=ts.resolution_period, **common)
    return type(ts).restore(
        initial_ms=ts.initial_ms,
        resolution=ts.resolution_period,
        horizon=ts.horizon_period,
        interval=ts.interval_period,
        count=ts.count,
        percentiles=ts.percentiles if isinstance(ts, Probabilistic) else None,
        **common,
    )


@pytest.mark.parametrize("ts", _built(), ids=lambda ts: type(ts).__name__)
def test_restore_builds_what_the_constructor_built(ts: AnySeries) -> None:
    back = _restored(ts)
    assert type(back) is type(ts)
    assert back == ts  # type, name, descriptors, grid and array bit for bit
    assert repr(back) == repr(ts)
    assert back.descriptors() == ts.descriptors()
    if ts.time_series_type.is_forecast:
        assert back.issue_times_ms().tolist() == ts.issue_times_ms().tolist()
    else:
        assert back.timestamps == ts.timestamps


def test_restore_keeps_the_array_it_is_given_without_a_copy() -> None:
    ts = SingleTimeSeries(T0, "PT1H", np.arange(3.0), "s")
    data = np.arange(3.0)
    back = SingleTimeSeries.restore(
        name="s",
        data=data,
        element_type=ts.element_type_info,
        time_reference="utc",
        initial_ms=ts.initial_ms,
        resolution=ts.resolution_period,
    )
    assert np.shares_memory(back.stored_array, data)
    assert back.data is not data  # the caller's copy is still a copy


def test_stored_array_is_the_series_array_read_only_and_uncopied() -> None:
    ts = SingleTimeSeries(T0, "PT1H", np.arange(3.0), "s")
    view = ts.stored_array
    assert np.shares_memory(view, ts.stored_array)
    assert not view.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 9.0
    assert ts.data.tolist() == [0.0, 1.0, 2.0]
    assert ts.data.flags.writeable  # data stays the caller's writable copy


def test_replace_moves_the_grid_and_keeps_every_other_part() -> None:
    ts = SingleTimeSeries(T0, "PT1H", np.arange(4.0), "s", **DESCRIBED)
    later = ts.replace(data=ts.stored_array[2:], initial_ms=ts.initial_ms + 2 * 3_600_000)
    assert later == SingleTimeSeries(T0 + 2 * H, "PT1H", np.array([2.0, 3.0]), "s", **DESCRIBED)
    assert later.stored_array.flags.c_contiguous
    assert ts.length == 4  # the original is untouched

    det = Deterministic(T0, "PT1H", "PT2H", "PT3H", 3, np.arange(6.0).reshape(2, 3), "d")
    last = det.replace(
        data=det.stored_array[:, 2:], initial_ms=det.initial_ms + 6 * 3_600_000, count=1
    )
    assert last == Deterministic(T0 + 6 * H, "PT1H", "PT2H", "PT3H", 1, [[2.0], [5.0]], "d")

    nss = NonSequentialTimeSeries([T0, T0 + H, T0 + 3 * H], np.arange(3.0), "n")
    tail = nss.replace(data=nss.stored_array[1:], timestamps_ms=nss.timestamps_ms[1:].copy())
    assert tail == NonSequentialTimeSeries([T0 + H, T0 + 3 * H], np.array([1.0, 2.0]), "n")


def test_the_regular_grid_properties_live_once() -> None:
    # SingleTimeSeries and the forecasts share one definition of the anchor and step.
    shared = ("initial_timestamp", "initial_ms", "resolution", "resolution_period")
    for name in shared:
        owners = {
            cls.__mro__[[name in vars(c) for c in cls.__mro__].index(True)]
            for cls in (SingleTimeSeries, Deterministic, Probabilistic, Scenarios)
        }
        assert len(owners) == 1, f"{name} is defined in {sorted(c.__name__ for c in owners)}"
