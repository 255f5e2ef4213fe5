"""Drop-in cases for the columnar readers (``StaticReader``, ``ForecastReader``), swept
as the reference's ``bulk_add_static_reader`` example sweeps a fleet: groups, column
order, values at every timestamp, the timeline, and the refusals (interop: runs the
reference)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from harness import Case, Ctx, check, params

pytestmark = pytest.mark.interop

T0 = datetime(2024, 1, 1)
H = timedelta(hours=1)
_READERS = "infrastore_sqlite/store/readers.py"


def _fleet(lib: Any, ctx: Ctx, make: Any, owners: tuple[int, ...] = (20, 10, 15)) -> Any:
    """A store whose series (``make(lib, owner)``) are added in ``owners`` order."""
    s = ctx.store()
    for owner in owners:
        s.add_time_series(owner, "Gen", ctx.comp, make(lib, owner))
    return s


def _sweep(s: Any, reader: Any, read: str = "static_read") -> Any:
    """What a caller's sweep sees: the reader's description, then every instant's values."""
    out: list[Any] = [reader.groups(), reader.grid(), reader.timestamps()]
    for when in reader.timestamps():
        getattr(s, read)(reader, when)
        out.append([reader.group_values(i) for i in range(len(reader.groups()))])
    return out


def _regular(lib: Any, owner: int) -> Any:
    return lib.SingleTimeSeries(T0, "PT1H", np.arange(3.0) + owner, "p")


def _static(make: Any, owners: tuple[int, ...] = (20, 10, 15), **kw: Any) -> Any:
    def run(lib: Any, ctx: Ctx) -> Any:
        s = _fleet(lib, ctx, make, owners)
        return _sweep(s, s.build_static_reader(**kw))

    return run


def _mixed(lib: Any, owner: int) -> Any:
    if owner % 2:
        return lib.SingleTimeSeries(
            T0, "PT1H", np.arange(6.0).reshape(3, 2) + owner, "p", element_type="tuple(2,f64)"
        )
    return _regular(lib, owner)


STATIC = [
    Case("static one owner", _static(_regular, (10,), resolution="PT1H")),
    Case("static owners in order", _static(_regular, (10, 15, 20), resolution="PT1H")),
    Case("static owners out of order", _static(_regular, resolution="PT1H")),
    Case(
        "static two groups",
        _static(_mixed, (14, 11, 12, 13), resolution=H),
    ),
    Case(
        "static irregular cohort",
        _static(
            lambda lib, o: lib.NonSequentialTimeSeries(
                [T0, T0 + 3 * H], np.array([o, o + 1.0]), "e"
            ),
            time_series_type="NonSequentialTimeSeries",
        ),
    ),
    Case(
        "static persistent cohort",
        _static(
            lambda lib, o: lib.PersistentTimeSeries(
                [T0 + (o % 3) * H, T0 + 4 * H], np.array([o, o + 1.0]), "st"
            ),
            (10, 11, 12),
            time_series_type="PersistentTimeSeries",
        ),
    ),
    Case(
        "static window",
        _static(
            lambda lib, o: lib.SingleTimeSeries(T0 + (o % 2) * H, "PT1H", np.arange(5.0) + o, "p"),
            (10, 11),
            resolution="PT1H",
            window_start=T0 + H,
            window_length=3,
        ),
    ),
    Case(
        "static window not covered",
        _static(
            _regular,
            (10,),
            resolution="PT1H",
            window_start=T0 + 2 * H,
            window_length=3,
        ),
    ),
    Case("static no resolution", _static(_regular, (10,))),
    Case("static nothing matches", _static(_regular, (10,), resolution="PT1H", name="none")),
    Case(
        "static two grids",
        lambda lib, ctx: (lambda s: s.build_static_reader("PT1H"))(
            _fleet(
                lib,
                ctx,
                lambda lib, o: lib.SingleTimeSeries(T0 + (o - 10) * H, "PT1H", np.zeros(3), "p"),
                (10, 11),
            )
        ),
    ),
    Case(
        "static read off grid",
        lambda lib, ctx: (
            lambda s: s.static_read(s.build_static_reader("PT1H"), T0 + timedelta(minutes=30))
        )(_fleet(lib, ctx, _regular, (10,))),
    ),
    Case(
        "static read before persistent start",
        lambda lib, ctx: (
            lambda s: s.static_read(
                s.build_static_reader(time_series_type="PersistentTimeSeries"), T0
            )
        )(
            _fleet(
                lib,
                ctx,
                lambda lib, o: lib.PersistentTimeSeries([T0 + H], np.array([1.0]), "st"),
                (10,),
            )
        ),
    ),
    Case(
        "static read aware instant on zoneless",
        lambda lib, ctx: (
            lambda s: s.static_read(s.build_static_reader("PT1H"), datetime(2024, 1, 1, tzinfo=UTC))
        )(_fleet(lib, ctx, _regular, (10,))),
    ),
]


def _forecasts(owners: tuple[int, ...], **kw: Any) -> Any:
    def run(lib: Any, ctx: Ctx) -> Any:
        s = _fleet(
            lib,
            ctx,
            lambda lib, o: lib.Deterministic(
                T0, "PT1H", "PT2H", "PT1H", 3, np.arange(6.0).reshape(2, 3) + o, "fc"
            ),
            owners,
        )
        reader = s.build_forecast_reader("Deterministic", "PT1H", **kw)
        out: list[Any] = [
            reader.entries(),
            reader.timeline(),
            reader.timestamps(),
            reader.num_slots(),
            [reader.entry_slot(i) for i in range(len(reader.entries()))],
        ]
        for when in reader.timestamps():
            s.forecast_read(reader, when)
            out.append([reader.entry_values(i) for i in range(len(reader.entries()))])
        return out

    return run


FORECAST = [
    Case("forecast one owner", _forecasts((10,))),
    Case("forecast owners in order", _forecasts((10, 11))),
    Case("forecast owners out of order", _forecasts((11, 10))),
    Case("forecast filtered", _forecasts((11, 10), owner_id=10)),
    Case(
        "forecast entry slot out of range",
        lambda lib, ctx: (lambda s: s.build_forecast_reader("Deterministic", "PT1H").entry_slot(5))(
            _fleet(
                lib,
                ctx,
                lambda lib, o: lib.Deterministic(
                    T0, "PT1H", "PT2H", "PT1H", 3, np.zeros((2, 3)), "fc"
                ),
                (10,),
            )
        ),
    ),
    Case(
        "forecast read off grid",
        lambda lib, ctx: (
            lambda s: s.forecast_read(
                s.build_forecast_reader("Deterministic", "PT1H"), T0 + timedelta(minutes=30)
            )
        )(
            _fleet(
                lib,
                ctx,
                lambda lib, o: lib.Deterministic(
                    T0, "PT1H", "PT2H", "PT1H", 3, np.zeros((2, 3)), "fc"
                ),
                (10,),
            )
        ),
    ),
]


@pytest.mark.parametrize("case", params(STATIC + FORECAST))
def test_reader_calls_agree(tmp_path, case: Case) -> None:
    check(case, tmp_path)
