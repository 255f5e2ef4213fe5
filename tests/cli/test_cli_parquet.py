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
