"""An in-memory store's directory does not outlive its process (issue 38): removed on
close, when the store is collected, at the interpreter's exit without close, and, for a
process killed outright, by the next in-memory create of any process (the directory
carries its owner's pid and a marker file; only such a directory of a dead pid is
removed, nothing on a guess)."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from repo_root import REPO_ROOT

from infrastore_sqlite import Store
from infrastore_sqlite.store.lifecycle import SCRATCH_MARKER, SCRATCH_PREFIX

CHILD = """
import os, signal, sys
from infrastore_sqlite import Store
store = Store.create(in_memory=True)
print(store._scratch, flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    return env


def _child(how: str) -> tuple[Path, int]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, how], capture_output=True, text=True, env=child_env(),
        timeout=120,
    )  # fmt: skip
    assert proc.stdout.strip(), proc.stderr
    return Path(proc.stdout.strip()), proc.returncode


def test_close_and_collection_remove_the_directory() -> None:
    store = Store.create(in_memory=True)
    scratch = store._scratch
    assert scratch is not None and (scratch / SCRATCH_MARKER).is_file()
    store.close()
    assert not scratch.exists()
    store = Store.create(in_memory=True)
    scratch = store._scratch
    del store
    gc.collect()
    assert not scratch.exists()


def test_an_exit_without_close_removes_it() -> None:
    scratch, code = _child("exit")
    assert code == 0
    assert not scratch.exists()


def test_a_killed_process_leaves_it_to_the_next_create(tmp_path: Path) -> None:
    scratch, code = _child("kill")
    assert code == -signal.SIGKILL
    assert scratch.exists() and scratch.name.startswith(f"{SCRATCH_PREFIX}")
    # Beside it: one without the marker and one of a live process, neither provably a
    # dead process's scratch.
    root = Path(tempfile.gettempdir())
    dead_pid = int(scratch.name[len(SCRATCH_PREFIX) :].split("-", 1)[0])
    unmarked = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{dead_pid}-", dir=root))
    live = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getppid()}-", dir=root))
    (live / SCRATCH_MARKER).write_text("live\n")
    try:
        with Store.create(in_memory=True):
            pass
        assert not scratch.exists()
        assert unmarked.exists() and live.exists()
    finally:
        for d in (unmarked, live):
            for f in d.iterdir():
                f.unlink()
            d.rmdir()
