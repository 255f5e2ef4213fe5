"""``rehash_sqlite``: recompute the recorded hashes after plain-SQL edits."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import apsw
import numpy as np
import pytest

import infrastore_sqlite as I
from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.sqlite.rehash import rehash_sqlite

T0 = datetime(2024, 1, 1, tzinfo=UTC)
STS = "SingleTimeSeries_f64_utc"


@pytest.fixture(scope="module")
def base_db(tmp_path_factory):
    d = tmp_path_factory.mktemp("rehash")
    src = I.Store.create(d / "src.h5")
    add = src.add_time_series
    add(1, "G", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(6.0), "a"))
    add(2, "G", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(6.0) + 1, "b"))
    add(3, "G", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(6.0) + 1, "b"))
    pwl = np.array([[2, 0.0, 1.0, 2.0, 3.0], [1, 5.0, 6.0, 0, 0]])
    add(
        1,
        "G",
        "Component",
        I.SingleTimeSeries(T0, "PT1H", pwl, "pwl", element_type="piecewise_linear"),
    )
    add(
        1,
        "G",
        "Component",
        I.Scenarios(T0, "PT1H", "PT2H", "PT1H", 2, np.arange(8.0).reshape(2, 2, 2), "scen"),
    )
    db = d / "base.db"
    src.export_sqlite(db, table_prefix="p_")
    src.close()
    return db


@pytest.fixture
def db(base_db, tmp_path):
    target = tmp_path / "x.db"
    shutil.copy(base_db, target)
    return target


def edit(db, *sql: str) -> None:
    conn = apsw.Connection(str(db))
    for statement in sql:
        conn.execute(statement)
    conn.close()


def hashes(db) -> dict:
    conn = apsw.Connection(str(db))
    out = {}
    for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE '%\\_arrays' ESCAPE '\\'"
    ):
        out[name] = conn.execute(
            f'SELECT id, data_hash, time_axis FROM "{name}" ORDER BY id'
        ).fetchall()
    conn.close()
    return out


def test_untouched_file_is_left_alone(db):
    before = hashes(db)
    assert rehash_sqlite(db, "p_") == 0
    assert hashes(db) == before


def test_edited_arrays_get_new_hashes_and_import(db, tmp_path):
    edit(
        db,
        f"UPDATE p_{STS}_values SET value = value + 0.5 WHERE array_id = 1",
        "UPDATE p_SingleTimeSeries_piecewise_linear_utc_values SET value = '[1,5.0,7.0,0,0]' WHERE rowid = 2",
        "UPDATE p_Scenarios_f64_utc_values SET value = -value",
    )
    store = I.Store.create(tmp_path / "s.h5")
    with pytest.raises(InvalidParameterError, match="does not match its recorded data_hash"):
        store.import_sqlite(db, table_prefix="p_")
    assert rehash_sqlite(db, table_prefix="p_") == 3
    ids = store.import_sqlite(db, table_prefix="p_")
    assert len(ids) == 5
    scen = next(
        i for i, m in zip(ids, store.list_metadata_by_ids(ids), strict=True) if m["name"] == "scen"
    )
    assert np.array_equal(store.read_by_id(scen).data, -np.arange(8.0).reshape(2, 2, 2))


def test_arrays_that_become_equal_are_merged(db, tmp_path):
    # Make array "a" equal to array "b": one key, one values group afterwards.
    conn = apsw.Connection(str(db))
    a_id = conn.execute(f"SELECT array_id FROM p_{STS}_series WHERE name = 'a'").get
    conn.close()
    edit(db, f"UPDATE p_{STS}_values SET value = value + 1 WHERE array_id = {a_id}")
    assert rehash_sqlite(db, "p_") == 1
    conn = apsw.Connection(str(db))
    assert conn.execute(f"SELECT count(*) FROM p_{STS}_arrays").get == 1
    assert conn.execute(f"SELECT count(DISTINCT array_id) FROM p_{STS}_series").get == 1
    assert conn.execute(f"SELECT count(*) FROM p_{STS}_values").get == 6
    conn.close()
    store = I.Store.create(tmp_path / "s.h5")
    store.import_sqlite(db, table_prefix="p_")
    assert store.num_distinct_arrays() == 3


def test_bad_values_are_refused_and_nothing_written(db):
    edit(db, f"UPDATE p_{STS}_values SET value = value + 1 WHERE array_id = 1")
    edit(db, f"UPDATE p_{STS}_values SET timestamp = timestamp + 1 WHERE rowid = 8")
    before = hashes(db)
    with pytest.raises(InvalidParameterError, match="does not sit on a PT1H grid"):
        rehash_sqlite(db, "p_")
    assert hashes(db) == before


def test_missing_file_and_bad_prefix(tmp_path, db):
    with pytest.raises(InvalidParameterError, match="is not a file"):
        rehash_sqlite(tmp_path / "nope.db")
    with pytest.raises(InvalidParameterError, match="must end in '_'"):
        rehash_sqlite(db, "p")
    with pytest.raises(
        InvalidParameterError, match="holds no exported partitions without a table prefix"
    ):
        rehash_sqlite(db)


def test_progress_and_arrays_rows_without_series(db):
    edit(db, f"INSERT INTO p_{STS}_arrays (id, data_hash, time_axis) VALUES (40, 'x', 'y')")
    edit(db, f"UPDATE p_{STS}_values SET value = value + 1 WHERE array_id = 1")
    seen = []
    assert rehash_sqlite(db, "p_", progress=lambda done, total: seen.append((done, total))) == 1
    assert seen and seen[-1][0] == seen[-1][1]
    conn = apsw.Connection(str(db))
    assert conn.execute(f"SELECT data_hash FROM p_{STS}_arrays WHERE id = 40").get == "x"
    conn.close()


def test_the_files_triggers_never_fire_and_are_named(db):
    """A trigger stored in the file would rewrite units and values when rehash updates the
    arrays rows; rehash writes with triggers disabled and names them."""
    edit(
        db,
        f"UPDATE p_{STS}_values SET value = value + 0.5 WHERE array_id = 1",
        f"CREATE TRIGGER units_to_kw AFTER UPDATE ON p_{STS}_arrays BEGIN "
        f"UPDATE p_{STS}_series SET units = 'kW'; "
        f"UPDATE p_{STS}_values SET value = 1e9; END",
        f"CREATE TRIGGER log_it AFTER DELETE ON p_{STS}_values BEGIN "
        f"DELETE FROM p_{STS}_series; END",
    )
    conn = apsw.Connection(str(db))
    units = conn.execute(f"SELECT id, units FROM p_{STS}_series ORDER BY id").fetchall()
    values = conn.execute(f"SELECT rowid, value FROM p_{STS}_values ORDER BY rowid").fetchall()
    conn.close()
    with pytest.warns(I.errors.FileTriggersWarning, match="log_it, units_to_kw") as warned:
        assert rehash_sqlite(db, "p_") == 1
    assert warned[0].message.triggers == ["log_it", "units_to_kw"]
    conn = apsw.Connection(str(db))
    assert conn.execute(f"SELECT id, units FROM p_{STS}_series ORDER BY id").fetchall() == units
    after = conn.execute(f"SELECT rowid, value FROM p_{STS}_values ORDER BY rowid").fetchall()
    conn.close()
    assert after == values


def test_the_cli_names_the_triggers_it_did_not_run(db):
    from click.testing import CliRunner

    from infrastore_sqlite.cli import cli

    edit(
        db,
        f"CREATE TRIGGER t1 AFTER UPDATE ON p_{STS}_arrays BEGIN "
        f"UPDATE p_{STS}_series SET units = 'kW'; END",
    )
    result = CliRunner().invoke(
        cli, ["-f", "json", "rehash", "--db", str(db), "--table-prefix", "p_"]
    )
    assert result.exit_code == 0, result.output
    assert "holds 1 trigger(s) (t1); none of them was run" in result.stderr
    assert '"triggers_not_run": [' in result.stdout


def test_the_import_never_evaluates_a_view_or_trigger_of_the_file(db, tmp_path):
    from infrastore_sqlite.interchange.sqlite.database import open_database

    conn = open_database(db, read_only=True)
    with pytest.raises(apsw.Error, match="prohibited"):
        conn.execute("SELECT * FROM p_all_series").fetchall()
    assert conn.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, -1) == 0
    assert conn.config(apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA, -1) == 0
    assert conn.config(apsw.SQLITE_DBCONFIG_DEFENSIVE, -1) == 1
    conn.close()
