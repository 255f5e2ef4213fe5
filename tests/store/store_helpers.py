"""Series builders and snapshots shared by the store's end-to-end test modules."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from infrastore_sqlite import (
    OwnerCategory,
    SingleTimeSeries,
    Store,
    TimeSeriesType,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
C = OwnerCategory.Component
SA = OwnerCategory.SupplementalAttribute
DST = TimeSeriesType.DeterministicSingleTimeSeries


def sts(name: str = "load", values: Any = None, start: datetime = T0, res: str = "PT1H", **kw):
    data = np.arange(10.0) if values is None else values
    return SingleTimeSeries(start, res, data, name, **kw)


def add(store: Store, ts, owner_id: int = 1, owner_type: str = "Gen", category=C, **kw) -> int:
    return store.add_time_series(owner_id, owner_type, category, ts, **kw)


def snapshot(store: Store) -> tuple:
    """Everything a failed write must leave alone."""
    cat = store._catalog
    return (
        store.list_metadata(),
        store.num_distinct_arrays(),
        cat.execute("SELECT * FROM arrays ORDER BY hash, kind").fetchall(),
        cat.execute("SELECT * FROM segments ORDER BY name").fetchall(),
        cat.execute("SELECT * FROM feature_maps ORDER BY features_hash").fetchall(),
        cat.execute("SELECT * FROM feature_sets ORDER BY features_hash, key").fetchall(),
        cat.scalar("SELECT seq FROM sqlite_sequence WHERE name = 'time_series_associations'"),
    )


def file_digests(path: Path) -> dict[str, str]:
    """Every file of a closed store directory, by name, with a digest of its bytes.

    SQLite's WAL index (-shm) and an empty WAL are left out: a read-only reader creates
    them to coordinate with writers, and they hold no content.
    """
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
        and not p.name.endswith("-shm")
        and not (p.name.endswith("-wal") and p.stat().st_size == 0)
    }


def segment_files(path: Path) -> list[Path]:
    return sorted((path / "segments").iterdir())
