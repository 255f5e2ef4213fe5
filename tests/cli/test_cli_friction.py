"""Issue 24's last friction items as a user of ``add --sqlite`` / ``--parquet`` meets them:
text where a number belongs, a file that is not an export (or one under another prefix),
the checksum refusal in its container's words with short hashes, and the Ctrl-C line
naming the partitions that committed."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import apsw
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from test_cli_contract import run

from infrastore_sqlite.cli import add, render
from infrastore_sqlite.demo import build_demo_store

STS = "SingleTimeSeries_f64_utc"
HEX64 = re.compile(r"[0-9a-f]{64}")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The demo store, its SQLite export and its Parquet export (read-only: copy to edit)."""
    d = tmp_path_factory.mktemp("friction")
    demo = d / "demo.h5"
    build_demo_store(demo).close()
    for args in (["--db", str(d / "demo.db")], ["--dir", str(d / "pq")]):
        fmt = "sqlite" if args[0] == "--db" else "parquet"
        r = run("--store", str(demo), "export", "-f", fmt, *args)
        assert r.exit_code == 0, r.stderr
    return demo, d / "demo.db", d / "pq"


def _fresh(tmp_path: Path) -> str:
    store = tmp_path / "copy.h5"
    assert run("--store", str(store), "init").exit_code == 0
    return str(store)


def _edit(db: Path, *sql: str) -> None:
    conn = apsw.Connection(str(db))
    try:
        for statement in sql:
            conn.execute(statement)
    finally:
        conn.close()


def _error(r: Result) -> str:
    assert r.exit_code == 1, r.stderr
    assert "Traceback" not in r.stderr
    return r.stderr.splitlines()[0]


# ------------------------------------------------------------------- text in a REAL column
def test_text_where_a_number_belongs(exported, tmp_path: Path) -> None:
    db = tmp_path / "edited.db"
    shutil.copy(exported[1], db)
    _edit(db, f"UPDATE {STS}_values SET value = 'abc' WHERE rowid = 2")
    line = _error(run("--store", _fresh(tmp_path), "add", "--sqlite", str(db)))
    assert line.endswith(
        f"in {STS}_values, rowid 2: a `value` cell holds the text 'abc' where a number belongs "
        "(the `value` column of a scalar f64 partition is REAL: a number, or NULL for NaN); "
        "write a number in that cell, or export the file again"
    ), line
    assert "JSON" not in line


# ------------------------------------------------------------- not an export, other prefix
def test_a_file_that_is_not_an_export(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    _edit(db, *(f"CREATE TABLE {t} (id INTEGER)" for t in ("orders", "customers", "invoices")))
    line = _error(run("--store", _fresh(tmp_path), "add", "--sqlite", str(db)))
    assert line == (
        f"Error: {db} is not an export: it holds no exported partitions under any table prefix "
        "(a partition is three tables, <Type>_<element type>_<time reference>_values, _series "
        "and _arrays, under one prefix); the tables it holds: customers, invoices, orders. "
        "Name a file written by `infrastore-sqlite export -f sqlite --db FILE`"
    )
    assert "--table-prefix" not in line


def test_another_prefix_is_suggested_only_where_partitions_are(exported, tmp_path: Path) -> None:
    demo, db, _ = exported
    store = _fresh(tmp_path)
    line = _error(run("--store", store, "add", "--sqlite", str(db), "--table-prefix", "zz_"))
    assert line == (
        f'Error: {db} holds no exported partitions under the table prefix "zz_", but it holds 9 '
        "without a prefix: to import them, leave out --table-prefix"
    )
    r = run(
        "--store", str(demo), "export", "-f", "sqlite", "--db", str(tmp_path / "p.db"),
        "--table-prefix", "ex_",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    line = _error(run("--store", store, "add", "--sqlite", str(tmp_path / "p.db")))
    assert line == (
        f"Error: {tmp_path / 'p.db'} holds no exported partitions without a table prefix, but "
        'it holds 9 under the table prefix "ex_": to import them, pass --table-prefix ex_'
    )
    again = run(
        "--store", store, "add", "--sqlite", str(tmp_path / "p.db"), "--table-prefix", "ex_"
    )
    assert again.exit_code == 0, again.stderr


# ------------------------------------------------------------------ the checksum refusal
def test_checksum_refusal_in_the_tables_words(exported, tmp_path: Path) -> None:
    demo, base, _ = exported
    db = tmp_path / "edited.db"
    shutil.copy(base, db)
    _edit(db, f"UPDATE {STS}_values SET value = value * 1.1 WHERE array_id = 1")
    store = tmp_path / "again.h5"
    shutil.copytree(demo, store)
    r = run("--store", str(store), "add", "--sqlite", str(db), "--replace")
    line = _error(r)
    (recorded,) = re.findall(
        r"the file says ([0-9a-f]{12})… and its rows hash to [0-9a-f]{12}… ", line
    )
    conn = apsw.Connection(str(db))
    (full,) = conn.execute(f"SELECT data_hash FROM {STS}_arrays WHERE id = 1").fetchone()
    conn.close()
    assert recorded == full[:12]  # the file's own hash, shortened
    assert not HEX64.search(r.stderr)
    assert line.endswith(
        f"run `infrastore-sqlite rehash --db {db}` (or UPDATE `data_hash` in {STS}_arrays), "
        "or pass --no-checksum to waive the comparison."
    ), line


def test_checksum_refusal_in_the_files_words(exported, tmp_path: Path) -> None:
    out = tmp_path / "pq"
    shutil.copytree(exported[2], out)
    arrays = out / "SingleTimeSeries.f64.utc.arrays.parquet"
    t = pq.read_table(arrays)
    # Wrong hashes that still ascend with the ids, as the arrays file's keys must.
    t = t.set_column(1, "data_hash", pa.array([f"{i:064x}" for i in range(t.num_rows)]))
    pq.write_table(t, arrays)
    r = run("--store", _fresh(tmp_path), "add", "--parquet", str(out))
    line = _error(r)
    assert "the file says 000000000000… and its rows hash to " in line
    assert not HEX64.search(r.stderr)
    assert "UPDATE" not in line
    assert line.endswith(
        f"run `infrastore-sqlite rehash --dir {out}` (which rewrites `data_hash` in {arrays}), "
        "or pass --no-checksum to waive the comparison."
    ), line


# ----------------------------------------------------------------------------- Ctrl-C
def _interrupt_after(monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    """Ctrl-C as the library sees it: KeyboardInterrupt out of a progress report."""
    seen = {"n": 0}

    def tick(self: render.Progress, done: int, total: int) -> None:
        seen["n"] += 1
        if seen["n"] > calls:
            raise KeyboardInterrupt

    monkeypatch.setattr(render.Progress, "__call__", tick)


def test_ctrl_c_before_any_partition_committed(
    exported, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = exported[1]
    store = _fresh(tmp_path)
    _interrupt_after(monkeypatch, 0)
    r = run("--store", store, "add", "--sqlite", str(db))
    assert r.exit_code == 130
    assert r.stderr.splitlines() == [
        "interrupted: no partition had been committed, so nothing was added "
        f"(Deterministic_f64_utc_values was rolled back); run `infrastore-sqlite --store {store} "
        f"add --sqlite {db}` to start again"
    ]


def test_ctrl_c_in_a_parquet_import_names_what_committed(
    exported, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = exported[2]
    store = _fresh(tmp_path)
    with monkeypatch.context() as m:
        _interrupt_after(m, 2)
        r = run("--store", store, "add", "--parquet", str(out))
    assert r.exit_code == 130
    (line,) = r.stderr.splitlines()
    assert re.fullmatch(
        r"interrupted: (\d) partition\(s\) committed before Ctrl-C stay in the store "
        r"\((\d+) series: [^)]+\), \S+ was rolled back; resume with `infrastore-sqlite "
        rf"--store {re.escape(store)} add --parquet {re.escape(str(out))} --ignore`",
        line,
    ), line
    resume = line.split("resume with `", 1)[1].rstrip("`")
    again = run(*resume.split()[1:])
    assert again.exit_code == 0, again.stderr


def test_ctrl_c_line_shortens_the_list_after_eight() -> None:
    exc = KeyboardInterrupt()
    names = [f"P{i}_values" for i in range(11)]
    exc.report = {  # type: ignore[attr-defined]
        "partitions": [
            {"values_table": n, "status": "committed" if i < 10 else "failed", "series": [{}]}
            for i, n in enumerate(names)
        ]
    }
    line = add._interrupted_import(exc, "first", "again --ignore")
    assert line == (
        "interrupted: 10 partition(s) committed before Ctrl-C stay in the store (10 series: "
        f"{', '.join(names[:8])}, … and 2 more), P10_values was rolled back; resume with "
        "`again --ignore`"
    )


def test_an_os_error_part_way_names_what_committed(
    exported, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error of the environment (a full disk) after some partitions committed lists
    them and the command that resumes, as a refusal does."""
    db = exported[1]
    store = _fresh(tmp_path)
    seen = {"n": 0}

    def tick(self: render.Progress, done: int, total: int) -> None:
        seen["n"] += 1
        if seen["n"] > 2:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(render.Progress, "__call__", tick)
    r = run("--store", store, "add", "--sqlite", str(db))
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert lines[0] == "Error: [Errno 28] No space left on device"
    assert re.fullmatch(
        r"\d partition\(s\) before it were committed and stay \(\d+ series\): \S+_values"
        r"(, \S+_values)*\.",
        lines[1],
    ), lines
    assert (
        lines[2]
        == f"Once the cause is fixed, resume with: infrastore-sqlite --store {store} add --sqlite {db} --ignore"
    )


# ------------------------------------------------------- a Parquet file cut short, files there
def test_a_parquet_file_cut_short_is_named_with_the_way_out(exported, tmp_path: Path) -> None:
    _, _, pq_dir = exported
    cut = tmp_path / "pq"
    shutil.copytree(pq_dir, cut)
    values = cut / "SingleTimeSeries.f64.utc.values.parquet"
    values.write_bytes(values.read_bytes()[: values.stat().st_size // 2])
    line = _error(run("--store", _fresh(tmp_path), "add", "--parquet", str(cut)))
    assert str(values) in line
    assert "export it again" in line


def test_parquet_files_already_there_are_listed_shortened(exported, tmp_path: Path) -> None:
    demo, _, pq_dir = exported
    target = tmp_path / "pq"
    shutil.copytree(pq_dir, target)
    line = _error(run("--store", str(demo), "export", "-f", "parquet", "--dir", str(target)))
    held = len(list(pq_dir.glob("*.parquet")))
    assert held > 8
    assert f"already holds {held} of the files" in line
    assert f"… and {held - 8} more" in line
    assert line.count(".parquet") == 8
    assert "--overwrite" in line
