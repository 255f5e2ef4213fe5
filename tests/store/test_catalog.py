"""The SQLite catalog: schema, nested transactions, error wrapping, identity constraints."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from infrastore_sqlite import StorageError
from infrastore_sqlite.store.catalog import Catalog, migration_steps, schema_version


@pytest.fixture
def cat(tmp_path: Path):
    c = Catalog(tmp_path / "c.sqlite", create=True)
    yield c
    c.close()


def _count(cat: Catalog) -> int:
    return cat.scalar("SELECT count(*) FROM store_attributes")


def _put(cat: Catalog, key: str) -> None:
    cat.execute("INSERT INTO store_attributes (key, value) VALUES (?, 'v')", (key,))


def test_new_catalog_is_at_the_latest_revision(cat: Catalog) -> None:
    assert cat.scalar("PRAGMA user_version") == schema_version() == len(migration_steps())
    tables = {r[0] for r in cat.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {
        "time_series_associations",
        "feature_sets",
        "feature_maps",
        "arrays",
        "segments",
        "store_attributes",
    } <= tables
    assert "pools" not in tables  # slots are counted per segment since step 2
    assert cat.scalar("PRAGMA journal_mode") == "wal"
    assert cat.scalar("PRAGMA synchronous") == 2  # FULL: a commit is durable when it returns


def test_shipped_steps_are_numbered_from_one() -> None:
    steps = migration_steps()
    assert [n for n, _, _ in steps] == list(range(1, len(steps) + 1))
    assert steps[0][1] == "0001_catalog.sql"
    assert "CREATE TABLE time_series_associations" in steps[0][2]


def test_gap_in_the_step_numbers_is_refused(tmp_path: Path, monkeypatch) -> None:
    import infrastore_sqlite.store.catalog as catalog_module

    (tmp_path / "0001_a.sql").write_text("SELECT 1;")
    (tmp_path / "0003_c.sql").write_text("SELECT 1;")
    (tmp_path / "README.txt").write_text("ignored")
    monkeypatch.setattr(catalog_module, "_migrations_root", lambda: tmp_path)
    with pytest.raises(StorageError, match=r"not numbered 1..N: \[1, 3\]"):
        migration_steps()


def test_transactions_nest(cat: Catalog) -> None:
    assert not cat.in_transaction
    with cat.transaction():
        assert cat.in_transaction
        _put(cat, "outer")
        with pytest.raises(RuntimeError), cat.transaction():
            _put(cat, "inner")
            raise RuntimeError
        assert _count(cat) == 1  # only the inner block rolled back
        with cat.transaction():
            _put(cat, "inner2")
        assert cat.in_transaction
    assert not cat.in_transaction
    assert _count(cat) == 2


def test_outer_rollback_undoes_committed_inner_blocks(cat: Catalog) -> None:
    with pytest.raises(KeyError), cat.transaction():
        with cat.transaction():
            _put(cat, "a")
        _put(cat, "b")
        raise KeyError
    assert _count(cat) == 0
    assert not cat.in_transaction


def test_committed_work_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    c = Catalog(path, create=True)
    with c.transaction():
        _put(c, "kept")
    c.close()
    again = Catalog(path, read_only=True)
    assert _count(again) == 1
    again.close()


def test_sql_errors_are_storage_errors_but_constraint_errors_pass_through(cat: Catalog) -> None:
    with pytest.raises(StorageError, match="catalog query failed"):
        cat.execute("SELECT * FROM no_such_table")
    with pytest.raises(StorageError, match="catalog query failed"):
        cat.executemany("INSERT INTO no_such_table VALUES (?)", [(1,)])
    _put(cat, "k")
    with pytest.raises(apsw.ConstraintError):
        _put(cat, "k")
    assert cat.scalar("SELECT value FROM store_attributes WHERE key = 'missing'") is None


def test_read_only_catalog_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    Catalog(path, create=True).close()
    ro = Catalog(path, read_only=True)
    with pytest.raises(StorageError, match="readonly"):
        _put(ro, "x")
    ro.close()


def test_opening_something_that_is_not_a_catalog(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not an sqlite database" * 100)
    # damage named as such, never opened as a new database (issue 33)
    from infrastore_sqlite.errors import CatalogDamagedError

    with pytest.raises(CatalogDamagedError, match="no SQLite header"):
        Catalog(junk)
    assert junk.read_bytes() == b"this is not an sqlite database" * 100
    with pytest.raises(StorageError, match="cannot open the catalog"):
        Catalog(tmp_path / "missing.sqlite")


def _series_row(cat: Catalog, **over) -> None:
    row = {
        "owner_id": 1,
        "owner_type": "Gen",
        "owner_category": 0,
        "time_series_type": 1,
        "name": "n",
        "resolution": None,
        "interval": None,
        "length": 1,
        "element_shape": "[]",
        "array_shape": "[1]",
        "data_id": 1,
        "features_hash": b"\1" * 32,
    }
    row.update(over)
    cols = ", ".join(row)
    cat.execute(
        f"INSERT INTO time_series_associations ({cols}) VALUES ({', '.join('?' * len(row))})",
        list(row.values()),
    )


def test_identity_index_makes_null_periods_collide(cat: Catalog) -> None:
    _series_row(cat)
    with pytest.raises(apsw.ConstraintError):
        _series_row(cat, owner_type="Other", data_id=2)  # not identity
    _series_row(cat, owner_category=1)
    _series_row(cat, features_hash=b"\3" * 32)
    _series_row(cat, time_series_type=0, resolution="PT1H")
    _series_row(cat, time_series_type=0, resolution="PT2H")
    with pytest.raises(apsw.ConstraintError):
        _series_row(cat, time_series_type=0, resolution="PT1H")
    assert cat.scalar("SELECT count(*) FROM time_series_associations") == 5


def test_ids_are_never_reissued(cat: Catalog) -> None:
    _series_row(cat, name="a")
    _series_row(cat, name="b")
    cat.execute("DELETE FROM time_series_associations WHERE name = 'b'")
    _series_row(cat, name="c")
    ids = [r[0] for r in cat.execute("SELECT id FROM time_series_associations ORDER BY id")]
    assert ids == [1, 3]


def test_catalog_checks(cat: Catalog) -> None:
    with pytest.raises(apsw.ConstraintError):
        _series_row(cat, owner_category=2)
    with pytest.raises(apsw.ConstraintError):
        _series_row(cat, time_series_type=-1)
    with pytest.raises(apsw.ConstraintError):
        _series_row(cat, time_series_type="two")  # INTEGER affinity keeps "2" an int
    with pytest.raises(apsw.ConstraintError):
        cat.execute(
            "INSERT INTO feature_sets (features_hash, key, value_kind) VALUES (x'00', 'k', 'list')"
        )


def test_a_writers_cache_grows_with_the_catalog_up_to_its_bound(
    tmp_path: Path, monkeypatch
) -> None:
    """Issue 26: a bulk add's hash-keyed B-trees must fit the cache as the store grows."""
    from infrastore_sqlite.store import catalog as catalog_module

    def cache_kib(c: Catalog) -> int:
        return -c.scalar("PRAGMA cache_size")

    monkeypatch.setattr(catalog_module, "_WRITE_CACHE_KIB", 200)
    c = Catalog(tmp_path / "c.sqlite", create=True)
    try:
        start = cache_kib(c)
        with c.transaction():  # a small catalog keeps the starting cache
            _put(c, "small")
        assert cache_kib(c) == start
        monkeypatch.setattr(catalog_module, "_CACHE_KIB", 16)
        c._cache_kib = 16
        c.execute("PRAGMA cache_size=-16")
        with c.transaction():
            c.executemany(
                "INSERT INTO store_attributes (key, value) VALUES (?, ?)",
                [(f"k{i}", "x" * 200) for i in range(300)],
            )
        with c.transaction():  # sized at the start of the next write: the catalog's size
            _put(c, "after")
        size_kib = c.scalar("PRAGMA page_count") * c.scalar("PRAGMA page_size") // 1024
        assert 16 < cache_kib(c) <= size_kib
        with c.transaction():
            c.executemany(
                "INSERT INTO store_attributes (key, value) VALUES (?, ?)",
                [(f"m{i}", "x" * 200) for i in range(2000)],
            )
        with c.transaction():
            _put(c, "bounded")
        assert cache_kib(c) == 200  # bounded, however large the catalog grows
    finally:
        c.close()
    reader = Catalog(tmp_path / "c.sqlite", read_only=True)
    try:
        assert cache_kib(reader) == catalog_module._READ_CACHE_KIB  # readers keep the small one
    finally:
        reader.close()
