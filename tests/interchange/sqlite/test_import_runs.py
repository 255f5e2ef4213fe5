"""The SQLite import's run read: consecutive short arrays read by one statement.

A store of many short SingleTimeSeries arrays is read a run of arrays at a time. The
run must give back every array as the one-by-one read does, and a fault in any array of
a run must be refused with the very message the one-by-one read gives.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import apsw
import numpy as np
import pytest
from conftest import copy_of, exported_db, query

import infrastore_sqlite as I
from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.sqlite.reader import source, tables

T0 = datetime(2024, 1, 1, tzinfo=UTC)
N = 6  # series
LEN = 24
V = '"SingleTimeSeries_f64_utc_values"'
A = '"SingleTimeSeries_f64_utc_arrays"'


def _build(store, starts: str) -> None:
    rng = np.random.default_rng(16)
    for k in range(N):
        # Staggered starts take the run read's join; one common start its range scan.
        start = T0 + timedelta(hours=k) if starts == "staggered" else T0
        ts = I.SingleTimeSeries(start, "PT1H", rng.random(LEN), f"s{k}")
        store.add_time_series(k + 1, "Gen", "Component", ts)


@pytest.fixture(scope="module", params=["staggered", "aligned"])
def starts(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def base_db(tmp_path_factory, starts):
    return exported_db(tmp_path_factory, f"runs-{starts}", lambda s: _build(s, starts))


@pytest.fixture
def runs(monkeypatch):
    """Count the groups the run read hands over."""
    taken = []
    real = source.PartitionReader._fast_run

    def spy(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        taken.extend(out[0])
        return out

    monkeypatch.setattr(source.PartitionReader, "_fast_run", spy)
    return taken


def test_runs_read_every_array_as_written(base_db, starts, tmp_path, runs):
    src = I.Store.create(tmp_path / "src.h5")
    dst = I.Store.create(tmp_path / "dst.h5")
    try:
        _build(src, starts)
        dst.import_sqlite(base_db)
        assert len(runs) == N  # every array came through the run read
        want, got = _by_name(src), _by_name(dst)
        assert sorted(got) == [f"s{k}" for k in range(N)]
        for name, series in want.items():
            np.testing.assert_array_equal(got[name].data, series.data)
            assert got[name].initial_timestamp == series.initial_timestamp
    finally:
        src.close()
        dst.close()


def _by_name(store) -> dict:
    rows = store.select_rows()
    return {s.name: s for s in store.read_by_ids([r.id for r in rows])}


def _row(k: int, offset: int) -> str:
    """The rowid of row ``offset`` of the ``k``-th array (in id order)."""
    return (
        f"(SELECT min(rowid) FROM {V} WHERE array_id = "
        f"(SELECT id FROM {A} ORDER BY id LIMIT 1 OFFSET {k})) + {offset}"
    )


FAULTS = {
    "off grid": lambda k: f"UPDATE {V} SET timestamp = timestamp + 1 WHERE rowid = {_row(k, 3)}",
    "hole": lambda k: f"DELETE FROM {V} WHERE rowid = {_row(k, 3)}",
    "double": lambda k: f"INSERT INTO {V} SELECT * FROM {V} WHERE rowid = {_row(k, 3)}",
    "real timestamp": lambda k: (
        f"UPDATE {V} SET timestamp = timestamp + 0.5 WHERE rowid = {_row(k, 0)}"
    ),
    "text value": lambda k: f"UPDATE {V} SET value = 'x' WHERE rowid = {_row(k, 5)}",
    "oversized cell": lambda k: (
        f"UPDATE {V} SET value = zeroblob(100000) WHERE rowid = {_row(k, 5)}"
    ),
    "checksum": lambda k: f"UPDATE {V} SET value = value + 1 WHERE rowid = {_row(k, 5)}",
}


def _refusal(db, tmp_path, name: str) -> str:
    store = I.Store.create(tmp_path / f"{name}.h5")
    try:
        with pytest.raises(InvalidParameterError) as info:
            store.import_sqlite(db)
        assert store.list_metadata() == []  # nothing filed
    finally:
        store.close()
    return str(info.value)


@pytest.mark.parametrize("k", [0, 2, N - 1])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_in_a_run_is_refused_as_one_by_one(base_db, tmp_path, monkeypatch, fault, k):
    db = copy_of(base_db, tmp_path, "edited.db")
    conn = apsw.Connection(str(db))
    conn.execute(FAULTS[fault](k))
    conn.close()
    by_runs = _refusal(db, tmp_path, "runs")
    monkeypatch.setattr(source, "_RUN_ARRAYS", 1)  # no run has two arrays: one by one
    one_by_one = _refusal(db, tmp_path, "one")
    assert by_runs == one_by_one
    (name,) = query(
        db,
        f'SELECT name FROM "SingleTimeSeries_f64_utc_series" WHERE array_id = '
        f"(SELECT id FROM {A} ORDER BY id LIMIT 1 OFFSET {k})",
    )[0]
    assert f"series '{name}'" in by_runs  # the faulty array's series, wherever in the run


def test_runs_of_one_start_are_one_range_scan(base_db, starts, tmp_path, monkeypatch):
    statements: list[str] = []
    real = tables.PartitionTables.column

    def spy(self, sql, params=()):
        statements.append(sql)
        return real(self, sql, params)

    # Every reader object reads a column through its partition's tables.
    monkeypatch.setattr(tables.PartitionTables, "column", spy)
    dst = I.Store.create(tmp_path / "dst.h5")
    try:
        assert len(dst.import_sqlite(base_db)) == N
    finally:
        dst.close()
    run_reads = [s for s in statements if "x'00'" in s]
    assert len(run_reads) == 1  # all N arrays in one statement
    assert ("carray" in run_reads[0]) == (starts == "staggered")


def test_a_run_that_cannot_form_makes_no_entries_ahead(tmp_path, tmp_path_factory, monkeypatch):
    """Values rows not in array-id order (as the reference writes them): no run forms,
    and trying one must not make the import core's entries for the whole run ahead of
    each array (it made ~97 per series: a 4,000-series import spent 0.19 s of 0.45 s)."""
    from infrastore_sqlite.interchange.importing import run as core

    n = 40
    db = exported_db(
        tmp_path_factory,
        "reversed",
        lambda s: [
            s.add_time_series(
                k + 1, "Gen", "Component",
                I.SingleTimeSeries(T0, "PT1H", np.full(LEN, float(k)), f"r{k}"),
            )
            for k in range(n)
        ],
    )  # fmt: skip
    conn = apsw.Connection(str(db))
    # The rows again, array by array from the last id to the first.
    conn.execute(
        f"CREATE TABLE t AS SELECT * FROM {V} ORDER BY array_id DESC, rowid; DELETE FROM {V}; "
        f"INSERT INTO {V} SELECT * FROM t; DROP TABLE t"
    )
    conn.close()
    made = []
    real = core._Wanted._entry
    monkeypatch.setattr(core._Wanted, "_entry", lambda self, at: made.append(at) or real(self, at))
    store = I.Store.create(tmp_path / "dst.h5")
    try:
        ids = store.import_sqlite(db)
        assert len(ids) == n
        got = {s.name: s.data for s in store.read_by_ids(ids)}
        for k in range(n):
            np.testing.assert_array_equal(got[f"r{k}"], np.full(LEN, float(k)))
    finally:
        store.close()
    assert len(made) <= 4 * n, len(made)
