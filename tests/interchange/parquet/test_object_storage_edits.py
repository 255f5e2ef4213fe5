"""Edits in object storage come back (issue 36, Must 3), against the real S3 server: a file
an engine wrote over (Polars ``write_parquet`` to the ``s3://`` URI) is an edit, not an
incomplete copy — ``diff`` names it as changed since the export and says its hashes are
stale, with a ``rehash --dir s3://…`` that runs as printed; ``rehash`` rewrites the arrays
file in place and the manifest last; ``add --replace`` then files the edited values. A
file cut short (its footer no longer reads) is still refused as incomplete.
"""

from __future__ import annotations

import json
import re
import shlex
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from varied_store import add, new_store, sts

from infrastore_sqlite import Store
from infrastore_sqlite.cli import PROG, cli
from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.parquet import import_parquet
from infrastore_sqlite.interchange.parquet.location import MANIFEST, locate

STEM = "SingleTimeSeries.f64.utc"


def _export(tmp_path: Path, server: Any) -> tuple[Path, str]:
    path = tmp_path / "src.h5"
    s = new_store(path)
    for k in range(5):
        add(s, sts("load", np.arange(48.0) + 100 * k), owner=k + 1)
    uri = f"s3://infrastore/edits-{uuid.uuid4().hex[:8]}"
    s.export_parquet(uri, storage_options=server.options)
    s.close()
    return path, uri


def _run(*args: str, env: dict | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), prog_name=PROG, env=env)


def _manifest(uri: str, server: Any) -> dict[str, int]:
    root = locate(uri, server.options)
    return {f["name"]: f["size"] for f in json.loads((root / MANIFEST).read_bytes())["files"]}


def _sizes(uri: str, server: Any) -> dict[str, int]:
    root = locate(uri, server.options)
    return dict(root.bucket.listing(root.key)[0])


def _contents(uri: str, server: Any) -> dict[str, bytes]:
    root = locate(uri, server.options)
    return {n: (root / n).read_bytes() for n in root.bucket.listing(root.key)[0]}


def test_an_engines_edit_in_object_storage_comes_back(s3_server: Any, tmp_path: Path) -> None:
    store, uri = _export(tmp_path, s3_server)
    values = f"{uri}/{STEM}.values.parquet"
    df = pl.read_parquet(values, storage_options=s3_server.options)
    df.with_columns(value=pl.col("value") * 2).write_parquet(
        values, storage_options=s3_server.options
    )
    assert (
        _sizes(uri, s3_server)[f"{STEM}.values.parquet"]
        != _manifest(uri, s3_server)[f"{STEM}.values.parquet"]
    )
    # diff: the file changed since the export, its hashes are stale, and the command it
    # names runs as printed (in the environment that reaches the server).
    env = s3_server.env
    r = _run("--store", str(store), "-f", "json", "diff", "--parquet", uri, env=env)
    assert r.exit_code == 0, r.stderr
    items = json.loads(r.stdout)["items"]
    assert len(items) == 5 and all(e["hash_stale"] for e in items)
    assert f"{values} changed since the export" in r.stderr
    (command,) = re.findall(r"`infrastore-sqlite (rehash [^`]*)`", r.stderr)
    assert f"--dir {uri}" in command
    before = _contents(uri, s3_server)
    r = _run("-f", "json", *shlex.split(command), env=env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["rehashed"] == 5
    after = _contents(uri, s3_server)
    # The arrays file rewritten (the values and series files too when the new hashes
    # renumber the arrays), and the manifest, last, lists what rehash wrote.
    manifest = _manifest(uri, s3_server)
    rewritten = {n for n in after if n != MANIFEST and after[n] != before[n]}
    assert f"{STEM}.arrays.parquet" in rewritten
    assert all(manifest[n] == len(after[n]) for n in rewritten)
    r = _run("--store", str(store), "-f", "json", "add", "--parquet", uri, "--replace", env=env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["replaced"] == 5
    with Store.open(store, read_only=True) as s:
        got = sorted(s.read_by_id(m["id"]).data[1] for m in s.list_metadata())
    assert got == [2 * (1.0 + 100 * k) for k in range(5)]


def test_a_file_cut_short_is_still_refused_as_incomplete(s3_server: Any, tmp_path: Path) -> None:
    store, uri = _export(tmp_path, s3_server)
    root = locate(uri, s3_server.options)
    key = root / f"{STEM}.values.parquet"
    key.put(key.read_bytes()[:-200], overwrite=True)
    root.bucket.forget(root.key)
    with Store.open(store) as s, pytest.raises(InvalidParameterError, match="incomplete"):
        import_parquet(s, uri, storage_options=s3_server.options)
