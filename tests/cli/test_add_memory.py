"""``add --parquet`` and ``add --sqlite`` hold no more per series than the API's import.

The command printed counts and ids, yet asked the import for its report of one entry per
series, kept to the end: at 300,000 series its peak RSS was 357 MB against the API's
185 MB. It now asks for counts only (``ImportOptions.detail``). Measured here by the
Python allocations traced at the peak (``tracemalloc``), from 2,000 to 8,000 series in
two partitions (so a partition's reading overlaps what the one before left): the
command's growth may exceed the import's own by a margin well under what an entry per
series costs (about 350 bytes). Never timed.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.cli import cli

T0 = datetime(2024, 1, 1, tzinfo=UTC)
SIZES = (2000, 8000)
# Bytes a series the command may hold beyond the import's own (measured: 0 ± 70).
MARGIN = 150


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Per size: a Parquet directory and an SQLite file of that many series, half of
    them float32 (two partitions)."""
    root = tmp_path_factory.mktemp("add-memory")
    for n in SIZES:
        rng = np.random.default_rng(n)
        with Store.create(root / f"s{n}") as s:
            s.add_time_series_bulk(
                {
                    "owner_id": k + 1,
                    "owner_type": "Generator",
                    "owner_category": "Component",
                    "time_series": SingleTimeSeries(
                        T0, "PT1H", rng.random(24).astype("f4" if k % 2 else "f8"), "p"
                    ),
                }
                for k in range(n)
            )
            s.export_parquet(root / f"pq{n}")
            s.export_sqlite(root / f"db{n}.db")
    return root


def _peak(run: Callable[[Path], None], target: Path) -> int:
    """Traced bytes at the peak of ``run(target)``, into a new store, the least of two
    runs (a collection's timing moves one run's peak by a few hundred kB)."""
    peaks = []
    for attempt in range(2):
        store = target.with_name(f"{target.name}-{attempt}")
        Store.create(store).close()
        gc.collect()
        tracemalloc.start()
        try:
            run(store)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    return min(peaks)


@pytest.mark.parametrize("container", ["parquet", "sqlite"])
def test_the_commands_memory_grows_no_more_than_the_imports(
    exports: Path, tmp_path: Path, container: str
) -> None:
    def source(n: int) -> Path:
        return exports / (f"pq{n}" if container == "parquet" else f"db{n}.db")

    def by_cli(n: int) -> Callable[[Path], None]:
        def run(store: Path) -> None:
            got = CliRunner().invoke(
                cli,
                ["--store", str(store), "add", f"--{container}", str(source(n))],
                catch_exceptions=False,
            )
            assert got.exit_code == 0, got.output
            assert f"added      {n}" in got.stdout

        return run

    def by_api(n: int) -> Callable[[Path], None]:
        def run(store: Path) -> None:
            with Store.open(store) as s:
                load = s.import_parquet if container == "parquet" else s.import_sqlite
                assert len(load(source(n))) == n

        return run

    for how, make in (("api", by_api), ("cli", by_cli)):  # first imports (pyarrow, readers)
        Store.create(tmp_path / f"warm-{how}").close()
        make(SIZES[0])(tmp_path / f"warm-{how}")
    growth = {}
    for how, make in (("cli", by_cli), ("api", by_api)):
        small, large = (_peak(make(n), tmp_path / f"{how}{n}") for n in SIZES)
        growth[how] = (large - small) / (SIZES[1] - SIZES[0])
    assert growth["cli"] <= growth["api"] + MARGIN, growth
