"""A store of a few segments, one per bulk add, for the tests of open and released segments.

``ADDS`` bulk adds of ``PER_ADD`` one-day hourly series each: fewer segments than a
merge's fan-in of 8, so none is merged away. The series named ``s{k}`` holds
``values(k)``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

import infrastore_sqlite as I

T0 = datetime(2024, 1, 1, tzinfo=UTC)
ADDS = 5  # segments written (fewer than a merge's fan-in of 8: none is merged)
PER_ADD = 6


def values(k: int) -> np.ndarray:
    """The values of series ``s{k}``."""
    return np.random.default_rng(k).random(24)


def build_segmented(path: Path, compression: str = "none") -> Path:
    """A new store at ``path`` of ``ADDS`` segments, ``PER_ADD`` series each."""
    with I.Store.create(path, compression=compression) as store:
        for a in range(ADDS):  # one segment per bulk add
            store.add_time_series_bulk(
                [
                    {
                        "owner_id": a * PER_ADD + k + 1,
                        "owner_type": "Gen",
                        "owner_category": "Component",
                        "time_series": I.SingleTimeSeries(
                            T0, "PT1H", values(a * PER_ADD + k), f"s{a * PER_ADD + k}"
                        ),
                    }
                    for k in range(PER_ADD)
                ]
            )
    return path


def check_every_series(store: I.Store) -> None:
    """Every series of :func:`build_segmented` reads back whole and exact."""
    got = {s.name: s.data for s in store.read_by_ids([r.id for r in store.select_rows()])}
    assert sorted(got) == sorted(f"s{k}" for k in range(ADDS * PER_ADD))
    for k in range(ADDS * PER_ADD):
        np.testing.assert_array_equal(got[f"s{k}"], values(k))


def check_imported(out: Path, container: str, home: Path) -> None:
    """``out`` (an export of the segmented store as ``container``, "sqlite" or "parquet")
    imported into a new store under ``home``: every series back, exact."""
    with I.Store.create(home / "back.h5") as back:
        if container == "sqlite":
            back.import_sqlite(out)
        else:
            back.import_parquet(out)
        check_every_series(back)
