"""``upgrade``: a store of schema revision 3 (``tests/data/revision3_store``, written by
main at 3fb44a6) is refused by the reading commands, which name ``upgrade``; ``upgrade``
migrates it, and the reading commands then work."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from jsonschema import Draft202012Validator
from repo_root import REPO_ROOT

DATA = REPO_ROOT / "tests" / "data" / "revision3_store"
SCHEMA = REPO_ROOT / "schemas" / "cli" / "upgrade.json"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "infrastore_sqlite", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_reading_commands_name_upgrade_and_upgrade_migrates(tmp_path: Path) -> None:
    store = tmp_path / "old"
    shutil.copytree(DATA / "store.h5", store)
    expected = json.loads((DATA / "expected.json").read_text())
    for command in (["list"], ["verify"], ["info"]):
        run = _cli("--store", str(store), *command)
        assert run.returncode == 1, run
        assert "Traceback" not in run.stderr
        assert "schema revision 3" in run.stderr and "needs 4" in run.stderr
        assert f"`infrastore-sqlite --store {store} upgrade`" in run.stderr
        assert "read_only" not in run.stderr  # the CLI's spelling, not the API's
    run = _cli("--store", str(store), "-f", "json", "upgrade")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc == {"store": str(store), "schema_revision": 4, "migrated_from": 3}
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).validate(doc)
    run = _cli("--store", str(store), "-f", "json", "list")
    assert run.returncode == 0, run.stderr
    listed = {str(m["id"]): m for m in json.loads(run.stdout)["items"]}
    assert sorted(listed) == sorted(expected)
    for sid, m in listed.items():
        assert m["data_hash"] == expected[sid]["metadata"]["data_hash"]
    assert _cli("--store", str(store), "verify").returncode == 0
    # A current store: upgrade changes nothing and says so the same way.
    run = _cli("--store", str(store), "-f", "json", "upgrade")
    assert run.returncode == 0
    doc = json.loads(run.stdout)
    assert doc == {"store": str(store), "schema_revision": 4, "migrated_from": None}
    Draft202012Validator(schema).validate(doc)
