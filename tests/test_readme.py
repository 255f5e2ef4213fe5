"""The README's first two commands, and its Python quick start, actually work.

The main command is run honestly but cheaply: the repository is built into a wheel (no
network: hatchling from this environment), installed without dependencies into a fresh
virtual environment that borrows this environment's packages for the dependencies, and
the README's `infrastore-sqlite` commands run with that venv's console script, from a
directory outside the checkout and without PYTHONPATH. So the test proves the wheel
ships what the commands need (the demo CSVs, the catalog migrations), not that the
checkout does.
"""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from repo_root import REPO_ROOT

ROOT = REPO_ROOT
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return [b.strip() for b in re.findall(rf"```{lang}\n(.*?)```", README, re.S)]


def test_readme_starts_with_the_two_commands() -> None:
    before_sections = README.split("\n## ", 1)[0]
    first, second = _blocks("sh")[:2]
    assert f"```sh\n{first}\n```" in before_sections
    assert f"```sh\n{second}\n```" in before_sections
    assert first.startswith("python -m venv .venv && .venv/bin/pip install . && ")
    assert ".venv/bin/infrastore-sqlite demo demo-store" in first
    assert "export -f sqlite --db demo.db" in first
    assert second == (
        "python -m venv .venv && .venv/bin/pip install -e '.[test,interop]' && "
        ".venv/bin/python -m pytest"
    )
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install --quiet -e '.[test,interop]'" in ci
    assert "python -m pytest" in ci
    # CI runs in a fresh clone with nothing beside it, so no test can read the workplace's shared spec directory.
    assert 'git clone --quiet "$src" "$work/repo"' in ci


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def test_readme_main_command_from_a_built_wheel(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "INFRASTORE_STORE")}
    steps = [s.strip() for s in _blocks("sh")[0].split("&&")]
    assert steps[:2] == ["python -m venv .venv", ".venv/bin/pip install ."]
    cli_steps = steps[2:]
    assert cli_steps and all(s.startswith(".venv/bin/infrastore-sqlite ") for s in cli_steps)

    # `pip install .`, without the network: build the wheel here, install it alone.
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", str(wheels), str(ROOT)], tmp_path, env)  # fmt: skip
    (wheel,) = wheels.glob("infrastore_sqlite-*.whl")
    venv = tmp_path / ".venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
          "--no-index", "-q", str(wheel)], tmp_path, env)  # fmt: skip
    # The dependencies (numpy, h5py, apsw, click, …) come from this environment.
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                tmp_path, env).stdout.strip()  # fmt: skip
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "_borrowed_deps.pth").write_text("\n".join(sorted(ours)) + "\n")

    work = tmp_path / "work"
    work.mkdir()
    where = _run([str(python), "-c", "import infrastore_sqlite; print(infrastore_sqlite.__file__)"],
                 work, env).stdout.strip()  # fmt: skip
    assert Path(where).is_relative_to(venv), where
    # PEP 561: editors and type checkers read the package's own hints.
    assert (Path(where).parent / "py.typed").is_file()

    outputs = []
    for step in cli_steps:
        words = shlex.split(step)
        words[0] = str(venv / "bin" / "infrastore-sqlite")
        outputs.append(_run(words, work, env))
    summary = outputs[-1].stdout.splitlines()
    assert summary[0].split() == ["values_table", "series", "arrays", "rows"]
    assert len(summary) > 2
    conn = sqlite3.connect(work / "demo.db")
    views = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
    assert "all_values" in views
    assert conn.execute("SELECT count(*) FROM all_series").fetchone()[0] == 14


def test_readme_python_quick_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    (code,) = _blocks("python")[:1]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "3 1"
    assert out[1] == "SingleTimeSeries_f64_utc_values 3 24"
