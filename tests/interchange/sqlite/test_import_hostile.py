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

from infrastore_sqlite import InvalidParameterError, SingleTimeSeries, StorageError, Store

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
