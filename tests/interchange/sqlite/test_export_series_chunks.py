"""The SQLite export's series rows are read back from the catalog a chunk of ids at a
time (issue 37, Must 3): the ids of a whole partition as Python ints cost 36 bytes a
series twice over (22 MB at 300,000 series). With the chunk made small here, every query
takes at most a chunk of ids and the series table is the one a single query writes.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

import infrastore_sqlite as I
from infrastore_sqlite.interchange import series_rows
from infrastore_sqlite.store import Store

T0 = datetime(2024, 1, 1, tzinfo=UTC)
N = 11
CHUNK = 3


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "s.h5"
    with I.Store.create(path) as store:
        store.add_time_series_bulk(
            [
                {
                    "owner_id": k + 1,
                    "owner_type": "Gen",
                    "owner_category": "Component",
                    "time_series": I.SingleTimeSeries(
                        T0, "PT1H", np.random.default_rng(k).random(5), f"s{k}"
                    ),
                    "features": {"unit": k},
                }
                for k in range(N)
            ]
        )
        # A gap in the ids: the chunks are of ids, not of a range.
        store.remove_by_filter(owner_id=4)
    return path


def _series_table(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        (table,) = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            if r[0].endswith("_series") or r[0] == "series"
        ] or [None]
        assert table is not None
        return conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()
    finally:
        conn.close()


def test_series_rows_come_a_chunk_of_ids_at_a_time(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = tmp_path / "whole.db"
    with I.Store.open(store_path, read_only=True) as store:
        store.export_sqlite(whole)

    monkeypatch.setattr(series_rows, "_ASCENDING_CHUNK", CHUNK)
    asked: list[int] = []
    real = Store.iter_select_fields

    def counting(self, fields, ids=None, **filters):
        if ids is not None and "features_json" in fields:
            asked.append(len(ids))
        return real(self, fields, ids, **filters)

    monkeypatch.setattr(Store, "iter_select_fields", counting)
    chunked = tmp_path / "chunked.db"
    with I.Store.open(store_path, read_only=True) as store:
        store.export_sqlite(chunked)
    assert asked and max(asked) <= CHUNK and sum(asked) == N - 1
    rows = _series_table(chunked)
    assert len(rows) == N - 1
    assert rows == _series_table(whole)
