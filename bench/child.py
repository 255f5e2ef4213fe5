#!/usr/bin/env python
"""One benchmark operation in its own process (the child side of ``bench/run.py``).

Usage (by :class:`run.Runner`, never by hand)::

    python bench/child.py SPEC_JSON

``SPEC_JSON`` names the operation (``build``, ``export``, ``import``, ``add``, ``read``,
the Parquet operations, ``info``, a floor), the implementation and the paths. The child
times the operation's own part, then writes wall and CPU seconds, rows and its peak RSS
(``VmHWM``) as JSON to ``spec["result"]``. A fresh process per run keeps every run's peak
RSS its own.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
IMPLS = {"ours": "infrastore_sqlite", "ref": "infrastore"}
# ``bench/run.py --against REF``: our package as it was at a git ref, unpacked beside the
# workdir and put first on its children's path (``spec["pkg_src"]``), measured like "ours".
BASE = "base"
MODULES = {**IMPLS, BASE: "infrastore_sqlite"}


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


def _tree_cpu_seconds() -> float:
    """CPU of this process and of every process it started, the ones still alive (a
    multiprocessing fork server, say) with what they reaped (its exited workers)."""
    import psutil

    total = _cpu_seconds()
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return total + ru.ru_utime + ru.ru_stime


def _db_bytes(path: str) -> int:
    """The database file, plus a WAL beside it if one was left behind."""
    total = os.path.getsize(path)
    for suffix in ("-wal", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            total += os.path.getsize(path + suffix)
    return total


def child_main(spec: dict[str, Any]) -> None:
    """Run one operation; write its measurements as JSON to ``spec['result']``."""
    # The base's sources (``--against``) come before this checkout's, so its children
    # import the package as it was at that ref.
    sys.path[:0] = [*filter(None, [spec.get("pkg_src")]), str(REPO), str(BENCH)]
    import scenarios

    # (A floor uses no implementation: it works on an exported file alone.)
    mod = importlib.import_module(MODULES.get(spec["impl"], IMPLS["ours"]))
    if spec.get("pkg_src") and not Path(mod.__file__).resolve().is_relative_to(spec["pkg_src"]):
        raise SystemExit(f"{spec['impl']} imported {mod.__file__}, not {spec['pkg_src']}'s")
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
        cpu0, t0 = _cpu_seconds(), time.perf_counter()
        ids = scenarios.build_store(mod, spec["store"], builder, n)
        out["seconds"] = time.perf_counter() - t0
        out["cpu_seconds"] = _cpu_seconds() - cpu0
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
        tree0 = _tree_cpu_seconds() if jobs else 0.0
        parts = timed(lambda: method(spec["out"], **jobs))
        if jobs:  # --jobs: the workers' CPU too (children of the fork server)
            out["tree_cpu_seconds"] = _tree_cpu_seconds() - tree0
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


if __name__ == "__main__":
    child_main(json.loads(sys.argv[1]))
