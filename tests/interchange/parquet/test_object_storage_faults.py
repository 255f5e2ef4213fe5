"""The S3 server going away in the middle of an export or an import (a server of the
test's own, tests/s3server.py, stopped and started again on the same ports and data).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from s3server import S3Server
from varied_store import build_varied, new_store, snapshot

from infrastore_sqlite import Store
from infrastore_sqlite.errors import StorageError
from infrastore_sqlite.interchange.parquet import export_parquet, import_parquet
from infrastore_sqlite.interchange.parquet.storage import MANIFEST, locate

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
    path = tmp_path_factory.mktemp("varied") / "varied.h5"
    s = new_store(path)
    try:
        build_varied(s)
    finally:
        s.close()
    return path


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
