"""bench/scale.py's table of how an operation's CPU cost per row grows with the store
(issue 37's targets: the add 300 k vs 10 k, the SQLite export 300 k vs 100 k and the
``year`` store's SQLite export at 20,000 series vs 1,000, each at most 1.2x)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from repo_root import REPO_ROOT, run_bench


@pytest.fixture(scope="module")
def scale():
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    try:
        import scale
    finally:
        sys.path.remove(str(REPO_ROOT / "bench"))
    return scale


def _rec(builder: str, n: int, op: str, cpu: float, rows: int, impl: str = "ours") -> dict:
    return {
        "builder": builder,
        "n": n,
        "op": op,
        "impl": impl,
        "cpu_seconds_median": cpu,
        "rows": rows,
    }


def test_the_year_export_target_is_judged_from_cpu_per_row(scale) -> None:
    records = [
        _rec("year", 1_000, "export", 2.0, 8_760_000),
        _rec("year", 20_000, "export", 48.0, 175_200_000),  # 1.2x per row: met
        _rec("small", 100_000, "export", 4.0, 16_800_000),
        _rec("small", 300_000, "export", 15.0, 50_400_000),  # 1.25x: missed
        _rec("small", 10_000, "import", 1.0, 1_680_000),
        _rec("small", 300_000, "import", 33.0, 50_400_000),  # no target: reported
        _rec("small", 300_000, "add", 9.0, 50_400_000),  # one size only: nothing
        _rec("year", 20_000, "export", 1.0, 175_200_000, impl="ref"),  # not ours
    ]
    got = {(c["builder"], c["op"]): c for c in scale.cost_growth(records)}
    assert set(got) == {("year", "export"), ("small", "export"), ("small", "import")}
    year = got["year", "export"]
    assert year["n"] == [1_000, 20_000]
    assert math.isclose(year["cost_ratio"], 1.2)
    assert [round(v) for v in year["rows_per_cpu_s"]] == [4_380_000, 3_650_000]
    assert year["target"] == 1.2 and year["met"] is True
    small = got["small", "export"]
    assert math.isclose(small["cost_ratio"], 1.25) and small["met"] is False
    imp = got["small", "import"]
    assert imp["target"] is None and imp["met"] is None
    assert math.isclose(imp["cost_ratio"], 1.1)


def test_scale_run_prints_the_cost_table(tmp_path: Path) -> None:
    """A small run of two ``year`` sizes: the JSON's ``scaling`` and the printed table."""
    out = tmp_path / "scale.json"
    proc = run_bench(
        "scale.py", "--ours-only", "--sizes", "200", "--year-sizes", "20,40", "--ops", "export",
        "--json", str(out), "--workdir", str(tmp_path / "wd"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    (year,) = [c for c in doc["scaling"] if c["builder"] == "year"]
    assert year["op"] == "export" and year["n"] == [20, 40]
    assert year["cost_ratio"] > 0 and year["met"] is None  # no target at this size
    assert "CPU cost per row, smaller -> larger store (issue 37)" in proc.stdout
    assert "20 -> 40" in proc.stdout
