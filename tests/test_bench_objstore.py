"""bench/objstore.py (both modes) runs end to end at a tiny size (the lead runs it full
size, alone): every ratio it reports is a finite positive number."""

from __future__ import annotations

import json
import math
from pathlib import Path

from repo_root import run_bench


def test_objstore_bench_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "objstore.json"
    proc = run_bench("objstore.py", "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert [r["store"] for r in doc["results"]] == ["sts 20"]
    for r in doc["results"]:
        assert r["rows"] > 0
        for key in ("export_s3_over_local", "import_s3_over_local", "import_rss_ratio"):
            assert math.isfinite(r[key]) and r[key] > 0, key


def test_objstore_bench_jobs_mode_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "jobs.json"
    proc = run_bench("objstore.py", "--jobs", "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())["jobs"]
    assert result["partitions"] == 8 and result["rows"] > 0
    assert math.isfinite(result["speedup"]) and result["speedup"] > 0
