"""The catalog rebuilt from the segments' records (issue 33, Must 3).

Each write transaction records in its segment what it did to the catalog; ``repair``
(``Store.repair``, ``Store.repair_catalog``, the CLI's ``repair``) replays the records to
bring back a catalog that is lost, emptied, stale (an older copy restored, a lost WAL)
or damaged beyond its indexes: every series whose array is intact, with its id, values
exact. ``verify`` names a stale catalog.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from damaged_store import T0, build_world, fresh, segment_files

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.errors import IntegrityError
from infrastore_sqlite.store.journal import decode, record_rows, records_of

RELEASE_STORE = Path(__file__).resolve().parents[1] / "data" / "release_store"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, tuple[bytes, str]]]:
    """The damage tests' store of five transactions, then a removal (of ids 1 and 2) and
    a replacement of id 3's metadata owner, so the records hold every kind of change."""
    path = tmp_path_factory.mktemp("rebuild") / "world.h5"
    expected = build_world(path)
    with Store.open(path) as s:
        s.remove_by_ids([1, 2])
        s.set_store_attribute("site", "north")
    del expected[1], expected[2]
    return path, expected


def state(path: Path) -> dict[int, tuple]:
    """Each series: its catalog row (id, owner, type, name, features) and data bytes."""
    out = {}
    with Store.open(path, read_only=True) as s:
        for row in s._catalog.execute(
            "SELECT id, owner_id, owner_type, owner_category, time_series_type, name, "
            "resolution, features_hash, (SELECT hash FROM arrays WHERE id = data_id) "
            "FROM time_series_associations ORDER BY id"
        ):
            out[row[0]] = (*row[1:], np.asarray(s.read_by_id(row[0]).data).tobytes())
    return out


def check_back(path: Path, before: dict[int, tuple]) -> None:
    """The store at ``path`` holds exactly ``before``, sound, and numbers new series past
    every id it ever used."""
    assert state(path) == before
    with Store.open(path) as s:
        assert s.diagnose().ok, s.diagnose().errors
        assert s.get_store_attribute("site") == "north"
        new = s.add_time_series(
            99, "Gen", "Component", SingleTimeSeries(T0, "PT1H", np.arange(5.0), "after")
        )
        assert new > 30  # ids 1..30 were used (1 and 2 removed): none is reused


def test_every_transaction_leaves_its_record(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    docs = []
    for seg in segment_files(path):
        with h5py.File(seg, "r") as h5:
            docs.extend(decode(p) for _s, _p, p in records_of(h5))
    docs.sort(key=lambda d: d["seq"])
    assert len(docs) == 7  # five adds, a removal (its own small segment), an attribute
    assert [d["prev"] for d in docs] == [0] + [d["seq"] for d in docs[:-1]]
    assert [len(record_rows(d)) for d in docs] == [6, 6, 6, 6, 6, 0, 0]
    assert docs[5]["removed"] == [1, 2] and docs[6]["attributes"] == {"site": "north"}


@pytest.mark.parametrize("how", ["deleted", "truncated to 0", "header zeroed"])
def test_a_lost_catalog_is_rebuilt_by_repair(world, tmp_path: Path, how: str) -> None:
    path = fresh(world, tmp_path)
    before = state(path)
    cat = path / "catalog.sqlite"
    if how == "deleted":
        cat.unlink()
    elif how == "truncated to 0":
        cat.write_bytes(b"")
    else:
        data = bytearray(cat.read_bytes())
        data[:100] = bytes(100)
        cat.write_bytes(bytes(data))
    listing = {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}
    dry = Store.repair_catalog(path, dry_run=True)
    assert dry["dry_run"] and dry["series_kept"] == len(before) and not dry["series_lost"]
    assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file()} == listing
    report = Store.repair_catalog(path)
    assert report["series_kept"] == len(before) and report["series_lost"] == []
    assert report["catalog_rebuilt"]["transactions"] == 7
    if how != "deleted":  # the old catalog is kept aside, never deleted
        assert Path(report["folder"], "catalog.sqlite").exists()
    check_back(path, before)


def test_an_older_catalog_restored_is_named_stale_and_rebuilt(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    old = tmp_path / "old-catalog.sqlite"
    shutil.copyfile(path / "catalog.sqlite", old)
    with Store.open(path) as s:  # two more transactions the old copy does not know
        extra = s.add_time_series(
            7, "Gen", "Component", SingleTimeSeries(T0, "PT1H", np.arange(9.0), "late")
        )
        s.remove_by_ids([4])
    before = state(path)
    assert extra in before and 4 not in before
    shutil.copyfile(old, path / "catalog.sqlite")
    with Store.open(path, read_only=True) as s:
        found = s.diagnose()
        assert not found.ok
        assert any("stale" in e for e in found.catalog["errors"]), found.catalog
        assert s.repair(dry_run=True)["catalog_rebuilt"]["series"] == len(before)
    with Store.open(path) as s:
        report = s.repair()
        assert report["catalog_rebuilt"]["series"] == len(before)
        assert s.diagnose().ok  # the open store goes on with the rebuilt catalog
    check_back(path, before)


def test_a_lost_wal_after_a_kill_is_rebuilt(world, tmp_path: Path) -> None:
    """The last commits live only in the -wal until a checkpoint: a copy of the store
    taken while the writer is open, without its -wal, is what a kill and a lost -wal
    leave."""
    path = fresh(world, tmp_path)
    copy = tmp_path / "copy.h5"
    with Store.open(path) as s:
        s._catalog.execute("PRAGMA wal_autocheckpoint=0")
        sid = s.add_time_series(
            8, "Gen", "Component", SingleTimeSeries(T0, "PT1H", np.arange(4.0), "wal only")
        )
        shutil.copytree(path, copy, ignore=shutil.ignore_patterns("*-wal", "*-shm"))
        before = state(path)
    assert sid in before
    with Store.open(copy, read_only=True) as s:
        assert sid not in {
            r[0] for r in s._catalog.execute("SELECT id FROM time_series_associations")
        }
        assert not s.diagnose().ok
    with Store.open(copy) as s:
        s.repair()
    check_back(copy, before)


def test_a_catalog_damaged_beyond_its_indexes_is_rebuilt(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    before = state(path)
    with Store.open(path, read_only=True) as s:
        root = s._catalog.scalar(
            "SELECT rootpage FROM sqlite_master WHERE name = 'time_series_associations'"
        )
        page = s._catalog.scalar("PRAGMA page_size")
    cat = path / "catalog.sqlite"
    data = bytearray(cat.read_bytes())
    at = (root - 1) * page
    data[at + 100 if root == 1 else at : at + page] = bytes(page - (100 if root == 1 else 0))
    cat.write_bytes(bytes(data))
    with Store.open(path) as s:
        report = s.repair()
    assert report["catalog_rebuilt"]["series"] == len(before)
    check_back(path, before)


def test_merges_and_compaction_keep_the_records(tmp_path: Path) -> None:
    path = tmp_path / "many.h5"
    values = {}
    with Store.create(path) as s:
        for k in range(20):  # one transaction each: merged as they pile up
            series = SingleTimeSeries(T0, "PT1H", np.arange(10.0) + k, f"s{k}")
            values[s.add_time_series(k, "Gen", "Component", series)] = series.data.tobytes()
        s.remove_by_ids([3, 5])
        s.compact()
        assert len(segment_files(path)) < 20
    del values[3], values[5]
    (path / "catalog.sqlite").unlink()
    report = Store.repair_catalog(path)
    assert report["catalog_rebuilt"]["gaps"] == []
    with Store.open(path, read_only=True) as s:
        got = {
            r[0]: np.asarray(s.read_by_id(r[0]).data).tobytes()
            for r in s._catalog.execute("SELECT id FROM time_series_associations")
        }
        assert got == values and s.diagnose().ok


def test_a_series_whose_array_is_lost_is_listed_not_brought_back(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    before = state(path)
    with Store.open(path, read_only=True) as s:
        seg, pool, slot = s._catalog.execute(
            "SELECT a.segment, a.pool, a.slot FROM arrays a JOIN time_series_associations t "
            "ON a.id = t.data_id AND a.kind = 'data' WHERE t.id = 3"
        ).fetchone()
    with h5py.File(path / "segments" / seg, "r+") as h5:
        h5["pools"][pool][slot] = h5["pools"][pool][slot] + 1.0
    (path / "catalog.sqlite").unlink()
    report = Store.repair_catalog(path)
    assert [x["id"] for x in report["series_lost"]] == [3]
    del before[3]
    assert state(path) == before


def test_a_store_without_records_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "store.h5"
    shutil.copytree(RELEASE_STORE / "store.h5", path)
    (path / "catalog.sqlite").unlink()
    listing = sorted(p.name for p in path.rglob("*"))
    with pytest.raises(IntegrityError, match="no segment holds a record"):
        Store.repair_catalog(path)
    assert sorted(p.name for p in path.rglob("*")) == listing


@pytest.mark.parametrize("column", ["name", "data_hash", "owner_id"])
def test_a_damaged_row_is_named_and_restored_from_the_records(
    world, tmp_path: Path, column: str
) -> None:
    """One byte of a row changed (what a flipped bit in a page does): verify names the
    row, and repair restores it from the records instead of keeping the damage."""
    path = fresh(world, tmp_path)
    before = state(path)
    with Store.open(path) as s:
        # Written past the store's own write path (as damage is): no record of it.
        s._catalog.conn.execute("DROP TRIGGER IF EXISTS temp.journal_upd")
        if column == "name":
            s._catalog.conn.execute(
                "UPDATE time_series_associations SET name = 'load_f' WHERE id = 3"
            )
        elif column == "data_hash":
            # The row names its array by id (schema step 0004): one bit of it flipped.
            s._catalog.conn.execute(
                "UPDATE time_series_associations SET data_id = (data_id | 1) - (data_id & 1) "
                "WHERE id = 3"
            )
        else:
            s._catalog.conn.execute(
                "UPDATE time_series_associations SET owner_id = owner_id + 4 WHERE id = 3"
            )
    with Store.open(path, read_only=True) as s:
        found = s.diagnose()
        assert not found.ok
        assert any("id 3:" in e and column in e for e in found.catalog["errors"]), found.catalog
    with Store.open(path) as s:
        report = s.repair()
        assert report["catalog_rebuilt"]["series"] == len(before)
    check_back(path, before)
