"""The hostile-file campaign (issue 34, Must 7): each hostile variant of one export goes
through the command line (``diff``, ``add`` into a fresh store, ``add --replace`` into a
copy of the store it came from, ``rehash``), each command in its own process under a cap
(4 GB of address space, 60 s), and must be refused: exit status 1, one ``Error:`` line
naming the problem, no traceback, no "internal error", and the store it came from
unchanged. Each command's peak RSS and time are measured; the clean file's commands are
the baseline (docs/durability.md holds the table: set ``INFRASTORE_CAMPAIGN_TABLE`` to a
path to have it written).

The bombs are cheap to build and to refuse: Parquet files of a few hundred bytes written
byte by byte (:mod:`.bombs`) whose pages decode to 10⁸–10⁹ rows, refused from the footer
or at the second row.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pyarrow.parquet as pq
import pytest

from infrastore_sqlite import NonSequentialTimeSeries, SingleTimeSeries, Store

from .bombs import double, int64, string, timestamp_ms, write_bomb

T0 = datetime(2024, 1, 1, tzinfo=UTC)
STS = "SingleTimeSeries_f64_utc"
PQ = "SingleTimeSeries.f64.utc"
CAP_BYTES = 4 * 2**30
TIMEOUT_S = 60
#: What a hostile file may make a command use beyond the same command on the clean file.
MARGIN_BYTES = 256 * 2**20
COMMANDS = ("diff", "add", "add --replace", "rehash")


@dataclass
class Case:
    name: str
    kind: str  # "sqlite" or "parquet"
    build: Callable[[Path], None]  # edits the copy of the clean export in place
    said: str  # what the refusal line must contain
    commands: tuple[str, ...] = COMMANDS


# ------------------------------------------------------------------------------ builders
def edit(db: Path, *sql: str) -> None:
    conn = apsw.Connection(str(db))
    for statement in sql:
        conn.execute(statement)
    conn.close()


def _footer(path: Path) -> dict[bytes, bytes]:
    meta = pq.read_metadata(path).metadata or {}
    return {k: v for k, v in meta.items() if k != b"ARROW:schema"}


def values_bomb(rows: int) -> Callable[[Path], None]:
    """One array of ``rows`` rows, one run-length encoded value (issue: 2·10⁸ and 10⁹)."""

    def build(d: Path) -> None:
        values = d / f"{PQ}.values.parquet"
        cols = [
            int64("array_id", 1),
            timestamp_ms("timestamp", int(T0.timestamp() * 1000)),
            double("value", 0.0),
        ]
        write_bomb(values, cols, rows, _footer(values))

    return build


def series_bomb(rows: int, units: str | None = None) -> Callable[[Path], None]:
    """``rows`` copies of the series file's first row (issue: 10⁸ copies, 0.2 MB), its
    ``units`` replaced when given."""

    def build(d: Path) -> None:
        series = d / f"{PQ}.series.parquet"
        table = pq.read_table(series)
        first = table.slice(0, 1).to_pylist()[0]
        cols = []
        for field in table.schema:
            value = first[field.name]
            if str(field.type).startswith("timestamp"):
                cols.append(timestamp_ms(field.name, int(value.timestamp() * 1000)))
            elif str(field.type) == "int64":
                cols.append(int64(field.name, value))
            else:
                text = units if field.name == "units" and units is not None else value
                cols.append(string(field.name, text))
        write_bomb(series, cols, rows, _footer(series))

    return build


def sqlite_sql(*sql: str) -> Callable[[Path], None]:
    return lambda db: edit(db, *sql)


def manifest(name: str) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        entry = {"name": name, "size": 1}
        (d / "_infrastore_manifest.json").write_text(json.dumps({"files": [entry]}))

    return build


def symlink_out(d: Path) -> None:
    values = d / f"{PQ}.values.parquet"
    outside = d.parent / "outside.parquet"
    shutil.move(values, outside)
    values.symlink_to(outside)


def journal_link(db: Path) -> None:
    outside = db.parent / "outside-journal"
    outside.write_bytes(b"")
    Path(f"{db}-journal").symlink_to(outside)


def relabel_parquet(d: Path) -> None:
    """Owner 103's series row relabelled as owner 101: one series listed twice."""
    import pyarrow as pa
    import pyarrow.compute as pc

    series = d / f"{PQ}.series.parquet"
    table = pq.read_table(series)
    owner = table.column("owner_id")
    fixed = pc.if_else(pc.equal(owner, 103), pa.scalar(101, pa.int64()), owner)
    pq.write_table(
        table.set_column(table.schema.get_field_index("owner_id"), "owner_id", fixed), series
    )


# A -0 beside 990 nested arrays: short enough for a tuple's cell bound, deep enough for
# Python's recursion limit.
DEEP = "[-0," + "[" * 990 + "]" * 990 + ",1]"
TUPLE = "SingleTimeSeries_tuple3_f64_utc"
BIG_CELL = 32 * 2**20  # beyond the default 16 MiB bound, cheap to write (zeroblob)

CASES = [
    Case("values bomb, 2·10⁸ rows (RLE)", "parquet", values_bomb(200_000_000), "rows of one array"),
    Case("values bomb, 10⁹ rows (RLE)", "parquet", values_bomb(1_000_000_000), "rows of one array"),
    Case("series bomb, 10⁸ copies of a row", "parquet", series_bomb(100_000_000), "holds series id 1 twice (again at row 2)"),
    Case("20 MiB text in a Parquet series cell", "parquet", series_bomb(1, "x" * (20 * 2**20)), "column `units`: the cell holds 20,971,520 bytes"),
    Case("8 MiB text in every one of 10⁴ series rows (one dictionary entry)", "parquet", series_bomb(10_000, "x" * (8 * 2**20)), "holds series id 1 twice (again at row 2)"),
    Case("series listed twice (Parquet)", "parquet", relabel_parquet, "appears twice in the file", ("diff", "add", "add --replace")),
    Case("manifest name ../../etc/passwd", "parquet", manifest("../../etc/passwd"), "a name that leaves"),
    Case("values file a symlink out of the directory", "parquet", symlink_out, "is a symbolic link to"),
    Case("32 MiB text in a series cell", "sqlite", sqlite_sql(f"UPDATE {STS}_series SET units = CAST(zeroblob({BIG_CELL}) AS TEXT) WHERE rowid = 2"), "column `units`: the cell is longer than"),
    Case("32 MiB blob in a value cell", "sqlite", sqlite_sql(f"UPDATE {STS}_values SET value = zeroblob({BIG_CELL}) WHERE rowid = 5"), "column `value`"),
    Case("nested JSON (990 levels in a tuple cell)", "sqlite", sqlite_sql(f"UPDATE {TUPLE}_values SET value = '{DEEP}' WHERE rowid = 5"), "nests deeper than any element"),
    Case("text not UTF-8", "sqlite", sqlite_sql(f"UPDATE {STS}_series SET name = CAST(x'47ff' AS TEXT) WHERE rowid = 1"), "not valid UTF-8"),
    Case("series listed twice (SQLite)", "sqlite", sqlite_sql(f"UPDATE {STS}_series SET owner_id = 101 WHERE owner_id = 103"), "appears twice in the file", ("diff", "add", "add --replace")),
    Case("values table dropped", "sqlite", sqlite_sql(f"DROP TABLE {STS}_values"), f"but no {STS}_values beside it"),
    Case("values table a view", "sqlite", sqlite_sql(f"ALTER TABLE {STS}_values RENAME TO kept", f"CREATE VIEW {STS}_values AS SELECT * FROM kept"), "is a view, not a table"),
    Case("instant INT64_MAX ms", "sqlite", sqlite_sql(f"UPDATE {STS}_values SET timestamp = 9223372036854775807 WHERE rowid = 5"), "is outside the years 1 to 9999"),
    Case("instant INT64_MIN ms, first", "sqlite", sqlite_sql("UPDATE NonSequentialTimeSeries_f64_utc_values SET timestamp = -9223372036854775808 WHERE rowid = 1"), "is outside the years 1 to 9999"),
    Case("-journal a symlink", "sqlite", journal_link, "is a symbolic link"),
]  # fmt: skip


# ------------------------------------------------------------------------------ running
# Each command runs in a fresh interpreter started by a small launcher that sets the cap
# and the directory, runs the command in its own process and, at exit, writes the
# process's peak resident set (VmHWM: of this process alone; a child's rusage would also
# count the pages of the test process it was forked or spawned from).
_LAUNCH = f"""
import atexit, os, resource, runpy, sys
resource.setrlimit(resource.RLIMIT_AS, ({CAP_BYTES}, {CAP_BYTES}))
os.chdir(sys.argv[1])
peak_file = sys.argv[2]

def peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                with open(peak_file, "w") as f:
                    f.write(line.split()[1])

atexit.register(peak)
sys.argv = ["infrastore-sqlite", *sys.argv[3:]]
runpy.run_module("infrastore_sqlite", run_name="__main__", alter_sys=True)
"""


def run_cli(args: list[str], cwd: Path) -> dict[str, Any]:
    """One command in its own process under the cap: exit status, stderr, peak RSS (the
    process's own high-water mark) and time."""
    env = dict(os.environ)
    env.pop("INFRASTORE_SQLITE_DEBUG", None)
    tag = time.monotonic_ns()
    out, err = cwd / f".out-{tag}", cwd / f".err-{tag}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    began = time.monotonic()
    peak = cwd / f".peak-{tag}"
    pid = os.posix_spawn(
        sys.executable,
        [sys.executable, "-c", _LAUNCH, str(cwd), str(peak), *args],
        env,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, str(out), flags, 0o644),
            (os.POSIX_SPAWN_OPEN, 2, str(err), flags, 0o644),
        ],
    )
    status: int | str = "timeout"
    rss = 0
    while time.monotonic() - began < TIMEOUT_S:
        done, code, _usage = os.wait4(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(code)
            rss = int(peak.read_text()) * 1024 if peak.exists() else 0  # KiB
            peak.unlink(missing_ok=True)
            break
        time.sleep(0.02)
    else:
        os.kill(pid, 9)
        os.wait4(pid, 0)
    result = {
        "status": status,
        "stdout": out.read_text(errors="replace"),
        "stderr": err.read_text(errors="replace"),
        "rss": rss,
        "seconds": time.monotonic() - began,
    }
    out.unlink()
    err.unlink()
    return result


def command_args(command: str, kind: str, path: Path, store: Path) -> list[str]:
    source = ["--sqlite", str(path)] if kind == "sqlite" else ["--parquet", str(path)]
    if command == "diff":
        return ["--store", str(store), "diff", *source]
    if command == "add":
        return ["--store", str(store), "add", *source]
    if command == "add --replace":
        return ["--store", str(store), "add", *source, "--replace"]
    target = ["--db", str(path)] if kind == "sqlite" else ["--dir", str(path)]
    return ["rehash", *target]


# ------------------------------------------------------------------------------ the campaign
@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store the exports came from, its SQLite export and its Parquet export."""
    d = tmp_path_factory.mktemp("campaign")
    with Store.create(d / "orig.h5") as s:
        for owner in (101, 102, 103):
            ts = SingleTimeSeries(T0, "PT1H", np.arange(2000.0) + owner, "load")
            s.add_time_series(owner, "Gen", "Component", ts)
        stamps = [T0.replace(hour=h) for h in (1, 3, 4)]
        s.add_time_series(
            101, "Gen", "Component", NonSequentialTimeSeries(stamps, [1.0, 2, 3], "e")
        )
        triples = [[float(i), i + 0.5, -float(i)] for i in range(24)]
        ts = SingleTimeSeries.from_values(T0, "PT1H", triples, "t")
        s.add_time_series(104, "Gen", "Component", ts)
        s.export_sqlite(d / "clean.db")
        s.export_parquet(d / "clean_pq")
    return d


def held(store: Path) -> list[tuple]:
    """Everything a store holds that a refusal must leave as it was."""
    with Store.open(store, read_only=True) as s:
        rows = sorted(s.list_metadata(), key=lambda m: m["id"])
        return [(tuple(sorted(m.items())), s.read_by_id(m["id"]).data.tobytes()) for m in rows]


def _setup(origin: Path, work: Path, kind: str, build: Callable[[Path], None] | None) -> Path:
    """A copy of the clean export in ``work``, made hostile by ``build``."""
    work.mkdir(parents=True)
    if kind == "sqlite":
        path = work / "x.db"
        shutil.copy(origin / "clean.db", path)
    else:
        path = work / "pq"
        shutil.copytree(origin / "clean_pq", path)
    if build is not None:
        build(path)
    return path


def _run_case(origin: Path, work: Path, kind: str, build: Any, commands: tuple) -> dict:
    """Every command of one case, each on its own copy (the file, the stores)."""
    results = {}
    for command in commands:
        at = work / command.replace(" ", "").replace("-", "")
        path = _setup(origin, at, kind, build)
        if command == "add":
            store = at / "fresh.h5"
            Store.create(store).close()
        else:
            store = at / "orig.h5"
            shutil.copytree(origin / "orig.h5", store)
        results[command] = run_cli(command_args(command, kind, path, store), at)
        results[command]["store"] = store
    return results


def test_every_hostile_file_is_refused_in_one_line_within_the_bounds(origin, tmp_path) -> None:
    before = held(origin / "orig.h5")
    jobs: dict[tuple[str, str], Any] = {}
    with ThreadPoolExecutor(max_workers=3) as pool:
        for kind in ("sqlite", "parquet"):
            jobs[("clean", kind)] = pool.submit(
                _run_case, origin, tmp_path / f"clean-{kind}", kind, None, COMMANDS
            )
        for n, case in enumerate(CASES):
            jobs[(case.name, case.kind)] = pool.submit(
                _run_case, origin, tmp_path / f"case{n}", case.kind, case.build, case.commands
            )
    runs = {key: job.result() for key, job in jobs.items()}
    rows = []
    problems = []
    for kind in ("sqlite", "parquet"):
        for command, r in runs[("clean", kind)].items():
            assert r["status"] == 0 and r["rss"] > 0, (kind, command, r["stderr"])
            rows.append(("clean " + kind, command, r, None))
    for case in CASES:
        for command, r in runs[(case.name, case.kind)].items():
            base = runs[("clean", case.kind)][command]
            rows.append((case.name, command, r, base))
            lines = r["stderr"].strip().splitlines()
            first = lines[0] if lines else ""
            if (
                r["status"] != 1
                or not first.startswith("Error: ")
                or case.said not in first
                or "Traceback" in r["stderr"]
                or "internal error" in r["stderr"]
                or not 0 < r["rss"] <= base["rss"] + MARGIN_BYTES  # 0: not measured
            ):
                problems.append((case.name, command, r["status"], r["rss"], r["stderr"][:600]))
            if command == "add --replace":
                # The store the file came from is as it was after the refusal.
                assert held(r["store"]) == before, (case.name, "changed the original store")
    _write_table(rows)
    assert not problems, "\n".join(map(str, problems))


def test_rehash_never_runs_the_files_triggers(origin, tmp_path) -> None:
    """A trigger stored in the file would set units = 'kW' when rehash updates the arrays
    rows: the command line names it and nothing of it fires."""
    db = _setup(origin, tmp_path / "t", "sqlite", None)
    edit(
        db,
        f"UPDATE {STS}_values SET value = value + 1 WHERE array_id = 1",
        f"CREATE TRIGGER reviewed AFTER UPDATE ON {STS}_arrays BEGIN "
        f"UPDATE {STS}_series SET units = 'kW'; END",
    )
    r = run_cli(["rehash", "--db", str(db)], tmp_path)
    assert r["status"] == 0, r["stderr"]
    assert "holds 1 trigger(s) (reviewed); none of them was run" in r["stderr"]
    conn = apsw.Connection(str(db))
    assert conn.execute(f"SELECT DISTINCT units FROM {STS}_series").fetchall() == [("",)]
    conn.close()


def _write_table(rows: list) -> None:
    """The measured table, as docs/durability.md shows it (when asked for)."""
    target = os.environ.get("INFRASTORE_CAMPAIGN_TABLE")
    if not target:
        return
    mib = 2**20
    lines = [
        "| Case | Command | Exit | Peak RSS (MiB) | vs clean | Time (s) |",
        "|---|---|---|---|---|---|",
    ]
    for name, command, r, base in rows:
        delta = "" if base is None else f"{(r['rss'] - base['rss']) / mib:+.0f}"
        lines.append(
            f"| {name} | {command} | {r['status']} | {r['rss'] / mib:.0f} | {delta} | "
            f"{r['seconds']:.1f} |"
        )
    Path(target).write_text("\n".join(lines) + "\n")
