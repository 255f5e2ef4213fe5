"""``unshare_sqlite``: an edit of one series of a shared profile touches only that series."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import query as rows

from infrastore_sqlite import InvalidParameterError, Store, rehash_sqlite
from infrastore_sqlite.demo import build_demo_store
from infrastore_sqlite.interchange.sqlite.unshare import unshare_sqlite

STS = "SingleTimeSeries_f64_utc"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    with build_demo_store(tmp_path / "demo.h5") as store:
        store.export_sqlite(tmp_path / "demo.db")
    return tmp_path / "demo.db"


def test_unshare_copies_the_group_for_the_selected_series_only(db: Path, tmp_path: Path) -> None:
    (shared,) = rows(db, f"SELECT array_id FROM {STS}_series WHERE owner_id = 101")
    assert rows(db, f"SELECT owner_id FROM {STS}_series WHERE array_id = ?", shared) == [
        (101,),
        (102,),
    ]
    (copy,) = unshare_sqlite(db, owner_id=101, name="max_active_power")
    assert copy["array_id"] == shared[0] and copy["rows"] == 168 and len(copy["series"]) == 1
    new = copy["new_array_id"]
    assert rows(db, f"SELECT owner_id FROM {STS}_series WHERE array_id = ?", (new,)) == [(101,)]
    in_view = "SELECT count(*) FROM all_values WHERE partition_name = ? AND array_id = ?"
    assert rows(db, in_view, (STS, new)) == [(168,)]
    # The edit of the copy, rehashed, reaches owner 101 and not owner 102.
    rows(db, f"UPDATE {STS}_values SET value = value * 2 WHERE array_id = ?", (new,))
    assert rehash_sqlite(db) == 1
    with Store.create(tmp_path / "fresh.h5") as fresh:
        fresh.import_sqlite(db)
        (a,) = fresh.list_metadata(owner_id=101, time_series_type="SingleTimeSeries")
        (b,) = fresh.list_metadata(owner_id=102, time_series_type="SingleTimeSeries")
        va, vb = fresh.read_by_id(a["id"]).data, fresh.read_by_id(b["id"]).data
        assert (va == vb * 2).all() and (vb != 0).any()


def test_an_unedited_copy_merges_back_at_rehash(db: Path) -> None:
    before = rows(db, f"SELECT * FROM {STS}_arrays ORDER BY id")
    unshare_sqlite(db, owner_id=101, time_series_type="SingleTimeSeries")
    assert len(rows(db, f"SELECT * FROM {STS}_arrays")) == len(before) + 1
    rehash_sqlite(db)
    assert rows(db, f"SELECT * FROM {STS}_arrays ORDER BY id") == before


def test_rows_that_already_own_their_group_are_left_alone(db: Path) -> None:
    # Owners 201-203 share one profile; selecting all three copies nothing.
    assert unshare_sqlite(db, owner_type="RenewableDispatch", name_glob="max_*", owner_id=301) == []
    made = unshare_sqlite(db, name="max_active_power", owner_type="RenewableDispatch")
    assert made == []  # 201-203 are every row of their group, 301 has its own


def test_unshare_refusals(db: Path) -> None:
    with pytest.raises(InvalidParameterError, match="needs a selector"):
        unshare_sqlite(db)
    with pytest.raises(InvalidParameterError, match="unknown keyword"):
        unshare_sqlite(db, owner=1)
    before = rows(db, "SELECT count(*) FROM all_arrays")
    with pytest.raises(InvalidParameterError, match="matches the selector; nothing was changed"):
        unshare_sqlite(db, owner_id=999)
    assert rows(db, "SELECT count(*) FROM all_arrays") == before
