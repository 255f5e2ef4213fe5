"""Refusals of the SQLite import for bad cells: NULLs, series columns, value cells, arrays
rows; each with its message, and the store unchanged after."""

from __future__ import annotations

import import_faults_helpers
import pytest
from import_faults_helpers import (
    DET,
    INTS,
    PROB,
    PWL,
    SCEN,
    SHAPED,
    STS,
    edit,
    rebuild_without_constraints,
    refused,
)

import infrastore_sqlite as I
from infrastore_sqlite.errors import InvalidParameterError

base_db = import_faults_helpers.base_db
db = import_faults_helpers.db
dst = import_faults_helpers.dst


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
