"""The SQLite import's discovery and arguments (missing, foreign and empty files, prefixes,
flags, duplicates, read-only stores) and the odd shapes it accepts."""

from __future__ import annotations

import apsw
import import_faults_helpers
import numpy as np
import pytest
from import_faults_helpers import (
    MS0,
    STS,
    T0,
    H,
    edit,
    q,
    refused,
)

import infrastore_sqlite as I
from infrastore_sqlite.errors import DuplicateTimeSeriesError, InvalidParameterError, StorageError

base_db = import_faults_helpers.base_db
db = import_faults_helpers.db
dst = import_faults_helpers.dst


# ---------------------------------------------------------------------- discovery and arguments
def test_missing_file(dst, tmp_path):
    refused(
        dst, tmp_path / "nope.db", InvalidParameterError, q(f"{tmp_path / 'nope.db'} is not a file")
    )


def test_not_a_database(dst, tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_text("not sqlite at all " * 100)
    refused(dst, junk, StorageError, "is not an SQLite database")


def test_nothing_found(dst, db):
    """What the file holds instead decides the way out (issue 24): another prefix is
    suggested only when partitions are there."""
    partitions = len(_all_values_tables(db))
    refused(
        dst,
        db,
        InvalidParameterError,
        q(
            'holds no exported partitions under the table prefix "zz_", but it holds '
            f'{partitions} without a prefix: to import them, pass table_prefix=""'
        )
        + "$",
        table_prefix="zz_",
    )
    # One partition moved under a prefix of its own: both prefixes are named, the one
    # holding more first.
    moved = f"{STS}_values", f"{STS}_series", f"{STS}_arrays"
    edit(db, *(f"ALTER TABLE {n} RENAME TO b_{n}" for n in moved))
    refused(
        dst,
        db,
        InvalidParameterError,
        q(
            f'but it holds {partitions - 1} without a prefix and 1 under the table prefix "b_": '
            "to import them, pass table_prefix=\"\", or pass table_prefix='b_'"
        ),
        table_prefix="zz_",
    )
    edit(db, *(f"DROP TABLE {n}" for n in _all_values_tables(db)))
    error = refused(
        dst,
        db,
        InvalidParameterError,
        q(f"{db} is not an export: it holds no exported partitions under any table prefix"),
    )
    # The first five of the tables it does hold, and what to do: the file the export writes.
    conn = apsw.Connection(str(db))
    tables = sorted(n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'"))
    conn.close()
    assert len(tables) > 5
    assert str(error).endswith(
        f"the tables it holds: {', '.join(tables[:5])}, … and {len(tables) - 5} more. "
        "Name a file written by Store.export_sqlite"
    )
    assert error.render("cli").endswith(
        "Name a file written by `infrastore-sqlite export -f sqlite --db FILE`"
    )
    assert "--table-prefix" not in error.render("cli")


def test_an_empty_file_is_not_an_export(dst, tmp_path):
    empty = tmp_path / "empty.db"
    apsw.Connection(str(empty)).execute("CREATE TABLE t (x); DROP TABLE t")
    refused(
        dst,
        empty,
        InvalidParameterError,
        "^"
        + q(
            f"{empty} holds no tables at all, so no exported partition; name a file written "
            "by Store.export_sqlite"
        )
        + "$",
    )


def _all_values_tables(db) -> list[str]:
    conn = apsw.Connection(str(db))
    names = [
        n
        for (n,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE '%values'"
        )
    ]
    conn.close()
    return names


def test_case_variant_and_foreign_tables_are_ignored(db, dst):
    edit(
        db,
        "CREATE TABLE singletimeseries_x_utc_values (a)",
        "CREATE TABLE Foo_values (a)",
        f"CREATE TABLE {STS}_other (a)",
        "CREATE VIEW SingleTimeSeries_v_utc_values AS SELECT 1",
    )
    assert len(dst.import_sqlite(db)) == 10


def test_bad_prefix(dst, db):
    refused(dst, db, InvalidParameterError, "must end in '_'", table_prefix="run1")
    refused(dst, db, InvalidParameterError, "may only contain ASCII letters", table_prefix="a-b_")


def test_derived_partition_refuses_the_whole_prefix(tmp_path, dst):
    src = I.Store.create(tmp_path / "src.h5")
    src.add_time_series(1, "G", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(6.0), "s"))
    src.transform_single_time_series("PT2H", "PT1H")
    db = tmp_path / "x.db"
    src.export_sqlite(db, include_derived=True)
    src.export_sqlite(db, table_prefix="other_")
    refused(
        dst,
        db,
        InvalidParameterError,
        "a DeterministicSingleTimeSeries is derived from a stored SingleTimeSeries.*transform_single_time_series",
    )
    assert len(dst.import_sqlite(db, table_prefix="other_")) == 1


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        (
            "initial_timestamp",
            "--initial-timestamp cannot be used with --sqlite: the values imply the grid",
        ),
        ("interval", "--interval cannot be used with --sqlite"),
        ("horizon", "--horizon cannot be used with --sqlite"),
        ("count", "--count cannot be used with --sqlite"),
        ("percentiles", "--percentiles cannot be used with --sqlite"),
        ("scenario_count", "--scenario-count cannot be used with --sqlite"),
        ("layout", "--layout cannot be used with --sqlite"),
        ("owner_map", "--owner-map cannot be used with --sqlite"),
        ("owner_id_from", "--owner-id-from cannot be used with --sqlite"),
        ("bogus", "unknown import flag 'bogus'"),
    ],
)
def test_refused_and_unknown_flags(dst, db, flag, message):
    refused(dst, db, InvalidParameterError, q(message), overrides={flag: "x"})


def test_duplicate_import_is_refused_naming_the_series(db, dst):
    ids = dst.import_sqlite(db)
    assert len(ids) == 10
    err = refused(
        dst,
        db,
        DuplicateTimeSeriesError,
        r"a time series with that key already exists: '\w+' \(owner \d\)",
    )
    assert err.series


def test_two_rows_with_one_identity(db, dst):
    edit(
        db,
        f"UPDATE {STS}_series SET owner_id = 1 WHERE name = 'sts2'",
        f"UPDATE {STS}_series SET name = 'sts'",
    )
    refused(
        dst,
        db,
        DuplicateTimeSeriesError,
        "a time series with that key already exists: 'sts' \\(owner 1\\)",
    )


def test_read_only_store(db, tmp_path):
    path = tmp_path / "ro.h5"
    I.Store.create(path).close()
    ro = I.Store.open(path, read_only=True)
    with pytest.raises(I.ReadOnlyStoreError):
        ro.import_sqlite(db)
    report = ro.import_sqlite(db, dry_run=True)  # a dry run writes nothing, so it may
    assert report.ok
    ro.close()


# ---------------------------------------------------------------------- accepted shapes
def test_values_table_without_rowid(db, dst):
    edit(
        db,
        "DROP VIEW all_values",
        "CREATE TABLE t2 (array_id INTEGER NOT NULL, timestamp INTEGER NOT NULL, value REAL, "
        "PRIMARY KEY (timestamp, array_id)) WITHOUT ROWID",
        f"INSERT INTO t2 SELECT array_id, timestamp, value FROM {STS}_values",
        f"DROP TABLE {STS}_values",
        f"ALTER TABLE t2 RENAME TO {STS}_values",
    )
    assert len(dst.import_sqlite(db)) == 10


def test_one_key_spread_over_two_arrays_rows(db, dst):
    """Without the UNIQUE constraint one key may have two ids: the key is what joins."""
    edit(
        db,
        "DROP VIEW all_arrays",
        "CREATE TABLE t3 (id INTEGER PRIMARY KEY, data_hash TEXT NOT NULL, time_axis TEXT NOT NULL)",
        f"INSERT INTO t3 SELECT * FROM {STS}_arrays",
        f"DROP TABLE {STS}_arrays",
        f"ALTER TABLE t3 RENAME TO {STS}_arrays",
        f"INSERT INTO {STS}_arrays SELECT 60, data_hash, time_axis FROM {STS}_arrays WHERE id = 1",
        f"UPDATE {STS}_values SET array_id = 60 WHERE array_id = 1 AND timestamp >= {MS0 + 3 * H}",
    )
    ids = dst.import_sqlite(db)
    assert sorted(
        m["length"] for m in dst.list_metadata_by_ids(ids) if m["name"].startswith("sts")
    ) == [6, 6]


def test_groups_interleaved_by_a_sort_on_timestamp(db, dst):
    edit(
        db,
        "DROP VIEW all_values",
        f"CREATE TABLE t4 AS SELECT * FROM {STS}_values ORDER BY timestamp DESC, array_id",
        f"DROP TABLE {STS}_values",
        f"ALTER TABLE t4 RENAME TO {STS}_values",
        f"CREATE INDEX k ON {STS}_values (array_id)",
    )
    assert len(dst.import_sqlite(db)) == 10
