#!/usr/bin/env python
"""Parquet export, side by side with our SQLite export and a pyarrow floor.

Usage::

    python bench/parquet.py [--quick] [--rounds N] [--json OUT]

For each store (built once by ``bench/run.py``'s builders, ours only), three operations
run alternately, each in a fresh child process, ``--rounds`` times:

``sqlite``   ``Store.export_sqlite`` of everything to a new file;
``parquet``  ``Store.export_parquet`` of everything to a new directory;
``floor``    pyarrow writing the same tables (read back from a Parquet export first, not
             timed) from memory with the export's own writer settings.

Reported: medians of the per-round ratios sqlite s / parquet s (target >= 2.5) and
parquet s / floor s (target <= 1.5), bytes per value row of the Parquet files (target
<= 8 on the 2,000-series store), and the growth of the Parquet export's peak RSS from the
2,000- to the 20,000-series ``small`` store (target <= 50 MB).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run import Runner  # noqa: E402

# (label, builder, n); the first is the 2,000-series store the bytes target names.
STORES = {
    "full": [("sts 2,000", "sts", 2000), ("mixed 40", "mixed", 40), ("small 2k", "small", 2000)],
    "quick": [("sts 100", "sts", 100), ("mixed 4", "mixed", 4), ("small 1k", "small", 1000)],
}
MEMORY = {"full": ("small", 2000, 20000), "quick": ("small", 200, 1000)}
OPS = ("sqlite", "parquet", "floor")
TARGETS = {"vs_sqlite": 2.5, "vs_floor": 1.5, "bytes_per_row": 8.0, "rss_growth_mb": 50.0}


def run_op(runner: Runner, op: str, store: dict[str, Any], src: Path | None) -> dict[str, Any]:
    scratch = runner.workdir / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        spec: dict[str, Any] = {"impl": "ours", "builder": "-", "n": 0, **store}
        if op == "sqlite":
            spec.update(op="export", out=str(scratch / "export.db"))
        elif op == "parquet":
            spec.update(op="export_parquet", out=str(scratch / "parquet"))
        else:
            spec.update(op="parquet_floor", src=str(src), out=str(scratch / "floor"))
        return runner.child(spec)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def keep_parquet(runner: Runner, store: dict[str, Any], home: Path) -> Path:
    """One Parquet export kept as the floor's source tables."""
    src = home / "parquet-src"
    if not src.exists():
        spec = {"impl": "ours", "builder": "-", "n": 0, **store}
        runner.child({**spec, "op": "export_parquet", "out": str(src)})
    return src


def measure(runner: Runner, builder: str, n: int, rounds: int) -> dict[str, list[dict]]:
    store = runner.ensure_store("ours", builder, n)
    src = keep_parquet(runner, store, runner.home("ours", builder, n))
    runs: dict[str, list[dict]] = {op: [] for op in OPS}
    for r in range(rounds):
        order = OPS if r % 2 == 0 else tuple(reversed(OPS))
        for op in order:
            res = run_op(runner, op, store, src)
            runs[op].append(res)
            runner.log(f"  {op:8} {builder} n={n} round {r + 1}: {res['seconds']:.3f} s")
    return runs


def summarize(label: str, runs: dict[str, list[dict]]) -> dict[str, Any]:
    sq, pq_, fl = (runs[op] for op in OPS)
    par = pq_[0]
    return {
        "store": label,
        "rows": par["rows"],
        "sqlite_s": statistics.median(r["seconds"] for r in sq),
        "parquet_s": statistics.median(r["seconds"] for r in pq_),
        "floor_s": statistics.median(r["seconds"] for r in fl),
        "vs_sqlite": statistics.median(
            a["seconds"] / b["seconds"] for a, b in zip(sq, pq_, strict=False)
        ),
        "vs_floor": statistics.median(
            b["seconds"] / c["seconds"] for b, c in zip(pq_, fl, strict=False)
        ),
        "bytes_per_row": par["db_bytes"] / par["rows"],
        "values_bytes_per_row": par["values_bytes"] / par["rows"],
        "sqlite_bytes_per_row": sq[0]["db_bytes"] / sq[0]["rows"],
        "parquet_peak_rss_mb": max(r["peak_rss_mb"] for r in pq_),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small stores (a harness check)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per operation")
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--workdir", help="keep stores here (default: a temporary directory)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    size = "quick" if args.quick else "full"
    rounds = args.rounds or (1 if args.quick else 3)
    tmp = None
    if args.workdir:
        workdir = Path(args.workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="infrastore-bench-parquet-")
        workdir = Path(tmp.name)
    runner = Runner(workdir, verbose=not args.quiet)
    try:
        results = [summarize(label, measure(runner, b, n, rounds)) for label, b, n in STORES[size]]
        builder, lo, hi = MEMORY[size]
        peaks = {}
        for n in (lo, hi):
            store = runner.ensure_store("ours", builder, n)
            peaks[n] = [
                run_op(runner, "parquet", store, None)["peak_rss_mb"] for _ in range(rounds)
            ]
        growth = statistics.median(peaks[hi]) - statistics.median(peaks[lo])
    finally:
        if tmp is not None:
            tmp.cleanup()
    doc = {
        "rounds": rounds,
        "quick": args.quick,
        "results": results,
        "rss_growth_mb": {"from": lo, "to": hi, "growth": growth},
        "targets": TARGETS,
    }
    head = f"{'store':10} {'rows':>10} {'sqlite s':>9} {'parquet s':>9} {'floor s':>8} {'x sqlite':>8} {'/ floor':>8} {'B/row':>6} {'SQLite B/row':>12}"
    print(head)
    for r in results:
        print(
            f"{r['store']:10} {r['rows']:>10,} {r['sqlite_s']:>9.3f} {r['parquet_s']:>9.3f} "
            f"{r['floor_s']:>8.3f} {r['vs_sqlite']:>8.2f} {r['vs_floor']:>8.2f} "
            f"{r['bytes_per_row']:>6.2f} {r['sqlite_bytes_per_row']:>12.2f}"
        )
    print(f"Parquet export peak RSS growth {lo:,} -> {hi:,} series: {growth:+.1f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
