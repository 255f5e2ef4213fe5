"""Every refusal of the SQLite import, each with its message, and the store unchanged after.

A small exported database is edited with plain SQL the way a user (or a broken tool)
would, then imported into a store that already holds a series. Each import must fail with
an error naming the table, the series or array, and the row where there is one, and must
leave the store exactly as it was.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import apsw
import numpy as np
import pytest
from conftest import copy_of, drop_additions, exported_db

import infrastore_sqlite as I
from infrastore_sqlite.errors import DuplicateTimeSeriesError, InvalidParameterError, StorageError

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


# ---------------------------------------------------------------------- checksum
def test_edited_value_fails_the_checksum(db, dst):
    edit(db, f"UPDATE {STS}_values SET value = value * 1.1 WHERE array_id = 1")
    err = refused(
        dst,
        db,
        InvalidParameterError,
        r"series 'sts2?' .* does not match its recorded data_hash: the file says [0-9a-f]{12}… "
        r"and its rows hash to [0-9a-f]{12}… \(time axis ",
    )
    assert "skip_checksum=True" in str(err) and "rehash_sqlite" in str(err)
    assert "--no-checksum" in err.render("cli") and "infrastore-sqlite rehash" in err.render("cli")
    assert err.key is not None


def test_upper_case_hash_fails_the_checksum(db, dst):
    edit(db, f"UPDATE {STS}_arrays SET data_hash = upper(data_hash) WHERE id = 1")
    refused(dst, db, InvalidParameterError, "does not match its recorded data_hash")


def test_reordered_scenarios_fail_the_checksum(db, dst):
    edit(db, f"UPDATE {SCEN}_values SET scenario = 1 - scenario")
    refused(dst, db, InvalidParameterError, "series 'scen' .*does not match its recorded data_hash")


# ---------------------------------------------------------------------- static grids
@pytest.mark.parametrize("skip", [False, True])
def test_sts_row_deleted_mid_series(db, dst, skip):
    edit(db, f"DELETE FROM {STS}_values WHERE timestamp = {MS0 + 2 * H} AND array_id = 1")
    refused(
        dst,
        db,
        InvalidParameterError,
        q("does not sit on a PT1H grid anchored at 2024-01-01 00:00:00 UTC"),
        skip_checksum=skip,
    )


def test_sts_row_duplicated(db, dst):
    edit(db, f"INSERT INTO {STS}_values SELECT * FROM {STS}_values WHERE timestamp = {MS0 + 2 * H}")
    refused(
        dst,
        db,
        InvalidParameterError,
        "does not sit on a PT1H grid .*repeats the step",
        skip_checksum=True,
    )


def test_sts_row_shifted_off_grid(db, dst):
    edit(db, f"UPDATE {STS}_values SET timestamp = timestamp + 1 WHERE timestamp = {MS0 + 2 * H}")
    refused(
        dst,
        db,
        InvalidParameterError,
        r"does not sit on a PT1H grid .*rowid \d+ is at 2024-01-01 02:00:00.001 UTC",
    )


def test_p1m_month_end_is_checked_on_the_calendar(db, dst):
    # Jan 31 -> Feb 29 -> Mar 31: moving Mar 31 to Mar 30 leaves the clamped grid.
    edit(db, f"UPDATE {MONTH}_values SET timestamp = timestamp - 86400000 WHERE rowid = 3")
    refused(
        dst,
        db,
        InvalidParameterError,
        q("does not sit on a P1M grid anchored at 2024-01-31 00:00:00 UTC"),
    )


def test_first_sts_row_deleted_imports_with_new_anchor(db, dst):
    edit(
        db,
        f"DELETE FROM {STS}_values WHERE timestamp = {MS0} AND array_id = (SELECT array_id FROM {STS}_series WHERE name = 'sts')",
    )
    ids = dst.import_sqlite(db, skip_checksum=True)
    meta = next(m for m in dst.list_metadata_by_ids(ids) if m["name"] == "sts")
    assert meta["length"] == 5
    assert meta["initial_timestamp"] == "2024-01-01T01:00:00+00:00"


def test_non_integer_timestamp_is_refused(db, dst):
    edit(db, f"UPDATE {STS}_values SET timestamp = timestamp + 0.5 WHERE rowid = 3")
    refused(dst, db, InvalidParameterError, r"rowid 3: `timestamp` holds .*not a whole millisecond")


def test_text_timestamp_is_refused(db, dst):
    edit(db, f"UPDATE {STS}_values SET timestamp = 'noon' WHERE rowid = 3")
    refused(dst, db, InvalidParameterError, r"rowid 3: `timestamp` holds text")


def test_whole_real_timestamps_are_accepted(db, dst):
    rebuild_without_constraints(db, f"{STS}_values")
    edit(
        db,
        f"CREATE TABLE t2 AS SELECT array_id, CAST(timestamp AS REAL) AS timestamp, value FROM {STS}_values",
        f"DROP TABLE {STS}_values",
        f"ALTER TABLE t2 RENAME TO {STS}_values",
    )
    ids = dst.import_sqlite(db)
    assert len(ids) == 10


# ---------------------------------------------------------------------- forecast cubes
def test_forecast_row_missing(db, dst):
    edit(db, f"DELETE FROM {DET}_values WHERE rowid = 2")
    refused(
        dst,
        db,
        InvalidParameterError,
        q("series 'det' (owner 1")
        + ".*"
        + q("has 5 rows, but its grid holds 6 values (1 lane x 3 steps x 2 windows)"),
    )


def test_forecast_slot_filled_twice(db, dst):
    edit(db, f"UPDATE {DET}_values SET timestamp = issue_time WHERE rowid = 2")
    refused(dst, db, InvalidParameterError, q("has two rows for window 0, step 0, lane 0"))


def test_forecast_window_missing_mid_run(db, dst):
    edit(db, f"UPDATE {DET}_series SET interval = 'PT1H'")
    refused(
        dst,
        db,
        InvalidParameterError,
        q(
            "has an issue time of 2024-01-01 02:00:00 UTC, which is not window 1 of a PT1H grid anchored at 2024-01-01 00:00:00 UTC"
        ),
    )


def test_forecast_issue_time_off_grid(db, dst):
    edit(
        db,
        f"UPDATE {DET}_values SET issue_time = issue_time + 1, timestamp = timestamp + 1 WHERE issue_time = {MS0 + 2 * H}",
    )
    refused(
        dst,
        db,
        InvalidParameterError,
        q("has an issue time of 2024-01-01 02:00:00.001 UTC, which is not window 1 of a PT2H grid"),
    )


def test_forecast_target_off_the_horizon(db, dst):
    edit(db, f"UPDATE {DET}_values SET timestamp = timestamp + {3 * H} WHERE rowid = 3")
    refused(
        dst,
        db,
        InvalidParameterError,
        r"has a target time of .* which is not on the 3-step grid starting at 2024-01-01 00:00:00 UTC",
    )


@pytest.mark.parametrize(
    ("column", "value"), [("horizon", "PT2H"), ("resolution", "PT30M"), ("interval", "PT3H")]
)
def test_forecast_grid_columns_edited(db, dst, column, value):
    edit(db, f"UPDATE {DET}_series SET {column} = '{value}'")
    refused(
        dst, db, InvalidParameterError, "series 'det' .*(rows, but its grid|target time|issue time)"
    )


def test_percentile_changed_in_one_window(db, dst):
    edit(
        db,
        f"UPDATE {PROB}_values SET percentile = 0.2 WHERE percentile = 0.1 AND issue_time = {MS0 + H}",
    )
    refused(
        dst,
        db,
        InvalidParameterError,
        q("has 8 rows, but its grid holds 12 values (3 lanes x 2 steps x 2 windows)"),
    )


def test_scenarios_renumbered_from_one(db, dst):
    edit(db, f"UPDATE {SCEN}_values SET scenario = scenario + 1")
    refused(
        dst,
        db,
        InvalidParameterError,
        q("has 8 rows, but its grid holds 12 values (3 lanes x 2 steps x 2 windows)"),
    )


def test_negative_scenario(db, dst):
    edit(db, f"UPDATE {SCEN}_values SET scenario = -1 WHERE rowid = 1")
    refused(dst, db, InvalidParameterError, "has scenario -1; scenarios count from 0")


def test_non_sequential_duplicate_timestamp(db, dst):
    edit(db, f"UPDATE {NS}_values SET timestamp = {MS0} WHERE rowid = 2")
    refused(
        dst,
        db,
        InvalidParameterError,
        r"series 'ns' .*timestamps must be strictly increasing.*rowid 2 repeats 2024-01-01 00:00:00 UTC",
    )


# ---------------------------------------------------------------------- dangling sides
def test_series_row_whose_array_has_no_values(db, dst):
    edit(db, f"DELETE FROM {STS}_values WHERE array_id = 1")
    refused(
        dst,
        db,
        InvalidParameterError,
        r"a series row names an array \([0-9a-f]{12}…, R6/2024-01-01T00:00:00Z/PT1H\) the values file does not hold",
    )


def test_values_group_no_series_claims(db, dst):
    edit(db, f"DELETE FROM {STS}_series WHERE name = 'sts2'")
    refused(
        dst,
        db,
        InvalidParameterError,
        r"the values file holds an array \([0-9a-f]{12}…, R6/.*\) that no series row names",
    )


def test_series_table_empty_but_values_not(db, dst):
    edit(db, f"DELETE FROM {STS}_series")
    refused(dst, db, InvalidParameterError, q(f"{STS}_series is empty but {STS}_values is not"))


def test_values_row_names_unknown_array(db, dst):
    edit(db, f"UPDATE {STS}_values SET array_id = 77 WHERE rowid = 4")
    refused(
        dst,
        db,
        InvalidParameterError,
        r"a values row names `array_id` 77, which the arrays table does not hold.*rowid 4",
    )


def test_values_row_names_unknown_array_without_index(db, dst):
    edit(
        db, f"DROP INDEX {STS}_values_key", f"UPDATE {STS}_values SET array_id = 77 WHERE rowid = 4"
    )
    refused(
        dst,
        db,
        InvalidParameterError,
        r"a values row names `array_id` 77, which the arrays table does not hold.*rowid 4",
    )


def test_series_row_names_unknown_array(db, dst):
    edit(db, f"UPDATE {STS}_series SET array_id = 77 WHERE name = 'sts'")
    refused(
        dst,
        db,
        InvalidParameterError,
        r"a series row names `array_id` 77, which the arrays table does not hold",
    )


def test_arrays_row_with_neither_side_is_ignored(db, dst):
    edit(db, f"INSERT INTO {STS}_arrays (id, data_hash, time_axis) VALUES (50, 'ff', 'R1/x/PT1H')")
    assert len(dst.import_sqlite(db)) == 10


@pytest.mark.parametrize("sibling", ["series", "arrays"])
def test_values_table_without_its_siblings(db, dst, sibling):
    edit(
        db,
        "DROP VIEW all_values",
        "DROP VIEW all_series",
        "DROP VIEW all_arrays",
        f"DROP TABLE {STS}_{sibling}",
    )
    refused(
        dst,
        db,
        InvalidParameterError,
        q(
            f"holds {STS}_values but no {STS}_{sibling} beside it; a partition's tables come from one export"
        ),
    )


def test_missing_series_column(db, dst):
    edit(db, "DROP VIEW all_series", f"ALTER TABLE {STS}_series DROP COLUMN units")
    refused(
        dst,
        db,
        InvalidParameterError,
        q(f"{STS}_series is missing column(s) a SingleTimeSeries series table carries: units"),
    )


# ---------------------------------------------------------------------- NULLs
@pytest.mark.parametrize(
    ("table", "column", "pattern"),
    [
        (f"{STS}_series", "owner_type", rf"{STS}_series id \d+ has NULL in `owner_type`"),
        (f"{STS}_values", "timestamp", rf"{STS}_values, rowid 2: `timestamp` is NULL"),
        (f"{DET}_values", "issue_time", rf"{DET}_values, rowid 2: `issue_time` is NULL"),
        (f"{PROB}_values", "percentile", rf"{PROB}_values, rowid 2: `percentile` is NULL"),
        (f"{STS}_arrays", "data_hash", rf"{STS}_arrays row 1 has NULL in `data_hash`"),
        (f"{STS}_values", "array_id", rf"{STS}_values rowid 2 has NULL in `array_id`"),
    ],
)
def test_null_outside_value_is_refused(db, dst, table, column, pattern):
    rebuild_without_constraints(db, table)
    edit(
        db,
        f"UPDATE {table} SET {column} = NULL WHERE rowid = {1 if table.endswith(('_series', '_arrays')) else 2}",
    )
    refused(dst, db, InvalidParameterError, pattern)


# ---------------------------------------------------------------------- series columns
@pytest.mark.parametrize(
    ("sql", "pattern"),
    [
        (
            f"UPDATE {STS}_series SET owner_type = '' WHERE name = 'sts'",
            "series 'sts' .* has no owner_type: .*pass --owner-type",
        ),
        (
            f"UPDATE {STS}_series SET name = '' WHERE name = 'sts'",
            "the file records no series name and none was given.*pass --name",
        ),
        (f"UPDATE {STS}_series SET owner_category = 'Comp'", 'unknown owner_category "Comp"'),
        (f"UPDATE {STS}_series SET unit_system = 'si'", 'unknown unit_system "si"'),
        (f"UPDATE {STS}_series SET features = 'nope'", "features is not JSON"),
        (f"UPDATE {STS}_series SET features = '[1]'", "features must be a JSON object"),
        (
            f"UPDATE {STS}_series SET features = '{{\"a\":null}}'",
            'feature "a" is null, but a feature value must be an int, float, bool, or string',
        ),
        (f"UPDATE {STS}_series SET features = '{{\"a\":[1]}}'", 'feature "a" is list'),
        (
            f"UPDATE {STS}_series SET resolution = '1 hour'",
            "resolution: invalid ISO-8601 period '1 hour'",
        ),
        (f"UPDATE {STS}_series SET time_reference = 'bad zone!'", 'time_reference "bad zone!"'),
        (f"UPDATE {STS}_series SET element_type = 'float'", 'unknown element_type "float"'),
        (
            f"UPDATE {STS}_series SET element_type = 'f32' WHERE name = 'sts2'",
            "mixes time-series or element types",
        ),
        (
            f"UPDATE {STS}_series SET time_series_type = 'Deterministic' WHERE name = 'sts2'",
            "mixes time-series or element types",
        ),
        (
            f"UPDATE {STS}_series SET owner_id = 'x' WHERE name = 'sts2'",
            "`owner_id` holds 'x', which is not an integer",
        ),
        (
            f"UPDATE {STS}_series SET resolution = 'P1D', time_reference = 'America/Denver'",
            "cannot be combined with the time reference America/Denver",
        ),
    ],
)
def test_bad_series_columns(db, dst, sql, pattern):
    edit(db, sql)
    refused(dst, db, InvalidParameterError, pattern)


def test_empty_descriptors_and_features_read_back_as_absent(db, dst):
    edit(
        db,
        f"UPDATE {STS}_series SET units = '', features = '', time_reference = 'unspecified' WHERE name = 'sts'",
        f"UPDATE {STS}_series SET time_reference = '' WHERE name = 'sts2'",
    )
    ids = dst.import_sqlite(db, skip_checksum=True)
    metas = {m["name"]: m for m in dst.list_metadata_by_ids(ids)}
    assert metas["sts"]["units"] is None and metas["sts"]["features"] == {}
    assert metas["sts"]["time_reference"] is None
    assert metas["sts2"]["time_reference"] == "zoneless"


# ---------------------------------------------------------------------- value cells
@pytest.mark.parametrize(
    ("sql", "pattern"),
    [
        (
            f"UPDATE {INTS}_values SET value = 3000000000 WHERE rowid = 2",
            rf"array \([0-9a-f]{{12}}…, R4/.*\) in {INTS}_values, rowid 2: 3000000000 does not fit an i32",
        ),
        (
            f"UPDATE {INTS}_values SET value = 1.5 WHERE rowid = 3",
            r"rowid 3: an i32 array holds a value that is not an integer",
        ),
        (
            f"UPDATE {INTS}_values SET value = NULL WHERE rowid = 3",
            r"rowid 3: an i32 array holds a NULL `value` cell \(a NaN, which it cannot hold\); "
            "write an integer there",
        ),
        (
            f"UPDATE {SHAPED}_values SET value = '[1.0]' WHERE rowid = 2",
            r"rowid 2: two `value` cells of one array have different shapes \(\[2\] and \[1\]\)",
        ),
        (
            f"UPDATE {SHAPED}_values SET value = '[1.0,\"NaN\"]' WHERE rowid = 2",
            r'rowid 2: a `value` cell holds "NaN", not a number',
        ),
        (
            f"UPDATE {SHAPED}_values SET value = '[1.0,' WHERE rowid = 2",
            r"rowid 2: a `value` cell is not JSON",
        ),
        (
            f"UPDATE {SHAPED}_values SET value = NULL WHERE rowid = 2",
            r"rowid 2: two `value` cells of one array have different shapes",
        ),
        (
            f"UPDATE {STS}_values SET value = x'0102' WHERE rowid = 2",
            r"rowid 2: a `value` cell is a blob",
        ),
        (
            # Text where a number belongs is named as such, not as broken JSON (issue 24).
            f"UPDATE {STS}_values SET value = 'abc' WHERE rowid = 2",
            rf"in {STS}_values, rowid 2: a `value` cell holds the text 'abc' where a number "
            r"belongs \(the `value` column of a scalar f64 partition is REAL: a number, or NULL "
            r"for NaN\); write a number in that cell, or export the file again$",
        ),
        (
            f"UPDATE {INTS}_values SET value = '5 x' WHERE rowid = 3",
            rf"in {INTS}_values, rowid 3: a `value` cell holds the text '5 x' where an integer "
            r"belongs \(the `value` column of a scalar i32 partition is INTEGER\); write an "
            r"integer in that cell, or export the file again$",
        ),
    ],
)
def test_value_cells_that_do_not_fit(db, dst, sql, pattern):
    edit(db, sql)
    refused(dst, db, InvalidParameterError, pattern, skip_checksum=True)


def test_composite_with_a_bad_width(db, dst):
    edit(db, f"UPDATE {PWL}_values SET value = substr(value, 1, length(value) - 1) || ',0]'")
    refused(dst, db, InvalidParameterError, "element_type piecewise_linear cannot have row width 6")


def test_composite_with_a_bad_count(db, dst):
    edit(db, f"UPDATE {PWL}_values SET value = '[3,0.0,1.0,2.0,3.0]' WHERE rowid = 1")
    refused(
        dst,
        db,
        InvalidParameterError,
        r"series 'pwl' .*rowid 1: element_type piecewise_linear: row 0 declares 3 points",
    )


def test_padded_composite_and_garbage_after_the_count(db, dst):
    # Wider than needed, and garbage after the used span: both re-encode to the same array.
    edit(
        db,
        f"UPDATE {PWL}_values SET value = '[1,5.0,6.0,7.0,8.0,0,0]' WHERE rowid = 2",
        f"UPDATE {PWL}_values SET value = substr(value, 1, length(value) - 1) || ',0,0]' WHERE rowid = 1",
    )
    ids = dst.import_sqlite(db)
    meta = next(m for m in dst.list_metadata_by_ids(ids) if m["name"] == "pwl")
    assert meta["element_shape"] == [5]


def test_text_numbers_in_a_real_column_are_json(db, dst):
    edit(db, f"UPDATE {STS}_values SET value = '5.5' WHERE rowid = 2")
    rebuild_without_constraints(db, f"{STS}_values")
    ids = dst.import_sqlite(db, skip_checksum=True)
    sts = next(
        i for i, m in zip(ids, dst.list_metadata_by_ids(ids), strict=True) if m["name"] == "sts"
    )
    assert dst.read_by_id(sts).data[1] == 5.5


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


# ---------------------------------------------------------------------- more refusals
@pytest.mark.parametrize(
    ("sql", "pattern"),
    [
        (
            f"UPDATE {STS}_series SET time_series_type = 'Foo' WHERE name = 'sts2'",
            'unknown time_series_type "Foo"',
        ),
        (f"UPDATE {STS}_series SET resolution = 'PT0S'", "resolution must be positive, got PT0S"),
        (
            f"UPDATE {DET}_series SET interval = 'P0M'",
            r"interval must be positive \(PT0S only for a single window\)",
        ),
        (
            f"UPDATE {DET}_series SET horizon = 'PT90M'",
            "horizon PT1H30M is not a whole multiple of resolution PT1H",
        ),
        (
            f"UPDATE {PROB}_values SET percentile = 1e999 WHERE rowid = 1",
            r"has a percentile of inf, which is not finite \(.*rowid 1\)",
        ),
        (
            f"UPDATE {PROB}_values SET percentile = 'abc' WHERE rowid = 1",
            r"rowid 1: `percentile` holds 'abc', not a number",
        ),
        (
            f"UPDATE {SCEN}_values SET scenario = 0.5 WHERE rowid = 1",
            r"rowid 1: `scenario` holds 0.5, which is not a whole number",
        ),
        (f"UPDATE {STS}_series SET units = 5 WHERE name = 'sts'", None),
    ],
)
def test_more_bad_cells(db, dst, sql, pattern):
    edit(db, sql)
    if pattern is None:  # a number in a TEXT column is stored as text: accepted
        assert len(dst.import_sqlite(db)) == 10
        return
    refused(dst, db, InvalidParameterError, pattern)


@pytest.mark.parametrize(
    ("sql", "pattern"),
    [
        (
            f"UPDATE {STS}_arrays SET id = 'x' WHERE id = 1",
            rf"{STS}_arrays row 1 has id 'x', which is not an integer",
        ),
        (
            f"UPDATE {STS}_arrays SET data_hash = x'00' WHERE id = 1",
            r"holds a bytes in `data_hash`, which is text",
        ),
        (
            f"INSERT INTO {STS}_arrays VALUES (1, 'ab', 'cd')",
            r"holds id 1 twice with different keys",
        ),
    ],
)
def test_bad_arrays_rows(db, dst, sql, pattern):
    edit(
        db,
        "DROP VIEW all_arrays",
        "CREATE TABLE t5 (id, data_hash, time_axis)",
        f"INSERT INTO t5 SELECT * FROM {STS}_arrays",
        f"DROP TABLE {STS}_arrays",
        f"ALTER TABLE t5 RENAME TO {STS}_arrays",
        sql,
    )
    refused(dst, db, InvalidParameterError, pattern)


def test_series_sharing_an_array_on_another_grid(db, dst):
    """Two rows name one array; the second claims another resolution, which its rows break."""
    edit(
        db,
        f"UPDATE {STS}_series SET array_id = (SELECT array_id FROM {STS}_series WHERE name = 'sts') "
        "WHERE name = 'sts2'",
        f"DELETE FROM {STS}_values WHERE array_id NOT IN (SELECT array_id FROM {STS}_series)",
        f"UPDATE {STS}_series SET resolution = 'PT2H' WHERE name = 'sts2'",
    )
    refused(dst, db, InvalidParameterError, "series 'sts2' .* does not sit on a PT2H grid")


def test_forecasts_sharing_an_array_on_another_grid(db, dst):
    edit(
        db,
        f"INSERT INTO {DET}_series SELECT array_id, 99, 5, owner_type, owner_category, time_series_type, "
        "name, initial_timestamp, resolution, 'PT1H', horizon, count, features, element_type, element_shape, "
        f"time_reference, units, quantity_kind, unit_system, component_field, application_data FROM {DET}_series",
    )
    refused(
        dst,
        db,
        InvalidParameterError,
        "series 'det' \\(owner 5.*issue time of 2024-01-01 02:00:00 UTC, which is not window 1 of a PT1H grid",
    )


def test_corrupt_pages_are_a_storage_error(db, dst):
    data = bytearray(db.read_bytes())
    # Wreck whole b-tree pages (headers included) whatever page size the export chose.
    page = int.from_bytes(data[16:18], "big") or 65536
    pages = len(data) // page
    for n in range(2, pages):
        data[n * page : n * page + 64] = b"\xff" * 64
    db.write_bytes(bytes(data))
    refused(dst, db, I.StorageError, "database disk image is malformed")
