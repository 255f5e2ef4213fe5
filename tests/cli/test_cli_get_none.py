"""``get`` (and ``export -f csv`` to stdout) of a selection that matches nothing says what
helps: ``list`` with the same flags prints an empty table, so the refusal points at the
ids the store holds, or at fewer flags."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result

from infrastore_sqlite.cli import cli


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> str:
    store = str(tmp_path_factory.mktemp("get-none") / "demo-store")
    assert run("demo", store).exit_code == 0
    return store


def test_an_id_the_store_does_not_hold(demo: str) -> None:
    r = run("--store", demo, "get", "--id", "999")
    assert r.exit_code == 1
    assert r.stderr.strip() == (
        "Error: the store holds no series with id 999; `list` shows the ids it holds"
    )
    assert run("--store", demo, "get", "--id", "9").exit_code == 0  # one it holds


def test_flags_that_match_nothing_together(demo: str) -> None:
    assert run("--store", demo, "get", "--owner-id", "101", "--type", "single").exit_code == 0
    r = run("--store", demo, "get", "--owner-id", "101", "--name", "nope")
    assert r.exit_code == 1
    assert "no series matches all of these selector flags" in r.stderr
    assert "`list` with fewer of them shows what the store holds" in r.stderr
    r = run("--store", demo, "export", "-f", "csv", "--owner-id", "999")
    assert r.exit_code == 1 and "selector flags" in r.stderr and "Traceback" not in r.output
