"""Writing to a closed pipe (issue 38): every command whose reader stops reading
(``| head -1``) ends quietly, with nothing on stderr and the shell's status for it (0
when it had written everything before the reader left, 141 = 128 + SIGPIPE otherwise),
as ``cat`` does. Run as real processes: the pipe is the operating system's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_contract import _env

from infrastore_sqlite.demo import build_demo_store

QUIET = (0, 141)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("pipes")
    build_demo_store(d / "demo-store").close()
    db = d / "demo.db"
    subprocess.run(
        [sys.executable, "-m", "infrastore_sqlite", "--store", str(d / "demo-store"),
         "-q", "export", "-f", "sqlite", "--db", str(db)],
        env=_env(), check=True, capture_output=True,
    )  # fmt: skip
    return d / "demo-store", db


def _commands(store: Path, db: Path, tmp: Path) -> dict[str, list[str]]:
    fresh = tmp / "copy-store"
    shutil.rmtree(fresh, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "infrastore_sqlite", "--store", str(fresh), "-q", "init"],
        env=_env(), check=True, capture_output=True,
    )  # fmt: skip
    return {
        "list -f jsonl": ["--store", str(store), "-f", "jsonl", "list"],
        "export -f csv": ["--store", str(store), "export", "-f", "csv",
                          "--owner-id", "101", "--type", "single", "--name", "max_active_power"],
        "get": ["--store", str(store), "get", "--owner-id", "101", "--type", "single",
                "--name", "max_active_power"],
        "-q add": ["--store", str(fresh), "-q", "add", "--sqlite", str(db)],
    }  # fmt: skip


@pytest.mark.parametrize("name", ["list -f jsonl", "export -f csv", "get", "-q add"])
def test_a_pipe_closed_before_the_first_write(
    demo: tuple[Path, Path], tmp_path: Path, name: str
) -> None:
    """The reader is gone before the command writes a byte: every write fails, so the
    command must end with SIGPIPE's status and say nothing."""
    args = _commands(*demo, tmp_path)[name]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "infrastore_sqlite", *args],
            stdout=write_end, stderr=subprocess.PIPE, env=_env(), text=True, timeout=120,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert proc.stderr == "", proc.stderr
    assert proc.returncode == 141, name


@pytest.mark.parametrize("name", ["list -f jsonl", "export -f csv", "get", "-q add"])
def test_head_1_under_pipefail(demo: tuple[Path, Path], tmp_path: Path, name: str) -> None:
    """``command | head -1`` in a shell: one line comes through, nothing on stderr, and
    the command's status is 0 or SIGPIPE's, never 1."""
    args = _commands(*demo, tmp_path)[name]
    argv = " ".join(f"'{a}'" for a in [sys.executable, "-m", "infrastore_sqlite", *args])
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {argv} | head -1; echo status=${{PIPESTATUS[0]}}"],
        capture_output=True, env=_env(), text=True, timeout=120,
    )  # fmt: skip
    assert proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2, lines
    assert int(lines[-1].removeprefix("status=")) in QUIET, lines
