"""What an import holds per series stays a few hundred bytes (issue 26, target 2).

An import of many short series once held a Spec, its row's cells, a dict entry per array
and key, and the reader's span and head tuples for the whole partition (~1.2 KB per
series): peak memory grew with the partition. The batches a reader and the filing work
in are made small here, so that what they hold at once is the same at both sizes and
the difference is what the import holds per series.

The sizes are chosen so that the per-series part shows above the fixed part: a first
import (of a few series) is made before either is measured, so one-time costs (modules
and caches made on first use) fall on neither, and the smaller import is large enough
that its peak is already in the regime where it grows with the partition (at 1,000 and
4,000 series a fixed buffer dominated both peaks and the larger import measured lower:
the test could not fail). At 2,000 and 8,000 series the import holds ~360 bytes a
series; an import made to hold 1 KB more a series (a bytearray per filed batch, kept
until its transaction commits) measured 1,200 and failed.
"""

from __future__ import annotations

import gc
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from conftest import exported_db

import infrastore_sqlite as I
from infrastore_sqlite.interchange.importing import batches, specs

T0 = datetime(2024, 1, 1, tzinfo=UTC)
WARM, SMALL, LARGE = 200, 2000, 8000
#: Bytes per series the import may hold beyond the smaller partition's peak: its columns
#: (ids, keys, spans, names), the ids it returns and what the store keeps for its
#: transaction take ~360; the Specs, keys and spans once held took ~1,200.
PER_SERIES = 500


def _fill(store: I.Store, n: int) -> None:
    rng = np.random.default_rng(26)
    store.add_time_series_bulk(
        [
            {
                "owner_id": k + 1,
                "owner_type": "Gen",
                "owner_category": "Component",
                "time_series": I.SingleTimeSeries(T0, "PT1H", rng.random(4), f"s{k}"),
            }
            for k in range(n)
        ]
    )


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    return {
        n: exported_db(tmp_path_factory, f"mem{n}", lambda s, n=n: _fill(s, n))
        for n in (WARM, SMALL, LARGE)
    }


def _peak(db: Path, out: Path, n: int) -> int:
    with I.Store.create(out) as store:
        gc.collect()
        tracemalloc.start()
        try:
            ids = store.import_sqlite(db)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert len(ids) == n  # every series imported: a partial import would hold less
    return peak


def test_an_imports_peak_grows_by_a_few_hundred_bytes_per_series(
    exports: dict[int, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(specs, "_SPEC_BATCH", 256)
    monkeypatch.setattr(batches, "_BATCH_SERIES", 256)
    _peak(exports[WARM], tmp_path / "warm.h5", WARM)  # one-time costs fall here
    small = _peak(exports[SMALL], tmp_path / "small.h5", SMALL)
    large = _peak(exports[LARGE], tmp_path / "large.h5", LARGE)
    per_series = (large - small) / (LARGE - SMALL)
    assert per_series < PER_SERIES, f"{per_series:.0f} bytes held per series"
