"""interchange/write_behind.py: a file written front to back leaves the page cache a
window behind its writer, its content intact; the Parquet export uses it for its local
values files and they read back the same."""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from varied_store import add, new_store, sts

from infrastore_sqlite.interchange import write_behind
from infrastore_sqlite.interchange.write_behind import WriteBehind

WINDOW = 1 << 20
PAGE = mmap.PAGESIZE

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="page-cache residency is read with mincore"
)


def _resident(path: Path) -> np.ndarray:
    """Per page of the file: whether it is in the page cache (mincore of a mapping)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    size = path.stat().st_size
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) as mm:
        addr = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        vec = (ctypes.c_ubyte * ((size + PAGE - 1) // PAGE))()
        assert libc.mincore(ctypes.c_void_p(addr), size, vec) == 0, ctypes.get_errno()
        resident = np.frombuffer(vec, dtype=np.uint8) & 1
        del addr  # the buffer's export ends before the mapping closes
    return resident.astype(bool)


def _write(path: Path, windows: int, behind: WriteBehind | None) -> bytes:
    data = np.random.default_rng(7).integers(0, 255, windows * WINDOW, dtype=np.uint8).tobytes()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for at in range(0, len(data), WINDOW // 4):
            os.write(fd, data[at : at + WINDOW // 4])
            if behind is not None:
                behind.advance()
    finally:
        os.close(fd)
        if behind is not None:
            behind.close()
    return data


@linux_only
def test_written_windows_leave_the_page_cache(tmp_path: Path) -> None:
    plain, behind_path = tmp_path / "plain.bin", tmp_path / "behind.bin"
    data = _write(plain, 8, None)
    # Without write-behind every page stays cached: what the check below would see.
    assert _resident(plain).all()
    behind = WriteBehind(behind_path, window=WINDOW)
    assert _write(behind_path, 8, behind) == data
    assert behind.started == 8 * WINDOW
    assert behind.dropped == 7 * WINDOW
    resident = _resident(behind_path)
    # The dropped windows are out of the page cache, the last one still in it.
    assert not resident[: (7 * WINDOW) // PAGE].any()
    assert resident[(7 * WINDOW) // PAGE :].all()
    assert behind_path.read_bytes() == data


def test_without_sync_file_range_nothing_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another platform (no sync_file_range): the file is written as it would be."""
    monkeypatch.setattr(write_behind, "_sync_file_range", lambda: None)
    path = tmp_path / "f.bin"
    behind = WriteBehind(path, window=WINDOW)
    data = _write(path, 4, behind)
    assert (behind.started, behind.dropped) == (0, 0)
    assert path.read_bytes() == data


@linux_only
def test_a_file_that_stays_small_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "small.bin"
    behind = WriteBehind(path, window=WINDOW)
    data = _write(path, 1, behind)
    assert (behind.started, behind.dropped) == (WINDOW, 0)
    assert path.read_bytes() == data


@linux_only
def test_advance_on_a_file_not_yet_there_raises_nothing_and_stops(tmp_path: Path) -> None:
    """Advice only: a file it cannot open turns it off, the writer's own errors are the
    ones that count."""
    behind = WriteBehind(tmp_path / "missing.bin", window=WINDOW)
    behind.advance()
    behind.advance()
    assert (behind.started, behind.dropped) == (0, 0)
    behind.close()


def test_parquet_export_through_write_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A values file of several windows (a 256 KiB window here) reads back exact."""
    monkeypatch.setattr(write_behind, "WINDOW_BYTES", 256 << 10)
    store = new_store(tmp_path / "s.h5")
    rng = np.random.default_rng(3)
    series = [rng.random(50_000) for _ in range(8)]
    for i, values in enumerate(series):
        add(store, sts(f"s{i}", values), owner=i + 1)
    out = tmp_path / "out"
    (part,) = store.export_parquet(out)
    store.close()
    values_file = Path(part["values_file"])
    assert values_file.stat().st_size > 3 * (256 << 10)
    table = pq.read_table(values_file, columns=["array_id", "value"]).to_pandas()
    got = sorted(tuple(g["value"].to_numpy()) for _, g in table.groupby("array_id"))
    assert got == sorted(tuple(v) for v in series)
