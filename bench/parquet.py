#!/usr/bin/env python
"""Parquet export, side by side with our SQLite export and a pyarrow floor.

Usage::

    python bench/parquet.py [--quick] [--rounds N] [--json OUT]
    python bench/parquet.py --import [--quick] [--rounds N] [--json OUT]

For each store (built once by ``bench/run.py``'s builders, ours only), three operations
run alternately, each in a fresh child process, ``--rounds`` times:

``sqlite``   ``Store.export_sqlite`` of everything to a new file;
``parquet``  ``Store.export_parquet`` of everything to a new directory;
``floor``    ``bench/parquet_floor.py``: the same arrays read from the store's HDF5 files
             with h5py and the same three tables built and written with pyarrow and the
             export's own writer settings, timed together (what it learns first from
             the catalog and an earlier Parquet export is not timed).

Reported: medians of the per-round ratios sqlite s / parquet s (target >= 2.5) and
parquet s / floor s (target <= 1.3; the floor covers the scalar ``sts`` and ``small``
stores, which the target names, and is left out on ``mixed``), bytes per value row of the Parquet files (target
<= 8 on the 2,000-series store), and the growth of the Parquet export's peak RSS from the
2,000- to the 20,000-series ``small`` store (target <= 50 MB).

With ``--import`` it times the way back instead, each in a fresh child process:

``sqlite``   our ``Store.import_sqlite`` of our SQLite export into a new store;
``parquet``  our ``Store.import_parquet`` of our Parquet export of the same store;
``ref``      the reference's ``import_sqlite`` of its own export of the same data.

Reported: the medians of sqlite s / parquet s (target >= 2) and ref s / parquet s, and the
growth of ``import_parquet``'s peak RSS from 2,000 to 20,000 series (target <= 50 MB).
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
# The builders bench/parquet_floor.py covers (scalar arrays on fixed grids).
FLOOR_BUILDERS = ("sts", "small")
TARGETS = {"vs_sqlite": 2.5, "vs_floor": 1.3, "bytes_per_row": 8.0, "rss_growth_mb": 50.0}
IMPORT_OPS = ("sqlite", "parquet", "ref")
IMPORT_TARGETS = {"vs_sqlite": 2.0, "rss_growth_mb": 50.0}


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
    ops = OPS if builder in FLOOR_BUILDERS else OPS[:2]
    runs: dict[str, list[dict]] = {op: [] for op in ops}
    for r in range(rounds):
        order = ops if r % 2 == 0 else tuple(reversed(ops))
        for op in order:
            res = run_op(runner, op, store, src)
            runs[op].append(res)
            runner.log(f"  {op:8} {builder} n={n} round {r + 1}: {res['seconds']:.3f} s")
    return runs


def run_import(runner: Runner, op: str, builder: str, n: int) -> dict[str, Any]:
    """One import round: ``op`` is ``sqlite``, ``parquet`` (ours) or ``ref``."""
    scratch = runner.workdir / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    impl = "ref" if op == "ref" else "ours"
    spec: dict[str, Any] = {"impl": impl, "builder": builder, "n": n}
    try:
        if op == "parquet":
            store = runner.ensure_store("ours", builder, n)
            src = keep_parquet(runner, store, runner.home("ours", builder, n))
            rows = runner.ensure_export("ours", builder, n)["rows"]
            spec.update(op="import_parquet", src=str(src), rows=rows)
        else:
            exp = runner.ensure_export(impl, builder, n)
            spec.update(op="import", db=exp["db"], rows=exp["rows"])
        res = runner.child({**spec, "out": str(scratch / "imported.h5")})
        want = len(json.loads(Path(runner.ensure_store(impl, builder, n)["ids"]).read_text()))
        if res["series"] != want:  # a partial import would look fast
            raise SystemExit(f"{op} import gave {res['series']} series of {want}")
        return res
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure_import(runner: Runner, builder: str, n: int, rounds: int) -> dict[str, Any]:
    runs: dict[str, list[dict]] = {op: [] for op in IMPORT_OPS}
    for r in range(rounds):
        order = IMPORT_OPS if r % 2 == 0 else tuple(reversed(IMPORT_OPS))
        for op in order:
            res = run_import(runner, op, builder, n)
            runs[op].append(res)
            runner.log(f"  import {op:7} {builder} n={n} round {r + 1}: {res['seconds']:.3f} s")
    sq, par, ref = (runs[op] for op in IMPORT_OPS)
    return {
        "rows": par[0]["rows"],
        "sqlite_s": statistics.median(r["seconds"] for r in sq),
        "parquet_s": statistics.median(r["seconds"] for r in par),
        "ref_s": statistics.median(r["seconds"] for r in ref),
        "vs_sqlite": statistics.median(
            a["seconds"] / b["seconds"] for a, b in zip(sq, par, strict=True)
        ),
        "vs_ref": statistics.median(
            c["seconds"] / b["seconds"] for b, c in zip(par, ref, strict=True)
        ),
        "parquet_peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in par),
    }


def main_import(runner: Runner, size: str, rounds: int) -> dict[str, Any]:
    results = [
        {"store": label, **measure_import(runner, b, n, rounds)} for label, b, n in STORES[size]
    ]
    builder, lo, hi = MEMORY[size]
    peaks = {
        n: statistics.median(
            run_import(runner, "parquet", builder, n)["peak_rss_mb"] for _ in range(rounds)
        )
        for n in (lo, hi)
    }
    print(
        f"{'store':10} {'rows':>10} {'sqlite s':>9} {'parquet s':>9} {'ref s':>8} "
        f"{'x sqlite':>8} {'x ref':>8}"
    )
    for r in results:
        print(
            f"{r['store']:10} {r['rows']:>10,} {r['sqlite_s']:>9.3f} {r['parquet_s']:>9.3f} "
            f"{r['ref_s']:>8.3f} {r['vs_sqlite']:>8.2f} {r['vs_ref']:>8.2f}"
        )
    growth = peaks[hi] - peaks[lo]
    print(f"Parquet import peak RSS growth {lo:,} -> {hi:,} series: {growth:+.1f} MB")
    return {
        "results": results,
        "rss_growth_mb": {"from": lo, "to": hi, "growth": growth},
        "targets": IMPORT_TARGETS,
    }


def summarize(label: str, runs: dict[str, list[dict]]) -> dict[str, Any]:
    sq, pq_, fl = runs["sqlite"], runs["parquet"], runs.get("floor", [])
    par = pq_[0]
    return {
        "store": label,
        "rows": par["rows"],
        "sqlite_s": statistics.median(r["seconds"] for r in sq),
        "parquet_s": statistics.median(r["seconds"] for r in pq_),
        "floor_s": statistics.median(r["seconds"] for r in fl) if fl else None,
        "vs_sqlite": statistics.median(
            a["seconds"] / b["seconds"] for a, b in zip(sq, pq_, strict=False)
        ),
        "vs_floor": statistics.median(
            b["seconds"] / c["seconds"] for b, c in zip(pq_, fl, strict=False)
        )
        if fl
        else None,
        "bytes_per_row": par["db_bytes"] / par["rows"],
        "values_bytes_per_row": par["values_bytes"] / par["rows"],
        "sqlite_bytes_per_row": sq[0]["db_bytes"] / sq[0]["rows"],
        "parquet_peak_rss_mb": max(r["peak_rss_mb"] for r in pq_),
    }


def _fmt(value: float | None, width: int, spec: str) -> str:
    """A figure, or ``-`` where the floor was left out."""
    return f"{'-' if value is None else format(value, spec):>{width}}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small stores (a harness check)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per operation")
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--workdir", help="keep stores here (default: a temporary directory)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument(
        "--import",
        dest="import_",
        action="store_true",
        help="time import_parquet against import_sqlite and the reference",
    )
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
    if args.import_:
        try:
            doc = {"rounds": rounds, "quick": args.quick, **main_import(runner, size, rounds)}
        finally:
            if tmp is not None:
                tmp.cleanup()
        if args.json:
            Path(args.json).write_text(json.dumps(doc, indent=1))
        return 0
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
            f"{_fmt(r['floor_s'], 8, '.3f')} {r['vs_sqlite']:>8.2f} {_fmt(r['vs_floor'], 8, '.2f')} "
            f"{r['bytes_per_row']:>6.2f} {r['sqlite_bytes_per_row']:>12.2f}"
        )
    print(f"Parquet export peak RSS growth {lo:,} -> {hi:,} series: {growth:+.1f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
