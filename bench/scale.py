#!/usr/bin/env python
"""The ``scale`` scenario (issue 26): ours beside the reference on stores of many series.

Usage::

    python bench/scale.py [--quick] [--year] [--sizes N,N,...] [--rounds N]
                          [--json OUT] [--markdown OUT] [--workdir DIR]
    python bench/scale.py --billion [--quick] [--json OUT] [--workdir DIR]

Stores (``bench/scenarios.py``): by default the ``small`` builder at 10,000, 100,000 and
300,000 series of 168 hourly f64 values, every array distinct; ``--year`` adds the
``year`` builder at 20,000 and 50,000 series of 8,760 values (175 M and 438 M rows).
``--quick`` runs 200 and 1,000 series of 168 values (seconds; tests/test_bench.py).

Each implementation builds its own store once, then every operation runs in a fresh child
process (``bench/child.py``), which reports wall and CPU seconds of the timed
part and the process's peak RSS (``VmHWM``):

``add``             build the series objects, ``add_time_series_bulk`` + ``close`` (timed)
``read``            ``read_by_ids`` of 1,000 ids spread over the store, touch every ``data``
``export``          ``export_sqlite`` of the whole store
``import``          ``import_sqlite`` of the database the same implementation exported
``export_parquet``  ours only: ``export_parquet`` of the whole store
``import_parquet``  ours only: ``import_parquet`` of that export
``info``            ours only: the CLI's ``info`` on the store

Speedup = reference seconds / our seconds (> 1: ours is faster), beside the same ratio on
CPU seconds (less disturbed by other load on the machine). The memory table gives each
operation's peak RSS per store size and its growth from the smallest store to the largest
of the ``small`` builder (issue 26, target 2: at most 50 MB from 10 k to 300 k series).
The cost table gives our CPU seconds per row at the smallest and the largest store of each
builder and op, as rows/s of CPU, and their ratio; issue 37's targets (``COST_TARGETS``:
the add at 300 k vs 10 k series, the SQLite export at 300 k vs 100 k, the ``year``
store's SQLite export at 20,000 series vs 1,000, i.e. 175 M rows vs 9 M; each at most
1.2x) are judged where the run has both sizes, e.g.
``--ours-only --sizes 1000 --year-sizes 1000,20000 --ops export``.

``--billion`` (issue 37): ours alone on 10^9 values, 114,155 series × 8,760 hourly f64,
every array distinct (the ``year`` builder), one partition: the store is built by bulk adds
of 5,000 series (timed), then exported, each in a fresh child process, to Parquet on the
local disk, to Parquet on a local S3 server (SeaweedFS, ``tests/s3server.py``) and to one
SQLite file, one after the other, each output deleted before the next. The disk it needs is
printed first, and the run refuses to start without it. A few minutes alone on 2 cores;
``--quick`` runs 200 series (a harness check; ``tests/test_bench.py``).

The exit status is 0 only if every child run succeeded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import results  # noqa: E402  (bench/results.py: the table renderers)
import run  # noqa: E402  (bench/run.py: the Runner of child processes)
import scenarios  # noqa: E402

OPS = ("add", "read", "export", "import", "export_parquet", "import_parquet", "info")
REF_OPS = frozenset({"add", "read", "export", "import"})  # what the reference can do
DEFAULT_SIZES = (10_000, 100_000, 300_000)
YEAR_SIZES = (20_000, 50_000)
QUICK_SIZES = (200, 1_000)
READ_N = 1_000
GROWTH_TARGET_MB = 50.0
# The operations target 2 holds to flat memory (add and read are reported, not judged).
GROWTH_TARGET_OPS = frozenset({"export", "import", "export_parquet", "import_parquet", "info"})


def _spec(runner: run.Runner, impl: str, builder: str, n: int, op: str) -> dict[str, Any]:
    """The child's spec for one run; exports land in the store's home for the imports."""
    store = runner.ensure_store(impl, builder, n)
    home = runner.home(impl, builder, n)
    scratch = runner.workdir / "scratch"
    spec: dict[str, Any] = {"op": op, "impl": impl, "builder": builder, "n": n}
    if op == "add":
        spec["out"] = str(scratch / "added.h5")
    elif op == "read":
        spec.update(store, limit=READ_N)
    elif op == "export":
        spec.update(store, out=str(scratch / "export.db"))
    elif op == "export_parquet":
        spec.update(store, out=str(scratch / "export.parquet"))
    elif op in ("import", "import_parquet"):
        src = home / ("export.db" if op == "import" else "export.parquet")
        if not src.exists():
            # An import without its export round first (--ops import): make the source.
            _run(runner, impl, builder, n, "export" if op == "import" else "export_parquet")
        rows = json.loads((home / f"{src.name}.rows").read_text())
        key = "db" if op == "import" else "src"
        spec.update({key: str(src), "rows": rows, "out": str(scratch / "imported.h5")})
    elif op == "info":
        summary = scenarios.summary(builder, n)
        spec.update(store, series=summary["series"], rows=summary["rows"])
    return spec


def _run(runner: run.Runner, impl: str, builder: str, n: int, op: str) -> dict[str, Any]:
    """One child run of ``op``; an export's output is kept as the next import's source."""
    # The spec first: an import without its export runs that export (another _run), which
    # clears the scratch directory when it is done.
    spec = _spec(runner, impl, builder, n, op)
    scratch = runner.workdir / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        res = runner.child(spec)
        if op in ("export", "export_parquet"):
            home = runner.home(impl, builder, n)
            name = "export.db" if op == "export" else "export.parquet"
            kept = home / name
            if kept.is_dir():
                shutil.rmtree(kept)
            kept.unlink(missing_ok=True)
            shutil.move(str(scratch / name), kept)
            (home / f"{name}.rows").write_text(json.dumps(res["rows"]))
        if op in ("import", "import_parquet") and res["series"] != _series(builder, n):
            # A partial import would look fast: it must give back every series.
            raise run.ChildError(f"{op} returned {res['series']} ids, not {_series(builder, n)}")
        return res
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _series(builder: str, n: int) -> int:
    return n  # the small and year builders make one series per unit of n


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def measure(
    runner: run.Runner, builder: str, n: int, ops: list[str], rounds: int, ref: bool = True
) -> list[dict[str, Any]]:
    """Every op at one store size: both implementations alternately, ``rounds`` each
    (ours alone with ``ref=False``)."""
    records = []
    for op in ops:
        impls = ["ours", "ref"] if op in REF_OPS and ref else ["ours"]
        runs: dict[str, list[dict[str, Any]]] = {impl: [] for impl in impls}
        errors: dict[str, str] = {}
        for r in range(rounds):
            for impl in impls if r % 2 == 0 else impls[::-1]:
                if impl in errors:
                    continue
                try:
                    res = _run(runner, impl, builder, n, op)
                except run.ChildError as exc:
                    errors[impl] = str(exc)
                    runner._fail("scale", builder, n, op, impl, exc)
                    continue
                runs[impl].append(res)
                runner.log(
                    f"  {op:14} {impl:4} {builder} n={n}: {res['seconds']:.3f} s, "
                    f"cpu {res['cpu_seconds']:.3f} s, peak {res['peak_rss_mb']:.0f} MB"
                )
        wall = _ratios(runs, "seconds")
        cpu = _ratios(runs, "cpu_seconds")
        for impl, rs in runs.items():
            secs = [x["seconds"] for x in rs]
            rows = rs[0]["rows"] if rs else None
            med = _median(secs)
            records.append(
                {
                    "builder": builder,
                    "n": n,
                    "op": op,
                    "impl": impl,
                    "seconds": secs,
                    "seconds_median": med,
                    "cpu_seconds": [x["cpu_seconds"] for x in rs],
                    "cpu_seconds_median": _median([x["cpu_seconds"] for x in rs]),
                    "rows": rows,
                    "series": rs[0].get("series") if rs else None,
                    "rows_per_s": rows / med if rows and med else None,
                    "rss_mb": [round(x["peak_rss_mb"], 1) for x in rs],
                    "rss_mb_median": _median([x["peak_rss_mb"] for x in rs]),
                    "ratio": wall,
                    "ratio_median": _median(wall),
                    "cpu_ratio": cpu,
                    "cpu_ratio_median": _median(cpu),
                    "error": errors.get(impl),
                }
            )
    return records


def _ratios(runs: dict[str, list[dict[str, Any]]], field: str) -> list[float]:
    """Per round, reference over ours (empty for the ops only ours has)."""
    ours, ref = runs.get("ours", []), runs.get("ref", [])
    return [b[field] / a[field] for a, b in zip(ours, ref, strict=False) if a[field] > 0]


def memory_growth(records: list[dict[str, Any]], builder: str) -> list[dict[str, Any]]:
    """Peak RSS per op and implementation at each size of ``builder``, and its growth."""
    out = []
    for op in OPS:
        for impl in ("ours", "ref"):
            by_n = {
                r["n"]: r["rss_mb_median"]
                for r in records
                if r["builder"] == builder and r["op"] == op and r["impl"] == impl
            }
            if len(by_n) < 2 or None in by_n.values():
                continue
            lo, hi = min(by_n), max(by_n)
            growth = by_n[hi] - by_n[lo]
            judged = impl == "ours" and op in GROWTH_TARGET_OPS
            out.append(
                {
                    "op": op,
                    "impl": impl,
                    "rss_mb": {str(k): round(v, 1) for k, v in sorted(by_n.items())},
                    "growth_mb": round(growth, 1),
                    "target_mb": GROWTH_TARGET_MB if judged else None,
                    "met": growth <= GROWTH_TARGET_MB if judged else None,
                }
            )
    return out


# Issue 37's targets on how an operation's CPU cost per row grows with the store:
# (builder, op, smaller n, larger n, the most the larger may cost per row over the smaller).
COST_TARGETS = (
    ("small", "add", 10_000, 300_000, 1.2),
    ("small", "export", 100_000, 300_000, 1.2),
    ("year", "export", 1_000, 20_000, 1.2),
)


def cost_growth(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ours' CPU seconds per row at the smallest and the largest store of each builder
    and op, and their ratio (> 1: the larger store costs more per row; every store of a
    builder has the same values per series, so per row is per series too). A pair that
    :data:`COST_TARGETS` names is judged; other pairs are reported."""
    by: dict[tuple[str, str], dict[int, float]] = {}
    for r in records:
        cpu, rows = r.get("cpu_seconds_median"), r.get("rows")
        if r["impl"] == "ours" and cpu and rows:
            by.setdefault((r["builder"], r["op"]), {})[r["n"]] = cpu / rows
    out = []
    for (builder, op), per_row in by.items():
        pairs = [(lo, hi, t) for b, o, lo, hi, t in COST_TARGETS if (b, o) == (builder, op)]
        pairs = [(lo, hi, t) for lo, hi, t in pairs if lo in per_row and hi in per_row]
        if not pairs and len(per_row) >= 2:
            pairs = [(min(per_row), max(per_row), None)]
        for lo, hi, target in pairs:
            growth = per_row[hi] / per_row[lo]
            out.append(
                {
                    "builder": builder,
                    "op": op,
                    "n": [lo, hi],
                    "rows_per_cpu_s": [1 / per_row[lo], 1 / per_row[hi]],
                    "cost_ratio": growth,
                    "target": target,
                    "met": None if target is None else growth <= target,
                }
            )
    return out


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def report(doc: dict[str, Any], markdown: bool = False) -> str:
    """The speed table (one row per store and op) and the memory-growth table."""
    head = ["store", "op", "ours s", "ref s", "speedup", "CPU speedup"]
    head += ["ours rows/s", "ref rows/s", "ours MB", "ref MB"]
    body = []
    pairs: dict[tuple[str, int, str], dict[str, dict]] = {}
    for r in doc["results"]:
        pairs.setdefault((r["builder"], r["n"], r["op"]), {})[r["impl"]] = r
    for (builder, n, op), by in pairs.items():
        o, f = by.get("ours", {}), by.get("ref", {})
        body.append(
            [
                f"{builder} {n:,}",
                op,
                _fmt(o.get("seconds_median"), ".3f"),
                _fmt(f.get("seconds_median"), ".3f"),
                _fmt(o.get("ratio_median"), ".2f"),
                _fmt(o.get("cpu_ratio_median"), ".2f"),
                _fmt(o.get("rows_per_s"), ",.0f"),
                _fmt(f.get("rows_per_s"), ",.0f"),
                _fmt(o.get("rss_mb_median"), ".0f"),
                _fmt(f.get("rss_mb_median"), ".0f"),
            ]
        )
    mem_head = ["op", "impl", "peak RSS MB by series", "growth MB", "target"]
    mem_body = [
        [
            m["op"],
            m["impl"],
            " / ".join(f"{k}: {v:.0f}" for k, v in m["rss_mb"].items()),
            f"{m['growth_mb']:.1f}",
            "-" if m["met"] is None else ("met" if m["met"] else "MISSED") + " (<= 50)",
        ]
        for m in doc["memory"]
    ]
    cost_head = [
        "store",
        "op",
        "series",
        "M rows/s of CPU",
        "CPU per row, larger / smaller",
        "target",
    ]
    cost_body = [
        [
            c["builder"],
            c["op"],
            " -> ".join(f"{n:,}" for n in c["n"]),
            " -> ".join(f"{v / 1e6:.2f}" for v in c["rows_per_cpu_s"]),
            f"{c['cost_ratio']:.2f}",
            "-"
            if c["met"] is None
            else ("met" if c["met"] else "MISSED") + f" (<= {c['target']:.1f})",
        ]
        for c in doc.get("scaling", [])
    ]
    render = results.render_markdown if markdown else results.render_text
    parts = ["speedup = reference s / ours (> 1: ours is faster)", render(head, body)]
    if mem_body:
        parts += ["peak RSS growth (issue 26, target 2)", render(mem_head, mem_body)]
    if cost_body:
        parts += [
            "CPU cost per row, smaller -> larger store (issue 37)",
            render(cost_head, cost_body),
        ]
    if doc["failures"]:
        parts.append(f"{len(doc['failures'])} failed run(s): see the JSON's failures")
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------- --billion
BILLION_SERIES = 114_155  # x 8,760 values = 999,997,800 (the nearest round shape)
BILLION_QUICK = 200
YEAR_VALUES = 8_760
# Bytes per value on disk, measured at 10^9 values (8.07 GB, 6.68 GB, 43.0 GB; a margin added):
# the store (HDF5 f64 + catalog), the Parquet export, the SQLite export.
DISK_PER_VALUE = {"store": 8.3, "parquet": 7.0, "sqlite": 46.0}


def billion_disk_needed(n: int) -> dict[str, float]:
    """GB the --billion run needs at once: the store, then its largest export beside it
    (each export is deleted before the next; the S3 server keeps its copy in the workdir
    until it stops)."""
    values = n * YEAR_VALUES
    store = values * DISK_PER_VALUE["store"] / 1e9
    largest = values * max(DISK_PER_VALUE["parquet"], DISK_PER_VALUE["sqlite"]) / 1e9
    return {"store_gb": store, "largest_export_gb": largest, "total_gb": store + largest}


def billion(runner: run.Runner, n: int) -> list[dict[str, Any]]:
    """Build the store, then export it three ways; one record per operation."""
    from s3server import BUCKET, S3Server

    rows = n * YEAR_VALUES
    records = []

    def record(op: str, res: dict[str, Any], **extra: Any) -> None:
        cpu = res["cpu_seconds"]
        records.append(
            {
                "builder": "year",
                "n": n,
                "op": op,
                "impl": "ours",
                "rows": rows,
                "seconds": res["seconds"],
                "cpu_seconds": cpu,
                "rows_per_s": rows / res["seconds"],
                "rows_per_cpu_s": rows / cpu if cpu else None,
                "peak_rss_mb": round(res["peak_rss_mb"], 1),
                **extra,
            }
        )
        runner.log(
            f"  {op:26} {res['seconds']:8.1f} s, CPU {cpu:8.1f} s, "
            f"{rows / res['seconds'] / 1e6:6.1f} M rows/s, peak {res['peak_rss_mb']:.0f} MB"
        )

    home = runner.home("ours", "year", n)
    home.mkdir(parents=True, exist_ok=True)
    store = {"store": str(home / "store.h5"), "ids": str(home / "ids.json")}
    shutil.rmtree(store["store"], ignore_errors=True)
    res = runner.child({"op": "build", "impl": "ours", "builder": "year", "n": n, **store})
    record("add (build)", res, store_bytes=_tree_bytes(Path(store["store"])))
    base = {"impl": "ours", "builder": "year", "n": n, **store}
    scratch = runner.workdir / "scratch"
    for op, out in (("export_parquet", scratch / "export.parquet"), ("export", scratch / "x.db")):
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        try:
            res = runner.child({**base, "op": op, "out": str(out)})
            name = "export -> Parquet (local)" if op == "export_parquet" else "export -> SQLite"
            record(name, res, out_bytes=_tree_bytes(out))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if op == "export_parquet":
            server = S3Server(runner.workdir / "s3")
            try:
                server.start()
                runner.env.update(server.env)
                uri = f"s3://{BUCKET}/billion/"
                res = runner.child({**base, "op": "export_parquet", "out": uri})
                record("export -> Parquet (S3)", res)
            finally:
                server.stop()
                shutil.rmtree(runner.workdir / "s3", ignore_errors=True)
    return records


def _tree_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _workdir(
    named: str | None, prefix: str
) -> tuple[Path, tempfile.TemporaryDirectory[str] | None]:
    """``--workdir`` made if missing (kept), else a temporary directory (removed by the
    caller through the object returned beside it)."""
    if named:
        workdir = Path(named).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        return workdir, None
    tmp = tempfile.TemporaryDirectory(prefix=prefix)
    return Path(tmp.name), tmp


def billion_main(args: argparse.Namespace) -> int:
    n = BILLION_QUICK if args.quick else args.billion_series
    sys.path.insert(0, str(BENCH.parent / "tests"))  # the S3 server the tests start
    started = time.perf_counter()
    load_start = os.getloadavg()
    workdir, tmp = _workdir(args.workdir, "infrastore-billion-")
    need = billion_disk_needed(n)
    free_gb = shutil.disk_usage(workdir).free / 1e9
    print(
        f"--billion: {n:,} series x {YEAR_VALUES:,} values = {n * YEAR_VALUES:,} values; disk "
        f"needed in {workdir}: {need['total_gb']:.1f} GB (store {need['store_gb']:.1f} GB, "
        f"largest export {need['largest_export_gb']:.1f} GB); free {free_gb:.1f} GB",
        flush=True,
    )
    if free_gb < need["total_gb"]:
        if tmp is not None:
            tmp.cleanup()
        raise SystemExit(
            f"--billion needs {need['total_gb']:.1f} GB free in {workdir}, which has "
            f"{free_gb:.1f} GB: name a larger disk with --workdir"
        )
    runner = run.Runner(workdir, verbose=not args.quiet)
    try:
        records = billion(runner, n)
    except run.ChildError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if tmp is not None:
            tmp.cleanup()
    head = ["operation", "s", "CPU s", "M rows/s", "M rows/s of CPU", "peak RSS MB", "GB"]
    body = [
        [
            r["op"],
            f"{r['seconds']:.1f}",
            f"{r['cpu_seconds']:.1f}",
            f"{r['rows_per_s'] / 1e6:.1f}",
            "-" if not r["rows_per_cpu_s"] else f"{r['rows_per_cpu_s'] / 1e6:.1f}",
            f"{r['peak_rss_mb']:.0f}",
            _fmt((r.get("store_bytes") or r.get("out_bytes") or 0) / 1e9 or None, ".2f"),
        ]
        for r in records
    ]
    print(results.render_text(head, body))
    load_end = os.getloadavg()
    print(
        f"\n({time.perf_counter() - started:.0f} s; load {load_start[0]:.2f} -> {load_end[0]:.2f})"
    )
    doc = {
        "meta": {
            "command": " ".join(["python", "bench/scale.py", *sys.argv[1:]]),
            "series": n,
            "values": n * YEAR_VALUES,
            "disk_needed_gb": need,
            "machine": run.machine_info(),
            "loadavg_start": [round(x, 2) for x in load_start],
            "loadavg_end": [round(x, 2) for x in load_end],
        },
        "results": records,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1, allow_nan=False))
    if args.markdown:
        Path(args.markdown).write_text(results.render_markdown(head, body) + "\n")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="200 and 1,000 series (seconds)")
    p.add_argument("--sizes", help="series counts of 168 values, e.g. 10000,100000")
    p.add_argument("--year", action="store_true", help="also 20,000 and 50,000 × 8,760 values")
    p.add_argument("--year-sizes", help="series counts of 8,760 values (implies --year)")
    p.add_argument("--ops", help=f"operations, from {','.join(OPS)} (default all)")
    p.add_argument(
        "--ours-only", action="store_true", help="skip the reference (memory checks of ours)"
    )
    p.add_argument("--rounds", type=int, default=1, help="runs per implementation (default 1)")
    p.add_argument(
        "--billion",
        action="store_true",
        help="ours alone: build 10^9 values, export to Parquet (disk, S3) and SQLite",
    )
    p.add_argument("--billion-series", type=int, default=BILLION_SERIES, help=argparse.SUPPRESS)
    p.add_argument("--json", metavar="OUT", help="write all results as JSON")
    p.add_argument("--markdown", metavar="OUT", help="write the report as markdown tables")
    p.add_argument("--workdir", help="where stores are built (kept); default a temporary directory")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p.parse_args(argv)


def _counts(text: str | None, default: tuple[int, ...], flag: str) -> list[int]:
    if not text:
        return list(default)
    try:
        counts = [int(x) for x in text.split(",") if x]
    except ValueError:
        raise SystemExit(f"{flag}: expected comma-separated series counts, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise SystemExit(f"{flag}: every series count must be at least 1, got {text!r}")
    return counts


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.billion:
        return billion_main(args)
    ops = [o for o in (args.ops or ",".join(OPS)).split(",") if o]
    if set(ops) - set(OPS):
        raise SystemExit(f"--ops: unknown op(s) {sorted(set(ops) - set(OPS))}; expected {OPS}")
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    cases = [
        ("small", n)
        for n in _counts(args.sizes, QUICK_SIZES if args.quick else DEFAULT_SIZES, "--sizes")
    ]
    if args.year or args.year_sizes:
        cases += [("year", n) for n in _counts(args.year_sizes, YEAR_SIZES, "--year-sizes")]
    started = time.perf_counter()
    load_start = os.getloadavg()
    workdir, tmp = _workdir(args.workdir, "infrastore-scale-")
    runner = run.Runner(workdir, verbose=not args.quiet)
    records: list[dict[str, Any]] = []
    try:
        for builder, n in cases:
            runner.log(f"[{builder} n={n}]")
            records += measure(runner, builder, n, ops, args.rounds, not args.ours_only)
    finally:
        if tmp is not None:
            tmp.cleanup()
    doc = {
        "meta": {
            "command": " ".join(["python", "bench/scale.py", *(argv or sys.argv[1:])]),
            "rounds": args.rounds,
            "quick": bool(args.quick),
            "read_n": READ_N,
            "elapsed_seconds": round(time.perf_counter() - started, 1),
            "machine": run.machine_info(),
            # Other processes skew wall-clock times; the load says how much.
            "loadavg_start": [round(x, 2) for x in load_start],
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
            "speedup": "reference seconds / our seconds, per round; > 1 means ours is faster",
        },
        "results": records,
        "memory": memory_growth(records, "small"),
        "scaling": cost_growth(records),
        "failures": runner.failures,
    }
    print(report(doc))
    print(f"\n({doc['meta']['elapsed_seconds']} s; load {doc['meta']['loadavg_start'][0]:.2f})")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1, allow_nan=False))
    if args.markdown:
        Path(args.markdown).write_text(report(doc, markdown=True) + "\n")
    return 1 if runner.failures else 0


if __name__ == "__main__":
    sys.exit(main())
