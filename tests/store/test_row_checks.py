"""Issue 33, Must 4: every series row of the catalog carries a checksum over its id and
fields (``store/rowcheck.py``), checked by every read that returns rows to a caller.

A byte flipped in a row's name on disk reads as damage on every read path (never as the
series' new name), ``verify`` names the row, ``repair`` restores it from the segments'
records; every write path leaves rows whose checksum matches; a store of the release
before is filled in by the migration (or read unchecked when opened read-only).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.errors import CatalogMigrationRequiredError, DamagedStoreError
from infrastore_sqlite.store.catalog import schema_version
from infrastore_sqlite.store.rowcheck import CHECKED_COLUMNS, mismatched_rows, row_check

T0 = datetime(2024, 1, 1, tzinfo=UTC)
RELEASE_STORE = Path(__file__).resolve().parents[1] / "data" / "release_store"


def _build(path: Path) -> dict[int, str]:
    """A store of a few series, one named ``victim2`` (a flip of its last byte's low bit
    makes ``victim3``, the name of another series): ``id -> name``."""
    names = {}
    with Store.create(path) as s:
        for k, name in enumerate(["victim2", "victim3", "other", "victim2"]):
            series = SingleTimeSeries(T0, "PT1H", np.arange(24.0) + k, name)
            names[s.add_time_series(10 + k, "Gen", "Component", series)] = name
    return names


def _flip_table_copy(path: Path, sid: int, old: bytes, new: bytes) -> None:
    """Change ``old`` to ``new`` (one bit apart) in the table row of series ``sid`` in the
    catalog file, as a disk would: each occurrence of ``old`` is tried until the row (read
    past the indexes) changes; the indexes keep the old bytes."""
    cat = path / "catalog.sqlite"
    assert (
        not (path / "catalog.sqlite-wal").exists()
        or not (path / "catalog.sqlite-wal").stat().st_size
    )
    data = cat.read_bytes()
    at = data.find(old)
    while at >= 0:
        changed = data[:at] + new + data[at + len(old) :]
        cat.write_bytes(changed)
        con = sqlite3.connect(cat)
        try:
            name = con.execute(
                "SELECT name FROM time_series_associations NOT INDEXED WHERE id = ?", (sid,)
            ).fetchone()[0]
        finally:
            con.close()
        if name == new.decode():
            return
        at = data.find(old, at + 1)
    cat.write_bytes(data)
    raise AssertionError("the row's name was not found in the catalog file")


def _all_match(s: Store) -> int:
    """How many series rows there are; fails on any whose checksum does not match."""
    cols = ", ".join(CHECKED_COLUMNS)
    rows = s._catalog.execute(f"SELECT {cols}, row_check FROM time_series_associations").fetchall()
    bad = [r[0] for r in rows if row_check(r[:-1]) != r[-1]]
    assert bad == []
    assert mismatched_rows(s._catalog) == {}
    return len(rows)


def test_a_flipped_name_byte_is_refused_on_every_read_named_by_verify_restored_by_repair(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s"
    names = _build(path)
    victim = 1
    _flip_table_copy(path, victim, b"victim2", b"victim3")
    with Store.open(path, read_only=True) as s:
        # the name as read is another series' name: every path that returns the row refuses
        reads = {
            "read_by_id": lambda: s.read_by_id(victim),
            "read_by_ids": lambda: s.read_by_ids([victim, 3]),
            "rows_by_ids": lambda: s.rows_by_ids([victim]),
            "list_metadata": lambda: s.list_metadata(),
            "iter_select_fields": lambda: list(s.iter_select_fields(("id", "name"))),
        }
        for what, read in reads.items():
            with pytest.raises(DamagedStoreError) as err:
                read()
                pytest.fail(what)
            text = str(err.value)
            assert f"series id {victim}" in text and "'victim3'" in text, what
            assert "checksum" in text and "repair" in text and "\n" not in text, what
        # A filter on the name answers from what SQLite finds (through the name's index,
        # which kept the true name): never the damaged row as 'victim3' (refused), at most
        # a subset of the true answer.
        for name, true_ids in (("victim3", {2}), ("victim2", {1, 4})):
            try:
                got = {r["id"]: r["name"] for r in s.list_metadata(name=name)}
            except DamagedStoreError:
                continue
            assert set(got) <= true_ids and set(got.values()) == {name}
        for sid in (2, 3, 4):  # the other rows read as they were written
            assert s.read_by_id(sid).name == names[sid]
        out = tmp_path / "out.db"
        with pytest.raises(DamagedStoreError):
            s.export_sqlite(out)
        assert not out.exists()
        found = s.diagnose()
        assert not found.ok
        assert any(f"id {victim}" in e and "checksum" in e for e in found.errors)
        assert victim in {x.id for x in found.series_lost}
    with Store.open(path) as s:
        report = s.repair()
        assert not report["ok_before"] and report["series_lost"] == []
    with Store.open(path, read_only=True) as s:
        assert s.diagnose().ok
        assert {r["id"]: r["name"] for r in s.list_metadata()} == names
        assert _all_match(s) == len(names)


def test_the_cli_refuses_a_damaged_row_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _build(path)
    _flip_table_copy(path, 1, b"victim2", b"victim3")
    for args in (["list"], ["get", "--id", "1"], ["verify"]):
        run = subprocess.run(
            [sys.executable, "-m", "infrastore_sqlite", "--store", str(path), *args],
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 1, (args, run.stdout, run.stderr)
        assert "Traceback" not in run.stderr and "internal error" not in run.stderr
        assert "id 1" in run.stderr + run.stdout, (args, run.stderr)
    assert "catalog row damaged" in run.stdout  # verify's table names the row


def test_every_write_path_leaves_rows_that_match_their_checksums(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _build(path)
    with Store.open(path) as s:
        s.add_time_series_bulk(
            [
                {
                    "owner_id": 50 + k,
                    "owner_type": "Load",
                    "owner_category": "Component",
                    "time_series": SingleTimeSeries(T0, "PT1H", np.ones(24) * k, "bulk"),
                    "features": {"k": k},
                }
                for k in range(5)
            ]
        )
        assert s.replace_owner(50, 60, "Component") == 1
        s.remove_by_ids([2])
        assert s.transform_single_time_series("PT6H", "PT3H") > 0
        with s.transaction():  # rows added and changed in one transaction
            sid = s.add_time_series(
                70, "Gen", "Component", SingleTimeSeries(T0, "PT1H", np.zeros(24), "late")
            )
            s.replace_owner(70, 71, "Component")
        exported = tmp_path / "x.db"
        s.export_sqlite(exported)
        s.import_sqlite(exported, on_conflict="replace")
        s.compact()
        n = _all_match(s)
        assert n > 10 and sid in {r.id for r in s.iter_select_rows()}
        assert s.diagnose().ok


def test_a_store_of_the_release_before_gets_its_checksums_from_the_migration(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.h5"
    shutil.copytree(RELEASE_STORE / "store.h5", path)

    def snapshot() -> dict[Path, bytes]:  # the WAL's own files aside (SQLite's, not ours)
        return {
            p: p.read_bytes()
            for p in path.rglob("*")
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))
        }

    before = snapshot()
    # Two steps behind (0003, 0004): a read-only open cannot migrate, so it is refused,
    # saying how to migrate, and nothing is written.
    with pytest.raises(CatalogMigrationRequiredError, match="open the store once for writing"):
        Store.open(path, read_only=True)
    assert snapshot() == before
    with Store.open(path) as s:  # the migration fills every row's checksum in
        assert s._catalog.scalar("PRAGMA user_version") == schema_version() == 4
        ids = [r.id for r in s.iter_select_rows()]
        assert ids and s.diagnose().ok
        assert _all_match(s) == len(ids)
        assert (
            s._catalog.scalar("SELECT count(*) FROM time_series_associations WHERE row_check = 0")
            == 0
        )
    # and a row damaged after it is refused like any other
    con = sqlite3.connect(path / "catalog.sqlite")
    with con:
        con.execute("UPDATE time_series_associations SET owner_type = 'X' WHERE id = ?", (ids[0],))
    con.close()
    with Store.open(path, read_only=True) as s, pytest.raises(DamagedStoreError):
        s.rows_by_ids([ids[0]])


def test_an_import_refuses_when_its_identity_lookup_meets_a_damaged_row(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _build(path)
    exported = tmp_path / "x.db"
    with Store.open(path, read_only=True) as s:
        s.export_sqlite(exported)
    con = sqlite3.connect(path / "catalog.sqlite")
    with con:  # a field the identity lookup returns, changed past the store
        con.execute("UPDATE time_series_associations SET units = 'MW' WHERE id = 3")
    con.close()
    with Store.open(path) as s:
        before = s._catalog.scalar("SELECT count(*) FROM time_series_associations")
        with pytest.raises(DamagedStoreError) as err:
            s.import_sqlite(exported, on_conflict="ignore")
        assert "series id 3" in str(err.value)
        assert s._catalog.scalar("SELECT count(*) FROM time_series_associations") == before
