"""``query_parquet`` / ``connect_parquet``: the SQLite form's fixed-name views over the
Parquet form in DuckDB (issue 36, Must 5). The same store exported both ways gives the
same rows through the same view names; zoneless wall clocks stay wall clocks whatever
the session's zone; a partition written as a directory of parts and a URI on the real
S3 server read in place.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from varied_store import build_varied, new_store

from infrastore_sqlite.errors import InvalidParameterError, StorageError
from infrastore_sqlite.interchange.layout import VIEW_COLUMNS
from infrastore_sqlite.interchange.parquet.query import (
    connect_parquet,
    query_parquet,
)
from infrastore_sqlite.interchange.sqlite.query import connect_sqlite


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("query")
    s = new_store(d / "src.h5")
    build_varied(s)
    s.export_parquet(d / "pq")
    s.export_sqlite(d / "x.db")
    s.close()
    return {"pq": d / "pq", "db": d / "x.db", "dir": d}


def test_the_fixed_views_have_the_sqlite_forms_columns(exported) -> None:
    pq_con = connect_parquet(exported["pq"])
    for view, columns in VIEW_COLUMNS.items():
        got = [d[0] for d in pq_con.execute(f"SELECT * FROM {view} LIMIT 0").description]
        assert got == ["partition_name", *columns], view


def test_the_views_answer_as_the_sqlite_forms_do(exported) -> None:
    pq_con = connect_parquet(exported["pq"])
    db_con = connect_sqlite(exported["db"])
    for sql in (
        "SELECT partition_name, count(*), count(DISTINCT array_id) FROM all_values "
        "GROUP BY 1 ORDER BY 1",
        "SELECT partition_name, owner_id, name, units, features FROM all_series ORDER BY ALL",
        "SELECT partition_name, id, data_hash FROM all_arrays ORDER BY ALL",
        # (NaN is a value in Parquet, NULL in SQLite: left out here)
        "SELECT partition_name, array_id, value FROM all_values_real_static WHERE NOT isnan(value) "
        "ORDER BY ALL",
        "SELECT owner_id, max(value) FROM all_values_real_static JOIN all_series "
        "USING (partition_name, array_id) WHERE NOT isnan(value) GROUP BY 1 ORDER BY 1",
        "SELECT partition_name, array_id, value FROM all_values_integer_static ORDER BY ALL",
    ):
        assert pq_con.sql(sql).fetchall() == db_con.sql(sql).fetchall(), sql
    # Every flat_ view of the database is there, with its rows.
    flats = [
        r[0]
        for r in db_con.sql(
            "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'flat_%'"
        ).fetchall()
    ]
    assert flats
    for name in flats:
        sql = f"SELECT count(*), sum(owner_id) FROM {name}"
        assert pq_con.sql(sql).fetchall() == db_con.sql(sql).fetchall(), name


def test_instants_are_utc_and_wall_clocks_stay_whatever_the_zone(exported) -> None:
    con = connect_parquet(exported["pq"])
    sql = (
        "SELECT partition_name, min(timestamp) FROM all_values "
        "WHERE partition_name LIKE '%zoneless%' OR partition_name LIKE '%utc' GROUP BY 1 ORDER BY 1"
    )
    before = con.sql(sql).fetchall()
    con.execute("SET TimeZone = 'America/Denver'")
    assert con.sql(sql).fetchall() == before
    assert all(isinstance(t, dt.datetime) and t.tzinfo is None for _, t in before)
    # The wall clock the store holds: the database's integers read as UTC, naive.
    db = connect_sqlite(exported["db"]).sql(sql.replace("min(timestamp)", "min(timestamp)"))
    want = [(p, dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)) for p, ms in db.fetchall()]
    assert before == want


def test_the_api_returns_a_relation_or_an_arrow_table(exported) -> None:
    rel = query_parquet(exported["pq"], "SELECT count(*) AS n FROM all_series")
    assert isinstance(rel, duckdb.DuckDBPyRelation)
    table = query_parquet(exported["pq"], "SELECT count(*) AS n FROM all_series", arrow=True)
    assert isinstance(table, pa.Table) and table.column("n").to_pylist() == list(rel.fetchall()[0])


def test_bad_sql_names_the_views(exported) -> None:
    with pytest.raises(InvalidParameterError, match="all_values_real") as e:
        query_parquet(exported["pq"], "SELECT nope FROM all_values")
    assert "Binder Error" in str(e.value)
    # The fixed names are listed too, though they end as a partition's tables do.
    listed = str(e.value).split("the views are ", 1)[1].split(", and each")[0].split(", ")
    assert {"all_values", "all_series", "all_arrays"} <= set(listed)


def test_part_directories_read_in_place(exported, tmp_path: Path) -> None:
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    out = tmp_path / "parts"
    out.mkdir()
    for f in exported["pq"].glob("*.parquet"):
        ds.write_dataset(
            pq.read_table(f),
            out / f.name,
            format="parquet",
            max_rows_per_file=100,
            max_rows_per_group=100,
        )
        (out / f.name / "_SUCCESS").write_bytes(b"")
    sql = "SELECT partition_name, count(*), sum(array_id) FROM all_values GROUP BY 1 ORDER BY 1"
    assert query_parquet(out, sql).fetchall() == query_parquet(exported["pq"], sql).fetchall()


def test_a_uri_on_the_s3_server(exported, s3_server: Any) -> None:
    from infrastore_sqlite import Store

    uri = f"s3://infrastore/query-{uuid.uuid4().hex[:8]}"
    with Store.open(exported["dir"] / "src.h5", read_only=True) as s:
        s.export_parquet(uri, storage_options=s3_server.options)
    sql = "SELECT owner_id, max(value) FROM all_values_real_static JOIN all_series USING (partition_name, array_id) GROUP BY 1 ORDER BY 1"
    got = query_parquet(uri, sql, storage_options=s3_server.options).fetchall()
    assert repr(got) == repr(query_parquet(exported["pq"], sql).fetchall())  # (NaN == NaN)


def test_partition_names_compare_and_read_as_text(exported) -> None:
    con = connect_parquet(exported["pq"])
    names = [r[0] for r in con.sql("SELECT DISTINCT partition_name FROM all_series").fetchall()]
    assert len(names) > 1
    # A name no partition has is no error: no rows, as on text.
    assert con.sql("SELECT * FROM all_series WHERE partition_name = 'nope'").fetchall() == []
    # ORDER BY sorts as text does (the SQLite form's TEXT column).
    got = [
        r[0]
        for r in con.sql("SELECT DISTINCT partition_name FROM all_values ORDER BY 1").fetchall()
    ]
    assert got == sorted(names, key=str.encode)
    # The Arrow table (and so the CLI's outputs) has it as a string column.
    table = query_parquet(exported["pq"], "SELECT partition_name FROM all_arrays", arrow=True)
    assert table.schema.field("partition_name").type == pa.string()
    assert set(table.column("partition_name").to_pylist()) == set(names)


def test_a_local_query_reads_the_footers_with_duckdb_alone(exported) -> None:
    # pyarrow is not imported on this path (its import cost the query 0.02-0.03 s).
    code = (
        "import sys\n"
        "from infrastore_sqlite.interchange.parquet.query import query_parquet\n"
        f"rows = query_parquet({str(exported['pq'])!r}, 'SELECT count(*) FROM all_series').fetchall()\n"
        "print(rows[0][0], 'pyarrow' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, imported = out.stdout.split()
    assert int(n) > 0 and imported == "False", out.stdout


@pytest.mark.parametrize("where", ["copy", "a,b"])
def test_a_name_duckdb_is_not_handed_is_read_by_pyarrow(exported, tmp_path: Path, where) -> None:
    # A part file whose name holds a space and a quote, in a directory whose path may
    # hold a comma (DuckDB's search path is comma-separated): read as elsewhere.
    d = tmp_path / where
    shutil.copytree(exported["pq"], d)
    values = sorted(d.glob("*.values.parquet"))[0]
    data = values.read_bytes()
    values.unlink()
    values.mkdir()
    (values / "part 0's.parquet").write_bytes(data)
    sql = "SELECT partition_name, count(*) FROM all_values GROUP BY 1 ORDER BY 1"
    assert query_parquet(d, sql).fetchall() == query_parquet(exported["pq"], sql).fetchall()


def test_a_damaged_file_is_named(exported, tmp_path: Path) -> None:
    d = tmp_path / "cut"
    shutil.copytree(exported["pq"], d)
    (d / "_infrastore_manifest.json").unlink(missing_ok=True)
    victim = sorted(d.glob("*.series.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[:-20])
    with pytest.raises(StorageError, match=re.escape(victim.name)) as e:
        query_parquet(d, "SELECT 1")
    assert "export it again" in str(e.value)
