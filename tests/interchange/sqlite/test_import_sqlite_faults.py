"""Every refusal of the SQLite import, each with its message, and the store unchanged after.

A small exported database is edited with plain SQL the way a user (or a broken tool)
would, then imported into a store that already holds a series. Each import must fail with
an error naming the table, the series or array, and the row where there is one, and must
leave the store exactly as it was.
"""

from __future__ import annotations

import import_faults_helpers
import pytest
from import_faults_helpers import (
    DET,
    MONTH,
    MS0,
    NS,
    PROB,
    SCEN,
    STS,
    H,
    edit,
    q,
    rebuild_without_constraints,
    refused,
)

from infrastore_sqlite.errors import InvalidParameterError

base_db = import_faults_helpers.base_db
db = import_faults_helpers.db
dst = import_faults_helpers.dst


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
