#!/usr/bin/env python
"""Benchmark ``infrastore_sqlite`` ("ours") against the reference ``infrastore`` 0.15.1.

Usage::

    python bench/run.py [--quick] [--sizes small,large] [--rounds N] [--only sts,mixed,...]
                        [--ops export,import,add,read] [--json OUT] [--markdown OUT]

For every scenario and size, each implementation builds its store once (in a child
process, from the same seeded arrays, see ``bench/scenarios.py``). Then, for each
operation, the two implementations run alternately, ``--rounds`` times each, every run in a
fresh child process, so the peak RSS a run reports is that operation's own process:

``export``  open the store read-only, ``export_sqlite`` everything to a new file;
``import``  create an empty store, ``import_sqlite`` the database the *same*
            implementation exported, close the store (the close flushes, so it is timed);
``add``     build the series objects (not timed), create an empty store,
            ``add_time_series_bulk`` all of them, close the store (timed);
``read``    open the store read-only, ``read_by_ids`` of every id and touch each
            series' ``data`` (timed).

Export and import also run a *floor* each round (``bench/sqlite_floor.py``, after ours):
the tables of our export written again from buffers already in memory (``carray``
inserts, indexes after), and those tables' values read back into one numpy array per
array. ``ours / floor`` (our seconds over the floor's, median of rounds) says how much of
our time is our own work rather than SQLite's.

The ``memory`` scenario exports and imports the ``small`` builder's stores (168-value
hourly f64 series, every array distinct) at two sizes (2,000 and 20,000 series; 200 and
1,000 with ``--quick``) and reports the growth of peak RSS between them.

Speedup is per round: ``(our rows/s) / (reference rows/s)``, which is
``reference seconds / our seconds`` (> 1 means ours is faster).

The exit status is 0 only if every child run succeeded.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
IMPLS = {"ours": "infrastore_sqlite", "ref": "infrastore"}
OPS = ("export", "import", "add", "read")
SCENARIOS = ("sts", "mixed", "small", "memory")
MEMORY_OPS = ("export", "import")
MEMORY_SIZES = {"full": (2000, 20000), "quick": (200, 1000)}
CHILD_TIMEOUT = 3600.0

# Targets the results are checked against (medians of the per-round speedups).
TARGETS = {
    "export_speedup": 2.5,  # every scenario
    "import_speedup": 2.0,  # every scenario
    "add_speedup": 1.5,  # every scenario
    "read_speedup": 1.5,  # every scenario
    "floor_ratio": 1.3,  # export and import, ours s / floor s, on sts and small
    "rss_growth_mb": 50.0,  # memory scenario, ours, export and import
}
# The operations with a floor (bench/sqlite_floor.py), and the scenarios its target covers.
FLOOR_OPS = ("export", "import")
FLOOR_TARGET_SCENARIOS = ("sts", "small")


# ============================================================================ child side
def _peak_rss_mb() -> float:
    """This process's own high-water RSS (VmHWM; ru_maxrss survives exec on Linux)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _rss_mb() -> float:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _db_bytes(path: str) -> int:
    """The database file, plus a WAL beside it if one was left behind."""
    total = os.path.getsize(path)
    for suffix in ("-wal", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            total += os.path.getsize(path + suffix)
    return total


def child_main(spec: dict[str, Any]) -> None:
    """Run one operation; write its measurements as JSON to ``spec['result']``."""
    sys.path[:0] = [str(REPO), str(BENCH)]
    import scenarios

    # (A floor uses no implementation: it works on an exported file alone.)
    mod = importlib.import_module(IMPLS.get(spec["impl"], IMPLS["ours"]))
    op, builder, n = spec["op"], spec["builder"], spec["n"]
    out: dict[str, Any] = {}
    profiler = None
    if spec.get("profile"):
        import cProfile

        profiler = cProfile.Profile()

    def timed(fn):
        base = _rss_mb()
        cpu0, t0 = _cpu_seconds(), time.perf_counter()
        if profiler is not None:
            profiler.enable()
        value = fn()
        if profiler is not None:
            profiler.disable()
        out["seconds"] = time.perf_counter() - t0
        out["cpu_seconds"] = _cpu_seconds() - cpu0
        out["base_rss_mb"] = base
        return value

    if op == "build":
        t0 = time.perf_counter()
        ids = scenarios.build_store(mod, spec["store"], builder, n)
        out["seconds"] = time.perf_counter() - t0
        Path(spec["ids"]).write_text(json.dumps(ids))
        out["rows"] = scenarios.summary(builder, n)["rows"]
    elif op in ("export", "export_parquet"):
        parquet = op == "export_parquet"
        if parquet:
            # pyarrow and the writer are imported before the clock starts, as the floor's
            # pyarrow is and as the package imports its SQLite exporter up front.
            import pyarrow.parquet

            import infrastore_sqlite.interchange.parquet
        store = mod.Store.open(spec["store"], read_only=True)
        method = store.export_parquet if parquet else store.export_sqlite
        jobs = {"jobs": spec["jobs"]} if spec.get("jobs") else {}  # bench/objstore.py --jobs
        parts = timed(lambda: method(spec["out"], **jobs))
        store.close()
        out["rows"] = sum(int(p["rows"]) for p in parts)
        out["series"] = sum(int(p["series"]) for p in parts)
        out["partitions"] = len(parts)
        if (
            "://" not in spec["out"]
        ):  # an object-storage export (bench/objstore.py) has no sizes here
            out["db_bytes"] = (_dir_bytes if parquet else _db_bytes)(spec["out"])
            if parquet:
                out["values_bytes"] = sum(os.path.getsize(p["values_file"]) for p in parts)
    elif op == "parquet_floor":
        out.update(_parquet_floor(spec, timed))
    elif op == "export_floor":
        import sqlite_floor

        write, rows = sqlite_floor.prepare_export(spec["db"])
        timed(lambda: write(spec["out"]))
        out["rows"] = rows
        out["db_bytes"] = _db_bytes(spec["out"])
    elif op == "import_floor":
        import sqlite_floor

        out["rows"] = timed(lambda: sqlite_floor.read_back(spec["db"]))
    elif op in ("import", "import_parquet"):
        parquet = op == "import_parquet"
        if parquet:
            # As for export_parquet: pyarrow and the reader are imported before the clock.
            import pyarrow.parquet  # noqa: F401

            import infrastore_sqlite.interchange.parquet  # noqa: F401
        store = mod.Store.create(spec["out"])

        def run_import():
            load = store.import_parquet if parquet else store.import_sqlite
            ids = load(spec["src"] if parquet else spec["db"])
            store.close()
            return ids

        ids = timed(run_import)
        out["series"] = len(ids)
        out["rows"] = spec["rows"]
    elif op == "add":
        items = scenarios.build_items(mod, builder, n)
        store = mod.Store.create(spec["out"])

        def run_add():
            ids = store.add_time_series_bulk(items)
            store.close()
            return ids

        ids = timed(run_add)
        out["series"] = len(ids)
        out["rows"] = scenarios.summary(builder, n)["rows"]
    elif op == "read":
        ids = json.loads(Path(spec["ids"]).read_text())
        if spec.get("limit"):
            # bench/scale.py reads a spread-out selection, not the whole store.
            step = max(1, len(ids) // spec["limit"])
            ids = ids[::step][: spec["limit"]]
        store = mod.Store.open(spec["store"], read_only=True)

        def run_read():
            objs = store.read_by_ids(ids)
            return sum(int(o.data.size) for o in objs)

        values = timed(run_read)
        store.close()
        out["series"] = len(ids)
        out["rows"] = values if spec.get("limit") else scenarios.summary(builder, n)["rows"]
    elif op == "info":
        # The CLI's `info` (ours only: the reference has no CLI), in this process; click's
        # standalone mode would exit, so it is off and the output is kept out of the way.
        import io

        from infrastore_sqlite.cli import cli
        from infrastore_sqlite.cli.base import PROG

        args = ["--store", spec["store"], "-f", "json", "info"]
        with contextlib.redirect_stdout(io.StringIO()) as text:
            timed(lambda: cli.main(args=args, prog_name=PROG, standalone_mode=False))
        out["info"] = json.loads(text.getvalue())
        out["series"], out["rows"] = spec["series"], spec["rows"]
    else:
        raise SystemExit(f"unknown op {op!r}")
    out["peak_rss_mb"] = _peak_rss_mb()
    if profiler is not None:
        profiler.dump_stats(spec["profile"])
    Path(spec["result"]).write_text(json.dumps(out))


def _dir_bytes(path: str) -> int:
    return sum(f.stat().st_size for f in Path(path).iterdir())


def _parquet_floor(spec: dict[str, Any], timed) -> dict[str, Any]:
    """bench/parquet_floor.py: the store's arrays read with h5py and the same three
    tables written with pyarrow and the export's settings, timed together; what it needs
    to know first (from the catalog and an earlier Parquet export, ``src``) is not."""
    import parquet_floor

    write, rows = parquet_floor.prepare(spec["store"], spec["src"])
    timed(lambda: write(spec["out"]))
    return {"rows": rows, "db_bytes": _dir_bytes(spec["out"])}


# ============================================================================ parent side
class ChildError(RuntimeError):
    pass


class Runner:
    def __init__(self, workdir: Path, verbose: bool = True) -> None:
        self.workdir = workdir
        self.verbose = verbose
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        self.env.setdefault("PYTHONHASHSEED", "0")
        self._seq = 0
        self.failures: list[dict[str, Any]] = []
        self.built: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.exported: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.measured: dict[tuple[str, int, str], dict[str, dict[str, Any]]] = {}

    def log(self, msg: str) -> None:
        if self.verbose:
            print(msg, file=sys.stderr, flush=True)

    def child(self, spec: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        result = self.workdir / f"result-{self._seq}.json"
        spec = {**spec, "result": str(result)}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
        try:
            proc = subprocess.run(
                cmd,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=CHILD_TIMEOUT,
                cwd=str(self.workdir),
            )
        except subprocess.TimeoutExpired as exc:
            raise ChildError(f"timed out after {CHILD_TIMEOUT:.0f} s") from exc
        if proc.returncode != 0 or not result.exists():
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise ChildError(f"exit status {proc.returncode}\n{tail}")
        data = json.loads(result.read_text())
        result.unlink()
        return data

    def home(self, impl: str, builder: str, n: int) -> Path:
        return self.workdir / impl / f"{builder}-{n}"

    def ensure_store(self, impl: str, builder: str, n: int) -> dict[str, Any]:
        key = (impl, builder, n)
        if key not in self.built:
            home = self.home(impl, builder, n)
            home.mkdir(parents=True, exist_ok=True)
            info = {"store": str(home / "store.h5"), "ids": str(home / "ids.json")}
            marker = home / "built.json"
            if marker.exists():
                info.update(json.loads(marker.read_text()))
            else:
                for p in home.glob("store.h5*"):
                    p.unlink()
                self.log(f"  build {impl:4} {builder} n={n}")
                res = self.child({"op": "build", "impl": impl, "builder": builder, "n": n, **info})
                info["build_seconds"] = res["seconds"]
                marker.write_text(json.dumps({"build_seconds": res["seconds"]}))
            self.built[key] = info
        return self.built[key]

    def ensure_export(self, impl: str, builder: str, n: int) -> dict[str, Any]:
        """The database ``impl`` exported from its store (made now if no export round kept one)."""
        key = (impl, builder, n)
        if key not in self.exported:
            store = self.ensure_store(impl, builder, n)
            db = self.home(impl, builder, n) / "export.db"
            db.unlink(missing_ok=True)
            self.log(f"  setup-export {impl:4} {builder} n={n}")
            res = self.child(
                {"op": "export", "impl": impl, "builder": builder, "n": n, **store, "out": str(db)}
            )
            self.exported[key] = {"db": str(db), "rows": res["rows"]}
        return self.exported[key]

    def run_once(self, impl: str, builder: str, n: int, op: str, keep: bool) -> dict[str, Any]:
        spec: dict[str, Any] = {"op": op, "impl": impl, "builder": builder, "n": n}
        home = self.home(impl, builder, n)
        scratch = self.workdir / "scratch"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        try:
            if impl == "floor":
                # The floor writes (or reads back) the tables of our own export.
                spec.update(op=f"{op}_floor", db=self.ensure_export("ours", builder, n)["db"])
                if op == "export":
                    spec.update(out=str(scratch / "floor.db"))
            elif op == "export":
                spec.update(self.ensure_store(impl, builder, n), out=str(scratch / "export.db"))
            elif op == "import":
                exp = self.ensure_export(impl, builder, n)
                spec.update(db=exp["db"], rows=exp["rows"], out=str(scratch / "imported.h5"))
            elif op == "add":
                spec.update(out=str(scratch / "added.h5"))
            elif op == "read":
                spec.update(self.ensure_store(impl, builder, n))
            res = self.child(spec)
            if impl == "floor" and res["rows"] != self.ensure_export("ours", builder, n)["rows"]:
                raise ChildError(f"the {op} floor handled {res['rows']} rows, not the export's")
            if op == "import" and impl != "floor":
                # A partial import would look fast: it must give back every series.
                ids = json.loads(Path(self.ensure_store(impl, builder, n)["ids"]).read_text())
                if res["series"] != len(ids):
                    raise ChildError(
                        f"import returned {res['series']} ids; the store exported {len(ids)} series"
                    )
            if op == "export" and keep:
                # Keep this round's output as the database the import rounds read.
                db = home / "export.db"
                db.unlink(missing_ok=True)
                shutil.move(str(scratch / "export.db"), db)
                self.exported[(impl, builder, n)] = {"db": str(db), "rows": res["rows"]}
            return res
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def measure(self, scenario: str, builder: str, n: int, op: str, rounds: int):
        """Both implementations, alternately, ``rounds`` each; cached per (builder, n, op)."""
        key = (builder, n, op)
        if key in self.measured:
            return self.measured[key]
        impls = [*IMPLS, "floor"] if op in FLOOR_OPS else list(IMPLS)
        runs: dict[str, list[dict[str, Any]]] = {impl: [] for impl in impls}
        failed: dict[str, str] = {}
        for impl in IMPLS:
            try:
                self.ensure_store(impl, builder, n)
            except ChildError as exc:
                failed[impl] = f"build: {exc}"
                self._fail(scenario, builder, n, "build", impl, exc)
        for r in range(rounds):
            order = list(IMPLS) if r % 2 == 0 else list(reversed(IMPLS))
            if "floor" in runs:
                order.append("floor")  # after ours: round 0's export is the floor's source
            for impl in order:
                if impl in failed:
                    continue
                try:
                    keep = op == "export" and r == 0 and impl != "floor"
                    res = self.run_once(impl, builder, n, op, keep)
                except ChildError as exc:
                    failed[impl] = str(exc)
                    self._fail(scenario, builder, n, op, impl, exc)
                    continue
                runs[impl].append(res)
                self.log(
                    f"  {op:6} {impl:4} {builder} n={n} round {r + 1}: {res['seconds']:.3f} s, "
                    f"peak {res['peak_rss_mb']:.0f} MB"
                )
        self.measured[key] = {"runs": runs, "failed": failed}
        return self.measured[key]

    def _fail(self, scenario, builder, n, op, impl, exc) -> None:
        self.log(f"  FAILED {op} {impl} {builder} n={n}: {exc}")
        self.failures.append(
            {
                "scenario": scenario,
                "builder": builder,
                "n": n,
                "op": op,
                "impl": impl,
                "error": str(exc),
            }
        )


# ============================================================================ results
def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _speedups(runs: dict[str, list[dict[str, Any]]], field: str = "seconds") -> list[float]:
    """Per round: our rows/s over the reference's rows/s (= ref seconds / our seconds).

    ``field="cpu_seconds"`` gives the same on CPU time (user + system, every thread).
    The reference is single-threaded; ours overlaps its store reads and HDF5 writes with
    SQLite on a second thread, so its CPU speedup reads lower than its wall speedup by
    about the work that overlap hides.
    """
    out = []
    for o, r in zip(runs["ours"], runs["ref"], strict=False):
        if o[field] > 0 and r[field] > 0:
            out.append((o["rows"] / o[field]) / (r["rows"] / r[field]))
    return out


def _floor_ratios(runs: dict[str, list[dict[str, Any]]]) -> list[float]:
    """Per round: our seconds over the floor's (> 1: how far ours is above the floor)."""
    return [
        o["seconds"] / f["seconds"]
        for o, f in zip(runs["ours"], runs.get("floor", []), strict=False)
        if f["seconds"] > 0
    ]


def records_for(scenario: str, size: str, n: int, op: str, m: dict[str, Any]) -> list[dict]:
    runs = m["runs"]
    ratio = _speedups(runs)
    cpu_ratio = _speedups(runs, "cpu_seconds")
    floor = _floor_ratios(runs)
    recs = []
    for impl in runs:
        rs = runs[impl]
        secs = [x["seconds"] for x in rs]
        rows = rs[0]["rows"] if rs else None
        med = _median(secs)
        db_bytes = rs[0].get("db_bytes") if rs else None
        recs.append(
            {
                "scenario": scenario,
                "size": size,
                "n": n,
                "op": op,
                "impl": impl,
                "module": IMPLS.get(impl, "bench/sqlite_floor.py"),
                "seconds": secs,
                "seconds_median": med,
                "seconds_min": min(secs) if secs else None,
                "seconds_max": max(secs) if secs else None,
                "cpu_seconds": [x["cpu_seconds"] for x in rs],
                "rows": rows,
                "series": rs[0].get("series") if rs else None,
                "rows_per_s": rows / med if rows and med else None,
                "rss_mb": [round(x["peak_rss_mb"], 1) for x in rs],
                "rss_mb_median": _median([x["peak_rss_mb"] for x in rs]),
                "base_rss_mb": _median([x["base_rss_mb"] for x in rs]),
                "db_bytes": db_bytes,
                "db_bytes_per_row": db_bytes / rows if db_bytes and rows else None,
                "ratio": ratio,
                "ratio_median": _median(ratio),
                "cpu_ratio": cpu_ratio,
                "cpu_ratio_median": _median(cpu_ratio),
                "floor_ratio": floor,
                "floor_ratio_median": _median(floor),
                "error": m["failed"].get(impl),
            }
        )
    return recs


def memory_summary(records: list[dict], sizes: tuple[int, int]) -> list[dict]:
    out = []
    lo, hi = sizes
    for op in MEMORY_OPS:
        for impl in IMPLS:
            by_n = {
                r["n"]: r
                for r in records
                if r["scenario"] == "memory" and r["op"] == op and r["impl"] == impl
            }
            a, b = by_n.get(lo), by_n.get(hi)
            ra = a and a["rss_mb_median"]
            rb = b and b["rss_mb_median"]
            out.append(
                {
                    "op": op,
                    "impl": impl,
                    "n_small": lo,
                    "n_large": hi,
                    "rss_small_mb": ra,
                    "rss_large_mb": rb,
                    "growth_mb": (rb - ra) if ra is not None and rb is not None else None,
                }
            )
    return out


def check_targets(records: list[dict], memory: list[dict]) -> list[dict]:
    out = []
    for r in records:
        if r["impl"] != "ours" or r["scenario"] == "memory":
            continue
        thr = TARGETS[f"{r['op']}_speedup"]
        v = r["ratio_median"]
        out.append(
            {
                "target": f"{r['op']} speedup, {r['scenario']} {r['size']} (n={r['n']})",
                "value": v,
                "threshold": f">= {thr}",
                "met": v is not None and v >= thr,
            }
        )
        if r["op"] in FLOOR_OPS and r["scenario"] in FLOOR_TARGET_SCENARIOS:
            v, thr = r.get("floor_ratio_median"), TARGETS["floor_ratio"]
            out.append(
                {
                    "target": f"{r['op']} ours / floor, {r['scenario']} {r['size']} (n={r['n']})",
                    "value": v,
                    "threshold": f"<= {thr}",
                    "met": v is not None and v <= thr,
                }
            )
    for m in memory:
        if m["impl"] == "ours":
            v = m["growth_mb"]
            thr = TARGETS["rss_growth_mb"]
            out.append(
                {
                    "target": f"{m['op']} peak RSS growth {m['n_small']}->{m['n_large']} series (MB)",
                    "value": v,
                    "threshold": f"<= {thr}",
                    "met": v is not None and v <= thr,
                }
            )
    by_key: dict[tuple, dict[str, dict]] = {}
    for r in records:
        # (The memory scenario's databases are the small builder's: not counted twice.)
        if r["op"] == "export" and r["scenario"] != "memory" and r["db_bytes_per_row"] is not None:
            by_key.setdefault((r["scenario"], r["size"], r["n"]), {})[r["impl"]] = r
    for (scn, size, n), pair in by_key.items():
        if "ours" in pair and "ref" in pair:
            v, thr = pair["ours"]["db_bytes_per_row"], pair["ref"]["db_bytes_per_row"]
            out.append(
                {
                    "target": f"db bytes per value row, {scn} {size} (n={n})",
                    "value": v,
                    "threshold": f"<= {thr:.3f} (reference)",
                    "met": v <= thr,
                }
            )
    return out


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def table_rows(records: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = [
        "scenario",
        "size",
        "op",
        "impl",
        "median s",
        "min s",
        "max s",
        "rows",
        "rows/s",
        "peak RSS MB",
        "B/row",
        "speedup per round",
        "speedup median",
        "CPU speedup median",
        "ours / floor",
    ]
    body = []
    for r in records:
        ours = r["impl"] == "ours"
        body.append(
            [
                r["scenario"],
                f"{r['size']} ({r['n']})",
                r["op"],
                r["impl"],
                _fmt(r["seconds_median"], ".3f"),
                _fmt(r["seconds_min"], ".3f"),
                _fmt(r["seconds_max"], ".3f"),
                _fmt(r["rows"], ","),
                _fmt(r["rows_per_s"], ",.0f"),
                _fmt(r["rss_mb_median"], ".0f"),
                _fmt(r["db_bytes_per_row"], ".2f"),
                " ".join(f"{x:.2f}" for x in r["ratio"]) if ours else "",
                (_fmt(r["ratio_median"], ".2f") + "x") if ours and r["ratio"] else "",
                (_fmt(r["cpu_ratio_median"], ".2f") + "x") if ours and r["cpu_ratio"] else "",
                (_fmt(r.get("floor_ratio_median"), ".2f") + "x")
                if ours and r.get("floor_ratio")
                else "",
            ]
        )
        if r["error"]:
            body[-1][4] = "FAILED"
    return header, body


def render_text(header: list[str], body: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(row[i]) for row in body)) if body else len(h)
        for i, h in enumerate(header)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in body]
    return "\n".join(lines)


def render_markdown(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def report(doc: dict[str, Any], markdown: bool = False) -> str:
    render = render_markdown if markdown else render_text
    # The memory scenario reuses the small scenario's runs where the sizes coincide.
    small = {(r["n"], r["op"]) for r in doc["results"] if r["scenario"] == "small"}
    shown = [
        r for r in doc["results"] if r["scenario"] != "memory" or (r["n"], r["op"]) not in small
    ]
    header, body = table_rows(shown)
    parts = [
        "Speedup = (our rows/s) / (reference rows/s) = reference seconds / our seconds, "
        "per round; > 1 means infrastore_sqlite is faster. CPU speedup: the same on CPU "
        "seconds of every thread (the reference is single-threaded; ours overlaps work on "
        "a second thread, so its CPU speedup is the lower one).",
        "rows: export/import = value rows in the exported tables (distinct arrays); "
        "add/read = value rows over all series (shared arrays counted per series).",
        "",
        render(header, body),
    ]
    if doc["memory"]:
        mh = ["op", "impl", "series", "peak RSS MB (small)", "peak RSS MB (large)", "growth MB"]
        mb = [
            [
                m["op"],
                m["impl"],
                f"{m['n_small']} -> {m['n_large']}",
                _fmt(m["rss_small_mb"], ".1f"),
                _fmt(m["rss_large_mb"], ".1f"),
                _fmt(m["growth_mb"], "+.1f"),
            ]
            for m in doc["memory"]
        ]
        parts += [
            "",
            "Memory (peak RSS of the operation's child process, median of rounds):",
            "",
            render(mh, mb),
        ]
    if doc["targets"]:
        th = ["target", "value", "threshold", "met"]
        tb = [
            [t["target"], _fmt(t["value"], ".3f"), t["threshold"], "yes" if t["met"] else "NO"]
            for t in doc["targets"]
        ]
        parts += ["", "Targets:", "", render(th, tb)]
    if doc["failures"]:
        parts += ["", "FAILURES:"]
        for f in doc["failures"]:
            first = f["error"].strip().splitlines()
            parts.append(
                f"  {f['op']} {f['impl']} {f['builder']} n={f['n']}: "
                + (first[-1] if first else "")
            )
    return "\n".join(parts)


# ============================================================================ metadata
def sources_digest() -> str:
    """A hash of the library's sources: what exactly was measured (they change between commits)."""
    digest = hashlib.sha256()
    for src in sorted((REPO / "infrastore_sqlite").rglob("*.py")):
        digest.update(src.relative_to(REPO).as_posix().encode() + b"\0" + src.read_bytes())
    return digest.hexdigest()[:16]


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "nproc": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["ram_gb"] = round(int(line.split()[1]) / 2**20, 1)
    versions = {}
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    for name in ("infrastore_sqlite", "infrastore", "numpy", "h5py", "apsw", "orjson"):
        try:
            versions[name] = getattr(importlib.import_module(name), "__version__", "?")
        except Exception as exc:  # pragma: no cover - reported, not fatal
            versions[name] = f"unavailable ({type(exc).__name__})"
    with contextlib.suppress(Exception):
        import apsw

        versions["apsw"] = apsw.apswversion()
        versions["sqlite (apsw)"] = apsw.sqlite_lib_version()
        versions["h5py hdf5"] = importlib.import_module("h5py").version.hdf5_version
    info["versions"] = versions
    info["infrastore_sqlite_sources_sha256"] = sources_digest()
    with contextlib.suppress(Exception):
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        info["git"] = head + ("+dirty" if dirty else "")
    return info


# ============================================================================ main
def _split(values: list[str] | None) -> list[str]:
    return [v for chunk in values or [] for v in chunk.split(",") if v]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="tiny sizes, 2 rounds (< 1 minute)")
    p.add_argument(
        "--sizes",
        nargs="+",
        help="size labels (quick, small, medium, large) or SCENARIO=N overrides; "
        "default small,large (quick with --quick)",
    )
    p.add_argument(
        "--rounds", type=int, help="runs per implementation per op (default 3; 2 with --quick)"
    )
    p.add_argument("--only", nargs="+", help=f"scenarios to run, from {','.join(SCENARIOS)}")
    p.add_argument("--ops", nargs="+", help=f"operations to run, from {','.join(OPS)}")
    p.add_argument(
        "--memory-sizes",
        help="the two series counts of the memory scenario (default 2000,20000; 200,1000 with --quick)",
    )
    p.add_argument("--json", metavar="OUT", help="write all results as JSON")
    p.add_argument("--markdown", metavar="OUT", help="write the report as markdown tables")
    p.add_argument("--workdir", help="where stores are built (kept); default a temporary directory")
    p.add_argument("--profile", metavar="DIR", help="cProfile every run of ours into DIR")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument(
        "--from-json",
        metavar="IN",
        help="run nothing: print (and --markdown) the report of a saved --json file",
    )
    p.add_argument("--child", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def plan_cases(args: argparse.Namespace) -> list[tuple[str, str, str, int]]:
    """``(scenario, size label, builder, n)`` for the speed scenarios and the memory one."""
    import scenarios as sc

    only = _split(args.only) or list(SCENARIOS)
    bad = set(only) - set(SCENARIOS)
    if bad:
        raise SystemExit(f"--only: unknown scenario(s) {sorted(bad)}; expected {SCENARIOS}")
    tokens = _split(args.sizes) or (["quick"] if args.quick else ["small", "large"])
    labels = [t for t in tokens if "=" not in t]
    overrides: dict[str, list[int]] = {}
    for t in tokens:
        if "=" in t:
            k, v = t.split("=", 1)
            if k not in sc.SIZES:
                raise SystemExit(f"--sizes: unknown scenario {k!r} in {t!r}")
            overrides.setdefault(k, []).append(int(v))
    for label in labels:
        if label not in sc.SIZES["sts"]:
            raise SystemExit(f"--sizes: unknown size {label!r}; expected {list(sc.SIZES['sts'])}")
    cases = []
    for scn in only:
        if scn == "memory":
            continue
        if scn in overrides:
            cases += [(scn, "custom", scn, n) for n in overrides[scn]]
        else:
            cases += [(scn, label, scn, sc.SIZES[scn][label]) for label in labels]
    if "memory" in only:
        if args.memory_sizes:
            lo, hi = (int(x) for x in args.memory_sizes.split(","))
        else:
            lo, hi = MEMORY_SIZES["quick" if args.quick else "full"]
        cases += [("memory", "small", "small", lo), ("memory", "large", "small", hi)]
    return cases


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        child_main(json.loads(args.child))
        return 0
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
        pairs = sorted({r["n"] for r in doc["results"] if r["scenario"] == "memory"})
        doc["memory"] = memory_summary(doc["results"], tuple(pairs)) if len(pairs) == 2 else []
        doc["targets"] = check_targets(doc["results"], doc["memory"])
        print(report(doc))
        if args.markdown:
            Path(args.markdown).write_text(report(doc, markdown=True) + "\n")
        return 0
    sys.path.insert(0, str(BENCH))
    ops = _split(args.ops) or list(OPS)
    bad = set(ops) - set(OPS)
    if bad:
        raise SystemExit(f"--ops: unknown op(s) {sorted(bad)}; expected {OPS}")
    rounds = args.rounds or (2 if args.quick else 3)
    if rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    cases = plan_cases(args)
    started = time.perf_counter()
    load_start = os.getloadavg()
    started_at = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    sources_start = sources_digest()
    tmp = None
    if args.workdir:
        workdir = Path(args.workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="infrastore-bench-")
        workdir = Path(tmp.name)
    runner = Runner(workdir, verbose=not args.quiet)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
        orig = runner.child

        def profiled(spec):
            if spec["impl"] == "ours" and spec["op"] in OPS:
                name = f"{spec['op']}-{spec['builder']}-{spec['n']}-{runner._seq + 1}.prof"
                spec = {**spec, "profile": str(Path(args.profile).resolve() / name)}
            return orig(spec)

        runner.child = profiled  # type: ignore[method-assign]
    records: list[dict] = []
    try:
        for scenario, size, builder, n in cases:
            case_ops = [o for o in ops if o in MEMORY_OPS] if scenario == "memory" else ops
            for op in case_ops:
                runner.log(f"[{scenario} {size} n={n}] {op}")
                m = runner.measure(scenario, builder, n, op, rounds)
                records += records_for(scenario, size, n, op, m)
    finally:
        if tmp is not None:
            tmp.cleanup()
    mem_cases = [n for scn, _, _, n in cases if scn == "memory"]
    memory = memory_summary(records, tuple(mem_cases)) if len(mem_cases) == 2 else []
    doc = {
        "meta": {
            "command": " ".join(
                ["python", "bench/run.py", *(argv if argv is not None else sys.argv[1:])]
            ),
            "started": started_at,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "rounds": rounds,
            "quick": bool(args.quick),
            "elapsed_seconds": None,
            "machine": machine_info(),
            "speedup": "per round (our rows/s) / (reference rows/s); > 1 means ours is faster",
        },
        "results": records,
        "memory": memory,
        "targets": check_targets(records, memory),
        "failures": runner.failures,
    }
    doc["meta"]["elapsed_seconds"] = round(time.perf_counter() - started, 1)
    doc["meta"]["sources_changed_during_run"] = (
        sources_start != doc["meta"]["machine"]["infrastore_sqlite_sources_sha256"]
    )
    # Other processes on the machine skew wall-clock times; the load says how much.
    doc["meta"]["loadavg_start"] = [round(x, 2) for x in load_start]
    doc["meta"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(report(doc))
    print(
        f"\n({doc['meta']['elapsed_seconds']} s; load average at start "
        f"{doc['meta']['loadavg_start'][0]:.2f}, at end {doc['meta']['loadavg_end'][0]:.2f})"
    )
    if doc["meta"]["sources_changed_during_run"]:
        print("WARNING: infrastore_sqlite's sources changed while the benchmark ran")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1, allow_nan=False))
    if args.markdown:
        Path(args.markdown).write_text(report(doc, markdown=True) + "\n")
    return 1 if runner.failures else 0


if __name__ == "__main__":
    sys.exit(main())
