"""A new user's wrong ``--store``: an export (an SQLite file, a Parquet file or directory),
a plain directory, or a store whose catalog is gone. Each refusal says what the path is
and the one command that helps, in the caller's language (flags on the command line,
methods in Python); none is a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from infrastore_sqlite import Store
from infrastore_sqlite.cli import cli
from infrastore_sqlite.errors import InvalidParameterError, MismatchedArtifactError


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """README's steps: the demo store, its SQLite and Parquet exports, a CSV folder."""
    root = tmp_path_factory.mktemp("walk")
    runner = CliRunner()
    for args in (
        ["demo", str(root / "demo-store")],
        [
            "--store",
            str(root / "demo-store"),
            "export",
            "-f",
            "sqlite",
            "--db",
            str(root / "demo.db"),
        ],
        [
            "--store",
            str(root / "demo-store"),
            "export",
            "-f",
            "parquet",
            "--dir",
            str(root / "parquet"),
        ],
        [
            "--store",
            str(root / "demo-store"),
            "export",
            "-f",
            "csv",
            "--dir",
            str(root / "series"),
            "--owner-type",
            "PowerLoad",
        ],
    ):
        got = runner.invoke(cli, args, catch_exceptions=False)
        assert got.exit_code == 0, got.output
    return root


def _list(store: Path) -> tuple[int, str]:
    got = CliRunner().invoke(cli, ["--store", str(store), "list"], catch_exceptions=False)
    assert "Traceback" not in got.output and "internal error" not in got.output
    return got.exit_code, got.stderr


def test_an_sqlite_export_named_as_the_store(walk: Path) -> None:
    code, err = _list(walk / "demo.db")
    assert code == 1
    assert "demo.db is an SQLite file, not a store (a store is a directory)" in err
    assert f"`infrastore-sqlite --store STORE add --sqlite {walk / 'demo.db'}`" in err
    with pytest.raises(InvalidParameterError, match=r"Store\.import_sqlite\("):
        Store.open(walk / "demo.db")


def test_a_parquet_export_named_as_the_store(walk: Path) -> None:
    code, err = _list(walk / "parquet")
    assert code == 1 and "parquet is not a store" in err and "holds Parquet files" in err
    assert f"add --parquet {walk / 'parquet'}`" in err
    one = next((walk / "parquet").glob("*.values.parquet"))
    code, err = _list(one)
    assert code == 1 and "is a Parquet file, not a store" in err and "add --parquet" in err
    with pytest.raises(InvalidParameterError, match=r"Store\.import_parquet\("):
        Store.open(walk / "parquet")


def test_a_plain_directory_named_as_the_store(walk: Path) -> None:
    code, err = _list(walk / "series")  # the CSV files' folder
    assert code == 1 and "series is not a store" in err
    assert "name a store directory (one that init or demo made)" in err
    assert "restore" not in err and "add --" not in err


def test_a_store_without_its_catalog_names_repair(walk: Path, tmp_path: Path) -> None:
    store = tmp_path / "lost"
    shutil.copytree(walk / "demo-store", store)
    for f in store.glob("catalog.sqlite*"):
        f.unlink()
    code, err = _list(store)
    assert code == 1 and "has no catalog" in err
    assert f"`infrastore-sqlite --store {store} repair` rebuilds the catalog" in err
    with pytest.raises(MismatchedArtifactError, match=r"Store\.repair_catalog\("):
        Store.open(store)
    # ... and the advice works: repair rebuilds it, every series back.
    got = CliRunner().invoke(cli, ["--store", str(store), "repair"], catch_exceptions=False)
    assert got.exit_code == 0, got.output
    with Store.open(store, read_only=True) as s:
        assert len(s.list_metadata()) == 14 and s.diagnose().ok
