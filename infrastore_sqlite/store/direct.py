"""Slots of a read-only segment's unfiltered pools read straight from the file.

A segment is never changed once written (``arrays.py``), so where each chunk of a pool
lies in the file is fixed: walked once per pool from HDF5's chunk index
(:func:`chunk_map`), it turns a slab of slots into one ``os.preadv`` per run of adjacent
chunks, into the array the read returns. HDF5's own read of one slot costs ~90 µs of
selection and index work beside ~10 µs of copying for a 70 KB array, and holds the GIL
throughout; an export reads arrays in hash order, scattered over the pools, one slot per
call, so that work was most of its reading. What is read is checked as before (the
pool's checksums, else the content hash): a map that pointed wrong would be caught as
damage, never returned.

Only the plain case is read this way: a chunked or contiguous pool without filters,
whose chunks hold whole rows, of a native-endian numeric dtype, on a system with
``os.preadv``; a slab touching a chunk never written, or a read that comes back short
(a truncated file), goes through HDF5 instead, which reports what is wrong as it always
did. Imports numpy, h5py and the standard library only.
"""

from __future__ import annotations

import math
import os
from typing import Any

import h5py
import numpy as np

__all__ = ["ChunkMap", "chunk_map"]

#: dtype kinds whose bytes in the file are the array's bytes (booleans are an HDF5 enum
#: of 0/1 bytes, complex numbers a pair of floats: both as numpy lays them out).
_PLAIN_KINDS = frozenset("biufc")


class ChunkMap:
    """Where each chunk of one pool starts in its file (``addr[c]``, -1: never written),
    with the pool's slots, rows per chunk and bytes per row."""

    __slots__ = ("addr", "chunk_bytes", "crow", "row_bytes", "slots")

    def __init__(self, addr: np.ndarray, slots: int, crow: int, row_bytes: int) -> None:
        self.addr = addr
        self.slots = slots
        self.crow = crow
        self.row_bytes = row_bytes
        self.chunk_bytes = crow * row_bytes

    def read(self, fd: int, out: np.ndarray, lo: int) -> bool:
        """Rows ``lo`` to ``lo + len(out) - 1`` into ``out`` (C-contiguous): False when a
        chunk of them was never written or the file ends before them (nothing is then
        to be trusted in ``out``; the caller reads through HDF5)."""
        hi = lo + out.shape[0]
        crow, row_bytes, addr = self.crow, self.row_bytes, self.addr
        first, last = lo // crow, (hi - 1) // crow
        if (addr[first] if first == last else addr[first : last + 1].min()) < 0:
            return False
        flat = memoryview(out.reshape(-1).view(np.uint8))
        at = 0  # bytes of ``out`` filled
        row = lo
        while row < hi:
            # One call for the run of chunks that lie end to end in the file.
            c = row // crow
            start = int(addr[c]) + (row - c * crow) * row_bytes
            end_row = min(hi, (c + 1) * crow)
            while end_row < hi and int(addr[c + 1]) == int(addr[c]) + self.chunk_bytes:
                c += 1
                end_row = min(hi, (c + 1) * crow)
            size = (end_row - row) * row_bytes
            if os.preadv(fd, [flat[at : at + size]], start) != size:
                return False
            at += size
            row = end_row
        return True


def chunk_map(dsid: Any) -> ChunkMap | None:
    """The chunk map of a pool (an h5py dataset id of shape ``(slots, *row)``), or None
    when its slots are not plain bytes in the file (see the module's docstring)."""
    if not hasattr(os, "preadv"):
        return None
    dtype = dsid.dtype
    if (
        dtype.kind not in _PLAIN_KINDS
        or not dtype.isnative
        or dtype.fields is not None
        or dtype.subdtype is not None
    ):
        return None
    plist = dsid.get_create_plist()
    if plist.get_nfilters():
        return None
    shape = tuple(dsid.shape)
    row_bytes = dtype.itemsize * math.prod(shape[1:])
    slots = shape[0]
    layout = plist.get_layout()
    if layout == h5py.h5d.CONTIGUOUS:
        offset = dsid.get_offset()
        addr = np.array([-1 if offset is None else offset], dtype=np.int64)
        return ChunkMap(addr, slots, max(1, slots), row_bytes)
    if layout != h5py.h5d.CHUNKED or not hasattr(dsid, "chunk_iter"):
        return None
    chunk = tuple(plist.get_chunk())
    if chunk[1:] != shape[1:]:  # a row cut over several chunks: not one run of bytes
        return None
    crow = int(chunk[0])
    addr = np.full(-(-slots // crow), -1, dtype=np.int64)
    sizes_ok = True

    def note(info: Any) -> None:
        nonlocal sizes_ok
        c = info.chunk_offset[0] // crow
        if c < addr.size:
            addr[c] = info.byte_offset
            sizes_ok = sizes_ok and info.size == crow * row_bytes
        return None

    dsid.chunk_iter(note)
    return ChunkMap(addr, slots, crow, row_bytes) if sizes_ok else None
