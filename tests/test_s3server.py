"""The tests' S3 server does not outlive the pytest that started it (issue 38): a
``weed mini`` and a bench's stayed for hours after a run that was killed. Here a pytest
of its own starts the session's server (tests/s3server_hold.py) and is killed with
SIGKILL; the server and its watchdog must be gone within seconds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_root import REPO_ROOT

pytest.importorskip("obstore")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (dead, not yet reaped) counts as gone.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))


def _gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("group", [False, True], ids=["pytest only", "its process group"])
def test_a_killed_pytest_takes_its_s3_server_with_it(tmp_path: Path, group: bool) -> None:
    hold = tmp_path / "pids"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    env["INFRASTORE_S3_HOLD"] = str(hold)
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", str(REPO_ROOT / "tests" / "s3server_hold.py"),
         "-q", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'run'}"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not hold.exists():
            assert child.poll() is None, "the held pytest ended before starting the server"
            assert time.monotonic() < deadline, "the server did not start in 120 s"
            time.sleep(0.2)
        server, watchdog = (int(p) for p in hold.read_text().split())
        assert _alive(server) and _alive(watchdog)
        if group:
            os.killpg(child.pid, signal.SIGKILL)
        else:
            child.kill()
        child.wait()
        assert _gone_within([server, watchdog], 30), "the S3 server outlived its pytest"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
