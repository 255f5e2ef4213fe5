"""The command line's contract: exit codes, what goes to stdout and stderr, the JSON
outputs against schemas/cli/*.json, exact wording of the main refusals, global options
on either side of the command, progress bars only on a terminal. A few checks run the
real program in a subprocess (pipes, a pseudo-terminal)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from repo_root import REPO_ROOT

from infrastore_sqlite.cli import cli
from infrastore_sqlite.demo import build_demo_store, data_file

ROOT = REPO_ROOT
SCHEMAS = ROOT / "schemas" / "cli"


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False)


@pytest.fixture(scope="module")
def registry() -> Registry:
    resources = []
    for path in SCHEMAS.glob("*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources)


def check(registry: Registry, name: str, doc: object) -> None:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema, registry=registry).validate(doc)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.h5"
    build_demo_store(path).close()
    return path


@pytest.fixture
def demo(pristine: Path, tmp_path: Path) -> str:
    target = tmp_path / "demo.h5"
    shutil.copytree(pristine, target)
    return str(target)


# ---------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["list"], 0),
        (["--help"], 0),
        (["--version"], 0),
        (["get", "--id", "1", "--limit", "1"], 0),
        (["get", "--id", "99"], 1),  # nothing matches
        (["get", "--owner-id", "201"], 1),  # ambiguous
        (["remove", "--id", "1"], 1),  # no terminal to confirm on, no -y
        (["transform", "--horizon", "PT200H", "--interval", "PT1H"], 1),  # horizon too long
        (["list", "--bogus"], 2),
        (["bogus"], 2),
        (["list", "--resolution", "1h"], 2),
        (["list", "-f", "xml"], 2),
        (["list", "-f", "sqlite"], 2),
        (["list", "--limit", "-1"], 2),
        (["transform", "--horizon", "PT1H"], 2),  # --interval missing
        (["export"], 2),  # values export (no --db) is left for later
    ],
)
def test_exit_codes(demo: str, args: list[str], code: int) -> None:
    result = run("--store", demo, *args)
    assert result.exit_code == code, result.stderr
    if code:
        assert result.stdout == ""
        assert result.stderr.strip()
        assert "Traceback" not in result.stderr


def test_missing_store_wording(tmp_path: Path) -> None:
    missing = tmp_path / "missing.h5"
    r = run("--store", str(missing), "list")
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == (
        f"Error: no store at {missing}: it does not exist; create one with "
        f"`infrastore-sqlite --store {missing} init`\n"
    )
    # In Python the same refusal names the API's way (never a command line).
    from infrastore_sqlite import Store
    from infrastore_sqlite.errors import IoError

    with pytest.raises(IoError) as exc:
        Store.open(missing)
    assert str(exc.value) == (
        f"no store at {missing}: it does not exist; create one with Store.create({str(missing)!r})"
    )


def test_no_store_given_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INFRASTORE_STORE", raising=False)
    r = run("list")
    assert r.exit_code == 2
    assert r.stderr.endswith(
        "Error: no store given: pass --store PATH or set INFRASTORE_STORE (create one with "
        "`infrastore-sqlite --store PATH init`, or try `infrastore-sqlite demo demo-store`)\n"
    )


@pytest.mark.parametrize(
    ("flag", "text", "suggestion"),
    [
        ("--resolution", "1h", "'PT1H'"),
        ("--resolution", "pt15m", "'PT15M'"),
        ("--resolution", "15m", "'PT15M' (minutes) or 'P15M' (months)"),
    ],
)
def test_bad_duration_wording(demo: str, flag: str, text: str, suggestion: str) -> None:
    r = run("--store", demo, "list", flag, text)
    assert r.exit_code == 2
    assert r.stderr.endswith(
        f"Error: Invalid value for '{flag}': invalid duration '{text}': durations are "
        f"ISO-8601 — did you mean {suggestion}?\n"
    )


def test_bad_flag_wording(demo: str) -> None:
    r = run("--store", demo, "list", "--nmae", "x")
    assert r.exit_code == 2
    assert r.stderr.endswith(
        "Error: no such option '--nmae'; did you mean '--name' or '--zoned'?\n"
    )
    r = run("--bogus", "list")
    assert r.exit_code == 2 and r.stderr.endswith("Error: no such option '--bogus'\n")


_GRID = (
    "the rows imply the grid (a SingleTimeSeries starts at its first timestamp, a "
    "forecast's windows are its issue_time column)"
)


@pytest.mark.parametrize(
    ("flag", "value", "reason"),
    [
        ("--initial-timestamp", "2024-01-01T00:00:00Z", _GRID),
        ("--interval", "PT1H", _GRID),
        ("--horizon", "PT1H", _GRID),
        ("--count", "2", _GRID),
        ("--percentile", "0.5", _GRID),
        ("--scenario-count", "3", _GRID),
        ("--layout", "long", "it describes a CSV's columns"),
        ("--owner-map", "map.csv", "it describes a CSV's columns"),
        ("--owner-id-from", "header", "it describes a CSV's columns"),
    ],
)
def test_sqlite_refuses_grid_and_layout_flags(
    demo: str, flag: str, value: str, reason: str
) -> None:
    r = run("--store", demo, "add", "--sqlite", "x.db", flag, value)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.endswith(f"Error: {flag} cannot be used with --sqlite: {reason}\n")


def test_sqlite_refusals_name_every_flag(demo: str) -> None:
    r = run("--store", demo, "add", "--sqlite", "x.db", "--horizon", "PT1H", "--layout", "wide")
    assert "--horizon cannot be used with --sqlite" in r.stderr
    assert "--layout cannot be used with --sqlite" in r.stderr


# ---------------------------------------------------------------------------- globals


def test_global_options_before_or_after_the_command(
    demo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    forms = [
        ["--store", demo, "-f", "json", "list", "--type", "scenarios"],
        ["list", "--type", "scenarios", "--store", demo, "-f", "json"],
        ["-f", "json", "list", "--store", demo, "--type", "scenarios"],
        ["--store", demo, "list", "--format", "JSON", "--type", "scenarios"],
        ["-f", "json", "--store", demo, "list", "-f", "json", "--type", "scenarios"],
    ]
    outputs = {run(*form).stdout for form in forms}
    assert len(outputs) == 1
    # Two -f that disagree are refused, not settled by the last one (issue 24).
    both = run("-f", "table", "--store", demo, "list", "-f", "json", "--type", "scenarios")
    assert both.exit_code == 2 and "-f is given twice (-f table, then -f json)" in both.stderr
    assert json.loads(outputs.pop())["items"][0]["name"] == "inflow"
    monkeypatch.setenv("INFRASTORE_STORE", demo)
    assert json.loads(run("-f", "json", "list", "--type", "scenarios").stdout)["items"]
    assert run("remove", "--id", "14", "-y").exit_code == 0  # -y after the command


def test_quiet_silences_notes(tmp_path: Path) -> None:
    loud = run("demo", str(tmp_path / "a.h5"))
    assert loud.exit_code == 0 and "next: infrastore-sqlite --store" in loud.stderr
    quiet = run("demo", str(tmp_path / "b.h5"), "-q")
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert quiet.stdout == loud.stdout.replace("a.h5", "b.h5")


# ---------------------------------------------------------------------------- JSON outputs


def test_json_outputs_match_their_schemas(
    registry: Registry, demo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def js(*args: str) -> object:
        r = run("-f", "json", *args)
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout)

    check(registry, "init.json", js("init", str(tmp_path / "fresh.h5")))
    check(registry, "demo.json", js("demo", str(tmp_path / "d2.h5")))
    check(registry, "list.json", js("--store", demo, "list"))
    for line in run("--store", demo, "-f", "jsonl", "list").stdout.splitlines():
        check(registry, "series.json", json.loads(line))
    for sid in range(1, 15):
        check(registry, "get.json", js("--store", demo, "get", "--id", str(sid)))
    for line in run("--store", demo, "-f", "jsonl", "get", "--id", "13").stdout.splitlines():
        check(registry, "get-row.json", json.loads(line))
    check(registry, "info.json", js("--store", demo, "info"))
    check(registry, "verify.json", js("--store", demo, "verify"))
    db = str(tmp_path / "x.db")
    check(registry, "export-dry-run.json", js("--store", demo, "export", "--db", db, "--dry-run"))
    check(registry, "export.json", js("--store", demo, "export", "--db", db))
    check(registry, "export.json", js("--store", demo, "export", "--db", db, "--name", "none"))
    copy = str(tmp_path / "copy.h5")
    js("init", copy)
    check(registry, "add.json", js("--store", copy, "add", "--sqlite", db, "--dry-run"))
    check(registry, "add.json", js("--store", copy, "add", "--sqlite", db))
    check(registry, "add.json", js("--store", copy, "add", "--sqlite", db, "--replace"))
    check(registry, "add.json", js("--store", copy, "add", "--sqlite", db, "--ignore", "--dry-run"))
    check(registry, "diff.json", js("--store", copy, "diff", "--sqlite", db))
    for line in run("--store", copy, "-f", "jsonl", "diff", "--sqlite", db).stdout.splitlines():
        check(registry, "diff.json", {"items": [json.loads(line)]})
    check(
        registry, "unshare.json", js("unshare", "--db", db, "--owner-id", "101", "--type", "single")
    )
    csv_args = ["--csv", str(data_file("wind.csv")), "--owner-id", "9", "--owner-type", "W",
                "--name", "n", "--type", "single", "--feature", "a=1"]  # fmt: skip
    check(registry, "add.json", js("--store", copy, "add", *csv_args, "--dry-run"))
    check(registry, "add.json", js("--store", copy, "add", *csv_args))
    check(registry, "transform.json", js("--store", demo, "transform", "--horizon", "PT2H",
                                         "--interval", "PT1H"))  # fmt: skip
    check(registry, "remove.json", js("--store", demo, "remove", "--name", "inflow", "--dry-run"))
    check(registry, "remove.json", js("--store", demo, "-y", "remove", "--name", "inflow"))
    check(registry, "rehash.json", js("rehash", "--db", db))
    check(registry, "remove.json", js("--store", demo, "-y", "remove", "--name", "inflow"))


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_errors_under_json_are_documents_on_stderr(
    registry: Registry, demo: str, tmp_path: Path, fmt: str
) -> None:
    failing = [
        ["--store", str(tmp_path / "missing.h5"), "list"],
        ["--store", demo, "get", "--owner-id", "201"],
        ["--store", demo, "get", "--name", "nothing"],
        ["--store", demo, "remove", "--id", "1"],
    ]
    for args in failing:
        r = run("-f", fmt, *args)
        assert (r.exit_code, r.stdout) == (1, "")
        if fmt == "jsonl":
            assert r.stderr.count("\n") == 1
        doc = json.loads(r.stderr)
        check(registry, "error.json", doc)
        assert doc["status"] == "error"
    # a failed per-partition import reports what it committed before the failure
    db = str(tmp_path / "x.db")
    assert run("--store", demo, "export", "--db", db).exit_code == 0
    r = run("-f", fmt, "--store", demo, "add", "--sqlite", db)
    doc = json.loads(r.stderr)
    check(registry, "error.json", doc)
    assert doc["added"] == 0 and doc["partitions"][0]["status"] == "failed"


def test_usage_errors_stay_prose_under_json(demo: str) -> None:
    r = run("-f", "json", "--store", demo, "list", "--bogus")
    assert r.exit_code == 2 and r.stderr.startswith("Usage:")


# ---------------------------------------------------------------------------- subprocesses


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("INFRASTORE_STORE", None)
    env.update(extra)
    return env


def _program(*args: str, cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "infrastore_sqlite", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )


def test_real_program_streams_and_exit_codes(pristine: Path, tmp_path: Path) -> None:
    done = _program(
        "--store", str(pristine), "export", "-f", "sqlite", "--db", "o.db", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # piped: no progress bar, no notes
    assert done.stdout.splitlines()[0].split() == ["values_table", "series", "arrays", "rows"]
    missing = _program("--store", "nope.h5", "-f", "json", "list", cwd=tmp_path)
    assert (missing.returncode, missing.stdout) == (1, "")
    assert json.loads(missing.stderr)["message"].startswith("no store at nope.h5")
    usage = _program("list", "--resolution", "1h", cwd=tmp_path)
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("timestamp,value\nyesterday,1\n", encoding="utf-8")
    refused = _program("--store", "new.h5", "add", "--csv", str(bad_csv), "--owner-id", "1",
                       "--owner-type", "X", "--name", "n", "--type", "single", "--dry-run",
                       cwd=tmp_path)  # fmt: skip
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith("Error: ") and "Traceback" not in refused.stderr


def _on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (stdout piped); return code, stdout, stderr."""
    pty = pytest.importorskip("pty")
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.Popen(
        [sys.executable, "-m", "infrastore_sqlite", *args],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
    )
    out, _ = proc.communicate(timeout=120)
    os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, out.decode(), b"".join(chunks).decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_progress_bar_only_on_a_terminal_and_not_with_quiet(pristine: Path, tmp_path: Path) -> None:
    code, out, err = _on_a_terminal(
        ["--store", str(pristine), "export", "-f", "sqlite", "--db", "t.db"], tmp_path
    )
    assert code == 0 and out.splitlines()[0].startswith("values_table")
    assert "export writing values:" in err and "%" in err  # a determinate tqdm bar
    # Every phase shows, so a bar at 100 % while the series and views go in is not a
    # stall (the index fills with the rows: no step of its own).
    assert "export writing series" in err and "export writing views" in err
    assert "indexing" not in err
    assert "export:" not in out
    code, out, err = _on_a_terminal(
        ["--store", str(pristine), "-q", "export", "-f", "sqlite", "--db", "q.db"], tmp_path
    )
    assert code == 0 and err == ""
