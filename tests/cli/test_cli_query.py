"""``infrastore-sqlite query``: SQL over an export's fixed-name views in DuckDB, for the
Parquet form (``--parquet``) and the SQLite form (``--db``), in the CLI's formats and to a
Parquet file (``--output``); the refusals in the CLI's words.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from varied_store import build_varied, new_store

from infrastore_sqlite.cli import PROG, cli

SQL = "SELECT partition_name, count(*) AS n FROM all_values GROUP BY 1 ORDER BY 1"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cli_query")
    s = new_store(d / "src.h5")
    build_varied(s)
    s.export_parquet(d / "pq")
    s.export_sqlite(d / "x.db")
    s.close()
    return d


def _run(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name=PROG)


def test_every_format_gives_the_same_rows(exported: Path) -> None:
    pqdir = str(exported / "pq")
    doc = json.loads(_run("-f", "json", "query", "--parquet", pqdir, SQL).stdout)["items"]
    assert doc and all(set(r) == {"partition_name", "n"} for r in doc)
    lines = _run("-f", "jsonl", "query", "--parquet", pqdir, SQL).stdout.splitlines()
    assert [json.loads(line) for line in lines] == doc
    rows = list(
        csv.DictReader(io.StringIO(_run("-f", "csv", "query", "--parquet", pqdir, SQL).stdout))
    )
    assert [{"partition_name": r["partition_name"], "n": int(r["n"])} for r in rows] == doc
    table = _run("query", "--parquet", pqdir, SQL)
    assert table.exit_code == 0 and all(r["partition_name"] in table.stdout for r in doc)
    # --dir, the flag export -f parquet wrote the directory with, names it too.
    by_dir = json.loads(_run("-f", "json", "query", "--dir", pqdir, SQL).stdout)["items"]
    assert by_dir == doc
    # The SQLite form answers the same query with the same rows.
    assert (
        json.loads(_run("-f", "json", "query", "--db", str(exported / "x.db"), SQL).stdout)["items"]
        == doc
    )


def test_output_writes_a_parquet_file(exported: Path, tmp_path: Path) -> None:
    out = tmp_path / "series.parquet"
    r = _run("-f", "json", "query", "--parquet", str(exported / "pq"), "SELECT * FROM all_series",
             "--output", str(out))  # fmt: skip
    assert r.exit_code == 0, r.stderr
    t = pq.read_table(out)
    assert json.loads(r.stdout) == {"rows": t.num_rows, "output": str(out)}
    assert t.num_rows > 0 and "owner_id" in t.column_names


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["query", SQL], "exactly one of --parquet PATH and --db FILE"),
        (["query", "--db", "x.db", "--storage-option", "a=b", SQL], "--storage-option goes with"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    r = _run(*args)
    assert r.exit_code == 2 and message in r.stderr, r.stderr


def test_bad_sql_is_one_line_naming_the_views(exported: Path) -> None:
    r = _run("query", "--parquet", str(exported / "pq"), "SELECT nope FROM all_values")
    assert r.exit_code == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "all_values_real" in r.stderr
    assert "Traceback" not in r.stderr
