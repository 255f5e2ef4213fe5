"""Running one side of a producer/consumer loop in a second thread.

The export alternates between two kinds of work: Python that prepares values (HDF5
reads, reshaping, encoding) and SQLite statements that run without the GIL (apsw
releases it for the whole of a statement's step). Run the first in a worker thread and
the two overlap on a second core instead of taking turns. (The store's HDF5 writes have
a writer thread of their own, in ``arrays.py``.)

Not for per-row fetches: apsw releases and retakes the GIL at every row a cursor steps,
so a fetch beside a thread busy in Python waits at each row.

The queue between them holds at most ``depth`` items, so memory stays bounded by what
the producer makes per item; nothing else is shared.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import platform
import queue
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library is another (macOS, Windows,
    musl), whose allocators return memory on their own terms."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_heap() -> bool:
    """Hand the free memory of every thread's C heap back to the system; True if done.

    glibc gives each thread that allocates its own arena and keeps what is freed in it
    for that thread's next allocation: once a worker thread is done (the export's read
    batches, 16 MiB each, freed in the worker's arena), that memory stays resident while
    the writing thread grows its own for the next phase (the series rows). Measured at
    300 k series: the SQLite export's peak 157 -> 144 MB with a trim before its series
    rows. Called between phases, never per item (it walks every arena's free lists).
    Elsewhere than glibc, nothing is done.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


_ITEM, _END, _ERROR = 0, 1, 2

# How long a thread may hold the GIL while another waits for it. The default (5 ms) is
# longer than most of the statements the consumer runs, which would then spend most of
# their time waiting for the producer to let go when they return; 0.1 ms keeps that
# hand-over prompt (it only costs when the other thread asks for the GIL).
_SWITCH_INTERVAL = 0.0001
# The interval is process-wide: shortened while any Prefetch runs, restored after the last.
# The cyclic collector is paused for as long (also process-wide): a collection the worker
# happened to start would free the caller's garbage in the worker thread, which an
# extension object bound to the thread that made it refuses (an "unsendable ... dropped
# on another thread" warning); what a worker makes holds no cycles, so nothing waits.
_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.0
_gc_was_enabled = False


def _shorten_switch_interval() -> None:
    global _switch_users, _switch_saved, _gc_was_enabled
    with _switch_lock:
        if _switch_users == 0:
            _switch_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_saved, _SWITCH_INTERVAL))
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _switch_users += 1


def _restore_switch_interval() -> None:
    global _switch_users
    with _switch_lock:
        _switch_users -= 1
        if _switch_users == 0:
            sys.setswitchinterval(_switch_saved)
            if _gc_was_enabled:
                gc.enable()


class Prefetch(Generic[T]):
    """Iterate ``source`` in a worker thread, at most ``depth`` items ahead.

    Use as a context manager; iterating yields the source's items in order, and an
    exception the source raised is raised again in the consumer, at the point where its
    item would have come. Leaving the block (normally or by an exception) stops the
    worker and waits for it, so the source is never used after the block.

    Parameters
    ----------
    source
        Any iterable; it is iterated (and, if a generator, closed) in the worker only.
    depth
        Items made ahead of the consumer.
    """

    def __init__(self, source: Iterable[T], depth: int = 4) -> None:
        self._queue: queue.Queue[tuple[int, object]] = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(source,), name="infrastore-sqlite-prefetch", daemon=True
        )
        self._shortened = False

    def __enter__(self) -> Prefetch[T]:
        _shorten_switch_interval()
        self._shortened = True
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, source: Iterable[T]) -> None:
        it = iter(source)
        try:
            for item in it:
                if not self._put((_ITEM, item)):
                    return
            self._put((_END, None))
        except BaseException as exc:  # handed to the consumer, which raises it
            self._put((_ERROR, exc))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()

    def _put(self, message: tuple[int, object]) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(message, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[T]:
        while True:
            kind, value = self._queue.get()
            if kind == _ITEM:
                yield value  # type: ignore[misc]
            elif kind == _END:
                return
            else:
                assert isinstance(value, BaseException)
                raise value

    def close(self) -> None:
        """Stop the worker (it finishes its current item) and wait for it."""
        self._stop.set()
        if self._thread.is_alive() or self._thread.ident is not None:
            self._thread.join()
        if self._shortened:
            _restore_switch_interval()
            self._shortened = False
