"""Issue 24 on the command line: per-series files (``export -f csv|json|jsonl``), the
export's phases on its bar, ``--progress`` / ``--no-progress``, what Ctrl-C says, and a
second ``-f`` honoured or refused."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest
from test_cli_contract import _env, _on_a_terminal, check, registry, run  # noqa: F401

from infrastore_sqlite import Store
from infrastore_sqlite.cli import render
from infrastore_sqlite.demo import build_demo_store


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.h5"
    build_demo_store(path).close()
    return path


def _one_series(pristine: Path, *selector: str, fmt: str = "csv") -> str:
    r = run("--store", str(pristine), "export", "-f", fmt, *selector)
    assert r.exit_code == 0, r.stderr
    return r.stdout


# ---------------------------------------------------------------------------- per series
def test_one_series_to_stdout_as_csv(pristine: Path) -> None:
    out = _one_series(
        pristine, "--owner-id", "101", "--type", "single", "--name", "max_active_power"
    )
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["timestamp", "value"]
    with Store.open(pristine, read_only=True) as store:
        (meta,) = store.list_metadata(owner_id=101, time_series_type="SingleTimeSeries")
        series = store.read_by_id(meta["id"])
    assert len(rows) - 1 == len(series.data)
    assert [float(v) for _, v in rows[1:]] == series.data.tolist()
    assert rows[1][0] == "2024-07-01T00:00:00+00:00"


def test_time_range_clips_the_series(pristine: Path) -> None:
    out = _one_series(pristine, "--owner-id", "101", "--type", "single",
                      "--time-range", "2024-07-02T00:00:00Z..2024-07-02T06:00:00Z")  # fmt: skip
    rows = list(csv.reader(io.StringIO(out)))
    assert len(rows) == 1 + 6
    assert rows[1][0] == "2024-07-02T00:00:00+00:00"


def test_a_forecast_carries_its_issue_time(pristine: Path) -> None:
    out = _one_series(pristine, "--owner-id", "101", "--type", "probabilistic")
    header = next(csv.reader(io.StringIO(out)))
    assert header[:2] == ["issue_time", "target_time"]
    assert all(c.startswith("value[p") for c in header[2:]) and len(header) > 3


def test_one_series_as_json_and_jsonl(pristine: Path, registry) -> None:  # noqa: F811
    doc = json.loads(_one_series(pristine, "--owner-id", "101", "--type", "single", fmt="json"))
    check(registry, "get.json", doc)  # the document get -f json prints
    assert doc["columns"] == ["timestamp", "value"]
    lines = _one_series(pristine, "--owner-id", "101", "--type", "single", fmt="jsonl")
    objects = [json.loads(line) for line in lines.splitlines()]
    assert objects == doc["items"]


def test_several_series_without_dir_are_listed(pristine: Path) -> None:
    r = run("--store", str(pristine), "export", "-f", "csv", "--owner-id", "101")
    assert r.exit_code == 1 and r.stdout == ""
    assert "the selection matches" in r.stderr
    # export takes --id too, so the way out names it first, as get's does.
    assert "narrow it with --id or another selector flag (--owner-id" in r.stderr
    assert "--dir DIR" in r.stderr


def test_export_without_a_selector_names_its_own_flags(pristine: Path) -> None:
    """export -f csv's refusal names the flags export takes (issue 38), --dir among them."""
    r = run("--store", str(pristine), "export", "-f", "csv")
    assert r.exit_code == 2 and r.stdout == ""
    assert "export -f csv needs a selector: --id N, or --owner-id, --name, --type" in r.stderr
    assert "--dir DIR for a file per series" in r.stderr and "get needs" not in r.stderr
    r = run("--store", str(pristine), "get")
    assert r.exit_code == 2 and "get needs a selector: --id N" in r.stderr


def test_the_global_help_lists_every_format_and_where(pristine: Path) -> None:
    out = run("--help").stdout
    text = " ".join(out.split())
    assert "Every command: table (default), json, jsonl or csv." in text
    assert "export: sqlite (--db FILE) or parquet (--dir DIR), or csv, json or jsonl" in text


def test_one_file_per_series_in_a_directory(pristine: Path, tmp_path: Path, registry) -> None:  # noqa: F811
    out = tmp_path / "series"
    r = run("--store", str(pristine), "export", "-f", "csv", "--dir", str(out),
            "--owner-type", "PowerLoad", "--summary", "json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    written = json.loads(r.stdout)
    check(registry, "export-series-files.json", written)
    with Store.open(pristine, read_only=True) as store:
        ids = [m["id"] for m in store.list_metadata(owner_type="PowerLoad")]
    assert sorted(w["id"] for w in written) == sorted(ids)
    assert sorted(p.name for p in out.iterdir()) == sorted(Path(w["file"]).name for w in written)
    first = Path(written[0]["file"])
    assert first.name.startswith(f"{written[0]['id']}_{written[0]['owner_id']}_")
    assert len(first.read_text().splitlines()) == written[0]["rows"] + 1
    again = run("--store", str(pristine), "export", "-f", "csv", "--dir", str(out),
                "--owner-type", "PowerLoad")  # fmt: skip
    assert again.exit_code == 1 and "already holds" in again.stderr
    assert "nothing was written" in again.stderr


# ---------------------------------------------------------------------------- -f twice
def test_a_second_f_naming_the_container_is_honoured(pristine: Path, tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    r = run("--store", str(pristine), "-f", "json", "export", "-f", "sqlite", "--db", str(db))
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)[0]["values_table"] == "SingleTimeSeries_f64_utc_values"
    assert db.exists()


def test_a_second_f_that_disagrees_is_refused(pristine: Path, tmp_path: Path) -> None:
    r = run("--store", str(pristine), "-f", "json", "export", "-f", "csv", "--db", "x.db")
    assert r.exit_code == 2 and "-f is given twice (-f json, then -f csv)" in r.stderr
    r = run("--store", str(pristine), "-f", "sqlite", "list")
    assert r.exit_code == 2 and "-f sqlite is not an output format of list" in r.stderr


# ---------------------------------------------------------------------------- progress
def test_progress_forces_the_bar_without_a_terminal(pristine: Path, tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    r = run("--store", str(pristine), "--progress", "export", "-f", "sqlite", "--db", str(db))
    assert r.exit_code == 0
    assert "export writing values" in r.stderr and "export writing views" in r.stderr
    quiet = run("--store", str(pristine), "export", "-f", "sqlite", "--db", str(tmp_path / "q.db"))
    assert "export writing" not in quiet.stderr  # no terminal, no flag: no bar


def test_no_progress_silences_the_bar_on_a_terminal(pristine: Path, tmp_path: Path) -> None:
    code, out, err = _on_a_terminal(
        ["--store", str(pristine), "--no-progress", "export", "-f", "sqlite", "--db", "t.db"],
        tmp_path,
    )
    assert code == 0 and out.startswith("values_table")
    assert "%" not in err and "export writing" not in err


# ---------------------------------------------------------------------------- Ctrl-C
def _interrupt_after(monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    """Ctrl-C as the library sees it: KeyboardInterrupt out of a progress report."""
    seen = {"n": 0}

    def tick(self: render.Progress, done: int, total: int) -> None:
        seen["n"] += 1
        if seen["n"] > calls:
            raise KeyboardInterrupt

    monkeypatch.setattr(render.Progress, "__call__", tick)


def test_ctrl_c_in_an_export_says_nothing_was_written(
    pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _interrupt_after(monkeypatch, 1)
    db = tmp_path / "x.db"
    r = run("--store", str(pristine), "export", "-f", "sqlite", "--db", str(db))
    assert r.exit_code == 130
    assert r.stderr.strip().splitlines() == [f"interrupted: nothing was written to {db} "
                                             "(an export adds its tables in one transaction, "
                                             "or builds a new file beside the target)"]  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_in_an_import_names_the_command_that_resumes(
    pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "x.db"
    assert run("--store", str(pristine), "export", "-f", "sqlite", "--db", str(db)).exit_code == 0
    copy = tmp_path / "copy.h5"
    assert run("--store", str(copy), "init").exit_code == 0
    with monkeypatch.context() as m:
        _interrupt_after(m, 3)
        r = run("--store", str(copy), "add", "--sqlite", str(db))
    assert r.exit_code == 130
    (line,) = r.stderr.strip().splitlines()
    # The line names the partitions that committed (from the report the import hangs on
    # the interrupt), the one rolled back, and the command that resumes.
    with Store.open(copy, read_only=True) as store:
        partial = len(store.list_metadata())
    assert 0 < partial < 14
    committed = _first_partitions(db, partial)
    assert line.startswith(
        f"interrupted: {len(committed)} partition(s) committed before Ctrl-C stay in the store "
        f"({partial} series: {', '.join(committed)}), "
    ), line
    assert " was rolled back; resume with `" in line
    resume = line.split("resume with `", 1)[1].rstrip("`")
    assert resume.endswith(f"add --sqlite {db} --ignore")
    again = run(*resume.split()[1:])
    assert again.exit_code == 0, again.stderr
    with Store.open(copy, read_only=True) as store:
        assert len(store.list_metadata()) == 14


def _first_partitions(db: Path, series: int) -> list[str]:
    """The values tables of the file's first partitions in import order (binary order of
    the names) that hold ``series`` series between them."""
    conn = apsw.Connection(str(db))
    try:
        names = sorted(
            (n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")),
            key=str.encode,
        )
        out, total = [], 0
        for name in (n for n in names if n.endswith("_values")):
            if total == series:
                return out
            out.append(name)
            total += conn.execute(f'SELECT count(*) FROM "{name[: -len("_values")]}_series"').get
    finally:
        conn.close()
    assert total == series, (out, total)
    return out


def test_a_real_sigint_prints_one_line(tmp_path: Path) -> None:
    """SIGINT to a CLI process blocked reading its CSV from stdin: exit 130, one line."""
    store = tmp_path / "s.h5"
    assert run("--store", str(store), "init").exit_code == 0
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "infrastore_sqlite",
            "--store",
            str(store),
            "add",
            "--csv",
            "-",
            "--owner-id",
            "1",
            "--owner-type",
            "X",
            "--name",
            "n",
            "--type",
            "single",
            "--resolution",
            "PT1H",
        ],
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"timestamp,value\n2024-01-01T00:00:00Z,1\n")
        proc.stdin.flush()
        # Wait until it is blocked reading the rest of stdin (the kernel says where).
        wchan = Path(f"/proc/{proc.pid}/wchan")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if wchan.exists() and "pipe" in wchan.read_text() and _reading_stdin(proc.pid):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the CLI never blocked reading stdin")
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert err.decode().strip().splitlines() == [
        "interrupted: nothing was added (the series go in together or not at all)"
    ]
    assert out == b""


def _reading_stdin(pid: int) -> bool:
    """True when the process's main thread sits in read(0, …) (x86-64 and arm64 number
    read 0 and 63; the first argument is the file descriptor)."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return True  # not readable here: the wait channel alone decides
    return len(fields) > 1 and fields[0] in ("0", "63") and int(fields[1], 16) == 0


def test_an_unwritable_target_is_named_as_given(pristine: Path) -> None:
    """The refusal names --db as the user gave it, not the hidden file built beside it."""
    r = run("--store", str(pristine), "export", "-f", "sqlite", "--db", "/proc/x.db")
    assert r.exit_code == 1
    assert r.stderr.startswith("Error: cannot create /proc/x.db (")
    assert ".partial" not in r.stderr and "nothing was written" in r.stderr


def test_an_empty_range_prints_the_header_only(pristine: Path) -> None:
    out = _one_series(pristine, "--owner-id", "101", "--type", "single",
                      "--time-range", "2024-07-09T00:00:00Z..2024-07-10T00:00:00Z")  # fmt: skip
    assert out.splitlines() == ["timestamp,value"]


def test_a_refusal_part_way_takes_the_files_back(pristine: Path, tmp_path: Path) -> None:
    """A range past a forecast's last window is refused for that series: the files
    written before it are removed, as the other exports write nothing."""
    out = tmp_path / "files"
    r = run("--store", str(pristine), "export", "-f", "csv", "--dir", str(out), "--zoned",
            "--time-range", "2024-08-02T00:00:00Z..2024-08-03T00:00:00Z")  # fmt: skip
    assert r.exit_code == 1 and "past the last window" in r.stderr
    assert list(out.iterdir()) == []


def test_json_keeps_nan_and_the_infinities_apart(tmp_path: Path, registry) -> None:  # noqa: F811
    """NaN, +inf and -inf each keep their own spelling in JSON and JSON lines (null,
    "Infinity", "-Infinity", as the SQLite file's JSON cells spell them), in get and in
    export, and CSV keeps NaN, inf, -inf."""
    from datetime import UTC, datetime

    import numpy as np

    from infrastore_sqlite import SingleTimeSeries

    path = tmp_path / "s.h5"
    with Store.create(path) as store:
        data = np.array([1.5, np.nan, np.inf, -np.inf])
        ts = SingleTimeSeries(datetime(2024, 1, 1, tzinfo=UTC), "PT1H", data, "x")
        store.add_time_series(1, "Gen", "Component", ts)
    spelled = [1.5, None, "Infinity", "-Infinity"]
    for command in ("get", "export"):
        fmt_first = command == "get"
        for fmt in ("json", "jsonl"):
            args = ("-f", fmt, command) if fmt_first else (command, "-f", fmt)
            r = run("--store", str(path), *args, "--name", "x")
            assert r.exit_code == 0, r.stderr
            if fmt == "json":
                doc = json.loads(r.stdout)
                check(registry, "get.json", doc)
                items = doc["items"]
            else:
                items = [json.loads(line) for line in r.stdout.splitlines()]
                for item in items:
                    check(registry, "get-row.json", item)
            assert [i["value"] for i in items] == spelled, (command, fmt)
    r = run("--store", str(path), "export", "-f", "csv", "--name", "x")
    assert [row[1] for row in csv.reader(io.StringIO(r.stdout))][1:] == [
        "1.5",
        "NaN",
        "inf",
        "-inf",
    ]
