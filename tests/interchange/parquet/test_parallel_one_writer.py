"""``jobs=N`` to a destination whose workers cannot hand their uploads over unpublished
(gs://, az://, or s3:// without botocore: obstore completes an upload when its writer
closes) is written by one writer, with a warning that says why: a failed export must
leave nothing visible, and a worker's completed uploads would be."""

from __future__ import annotations

import logging
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from varied_store import varied_store_file

from infrastore_sqlite import Store
from infrastore_sqlite.interchange.parquet import export, export_parquet
from infrastore_sqlite.interchange.parquet.location import MANIFEST, locate
from infrastore_sqlite.interchange.plan import plan_export


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return varied_store_file(tmp_path_factory.mktemp("varied") / "varied.h5")


def _defers(uri: str, options: dict[str, str], varied: Path) -> bool:
    with Store.open(varied, read_only=True) as s:
        plan = plan_export(s)
    return locate(uri, options).publisher(plan, overwrite=False).workers_defer()


def test_which_destinations_take_parallel_writers(
    varied: Path, tmp_path: Path, s3_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _defers(str(tmp_path / "pq"), {}, varied)
    assert _defers("s3://infrastore/x", s3_server.options, varied)
    assert not _defers("gs://bucket/x", {}, varied)
    assert not _defers("az://container/x", {"azure_storage_account_name": "acct"}, varied)
    monkeypatch.setitem(sys.modules, "botocore", None)  # as if not installed
    assert not _defers("s3://infrastore/x", s3_server.options, varied)


def test_without_botocore_jobs_2_to_s3_is_one_writer_and_says_so(
    varied: Path,
    s3_server: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    written = {}
    for jobs in (1, 2):
        prefix = f"one-writer-{uuid.uuid4().hex[:8]}"
        with Store.open(varied, read_only=True) as s:
            if jobs == 2:
                monkeypatch.setitem(sys.modules, "botocore", None)

                def no_workers(*args: Any, **kwargs: Any) -> None:
                    raise AssertionError("workers started where they cannot defer")

                monkeypatch.setattr(export, "write_parallel", no_workers)
            with caplog.at_level(logging.WARNING, logger="infrastore_sqlite"):
                export_parquet(
                    s, f"s3://infrastore/{prefix}", storage_options=s3_server.options, jobs=jobs
                )
        root = locate(f"s3://infrastore/{prefix}", s3_server.options)
        written[jobs] = {n: (root / n).read_bytes() for n in root.listdir() if n != MANIFEST}
    assert written[1] == written[2] and written[1]
    said = [r.getMessage() for r in caplog.records if "one writer" in r.getMessage()]
    assert len(said) == 1 and "--jobs 2" in said[0] and "s3://infrastore/" in said[0]
