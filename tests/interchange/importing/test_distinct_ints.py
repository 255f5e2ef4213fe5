"""``core.distinct.distinct_ints`` (what ``IdSet.update`` sorts an import's ids
with): ``np.unique``'s answer, and a fresh process's import of a store never pays for
``numpy.ma``, which ``np.unique``'s first plain call imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from infrastore_sqlite.core.distinct import distinct_ints
from infrastore_sqlite.interchange.importing.options import IdSet


@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 1000])
@pytest.mark.parametrize("spread", [1, 5, 1 << 62])
def test_as_np_unique(n: int, spread: int) -> None:
    rng = np.random.default_rng(n * 31 + spread % 997)
    values = rng.integers(-spread, spread + 1, size=n, dtype=np.int64)
    got = distinct_ints(values)
    want = np.unique(values)
    assert got.dtype == want.dtype
    assert got.tolist() == want.tolist()


def test_idset_runs() -> None:
    ids = IdSet()
    ids.update(np.array([5, 3, 4, 4, 9, 3], dtype=np.int64))
    ids.update([10, 11, 1])
    probe = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12], dtype=np.int64)
    assert ids.first_held(probe) == 1
    assert ids.first_held(np.array([0, 2, 6, 7, 8, 12], dtype=np.int64)) == -1


def test_an_import_leaves_numpy_ma_alone(tmp_path: Path) -> None:
    """An export then an import in a fresh process: ``numpy.ma`` is not imported (it was,
    by the first ``np.unique`` call: ~9 ms of each small import)."""
    code = textwrap.dedent(
        f"""
        import sys
        from datetime import UTC, datetime
        import numpy as np
        from infrastore_sqlite import SingleTimeSeries, Store
        with Store.create({str(tmp_path / "a")!r}) as s:
            for k in range(3):
                series = SingleTimeSeries(
                    datetime(2024, 1, 1, tzinfo=UTC), "PT1H", np.arange(24.0) + k, f"s{{k}}"
                )
                s.add_time_series(k, "Gen", "Component", series)
            s.export_sqlite({str(tmp_path / "x.db")!r})
        assert "numpy.ma" not in sys.modules, "loaded before the import"
        with Store.create({str(tmp_path / "b")!r}) as s:
            assert len(s.import_sqlite({str(tmp_path / "x.db")!r})) == 3
        print("numpy.ma" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_an_export_with_flat_views_leaves_numpy_ma_alone(tmp_path: Path) -> None:
    """A zone's flat view (its ISO text from ``infrastore_zone_hours``, the offsets'
    distinct values) in a fresh process: ``numpy.ma`` is not imported (it was, by a plain
    ``np.unique`` in ``companions.write_zone_hours``)."""
    code = textwrap.dedent(
        f"""
        import sys
        from datetime import datetime
        from zoneinfo import ZoneInfo
        import numpy as np
        from infrastore_sqlite import SingleTimeSeries, Store
        with Store.create({str(tmp_path / "a")!r}) as s:
            start = datetime(2024, 3, 1, tzinfo=ZoneInfo("America/Denver"))
            s.add_time_series(1, "Gen", "Component", SingleTimeSeries(start, "PT1H",
                              np.arange(24.0 * 60), "load"))
            s.export_sqlite({str(tmp_path / "x.db")!r})
        print("numpy.ma" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
    import sqlite3

    with sqlite3.connect(tmp_path / "x.db") as db:
        assert db.execute("SELECT count(*) FROM infrastore_zone_hours").fetchone()[0] > 0
