"""The edit loop through the command line, and a killed import resumed with --ignore.

The Python API's version of the loop is in test_edit_loop.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import query as sql
from repo_root import REPO_ROOT

from infrastore_sqlite import Store
from infrastore_sqlite.cli import PROG, cli
from infrastore_sqlite.demo import build_demo_store

ROOT = REPO_ROOT
STS = "SingleTimeSeries_f64_utc"


def run(*args: str, code: int = 0):
    result = CliRunner().invoke(cli, list(args), prog_name=PROG)
    assert result.exit_code == code, (args, result.stdout, result.stderr)
    return result


def state(path: Path) -> list[tuple]:
    """Every series' metadata (ids included) and values."""
    with Store.open(path, read_only=True) as store:
        return [
            (json.dumps(m, sort_keys=True, default=str), store.read_by_id(m["id"]).data.tobytes())
            for m in store.list_metadata()
        ]


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INFRASTORE_STORE", raising=False)
    build_demo_store(tmp_path / "demo-store").close()
    run("--store", "demo-store", "export", "-f", "sqlite", "--db", "demo.db")
    return tmp_path


def edit(db: Path, owner: int) -> None:
    changed = sql(
        db,
        f"UPDATE {STS}_values SET value = value + 1 WHERE array_id = (SELECT array_id FROM "
        f"{STS}_series WHERE owner_id = {owner}) AND timestamp < 1719820800000 RETURNING value",
    )
    assert changed


def get_103() -> list[list[str]]:
    out = run("--store", "demo-store", "-f", "csv", "get", "--owner-id", "103", "--type", "single")
    return [line.split(",") for line in out.stdout.splitlines()[1:]]


def test_the_loop_on_the_command_line(demo: Path) -> None:
    before = state(demo / "demo-store")
    values_before = get_103()
    edit(demo / "demo.db", 103)
    diff = json.loads(
        run("--store", "demo-store", "-f", "json", "diff", "--sqlite", "demo.db").stdout
    )["items"]
    changed = [e for e in diff if e["change"] != "unchanged"]
    assert [(e["owner_id"], e["change"], e["points"]) for e in changed] == [(103, "replaced", 8)]
    assert changed[0]["first_changed"] == "2024-07-01T00:00:00+00:00"
    assert changed[0]["last_changed"] == "2024-07-01T07:00:00+00:00"
    assert len(diff) == len(before)
    run("--store", "demo-store", "diff", "--sqlite", "demo.db", "--exit-code", code=1)
    refused = run("--store", "demo-store", "add", "--sqlite", "demo.db", "--replace", code=1)
    assert "`infrastore-sqlite rehash --db demo.db`" in refused.stderr
    assert "--no-checksum" in refused.stderr and "rehash_sqlite" not in refused.stderr
    run("rehash", "--db", "demo.db")
    added = run("--store", "demo-store", "-f", "json", "add", "--sqlite", "demo.db", "--replace")
    doc = json.loads(added.stdout)
    assert (doc["added"], doc["replaced"], doc["unchanged"], doc["skipped"]) == (
        0,
        1,
        len(before) - 1,
        0,
    )
    after = state(demo / "demo-store")
    # Same ids in the same order; exactly one series differs (its values and data_hash).
    ids = [json.loads(m)["id"] for m, _ in after]
    assert ids == [json.loads(m)["id"] for m, _ in before]
    differ = [json.loads(a[0]) for a, b in zip(after, before, strict=True) if a != b]
    assert [(m["owner_id"], m["time_series_type"]) for m in differ] == [(103, "SingleTimeSeries")]
    values_after = get_103()
    assert [float(r[1]) for r in values_after[:8]] == [float(r[1]) + 1 for r in values_before[:8]]
    assert values_after[8:] == values_before[8:]
    run("--store", "demo-store", "verify")
    run("--store", "demo-store", "diff", "--sqlite", "demo.db", "--exit-code")


def test_diff_names_the_rehash_a_stale_hash_needs(demo: Path) -> None:
    unedited = run("--store", "demo-store", "-f", "json", "diff", "--sqlite", "demo.db")
    assert not any(e["hash_stale"] for e in json.loads(unedited.stdout)["items"])
    assert "rehash" not in unedited.stderr
    edit(demo / "demo.db", 103)
    stale = run("--store", "demo-store", "-f", "json", "diff", "--sqlite", "demo.db")
    items = json.loads(stale.stdout)["items"]
    assert [e["owner_id"] for e in items if e["hash_stale"]] == [103]
    (line,) = [ln for ln in stale.stderr.splitlines() if "data_hash" in ln]
    assert line.startswith("1 series'") and "`infrastore-sqlite rehash --db demo.db`" in line
    assert "rehash_sqlite" not in stale.stderr
    quiet = run("-q", "--store", "demo-store", "diff", "--sqlite", "demo.db")
    assert quiet.stderr == ""
    run("rehash", "--db", "demo.db")
    after = run("--store", "demo-store", "-f", "json", "diff", "--sqlite", "demo.db")
    assert not any(e["hash_stale"] for e in json.loads(after.stdout)["items"])
    assert "rehash" not in after.stderr


def test_the_default_refusal_names_the_flags(demo: Path) -> None:
    refused = run("--store", "demo-store", "add", "--sqlite", "demo.db", code=1)
    assert "--replace" in refused.stderr and "--ignore" in refused.stderr
    assert "on_conflict" not in refused.stderr
    skipped = json.loads(
        run("--store", "demo-store", "-f", "json", "add", "--sqlite", "demo.db", "--ignore").stdout
    )
    assert skipped["added"] == 0 and skipped["skipped"] == len(state(demo / "demo-store"))
    run("--store", "demo-store", "add", "--sqlite", "demo.db", "--ignore", "--replace", code=2)


def test_unshare_on_the_command_line_changes_only_the_chosen_owner(demo: Path) -> None:
    before = state(demo / "demo-store")
    out = json.loads(
        run(
            "-f", "json", "unshare", "--db", "demo.db", "--owner-id", "101", "--type", "single"
        ).stdout
    )
    assert len(out["copies"]) == 1
    edit(demo / "demo.db", 101)
    run("rehash", "--db", "demo.db")
    run("--store", "demo-store", "add", "--sqlite", "demo.db", "--replace")
    after = state(demo / "demo-store")
    changed = [json.loads(a[0])["owner_id"] for a, b in zip(after, before, strict=True) if a != b]
    assert changed == [101]


_KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from infrastore_sqlite import Store
    calls = [0]
    real = Store.insert_all

    def dying(self, items, **kw):
        calls[0] += 1
        if calls[0] == int(os.environ["KILL_AT"]):
            os.kill(os.getpid(), signal.SIGKILL)  # a kill -9 in the middle of the import
        return real(self, items, **kw)

    Store.insert_all = dying
    from infrastore_sqlite.cli import main
    main(sys.argv[1:])
    """
)


@pytest.mark.parametrize(("flag", "source"), [("--sqlite", "demo.db"), ("--parquet", "pq")])
def test_a_killed_import_resumed_with_ignore_equals_an_uninterrupted_one(
    demo: Path, flag: str, source: str
) -> None:
    if flag == "--parquet":
        run("--store", "demo-store", "export", "-f", "parquet", "--dir", source)
    run("init", "whole.h5")
    run("--store", "whole.h5", "add", flag, source)
    run("init", "killed.h5")
    env = {**os.environ, "KILL_AT": "4", "PYTHONPATH": str(ROOT)}
    killed = subprocess.run(
        [sys.executable, "-c", _KILLER, "--store", "killed.h5", "add", flag, source],
        cwd=demo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -9, killed.stderr
    partial = state(demo / "killed.h5")
    assert 0 < len(partial) < len(state(demo / "whole.h5"))  # some partitions were committed
    # Rerunning the same command refuses the committed series and names the way out.
    again = run("--store", "killed.h5", "add", flag, source, code=1)
    assert "--ignore" in again.stderr
    resumed = json.loads(
        run("--store", "killed.h5", "-f", "json", "add", flag, source, "--ignore").stdout
    )
    assert resumed["skipped"] == len(partial)
    assert state(demo / "killed.h5") == state(demo / "whole.h5")
    run("--store", "killed.h5", "verify")


def test_one_clock_per_series_in_diff_list_and_get(demo: Path) -> None:
    """A series in America/Denver prints its instants in Denver time in every command:
    get's rows, diff's first and last changed instant, list's initial_timestamp (issue
    38: diff printed them in UTC)."""
    table = "SingleTimeSeries_f64_America_Denver"
    sql(
        demo / "demo.db",
        f"UPDATE {table}_values SET value = value + 1 WHERE timestamp IN "
        f"(SELECT min(timestamp) FROM {table}_values) RETURNING value",
    )
    rows = json.loads(
        run("--store", "demo-store", "-f", "json", "get", "--owner-id", "301",
            "--type", "single", "--limit", "1").stdout
    )  # fmt: skip
    first = rows["items"][0]["timestamp"]
    assert first == "2024-06-30T18:00:00-06:00"
    assert rows["series"]["initial_timestamp"] == first
    entries = json.loads(
        run("--store", "demo-store", "-f", "json", "diff", "--sqlite", "demo.db").stdout
    )["items"]
    (changed,) = [e for e in entries if e["change"] == "replaced"]
    assert changed["owner_id"] == 301
    assert changed["first_changed"] == changed["last_changed"] == first
    listed = json.loads(
        run("--store", "demo-store", "-f", "json", "list", "--owner-id", "301").stdout
    )["items"]
    assert [m["initial_timestamp"] for m in listed] == [first]
    utc = json.loads(
        run("--store", "demo-store", "-f", "json", "list", "--owner-id", "101",
            "--type", "single").stdout
    )["items"]  # fmt: skip
    assert utc[0]["initial_timestamp"] == "2024-07-01T00:00:00+00:00"
