"""docs/cli.md is generated from --help and current; every command has help ending in a
worked example, and every example runs."""

from __future__ import annotations

import importlib.util
import shlex
import sqlite3
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from repo_root import REPO_ROOT

from infrastore_sqlite.cli import PROG, cli
from infrastore_sqlite.demo import build_demo_store

ROOT = REPO_ROOT


def _generator():
    spec = importlib.util.spec_from_file_location("gen_cli_md", ROOT / "docs" / "gen_cli_md.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli, info_name=PROG)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}  # type: ignore[misc]


def _examples(command: click.Command) -> list[str]:
    """The example commands of a command's epilog, continuation lines joined."""
    epilog = command.epilog or ""
    assert "Example:" in epilog
    lines, pending = [], ""
    for raw in epilog.split("Example:", 1)[1].strip().splitlines():
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        lines.append(line)
    return lines


def test_docs_cli_md_is_current() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert text == _generator().render(), "docs/cli.md is stale: run python docs/gen_cli_md.py"


def test_the_generator_check_mode() -> None:
    assert _generator().main(["--check"]) == 0


def test_docs_cover_every_command() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in _commands():
        assert f"## `{PROG} {name}`" in text


@pytest.mark.parametrize("name", [None, *_commands()])
def test_help_ends_with_a_worked_example(name: str | None) -> None:
    args = ["--help"] if name is None else [name, "--help"]
    result = CliRunner().invoke(cli, args, prog_name=PROG)
    assert result.exit_code == 0
    command = cli if name is None else _commands()[name]
    assert (command.help or "").strip(), f"{name} has no help text"
    tail = result.stdout.rstrip().split("Example:")
    assert len(tail) == 2, f"{name}: no Example section"
    example_lines = [line.strip() for line in tail[1].strip().splitlines()]
    assert example_lines and example_lines[0].startswith(PROG)
    assert "Options:" not in tail[1], "the example must come last"


@pytest.mark.parametrize("name", [None, *_commands()])
def test_every_example_runs(
    name: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
):
    command = cli if name is None else _commands()[name]
    examples = _examples(command)
    if any("s3://" in line for line in examples):
        # An example in object storage runs against the tests' S3 server (bucket
        # ``infrastore``), its endpoint and keys in the AWS_* variables as a user's are.
        for key, value in request.getfixturevalue("s3_server").env.items():
            monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INFRASTORE_STORE", raising=False)
    # No input files are put beside the examples: one that reads a file makes it first,
    # as a user who has only the demo store must (issue 24).
    if not any(f"{PROG} demo demo-store" in line for line in examples):
        build_demo_store(tmp_path / "demo-store").close()
    for line in examples:
        words = shlex.split(line)
        if words[0] == "sqlite3":
            rows = sqlite3.connect(words[1]).execute(words[2]).fetchall()
            assert rows, line
            continue
        assert words[0] == PROG, line
        result = CliRunner().invoke(cli, words[1:], prog_name=PROG)
        assert result.exit_code == 0, (line, result.stderr)
        # Every example shows something on the demo data (a selector that matches no
        # series would print only a header, or nothing).
        printed = [x for x in result.stdout.splitlines() if x.strip()]
        assert len(printed) >= (2 if words[-1] != "--help" else 1), (line, result.stdout)
