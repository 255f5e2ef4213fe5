"""``bench/flat_views.py --against`` runs end to end: it exports the same store with
another checkout's code (here this one's, in a child process) and reads every flat view
of both files, which give the same rows. Checks the harness, not the speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from repo_root import REPO_ROOT


def test_flat_views_against_a_checkout(tmp_path: Path) -> None:
    out = tmp_path / "flat.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "flat_views.py"),
            "--rows",
            "60",
            "--rounds",
            "1",
            "--against",
            str(REPO_ROOT),
            "--json",
            str(out),
        ],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    names = {v["view"] for v in doc["views"]}
    assert len(names) == 4 and all(n.startswith("flat_SingleTimeSeries_f64_") for n in names)
    for view in doc["views"]:
        assert view["same_rows"], view["view"]
        assert all(t > 0 for k in ("now", "against") for t in view["cpu_s"][k]), view
    assert set(doc["file_bytes"]) == {"now", "against"}
