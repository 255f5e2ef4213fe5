"""What the small CLI test modules share: one command run in-process, and a demo store
built through the command line itself."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result

from infrastore_sqlite.cli import cli


def run(*args: str) -> Result:
    """``infrastore-sqlite ARGS…`` in this process; an exception the CLI did not turn into
    a message fails the test."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def demo_store(tmp_path_factory: pytest.TempPathFactory, label: str) -> str:
    """A fresh demo store (``infrastore-sqlite demo``) in a folder of its own."""
    store = str(tmp_path_factory.mktemp(label) / "demo-store")
    assert run("demo", store).exit_code == 0
    return store
