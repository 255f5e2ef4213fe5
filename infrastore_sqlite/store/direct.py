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
from collections.abc import Iterator
from typing import Any

import h5py
import numpy as np

__all__ = ["ChunkMap", "chunk_map"]

#: dtype kinds whose bytes in the file are the array's bytes (booleans are an HDF5 enum
#: of 0/1 bytes, as numpy lays them out): the store's eleven dtypes.
_PLAIN_KINDS = frozenset("biuf")


class ChunkMap:
    """Where each chunk of one pool starts in its file (``addr[c, j]``, -1: never
    written): ``crow`` whole rows (slots) per chunk and ``parts == 1``, or, for rows
    longer than a chunk, one slot per chunk row (``crow == 1``) cut into ``parts``
    chunks of ``part_bytes`` each along its first axis (the last one filled in part)."""

    __slots__ = ("addr", "crow", "part_bytes", "parts", "row_bytes", "slots")

    def __init__(
        self, addr: np.ndarray, slots: int, crow: int, row_bytes: int, part_bytes: int
    ) -> None:
        self.addr = addr
        self.slots = slots
        self.crow = crow
        self.row_bytes = row_bytes
        self.parts = addr.shape[1]
        self.part_bytes = part_bytes

    def read(self, fd: int, out: np.ndarray, lo: int) -> bool:
        """Rows ``lo`` to ``lo + len(out) - 1`` into ``out`` (C-contiguous): False when a
        chunk of them was never written or the file ends before them (nothing is then
        to be trusted in ``out``; the caller reads through HDF5)."""
        hi = lo + out.shape[0]
        crow = self.crow
        chunks = self.addr[lo // crow : (hi - 1) // crow + 1]
        if chunks.min() < 0:
            return False
        flat = memoryview(out.reshape(-1).view(np.uint8))
        at = 0  # bytes of ``out`` filled
        start = size = 0  # the run of bytes lying end to end in the file, not yet read
        for offset, n in self._pieces(chunks, lo, hi):
            if size and offset == start + size:
                size += n
                continue
            if size:
                if os.preadv(fd, [flat[at : at + size]], start) != size:
                    return False
                at += size
            start, size = offset, n
        return os.preadv(fd, [flat[at : at + size]], start) == size

    def _pieces(self, chunks: np.ndarray, lo: int, hi: int) -> Iterator[tuple[int, int]]:
        """``(file offset, bytes)`` of rows ``lo`` to ``hi - 1``, in their order."""
        crow, row_bytes = self.crow, self.row_bytes
        if self.parts == 1:
            row = lo
            for address in chunks[:, 0].tolist():
                end = min(hi, (row // crow + 1) * crow)
                yield address + (row % crow) * row_bytes, (end - row) * row_bytes
                row = end
            return
        last = row_bytes - (self.parts - 1) * self.part_bytes  # the last part's bytes
        for addresses in chunks.tolist():
            for address in addresses[:-1]:
                yield address, self.part_bytes
            yield addresses[-1], last


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
        addr = np.array([[-1 if offset is None else offset]], dtype=np.int64)
        return ChunkMap(addr, slots, max(1, slots), row_bytes, row_bytes)
    if layout != h5py.h5d.CHUNKED or not hasattr(dsid, "chunk_iter"):
        return None
    chunk = tuple(plist.get_chunk())
    if chunk[1:] == shape[1:]:  # whole rows
        crow, part_rows, parts = int(chunk[0]), 1, 1
    elif chunk[0] == 1 and chunk[2:] == shape[2:]:  # a row cut along its first axis only
        crow, part_rows = 1, int(chunk[1])
        parts = -(-shape[1] // part_rows)
    else:
        return None
    chunk_bytes = dtype.itemsize * math.prod(chunk)
    part_bytes = row_bytes if parts == 1 else chunk_bytes
    addr = np.full((-(-slots // crow), parts), -1, dtype=np.int64)
    sizes_ok = True

    def note(info: Any) -> None:
        nonlocal sizes_ok
        c = info.chunk_offset[0] // crow
        j = info.chunk_offset[1] // part_rows if parts > 1 else 0
        if c < addr.shape[0] and j < parts:
            addr[c, j] = info.byte_offset
            sizes_ok = sizes_ok and info.size == chunk_bytes
        return None

    dsid.chunk_iter(note)
    return ChunkMap(addr, slots, crow, row_bytes, part_bytes) if sizes_ok else None
