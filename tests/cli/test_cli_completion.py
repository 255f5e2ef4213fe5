"""Shell completion (issue 38): the lines docs/cli.md gives for bash, zsh and fish
produce click's completion script for that shell, and the script's requests complete
commands, ``-f`` and ``--type`` values. Bash is run for real (the script sourced, its
function called as the shell calls it); zsh and fish through the same requests their
scripts make (``_INFRASTORE_SQLITE_COMPLETE=zsh_complete`` / ``fish_complete``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_root import REPO_ROOT
from test_cli_contract import _env

PROG = "infrastore-sqlite"
VAR = "_INFRASTORE_SQLITE_COMPLETE"


def _program() -> str:
    found = shutil.which(PROG, path=str(Path(sys.executable).parent))
    assert found, f"{PROG} is not installed beside {sys.executable}"
    return found


def _doc_lines() -> dict[str, str]:
    text = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    lines = re.findall(rf"^\$ (.*{VAR}=(\w+)_source.*)$", text, re.M)
    return {shell: line for line, shell in lines}


def _complete(shell: str, words: str, cword: int | str) -> list[str]:
    env = _env(COMP_WORDS=words, COMP_CWORD=str(cword), **{VAR: f"{shell}_complete"})
    out = subprocess.run([_program()], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_the_docs_give_a_line_for_each_shell() -> None:
    assert set(_doc_lines()) == {"bash", "zsh", "fish"}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_documented_line_writes_the_shells_script(shell: str) -> None:
    line = _doc_lines()[shell]
    source = re.search(rf"{VAR}=(\w+) {PROG}", line)
    assert source is not None, line
    env = _env(**{VAR: source.group(1)})
    out = subprocess.run([_program()], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert f"{VAR}={shell}_complete" in out.stdout, out.stdout[:300]


def test_bash_completes_type_and_format_values_for_real() -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")  # the protocol tests below still run
    program = _program()
    # As bash calls it: the function gets the command's name (here its path) as $1.
    call = f"_infrastore_sqlite_completion {program}"
    script = "\n".join(
        [
            _doc_lines()["bash"].replace(PROG, program, 1),
            f"COMP_WORDS=({PROG} list --type pro); COMP_CWORD=3; COMPREPLY=(); {call}",
            'echo "type:${COMPREPLY[*]}"',
            f"COMP_WORDS=({PROG} export -f par); COMP_CWORD=3; COMPREPLY=(); {call}",
            'echo "format:${COMPREPLY[*]}"',
            f"COMP_WORDS=({PROG} ex); COMP_CWORD=1; COMPREPLY=(); {call}",
            'echo "command:${COMPREPLY[*]}"',
        ]
    )
    out = subprocess.run(
        [bash, "-c", script], env=_env(), capture_output=True, text=True, timeout=60
    )
    assert out.stderr == "", out.stderr
    assert out.stdout.splitlines() == ["type:probabilistic", "format:parquet", "command:export"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_requests_complete_type_and_format(shell: str) -> None:
    # zsh's script asks with COMP_CWORD the word's index, fish's with the word itself.
    cword = "s" if shell == "fish" else 3
    types = _complete(shell, f"{PROG} get --type s", cword)
    formats = _complete(shell, f"{PROG} -f j", "j" if shell == "fish" else 2)
    text = "\n".join(types)
    assert "single" in text and "scenarios" in text and "probabilistic" not in text
    assert "json" in "\n".join(formats) and "jsonl" in "\n".join(formats)
    assert "table" not in "\n".join(formats)
