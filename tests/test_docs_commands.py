"""Every command of README.md's command-line quick start and of docs/interchange.md runs
as written, in order, on the demo data, and returns rows.

A console block's ``$`` lines are commands; a line after one that starts with ``Error:``
says that command is refused (exit 1) with a message starting that way (up to ``…``).
``sqlite3 FILE SQL`` and ```` ```sql ```` blocks run against the file (``demo.db`` for a
block) and must return rows (an UPDATE or INSERT says so with ``RETURNING``).
"""

from __future__ import annotations

import re
import shlex
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_root import REPO_ROOT

from infrastore_sqlite.cli import PROG, cli

ROOT = REPO_ROOT
BLOCK = re.compile(r"```(console|sql|sh)\n(.*?)```", re.S)


def steps(text: str, *, section: str | None = None) -> list[tuple[str, str, str | None]]:
    """(kind, text, expected error) in document order."""
    if section is not None:
        text = text.split(section, 1)[1].split("\n## ", 1)[0]
    out: list[tuple[str, str, str | None]] = []
    for lang, body in BLOCK.findall(text):
        if lang == "sql":
            out.append(("sql", body, None))
            continue
        for line in body.splitlines():
            if lang == "console" and not line.startswith("$ "):
                if line.startswith("Error:") and out:
                    kind, cmd, _ = out[-1]
                    out[-1] = (kind, cmd, line.split("…")[0].strip())
                continue
            command = line[2:] if line.startswith("$ ") else line
            if command.strip():
                out.append(("command", command, None))
    return out


def run_sql(db: Path, sql: str, where: str) -> None:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(sql).fetchall()
        conn.commit()
    finally:
        conn.close()
    assert rows, f"{where}: no rows from {sql!r}"


def run(tmp_path: Path, items: list[tuple[str, str, str | None]]) -> None:
    for kind, text, error in items:
        if kind == "sql":
            run_sql(tmp_path / "demo.db", text, "sql block")
            continue
        for command in text.split(" && "):
            words = shlex.split(command, comments=True)
            if words[0] == "sqlite3":
                run_sql(tmp_path / words[1], words[2], command)
                continue
            assert words[0] == PROG, command
            result = CliRunner().invoke(cli, words[1:], prog_name=PROG)
            if error is None:
                assert result.exit_code == 0, (command, result.stderr)
                assert result.stdout.strip(), f"{command}: printed nothing"
            else:
                assert result.exit_code == 1, (command, result.stdout)
                assert result.stderr.startswith(error), (command, result.stderr)


@pytest.fixture
def demo_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory: each document builds the demo store itself."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INFRASTORE_STORE", raising=False)
    return tmp_path


def test_interchange_md_runs_as_written(demo_dir: Path) -> None:
    # The SQLite part; the Parquet form's examples (DuckDB SQL, Python) have their tests
    # beside the Parquet container.
    text = (ROOT / "docs" / "interchange.md").read_text(encoding="utf-8")
    items = steps(text.split("\n# The Parquet form", 1)[0])
    assert len(items) > 10
    run(demo_dir, items)


def test_architecture_md_walks_run_as_written(demo_dir: Path) -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    items = steps(text, section="## Two walks through the house")
    assert [t.split()[3 if "--store" in t else 1] for _, t, _ in items] == [
        "demo",
        "export",
        "init",
        "add",
    ]
    run(demo_dir, items)


def test_readme_command_line_quick_start_runs_as_written(demo_dir: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    items = steps(readme, section="## Quick start: command line")
    assert any("demo demo-store" in t for _, t, _ in items)
    run(demo_dir, items)


def test_interchange_md_write_back_recipes_run_as_written(demo_dir: Path) -> None:
    """The pandas and Polars write-back recipes of docs/interchange.md run as written on
    the demo's export, and rehash + add --replace bring exactly those edits into the
    store: owner 104 times 1.1, the Denver series doubled, nothing else."""
    import numpy as np

    from infrastore_sqlite import Store

    pytest.importorskip("pandas")
    pytest.importorskip("polars")
    pytest.importorskip("connectorx")
    pytest.importorskip("sqlalchemy")
    text = (ROOT / "docs" / "interchange.md").read_text(encoding="utf-8")
    section = text.split("### Editing with pandas or Polars", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    runner = CliRunner()
    for args in (["demo", "demo-store"], ["--store", "demo-store", "export", "-f", "sqlite",
                                          "--db", "demo.db"]):  # fmt: skip
        assert runner.invoke(cli, args, prog_name=PROG).exit_code == 0
    with Store.open(demo_dir / "demo-store", read_only=True) as store:
        before = {m["id"]: store.read_by_id(m["id"]).data.copy() for m in store.list_metadata()}
    for block in blocks:
        exec(compile(block, "interchange.md", "exec"), {})
    for args in (["rehash", "--db", "demo.db"],
                 ["--store", "demo-store", "add", "--sqlite", "demo.db", "--replace"]):  # fmt: skip
        result = runner.invoke(cli, args, prog_name=PROG)
        assert result.exit_code == 0, result.stderr
    with Store.open(demo_dir / "demo-store", read_only=True) as store:
        for meta in store.list_metadata():
            old, new = before[meta["id"]], store.read_by_id(meta["id"]).data
            if meta["owner_id"] == 104 and meta["time_series_type"] == "SingleTimeSeries":
                np.testing.assert_allclose(new, old * 1.1)
                assert not np.array_equal(new, old)
            elif meta["time_reference"] == "America/Denver":
                np.testing.assert_array_equal(new, old * 2)
                assert not np.array_equal(new, old)
            else:
                np.testing.assert_array_equal(new, old)
