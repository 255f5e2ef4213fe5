"""The uploads a dead export to object storage leaves: found, aborted by the next export
to the same directory and by ``abort-uploads``, on the tests' real S3 server.

The export completes its multipart uploads only at its commit, so a process killed
before leaves uploads no listing shows but the bucket keeps; only S3's own
``ListMultipartUploads`` sees them (asked here through botocore, as the code does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator
from repo_root import REPO_ROOT

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.cli import PROG, cli
from infrastore_sqlite.interchange.parquet.location import MANIFEST, locate
from infrastore_sqlite.interchange.parquet.location.uploads import abort_uploads, incomplete_uploads

SCHEMA = REPO_ROOT / "schemas" / "cli" / "abort-uploads.json"

# A child that exports and is killed at the commit, before any upload is completed.
_KILLED_AT_COMMIT = """
import os, signal, sys
from infrastore_sqlite import Store
from infrastore_sqlite.interchange.parquet.location import _object as publish

def die(self):
    os.kill(os.getpid(), signal.SIGKILL)

publish.ObjectPublisher.settle = die
with Store.open(sys.argv[1], read_only=True) as s:
    s.export_parquet(sys.argv[2])
"""


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose values file is larger than one upload part (5 MiB): 120 random
    hourly years, so the export uploads it in parts."""
    path = tmp_path_factory.mktemp("big") / "big.h5"
    rng = np.random.default_rng(7)
    with Store.create(path) as s:
        s.add_time_series_bulk(
            [
                {
                    "owner_id": i,
                    "owner_type": "Generator",
                    "owner_category": "Component",
                    "time_series": SingleTimeSeries(
                        datetime(2024, 1, 1), timedelta(hours=1), rng.random(8760), "load"
                    ),
                }
                for i in range(120)
            ]
        )
    return path


def _killed_export(server: Any, store: Path, uri: str) -> None:
    env = {**os.environ, **server.env}
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_AT_COMMIT, str(store), uri], env=env, timeout=300
    )
    assert done.returncode == -9, "the child was to be killed at its commit"


def test_a_killed_export_leaves_uploads_that_the_next_export_aborts(
    s3_server: Any, big: Path
) -> None:
    uri = f"s3://infrastore/dead-{uuid.uuid4().hex[:8]}"
    _killed_export(s3_server, big, uri)
    root = locate(uri, s3_server.options)
    assert root.bucket.listing(root.key) == ({}, [])  # nothing a listing shows...
    left = incomplete_uploads(uri, storage_options=s3_server.options)
    assert left and all(u.key.endswith(".values.parquet") for u in left)  # ...but kept
    args = ["--store", str(big), "export", "-f", "parquet", "--dir", uri]
    again = CliRunner().invoke(cli, args, prog_name=PROG, env=s3_server.env)
    assert again.exit_code == 0, again.stderr
    assert incomplete_uploads(uri, storage_options=s3_server.options) == []
    root.bucket.forget(root.key)
    assert MANIFEST in root.listdir()


def test_abort_uploads_lists_then_aborts_only_the_layouts_files(s3_server: Any, big: Path) -> None:
    uri = f"s3://infrastore/dead-{uuid.uuid4().hex[:8]}"
    _killed_export(s3_server, big, uri)
    # Someone else's upload under the same prefix: not a file of the layout, kept.
    from infrastore_sqlite.interchange.parquet.location.uploads import _client

    client = _client("s3://infrastore", s3_server.options)
    other_key = f"{uri.removeprefix('s3://infrastore/')}/notes.txt"
    other = client.create_multipart_upload(Bucket="infrastore", Key=other_key)
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    env = s3_server.env
    listed = CliRunner().invoke(
        cli, ["-f", "json", "abort-uploads", uri, "--dry-run"], prog_name=PROG, env=env
    )
    assert listed.exit_code == 0, listed.stderr
    doc = json.loads(listed.stdout)
    Draft202012Validator(schema).validate(doc)
    assert doc["aborted"] == 0 and doc["uploads"]
    assert other_key not in {u["key"] for u in doc["uploads"]}
    assert len(incomplete_uploads(uri, storage_options=s3_server.options)) == len(doc["uploads"])
    done = CliRunner().invoke(cli, ["-f", "json", "abort-uploads", uri], prog_name=PROG, env=env)
    assert done.exit_code == 0, done.stderr
    doc2 = json.loads(done.stdout)
    Draft202012Validator(schema).validate(doc2)
    assert doc2["aborted"] == len(doc["uploads"])
    assert incomplete_uploads(uri, storage_options=s3_server.options) == []
    still = client.list_multipart_uploads(Bucket="infrastore", Prefix=other_key)
    assert [u["UploadId"] for u in still.get("Uploads", [])] == [other["UploadId"]]
    client.abort_multipart_upload(Bucket="infrastore", Key=other_key, UploadId=other["UploadId"])


def test_keys_narrow_what_is_aborted(s3_server: Any, big: Path) -> None:
    uri = f"s3://infrastore/dead-{uuid.uuid4().hex[:8]}"
    _killed_export(s3_server, big, uri)
    left = incomplete_uploads(uri, storage_options=s3_server.options)
    assert abort_uploads(uri, storage_options=s3_server.options, keys=["nothing"]) == []
    assert incomplete_uploads(uri, storage_options=s3_server.options) == left
    assert abort_uploads(uri, storage_options=s3_server.options, keys=[left[0].key]) == left[:1]
    assert incomplete_uploads(uri, storage_options=s3_server.options) == left[1:]
    abort_uploads(uri, storage_options=s3_server.options)


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("local-dir", "a local export leaves no uploads"),
        ("gs://bucket/x", "lifecycle rule"),
    ],
)
def test_abort_uploads_refuses_what_it_cannot_list(where: str, said: str) -> None:
    r = CliRunner().invoke(cli, ["abort-uploads", where], prog_name=PROG)
    assert r.exit_code != 0
    assert said in r.stderr
    assert "Traceback" not in r.stderr


def test_an_unreachable_server_is_one_line(s3_server: Any) -> None:
    opts = {**s3_server.options, "aws_endpoint_url": "http://127.0.0.1:9"}
    r = CliRunner().invoke(
        cli,
        ["abort-uploads", "s3://infrastore/x", "--storage-option",
         f"aws_endpoint_url={opts['aws_endpoint_url']}"],
        prog_name=PROG,
        env=s3_server.env,
    )  # fmt: skip
    assert r.exit_code != 0
    assert "aws_endpoint_url" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
