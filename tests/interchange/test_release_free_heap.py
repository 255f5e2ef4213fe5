"""``pipeline.release_free_heap``: what a finished worker thread freed goes back to the
system between an export's phases (glibc keeps it in that thread's arena otherwise), and
elsewhere than glibc nothing is done (issue 37: the exports' memory growth)."""

from __future__ import annotations

import os
import platform
import sys
import threading

import pytest

from infrastore_sqlite.interchange import pipeline
from infrastore_sqlite.interchange.pipeline import release_free_heap

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's; elsewhere the call does nothing")
def test_what_a_finished_thread_freed_goes_back() -> None:
    kept: list[bytes] = []

    def work() -> None:
        # ~48 MB in blocks malloc serves from the thread's arena (past pymalloc's 512
        # bytes, below mmap's threshold); one in 64 stays alive, so the arena cannot
        # shrink from its top on its own and the freed pages stay resident.
        blocks = [bytes(1000) for _ in range(48_000)]
        kept.extend(blocks[::64])
        del blocks

    t = threading.Thread(target=work)
    t.start()
    t.join()
    before = _rss_bytes()
    assert release_free_heap() is True
    after = _rss_bytes()
    assert before - after > 16 * 2**20, (before, after)
    assert len(kept) == 750 and all(b == bytes(1000) for b in kept)


def test_elsewhere_than_glibc_nothing_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline._malloc_trim.cache_clear()
    monkeypatch.setattr(platform, "libc_ver", lambda *a, **k: ("", ""))
    try:
        assert release_free_heap() is False
    finally:
        monkeypatch.undo()
        pipeline._malloc_trim.cache_clear()
    assert release_free_heap() is GLIBC
