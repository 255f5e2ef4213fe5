"""An ``add --sqlite --replace`` refused partway (the walk's case: an edited series whose
hash was not recomputed) lists the partitions committed before it; when they changed
nothing in the store (every series unchanged), the line says so, so "committed" is not
read as a half-done edit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner, Result

from infrastore_sqlite.cli import cli


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _committed_line(result: Result) -> str:
    assert result.exit_code == 1, result.output
    (line,) = [x for x in result.stderr.splitlines() if "were committed and stay" in x]
    return line


def test_a_refused_replace_says_the_committed_partitions_changed_nothing(tmp_path: Path) -> None:
    store, db = str(tmp_path / "demo-store"), str(tmp_path / "demo.db")
    assert run("demo", store).exit_code == 0
    assert run("--store", store, "export", "-f", "sqlite", "--db", db).exit_code == 0
    with sqlite3.connect(db) as con:  # the last partition's first array, edited, no rehash
        table = con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%_values' "
            "ORDER BY name DESC LIMIT 1"
        ).fetchone()[0]
        con.execute(f'UPDATE "{table}" SET value = value * 2 WHERE array_id = 1')
    line = _committed_line(run("--store", store, "add", "--sqlite", db, "--replace"))
    assert line.endswith("; they changed nothing in the store."), line


def test_the_clause_is_left_out_when_they_changed_something(tmp_path: Path) -> None:
    store, db = str(tmp_path / "demo-store"), str(tmp_path / "demo.db")
    assert run("demo", store).exit_code == 0
    assert run("--store", store, "export", "-f", "sqlite", "--db", db).exit_code == 0
    other = str(tmp_path / "other-store")
    assert run("--store", other, "init").exit_code == 0
    with sqlite3.connect(db) as con:
        table = con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%_values' "
            "ORDER BY name DESC LIMIT 1"
        ).fetchone()[0]
        con.execute(f'UPDATE "{table}" SET value = value * 2 WHERE array_id = 1')
    line = _committed_line(run("--store", other, "add", "--sqlite", db))  # all new: added
    assert "changed nothing" not in line and line.endswith("_values."), line
