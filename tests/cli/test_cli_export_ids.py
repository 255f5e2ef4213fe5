"""``export --id`` takes the series ``list`` and ``add`` name by id, into every container:
``-f sqlite``, ``-f parquet``, one series to stdout, a file per series; an id the store
does not hold is refused in the command line's words, and nothing is written."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_run import demo_store, run


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> str:
    return demo_store(tmp_path_factory, "export-ids")


def _listed(demo: str, *flags: str) -> list[dict]:
    r = run("--store", demo, "-f", "json", "list", *flags)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["items"]


def test_sqlite_and_parquet_take_the_ids(demo: str, tmp_path: Path) -> None:
    wanted = [s["id"] for s in _listed(demo)[2:5]]
    flags = [x for i in wanted for x in ("--id", str(i))]
    db = tmp_path / "a.db"
    r = run("--store", demo, "export", "-f", "sqlite", "--db", str(db), *flags)
    assert r.exit_code == 0, r.output
    with sqlite3.connect(db) as conn:
        owners = sorted(o for (o,) in conn.execute("SELECT owner_id FROM all_series"))
    assert owners == sorted(s["owner_id"] for s in _listed(demo, *flags))
    r = run("--store", demo, "-f", "json", "export", "-f", "parquet", "--dir",
            str(tmp_path / "pq"), "--summary", "json", *flags)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert sum(p["series"] for p in json.loads(r.stdout)) == len(wanted)


def test_one_series_to_stdout_and_files_per_series(demo: str, tmp_path: Path) -> None:
    first = _listed(demo)[0]
    r = run("--store", demo, "export", "-f", "csv", "--id", str(first["id"]))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].startswith("timestamp,value")
    assert len(r.stdout.splitlines()) == first["length"] + 1
    two = [s["id"] for s in _listed(demo)[:2]]
    r = run("--store", demo, "export", "-f", "jsonl", "--dir", str(tmp_path / "files"),
            "--id", str(two[0]), "--id", str(two[1]))  # fmt: skip
    assert r.exit_code == 0, r.output
    assert sorted(int(p.name.split("_")[0]) for p in (tmp_path / "files").iterdir()) == two


def test_an_id_the_store_does_not_hold(demo: str, tmp_path: Path) -> None:
    held = _listed(demo)[0]["id"]
    db = tmp_path / "a.db"
    r = run("--store", demo, "export", "-f", "sqlite", "--db", str(db),
            "--id", str(held), "--id", "9999")  # fmt: skip
    assert r.exit_code == 1
    assert r.stderr.strip() == (
        "Error: no series with id 9999; `infrastore-sqlite list` shows the ids the store holds"
    )
    assert not db.exists()
    r = run("--store", demo, "export", "-f", "parquet", "--dir", str(tmp_path / "pq"),
            "--id", "9999")  # fmt: skip
    assert r.exit_code == 1 and "no series with id 9999" in r.stderr
    assert not (tmp_path / "pq").exists() or not any((tmp_path / "pq").iterdir())
    r = run("--store", demo, "export", "-f", "csv", "--dir", str(tmp_path / "csv"),
            "--id", "9999")  # fmt: skip
    assert r.exit_code == 1 and "no series with id 9999" in r.stderr
    assert not (tmp_path / "csv").exists()
    r = run("--store", demo, "export", "-f", "csv", "--id", "9999")
    assert r.exit_code == 1
    assert "the store holds no series with id 9999" in r.stderr


def test_ids_and_other_flags_both_apply(demo: str, tmp_path: Path) -> None:
    rows = _listed(demo)
    single = next(s for s in rows if s["time_series_type"] == "SingleTimeSeries")
    other = next(s for s in rows if s["time_series_type"] != "SingleTimeSeries")
    db = tmp_path / "a.db"
    r = run("--store", demo, "-f", "json", "export", "--db", str(db), "--type", "single",
            "--id", str(single["id"]), "--id", str(other["id"]))  # fmt: skip
    assert r.exit_code == 0, r.output
    assert sum(p["series"] for p in json.loads(r.stdout)) == 1
