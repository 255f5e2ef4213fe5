"""A read-only catalog keeps a smaller page cache than a writable one (issue 37: an
export, which opens the store read-only and walks ids in order, held ~6 MB more at 300 k
series with the writer's starting 8 MB)."""

from __future__ import annotations

from pathlib import Path

from infrastore_sqlite.store import catalog as catalog_module
from infrastore_sqlite.store.catalog import Catalog


def _cache_kib(c: Catalog) -> int:
    return -c.scalar("PRAGMA cache_size")


def test_read_only_opens_take_the_read_cache_and_writers_the_larger(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    c = Catalog(path, create=True)
    try:
        assert _cache_kib(c) == catalog_module._CACHE_KIB
        c.execute("INSERT INTO store_attributes (key, value) VALUES ('k', 'v')")
    finally:
        c.close()
    r = Catalog(path, read_only=True)
    try:
        assert _cache_kib(r) == catalog_module._READ_CACHE_KIB
        assert catalog_module._READ_CACHE_KIB < catalog_module._CACHE_KIB
        assert r.scalar("SELECT value FROM store_attributes WHERE key = 'k'") == "v"
    finally:
        r.close()
