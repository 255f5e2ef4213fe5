"""The store's bounds on what a file may make a reader hold (issue 34, Must 1): checked
before reading, from the footer where there is one, set by the caller (``max_array_bytes=``
/ ``max_cell_bytes=``, ``--max-array-bytes`` / ``--max-cell-bytes``), never by the file."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from infrastore_sqlite import InvalidParameterError, SingleTimeSeries, Store
from infrastore_sqlite.interchange.importing.limits import Limits
from infrastore_sqlite.interchange.parquet.rehash import rehash_parquet
from infrastore_sqlite.interchange.sqlite.rehash import rehash_sqlite

T0 = datetime(2024, 1, 1, tzinfo=UTC)
STS = "SingleTimeSeries_f64_utc"
PQ = "SingleTimeSeries.f64.utc"


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("limits")
    with Store.create(d / "s.h5") as s:
        for k in range(3):
            ts = SingleTimeSeries(T0, "PT1H", np.arange(1000.0) + k, "load")
            s.add_time_series(k + 1, "Gen", "Component", ts, features={"k": k})
        s.export_sqlite(d / "x.db")
        s.export_parquet(d / "pq")
    return d


@pytest.fixture
def dst(tmp_path: Path):
    with Store.create(tmp_path / "dst.h5") as s:
        yield s


def edit(db: Path, sql: str) -> None:
    conn = apsw.Connection(str(db))
    conn.execute(sql)
    conn.close()


def test_the_bounds_are_the_callers_and_checked() -> None:
    assert Limits.of() == Limits(2**30, 16 * 2**20)
    assert Limits.of(max_array_bytes=800).max_rows == 100
    for bad in (0, -1, 1.5, "1"):
        with pytest.raises(InvalidParameterError, match="must be a positive number of bytes"):
            Limits.of(max_array_bytes=bad)
    with pytest.raises(InvalidParameterError, match="the longest cell SQLite reads"):
        Limits.of(max_cell_bytes=2**31)


def test_a_parquet_array_longer_than_the_bound_is_refused_from_the_footer(
    exports, dst, tmp_path
) -> None:
    d = tmp_path / "pq"
    shutil.copytree(exports / "pq", d)
    values = d / f"{PQ}.values.parquet"
    pq.write_table(pq.read_table(values), values, row_group_size=500)  # 2 groups an array
    # 1,000 rows an array, three columns read (8 bytes each): 24,000 bytes an array.
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_parquet(d, max_array_bytes=23_000)
    message = str(refused.value)
    assert f"{d / (PQ + '.values.parquet')}: row groups 1-2 (from row 1, all of" in message
    assert "array_id 1) holds 1,000 rows of one array, more than the 958" in message
    assert "nothing of it was read" in message and "max_array_bytes=N" in message
    assert refused.value.render("cli").endswith("--max-array-bytes N")
    for run in (
        lambda: dst.diff_parquet(d, max_array_bytes=23_000),
        lambda: rehash_parquet(d, max_array_bytes=23_000),
    ):
        with pytest.raises(InvalidParameterError, match="rows of one array, more than"):
            run()
    assert dst.list_metadata() == []
    assert len(dst.import_parquet(d, max_array_bytes=24_000)) == 3


def test_a_parquet_array_spread_over_row_groups_of_many_arrays_is_refused_as_it_grows(
    exports, dst, tmp_path
) -> None:
    """Row groups each holding the end of one array and the start of the next: the
    footer cannot prove any array long, so the walk refuses the array at the bound."""
    d = tmp_path / "pq"
    shutil.copytree(exports / "pq", d)
    values = d / f"{PQ}.values.parquet"
    table = pq.read_table(values)
    pq.write_table(table, values, row_group_size=700)
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_parquet(d, max_array_bytes=23_000)
    assert "array_id 1 (from row 1) holds at least" in str(refused.value)
    assert dst.list_metadata() == []


def test_a_sqlite_text_cell_longer_than_the_bound_is_refused_unread(exports, dst, tmp_path):
    db = tmp_path / "x.db"
    shutil.copy(exports / "x.db", db)
    edit(db, f"UPDATE {STS}_series SET units = CAST(zeroblob(5000) AS TEXT) WHERE rowid = 2")
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_sqlite(db, max_cell_bytes=4096)
    message = str(refused.value)
    assert f"{STS}_series, rowid 2, column `units`: the cell is longer than the 4,096" in message
    assert refused.value.render("cli").endswith("--max-cell-bytes N")
    with pytest.raises(InvalidParameterError, match="column `units`"):
        rehash_sqlite(db, max_cell_bytes=4096)
    assert dst.list_metadata() == []
    assert len(dst.import_sqlite(db)) == 3  # under the default bound it is a cell like any


def test_an_element_shape_beyond_a_c_int_is_refused_cleanly(exports, dst, tmp_path) -> None:
    """The cell bound followed the file's element_shape (and overflowed SQLite's C int);
    now the store's bound caps it."""
    db = tmp_path / "x.db"
    shutil.copy(exports / "x.db", db)
    edit(db, f"UPDATE {STS}_series SET element_shape = '[100000000]'")
    # A scalar partition's element is the table's; the cell bound no longer overflows.
    assert len(dst.import_sqlite(db)) == 3


def test_rehash_refuses_a_cell_that_is_not_utf8_like_the_import(exports, tmp_path) -> None:
    db = tmp_path / "x.db"
    shutil.copy(exports / "x.db", db)
    edit(db, f"UPDATE {STS}_series SET name = CAST(x'47ff' AS TEXT) WHERE rowid = 1")
    with pytest.raises(InvalidParameterError, match="not valid UTF-8"):
        rehash_sqlite(db)


def test_a_cell_nested_deeper_than_python_can_parse_is_refused(exports, dst, tmp_path) -> None:
    db = tmp_path / "x.db"
    shutil.copy(exports / "x.db", db)
    deep = "[" * 5000 + "-0" + "]" * 5000
    edit(db, f"UPDATE {STS}_values SET value = '{deep}' WHERE rowid = 3")
    for run in (lambda: dst.import_sqlite(db), lambda: rehash_sqlite(db)):
        with pytest.raises(InvalidParameterError) as refused:
            run()
        assert "RecursionError" not in str(refused.value)
    assert dst.list_metadata() == []


def test_a_repeated_series_row_is_refused_at_its_second_row(exports, dst, tmp_path) -> None:
    """10⁵ copies of one series row (a Parquet file of a few KB): refused at row 2, before
    the rest are read; the duplicate check streams."""
    d = tmp_path / "pq"
    shutil.copytree(exports / "pq", d)
    series = d / f"{PQ}.series.parquet"
    table = pq.read_table(series)
    first = table.slice(0, 1)
    many = pa.concat_tables([first] * 100_000)
    pq.write_table(many.replace_schema_metadata(table.schema.metadata), series)
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_parquet(d)
    assert f"{series} holds series id 1 twice (again at row 2)" in str(refused.value)
    assert dst.list_metadata() == []


def test_a_parquet_text_cell_longer_than_the_bound_is_refused(exports, dst, tmp_path) -> None:
    d = tmp_path / "pq"
    shutil.copytree(exports / "pq", d)
    series = d / f"{PQ}.series.parquet"
    table = pq.read_table(series)
    units = pa.array(["", "x" * 5000, ""])
    table = table.set_column(table.schema.get_field_index("units"), "units", units)
    pq.write_table(table, series)
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_parquet(d, max_cell_bytes=4096)
    message = str(refused.value)
    assert f"{series} row 2, column `units`: the cell holds 5,000 bytes, more than" in message
    with pytest.raises(InvalidParameterError, match="column `units`"):
        rehash_parquet(d, max_cell_bytes=4096)
    assert dst.list_metadata() == []


def test_a_sqlite_array_longer_than_the_bound_is_refused_before_it_is_read(
    exports, dst, tmp_path
) -> None:
    db = tmp_path / "x.db"
    shutil.copy(exports / "x.db", db)
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_sqlite(db, max_array_bytes=23_000)
    message = str(refused.value)
    assert f"in {STS}_values holds 1,000 rows, more than the 958 the store reads" in message
    assert refused.value.render("cli").endswith("--max-array-bytes N")
    with pytest.raises(InvalidParameterError, match="rows, more than the 958"):
        rehash_sqlite(db, max_array_bytes=23_000)
    assert dst.list_metadata() == []
    assert len(dst.import_sqlite(db, max_array_bytes=24_000)) == 3


def test_the_command_line_takes_the_bounds_by_the_same_names(exports, tmp_path) -> None:
    from click.testing import CliRunner

    from infrastore_sqlite.cli import cli

    run = CliRunner().invoke
    store = str(tmp_path / "s.h5")
    assert run(cli, ["--store", store, "init"]).exit_code == 0
    db = tmp_path / "x.db"
    shutil.copy(exports / "x.db", db)
    for args in (
        ["--store", store, "add", "--sqlite", str(db), "--max-array-bytes", "23000"],
        ["--store", store, "diff", "--sqlite", str(db), "--max-array-bytes", "23000"],
        ["rehash", "--db", str(db), "--max-array-bytes", "23000"],
        ["--store", store, "add", "--parquet", str(exports / "pq"), "--max-array-bytes", "23000"],
    ):
        result = run(cli, args)
        assert result.exit_code == 1, (args, result.output)
        first = result.stderr.splitlines()[0]
        assert "rows, more than the 958" in first or "rows of one array, more than the 958" in first
        assert first.endswith("--max-array-bytes N"), first
    edit(db, f"UPDATE {STS}_series SET units = CAST(zeroblob(5000) AS TEXT) WHERE rowid = 2")
    result = run(cli, ["rehash", "--db", str(db), "--max-cell-bytes", "4096"])
    assert result.exit_code == 1 and "column `units`" in result.stderr
    assert result.stderr.splitlines()[0].endswith("--max-cell-bytes N")
    refused = run(cli, ["--store", store, "add", "--csv", str(db), "--max-cell-bytes", "9"])
    assert refused.exit_code == 2 and "go with --sqlite or --parquet" in refused.output


def test_a_sqlite_array_without_rowid_spans_is_refused_one_row_past_the_bound(
    exports, dst, tmp_path
) -> None:
    """A values table without rowids (or its rows in no rowid order) gives no spans to
    bound an array before it is read: the read stops one row past the bound and refuses
    (the release before imported these 1,000-row arrays under a 958-row bound)."""
    db = tmp_path / "x.db"
    shutil.copy(exports / "x.db", db)
    values = f"{STS}_values"
    edit(
        db,
        f'ALTER TABLE "{values}" RENAME TO old; '
        f'CREATE TABLE "{values}" (array_id INTEGER NOT NULL, timestamp INTEGER NOT NULL, '
        "value REAL, PRIMARY KEY (array_id, timestamp)) WITHOUT ROWID; "
        f'INSERT INTO "{values}" SELECT * FROM old; DROP TABLE old',
    )
    with pytest.raises(InvalidParameterError) as refused:
        dst.import_sqlite(db, max_array_bytes=23_000)
    assert "holds at least 959 rows, more than the 958 the store reads" in str(refused.value)
    assert dst.list_metadata() == []
    ids = dst.import_sqlite(db, max_array_bytes=24_000)
    assert [s.data[-1] for s in dst.read_by_ids(ids)] == [999.0, 1000.0, 1001.0]
