"""docs/querying-at-scale.md runs as written against the test S3 server (tests/s3server.py):
its ``sh`` lines through the CLI with the server's endpoint and keys in the AWS_*
variables, its ``python`` blocks with ``exec`` in one namespace, in order; a ``# value``
comment after a ``print`` is the output it must give. The Spark write-back (``spark``,
then its ``spark-sh`` lines) runs on a local export when pyspark is installed; the S3A
block (``pyspark``) is not run, as the page says.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from repo_root import REPO_ROOT

from infrastore_sqlite.cli import PROG, cli

PAGE = REPO_ROOT / "docs" / "querying-at-scale.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_runs_as_written(s3_server: Any, tmp_path: Path, monkeypatch: Any) -> None:
    for key, value in s3_server.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("INFRASTORE_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    lines = [line for block in _blocks("sh") for line in block.strip().splitlines()]
    assert any("--dir s3://" in line for line in lines)
    for line in lines:
        words = shlex.split(line)
        assert words[0] == PROG, line
        result = CliRunner().invoke(cli, words[1:], prog_name=PROG)
        assert result.exit_code == 0, (line, result.stderr)
    blocks = _blocks("python")
    assert len(blocks) == 4
    namespace: dict[str, Any] = {"__name__": "docs"}
    for code in blocks:
        expected = [m.strip() for m in re.findall(r"print\(.*\)\s+# (.*)", code)]
        assert expected, code
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(PAGE), "exec"), namespace)
        assert out.getvalue().split("\n")[: len(expected)] == expected


def test_the_query_lines_the_page_leads_with_are_run() -> None:
    # The first text block's commands are shown before the export they need; the sh block
    # after it runs each one, as written.
    lead = _blocks("text")[1].strip().splitlines()
    run = [line for block in _blocks("sh") for line in block.strip().splitlines()]
    queries = [line for line in lead if line.startswith(PROG)]
    assert len(queries) == 3 and all(line in run for line in queries)
    assert "pip install 'infrastore-sqlite[query]'" in lead


def test_the_page_names_the_install_and_the_untested_spark_recipe() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert "pip install 'infrastore-sqlite[cloud]'" in text
    assert len(_blocks("pyspark")) == 1 and "not run in the tests" in text


def test_the_spark_write_back_runs_as_written(tmp_path: Path, monkeypatch: Any) -> None:
    pytest.importorskip("pyspark", reason="pip install 'infrastore-sqlite[test]'")
    monkeypatch.delenv("INFRASTORE_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    for line in ("demo demo-store", "--store demo-store export -f parquet --dir pq"):
        assert CliRunner().invoke(cli, shlex.split(line), prog_name=PROG).exit_code == 0
    (code,) = _blocks("spark")
    # In a process of its own: Spark's JVM outlives a session and keeps the directory it
    # started in, which the page's relative paths are read against.
    done = subprocess.run(
        [sys.executable, "-c", code + "\nspark.stop()\n"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert list((tmp_path / "edited").glob("*.values.parquet/_SUCCESS"))
    (lines,) = _blocks("spark-sh")
    results = []
    for line in lines.strip().splitlines():
        words = shlex.split(line)
        assert words[0] == PROG, line
        result = CliRunner().invoke(cli, words[1:], prog_name=PROG)
        assert result.exit_code == 0, (line, result.stderr)
        results.append(result)
    # diff saw every series of the partition edited, and add replaced them.
    edited = re.search(r"0 added, ([1-9]\d*) replaced, 0 unchanged", results[0].stderr)
    assert edited, results[0].stderr
    assert re.search(rf"replaced\s+{edited.group(1)}\n", results[-1].stdout), results[-1].stdout
