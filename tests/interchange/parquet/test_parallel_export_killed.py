"""A ``--jobs 2`` export to the S3 test server killed after a worker handed a partition
over (SIGKILL of the exporting process, or of the worker): nothing a listing shows is
left, and the same command runs again without ``--overwrite``. The worker's files are
multipart uploads (larger than a part), sent by the worker and completed only at the
parent's commit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from varied_store import add, new_store, snapshot, sts

from infrastore_sqlite import Store
from infrastore_sqlite.cli import PROG, cli
from infrastore_sqlite.interchange.parquet import import_parquet
from infrastore_sqlite.interchange.parquet.location import MANIFEST, locate
from infrastore_sqlite.interchange.parquet.location.uploads import incomplete_uploads


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight partitions, the two largest with values files of several 5 MiB parts; the
    small ones keep partitions queued when the worker hands its first one over, so its
    death always leaves the export work it cannot finish (with four, a fast machine had
    dealt them all, and the export succeeded without the killed worker)."""
    path = tmp_path_factory.mktemp("big") / "big.h5"
    rng = np.random.default_rng(36)
    s = new_store(path)
    try:
        add(s, sts("f", rng.standard_normal(1_500_000)))
        add(s, sts("i", rng.integers(0, 2**62, 1_400_000)))
        add(s, sts("g", rng.standard_normal(200_000).astype(np.float32)))
        add(s, sts("s", np.arange(10, dtype=np.int32)))
        for dtype in (np.int8, np.int16, np.uint8, np.uint16):
            add(s, sts(f"small_{np.dtype(dtype).name}", np.arange(10, dtype=dtype)))
    finally:
        s.close()
    return path


#: The export with ``jobs=2`` in a process of its own, its order of events fixed by
#: waits, not pauses (a fixed pause raced on a loaded machine: the worker, slow to start,
#: was dealt a small partition after the parent took the large one, or handed its first
#: over after the parent had dealt them all). The parent, done with its first partition,
#: waits until the worker was dealt one (the next largest, which the worker sends in
#: parts); before its next, until it took the worker's partition, polling its progress
#: step (where it takes the workers' results), so one partition is still to be dealt.
#: Once the parent took a worker's partition it prints what it was handed and kills
#: (``argv[3]``) itself or the worker, with SIGKILL: no cleanup runs in the one killed.
#: A wait that runs out (120 s) ends the script with a ``TIMEOUT`` message on stderr.
_KILLED = """
import multiprocessing, os, signal, sys, time
from infrastore_sqlite import Store
from infrastore_sqlite.interchange.parquet import export, parallel
from infrastore_sqlite.interchange.parquet.location import _object

LIMIT = 120.0
write_files = export._write_files
pack = parallel._pack

calls, dealt, adopted = [], [], []

def dealing(plan, i):
    dealt.append(i)  # in the parent: partition i goes to a worker
    return pack(plan, i)

parallel._pack = dealing

def wait_for(what, seen, step):
    end = time.monotonic() + LIMIT
    while not seen:
        if time.monotonic() > end:
            print(f"TIMEOUT: {what} within {LIMIT:.0f} s", file=sys.stderr, flush=True)
            os._exit(3)
        step(0, 0)  # the parent's progress step: where it deals and takes partitions
        time.sleep(0.02)

def later(*args, **kwargs):
    if multiprocessing.parent_process() is not None:  # a worker: as it is
        return write_files(*args, **kwargs)
    step = args[5]
    if calls:
        wait_for("the parent took no worker's partition", adopted, step)
    calls.append(1)
    write_files(*args, **kwargs)
    if len(calls) == 1:
        wait_for("no partition was dealt to the worker", dealt, step)

export._write_files = later
adopt = _object.ObjectPublisher.adopt

def adopt_then_kill(self, handed):
    adopt(self, handed)
    adopted.append(1)
    kind, items = handed
    print(kind, sorted({type(got).__name__ for _, files in items for _, got in files}),
          flush=True)
    if sys.argv[3] == "parent":
        os.kill(os.getpid(), signal.SIGKILL)
    for child in multiprocessing.active_children():
        os.kill(child.pid, signal.SIGKILL)

_object.ObjectPublisher.adopt = adopt_then_kill
if __name__ == "__main__":
    with Store.open(sys.argv[1], read_only=True) as s:
        s.export_parquet(sys.argv[2], jobs=2)
"""


@pytest.mark.parametrize("killed", ["parent", "worker"])
def test_a_killed_parallel_export_leaves_nothing_and_runs_again(
    killed: str, big: Path, s3_server: Any, tmp_path: Path
) -> None:
    uri = f"s3://infrastore/killed-jobs-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "killed_export.py"
    script.write_text(_KILLED)
    env = {**os.environ, **s3_server.env}
    # (Output to files, not pipes: the killed parent's fork server and worker may hold
    # them open a moment longer.)
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(big), uri, killed],
            env=env,
            stdout=o,
            stderr=e,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=300)
        finally:
            # The killed parent's fork server and idle worker outlive it: end its group.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    done = proc
    assert "TIMEOUT" not in err.read_text(), err.read_text()  # a wait ran out
    # A worker's partition was handed over as uploads never completed (its values file
    # in parts the worker sent, when it was the large partition).
    assert out.read_text().startswith("pending ['HeldFile'"), err.read_text()
    if killed == "parent":
        assert "'SentParts'" in out.read_text()
        assert done.returncode == -9
    else:
        assert done.returncode == 1  # the export failed: the parent saw its worker die
        said = err.read_text().strip().splitlines()[-1]
        assert "StorageError: a worker process of the export to " + uri in said
        assert "nothing of the export was kept" in said
    root = locate(uri, s3_server.options)
    assert root.bucket.listing(root.key) == ({}, [])  # nothing a listing shows
    args = ["--store", str(big), "export", "-f", "parquet", "--dir", uri, "--jobs", "2"]
    again = CliRunner().invoke(cli, args, prog_name=PROG, env=s3_server.env)
    assert again.exit_code == 0, again.stderr
    # The re-run aborted every upload the dead export left at its keys.
    assert incomplete_uploads(uri, storage_options=s3_server.options) == []
    root.bucket.forget(root.key)
    assert MANIFEST in root.listdir()
    dst = new_store(tmp_path / "copy.h5")
    try:
        import_parquet(dst, uri, storage_options=s3_server.options)
        with Store.open(big, read_only=True) as src:
            assert sorted(snapshot(dst)) == sorted(snapshot(src, derived=False))
    finally:
        dst.close()
