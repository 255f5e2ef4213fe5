"""The SQLite export of a new file writes it behind a window (``write_behind.py``): its
written part leaves the page cache as it grows, the file reads back exact, and a write
error the disk reports there fails the export in its own words, leaving nothing."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import numpy as np
import pytest
from varied_store import add, new_store, sts

from infrastore_sqlite import Store
from infrastore_sqlite.errors import StorageError
from infrastore_sqlite.interchange import write_behind
from infrastore_sqlite.interchange.sqlite import writer
from infrastore_sqlite.interchange.write_behind import WriteBehind

WINDOW = 256 << 10


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Store, list[np.ndarray]]:
    store = new_store(tmp_path / "s.h5")
    rng = np.random.default_rng(5)
    series = [rng.random(40_000) for _ in range(8)]  # ~3 MB of value rows
    for i, values in enumerate(series):
        add(store, sts(f"s{i}", values), owner=i + 1)
    yield store, series
    store.close()


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[WriteBehind]:
    """Each write-behind the SQLite writer makes, as it makes it."""
    made: list[WriteBehind] = []

    class Watched(WriteBehind):
        def __init__(self, path: Path) -> None:
            super().__init__(path)
            made.append(self)

    monkeypatch.setattr(writer, "WriteBehind", Watched)
    return made


def test_the_file_is_written_behind_and_reads_back_exact(
    filled: tuple[Store, list[np.ndarray]],
    made: list[WriteBehind],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(write_behind, "WINDOW_BYTES", WINDOW)
    monkeypatch.setattr(writer, "WRITE_BEHIND_ROWS", 1)
    store, series = filled
    db = tmp_path / "out.db"
    store.export_sqlite(db)
    (behind,) = made
    if sys.platform.startswith("linux"):  # sync_file_range: windows went to the disk
        assert behind.dropped >= 2 * WINDOW and behind.started >= behind.dropped
    copy = Store.create(tmp_path / "copy.h5")
    try:
        ids = copy.import_sqlite(db)
        got = sorted(tuple(copy.read_by_id(i).data) for i in ids)
    finally:
        copy.close()
    assert got == sorted(tuple(v) for v in series)


def test_a_smaller_export_is_left_in_the_page_cache(
    filled: tuple[Store, list[np.ndarray]],
    made: list[WriteBehind],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under ``WRITE_BEHIND_ROWS`` (100 M value rows) nothing is written behind: the
    file stays in the page cache for the reader that comes next."""
    assert writer.WRITE_BEHIND_ROWS == 100_000_000
    store, _ = filled
    store.export_sqlite(tmp_path / "out.db")
    assert made == []
    monkeypatch.setattr(writer, "WRITE_BEHIND_ROWS", 320_000)  # this export's rows
    store.export_sqlite(tmp_path / "again.db")
    assert len(made) == 1


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the write-behind only acts on Linux"
)
def test_a_disk_error_met_behind_fails_the_export_and_leaves_nothing(
    filled: tuple[Store, list[np.ndarray]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(self: WriteBehind) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(WriteBehind, "_advance", full)
    monkeypatch.setattr(writer, "WRITE_BEHIND_ROWS", 1)
    store, _ = filled
    out = tmp_path / "out"
    out.mkdir()
    db = out / "x.db"
    with pytest.raises(StorageError) as info:
        store.export_sqlite(db)
    message = str(info.value)
    assert str(db) in message and "No space left on device" in message
    assert "nothing was written" in message
    assert list(out.iterdir()) == []  # no file, no partial one beside it
