"""Every command, query and snippet of docs/interchange.md's Parquet form runs as written.

The section's ``sh`` blocks run through the CLI (one store, one working directory), its
``sql`` blocks through one DuckDB connection in that directory (a statement's result
must not be empty), and its ``python`` blocks with ``exec``; a ``# value`` comment after
a ``print`` is the output it must give. The README's Parquet line runs too.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from repo_root import REPO_ROOT

from infrastore_sqlite.cli import PROG, cli

ROOT = REPO_ROOT
SECTION = "# The Parquet form"


def _section() -> str:
    text = (ROOT / "docs" / "interchange.md").read_text(encoding="utf-8")
    assert SECTION in text
    return text.split(SECTION, 1)[1]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _cli(line: str) -> None:
    words = shlex.split(line)
    assert words[0] == PROG, line
    result = CliRunner().invoke(cli, words[1:], prog_name=PROG)
    assert result.exit_code == 0, (line, result.stderr)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("docs_parquet")
    with contextlib.chdir(d):
        for block in _blocks(_section(), "sh"):
            for line in block.strip().splitlines():
                _cli(line)
    return d


def test_the_commands_write_the_files(workdir: Path) -> None:
    names = {p.name for p in (workdir / "parquet").iterdir()}
    assert "SingleTimeSeries.f64.utc.values.parquet" in names
    assert len(names) % 3 == 0 and len(names) >= 9
    assert not (workdir / "parquet-july").exists()  # the --dry-run line writes nothing


def test_the_duckdb_queries_run(workdir: Path) -> None:
    blocks = _blocks(_section(), "sql")
    assert len(blocks) == 3
    con = duckdb.connect()
    with contextlib.chdir(workdir):
        for block in blocks:
            statements = [s.strip() for s in block.split(";") if s.strip()]
            for sql in statements:
                rows = con.execute(sql).fetchall()
                if sql.upper().startswith("SELECT"):
                    assert rows, sql
    with contextlib.chdir(workdir):
        load = con.execute(
            "SELECT count(*) FROM load WHERE owner_id = 101 AND name = 'max_active_power'"
        ).fetchone()
    assert load == (168,)


def test_the_python_snippets_print_what_they_say(workdir: Path) -> None:
    blocks = _blocks(_section(), "python")
    assert len(blocks) == 3
    for code in blocks:
        expected = [m.strip() for m in re.findall(r"print\(.*\)\s+# (.*)", code)]
        out = io.StringIO()
        with contextlib.chdir(workdir), contextlib.redirect_stdout(out):
            exec(compile(code, "docs/interchange.md", "exec"), {"__name__": "docs"})
        assert out.getvalue().split("\n")[: len(expected)] == expected


def test_the_readme_parquet_line_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [
        line.split("  #", 1)[0].strip()
        for block in re.findall(r"```sh\n(.*?)```", readme, flags=re.S)
        for line in block.splitlines()
        if "-f parquet" in line
    ]
    assert len(lines) == 1
    with contextlib.chdir(tmp_path):
        _cli(f"{PROG} demo demo-store")
        _cli(lines[0])
        assert (tmp_path / "parquet" / "SingleTimeSeries.f64.utc.series.parquet").exists()
