"""``Catalog.grow_cache``: a write that makes a small catalog large grows its cache as
it goes (a bulk add asks between its parts), within the bound a writer's cache has."""

from __future__ import annotations

from pathlib import Path

import pytest

from infrastore_sqlite.store import catalog as catalog_module
from infrastore_sqlite.store.catalog import Catalog


def _cache_kib(c: Catalog) -> int:
    return -c.scalar("PRAGMA cache_size")


def _fill(c: Catalog, prefix: str, n: int) -> None:
    c.executemany(
        "INSERT INTO store_attributes (key, value) VALUES (?, ?)",
        [(f"{prefix}{i}", "x" * 200) for i in range(n)],
    )


def test_the_cache_grows_inside_one_write_up_to_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_module, "_CACHE_KIB", 16)
    monkeypatch.setattr(catalog_module, "_WRITE_CACHE_KIB", 200)
    c = Catalog(tmp_path / "c.sqlite", create=True)
    try:
        assert _cache_kib(c) == 16
        with c.transaction():
            start = _cache_kib(c)  # sized at the start of the write: the new catalog's size
            assert start < 200
            _fill(c, "a", 300)  # ~70 KiB more: past that, within the bound
            assert _cache_kib(c) == start
            c.grow_cache()
            size_kib = c.scalar("PRAGMA page_count") * c.scalar("PRAGMA page_size") // 1024
            assert start < _cache_kib(c) <= size_kib < 200
            _fill(c, "b", 2000)  # ~500 KiB: past the bound
            c.grow_cache()
            assert _cache_kib(c) == 200  # bounded, however large the write makes it
        assert c.scalar("SELECT count(*) FROM store_attributes") == 2300
    finally:
        c.close()
