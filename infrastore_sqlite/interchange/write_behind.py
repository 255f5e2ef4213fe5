"""Write-behind for a large file written front to back: its written part goes to the
disk as it grows and leaves the page cache, instead of piling up there.

An export writes gigabytes that nobody reads back in the same minute. Left to the
kernel, every written page stays cached (dirty, then clean) until memory runs short, so
each new page is a fresh allocation; on a virtual machine whose host takes back the
guest's free memory (free page reporting, ballooning), each such first touch of a page
also faults in the host. Measured on this project's 2-core VM: writing 3 GB took 16-18
s of system CPU when the memory it landed in had been free for a few seconds, 5.4 s when
it had just been freed, and 0.9-1.0 s with this write-behind (its pages go back to the
allocator a window behind the writer and are reused while still warm); the Parquet
export of 10^9 values spent 34 % of its CPU in that copy. The SQLite export of a new file
of 100 M rows or more uses it too: on a machine whose memory had long been in use it
measured the same with it or without (1-3 % more CPU on 175 M rows), but on a fresh VM
that export of 7 GB spent 20-24 s of its 55-60 s CPU in the kernel, 3.4-4.0 s with this
write-behind (36-37 s wall instead of 54-59). The price of dropping what was written: a
reader right after reads it from the disk (a 2.2 GB file imported at once: 34.5 s against
23.3 s from the cache), hence the SQLite export's threshold.

:class:`WriteBehind` watches a file another writer (pyarrow) writes, through a
descriptor of its own: each :meth:`WriteBehind.advance` starts the writeback of every
complete window of ``window`` bytes past the last, then waits for the window before
that one (whose writeback was started a call or more earlier, so it is normally done)
and drops its pages from the cache. At most ~2 windows of the file are dirty or cached
at once. A page the writer rewrites later is simply dirty again: dropping a clean page
never loses data. The price: a file of more than two windows is written at the disk's
pace as it goes, where the kernel would have let up to its dirty threshold (a few GB
here) wait in memory and returned sooner on a slow disk; beyond that threshold the
kernel throttles the writer anyway. The calls are advice: where the platform has no
``sync_file_range`` (not Linux) nothing is done (``posix_fadvise`` alone drops only
pages already written back, which a writer outruns). A write error the disk reports here
(``EIO``, ``ENOSPC``) is raised as ``OSError`` for the caller to name the file; any
other refusal turns the advice off.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["WINDOW_BYTES", "WriteBehind"]

#: The window: 64 MiB (the dirty pages of 2 windows are far below the kernel's
#: thresholds, and one ``sync_file_range`` per 64 MiB costs nothing measurable).
WINDOW_BYTES = 64 << 20

# sync_file_range's flags (linux/fs.h).
_WAIT_BEFORE, _WRITE, _WAIT_AFTER = 1, 2, 4
# Errors that say the data did not reach the disk: the caller's to report.
_DISK_ERRORS = frozenset({errno.EIO, errno.ENOSPC, errno.EDQUOT})


@functools.cache
def _sync_file_range() -> Callable[[int, int, int, int], None] | None:
    """Linux's ``sync_file_range`` (Python's ``os`` has no binding), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int

    def call(fd: int, offset: int, nbytes: int, flags: int) -> None:
        # ctypes releases the GIL for the call: a wait blocks this thread only.
        if fn(fd, offset, nbytes, flags) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return call


class WriteBehind:
    """Write-behind for the file at ``path``, being written front to back by another
    writer (see the module docstring). Use :meth:`advance` as it grows, then
    :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str], *, window: int | None = None) -> None:
        self.path = Path(path)
        self.window = window or WINDOW_BYTES
        self._fd: int | None = None
        self._off = _sync_file_range() is None or not hasattr(os, "posix_fadvise")
        self.started = 0  #: bytes whose writeback was started
        self.dropped = 0  #: bytes written back and dropped from the page cache

    def advance(self) -> None:
        """Start the writeback of the file's new complete windows and drop the ones
        before the last started (raises ``OSError`` for a disk's write error)."""
        if self._off:
            return
        try:
            self._advance()
        except OSError as exc:
            if exc.errno in _DISK_ERRORS:
                raise
            self._off = True  # advice refused (a file system without it): write on

    def _advance(self) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        fd, w = self._fd, self.window
        size = os.fstat(fd).st_size
        sync = _sync_file_range()
        assert sync is not None  # (else _off)
        while self.started + w <= size:
            sync(fd, self.started, w, _WRITE)
            self.started += w
        # Keep the newest started window in flight; wait for the ones before it (their
        # writeback began a call or more ago) and drop their now clean pages.
        while self.dropped + 2 * w <= self.started:
            sync(fd, self.dropped, w, _WAIT_BEFORE | _WRITE | _WAIT_AFTER)
            os.posix_fadvise(fd, self.dropped, w, os.POSIX_FADV_DONTNEED)
            self.dropped += w

    def close(self) -> None:
        """Close this descriptor (the file's writer keeps its own)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
