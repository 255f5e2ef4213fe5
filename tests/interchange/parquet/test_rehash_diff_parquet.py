"""``rehash_parquet`` / ``rehash --dir`` and ``diff_parquet`` / ``diff --parquet``: the edit
loop on Parquet files. Values are edited with pyarrow (as a query engine would), the import
refuses the stale hashes, rehash makes them right again (renumbering the arrays when the new
keys no longer ascend with the ids, merging arrays the edit made equal), and diff says what
importing would change without writing anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from varied_store import add, new_store, sts

from infrastore_sqlite.cli import cli
from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.parquet import rehash_parquet

STEM = "SingleTimeSeries.f64.utc"


def _export(tmp_path: Path, n: int = 5) -> tuple[Path, Path]:
    store_path = tmp_path / "src.h5"
    src = new_store(store_path)
    for k in range(n):
        add(src, sts("x", np.arange(4.0) + k), owner=k)
    src.export_parquet(tmp_path / "out")
    src.close()
    return store_path, tmp_path / "out"


def _edit(out: Path, fn) -> None:
    path = out / f"{STEM}.values.parquet"
    t = pq.read_table(path)
    aid = t.column("array_id").to_numpy()
    val = t.column("value").to_numpy().copy()
    fn(aid, val)
    i = t.schema.get_field_index("value")
    pq.write_table(t.set_column(i, t.schema.field("value"), pa.array(val)), path)


def _firsts(store, ids) -> list[float]:
    return sorted(float(store.read_by_id(i).data[0]) for i in ids)


def test_rehash_after_an_edit_lets_the_import_check_again(tmp_path: Path) -> None:
    _, out = _export(tmp_path)

    def edit(aid, val):
        val[aid == 1] = val[aid == 3]  # array 1 becomes array 3: the two keys become one
        val[aid == 2] += 100

    _edit(out, edit)
    with pytest.raises(InvalidParameterError, match="does not match its recorded data_hash"):
        new_store(tmp_path / "refused.h5").import_parquet(out)
    assert rehash_parquet(out) == 2
    assert rehash_parquet(out) == 0  # nothing left to fix
    arrays = pq.read_table(out / f"{STEM}.arrays.parquet")
    assert arrays.column("id").to_pylist() == [1, 2, 3, 4]
    keys = list(
        zip(*(arrays.column(c).to_pylist() for c in ("data_hash", "time_axis")), strict=True)
    )
    assert keys == sorted(keys)
    assert (arrays.schema.metadata or {})[b"infrastore:role"] == b"arrays"
    dst = new_store(tmp_path / "dst.h5")
    ids = dst.import_parquet(out)
    assert len(ids) == 5 and dst.num_distinct_arrays() == 4
    firsts = _firsts(dst, ids)
    assert len(set(firsts)) == 4 and max(firsts) >= 100


def test_rehash_refuses_what_the_import_refuses_and_writes_nothing(tmp_path: Path) -> None:
    _, out = _export(tmp_path)
    path = out / f"{STEM}.values.parquet"
    t = pq.read_table(path)
    ms = t.column("timestamp").cast(pa.int64()).to_numpy().copy()
    ms[1] += 60_000
    i = t.schema.get_field_index("timestamp")
    field = t.schema.field("timestamp")
    pq.write_table(t.set_column(i, field, pa.array(ms).cast(field.type)), path)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(InvalidParameterError, match="between two steps"):
        rehash_parquet(out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def _run(*args: str) -> object:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_cli_rehash_dir_and_diff_parquet(tmp_path: Path) -> None:
    store, out = _export(tmp_path)
    r = _run("--store", str(store), "-f", "json", "diff", "--parquet", str(out))
    assert r.exit_code == 0, r.stderr
    assert {e["change"] for e in json.loads(r.stdout)["items"]} == {"unchanged"}
    assert not any(e["hash_stale"] for e in json.loads(r.stdout)["items"])
    assert "data_hash" not in r.stderr
    _edit(out, lambda aid, val: val.__setitem__(aid == 2, val[aid == 2] * 10))
    # diff compares values with the store's own: no rehash needed first.
    r = _run("--store", str(store), "-f", "json", "diff", "--parquet", str(out), "--exit-code")
    assert r.exit_code == 1
    entries = json.loads(r.stdout)["items"]
    changed = [e for e in entries if e["change"] == "replaced"]
    assert len(changed) == 1 and changed[0]["points"] >= 3
    assert changed[0]["values_table"] == str(out / f"{STEM}.values.parquet")
    assert [e["hash_stale"] for e in entries] == [e["change"] == "replaced" for e in entries]
    (line,) = [ln for ln in r.stderr.splitlines() if "data_hash" in ln]
    assert f"`infrastore-sqlite rehash --dir {out}`" in line
    r = _run("-f", "json", "rehash", "--dir", str(out))
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == {"rehashed": 1, "dir": str(out)}
    r = _run("--store", str(store), "-f", "json", "diff", "--parquet", str(out))
    assert not any(e["hash_stale"] for e in json.loads(r.stdout)["items"])
    assert "data_hash" not in r.stderr
    r = _run("--store", str(store), "-f", "json", "add", "--parquet", str(out), "--replace")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["replaced"] == 1
    for args, message in (
        (["rehash"], "exactly one of --db FILE and --dir DIR"),
        (["rehash", "--dir", str(out), "--table-prefix", "a_"], "--table-prefix cannot be used"),
        (["--store", str(store), "diff"], "exactly one of --sqlite FILE and --parquet PATH"),
    ):
        r = _run(*args)
        assert r.exit_code == 2 and message in r.stderr, r.stderr
