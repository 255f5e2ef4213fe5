"""Drop-in cases for ``Store.export_sqlite`` / ``Store.import_sqlite``: what an export
reports, what an import adds, and how a bad path or a bad database is refused (interop:
runs the reference)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from harness import Case, Ctx, check, params

pytestmark = pytest.mark.interop

T0 = datetime(2024, 1, 1)
H = timedelta(hours=1)


def _source(lib: Any, ctx: Ctx) -> Any:
    s = ctx.store()
    s.add_time_series(2, "Gen", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.arange(4.0), "a"))
    s.add_time_series(
        1, "Load", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.arange(4), "b", units="MW")
    )
    s.add_time_series(
        1, "Load", ctx.comp, lib.Deterministic(T0, "PT1H", "PT2H", "PT1H", 2, np.ones((2, 2)), "f")
    )
    return s


def _export(**kw: Any) -> Any:
    def run(lib: Any, ctx: Ctx) -> Any:
        return _source(lib, ctx).export_sqlite(ctx.path("out.db"), **kw)

    return run


def _round_trip(lib: Any, ctx: Ctx) -> Any:
    db = ctx.path("rt.db")
    _source(lib, ctx).export_sqlite(db)
    target = ctx.store()
    ids = target.import_sqlite(db)
    rows = target.list_metadata()
    return ids, rows, [target.read_by_id(i) for i in ids]


def _not_a_database(method: str) -> Any:
    def run(lib: Any, ctx: Ctx) -> Any:
        path = Path(ctx.path("junk.db"))
        path.write_text("not a database " * 100)
        return getattr(_source(lib, ctx), method)(str(path))

    return run


def _missing_directory(method: str) -> Any:
    return lambda lib, ctx: getattr(_source(lib, ctx), method)(ctx.path("absent/out.db"))


def _directory(method: str) -> Any:
    return lambda lib, ctx: getattr(_source(lib, ctx), method)(str(ctx.dir))


def _twice(lib: Any, ctx: Ctx) -> Any:
    s = _source(lib, ctx)
    db = ctx.path("twice.db")
    s.export_sqlite(db)
    return s.export_sqlite(db)


def _empty_db(lib: Any, ctx: Ctx) -> Any:
    import apsw

    path = ctx.path("empty.db")
    apsw.Connection(path).close()
    return ctx.store().import_sqlite(path)


CASES = [
    Case("export everything", _export()),
    Case("export with a prefix", _export(table_prefix="x_")),
    Case("export one owner", _export(owner_id=1)),
    Case("export a type", _export(time_series_type="Deterministic")),
    Case("export a time range", _export(time_range=(T0 + H, T0 + 3 * H))),
    Case(
        "export derived without the flag", _export(time_series_type="DeterministicSingleTimeSeries")
    ),
    Case("export nothing selected", _export(owner_id=99)),
    Case("export round trip", _round_trip),
    Case("export twice into one file", _twice),
    Case("export into a non-database", _not_a_database("export_sqlite")),
    Case("export into a missing directory", _missing_directory("export_sqlite")),
    Case("export into a directory", _directory("export_sqlite")),
    Case("import a non-database", _not_a_database("import_sqlite")),
    Case("import a missing file", _missing_directory("import_sqlite")),
    Case("import a directory", _directory("import_sqlite")),
    Case("import a database without tables", _empty_db),
]


@pytest.mark.parametrize("case", params(CASES))
def test_interchange_calls_agree(tmp_path, case: Case) -> None:
    check(case, tmp_path)
