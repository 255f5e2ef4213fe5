"""``get`` (and ``export -f csv`` to stdout) of a selection that matches nothing says what
helps: ``list`` with the same flags prints an empty table, so the refusal points at the
ids the store holds, or at fewer flags."""

from __future__ import annotations

import pytest
from cli_run import demo_store, run


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> str:
    return demo_store(tmp_path_factory, "get-none")


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
