"""``export_sqlite(overwrite=True)``: re-exporting to the same file, atomically."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pytest

from infrastore_sqlite import InvalidParameterError, SingleTimeSeries, StorageError, Store

T0 = datetime(2024, 7, 1, tzinfo=UTC)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def add(store: Store, owner: int, values) -> None:
    ts = SingleTimeSeries(T0, "PT1H", np.asarray(values, dtype=float), "load")
    store.add_time_series(owner, "PowerLoad", "Component", ts)


def values(db: Path) -> list[float]:
    conn = apsw.Connection(str(db))
    try:
        return [v for (v,) in conn.execute("SELECT value FROM all_values ORDER BY value")]
    finally:
        conn.close()


def test_the_refusal_counts_the_clashes_and_names_three_ways_out(store: Store, tmp_path) -> None:
    add(store, 1, [1, 2])
    db = tmp_path / "out.db"
    store.export_sqlite(db)
    before = digest(db)
    with pytest.raises(InvalidParameterError, match="already holds 4 of the names") as e:
        store.export_sqlite(db)
    text = str(e.value)
    lines = text.splitlines()
    assert len(lines) == 4 and all(line.startswith("  - ") for line in lines[1:])
    assert (
        "overwrite=True" in lines[1] and 'table_prefix="P"' in lines[2] and "new file" in lines[3]
    )
    cli = e.value.render("cli")
    assert "--overwrite" in cli and "--table-prefix P" in cli and "overwrite=True" not in cli
    assert digest(db) == before


def test_overwrite_replaces_the_file_with_the_new_export(store: Store, tmp_path) -> None:
    add(store, 1, [1, 2])
    db = tmp_path / "out.db"
    store.export_sqlite(db)
    store.export_sqlite(db, table_prefix="old_")  # another prefix: overwrite drops it too
    add(store, 2, [3, 4])
    parts = store.export_sqlite(db, overwrite=True)
    assert sum(p["series"] for p in parts) == 2
    assert sorted(values(db)) == [1, 2, 3, 4]
    conn = apsw.Connection(str(db))
    names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'old_%'")]
    conn.close()
    assert names == []
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_a_failed_overwrite_leaves_the_old_file(store: Store, tmp_path) -> None:
    add(store, 1, [1, 2])
    db = tmp_path / "out.db"
    store.export_sqlite(db)
    before = digest(db)
    add(store, 2, [-0.0, 1.0])  # a scalar -0.0 is refused while writing
    with pytest.raises(InvalidParameterError, match=r"-0\.0"):
        store.export_sqlite(db, overwrite=True)
    assert digest(db) == before
    # Nothing beside it either (no partial file left behind).
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != store.path.name) == ["out.db"]


def test_overwrite_replaces_only_a_database(store: Store, tmp_path) -> None:
    add(store, 1, [1, 2])
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database, " * 100)
    with pytest.raises(StorageError, match="not an SQLite database"):
        store.export_sqlite(notes, overwrite=True)
    assert notes.read_text().startswith("not a database")
