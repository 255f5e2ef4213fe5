"""The options-as-values snippet of docs/interchange.md runs as written on the demo's
export: a dry-run export of one owner's series, an import that skips every series the
store already holds."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_root import REPO_ROOT

from infrastore_sqlite.cli import PROG, cli


def test_the_options_snippet_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = (REPO_ROOT / "docs" / "interchange.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "ImportOptions" in b]
    runner = CliRunner()
    for args in (
        ["demo", "demo-store"],
        ["--store", "demo-store", "export", "-f", "sqlite", "--db", "demo.db"],
    ):
        assert runner.invoke(cli, args, prog_name=PROG).exit_code == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "docs/interchange.md", "exec"), {})
    # Owner 101's one series planned; all 14 of the demo's series skipped, their ids listed.
    assert out.getvalue().split() == ["1", "14", "14"]
    assert not (tmp_path / "plan.db").exists()
