"""An add inserts its series rows with their ids given (numbered as AUTOINCREMENT would
number them, so each row's checksum can cover its id before the insert): the catalog's
own numbering (``sqlite_sequence``) moves on with them, so a row numbered by SQLite
afterwards (a transform's derived series) never takes an id an add gave, even one whose
series was removed, across a close and a reopen."""

from __future__ import annotations

from pathlib import Path

import apsw
from store_helpers import C, sts

from infrastore_sqlite import Store


def _sequence(store_path: Path) -> int:
    conn = apsw.Connection(str(store_path / "catalog.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'time_series_associations'"
        ).fetchall()[0][0]
    finally:
        conn.close()


def test_sqlite_numbering_follows_the_ids_an_add_gave(store_path: Path) -> None:
    store = Store.create(store_path)
    items = [
        {"owner_id": k, "owner_type": "Gen", "owner_category": C, "time_series": sts(f"s{k}")}
        for k in range(3)
    ]
    assert store.add_time_series_bulk(items) == [1, 2, 3]
    store.remove_by_ids([2, 3])
    store.close()
    assert _sequence(store_path) == 3

    store = Store.open(store_path)
    # The derived row is numbered by SQLite itself (AUTOINCREMENT): past 3, not 2.
    assert store.transform_single_time_series("PT3H", "PT2H") == 1
    derived = [m["id"] for m in store.list_metadata() if m["id"] != 1]
    assert derived == [4]
    assert store.add_time_series_bulk([{**items[1], "time_series": sts("again")}]) == [5]
    store.close()
    assert _sequence(store_path) == 5
