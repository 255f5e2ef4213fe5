"""The flattened views of an SQLite export: their SQL's size and how fast they read.

Builds a store with one 250,000-step hourly SingleTimeSeries per time reference (UTC, a
fixed offset, America/Denver, zoneless: ~28.5 years each), exports it, and reports per
``flat_`` view the length of its SQL (``sqlite_master.sql``) and the best of ``--rounds``
times of reading it whole (``SELECT timestamp_iso, value FROM view``, every row fetched
through Python's sqlite3; and the same through DuckDB's SQLite scanner when it is
installed, which binds the view in its own SQL).

With ``--against DIR`` (another checkout of the package, e.g. ``git worktree add DIR
b926359``), the same store is exported by that code too (in a child process), and each
view is read from both files in turn, twice, in this one process (other work on the
machine then weighs on both alike); the figures are CPU seconds.

    flock /tmp/bench.lock python bench/flat_views.py [--rows 250000] [--rounds 5] [--json F]
        [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

# The code under test: this checkout's, or (in the child that --against starts) another's.
_CODE = "INFRASTORE_BENCH_CODE"
sys.path.insert(0, os.environ.get(_CODE, "") or str(Path(__file__).resolve().parent.parent))

from infrastore_sqlite import SingleTimeSeries, Store  # noqa: E402

STARTS = {
    "utc": datetime(2000, 1, 1, tzinfo=UTC),
    "offset_minus07_00": datetime(2000, 1, 1, tzinfo=timezone(timedelta(hours=-7))),
    "America_Denver": datetime(2000, 1, 1, tzinfo=ZoneInfo("America/Denver")),
    "zoneless": datetime(2000, 1, 1),
}


def build(db: Path, rows: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = Store.create(db.parent / "store")
    try:
        values = np.random.default_rng(0).random(rows)
        for i, start in enumerate(STARTS.values()):
            ts = SingleTimeSeries(start, "PT1H", values, "x")
            store.add_time_series(i, "Gen", "Component", ts)
        store.export_sqlite(db)
    finally:
        store.close()


def best(fn, rounds: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(rounds):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=250_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--against", help="another checkout of the package to compare with")
    ap.add_argument("--build", help=argparse.SUPPRESS)  # the child's: export to this file
    args = ap.parse_args(argv)
    if args.build:
        build(Path(args.build), args.rows)
        return 0
    with tempfile.TemporaryDirectory(prefix="infrastore-bench-flat-") as tmp:
        db = Path(tmp) / "flat.db"
        build(db, args.rows)
        if args.against:
            return _compare(db, Path(tmp) / "against" / "flat.db", args)
        con = sqlite3.connect(db)
        views = con.execute(
            "SELECT name, length(sql) FROM sqlite_master WHERE type = 'view' "
            "AND name LIKE 'flat_%' ORDER BY name"
        ).fetchall()
        duck = _duckdb(db)
        out = []
        for name, size in views:
            query = f"SELECT timestamp_iso, value FROM {name}"
            n = len(con.execute(query).fetchall())
            sqlite_s = best(lambda q=query: con.execute(q).fetchall(), args.rounds)
            # CPU time too: SQLite reads on one thread, and on a busy machine the wall
            # clock measures the neighbours.
            sqlite_cpu = best(
                lambda q=query: con.execute(q).fetchall(), args.rounds, time.process_time
            )
            duck_s = None
            if duck is not None:
                duck_s = best(
                    lambda q=query: duck.execute(q.replace(" FROM ", " FROM f.")).fetchall(),
                    args.rounds,
                )
            out.append(
                {
                    "view": name,
                    "sql_bytes": size,
                    "rows": n,
                    "sqlite_s": sqlite_s,
                    "duckdb_s": duck_s,
                }
            )
            print(
                f"{name:42} sql {size:>8,} B  rows {n:>8,}  sqlite3 {sqlite_s:.3f} s "
                f"(CPU {sqlite_cpu:.3f} s)"
                + (f"  duckdb {duck_s:.3f} s" if duck_s is not None else "")
            )
        con.close()
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": args.rows, "views": out}, indent=1))
    return 0


def _compare(db: Path, theirs: Path, args: argparse.Namespace) -> int:
    """Read each view of ``db`` and of the export ``--against``'s code makes, in turn."""
    theirs.parent.mkdir()
    env = {**os.environ, _CODE: str(Path(args.against).resolve())}
    cmd = [sys.executable, __file__, "--build", str(theirs), "--rows", str(args.rows)]
    subprocess.run(cmd, env=env, check=True)
    cons = {"now": sqlite3.connect(db), "against": sqlite3.connect(theirs)}
    names = "SELECT name, length(sql) FROM sqlite_master WHERE type = 'view' AND name LIKE 'flat_%'"
    sizes = {k: dict(c.execute(names).fetchall()) for k, c in cons.items()}
    out = []
    for name in sorted(set(sizes["now"]) & set(sizes["against"])):
        query = f"SELECT timestamp_iso, value FROM {name}"
        texts = {k: c.execute(query).fetchall() for k, c in cons.items()}
        cpu: dict[str, list[float]] = {"now": [], "against": []}
        for _ in range(2):
            for k, c in cons.items():
                cpu[k].append(
                    best(
                        lambda c=c, q=query: c.execute(q).fetchall(), args.rounds, time.process_time
                    )
                )
        same = texts["now"] == texts["against"]
        out.append(
            {
                "view": name,
                "sql_bytes": {k: v[name] for k, v in sizes.items()},
                "cpu_s": cpu,
                "same_rows": same,
            }
        )
        print(
            f"{name:42} sql {sizes['against'][name]:>8,} -> {sizes['now'][name]:>6,} B  "
            f"CPU {', '.join(f'{t:.3f}' for t in cpu['against'])} -> "
            f"{', '.join(f'{t:.3f}' for t in cpu['now'])} s  "
            f"({min(cpu['now']) / min(cpu['against']):.2f}x)" + ("" if same else "  ROWS DIFFER")
        )
    for c in cons.values():
        c.close()
    file_sizes = {"now": db.stat().st_size, "against": theirs.stat().st_size}
    print(f"file {file_sizes['against']:,} -> {file_sizes['now']:,} B")
    if args.json:
        doc = {"rows": args.rows, "views": out, "file_bytes": file_sizes}
        Path(args.json).write_text(json.dumps(doc, indent=1))
    return 0 if all(o["same_rows"] for o in out) else 1


def _duckdb(db: Path):
    try:
        import duckdb
        import duckdb_extension_sqlite_scanner as wheel
    except ImportError:
        return None
    found = sorted(Path(wheel.__file__).parent.glob("extensions/*/sqlite_scanner.duckdb_extension"))
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    con.load_extension(str(found[-1]))
    con.execute(f"ATTACH '{db}' AS f (TYPE sqlite, READ_ONLY)")
    return con


if __name__ == "__main__":
    raise SystemExit(main())
