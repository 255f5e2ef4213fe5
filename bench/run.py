#!/usr/bin/env python
"""Benchmark ``infrastore_sqlite`` ("ours") against the reference ``infrastore`` 0.15.1.

Usage::

    python bench/run.py [--quick] [--sizes small,large] [--rounds N] [--only sts,mixed,...]
                        [--ops export,import,add,read] [--against REF]
                        [--json OUT] [--markdown OUT]

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

``--against REF`` adds a third implementation, ``base``: this package as it was at the git
ref ``REF`` (default: the newest release tag, else ``HEAD~1``), unpacked with ``git archive``
into the workdir and run in the same rounds, alternating with the other two, so a
regression of the working tree shows as ``vs base`` below 1 in the same run that measures
it against the reference.

The exit status is 0 only if every child run succeeded.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import hashlib
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from child import BASE, BENCH, IMPLS, REPO
from results import (
    FLOOR_OPS,
    MEMORY_OPS,
    OPS,
    check_targets,
    memory_summary,
    records_for,
    report,
)

SCENARIOS = ("sts", "mixed", "small", "memory")
MEMORY_SIZES = {"full": (2000, 20000), "quick": (200, 1000)}
CHILD_TIMEOUT = 3600.0


# ============================================================================ parent side
class ChildError(RuntimeError):
    pass


def resolve_ref(ref: str | None) -> str:
    """The commit ``--against`` names: ``ref``, or the newest release tag, else ``HEAD~1``."""
    if not ref:
        tag = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--tags", "--abbrev=0"],
            capture_output=True,
            text=True,
        )
        ref = tag.stdout.strip() if tag.returncode == 0 and tag.stdout.strip() else "HEAD~1"
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if sha.returncode != 0:
        raise SystemExit(f"--against: {ref!r} is not a commit of {REPO} (try a tag or HEAD~1)")
    return sha.stdout.strip()


def unpack_base(sha: str, workdir: Path) -> Path:
    """The package's sources at ``sha`` in ``workdir/base-src-<sha>`` (kept for a rerun)."""
    dest = workdir / f"base-src-{sha[:12]}"
    if not (dest / "infrastore_sqlite" / "__init__.py").exists():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", sha],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    # Compiled as an install has it, like this checkout's (see Runner).
    compileall.compile_dir(str(dest / "infrastore_sqlite"), quiet=1)
    return dest.resolve()


class Runner:
    def __init__(self, workdir: Path, verbose: bool = True, against: str | None = None) -> None:
        self.workdir = workdir
        self.verbose = verbose
        # ``--against``: the base's commit and its unpacked sources (None: two implementations).
        self.base_sha = against
        self.base_src = unpack_base(against, workdir) if against else None
        self.impls = [*IMPLS, BASE] if against else list(IMPLS)
        # Our modules' bytecode, as an install has it (pip compiles it; the reference is a
        # compiled wheel): a checkout run with PYTHONDONTWRITEBYTECODE=1 would compile
        # every module again in every child, inside the clock where an operation imports
        # one first (an export's lazy imports, the fork server of ``--jobs``: ~0.2 s).
        compileall.compile_dir(str(REPO / "infrastore_sqlite"), quiet=1)
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
        if spec["impl"] == BASE:
            spec["pkg_src"] = str(self.base_src)
        cmd = [sys.executable, str(BENCH / "child.py"), json.dumps(spec)]
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
        # A kept --workdir may serve runs against other refs: the base's stores are its own.
        name = f"{BASE}-{self.base_sha[:12]}" if impl == BASE and self.base_sha else impl
        return self.workdir / name / f"{builder}-{n}"

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
        """Every implementation, in turn, ``rounds`` each; cached per (builder, n, op)."""
        key = (builder, n, op)
        if key in self.measured:
            return self.measured[key]
        impls = [*self.impls, "floor"] if op in FLOOR_OPS else list(self.impls)
        runs: dict[str, list[dict[str, Any]]] = {impl: [] for impl in impls}
        failed: dict[str, str] = {}
        for impl in self.impls:
            try:
                self.ensure_store(impl, builder, n)
            except ChildError as exc:
                failed[impl] = f"build: {exc}"
                self._fail(scenario, builder, n, "build", impl, exc)
        for r in range(rounds):
            # Each round starts with the next implementation (with two: ours, ref; ref, ours).
            k = r % len(self.impls)
            order = self.impls[k:] + self.impls[:k]
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
    p.add_argument(
        "--against",
        metavar="REF",
        nargs="?",
        const="",
        help="also run this package as it was at git ref REF (default: the newest tag, "
        "else HEAD~1), alternating with the others; reported as 'vs base'",
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
    against = resolve_ref(args.against) if args.against is not None else None
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
    runner = Runner(workdir, verbose=not args.quiet, against=against)
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
            "against": against,
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
