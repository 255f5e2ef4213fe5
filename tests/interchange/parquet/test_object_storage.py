"""The Parquet form in object storage, against a real S3 server (SeaweedFS, tests/s3server.py).

An export to ``s3://`` writes the same bytes as to a local directory, plus a manifest put
last; the import reads it back to the same store; the CLI takes the URI and the AWS_*
environment or ``--storage-option``; a failed export leaves nothing a listing shows; the
faults (server stopped, wrong credentials, missing bucket or key, truncated object) are
refused in one line naming the URI.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from varied_store import new_store, snapshot, varied_store_file

from infrastore_sqlite import Store
from infrastore_sqlite.cli import PROG, cli
from infrastore_sqlite.errors import (
    InvalidParameterError,
    MissingDependencyError,
    StorageError,
)
from infrastore_sqlite.interchange.parquet import export as export_mod
from infrastore_sqlite.interchange.parquet import export_parquet, import_parquet
from infrastore_sqlite.interchange.parquet.diff import diff_parquet
from infrastore_sqlite.interchange.parquet.location import MANIFEST, locate
from infrastore_sqlite.interchange.parquet.location import _object as object_mod

#: Fail fast once the server is gone (obstore's default is 10 tries over 3 minutes).
QUICK = {"max_retries": "1", "retry_timeout": "2"}


def _prefix() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def _objects(server: Any, prefix: str) -> dict[str, int]:
    """Every object under ``prefix`` as a fresh listing shows it (name → size)."""
    return dict(locate(f"s3://infrastore/{prefix}", server.options).bucket.listing(prefix)[0])


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return varied_store_file(tmp_path_factory.mktemp("varied") / "varied.h5")


@pytest.fixture(scope="module")
def exported(varied: Path, s3_server: Any, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The varied store exported once to a local directory and once to the server."""
    local = tmp_path_factory.mktemp("local") / "pq"
    prefix = _prefix()
    with Store.open(varied, read_only=True) as s:
        export_parquet(s, local)
        parts = export_parquet(s, f"s3://infrastore/{prefix}/", storage_options=s3_server.options)
    return {"local": local, "prefix": prefix, "parts": parts}


def test_export_writes_the_local_bytes_and_a_manifest_last(exported: dict, s3_server: Any) -> None:
    objects = _objects(s3_server, exported["prefix"])
    local = {p.name: p for p in exported["local"].iterdir()}
    assert set(objects) == {*local, MANIFEST}
    root = locate(f"s3://infrastore/{exported['prefix']}", s3_server.options)
    for name, path in local.items():
        assert (root / name).read_bytes() == path.read_bytes(), name
    manifest = json.loads((root / MANIFEST).read_bytes())
    assert {f["name"]: f["size"] for f in manifest["files"]} == {
        n: p.stat().st_size for n, p in local.items()
    }
    assert len(manifest["partitions"]) == len(exported["parts"])
    # Each partition's values file comes after its series and arrays files.
    roles = [f["role"] for f in manifest["files"]]
    assert roles == ["series", "arrays", "values"] * len(exported["parts"])
    assert exported["parts"][0]["values_file"].startswith(f"s3://infrastore/{exported['prefix']}/")


def _contents(store: Store) -> dict:
    """identity -> (metadata, the values' dtype, shape and bytes): every bit compared."""
    out = {}
    for key, (meta, series) in snapshot(store).items():
        data = np.ascontiguousarray(np.asarray(series.data))
        out[key] = (meta, str(data.dtype), data.shape, data.tobytes())
    return out


def test_import_from_the_server_equals_the_local_import(
    exported: dict, varied: Path, s3_server: Any, tmp_path: Path
) -> None:
    with Store.open(varied, read_only=True) as src:
        count = len(snapshot(src, derived=False))
    local, remote = new_store(tmp_path / "local.h5"), new_store(tmp_path / "remote.h5")
    try:
        import_parquet(local, exported["local"])
        uri = f"s3://infrastore/{exported['prefix']}"
        ids = import_parquet(remote, uri, storage_options=s3_server.options)
        assert len(ids) == count
        assert _contents(remote) == _contents(local)
        # Unchanged since: diff says so for every series.
        entries = diff_parquet(remote, uri, storage_options=s3_server.options)
        assert len(entries) == count
        assert {e["change"] for e in entries} == {"unchanged"}
    finally:
        local.close()
        remote.close()


def test_one_partition_by_its_stem_or_file(exported: dict, s3_server: Any, tmp_path: Path) -> None:
    stem = "SingleTimeSeries.f64.utc"
    base = f"s3://infrastore/{exported['prefix']}/{stem}"
    for uri in (base, f"{base}.values.parquet"):
        dst = new_store(tmp_path / f"{uuid.uuid4().hex}.h5")
        try:
            ids = import_parquet(dst, uri, storage_options=s3_server.options)
            assert ids and len(ids) == len(dst.list_metadata())
        finally:
            dst.close()


def test_the_cli_takes_the_uri_and_the_aws_environment(
    exported: dict, varied: Path, s3_server: Any, tmp_path: Path
) -> None:
    runner = CliRunner()
    prefix = _prefix()
    uri = f"s3://infrastore/{prefix}/"
    args = ["--store", str(varied), "export", "-f", "parquet", "--dir", uri]
    result = runner.invoke(cli, args, prog_name=PROG, env=s3_server.env)
    assert result.exit_code == 0, result.stderr
    # Again: refused, naming the prefix and --overwrite; with it, done.
    again = runner.invoke(cli, args, prog_name=PROG, env=s3_server.env)
    assert again.exit_code != 0
    assert f"s3://infrastore/{prefix}" in again.stderr and "--overwrite" in again.stderr
    assert "Traceback" not in again.stderr
    over = runner.invoke(cli, [*args, "--overwrite"], prog_name=PROG, env=s3_server.env)
    assert over.exit_code == 0, over.stderr
    # The import with the options given as flags instead of the environment.
    flags = [f"--storage-option={k}={v}" for k, v in s3_server.options.items()]
    store = tmp_path / "cli.h5"
    new_store(store).close()
    add = ["--store", str(store), "add", "--parquet", uri, *flags]
    result = runner.invoke(cli, add, prog_name=PROG, env={"AWS_ACCESS_KEY_ID": None})
    assert result.exit_code == 0, result.stderr
    with Store.open(store, read_only=True) as s, Store.open(varied, read_only=True) as src:
        assert len(s.list_metadata()) == len(snapshot(src, derived=False))
    diff = ["--store", str(store), "diff", "--parquet", uri, *flags]
    result = runner.invoke(cli, diff, prog_name=PROG)
    assert result.exit_code == 0, result.stderr
    assert "0 added, 0 replaced" in result.stderr
    # rehash takes the URI and the same flags; nothing was edited, nothing written.
    rehash = runner.invoke(cli, ["-f", "json", "rehash", "--dir", uri, *flags], prog_name=PROG)
    assert rehash.exit_code == 0, rehash.stderr
    assert json.loads(rehash.stdout)["rehashed"] == 0


def test_a_bad_storage_option_is_refused_in_the_callers_words(varied: Path) -> None:
    args = ["--store", str(varied), "export", "-f", "parquet", "--dir", "s3://b/p"]
    result = CliRunner().invoke(cli, [*args, "--storage-option", "aws_region"], prog_name=PROG)
    assert result.exit_code != 0
    assert "--storage-option 'aws_region' is not KEY=VALUE" in result.stderr


def test_overwrite_replaces_a_local_directory_s_files(varied: Path, tmp_path: Path) -> None:
    target = tmp_path / "pq"
    with Store.open(varied, read_only=True) as s:
        export_parquet(s, target)
        with pytest.raises(InvalidParameterError, match="overwrite=True"):
            export_parquet(s, target)
        before = {p.name: p.read_bytes() for p in target.iterdir()}
        (target / "SingleTimeSeries.f64.utc.values.parquet").write_bytes(b"stale")
        export_parquet(s, target, overwrite=True)
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before


def test_a_failed_export_leaves_nothing_a_listing_shows(
    varied: Path, s3_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure comes after some partitions are complete (their uploads done) and one
    is half encoded: all of them are gone, and a second run succeeds."""
    real = export_mod._write_table
    calls = {"n": 0}

    def failing(pa: Any, pq_: Any, table: Any, sink: Any, where: str, role: str) -> None:
        calls["n"] += 1
        if calls["n"] == 7:  # the fourth partition's series file
            with export_mod._storage_errors(where):
                raise OSError("disk on fire")
        real(pa, pq_, table, sink, where, role)

    monkeypatch.setattr(export_mod, "_write_table", failing)
    prefix = _prefix()
    uri = f"s3://infrastore/{prefix}/"
    with Store.open(varied, read_only=True) as s:
        with pytest.raises(StorageError, match=f"writing s3://infrastore/{prefix}/.*disk on fire"):
            export_parquet(s, uri, storage_options=s3_server.options)
        assert _objects(s3_server, prefix) == {}
        monkeypatch.setattr(export_mod, "_write_table", real)
        export_parquet(s, uri, storage_options=s3_server.options)
    assert MANIFEST in _objects(s3_server, prefix)


def test_an_object_put_while_the_export_runs_is_refused_not_replaced(
    varied: Path, s3_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer puts a series file's key after the export checked the prefix: the
    file's create-only put refuses it in the caller's words, the other writer's object
    stays as it was, and nothing of the export is left; with overwrite=True it is replaced."""
    prefix = _prefix()
    uri = f"s3://infrastore/{prefix}/"
    name = "SingleTimeSeries.f64.utc.series.parquet"
    real_begin = object_mod.ObjectPublisher.begin

    def begin_then_intrude(self: Any) -> None:
        real_begin(self)
        (self.target / name).put(b"another writer's")

    monkeypatch.setattr(object_mod.ObjectPublisher, "begin", begin_then_intrude)
    with Store.open(varied, read_only=True) as s:
        with pytest.raises(InvalidParameterError) as err:
            export_parquet(s, uri, storage_options=s3_server.options)
        assert f"{uri}{name} appeared while the export ran" in str(err.value)
        assert "overwrite=True" in str(err.value)
        assert err.value.render("cli").count("--overwrite") == 1
        assert _objects(s3_server, prefix) == {name: len(b"another writer's")}
        root = locate(uri, s3_server.options)
        assert (root / name).read_bytes() == b"another writer's"
        monkeypatch.setattr(object_mod.ObjectPublisher, "begin", real_begin)
        export_parquet(s, uri, storage_options=s3_server.options, overwrite=True)
    assert (root / name).read_bytes() != b"another writer's"
    assert MANIFEST in _objects(s3_server, prefix)


@pytest.mark.parametrize(
    ("options", "uri", "words", "said"),
    [
        (
            {"aws_secret_access_key": "wrong"},
            "s3://infrastore/{p}/",
            "s3://infrastore/{p}",
            "(HTTP 403 Forbidden); check the credentials: AWS_ACCESS_KEY_ID",
        ),
        (
            {},
            "s3://no-such-bucket-{p}/x/",
            "s3://no-such-bucket-{p}/x",
            "(HTTP 404 Not Found); check the bucket (it must exist)",
        ),
        (
            {"aws_endpoint_url": "http://127.0.0.1:9"},  # the discard port: nothing listens
            "s3://infrastore/{p}/",
            "s3://infrastore/{p}",
            "(nothing answers at http://127.0.0.1:9: connection refused); check the endpoint",
        ),
    ],
    ids=["wrong credentials", "missing bucket", "no server"],
)
def test_export_refuses_bad_credentials_and_a_missing_bucket(
    varied: Path, s3_server: Any, options: dict, uri: str, words: str, said: str
) -> None:
    p = _prefix()
    opts = {**s3_server.options, **QUICK, **options}
    with Store.open(varied, read_only=True) as s, pytest.raises(StorageError) as err:
        export_parquet(s, uri.format(p=p), storage_options=opts)
    message = str(err.value)
    # One line: the URI, what the server said (not obstore's request dump), what to check.
    assert words.format(p=p) in message and said in message and "\n" not in message
    assert "<?xml" not in message and "GET http" not in message
    if "storage_options={...}" in message:  # the caller's words: the CLI names its flag
        assert "--storage-option KEY=VALUE" in err.value.render("cli")
    assert _objects(s3_server, p) == {}


def test_import_refuses_a_missing_key_and_wrong_credentials(
    exported: dict, s3_server: Any, tmp_path: Path
) -> None:
    dst = new_store(tmp_path / "x.h5")
    try:
        missing = f"s3://infrastore/{exported['prefix']}/NoSuch.f64.utc"
        with pytest.raises(InvalidParameterError, match="neither a directory, a file nor"):
            import_parquet(dst, missing, storage_options=s3_server.options)
        wrong = {**s3_server.options, **QUICK, "aws_secret_access_key": "wrong"}
        uri = f"s3://infrastore/{exported['prefix']}"
        with pytest.raises(StorageError, match=r"s3://infrastore/.*credentials") as err:
            import_parquet(dst, uri, storage_options=wrong)
        assert "\n" not in str(err.value)
        assert dst.list_metadata() == []
    finally:
        dst.close()


def test_a_truncated_object_is_refused(exported: dict, s3_server: Any, tmp_path: Path) -> None:
    """Truncated after the export: the manifest names it; without the manifest the
    footer does not read, and the refusal names the object."""
    prefix = _prefix()
    src = locate(f"s3://infrastore/{exported['prefix']}", s3_server.options)
    dst = locate(f"s3://infrastore/{prefix}", s3_server.options)
    stem = "SingleTimeSeries.f64.utc"
    for role in ("values", "series", "arrays"):
        data = (src / f"{stem}.{role}.parquet").read_bytes()
        (dst / f"{stem}.{role}.parquet").put(data[:-100] if role == "values" else data)
    manifest = json.loads((src / MANIFEST).read_bytes())
    manifest["files"] = [f for f in manifest["files"] if f["partition"] == stem]
    (dst / MANIFEST).put(json.dumps(manifest).encode())
    store = new_store(tmp_path / "t.h5")
    try:
        uri = f"s3://infrastore/{prefix}"
        with pytest.raises(InvalidParameterError, match=f"{uri}/{stem}.values.parquet holds"):
            import_parquet(store, uri, storage_options=s3_server.options)
        (dst / MANIFEST).delete()
        dst.bucket.forget(dst.key)
        with pytest.raises(StorageError, match=f"reading {uri}/{stem}.values.parquet"):
            import_parquet(store, uri, storage_options=s3_server.options)
        assert store.list_metadata() == []
    finally:
        store.close()


def test_missing_obstore_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "obstore", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'infrastore-sqlite\[cloud\]'"):
        locate("s3://bucket/prefix")
    # A local path or file:// needs none of it.
    assert str(locate("file:///tmp/x")) == str(Path("/tmp/x"))


def test_a_file_is_read_by_range_not_downloaded(
    s3_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a 16 MB file asks for its footer (a ranged read near its end), not the
    whole object; reading a row group asks for its bytes and at most a window more; a
    read that goes on where the last request ended asks for a larger one (fewer
    requests), a jump elsewhere for a small one again."""
    import pyarrow as pa

    from infrastore_sqlite.interchange.parquet.location import _object as storage

    root = locate(f"s3://infrastore/{_prefix()}", s3_server.options)
    rng = np.random.default_rng(7)
    table = pa.table({"value": rng.random(2_000_000)})
    with root.join("big.parquet").upload() as up:
        pq.write_table(table, up, row_group_size=100_000)
    asked: list[tuple[int, int]] = []
    real = storage._Ranged._request

    def counting(self: Any, start: int, end: int) -> Any:
        asked.append((start, end))
        return real(self, start, end)

    monkeypatch.setattr(storage._Ranged, "_request", counting)
    obj = root / "big.parquet"
    pf = pq.ParquetFile(obj.open_input())
    assert pf.metadata.num_row_groups == 20
    size = obj.size()
    assert size is not None and size > 15_000_000
    assert len(asked) == 1 and asked[0][1] == size  # the footer, at the end
    assert asked[0][1] - asked[0][0] <= storage._FIRST_WINDOW
    first = pf.read_row_group(0).column("value").to_numpy()
    assert np.array_equal(first, table.column("value").to_numpy()[:100_000])
    group = pf.metadata.row_group(0).total_byte_size
    assert sum(e - s for s, e in asked[1:]) <= group + storage._FIRST_WINDOW
    # Front to back, in a stream of 64 KiB reads: each request twice the one before.
    asked.clear()
    stream = obj.open_input()
    whole = b"".join(iter(lambda: stream.read(64 << 10), b""))
    assert len(whole) == size and whole == obj.read_bytes()
    sizes = [e - s for s, e in asked]
    assert [s for s, _ in asked] == [sum(sizes[:k]) for k in range(len(sizes))]
    assert sizes[:3] == [
        storage._FIRST_WINDOW,
        2 * storage._FIRST_WINDOW,
        4 * storage._FIRST_WINDOW,
    ]
    doublings = (storage._MAX_WINDOW // storage._FIRST_WINDOW).bit_length()
    assert len(asked) <= 1 + doublings + size // storage._MAX_WINDOW
    # A jump back to the start: one small request again, then the bytes from there.
    asked.clear()
    stream.seek(10)
    assert stream.read(100) == whole[10:110]
    assert asked == [(10, 10 + storage._FIRST_WINDOW)]


def test_a_response_cut_off_midway_is_asked_for_again_once(
    s3_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streamed response that breaks after its first piece is asked for again from
    where it broke (the bytes read are the object's); one that breaks again is a
    StorageError naming the object."""
    from infrastore_sqlite.interchange.parquet.location import _object as storage

    root = locate(f"s3://infrastore/{_prefix()}", s3_server.options)
    data = np.random.default_rng(3).bytes(3 * storage._FIRST_WINDOW)
    with root.join("cut.bin").upload() as up:
        up.write(data)
    real = storage._Ranged._request
    #: How each next request breaks: after its first piece, or at once; None: it does not.
    breaks: list[str] = ["after one"]

    asked: list[int] = []

    def cut(self: Any, start: int, end: int) -> Any:
        asked.append(start)
        pieces = real(self, start, end)
        how = breaks.pop(0) if breaks else None
        if how is None:
            return pieces

        def broken() -> Any:
            if how == "after one":
                yield next(pieces)
            raise OSError("connection reset")

        return broken()

    monkeypatch.setattr(storage._Ranged, "_request", cut)
    stream = (root / "cut.bin").open_input()
    assert stream.read(len(data)) == data
    assert breaks == [] and len(asked) == 2 and 0 < asked[1] < len(data)  # from the break
    breaks[:] = ["after one", "at once"]
    stream = (root / "cut.bin").open_input()
    with pytest.raises(StorageError, match=r"reading s3://infrastore/.*cut\.bin failed"):
        stream.read(len(data))


# ------------------------------------------------------------------ engines read in place
STEM = "SingleTimeSeries.f64.utc"
JOIN = """
    SELECT s.name, s.owner_id, epoch_ms(v.timestamp) AS t, v.value
    FROM '{base}.values.parquet' v JOIN '{base}.series.parquet' s USING (array_id)
    ORDER BY ALL
"""


def _duckdb(server: Any) -> Any:
    import glob
    import os

    import duckdb
    import duckdb_extension_httpfs

    folder = os.path.dirname(duckdb_extension_httpfs.__file__)
    con = duckdb.connect()
    con.load_extension(glob.glob(f"{folder}/extensions/*/httpfs.duckdb_extension")[0])
    con.execute(
        "CREATE SECRET (TYPE s3, KEY_ID ?, SECRET ?, REGION 'us-east-1', ENDPOINT ?, "
        "URL_STYLE 'path', USE_SSL false)",
        [
            server.options["aws_access_key_id"],
            server.options["aws_secret_access_key"],
            server.endpoint.removeprefix("http://"),
        ],
    )
    return con


def _pyarrow_s3(server: Any) -> Any:
    import pyarrow.fs as pafs

    return pafs.S3FileSystem(
        access_key=server.options["aws_access_key_id"],
        secret_key=server.options["aws_secret_access_key"],
        region="us-east-1",
        endpoint_override=server.endpoint,
    )


def test_duckdb_reads_the_export_in_place(exported: dict, s3_server: Any) -> None:
    con = _duckdb(s3_server)
    remote = f"s3://infrastore/{exported['prefix']}"
    local = str(exported["local"])
    got = con.execute(JOIN.format(base=f"{remote}/{STEM}")).fetchall()
    # Compared as text: the values hold a NaN, which equals nothing.
    assert got and repr(got) == repr(con.execute(JOIN.format(base=f"{local}/{STEM}")).fetchall())
    # Many partitions at once, joined on the partition as well as array_id.
    many = """
        SELECT replace(v.filename, '{root}', '') AS file, s.name, count(*) AS n, sum(v.value)
        FROM read_parquet('{root}/*.f64.*.values.parquet', filename = true, union_by_name = true) v
        JOIN read_parquet('{root}/*.f64.*.series.parquet', filename = true, union_by_name = true) s
          ON s.array_id = v.array_id
         AND replace(s.filename, '.series.parquet', '') = replace(v.filename, '.values.parquet', '')
        GROUP BY ALL ORDER BY ALL
    """
    rows = con.execute(many.format(root=remote)).fetchall()
    assert len({r[0] for r in rows}) > 3
    assert repr(rows) == repr(con.execute(many.format(root=local)).fetchall())


def test_polars_reads_the_export_in_place(exported: dict, s3_server: Any) -> None:
    import polars as pl

    def join(base: str, **kw: Any) -> Any:
        values = pl.scan_parquet(f"{base}.values.parquet", **kw)
        series = pl.scan_parquet(f"{base}.series.parquet", **kw)
        return (
            values.join(series.select("array_id", "owner_id", "name"), on="array_id")
            .sort("owner_id", "name", "timestamp")
            .collect()
        )

    remote = join(f"s3://infrastore/{exported['prefix']}/{STEM}", storage_options=s3_server.options)
    assert remote.height > 0
    assert remote.equals(join(str(exported["local"] / STEM)))


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # inside dask, not ours
def test_pyarrow_dataset_and_dask_read_the_export_in_place(exported: dict, s3_server: Any) -> None:
    import dask.dataframe as dd
    import pyarrow.dataset as ds

    s3 = _pyarrow_s3(s3_server)
    remote = f"infrastore/{exported['prefix']}"

    def arrow_join(base: str, fs: Any = None) -> Any:
        values = ds.dataset(f"{base}.values.parquet", filesystem=fs).to_table()
        series = ds.dataset(f"{base}.series.parquet", filesystem=fs).to_table(
            columns=["array_id", "owner_id", "name"]
        )
        joined = values.join(series, "array_id")
        keys = ("owner_id", "name", "array_id", "timestamp")
        return joined.sort_by([(k, "ascending") for k in keys])

    got = arrow_join(f"{remote}/{STEM}", s3).to_pydict()
    assert got["value"] and repr(got) == repr(arrow_join(str(exported["local"] / STEM)).to_pydict())
    # A whole prefix as one dataset: the manifest is skipped by its name.
    names = {Path(f).name for f in ds.dataset(remote, filesystem=s3).files}
    assert MANIFEST not in names and len(names) == 3 * len(exported["parts"])

    def dask_join(base: str, fs: Any = None) -> Any:
        kw = {"filesystem": fs} if fs is not None else {}
        values = dd.read_parquet(f"{base}.values.parquet", **kw)
        series = dd.read_parquet(
            f"{base}.series.parquet", columns=["array_id", "owner_id", "name"], **kw
        )
        out = values.merge(series, on="array_id").compute()
        keys = ["owner_id", "name", "array_id", "timestamp"]
        return out.sort_values(keys).reset_index(drop=True)

    remote_df = dask_join(f"s3://{remote}/{STEM}", s3)
    assert len(remote_df) > 0
    assert remote_df.equals(dask_join(str(exported["local"] / STEM)))


def test_credentials_come_from_an_aws_profile(
    exported: dict, s3_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No keys given nor in the environment: the profile's, from the shared files."""
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_REGION"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "credentials").write_text(
        f"[bench]\naws_access_key_id = {s3_server.options['aws_access_key_id']}\n"
        f"aws_secret_access_key = {s3_server.options['aws_secret_access_key']}\n"
    )
    (tmp_path / "config").write_text(
        f"[profile bench]\nregion = us-east-1\nendpoint_url = {s3_server.endpoint}\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    root = f"s3://infrastore/{exported['prefix']}"
    with pytest.raises(StorageError):  # the default profile has no keys
        locate(root, {"aws_allow_http": "true", **QUICK}).listdir()
    monkeypatch.setenv("AWS_PROFILE", "bench")
    names = locate(root, {"aws_allow_http": "true"}).listdir()
    assert MANIFEST in names
    # ... and the option names a profile as well.
    monkeypatch.delenv("AWS_PROFILE")
    assert locate(root, {"aws_allow_http": "true", "aws_profile": "bench"}).listdir() == names


def test_a_file_uri_is_the_local_path(exported: dict, tmp_path: Path) -> None:
    dst = new_store(tmp_path / "f.h5")
    try:
        ids = import_parquet(dst, exported["local"].as_uri())
        assert ids and len(ids) == len(dst.list_metadata())
    finally:
        dst.close()


def test_an_abandoned_multipart_upload_leaves_no_object(s3_server: Any) -> None:
    """Three parts sent, then abandoned (what an export does with its open uploads on a
    failure): no listing shows the object, and a complete one of the same size appears."""
    root = locate(f"s3://infrastore/{_prefix()}", s3_server.options)
    data = np.random.default_rng(3).bytes(40 << 20)
    up = (root / "big.bin").upload()
    up.write(data)
    up.abort()
    assert root.listdir() == []
    with (root / "big.bin").upload() as up:
        up.write(data)
    root.bucket.forget(root.key)
    assert (root / "big.bin").size() == len(data)
