"""The S3 server going away in the middle of an export or an import (a server of the
test's own, tests/s3server.py, stopped and started again on the same ports and data).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from s3server import S3Server
from varied_store import new_store, snapshot, varied_store_file

from infrastore_sqlite import Store
from infrastore_sqlite.errors import StorageError
from infrastore_sqlite.interchange.parquet import export_parquet, import_parquet
from infrastore_sqlite.interchange.parquet.location import MANIFEST, locate

#: Fail fast once the server is gone (obstore's default is 10 tries over 3 minutes).
QUICK = {"max_retries": "1", "retry_timeout": "2"}


@pytest.fixture
def server(tmp_path: Path) -> Any:
    srv = S3Server(tmp_path / "s3")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return varied_store_file(tmp_path_factory.mktemp("varied") / "varied.h5")


def _contents(store: Store) -> dict:
    out = {}
    for key, (meta, series) in snapshot(store).items():
        data = np.ascontiguousarray(np.asarray(series.data))
        out[key] = (meta, str(data.dtype), data.shape, data.tobytes())
    return out


def test_server_stopped_mid_export(server: Any, varied: Path) -> None:
    """One line naming the URI; once the server is back, nothing of the export is
    listed, and the export run again succeeds."""
    uri = "s3://infrastore/mid-export/"
    opts = {**server.options, **QUICK}

    def stop(done: int, total: int) -> None:
        if server.proc is not None:
            server.stop()

    with Store.open(varied, read_only=True) as s:
        with pytest.raises(StorageError) as err:
            export_parquet(s, uri, storage_options=opts, progress=stop)
        message = str(err.value)
        assert "s3://infrastore/mid-export/" in message and "\n" not in message
        server.start()
        root = locate(uri, server.options)
        assert root.listdir() == []
        export_parquet(s, uri, storage_options=server.options)
    assert MANIFEST in locate(uri, server.options).listdir()


def test_server_stopped_mid_import_resumes_with_ignore(
    server: Any, varied: Path, tmp_path: Path
) -> None:
    """Per partition (the CLI's rule): the partitions committed before the failure stay,
    the failing one leaves nothing; run again with ``on_conflict="ignore"`` (``add
    --ignore``) once the server is back, the store is the local import's."""
    uri = "s3://infrastore/mid-import"
    local = tmp_path / "local"
    with Store.open(varied, read_only=True) as s:
        export_parquet(s, uri, storage_options=server.options)
        export_parquet(s, local)
    want_store = new_store(tmp_path / "want.h5")
    import_parquet(want_store, local)
    want = _contents(want_store)
    want_store.close()

    calls = {"n": 0}

    def stop_after_a_while(done: int, total: int) -> None:
        calls["n"] += 1
        if calls["n"] == 3 and server.proc is not None:
            server.stop()

    dst = new_store(tmp_path / "dst.h5")
    try:
        opts = {**server.options, **QUICK}
        with pytest.raises(StorageError) as err:
            import_parquet(
                dst, uri, storage_options=opts, per_partition=True, progress=stop_after_a_while
            )
        assert "s3://infrastore/mid-import" in str(err.value)
        assert "\n" not in str(err.value)
        report = err.value.report  # type: ignore[attr-defined]
        committed = report.to_dict()["ids"]
        assert sorted(m["id"] for m in dst.list_metadata()) == sorted(committed)
        assert len(committed) < len(want)
        failed = [p for p in report.to_dict()["partitions"] if p["error"]]
        assert len(failed) == 1 and failed[0]["ids"] == []
        server.start()
        import_parquet(dst, uri, storage_options=server.options, on_conflict="ignore")
        assert _contents(dst) == want
    finally:
        dst.close()


#: An export run in a process of its own that kills itself (SIGKILL: no cleanup runs)
#: once its second partition is encoded and handed to the publisher.
_KILLED_EXPORT = """
import os, signal, sys
from infrastore_sqlite import Store
from infrastore_sqlite.interchange.parquet.location import _object as publish

finished = publish.ObjectPublisher.finished
seen = []

def finished_then_die(self, pp, role):
    finished(self, pp, role)
    if role == "arrays":
        seen.append(pp)
        if len(seen) == 2:
            os.kill(os.getpid(), signal.SIGKILL)

publish.ObjectPublisher.finished = finished_then_die
with Store.open(sys.argv[1], read_only=True) as s:
    s.export_parquet(sys.argv[2])
"""


def test_an_export_killed_midway_leaves_nothing_and_runs_again(
    s3_server: Any, varied: Path
) -> None:
    import subprocess
    import sys
    import uuid

    from click.testing import CliRunner

    from infrastore_sqlite.cli import PROG, cli

    uri = f"s3://infrastore/killed-{uuid.uuid4().hex[:8]}"
    env = {**__import__("os").environ, **s3_server.env}
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_EXPORT, str(varied), uri], env=env, timeout=300
    )
    assert done.returncode == -9  # killed, as planned, after two partitions
    root = locate(uri, s3_server.options)
    assert root.bucket.listing(root.key) == ({}, [])  # nothing a listing shows
    args = ["--store", str(varied), "export", "-f", "parquet", "--dir", uri]
    again = CliRunner().invoke(cli, args, prog_name=PROG, env=s3_server.env)
    assert again.exit_code == 0, again.stderr
    root.bucket.forget(root.key)
    assert MANIFEST in root.listdir()
    dst = new_store(varied.parent / f"{uuid.uuid4().hex[:6]}.h5")
    try:
        import_parquet(dst, uri, storage_options=s3_server.options)
        with Store.open(varied, read_only=True) as src:
            assert sorted(snapshot(dst)) == sorted(snapshot(src, derived=False))
    finally:
        dst.close()
