"""The command line on a damaged store (issue 27): ``verify`` names the damage, reads and
exports work around it, ``repair`` sets it aside; the JSON outputs match
schemas/cli/verify.json and repair.json."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from damaged_store import build_world, segment_files, segment_of
from jsonschema import Draft202012Validator
from repo_root import REPO_ROOT

from infrastore_sqlite.cli import cli

SCHEMAS = REPO_ROOT / "schemas" / "cli"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def check_schema(name: str, doc: object) -> None:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).validate(doc)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("damage-cli") / "world.h5"
    return path, build_world(path)


@pytest.fixture
def store(world, tmp_path: Path) -> Path:
    target = tmp_path / "s.h5"
    shutil.copytree(world[0], target)
    return target


def _zero_second_half(data: bytearray) -> None:
    data[len(data) // 2 :] = bytes(len(data) - len(data) // 2)


def _overwrite_2_to_8_kib(data: bytearray) -> None:
    data[2048:8192] = random.Random(27).randbytes(len(data[2048:8192]))


def _cut_in_half(data: bytearray) -> None:
    del data[len(data) // 2 :]


@pytest.mark.parametrize("damage", [_zero_second_half, _overwrite_2_to_8_kib, _cut_in_half])
def test_the_issues_three_cases_are_diagnosed(store: Path, world, damage) -> None:
    """Each segment damaged the issue's three ways: verify reports, never crashes."""
    for seg in segment_files(store):
        data = bytearray(seg.read_bytes())
        damage(data)
        seg.write_bytes(bytes(data))
    r = run("--store", str(store), "-f", "json", "verify")
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr + r.stdout
    doc = json.loads(r.stdout)
    check_schema("verify.json", doc)
    assert r.exit_code == (0 if doc["ok"] else 1)
    if damage is _cut_in_half:  # every file shorter than written: each one is named
        assert {s["file"] for s in doc["segments"]} == {str(p) for p in segment_files(store)}
        assert {s["problem"] for s in doc["segments"]} == {"truncated"}
    lost = {s["id"] for s in doc["series_lost"]}
    # whatever the damage hit, a series reads back exactly or fails naming itself
    for i in world[1]:
        got = run("--store", str(store), "-f", "json", "get", "--id", str(i))
        assert "internal error" not in got.stderr
        if i in lost:
            assert got.exit_code == 1 and f"id {i})" in got.stderr
            assert "verify`" in got.stderr and "repair`" in got.stderr
        else:
            assert got.exit_code == 0, got.stderr
    table = run("--store", str(store), "verify")
    assert table.exit_code == r.exit_code and "internal error" not in table.stderr
    if not doc["ok"]:
        assert "repair --dry-run" in table.stderr
        fixed = run("--store", str(store), "-f", "json", "repair")
        assert fixed.exit_code == 0, fixed.stderr
        check_schema("repair.json", json.loads(fixed.stdout))
        after = json.loads(run("--store", str(store), "-f", "json", "verify").stdout)
        assert after["ok"] and after["series"] == len(world[1]) - len(lost)


def test_reads_and_exports_work_around_a_damaged_segment(
    store: Path, world, tmp_path: Path
) -> None:
    victim = 2
    seg = segment_of(store, victim)
    seg.write_bytes(seg.read_bytes()[:1000])
    s = str(store)
    # the file's series, and the irregular series whose shared time axis it holds
    report = json.loads(run("--store", s, "-f", "json", "verify").stdout)
    with_victim = {x["id"] for x in report["series_lost"]}
    assert victim in with_victim and len(with_victim) > 1
    healthy = sorted(set(world[1]) - with_victim)
    assert run("--store", s, "list").exit_code == 0
    assert run("--store", s, "info").exit_code == 0
    assert run("--store", s, "get", "--id", str(healthy[0])).exit_code == 0
    got = run("--store", s, "get", "--id", str(victim))
    assert got.exit_code == 1 and got.stdout == ""
    (line,) = got.stderr.strip().splitlines()
    assert f"'load1' (owner 1, id {victim})" in line and str(seg) in line
    assert f"`infrastore-sqlite --store {s} verify`" in line
    # an export of healthy series succeeds
    good = tmp_path / "good.db"
    owner = {
        x["id"]: x["owner_id"]
        for x in json.loads(run("--store", s, "-f", "json", "list").stdout)["items"]
    }
    assert (
        run(
            "--store", s, "export", "--db", str(good), "--owner-id", str(owner[healthy[0]])
        ).exit_code
        == 0
    )
    assert good.exists()
    # one that includes the damage fails, naming every damaged series, writing nothing
    bad = tmp_path / "bad.db"
    r = run("--store", s, "export", "--db", str(bad))
    assert r.exit_code == 1 and not bad.exists()
    assert "internal error" not in r.stderr
    for i in with_victim:
        assert f"id {i})" in r.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".bad.db")]


def test_repair_dry_run_then_repair(store: Path, world) -> None:
    s = str(store)
    first = segment_files(store)[0]
    first.unlink()
    dry = run("--store", s, "-f", "json", "repair", "--dry-run")
    assert dry.exit_code == 0
    doc = json.loads(dry.stdout)
    check_schema("repair.json", doc)
    assert doc["dry_run"] and doc["set_aside"] == [str(first)] and doc["series_lost"]
    assert f"`infrastore-sqlite --store {s} add --sqlite FILE --replace`" in doc["restore"]
    assert sorted(p.name for p in store.iterdir()) == [
        "catalog.sqlite",
        "catalog.sqlite-shm",
        "catalog.sqlite-wal",
        "segments",
    ]
    done = run("--store", s, "repair")
    assert done.exit_code == 0 and "add --sqlite FILE --replace" in done.stderr
    assert "series_lost:" in done.stdout
    assert run("--store", s, "verify").exit_code == 0
    assert run("--store", s, "-f", "json", "repair").exit_code == 0  # nothing left to do


def test_durability_md_damaged_store_commands_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_docs_commands import run as run_steps
    from test_docs_commands import steps

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INFRASTORE_STORE", raising=False)
    text = (REPO_ROOT / "docs" / "durability.md").read_text(encoding="utf-8")
    items = steps(text, section="## A damaged store")
    assert [t.split()[3] for _, t, _ in items[2:]] == ["verify", "repair", "repair", "add"]
    run_steps(tmp_path, items)


def test_catalog_text_that_is_not_utf8_is_damage_not_a_crash(store: Path, tmp_path: Path) -> None:
    """A catalog name cell holding bytes that are not UTF-8 (written by another tool):
    reads and exports refuse naming the way out, verify names the series, repair restores
    the row from the transaction records the segments keep, and the store reads again."""
    import apsw

    from infrastore_sqlite import Store
    from infrastore_sqlite.errors import DamagedStoreError

    conn = apsw.Connection(str(store / "catalog.sqlite"))
    victim = conn.execute("SELECT min(id) FROM time_series_associations").get
    conn.execute(
        "UPDATE time_series_associations SET name = CAST(x'66ff6f' AS TEXT) WHERE id = ?",
        (victim,),
    )
    conn.close()
    with Store.open(store, read_only=True) as s:
        with pytest.raises(DamagedStoreError) as api:
            s.list_metadata()
        assert "not valid UTF-8" in str(api.value) and "Store.diagnose()" in str(api.value)
        with pytest.raises(DamagedStoreError):
            s.export_sqlite(tmp_path / "x.db")
    assert not (tmp_path / "x.db").exists()
    for args in (["list"], ["export", "-f", "sqlite", "--db", str(tmp_path / "y.db")]):
        res = CliRunner().invoke(cli, ["--store", str(store), *args])
        assert res.exit_code == 1, res.output
        assert "not valid UTF-8" in res.output and "internal error" not in res.output
        assert f"--store {store} verify" in res.output
    verify = run("--store", str(store), "-f", "json", "verify")
    assert verify.exit_code != 0
    assert victim in [d["id"] for d in json.loads(verify.stdout)["series_lost"]]
    assert run("--store", str(store), "-y", "repair").exit_code == 0
    listed = run("--store", str(store), "-f", "json", "list")
    # the row is restored from the segments' transaction records (issue 33), not dropped
    names = {r["id"]: r["name"] for r in json.loads(listed.stdout)["items"]}
    assert listed.exit_code == 0 and names[victim] == "load0"
