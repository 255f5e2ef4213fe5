"""The SQLite import's API: checksums and in-place edits, duplicates, transactions, the
per-partition mode, dry runs, inline overrides and assertions."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import apsw
import numpy as np
import pytest
from conftest import copy_of, exported_db

import infrastore_sqlite as I
from infrastore_sqlite.errors import DuplicateTimeSeriesError, InvalidParameterError
from infrastore_sqlite.interchange.sqlite.reader import ImportReport
from infrastore_sqlite.interchange.sqlite.rehash import rehash_sqlite

T0 = datetime(2024, 1, 1, tzinfo=UTC)
STS = "SingleTimeSeries_f64_utc"


def _source(store) -> None:
    rng = np.random.default_rng(3)
    load = rng.standard_normal(48)
    store.add_time_series(
        1,
        "Gen",
        "Component",
        I.SingleTimeSeries(T0, "PT1H", load, "load", units="MW"),
        features={"y": 1},
    )
    store.add_time_series(
        2, "Gen", "Component", I.SingleTimeSeries(T0, "PT1H", load.copy(), "load")
    )
    store.add_time_series(
        3, "Gen", "Component", I.SingleTimeSeries(T0, "PT1H", rng.standard_normal(48), "load")
    )
    store.add_time_series(
        1,
        "Gen",
        "Component",
        I.Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, np.arange(6.0).reshape(2, 3), "det"),
    )
    store.add_time_series(
        1,
        "Gen",
        "Component",
        I.NonSequentialTimeSeries(
            [T0, datetime(2024, 2, 1, tzinfo=UTC)], np.array([1.0, 2.0]), "ns"
        ),
    )


@pytest.fixture(scope="module")
def base_db(tmp_path_factory):
    return exported_db(tmp_path_factory, "api", _source)


@pytest.fixture
def db(base_db, tmp_path):
    return copy_of(base_db, tmp_path, "x.db")


@pytest.fixture
def dst(tmp_path):
    store = I.Store.create(tmp_path / "dst.h5")
    yield store
    store.close()


def edit(db, *sql: str) -> None:
    conn = apsw.Connection(str(db))
    for statement in sql:
        conn.execute(statement)
    conn.close()


def state(store):
    return store.list_metadata(), store.num_distinct_arrays()


def by_name(store, ids):
    return {(m["owner_id"], m["name"]): m for m in store.list_metadata_by_ids(ids)}


# ---------------------------------------------------------------------- workflow 2
def test_edit_in_place_checksum_skip_and_rehash(db, tmp_path):
    conn = apsw.Connection(str(db))
    original = np.array(
        conn.execute(f"SELECT value FROM {STS}_values WHERE array_id = 1 ORDER BY timestamp").get
    )
    key = conn.execute(f"SELECT data_hash, time_axis FROM {STS}_arrays WHERE id = 1").fetchone()
    conn.close()
    edit(db, f"UPDATE {STS}_values SET value = value * 1.1 WHERE array_id = 1")
    expected = original * 1.1

    first = I.Store.create(tmp_path / "a.h5")
    with pytest.raises(InvalidParameterError) as info:
        first.import_sqlite(db)
    message = str(info.value)
    # Hashes shortened to 12 hex characters (issue 24); the array named by its time axis,
    # the arrays table by name, to UPDATE by hand.
    assert f"the file says {key[0][:12]}… and its rows hash to " in message
    assert f"(time axis {key[1]})" in message and key[0] not in message
    assert re.search(r"hash to [0-9a-f]{12}… ", message)
    assert f"(or UPDATE `data_hash` in {STS}_arrays)" in message
    # One message, two renderings: the API names the function and the keyword ...
    assert "rehash_sqlite" in message and "skip_checksum=True" in message
    assert "--no-checksum" not in message
    # ... the CLI the command and the flag.
    cli = info.value.render("cli")
    assert f"`infrastore-sqlite rehash --db {db}`" in cli and "--no-checksum" in cli
    assert "rehash_sqlite" not in cli and "skip_checksum" not in cli
    assert state(first) == ([], 0)

    ids = first.import_sqlite(db, skip_checksum=True)
    edited = [i for i in ids if np.array_equal(first.read_by_id(i).data, expected)]
    assert edited  # the edited array, under every series that names it
    assert first.get_metadata_by_id(edited[0])["data_hash"] != key[0]

    assert rehash_sqlite(db) == 1
    second = I.Store.create(tmp_path / "b.h5")
    ids2 = second.import_sqlite(db)  # checksum on
    assert len(ids2) == len(ids)
    assert sum(np.array_equal(second.read_by_id(i).data, expected) for i in ids2) == len(edited)
    assert rehash_sqlite(db) == 0  # nothing left to fix


# ---------------------------------------------------------------------- workflow 4
def test_duplicate_import_refused_nothing_added(db, dst):
    ids = dst.import_sqlite(db)
    assert len(ids) == 5
    before = state(dst)
    with pytest.raises(
        DuplicateTimeSeriesError,
        match=r"a time series with that key already exists: '\w+' \(owner \d\)",
    ):
        dst.import_sqlite(db)
    assert state(dst) == before


def test_partial_overlap_adds_nothing(db, base_db, dst):
    """One series already held: the whole database is refused, the others are not added."""
    edit(
        db,
        f"DELETE FROM {STS}_series WHERE owner_id != 3",
        f"DELETE FROM {STS}_values WHERE array_id NOT IN (SELECT array_id FROM {STS}_series)",
    )
    assert len(dst.import_sqlite(db)) == 3
    before = state(dst)
    with pytest.raises(DuplicateTimeSeriesError, match=r"'load' \(owner 3\)|'det' \(owner 1\)"):
        dst.import_sqlite(base_db)
    assert state(dst) == before


def test_import_nests_in_a_user_transaction(db, dst):
    dst.begin_transaction()
    assert len(dst.import_sqlite(db)) == 5
    assert len(dst.list_metadata()) == 5
    dst.rollback_transaction()
    assert state(dst) == ([], 0)


def test_shared_arrays_are_stored_once(db, dst):
    dst.import_sqlite(db)
    assert dst.num_distinct_arrays() == 4  # the two "load" series share one array


def test_arrays_the_store_already_holds_are_recognized(db, dst):
    dst.add_time_series(
        50,
        "Other",
        "Component",
        I.Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, np.arange(6.0).reshape(2, 3), "same"),
    )
    assert dst.num_distinct_arrays() == 1
    dst.import_sqlite(db)
    assert dst.num_distinct_arrays() == 4


# ---------------------------------------------------------------------- per partition
def test_per_partition_commits_the_partitions_before_a_failure(db, dst):
    # Partitions are read in binary order: Deterministic, NonSequential, SingleTimeSeries.
    edit(db, f"UPDATE {STS}_values SET value = value + 1 WHERE array_id = 1")
    with pytest.raises(
        InvalidParameterError, match="does not match its recorded data_hash"
    ) as info:
        dst.import_sqlite(db, per_partition=True)
    report = info.value.report
    assert isinstance(report, ImportReport)
    assert [p["status"] for p in report.partitions] == ["committed", "committed", "failed"]
    assert "data_hash" in report.partitions[2]["error"]
    assert len(report.ids) == 2
    assert sorted(m["name"] for m in dst.list_metadata()) == ["det", "ns"]
    # the default mode is all or nothing
    other = I.Store.create(dst.path.with_name("other.h5"))
    with pytest.raises(InvalidParameterError):
        other.import_sqlite(db)
    assert state(other) == ([], 0)


def test_per_partition_stops_at_the_first_failure(db, dst):
    edit(db, "UPDATE Deterministic_f64_utc_values SET value = value + 1")
    with pytest.raises(InvalidParameterError) as info:
        dst.import_sqlite(db, per_partition=True)
    assert [p["status"] for p in info.value.report.partitions] == ["failed", "skipped", "skipped"]
    assert state(dst) == ([], 0)


def test_per_partition_success_returns_a_report(db, dst):
    report = dst.import_sqlite(db, per_partition=True)
    assert isinstance(report, ImportReport)
    assert report.ok
    assert [p["status"] for p in report.partitions] == ["committed"] * 3
    assert report.ids == [m["id"] for m in dst.list_metadata()]
    assert report.to_dict()["ids"] == report.ids
    sts = report.partitions[2]
    assert sts["name"] == STS and sts["rows"] == 96 and sts["arrays"] == 2
    assert [s["file_id"] for s in sts["series"]] and len(sts["ids"]) == 3


# ---------------------------------------------------------------------- dry run
def test_dry_run_reports_and_writes_nothing(db, dst):
    h5_size = dst.disk_usage()["hdf5_bytes"]
    report = dst.import_sqlite(db, dry_run=True)
    assert isinstance(report, ImportReport) and report.dry_run and report.ok
    assert [p["status"] for p in report.partitions] == ["would_add"] * 3
    file_ids = sorted(s["file_id"] for p in report.partitions for s in p["series"])
    assert file_ids == [1, 2, 3, 4, 5]
    assert report.ids == []
    assert state(dst) == ([], 0)
    assert dst.disk_usage()["hdf5_bytes"] == h5_size
    dst.close()


def test_dry_run_checks_checksums_and_duplicates(db, dst):
    edit(db, f"UPDATE {STS}_values SET value = value + 1 WHERE array_id = 1")
    with pytest.raises(InvalidParameterError) as info:
        dst.import_sqlite(db, dry_run=True)
    statuses = [p["status"] for p in info.value.report.partitions]
    assert statuses == ["would_add", "would_add", "failed"]  # every partition is checked
    dst.import_sqlite(db, skip_checksum=True)
    with pytest.raises(DuplicateTimeSeriesError, match="already exists"):
        dst.import_sqlite(db, dry_run=True, skip_checksum=True)


def test_dry_run_sees_duplicates_within_the_file(db, dst):
    edit(db, f"UPDATE {STS}_series SET owner_id = 1, features = '{{\"y\":1}}', units = 'MW'")
    with pytest.raises(DuplicateTimeSeriesError, match="appears twice in the file"):
        dst.import_sqlite(db, dry_run=True)
    with pytest.raises(DuplicateTimeSeriesError):
        dst.import_sqlite(db)
    assert state(dst) == ([], 0)


# ---------------------------------------------------------------------- overrides
def test_overrides_replace_columns(db, dst):
    ids = dst.import_sqlite(
        db,
        overrides={
            "owner_type": "Bus",
            "owner_category": "SupplementalAttribute",
            "units": "",
            "quantity_kind": "energy",
            "features": {"scenario": "high", "w": 0.5},
            "time_reference": "-07:00",
        },
    )
    metas = dst.list_metadata_by_ids(ids)
    assert {m["owner_type"] for m in metas} == {"Bus"}
    assert {m["owner_category"] for m in metas} == {"SupplementalAttribute"}
    assert {m["units"] for m in metas} == {None}
    assert {m["quantity_kind"] for m in metas} == {"energy"}
    assert all(m["features"] == {"scenario": "high", "w": 0.5} for m in metas)
    assert {m["time_reference"] for m in metas} == {"-07:00"}


def test_name_and_owner_overrides_can_collide(db, dst):
    with pytest.raises(DuplicateTimeSeriesError):
        dst.import_sqlite(db, overrides={"owner_id": 7, "name": "x"})
    assert state(dst) == ([], 0)
    edit(db, "DELETE FROM Deterministic_f64_utc_series", "DELETE FROM Deterministic_f64_utc_values")
    edit(
        db,
        "DELETE FROM NonSequentialTimeSeries_f64_utc_series",
        "DELETE FROM NonSequentialTimeSeries_f64_utc_values",
    )
    edit(db, f"DELETE FROM {STS}_series WHERE owner_id != 3")
    edit(db, f"DELETE FROM {STS}_values WHERE array_id NOT IN (SELECT array_id FROM {STS}_series)")
    (sid,) = dst.import_sqlite(db, overrides={"owner_id": 7, "name": "x"})
    meta = dst.get_metadata_by_id(sid)
    assert (meta["owner_id"], meta["name"]) == (7, "x")


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({"element_type": "f32"}, "has element_type f64, but f32 was asserted"),
        ({"resolution": "PT2H"}, "has resolution PT1H, but PT2H was asserted"),
        ({"type": "Scenarios"}, "is a Deterministic, but the type Scenarios was asserted"),
        ({"element_shape": [2]}, r"has element_shape \[\], but \[2\] was asserted"),
    ],
)
def test_assertions_contradicted_by_the_file(db, dst, overrides, pattern):
    with pytest.raises(InvalidParameterError, match=pattern):
        dst.import_sqlite(db, overrides=overrides)
    assert state(dst) == ([], 0)


def test_assertions_the_file_agrees_with(db, dst):
    edit(
        db,
        "DELETE FROM NonSequentialTimeSeries_f64_utc_series",
        "DELETE FROM NonSequentialTimeSeries_f64_utc_values",
    )
    ids = dst.import_sqlite(
        db, overrides={"element_type": "f64", "element_shape": "[]", "resolution": "PT60M"}
    )
    assert len(ids) == 4


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({"owner_id": "seven"}, "owner_id must be an integer"),
        ({"owner_category": "Comp"}, "unknown owner_category"),
        ({"unit_system": "si"}, 'unknown unit_system "si"'),
        ({"time_reference": "bad zone!"}, 'time_reference "bad zone!"'),
        ({"features": {"a": None}}, 'feature "a" is None'),
        ({"name": ""}, "name must not be empty"),
        ({"element_type": "float"}, 'unknown element_type "float"'),
        ({"resolution": "1 hour"}, "invalid ISO-8601 period"),
        ({"element_shape": "[2,"}, "is not a JSON list"),
        ({"element_shape": ["a"]}, "element_shape must be a list of non-negative integers"),
        ({"element_shape": [-1]}, "must not hold negative sizes"),
        ({"features": "a=1"}, "features must be a dict"),
        ({"units": 5}, "units must be a string"),
        (
            {"resolution": "PT1H", "type": "NonSequentialTimeSeries"},
            "is a Deterministic, but the type",
        ),
    ],
)
def test_bad_override_values(db, dst, overrides, pattern):
    with pytest.raises(
        InvalidParameterError, match=re.escape(pattern) if "(" in pattern else pattern
    ):
        dst.import_sqlite(db, overrides=overrides)


def test_overrides_none_means_not_given(db, dst):
    ids = dst.import_sqlite(db, overrides={"owner_type": None, "initial_timestamp": None} | {})
    assert len(ids) == 5


def test_overrides_must_be_a_dict(db, dst):
    with pytest.raises(InvalidParameterError, match="overrides must be a dict"):
        dst.import_sqlite(db, overrides=[("units", "x")])


def test_resolution_asserted_on_a_series_without_one(db, dst):
    edit(db, "DELETE FROM Deterministic_f64_utc_series", "DELETE FROM Deterministic_f64_utc_values")
    edit(db, f"DELETE FROM {STS}_series", f"DELETE FROM {STS}_values")
    with pytest.raises(InvalidParameterError, match="which has no resolution, but resolution PT1H"):
        dst.import_sqlite(db, overrides={"resolution": "PT1H"})
    assert dst.import_sqlite(db, overrides={"element_shape": ""}) != []
