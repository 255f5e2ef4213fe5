"""The source export, its editors and the refusal check shared by the SQLite import's fault
test modules."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import apsw
import numpy as np
import pytest
from conftest import copy_of, drop_additions, exported_db

import infrastore_sqlite as I

T0 = datetime(2024, 1, 1, tzinfo=UTC)
MS0 = int(T0.timestamp() * 1000)
H = 3_600_000
STS = "SingleTimeSeries_f64_utc"
DET = "Deterministic_f64_utc"
PROB = "Probabilistic_f64_utc"
SCEN = "Scenarios_f64_utc"
NS = "NonSequentialTimeSeries_f64_utc"
INTS = "SingleTimeSeries_i32_utc"
SHAPED = "SingleTimeSeries_f64_2_utc"
PWL = "SingleTimeSeries_piecewise_linear_utc"
MONTH = "SingleTimeSeries_f64_zoneless"


def _build_source(store) -> None:
    add = store.add_time_series
    add(1, "Gen", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(6.0), "sts"))
    add(2, "Gen", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(6.0) + 10, "sts2"))
    stamps = [T0, T0 + timedelta(hours=5), T0 + timedelta(days=2)]
    add(1, "Gen", "Component", I.NonSequentialTimeSeries(stamps, np.array([1.0, 2.0, 3.0]), "ns"))
    add(
        1,
        "Gen",
        "Component",
        I.Deterministic(T0, "PT1H", "PT3H", "PT2H", 2, np.arange(6.0).reshape(3, 2), "det"),
    )
    add(
        1,
        "Gen",
        "Component",
        I.Probabilistic(
            T0, "PT1H", "PT2H", "PT1H", 2, [0.1, 0.9], np.arange(8.0).reshape(2, 2, 2), "prob"
        ),
    )
    add(
        1,
        "Gen",
        "Component",
        I.Scenarios(T0, "PT1H", "PT2H", "PT1H", 2, np.arange(8.0).reshape(2, 2, 2), "scen"),
    )
    add(1, "Gen", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(4, dtype=np.int32), "ints"))
    add(
        1,
        "Gen",
        "Component",
        I.SingleTimeSeries(T0, "PT1H", np.arange(8.0).reshape(4, 2), "shaped"),
    )
    pwl = np.array([[2, 0.0, 1.0, 2.0, 3.0], [1, 5.0, 6.0, 0, 0]])
    add(
        1,
        "Gen",
        "Component",
        I.SingleTimeSeries(T0, "PT1H", pwl, "pwl", element_type="piecewise_linear"),
    )
    add(
        1,
        "Gen",
        "Component",
        I.SingleTimeSeries(datetime(2024, 1, 31), "P1M", np.arange(5.0), "month"),
    )


@pytest.fixture(scope="module")
def base_db(tmp_path_factory):
    # These tests edit the layout's tables by hand; the companion views would stop
    # SQLite from renaming or altering them (tests/interchange/sqlite/test_file_readers.py
    # imports a file that has them).
    db = exported_db(tmp_path_factory, "faults", _build_source)
    drop_additions(db)
    return db


@pytest.fixture
def db(base_db, tmp_path):
    return copy_of(base_db, tmp_path, "edited.db")


@pytest.fixture
def dst(tmp_path):
    store = I.Store.create(tmp_path / "dst.h5")
    store.add_time_series(
        99, "Bus", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(3.0), "kept")
    )
    yield store
    store.close()


def edit(db, *sql: str) -> None:
    conn = apsw.Connection(str(db))
    for statement in sql:
        conn.execute(statement)
    conn.close()


def rebuild_without_constraints(db, table: str) -> None:
    """Re-create ``table`` with no NOT NULL constraints (and no index)."""
    edit(
        db,
        "DROP VIEW all_values",
        "DROP VIEW all_series",
        "DROP VIEW all_arrays",
        f'CREATE TABLE tmp_copy AS SELECT * FROM "{table}" ORDER BY rowid',
        f'DROP TABLE "{table}"',
        f'ALTER TABLE tmp_copy RENAME TO "{table}"',
    )


def state(store):
    return store.list_metadata(), store.num_distinct_arrays(), store.counts_by_type()


def refused(store, db, exc, pattern, **kwargs):
    before = state(store)
    with pytest.raises(exc) as info:
        store.import_sqlite(db, **kwargs)
    assert re.search(pattern, str(info.value)), str(info.value)
    assert state(store) == before
    return info.value


def q(x: str) -> str:
    return re.escape(x)
