#!/usr/bin/env python
"""Issue 36's targets: a partition read from a directory of part files, and ``query``.

Usage::

    python bench/parts_query.py [--quick] [--rounds N] [--json OUT]

``parts``  import of one partition (``sts`` builder, 2,000 series of 8,760 hourly rows:
           17.5 M rows, 500 distinct arrays... see ``scenarios.py``) whose values file is
           8 part files (cut at equal row counts, so arrays continue across parts, as
           Dask's ``repartition`` or Spark's ``orderBy`` cut them), against the same rows
           in one file written by the same writer (pyarrow's defaults, as an engine
           writes them); each import in a fresh child process, alternating. Reported:
           the median of parts s / one s (target <= 1.15) and of the peak RSS
           difference (target <= +20 MB).
``query``  ``query --parquet``'s library call (the footers read, the views defined, the
           query run) of ``SELECT owner_id, max(value) FROM all_values_real_static JOIN
           all_series USING (partition_name, array_id) GROUP BY 1`` on the export of
           a ``small`` store of 100,000 series (the issue's 100 k-series export, 16.8 M
           value rows; ``--quick``: 1,000), against the same query written by hand over
           the files in one DuckDB connection; each in a fresh child process, alternating. Reported: the
           median of ours s / hand s (target <= 1.5).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

STORES = {"full": {"parts": ("sts", 2000), "query": ("small", 100000)},
          "quick": {"parts": ("sts", 100), "query": ("small", 1000)}}  # fmt: skip
STEM = "SingleTimeSeries.f64.utc"
SQL = (
    "SELECT owner_id, max(value) FROM all_values_real_static JOIN all_series "
    "USING (partition_name, array_id) GROUP BY 1"
)


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def _cpu() -> float:
    """CPU seconds of this process, every thread (less moved by a loaded machine than
    the wall clock)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """One timed operation (this process is fresh)."""
    if spec["op"] == "import":
        from infrastore_sqlite import Store

        store = Store.create(spec["store"])
        c, t = _cpu(), time.perf_counter()
        store.import_parquet(spec["src"])
        wall, cpu = time.perf_counter() - t, _cpu() - c
        store.close()
        return {"wall": wall, "cpu": cpu, "peak_mb": _peak_mb()}
    if spec["op"] == "ours":
        # DuckDB imported before the clock starts, as the hand-written query's child
        # does (0.1 s here): both time the query, not the import they share.
        import duckdb

        from infrastore_sqlite.interchange.parquet.query import query_parquet

        t = time.perf_counter()
        rows = query_parquet(spec["src"], SQL).fetchall()
        return {"wall": time.perf_counter() - t, "rows": len(rows)}
    import duckdb

    d = spec["src"]
    t = time.perf_counter()
    con = duckdb.connect()
    # As a user types it: the paths in the SQL (the bench's own temporary files).
    rows = con.execute(
        f"SELECT s.owner_id, max(v.value) FROM '{d}/{STEM}.values.parquet' AS v "
        f"JOIN '{d}/{STEM}.series.parquet' AS s USING (array_id) GROUP BY 1"
    ).fetchall()
    return {"wall": time.perf_counter() - t, "rows": len(rows)}


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def build(work: Path, builder: str, n: int) -> Path:
    from scenarios import build_store

    import infrastore_sqlite

    path = work / f"{builder}{n}.h5"
    build_store(infrastore_sqlite, str(path), builder, n)
    return path


def parts_dirs(work: Path, store: Path) -> tuple[Path, Path]:
    """The export, its values file again in one file and in 8 parts, by one writer."""
    import pyarrow.parquet as pq

    from infrastore_sqlite import Store

    out = work / "export"
    with Store.open(store, read_only=True) as s:
        s.export_parquet(out)
    one, parts = work / "one", work / "parts"
    for d in (one, parts):
        d.mkdir()
        for role in ("series", "arrays"):
            shutil.copy(out / f"{STEM}.{role}.parquet", d / f"{STEM}.{role}.parquet")
    t = pq.read_table(out / f"{STEM}.values.parquet")
    pq.write_table(t, one / f"{STEM}.values.parquet")
    (parts / f"{STEM}.values.parquet").mkdir()
    step = -(-t.num_rows // 8)
    for k in range(8):
        piece = t.slice(k * step, step)
        pq.write_table(piece, parts / f"{STEM}.values.parquet" / f"part.{k}.parquet")
    return one, parts


def bench_parts(work: Path, builder: str, n: int, rounds: int) -> dict[str, Any]:
    one, parts = parts_dirs(work, build(work, builder, n))
    rows: dict[str, list[dict[str, Any]]] = {"one": [], "parts": []}
    for r in range(rounds):
        for label, src in (("one", one), ("parts", parts)):
            dst = work / f"dst-{label}-{r}.h5"
            rows[label].append(run_child({"op": "import", "src": str(src), "store": str(dst)}))
            shutil.rmtree(dst, ignore_errors=True)
            with contextlib.suppress(OSError):
                dst.unlink()
    pairs = list(zip(rows["parts"], rows["one"], strict=True))
    out = {
        "store": f"{builder} {n}",
        "one_s": [o["wall"] for o in rows["one"]],
        "parts_s": [p["wall"] for p in rows["parts"]],
        "one_cpu_s": [o["cpu"] for o in rows["one"]],
        "parts_cpu_s": [p["cpu"] for p in rows["parts"]],
        "ratio": statistics.median(p["wall"] / o["wall"] for p, o in pairs),
        "cpu_ratio": statistics.median(p["cpu"] / o["cpu"] for p, o in pairs),
        "rss_delta_mb": statistics.median(p["peak_mb"] - o["peak_mb"] for p, o in pairs),
    }
    print(
        f"parts: {builder} {n}: 8 parts / 1 file = {out['ratio']:.3f}x wall, "
        f"{out['cpu_ratio']:.3f}x CPU (<= 1.15), peak RSS {out['rss_delta_mb']:+.1f} MB (<= +20)"
    )
    return out


def bench_query(work: Path, builder: str, n: int, rounds: int) -> dict[str, Any]:
    from infrastore_sqlite import Store

    with Store.open(build(work, builder, n), read_only=True) as s:
        s.export_parquet(work / "q")
    q: dict[str, list[dict[str, Any]]] = {"ours": [], "hand": []}
    for _ in range(rounds):
        for op in ("ours", "hand"):
            q[op].append(run_child({"op": op, "src": str(work / "q")}))
    assert q["ours"][0]["rows"] == q["hand"][0]["rows"]
    pairs = list(zip(q["ours"], q["hand"], strict=True))
    out = {
        "store": f"{builder} {n}",
        "ours_s": [a["wall"] for a in q["ours"]],
        "hand_s": [b["wall"] for b in q["hand"]],
        "ratio": statistics.median(a["wall"] / b["wall"] for a, b in pairs),
    }
    print(
        f"query: {builder} {n}: query --parquet / hand-written DuckDB = {out['ratio']:.3f}x (<= 1.5)"
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=("parts", "query"))
    ap.add_argument("--json")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    stores = STORES["quick" if args.quick else "full"]
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-parts-") as tmp:
        if args.only != "query":
            result["parts"] = bench_parts(Path(tmp), *stores["parts"], args.rounds)
        if args.only != "parts":
            result["query"] = bench_query(Path(tmp), *stores["query"], max(args.rounds, 5))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
