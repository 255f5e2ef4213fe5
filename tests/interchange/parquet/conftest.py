"""Fixtures shared by the Parquet import tests."""

from __future__ import annotations

import pytest

from infrastore_sqlite.interchange.parquet import partition


@pytest.fixture(params=["in line", "read ahead"])
def read_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the reader walks a values file: in line (a file of a few batches) and a
    batch ahead in a worker thread (a longer file). Both must import, and refuse, alike:
    the tests' files are small, so the read-ahead is forced here."""
    if request.param == "read ahead":
        monkeypatch.setattr(partition, "_READ_AHEAD_ROWS", 0)
    return str(request.param)
