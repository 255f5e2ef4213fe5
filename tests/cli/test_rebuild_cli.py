"""`repair` rebuilds a lost, emptied or stale catalog from the segments' records, and
`verify` names a stale one (issue 33, Must 3); the store's tests are in
tests/store/test_rebuild.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from damaged_store import build_world
from jsonschema import Draft202012Validator
from repo_root import REPO_ROOT

from infrastore_sqlite.cli import cli


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("rebuild-cli") / "world.h5"
    return path, build_world(path)


@pytest.fixture
def store(world, tmp_path: Path) -> Path:
    target = tmp_path / "s.h5"
    shutil.copytree(world[0], target)
    return target


def listing(store: Path) -> str:
    got = run("--store", str(store), "-f", "json", "list")
    assert got.exit_code == 0, got.output
    return got.output


def test_repair_rebuilds_an_emptied_catalog(store: Path) -> None:
    before = listing(store)
    (store / "catalog.sqlite").write_bytes(b"")
    dry = run("--store", str(store), "-f", "json", "repair", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert (store / "catalog.sqlite").read_bytes() == b""  # a dry run changes nothing
    got = run("--store", str(store), "-f", "json", "repair")
    assert got.exit_code == 0, got.output
    report = json.loads(got.output)
    schema = json.loads((REPO_ROOT / "schemas" / "cli" / "repair.json").read_text())
    Draft202012Validator(schema).validate(report)
    assert report["catalog_rebuilt"]["series"] == 30 and report["series_lost"] == []
    assert listing(store) == before
    assert run("--store", str(store), "verify").exit_code == 0


def test_verify_names_a_stale_catalog_and_repair_rebuilds_it(store: Path, tmp_path: Path) -> None:
    old = tmp_path / "old.sqlite"
    shutil.copyfile(store / "catalog.sqlite", old)
    assert run("--store", str(store), "remove", "--id", "7", "-y").exit_code == 0
    before = listing(store)
    shutil.copyfile(old, store / "catalog.sqlite")
    got = run("--store", str(store), "verify")
    assert got.exit_code == 1 and "stale" in got.output, got.output
    assert run("--store", str(store), "repair").exit_code == 0
    assert listing(store) == before
    assert run("--store", str(store), "verify").exit_code == 0
