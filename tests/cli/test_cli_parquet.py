"""``export -f parquet --dir DIR`` on the command line: the files, the summary (table and
JSON against schemas/cli/), the usage errors, refusals without a traceback, the progress
bar on a terminal, and the message when pyarrow is missing."""

# The fixtures come from test_cli_contract (imported by name, which ruff reads as a
# redefinition wherever a test names one).
# ruff: noqa: F811

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_cli_contract import _on_a_terminal, check, demo, pristine, registry, run  # noqa: F401

from infrastore_sqlite.interchange.parquet.export import SUMMARY_KEYS


def test_export_writes_the_files_and_prints_one_row_per_partition(demo: str, tmp_path: Path):
    out = tmp_path / "pq"
    r = run("--store", demo, "export", "-f", "parquet", "--dir", str(out))
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["values_file", "series", "arrays", "rows"]
    assert len(lines) - 1 == len(list(out.glob("*.values.parquet")))
    table = pq.read_table(out / "SingleTimeSeries.f64.utc.values.parquet")
    assert table.num_rows > 0


def test_summary_json_matches_its_schemas(registry, demo: str, tmp_path: Path):
    out = str(tmp_path / "pq")
    dry = run("--store", demo, "export", "-f", "parquet", "--dir", out, "--dry-run",
              "--summary", "json")  # fmt: skip
    assert dry.exit_code == 0, dry.stderr
    doc = json.loads(dry.stdout)
    check(registry, "export-parquet-dry-run.json", doc)
    assert doc["dir"] == out and not Path(out).exists()
    r = run("--store", demo, "export", "-f", "parquet", "--dir", out, "--summary", "json")
    parts = json.loads(r.stdout)
    check(registry, "export-parquet.json", parts)
    assert [list(p) for p in parts] == [list(SUMMARY_KEYS)] * len(parts)
    assert [p["values_file"] for p in parts] == [p["values_file"] for p in doc["partitions"]]
    assert all(Path(p["values_file"]).exists() for p in parts)
    none = run("--store", demo, "export", "-f", "parquet", "--dir", str(tmp_path / "n"),
               "--name", "none", "--summary", "json")  # fmt: skip
    check(registry, "export-parquet.json", json.loads(none.stdout))
    assert json.loads(none.stdout) == [] and "matched no series" in none.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--db", "x.db"], "--db names a SQLite database"),
        (["--dir", "d", "--db", "x.db"], "--db names a SQLite database"),
        (["--dir", "d", "--table-prefix", "run1_"], "--table-prefix names SQLite tables"),
        ([], "export -f parquet needs --dir DIR"),
    ],
)
def test_usage_errors(demo: str, tmp_path: Path, monkeypatch, args: list[str], message: str):
    monkeypatch.chdir(tmp_path)
    r = run("--store", demo, "export", "-f", "parquet", *args)
    assert r.exit_code == 2 and message in r.stderr
    assert not (tmp_path / "d").exists() and not (tmp_path / "x.db").exists()


def test_existing_file_is_refused_naming_it(demo: str, tmp_path: Path) -> None:
    out = tmp_path / "pq"
    out.mkdir()
    (out / "singletimeseries.f64.utc.values.parquet").write_text("mine")
    r = run("--store", demo, "export", "-f", "parquet", "--dir", str(out))
    assert r.exit_code == 1
    assert "singletimeseries.f64.utc.values.parquet" in r.stderr and "Traceback" not in r.stderr
    assert os.listdir(out) == ["singletimeseries.f64.utc.values.parquet"]


def test_without_pyarrow_the_error_names_the_install_command(pristine: Path, tmp_path: Path):
    code = (
        "import sys; sys.modules['pyarrow'] = None; "
        "from infrastore_sqlite.cli import main; "
        f"main(['--store', {str(pristine)!r}, 'export', '-f', 'parquet', '--dir', 'pq'])"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "pip install 'infrastore-sqlite[parquet]'" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "pq").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_progress_bar_only_on_a_terminal(pristine: Path, tmp_path: Path) -> None:
    code, out, err = _on_a_terminal(
        ["--store", str(pristine), "export", "-f", "parquet", "--dir", "t"], tmp_path
    )
    assert code == 0 and out.splitlines()[0].startswith("values_file")
    assert "export:" in err and "%" in err
    code, out, err = _on_a_terminal(
        ["--store", str(pristine), "-q", "export", "-f", "parquet", "--dir", "q"], tmp_path
    )
    assert code == 0 and err == ""


# ---------------------------------------------------------------------- add --parquet
def _exported(demo: str, tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "pq"
    r = run("--store", demo, "export", "-f", "parquet", "--dir", str(out), *extra)
    assert r.exit_code == 0, r.stderr
    return out


def _fresh(tmp_path: Path, name: str = "copy.h5") -> str:
    path = str(tmp_path / name)
    assert run("--store", path, "init").exit_code == 0
    return path


def test_add_parquet_imports_every_partition_and_reports_json(registry, demo: str, tmp_path):
    out = _exported(demo, tmp_path)
    dst = _fresh(tmp_path)
    dry = run("--store", dst, "-f", "json", "add", "--parquet", str(out), "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    check(registry, "add.json", json.loads(dry.stdout))
    r = run("--store", dst, "-f", "json", "add", "--parquet", str(out))
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    check(registry, "add.json", doc)
    listed = json.loads(run("--store", demo, "-f", "json", "list").stdout)["items"]
    assert doc["added"] == len(doc["ids"]) == json.loads(dry.stdout)["would_add"] == len(listed)
    assert {p["status"] for p in doc["partitions"]} == {"committed"}
    again = run("--store", dst, "-f", "json", "add", "--parquet", str(out), "--ignore")
    assert json.loads(again.stdout)["skipped"] == len(listed)


def test_add_parquet_sets_the_derived_partition_aside(registry, tmp_path: Path) -> None:
    from infrastore_sqlite import SingleTimeSeries, Store

    src = Store.create(tmp_path / "s.h5")
    from datetime import UTC, datetime

    import numpy as np

    src.add_time_series(
        1, "Gen", "Component",
        SingleTimeSeries(datetime(2024, 1, 1, tzinfo=UTC), "PT1H", np.arange(8.0), "x"),
    )  # fmt: skip
    src.transform_single_time_series("PT2H", "PT1H", resolution="PT1H")
    src.export_parquet(tmp_path / "pq", include_derived=True)
    src.close()
    dst = _fresh(tmp_path)
    r = run("--store", dst, "-f", "json", "add", "--parquet", str(tmp_path / "pq"))
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    check(registry, "add.json", doc)
    assert doc["added"] == 1
    assert doc["set_aside"][0]["name"].startswith("DeterministicSingleTimeSeries.")
    stem = tmp_path / "pq" / doc["set_aside"][0]["name"]
    r = run("--store", dst, "add", "--parquet", str(stem))
    assert r.exit_code != 0
    assert "import the SingleTimeSeries and run `infrastore-sqlite transform`" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--table-prefix", "run1_"], "--table-prefix cannot be used with --parquet"),
        (["--interval", "PT1H"], "--interval cannot be used with --parquet"),
        (["--layout", "wide"], "--layout cannot be used with --parquet"),
        (["--sqlite", "x.db"], "exactly one source"),
    ],
)
def test_add_parquet_usage_errors(demo: str, tmp_path: Path, args: list[str], message: str):
    out = _exported(demo, tmp_path)
    r = run("--store", _fresh(tmp_path), "add", "--parquet", str(out), *args)
    assert r.exit_code == 2
    assert message in r.stderr


def test_add_parquet_checksum_refusal_names_rehash_dir(demo: str, tmp_path: Path) -> None:
    out = _exported(demo, tmp_path)
    arrays = out / "SingleTimeSeries.f64.utc.arrays.parquet"
    t = pq.read_table(arrays)
    import pyarrow as pa

    # Wrong hashes that still ascend with the ids, as the arrays file's keys must.
    t = t.set_column(1, "data_hash", pa.array([f"{i:064x}" for i in range(t.num_rows)]))
    pq.write_table(t, arrays)
    dst = _fresh(tmp_path)
    r = run("--store", dst, "add", "--parquet", str(out))
    assert r.exit_code != 0
    assert f"infrastore-sqlite rehash --dir {out}" in r.stderr
    assert "--no-checksum" in r.stderr
    assert "partition(s) before it were committed" in r.stderr
    r = run("--store", dst, "add", "--parquet", str(out), "--ignore", "--no-checksum")
    assert r.exit_code == 0, r.stderr
