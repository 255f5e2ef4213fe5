"""Hostile or damaged interchange files: each refusal names table, row and column (or the
file's state) and what to do, and the store stays as it was."""

from __future__ import annotations

import os
import shutil
import signal
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pytest

from infrastore_sqlite import (
    DuplicateTimeSeriesError,
    InvalidParameterError,
    NonSequentialTimeSeries,
    SingleTimeSeries,
    StorageError,
    Store,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)
STS = "SingleTimeSeries_f64_utc"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    with Store.create(d / "s.h5") as s:
        for k in range(3):
            ts = SingleTimeSeries(T0, "PT1H", np.arange(50.0) + k, "load")
            s.add_time_series(k + 1, "Gen", "Component", ts, features={"k": k})
        s.export_sqlite(d / "base.db")
    return d / "base.db"


@pytest.fixture
def dst(tmp_path: Path):
    with Store.create(tmp_path / "dst.h5") as s:
        yield s


def edit(db: Path, sql: str) -> None:
    conn = apsw.Connection(str(db))
    conn.execute(sql)
    conn.close()


@pytest.mark.parametrize(
    ("table", "column", "rowid"),
    [
        (f"{STS}_series", "owner_type", 2),
        (f"{STS}_series", "features", 3),
        (f"{STS}_series", "name", 1),
        (f"{STS}_arrays", "data_hash", 1),
    ],
)
def test_invalid_utf8_text_is_named_by_table_row_and_column(
    base, dst, tmp_path, table, column, rowid
) -> None:
    db = tmp_path / "bad.db"
    shutil.copy(base, db)
    edit(db, f"UPDATE {table} SET {column} = CAST(x'47ff' AS TEXT) WHERE rowid = {rowid}")
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_sqlite(db)
    message = str(refused.value)
    assert f"{table}, row with rowid {rowid}, column `{column}`" in message
    assert "not valid UTF-8" in message and "0xff" in message and "import again" in message
    assert refused.value.table == table
    assert dst.list_metadata() == [] and dst.num_distinct_arrays() == 0


def test_a_hot_journal_of_a_killed_writer_says_what_to_do(base, dst, tmp_path) -> None:
    db = tmp_path / "hot.db"
    shutil.copy(base, db)
    pid = os.fork()
    if pid == 0:  # a writer killed mid-transaction, its changes spilled into the file
        try:
            conn = apsw.Connection(str(db))
            conn.execute("PRAGMA cache_size=1")
            conn.execute("BEGIN")
            conn.execute(f"UPDATE {STS}_values SET value = value + 1")
            conn.execute(
                "CREATE TABLE pad (x); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
                "FROM c WHERE i < 3000) INSERT INTO pad SELECT randomblob(1000) FROM c"
            )
            conn.execute(f"UPDATE {STS}_values SET value = value + 1")
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)
    assert Path(str(db) + "-journal").exists()
    with pytest.raises(StorageError, match=r"hot journal .*killed.*Open it once with write access"):
        dst.import_sqlite(db)
    assert dst.list_metadata() == []
    edit(db, "PRAGMA integrity_check")  # what the message says to do: rolls the journal back
    assert len(dst.import_sqlite(db)) == 3
    # the killed write is gone: the values are the committed ones, not +1 or +2
    assert sorted(s.data[0] for s in dst.read_by_ids([1, 2, 3])) == [0.0, 1.0, 2.0]


BIG = 48 * 2**20  # far beyond any element, small enough to write quickly


@pytest.fixture(scope="module")
def shaped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export with a tuple(3,f64) partition next to the scalar one."""
    d = tmp_path_factory.mktemp("hostile_shaped")
    with Store.create(d / "s.h5") as s:
        rows = [[float(i), i + 0.5, -float(i)] for i in range(20)]
        ts = SingleTimeSeries.from_values(T0, "PT1H", rows, "triple")
        s.add_time_series(7, "Gen", "Component", ts)
        s.export_sqlite(d / "shaped.db")
    return d / "shaped.db"


@pytest.mark.parametrize(
    ("source", "table", "cell", "shape_text", "bound"),
    [
        ("base", f"{STS}_values", f"CAST(zeroblob({BIG}) AS TEXT)", "a scalar element", 4160),
        ("base", f"{STS}_values", f"zeroblob({BIG})", "a scalar element", 4160),
        (
            "shaped",
            "SingleTimeSeries_tuple3_f64_utc_values",
            f"'[' || CAST(zeroblob({BIG}) AS TEXT) || ']'",
            "an element of shape [3]",
            4096 + 3 * 64,
        ),
    ],
    ids=["text-in-scalar", "blob-in-scalar", "text-in-tuple"],
)
def test_a_huge_value_cell_is_refused_by_its_size_without_being_read(
    request, dst, tmp_path, source, table, cell, shape_text, bound
) -> None:
    db = tmp_path / "huge.db"
    shutil.copy(request.getfixturevalue(source), db)
    edit(db, f"UPDATE {table} SET value = {cell} WHERE rowid = 7")
    size = query_one(db, f"SELECT octet_length(value) FROM {table} WHERE rowid = 7")
    assert size >= BIG
    apsw.memory_high_water(True)
    tracemalloc.start()
    try:
        with pytest.raises(InvalidParameterError) as refused:
            dst.import_sqlite(db)
        python_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    sqlite_peak = apsw.memory_high_water(True)
    message = str(refused.value)
    assert (
        f"in {table}, rowid 7, column `value`: the cell is longer than the {bound} bytes "
        f"{shape_text} can need" in message
    )
    assert refused.value.table == table
    # neither SQLite nor Python held the cell: both stayed far below its size
    assert python_peak < BIG // 8 and sqlite_peak < BIG // 8, (python_peak, sqlite_peak)
    assert dst.list_metadata() == [] and dst.num_distinct_arrays() == 0


def test_a_value_cell_written_by_hand_with_spaces_still_imports(shaped, dst, tmp_path) -> None:
    db = tmp_path / "spaced.db"
    shutil.copy(shaped, db)
    table = "SingleTimeSeries_tuple3_f64_utc_values"
    edit(db, f"UPDATE {table} SET value = '[ 1.0,   2.0,\n   3.0 ]' WHERE rowid = 1")
    (sid,) = dst.import_sqlite(db, skip_checksum=True)
    assert dst.read_by_id(sid).data[0].tolist() == [1.0, 2.0, 3.0]


def query_one(db: Path, sql: str) -> int:
    conn = apsw.Connection(str(db))
    try:
        return conn.execute(sql).get
    finally:
        conn.close()


def test_the_cli_refuses_a_huge_cell_in_one_line(base, tmp_path) -> None:
    from click.testing import CliRunner

    from infrastore_sqlite.cli import PROG, cli

    db = tmp_path / "huge.db"
    shutil.copy(base, db)
    edit(db, f"UPDATE {STS}_values SET value = CAST(zeroblob({BIG}) AS TEXT) WHERE rowid = 3")
    store = str(tmp_path / "s.h5")
    assert CliRunner().invoke(cli, ["--store", store, "init"], prog_name=PROG).exit_code == 0
    result = CliRunner().invoke(cli, ["--store", store, "add", "--sqlite", str(db)], prog_name=PROG)
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("Error: ") and f"{STS}_values, rowid 3, column `value`" in first
    assert "longer than the 4160 bytes a scalar element can need" in first


# ------------------------------------------------------------------ never half-taken
@pytest.fixture
def owners(tmp_path: Path) -> tuple[Path, Path]:
    """A store of owners 101-103 (one series each, values 101…, 102…, 103…, and an
    irregular one of owner 101) and its export."""
    path = tmp_path / "orig.h5"
    with Store.create(path) as s:
        for owner in (101, 102, 103):
            ts = SingleTimeSeries(T0, "PT1H", np.arange(24.0) + owner, "load")
            s.add_time_series(owner, "Gen", "Component", ts)
        # A second partition: the file stays an export when the first loses a table.
        stamps = [T0.replace(hour=h) for h in (1, 3, 4)]
        s.add_time_series(
            101, "Gen", "Component", NonSequentialTimeSeries(stamps, [1.0, 2, 3], "e")
        )
        s.export_sqlite(tmp_path / "owners.db")
    return path, tmp_path / "owners.db"


def values_of(path: Path) -> dict[int, list[float]]:
    with Store.open(path, read_only=True) as s:
        return {m["owner_id"]: s.read_by_id(m["id"]).data.tolist() for m in s.list_metadata()}


@pytest.mark.parametrize("on_conflict", ["error", "replace", "ignore"])
@pytest.mark.parametrize("into", ["fresh", "original"])
def test_a_series_listed_twice_is_refused_by_every_path(owners, tmp_path, on_conflict, into):
    """Owner 103's row relabelled as owner 101: two rows of one series. No path takes one
    of them (``--replace`` used to give owner 101 the values of owner 103)."""
    original, db = owners
    edit(db, f"UPDATE {STS}_series SET owner_id = 101 WHERE owner_id = 103")
    if into == "fresh":
        target = tmp_path / "fresh.h5"
        Store.create(target).close()
    else:
        target = original
    before = values_of(target)
    with Store.open(target) as s, pytest.raises(DuplicateTimeSeriesError) as refused:
        s.import_sqlite(db, on_conflict=on_conflict)
    message = str(refused.value)
    if on_conflict == "error" and into == "original":
        assert "(id 4 in the store)" in message  # refused as held, first
    else:
        assert "'load' (owner 101" in message and "appears twice in the file" in message
    assert values_of(target) == before
    with Store.open(target) as s, pytest.raises(DuplicateTimeSeriesError):
        s.import_sqlite(db, on_conflict=on_conflict, dry_run=True)


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        (
            f"DROP TABLE {STS}_values",
            f"holds {STS}_series, {STS}_arrays but no {STS}_values beside it",
        ),
        (
            f"ALTER TABLE {STS}_values RENAME TO kept; CREATE VIEW {STS}_values AS "
            "SELECT * FROM kept",
            f"{STS}_values is a view, not a table",
        ),
        (
            f"ALTER TABLE {STS}_series RENAME TO kept; CREATE VIEW {STS}_series AS "
            "SELECT * FROM kept",
            f"{STS}_series is a view, not a table",
        ),
        (f"DROP TABLE {STS}_arrays", f"no {STS}_arrays beside it"),
    ],
    ids=["values-dropped", "values-a-view", "series-a-view", "arrays-dropped"],
)
def test_a_partition_whose_table_is_missing_or_a_view_is_refused_by_name(owners, sql, said) -> None:
    original, db = owners
    edit(db, sql)
    fresh = original.parent / "fresh.h5"
    with Store.create(fresh) as s:
        with pytest.raises(InvalidParameterError) as refused:
            s.import_sqlite(db)
        assert said in str(refused.value)
        with pytest.raises(InvalidParameterError, match=r"not a table|beside it"):
            s.diff_sqlite(db)
        assert s.list_metadata() == []


@pytest.fixture(scope="module")
def timed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export with a regular, an irregular and a forecast partition."""
    from infrastore_sqlite import Deterministic, NonSequentialTimeSeries

    d = tmp_path_factory.mktemp("hostile_timed")
    with Store.create(d / "s.h5") as s:
        s.add_time_series(1, "G", "Component", SingleTimeSeries(T0, "PT1H", np.arange(5.0), "a"))
        stamps = [T0.replace(hour=h) for h in range(5)]
        s.add_time_series(1, "G", "Component", NonSequentialTimeSeries(stamps, np.arange(5.0), "b"))
        data = np.arange(6.0).reshape(3, 2)
        s.add_time_series(
            1, "G", "Component", Deterministic(T0, "PT1H", "PT3H", "PT2H", 2, data, "f")
        )
        s.export_sqlite(d / "timed.db")
    return d / "timed.db"


I64_MIN, I64_MAX = -(2**63), 2**63 - 1


@pytest.mark.parametrize(
    ("table", "column", "rowid", "value", "series"),
    [
        (f"{STS}_values", "timestamp", 5, I64_MAX, "'a'"),
        (f"{STS}_values", "timestamp", 1, I64_MIN, "'a'"),
        ("NonSequentialTimeSeries_f64_utc_values", "timestamp", 1, I64_MIN, "'b'"),
        ("NonSequentialTimeSeries_f64_utc_values", "timestamp", 5, 253402300800000, "'b'"),
        ("Deterministic_f64_utc_values", "issue_time", 1, I64_MAX, "'f'"),
        ("Deterministic_f64_utc_values", "timestamp", 6, I64_MAX, "'f'"),
    ],
)
def test_an_instant_the_store_cannot_read_back_is_refused_naming_series_and_row(
    timed, dst, tmp_path, table, column, rowid, value, series
) -> None:
    """INT64_MIN as a first instant was "rowid 2 repeats rowid 1"; INT64_MAX ms was
    accepted, and the series then could not be read."""
    db = tmp_path / "t.db"
    shutil.copy(timed, db)
    edit(db, f"UPDATE {table} SET {column} = {value} WHERE rowid = {rowid}")
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_sqlite(db, skip_checksum=True)
    message = str(refused.value)
    assert f"series {series} (owner 1" in message
    assert (
        f"in {table}, rowid {rowid}, `{column}` {value} ms is outside the years 1 to 9999"
        in message
    )
    assert "repeats" not in message
    assert dst.list_metadata() == []


@pytest.mark.parametrize("suffix", ["-journal", "-wal", "-shm"])
def test_a_symlinked_side_file_is_refused_with_that_reason(base, dst, tmp_path, suffix) -> None:
    from infrastore_sqlite import rehash_sqlite

    db = tmp_path / "x.db"
    shutil.copy(base, db)
    outside = tmp_path / "elsewhere"
    outside.write_bytes(b"")
    Path(f"{db}{suffix}").symlink_to(outside)
    for run in (
        lambda: dst.import_sqlite(db),
        lambda: dst.diff_sqlite(db),
        lambda: rehash_sqlite(db),
    ):
        with pytest.raises(InvalidParameterError) as refused:
            run()
        assert f"{db}{suffix} is a symbolic link (to {outside})" in str(refused.value)
    assert outside.read_bytes() == b"" and dst.list_metadata() == []


def test_rehash_never_writes_through_a_link(base, tmp_path) -> None:
    from infrastore_sqlite import rehash_sqlite, unshare_sqlite

    db = tmp_path / "real.db"
    shutil.copy(base, db)
    link = tmp_path / "link.db"
    link.symlink_to(db)
    before = db.read_bytes()
    with pytest.raises(InvalidParameterError, match=r"is a symbolic link .* never through a link"):
        rehash_sqlite(link)
    with pytest.raises(InvalidParameterError, match="is a symbolic link"):
        unshare_sqlite(link, owner_id=1)
    assert db.read_bytes() == before and link.is_symlink()
