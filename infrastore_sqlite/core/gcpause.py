"""Pausing Python's cyclic garbage collector around allocation-heavy loops."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block; restore its state afterwards.

    A loop that creates a million small containers (the lists of a parsed JSON text, the
    row dicts of a bulk add) wakes the collector at every few hundred allocations, and
    each wake rescans what the loop built so far, which can triple its time. Such loops
    create no cycles, so nothing is lost by collecting after them.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
