"""A file named to ``add --sqlite`` or ``rehash --db`` that does not exist is named so
(it used to read only "is not a file", as for a directory)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from infrastore_sqlite.cli import cli


def test_a_file_that_does_not_exist_is_named_so(tmp_path: Path) -> None:
    store, gone = str(tmp_path / "s"), str(tmp_path / "nothere.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["--store", store, "init"]).exit_code == 0
    for args in (["--store", store, "add", "--sqlite", gone], ["rehash", "--db", gone]):
        r = runner.invoke(cli, args, catch_exceptions=False)
        assert r.exit_code == 1
        assert f"{gone} is not a file (nothing exists at that path)" in r.stderr
    (tmp_path / "adir").mkdir()
    r = runner.invoke(cli, ["--store", store, "add", "--sqlite", str(tmp_path / "adir")])
    assert r.exit_code == 1 and "nothing exists" not in r.stderr
