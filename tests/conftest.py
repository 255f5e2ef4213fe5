"""Shared fixtures. Keep this small: a fixture belongs here only when several modules use it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infrastore_sqlite import Store

T0 = datetime(2024, 1, 1, tzinfo=UTC)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Where a test's store goes (the catalog is this path + ``.sqlite``)."""
    return tmp_path / "store.h5"


@pytest.fixture
def store(store_path: Path) -> Iterator[Store]:
    """A fresh, empty, writable store, closed after the test."""
    s = Store.create(store_path)
    try:
        yield s
    finally:
        s.close()
