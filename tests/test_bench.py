"""The benchmark harness runs end to end (``bench/run.py --quick``).

Checks the harness, not the speed: the run exits 0, its JSON parses, every scenario has
every operation for both implementations, and every per-round ratio is a positive finite
number. Needs the reference implementation (``infrastore`` 0.15.1) installed.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from repo_root import REPO_ROOT, run_bench

pytest.importorskip("infrastore")

pytestmark = pytest.mark.interop

SCENARIO_OPS = {
    "sts": {"export", "import", "add", "read"},
    "mixed": {"export", "import", "add", "read"},
    "small": {"export", "import", "add", "read"},
    "memory": {"export", "import"},
}
IMPLS = {"ours", "ref"}
FLOOR_OPS = {"export", "import"}  # bench/sqlite_floor.py runs beside these


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "tmp.json"
    return run_bench("run.py", "--json", str(out), cwd=tmp), out


def test_quick_run_exits_zero(quick_run):
    proc, _ = quick_run
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert "speedup" in proc.stdout.lower()


def test_json_has_every_op_of_every_scenario_for_both_implementations(quick_run):
    proc, out = quick_run
    assert out.exists(), proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["failures"] == []
    seen: dict[str, set[tuple[str, str]]] = {}
    for rec in doc["results"]:
        seen.setdefault(rec["scenario"], set()).add((rec["op"], rec["impl"]))
    for scenario, ops in SCENARIO_OPS.items():
        want = {(op, impl) for op in ops for impl in IMPLS} | {
            (op, "floor") for op in ops & FLOOR_OPS
        }
        assert seen.get(scenario) == want, scenario


def test_ours_over_floor_is_reported_per_round(quick_run):
    _, out = quick_run
    doc = json.loads(out.read_text())
    for rec in doc["results"]:
        where = (rec["scenario"], rec["size"], rec["op"], rec["impl"])
        if rec["op"] in FLOOR_OPS:
            assert len(rec["floor_ratio"]) == doc["meta"]["rounds"], where
            assert all(math.isfinite(r) and r > 0 for r in rec["floor_ratio"]), where
        else:
            assert rec["floor_ratio"] == [], where
    targets = {t["target"] for t in doc["targets"]}
    assert "export ours / floor, small quick (n=1000)" in targets
    assert "read speedup, small quick (n=1000)" in targets


def test_every_ratio_is_positive_and_finite(quick_run):
    _, out = quick_run
    doc = json.loads(out.read_text())
    for rec in doc["results"]:
        where = (rec["scenario"], rec["size"], rec["op"], rec["impl"])
        assert rec["ratio"], where
        assert len(rec["ratio"]) == len(rec["seconds"]) == doc["meta"]["rounds"], where
        for r in rec["ratio"]:
            assert isinstance(r, float) and math.isfinite(r) and r > 0, (where, r)
        for s in rec["seconds"]:
            assert math.isfinite(s) and s > 0, where
        assert rec["rows"] > 0, where
        assert rec["rss_mb"] and all(m > 0 for m in rec["rss_mb"]), where
        if rec["op"] == "export":
            assert rec["db_bytes"] > 0, where


def test_memory_growth_is_reported(quick_run):
    _, out = quick_run
    doc = json.loads(out.read_text())
    pairs = {(m["op"], m["impl"]) for m in doc["memory"] if m["growth_mb"] is not None}
    assert pairs == {(op, impl) for op in ("export", "import") for impl in IMPLS}


def test_scenarios_are_deterministic():
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    try:
        import scenarios
    finally:
        sys.path.remove(str(REPO_ROOT / "bench"))
    for builder in scenarios.BUILDERS:
        n = scenarios.SIZES[builder]["quick"]
        a, b = scenarios.specs(builder, n), scenarios.specs(builder, n)
        assert len(a) == len(b) > 0
        for x, y in zip(a, b, strict=True):
            assert (x.kind, x.owner_id, x.owner_type, x.rows) == (
                y.kind,
                y.owner_id,
                y.owner_type,
                y.rows,
            )
            for u, v in zip(x.args, y.args, strict=True):
                if hasattr(u, "shape"):
                    assert u.tobytes() == v.tobytes()
                else:
                    assert u == v


@pytest.mark.parametrize(
    ("mode", "keys"),
    [
        ([], ("sqlite_s", "parquet_s", "floor_s", "vs_sqlite", "vs_floor", "bytes_per_row")),
        (["--import"], ("sqlite_s", "parquet_s", "ref_s", "vs_sqlite", "vs_ref")),
    ],
    ids=["export", "import"],
)
def test_parquet_bench_runs_end_to_end(tmp_path: Path, mode: list[str], keys: tuple) -> None:
    """bench/parquet.py [--import] --quick: every store has its timings, finite ratios
    (the floor's on the scalar stores it covers; on ``mixed`` it is left out)."""
    out = tmp_path / "parquet.json"
    proc = run_bench("parquet.py", *mode, "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert [r["store"] for r in doc["results"]] == ["sts 100", "mixed 4", "small 1k"]
    for r in doc["results"]:
        for k in keys:
            if k in ("floor_s", "vs_floor") and r["store"].startswith("mixed"):
                assert r[k] is None, (r["store"], k)
                continue
            assert math.isfinite(r[k]) and r[k] > 0, (r["store"], k)
        assert r["rows"] > 0
    assert math.isfinite(doc["rss_growth_mb"]["growth"])


def test_parquet_floor_writes_the_export_files_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Parquet floor reads the arrays from the store's HDF5 files and writes the
    export's three files again, byte for byte (same tables, row groups and writer
    settings), over row groups cut at array boundaries, two grids and several segments."""
    from datetime import UTC, datetime

    import numpy as np

    from infrastore_sqlite import SingleTimeSeries, Store
    from infrastore_sqlite.interchange.parquet import export as parquet_export
    from infrastore_sqlite.interchange.parquet import layout as parquet_layout

    sys.path.insert(0, str(REPO_ROOT / "bench"))
    try:
        import parquet_floor
    finally:
        sys.path.remove(str(REPO_ROOT / "bench"))
    # Groups of at most 1,000 rows, for the export and the floor alike.
    monkeypatch.setattr(parquet_export, "ROW_GROUP_ROWS", 1000)
    monkeypatch.setattr(parquet_layout, "ROW_GROUP_ROWS", 1000)
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    with Store.create(tmp_path / "s.h5") as store:
        for k in range(3):  # one write each: arrays in three segments
            series = SingleTimeSeries(t0, "PT1H", np.arange(700.0) + k, f"a{k}")
            store.add_time_series(1, "Gen", 0, series)
        store.add_time_series(1, "Gen", 0, SingleTimeSeries(t0, "PT2H", np.arange(500.0), "b"))
    with Store.open(tmp_path / "s.h5", read_only=True) as store:
        store.export_parquet(tmp_path / "src")
    write, rows = parquet_floor.prepare(str(tmp_path / "s.h5"), str(tmp_path / "src"))
    write(str(tmp_path / "floor"))
    assert rows == 3 * 700 + 500
    names = sorted(p.name for p in (tmp_path / "src").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "floor").iterdir()) and len(names) == 3
    for name in names:
        assert (tmp_path / "floor" / name).read_bytes() == (tmp_path / "src" / name).read_bytes()


def test_sqlite_floor_writes_the_export_tables_again(tmp_path: Path) -> None:
    """The export floor writes exactly the tables, indexes and views of the export it is
    given (both of its routes: grids computed from the row number, coordinates through
    temporary tables), and the import floor reads every value row back, one array each."""
    import sqlite3
    from datetime import UTC, datetime

    import numpy as np

    from infrastore_sqlite import Deterministic, NonSequentialTimeSeries, SingleTimeSeries, Store

    sys.path.insert(0, str(REPO_ROOT / "bench"))
    try:
        import sqlite_floor
    finally:
        sys.path.remove(str(REPO_ROOT / "bench"))
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    special = np.array([np.nan, 0.25, np.inf, -np.inf, 1.5, 2.0])  # (-0.0: no SQLite REAL)
    with Store.create(tmp_path / "s.h5") as store:
        for k in range(5):  # equal grids: one run; a sixth on its own grid
            store.add_time_series(1, "Gen", 0, SingleTimeSeries(t0, "PT1H", special + k, f"s{k}"))
        store.add_time_series(1, "Gen", 0, SingleTimeSeries(t0, "PT2H", special, "other"))
        stamps = [t0, t0.replace(hour=3), t0.replace(hour=4)]
        store.add_time_series(1, "Gen", 0, NonSequentialTimeSeries(stamps, special[:3], "n"))
        windows = np.arange(8.0).reshape(2, 4)
        store.add_time_series(
            1, "Gen", 0, Deterministic(t0, "PT1H", "PT2H", "PT1H", 4, windows, "d")
        )
        parts = store.export_sqlite(tmp_path / "x.db")
    write, rows = sqlite_floor.prepare_export(str(tmp_path / "x.db"))
    assert rows == sum(p["rows"] for p in parts) > 0
    write(str(tmp_path / "floor.db"))
    a, b = sqlite3.connect(tmp_path / "x.db"), sqlite3.connect(tmp_path / "floor.db")
    schema = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    assert a.execute(schema).fetchall() == b.execute(schema).fetchall()
    for (name,) in a.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        sql = f'SELECT *, typeof(rowid) FROM "{name}" ORDER BY rowid'
        assert a.execute(sql).fetchall() == b.execute(sql).fetchall(), name
    assert sqlite_floor.read_back(str(tmp_path / "x.db")) == rows


SCALE_OPS = ("add", "read", "export", "import", "export_parquet", "import_parquet", "info")
SCALE_REF_OPS = {"add", "read", "export", "import"}  # the reference has no Parquet, no CLI


def test_scale_bench_reports_every_column(tmp_path: Path) -> None:
    """bench/scale.py --quick: both stores, every op (the reference's beside ours where it
    has one), each with finite seconds, CPU seconds, rows/s and peak RSS, wall and CPU
    speedups for the shared ops, and the RSS growth of every op judged by target 2."""
    out, md = tmp_path / "scale.json", tmp_path / "scale.md"
    proc = run_bench("scale.py", "--json", str(out), "--markdown", str(md), cwd=tmp_path)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    doc = json.loads(out.read_text())
    assert doc["failures"] == []
    seen = {(r["n"], r["op"], r["impl"]) for r in doc["results"]}
    want = {
        (n, op, impl)
        for n in (200, 1000)
        for op in SCALE_OPS
        for impl in (("ours", "ref") if op in SCALE_REF_OPS else ("ours",))
    }
    assert seen == want
    for rec in doc["results"]:
        where = (rec["n"], rec["op"], rec["impl"])
        assert rec["error"] is None, where
        for key in ("seconds_median", "cpu_seconds_median", "rows_per_s", "rss_mb_median"):
            assert math.isfinite(rec[key]) and rec[key] > 0, (where, key)
        ratios = ("ratio_median", "cpu_ratio_median")
        for key in ratios:
            if rec["op"] in SCALE_REF_OPS:
                assert math.isfinite(rec[key]) and rec[key] > 0, (where, key)
            else:
                assert rec[key] is None, (where, key)
        if rec["op"] == "read":
            assert rec["series"] == min(rec["n"], 1000), where
        elif rec["op"] != "add":
            assert rec["series"] == rec["n"], where
    judged = {m["op"] for m in doc["memory"] if m["met"] is not None}
    assert judged == {"export", "import", "export_parquet", "import_parquet", "info"}
    for m in doc["memory"]:
        assert list(m["rss_mb"]) == ["200", "1000"], m
    for line in ("speedup", "CPU speedup", "peak RSS growth"):
        assert line in proc.stdout and line in md.read_text(), line


def test_against_runs_this_package_at_a_git_ref_beside_the_others(tmp_path: Path) -> None:
    """``--against HEAD``: a third implementation, this package as committed, built and
    measured in the same rounds; ours is compared with it per round ('vs base')."""
    out = tmp_path / "against.json"
    proc = run_bench(
        "run.py", "--only", "sts", "--ops", "export", "--rounds", "2", "--against", "HEAD",
        "--json", str(out), "--workdir", str(tmp_path / "wd"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    head = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert doc["meta"]["against"] == head
    impls = {r["impl"]: r for r in doc["results"]}
    assert set(impls) == {"ours", "ref", "base", "floor"}
    assert len(impls["base"]["seconds"]) == 2 and impls["base"]["rows"] == impls["ours"]["rows"]
    vs = impls["ours"]["vs_base"]
    assert len(vs) == 2 and all(math.isfinite(x) and x > 0 for x in vs)
    assert "vs base" in proc.stdout
    # The base's sources were unpacked from git, and its stores are its own.
    assert (tmp_path / "wd" / f"base-src-{head[:12]}" / "infrastore_sqlite").is_dir()
    assert (tmp_path / "wd" / f"base-{head[:12]}" / "sts-100").is_dir()


def test_against_refuses_a_ref_that_is_not_a_commit(tmp_path: Path) -> None:
    proc = run_bench("run.py", "--against", "no-such-ref-xyz", cwd=tmp_path)
    assert proc.returncode != 0
    assert "--against: 'no-such-ref-xyz' is not a commit" in proc.stderr


def test_billion_runs_every_operation_and_states_the_disk_first(tmp_path: Path) -> None:
    """``scale.py --billion --quick``: the store built, then exported to Parquet on disk, to
    the local S3 server and to SQLite, each a record with its rows, times and peak RSS."""
    out = tmp_path / "billion.json"
    proc = run_bench("scale.py", "--billion", "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = proc.stdout.splitlines()[0]
    assert first.startswith("--billion: 200 series x 8,760 values = 1,752,000 values; disk needed")
    doc = json.loads(out.read_text())
    ops = [r["op"] for r in doc["results"]]
    assert ops == [
        "add (build)",
        "export -> Parquet (local)",
        "export -> Parquet (S3)",
        "export -> SQLite",
    ]
    for r in doc["results"]:
        assert r["rows"] == 200 * 8760 and r["seconds"] > 0 and r["peak_rss_mb"] > 0
    sizes = {r["op"]: r.get("store_bytes") or r.get("out_bytes") for r in doc["results"]}
    assert sizes["add (build)"] > 200 * 8760 * 8  # every f64 value stored
    assert sizes["export -> SQLite"] > 0 and sizes["export -> Parquet (local)"] > 0
