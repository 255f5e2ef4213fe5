"""The SQLite import's run read: consecutive short arrays read by one statement.

A store of many short SingleTimeSeries arrays is read a run of arrays at a time. The
run must give back every array as the one-by-one read does, and a fault in any array of
a run must be refused with the very message the one-by-one read gives.
"""

from __future__ import annotations

import itertools
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


def _reverse_rows(db) -> None:
    """The values rows again, array by array from the last id to the first (as the
    reference writes them, out of its arrays' order)."""
    conn = apsw.Connection(str(db))
    conn.execute(
        f"CREATE TABLE t AS SELECT * FROM {V} ORDER BY array_id DESC, rowid; DELETE FROM {V}; "
        f"INSERT INTO {V} SELECT * FROM t; DROP TABLE t"
    )
    conn.close()


# "reversed": one common start, the arrays' rows out of their order (the join again).
@pytest.fixture(scope="module", params=["staggered", "aligned", "reversed"])
def starts(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def base_db(tmp_path_factory, starts):
    db = exported_db(tmp_path_factory, f"runs-{starts}", lambda s: _build(s, starts))
    if starts == "reversed":
        _reverse_rows(db)
    return db


@pytest.fixture
def runs(monkeypatch):
    """Count the groups the run read hands over."""
    taken = []
    real = source.PartitionReader._fast_run

    def spy(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        run = out[0]
        if run is not None:
            taken.extend(range(run.at, run.end))  # the entries the run read hands over
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
    assert ("carray" in run_reads[0]) == (starts != "aligned")


def test_arrays_out_of_table_order_are_still_read_a_run_at_a_time(
    tmp_path, tmp_path_factory, monkeypatch
):
    """Values rows not in array-id order (as the reference writes them: its values in
    series order, its arrays numbered in hash order): the arrays still go by runs (one
    statement here), and planning them makes none of the import core's entries ahead (it
    once made ~97 per series, then read every array by a statement of its own: a
    4,000-series import took 0.45 s against 0.28 s)."""
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
    _reverse_rows(db)
    # Each Spec the core's entries make (an entry's first one, then the rest of its
    # series), counted where they are made: at the column store of the series rows.
    made = []
    real = core.SpecColumns._specs_at
    monkeypatch.setattr(
        core.SpecColumns,
        "_specs_at",
        lambda self, rows, keys: made.extend(rows) or real(self, rows, keys),
    )
    statements: list[str] = []
    real_column = tables.PartitionTables.column

    def spy(self, sql, params=()):
        statements.append(sql)
        return real_column(self, sql, params)

    monkeypatch.setattr(tables.PartitionTables, "column", spy)
    store = I.Store.create(tmp_path / "dst.h5")
    try:
        ids = store.import_sqlite(db)
        assert len(ids) == n
        got = {s.name: s.data for s in store.read_by_ids(ids)}
        for k in range(n):
            np.testing.assert_array_equal(got[f"r{k}"], np.full(LEN, float(k)))
    finally:
        store.close()
    assert n <= len(made) <= 2 * n, len(made)  # each entry made once (and its Specs once)
    run_reads = [s for s in statements if "x'00'" in s]
    assert len(run_reads) == 1 and "carray" in run_reads[0], run_reads


def test_the_run_plan_holds_a_block_of_entries_at_a_time(tmp_path, tmp_path_factory, monkeypatch):
    """The run plan holds its columns for a block of entries, not the partition's; runs
    still form across the blocks' edges and every array comes back as written."""
    n = 50
    rng = np.random.default_rng(37)
    data = [rng.random(LEN) for _ in range(n)]
    db = exported_db(
        tmp_path_factory,
        "blocks",
        lambda s: [
            s.add_time_series(k + 1, "Gen", "Component", I.SingleTimeSeries(T0, "PT1H", d, f"b{k}"))
            for k, d in enumerate(data)
        ],
    )  # fmt: skip
    _reverse_rows(db)
    monkeypatch.setattr(source, "_PLAN_BLOCK", 7)
    monkeypatch.setattr(source, "_RUN_ARRAYS", 4)
    held, runs = [], []
    real_load, real_run = source.RunPlan._load, source.PartitionReader._fast_run

    def load(self, start):
        real_load(self, start)
        held.append(len(self._ok))

    def fast_run(self, *args, **kwargs):
        out = real_run(self, *args, **kwargs)
        if out[0] is not None:
            runs.append((out[0].at, out[0].end))
        return out

    monkeypatch.setattr(source.RunPlan, "_load", load)
    monkeypatch.setattr(source.PartitionReader, "_fast_run", fast_run)
    store = I.Store.create(tmp_path / "dst.h5")
    try:
        ids = store.import_sqlite(db)
        got = {s.name: s.data for s in store.read_by_ids(ids)}
    finally:
        store.close()
    for k, d in enumerate(data):
        np.testing.assert_array_equal(got[f"b{k}"], d)
    assert held and max(held) <= 7  # never more than a block of entries planned
    assert len(held) >= n // 7  # the plan moved on a block at a time
    # Every entry went by a run of at most 4, runs following each other to the end.
    assert runs[0][0] == 0 and runs[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(runs))
    assert max(end - at for at, end in runs) == 4
