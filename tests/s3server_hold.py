"""Run only by tests/test_s3server.py, as a pytest of its own that it kills: starts the
session's S3 server (the fixture), writes the server's and its watchdog's pids to the
file ``$INFRASTORE_S3_HOLD``, and waits to be killed. Not collected by a plain run (its
name does not start with ``test_``)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def test_hold_the_server(s3_server: Any) -> None:
    target = Path(os.environ["INFRASTORE_S3_HOLD"])
    pids = f"{s3_server.proc.pid} {s3_server.watchdog.pid}\n"
    target.with_suffix(".tmp").write_text(pids)
    target.with_suffix(".tmp").rename(target)
    time.sleep(600)
