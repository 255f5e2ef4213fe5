"""The HDF5 half of the store: arrays packed into pool datasets of a segment file.

Arrays of one dtype and shape share a pool dataset ``pools/<dtype>__<shape>`` of shape
``(slots, *shape)``, one array per slot. A store of 100,000 small series therefore holds a
handful of datasets, not 100,000, and a batch read of many arrays becomes a few slab reads
of adjacent slots. Where each array lives is recorded in the catalog, which is the
transactional half: a slot the catalog does not point at is free space.

Beside each pool, ``sums/<pool>`` keeps two checksums per slot (:func:`slot_hashes`;
in segments written before ``SUMS_FORMAT_ATTR``, :func:`slot_sums`), written with the
arrays; :meth:`ArrayFile.read_checked` compares them in one pass per slab, so a read
notices a damaged array (``damage.py`` decides what it is).

Writes run in a background thread: h5py releases the GIL while HDF5 writes and
compresses, so the caller goes on preparing the next arrays meanwhile. Every other use of
the file (reads, flush, close, ``sync``) first waits for the writes queued before it, so
callers see the file as if each write had happened when it was called; ``sync`` is also
where a failed write is reported, and the store calls it before its catalog commits.

Files are opened without HDF5's file locking: a segment is written by one process before
any catalog row names it and never changed after, so there is nothing to lock, and a
reader must not fail with ``Unable to synchronously open file`` because a writer exists.
"""

from __future__ import annotations

import contextlib
import errno
import math
import operator
import os
import re
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import repeat
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import xxhash

from ..core.elements import NUMPY_DTYPES
from ..errors import StorageError
from .direct import ChunkMap, chunk_map

DATA_FORMAT_VERSION = "1"
_CHUNK_TARGET = 256 * 1024  # bytes per chunk: small enough to read one array cheaply
_SLAB_GAP = 4  # read across up to this many unwanted slots rather than issue a new read
_SLAB_BYTES = 8 * 1024 * 1024  # a slab of nearby slots spans at most this (or one chunk)
_SUMS_HELD_BYTES = 16 * 1024 * 1024  # a read-only pool's checksums held whole up to this
# Bytes of queued writes the caller may run ahead of the writer thread by.
MAX_PENDING_BYTES = 16 * 1024 * 1024
# A store's segment writes (``Segments``) up to this size, to a file that has not started
# its writer thread, are done in the caller's thread (``ArrayFile(inline_write_bytes=)``):
# HDF5 and numpy hold the GIL, so a thread started for a small add
# (a process's first, or a store's only) cost more in its start and GIL hand-offs than
# it overlapped (first add of a process, alternating, medians of 12: `mixed 40` wall
# -6 %, CPU -10 %; `small 2,000` (one 2.7 MB write) wall -2 %, CPU -7 %). A bulk add
# hands larger parts (4 MiB, ``writing.WRITE_PART_BYTES``) when more follow: those go
# to the thread, whose overlap with the catalog's inserts pays at 10^5 series.
INLINE_WRITE_BYTES = 3 * 1024 * 1024
# ArrayFile.start_writeback flushes early only this much written since its last flush, or
# more: a few arrays' flush is quick at the seal, and an early one (a thread and a second
# flush) cost 40 single-series adds, each its own transaction, 9 % more time.
WRITEBACK_MIN_BYTES = 1024 * 1024
# No chunk cache on a writable file: each chunk is compressed as it is written (in the
# writer thread, beside the caller's work) instead of all at once when the file is
# flushed at commit, where nothing else can run. Reads group slots by chunk, so each read
# decompresses a chunk once either way.
_WRITE_CACHE_BYTES = 0
_READ_CACHE_BYTES = 4 * 1024 * 1024
# The access list of an unfiltered pool opened for reading: no chunk cache (see _pool).
_NO_CACHE = h5py.h5p.create(h5py.h5p.DATASET_ACCESS)
_NO_CACHE.set_chunk_cache(0, 0, 1.0)


# Each pool has a twin ``sums/<pool>`` of two 64-bit checksums per slot (see
# :func:`slot_hashes`, or :func:`slot_sums` by ``SUMS_FORMAT_ATTR``), written with the
# array; a read checks the arrays it returns against them in one pass per slab. Segments written before have none: their reads
# are checked by the content hash instead (``damage.read_group``).
SUMS_GROUP = "sums"
# A segment written by this release also keeps ``keys/<pool>``: each slot's array key (the
# 32-byte content hash and a kind byte), so a catalog can be rebuilt from the segments and
# an array found again when the catalog's slot for it is wrong; and its checksums are
# bound to that key (:func:`key_seeds`), so a slot read for another array never passes.
# The root attribute ``BOUND_ATTR`` marks such a file; files without it are read as before.
KEYS_GROUP = "keys"
BOUND_ATTR = "sums_bound_to_keys"
# The root attribute naming how the file's ``sums/`` were computed: 2, :func:`slot_hashes`
# (what this release writes); absent, :func:`slot_sums` (segments written before it, which
# are read and, when a repair or an older file's next write adds slots, written as they
# are: one file, one kind of checksum). Another value: a file of a later release or a
# damaged attribute; its slots are checked by content hash instead, and ``verify`` names
# the file, deciding which of the two on its checksums (``damage.sums_kind_problem``).
SUMS_FORMAT_ATTR = "slot_checksum_version"
SUMS_FORMAT = 2
KIND_CODES = {"data": 0, "timestamps": 1}
KIND_NAMES = {v: k for k, v in KIND_CODES.items()}
KEY_WIDTH = 33
#: h5py's deflate level when none is given (``create_dataset(compression="gzip")``).
_DEFAULT_GZIP = 4
_SHAPE = operator.attrgetter("shape")
_SUMS_DTYPE = np.dtype(np.uint64)  # as a read wants them (HDF5 converts, if need be)
_SUM_K1 = np.uint64(0x9E3779B97F4A7C15)
_SUM_K2 = np.uint64(0xC2B2AE3D27D4EB4F)


def slot_sums(block: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Two checksums per row of ``block`` (one array per row, as stored): ``(rows, 2)``.

    Over the row's bytes as little-endian 32-bit words ``w`` (bytes, when the row is not
    a whole number of words): ``sum(w) + K1 * (slot + 1)`` and ``sum(i * w_i) + K2 *
    (slot + 1)``, modulo 2**64. A flipped bit changes the first, two flips of one bit
    position in different words the second (a 32-bit word times an index below 2**32
    cannot wrap to zero); the slot term makes a zeroed row or checksum never match (what
    HDF5's Fletcher-32 misses: zeros checksum to zero), and a row read from another slot
    neither.
    """
    m = block.shape[0]
    raw = np.ascontiguousarray(block).reshape(m, -1).view(np.uint8)
    words = raw.view("<u4") if raw.shape[1] % 4 == 0 else raw
    index = _weights(words.shape[1])
    place = slots.astype(np.uint64) + np.uint64(1)
    out = np.empty((m, 2), dtype=np.uint64)
    out[:, 0] = words.sum(axis=1, dtype=np.uint64) + _SUM_K1 * place
    out[:, 1] = np.einsum("ij,j->i", words, index, dtype=np.uint64, casting="unsafe")
    out[:, 1] += _SUM_K2 * place
    return out


def slot_hashes(block: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Two checksums per row of ``block`` (one array per row, as stored): ``(rows, 2)``.

    The row's bytes' 128-bit XXH3 hash seeded with its slot, as two little-endian 64-bit
    words (of the big-endian digest, so the same on every machine). XXH3 runs at memory
    speed (a tenth of :func:`slot_sums`' cost on large arrays, a half on 1 kB ones, one
    call a row); the seed makes a row read from another slot differ, and a zeroed row or
    checksum never match (zeros hash to a seed-dependent, nonzero value).
    """
    m = block.shape[0]
    rows = np.ascontiguousarray(block).reshape(m, -1).view(np.uint8)
    digests = b"".join(map(xxhash.xxh3_128_digest, rows, slots.tolist()))
    return np.frombuffer(digests, dtype="<u8").reshape(m, 2).astype(np.uint64)


def _hash_block(keys: Sequence[tuple[bytes, str]]) -> np.ndarray:
    """The keys' hashes as a ``(len(keys), 32)`` uint8 block (shorter ones zero-padded)."""
    raw = b"".join(map(_FIRST, keys))
    if len(raw) != 32 * len(keys):  # not all 32 bytes: pad each (never so in practice)
        raw = b"".join(bytes(h)[:32].ljust(32, b"\0") for h, _kind in keys)
    return np.frombuffer(raw, dtype=np.uint8).reshape(len(keys), 32)


def key_seeds(keys: Sequence[tuple[bytes, str]], hashes: np.ndarray | None = None) -> np.ndarray:
    """The two 64-bit terms each array's key adds to its checksums: ``(len(keys), 2)``.

    The content hash's bytes 0-7 and 8-15, little-endian. A bound segment stores
    ``slot_sums + key_seeds``; a read subtracts the seeds of the keys it asked for, so
    the bytes of a slot that holds another array (a wrong slot in the catalog) differ by
    the two hashes' difference and never match (a 2**-128 chance for unrelated hashes).
    ``hashes``: the keys' :func:`_hash_block`, when the caller has it already.
    """
    block = _hash_block(keys) if hashes is None else hashes
    return np.ascontiguousarray(block[:, :16]).view("<u8").astype(np.uint64, copy=False)


def key_rows(keys: Sequence[tuple[bytes, str]], hashes: np.ndarray | None = None) -> np.ndarray:
    """``keys/<pool>`` rows of ``keys``: the 32-byte hash and a kind byte each
    (``hashes`` as for :func:`key_seeds`)."""
    out = np.empty((len(keys), KEY_WIDTH), dtype=np.uint8)
    out[:, :32] = _hash_block(keys) if hashes is None else hashes
    kinds = set(map(_SECOND, keys))
    if len(kinds) == 1:  # one kind a write (the usual): one code for the column
        out[:, 32] = KIND_CODES.get(kinds.pop(), 255)
    else:
        out[:, 32] = list(map(KIND_CODES.get, map(_SECOND, keys), repeat(255)))
    return out


_SUM_FUNCTIONS = {1: slot_sums, SUMS_FORMAT: slot_hashes}
#: ``ArrayFile.sums_format_found`` of a file whose root attributes could not be read.
ATTR_UNREADABLE = object()


def matching_sums_format(
    f: ArrayFile, pool: str, slots: Sequence[int], keys: Sequence[tuple[bytes, str]]
) -> int | None:
    """The known kind of slot checksum (1: :func:`slot_sums`, 2: :func:`slot_hashes`)
    that the stored checksums of ``slots`` of ``pool`` (arrays keyed ``keys``) are, or
    None when no slot matches any kind this release knows.

    The evidence ``verify`` weighs for a file whose ``SUMS_FORMAT_ATTR`` is unknown: a
    slot whose checksum matches a known kind (a 2**-128 chance by accident) shows the
    attribute, not the checksums, is what changed. One slot suffices, so arrays damaged
    themselves do not hide it.
    """
    if not slots:
        return None
    # Each slot once, ascending (as HDF5 selects), with the key of its first mention.
    at, first = np.unique(np.asarray(slots, dtype=np.int64), return_index=True)
    picked = [keys[int(i)] for i in first]
    try:
        h5 = f.h5
        block = h5[f"pools/{pool}"][at]
        stored = np.asarray(h5[f"{SUMS_GROUP}/{pool}"][at], dtype=np.uint64)
    except (OSError, RuntimeError, KeyError, ValueError, TypeError, IndexError):
        return None
    seeds = key_seeds(picked) if f.bound else np.uint64(0)
    for version, sum_rows in _SUM_FUNCTIONS.items():
        if (sum_rows(block, at) + seeds == stored).all(axis=1).any():
            return version
    return None


def _is_int(value: Any) -> bool:
    """An attribute's value as an integer version can be (an int or a numpy int)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)


#: The weights ``1..n`` of :func:`slot_sums`' second checksum, per row width: a read checks
#: one slab at a time, often of one array, and making them again was a third of its cost.
_WEIGHTS: dict[int, np.ndarray] = {}


def _weights(n: int) -> np.ndarray:
    w = _WEIGHTS.get(n)
    if w is None:
        if len(_WEIGHTS) >= 64:  # a store has a few widths; a stray many must not pile up
            _WEIGHTS.clear()
        w = _WEIGHTS[n] = np.arange(1, n + 1, dtype=np.uint64)
        w.flags.writeable = False
    return w


def _rows(dsid: Any, dtype: np.dtype, lo: int, hi: int) -> np.ndarray:
    """Rows ``lo`` to ``hi - 1`` of a dataset (fewer when it ends before ``hi``, as a
    slice would), through HDF5's read call: h5py's slicing costs more per call than
    reading a small slab does, and a read of many pools makes two calls per pool."""
    space = dsid.get_space()
    dims = space.shape
    hi = min(hi, dims[0])
    count = (max(0, hi - lo), *dims[1:])
    out = np.empty(count, dtype=dtype)
    if out.size:
        space.select_hyperslab((lo, *(0 for _ in dims[1:])), count)
        dsid.read(h5py.h5s.create_simple(count), space, out)
    return out


def _write_rows(dsid: Any, lo: int, block: np.ndarray) -> None:
    """``block`` (C-contiguous, of the dataset's dtype) into rows ``lo`` on of a dataset,
    through HDF5's write call (see :func:`_rows`)."""
    space = dsid.get_space()
    space.select_hyperslab((lo, *(0 for _ in block.shape[1:])), block.shape)
    dsid.write(h5py.h5s.create_simple(block.shape), space, block)


def _create_twin(
    h5: h5py.File, group: str, name: str, dtype: Any, width: int, rows: int, length: int
) -> Any:
    """A new twin ``<group>/<name>`` of a pool (``sums`` or ``keys``): ``(length, width)``
    of ``dtype``, resizable, chunked as its pool (``rows`` a chunk, so a slab's twin rows
    come in as few chunks as its own), made as h5py's ``create_dataset`` makes it
    (no filters, no time stamps) through HDF5's own calls."""
    try:
        gid = h5py.h5g.open(h5.id, group.encode())
    except (KeyError, ValueError):  # none yet (HDF5 2 says ValueError)
        gid = h5.create_group(group).id
    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    plist.set_chunk((rows, width))
    plist.set_obj_track_times(False)
    space = h5py.h5s.create_simple((length, width), (h5py.h5s.UNLIMITED, width))
    tid = h5py.h5t.py_create(np.dtype(dtype), logical=1)
    return h5py.h5d.create(gid, name.encode(), tid, space, dcpl=plist)


_ERRNO = re.compile(r"errno = (\d+)")
_ERRNO_HINTS = {
    errno.ENOSPC: "free some disk space and try again",
    errno.EDQUOT: "free some space within your quota and try again",
    errno.EFBIG: "a file-size limit was hit (see `ulimit -f`); raise it and try again",
    errno.EIO: "the device reported an I/O error; check the disk",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "check the permissions",
}


_STR_TYPE = h5py.h5t.py_create(h5py.string_dtype(), logical=True)
_INT_TYPE = h5py.h5t.py_create(np.dtype(np.int64), logical=True)


def write_attribute(obj: h5py.File | h5py.Group, name: str, value: str | int) -> None:
    """Set the root or group attribute ``name`` to a ``str`` or ``int``, as h5py's
    ``obj.attrs[name] = value`` stores it (a scalar UTF-8 variable-length string, a
    scalar int64; the files are the same byte by byte), through HDF5's own calls:
    h5py's ``attrs`` costs ~40 µs an attribute in Python (dtype guessing, two type
    objects, a dataspace), and each segment gets eight (~0.2 ms a write transaction).
    An attribute already there is replaced, as h5py replaces it (deleted, then made)."""
    if isinstance(value, str):
        data, tid = np.array(value, dtype=h5py.string_dtype()), _STR_TYPE
    else:
        data, tid = np.array(int(value), dtype=np.int64), _INT_TYPE
    key = name.encode()
    if h5py.h5a.exists(obj.id, key):
        h5py.h5a.delete(obj.id, key)
    h5py.h5a.create(obj.id, key, tid, h5py.h5s.create(h5py.h5s.SCALAR)).write(data)


def describe_os_error(exc: BaseException) -> str:
    """An HDF5 or OS error as one readable line.

    HDF5 messages carry its internals (addresses, buffer sizes, the call stack) that say
    nothing to a user; they are kept only with ``INFRASTORE_SQLITE_DEBUG=1``.
    """
    text = " ".join(str(exc).split())
    if os.environ.get("INFRASTORE_SQLITE_DEBUG") == "1":
        return text
    code = getattr(exc, "errno", None)
    found = _ERRNO.search(text)
    if found:
        code = int(found.group(1))
    if code in _ERRNO_HINTS:
        return f"{os.strerror(code)} (errno {code}); {_ERRNO_HINTS[code]}"
    return text if len(text) <= 240 else text[:237] + "..."


def fsync_path(path: str | Path, *, data_only: bool = False) -> None:
    """Flush a file's (or a directory's entries') bytes to the device (``data_only``: its
    data, and only the metadata needed to read it back: ``fdatasync``)."""
    fd = os.open(str(path), os.O_RDONLY)
    try:
        (os.fdatasync if data_only else os.fsync)(fd)
    finally:
        os.close(fd)


class MissingArrayFileError(StorageError):
    """The array file to open is not there."""


COMPRESSIONS = ("auto", "deflate", "none")
# "auto" leaves float pools uncompressed: on measured series values DEFLATE (level 3,
# shuffled) saves under a fifth of their bytes at about 50 MB/s, which is most of what
# a bulk add costs; integer and bool pools (time axes, counts) shrink severalfold, cheaply.
_UNCOMPRESSED_UNDER_AUTO = frozenset({"f64", "f32"})


def compression_spec(kind: str, level: int = 3, shuffle: bool = True) -> str:
    """The recorded spelling of a compression choice: ``none``, ``deflate:3:shuffle``,
    ``auto:3:noshuffle`` (``auto``: DEFLATE for every pool but float ones)."""
    if kind == "none":
        return "none"
    return f"{kind}:{int(level)}:" + ("shuffle" if shuffle else "noshuffle")


def parse_compression(spec: str) -> tuple[str, int | None, bool]:
    """``(kind, level, shuffle)`` of a recorded spelling (see :func:`compression_spec`)."""
    if spec == "none":
        return "none", None, False
    kind, level, shuffle = spec.split(":")
    return kind, int(level), shuffle == "shuffle"


def pool_name(dtype: str, shape: Sequence[int]) -> str:
    """The dataset name for arrays of one dtype and shape (``f64__8760``, ``f64__24x2``)."""
    return f"{dtype}__{'x'.join(str(int(d)) for d in shape) or 's'}"


def _chunks(row_shape: tuple[int, ...], itemsize: int, capacity: int) -> tuple[int, ...]:
    row_bytes = max(1, int(np.prod(row_shape, dtype=np.int64)) * itemsize)
    if row_bytes >= _CHUNK_TARGET and row_shape:
        # Split a large array along its first axis so no chunk grows past the target.
        first = max(1, (_CHUNK_TARGET * row_shape[0]) // row_bytes)
        return (1, min(first, row_shape[0]), *row_shape[1:])
    rows = max(1, min(_CHUNK_TARGET // row_bytes, 4096, max(capacity, 1)))
    return (rows, *row_shape)


class ArrayFile:
    """An HDF5 file of pool datasets.

    Parameters
    ----------
    path
        The ``.h5`` file.
    mode
        ``"r"``, ``"r+"`` or ``"x"`` (create).
    compression
        ``"auto"``, ``"deflate"`` or ``"none"`` (for new pools; the choice is recorded on
        the root; see :func:`compression_spec`).
    inline_write_bytes
        A write up to this size, while none went to the writer thread yet, is done in
        the caller's thread (0: every write is queued to it).
    """

    def __init__(
        self,
        path: str | Path,
        mode: str,
        *,
        compression: str = "auto",
        compression_level: int = 3,
        shuffle: bool = True,
        max_pending_bytes: int = MAX_PENDING_BYTES,
        bound: bool = False,
        inline_write_bytes: int = 0,
    ) -> None:
        self.path = str(path)
        #: Bytes of queued writes the caller may run ahead of the writer thread by.
        self.max_pending_bytes = max_pending_bytes
        #: A write up to this size, while no write went to the writer thread yet, is
        #: done in the caller's thread (see :data:`INLINE_WRITE_BYTES`).
        self.inline_write_bytes = inline_write_bytes
        cache = _READ_CACHE_BYTES if mode == "r" else _WRITE_CACHE_BYTES
        try:
            self._h5 = h5py.File(self.path, mode, rdcc_nbytes=cache, locking=False)
        except FileNotFoundError:
            raise MissingArrayFileError(
                f"cannot open the array file {self.path}: it does not exist"
            ) from None
        except OSError as exc:
            raise StorageError(
                f"cannot open the array file {self.path}: {describe_os_error(exc)}"
            ) from exc
        self._writer: ThreadPoolExecutor | None = None
        self._compression: str | None = None
        self._created = mode == "x"
        self._pending: deque[tuple[Future[None], int]] = deque()
        self._pending_bytes = 0
        self._unflushed = 0  # bytes written since the last start_writeback
        self._flushes: list[Future[None]] = []  # start_writeback's, checked by finish
        if mode == "x":
            write_attribute(self._h5, "data_format_version", DATA_FORMAT_VERSION)
            write_attribute(self._h5, "storage_backend", "hdf5")
            write_attribute(
                self._h5, "compression", compression_spec(compression, compression_level, shuffle)
            )
            self._h5.create_group("pools")
            self._h5.create_group(SUMS_GROUP)
            write_attribute(self._h5, SUMS_FORMAT_ATTR, SUMS_FORMAT)
            if bound:
                write_attribute(self._h5, BOUND_ATTR, 1)
                self._h5.create_group(KEYS_GROUP)
        else:
            try:
                has_pools = "pools" in self._h5
            except (OSError, RuntimeError, KeyError, ValueError) as exc:  # damaged metadata
                self._h5.close()
                raise StorageError(
                    f"cannot open the array file {self.path}: {describe_os_error(exc)}"
                ) from exc
            if not has_pools:
                self._h5.close()
                raise StorageError(f"{self.path} is not an array file of a store (it has no pools)")
        self._pools: dict[str, h5py.Dataset] = {}
        # A file being written: each pool's handles (pool, dtype, twins) and its rows
        # allocated so far, kept by the writer thread (:meth:`_writing`).
        self._twins: dict[str, tuple[Any, np.dtype, Any, Any]] = {}
        self._extents: dict[str, int] = {}
        # (dataset id, dtype, row shape, rows per chunk) of each pool a read used: what
        # a slab read needs, looked up once instead of through h5py's properties per call.
        self._shapes: dict[str, tuple[Any, np.dtype, tuple[int, ...], int]] = {}
        self._read_only = mode == "r"
        # A read-only file's pools read straight from the file (``direct.py``): each
        # pool's chunk map (None: read through HDF5) and the file's own descriptor.
        self._maps: dict[str, ChunkMap | None] = {}
        self._fd: int | None = None
        self._held_sums: dict[str, np.ndarray] = {}  # a read-only file's, per pool
        #: How this file's slot checksums are computed (:func:`slot_hashes` or
        #: :func:`slot_sums`); None: an unknown ``SUMS_FORMAT_ATTR``, its slots are not
        #: checked against them (a read checks them by content hash).
        self.sum_rows: Any = slot_hashes
        #: ``SUMS_FORMAT_ATTR`` as the file holds it (None: absent, as in files written
        #: before it; :data:`ATTR_UNREADABLE` when its metadata could not be read): what
        #: ``verify`` names when :attr:`sum_rows` is None.
        self.sums_format_found: Any = SUMS_FORMAT if mode == "x" else None
        # (dtype, row shape, rows per chunk) of each pool a read used: kept when the
        # HDF5 handle is let go (:meth:`release`), which ``_shapes``' dataset ids are not.
        self._geometry: dict[str, tuple[np.dtype, tuple[int, ...], int]] = {}
        # The (device, inode) of a released file: a reopen must find the same file.
        self._identity: tuple[int, int] | None = None
        if mode == "x":
            self.bound = bound
        else:
            try:
                self.bound = bool(self._h5.attrs.get(BOUND_ATTR, 0))
                self.sums_format_found = self._h5.attrs.get(SUMS_FORMAT_ATTR)
                version = 1 if self.sums_format_found is None else self.sums_format_found
            except (OSError, RuntimeError, KeyError, ValueError, TypeError):
                self.bound = False  # damaged metadata: a read names it
                self.sums_format_found = ATTR_UNREADABLE
                version = None
            self.sum_rows = _SUM_FUNCTIONS.get(version) if _is_int(version) else None

    @property
    def h5(self) -> h5py.File:
        """The open HDF5 file, once every queued write is in."""
        self.sync()
        return self._file()

    @property
    def hdf5_open(self) -> bool:
        """Whether the file is open in HDF5 (a released one reads through its descriptor)."""
        return self._h5 is not None

    def _file(self) -> h5py.File:
        """The HDF5 file, opened again if :meth:`release` let it go.

        Raises
        ------
        MissingArrayFileError
            The file is no longer there (a merge removed it since).
        StorageError
            Another file is there now, or it cannot be opened.
        """
        h5 = self._h5
        if h5 is not None:
            return h5
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise MissingArrayFileError(
                f"cannot open the array file {self.path}: it does not exist"
            ) from None
        except OSError as exc:
            raise StorageError(
                f"cannot open the array file {self.path}: {describe_os_error(exc)}"
            ) from exc
        if (st.st_dev, st.st_ino) != self._identity:
            # Segments are never rewritten in place: a different file under the name is
            # not the one whose attributes were checked when it was first opened.
            raise StorageError(
                f"cannot open the array file {self.path}: another file took its place "
                "while it was being read; run verify"
            )
        try:
            h5 = self._h5 = h5py.File(self.path, "r", rdcc_nbytes=_READ_CACHE_BYTES, locking=False)
        except OSError as exc:
            raise StorageError(
                f"cannot open the array file {self.path}: {describe_os_error(exc)}"
            ) from exc
        return h5

    def release(self) -> bool:
        """Let go of a read-only file's HDF5 handle when its reads no longer need it.

        HDF5 costs ~0.6 MB per open file (its metadata cache's tables), whatever is read
        from it. Once every pool read so far has its chunk map and held checksums, a
        read of them goes through the file descriptor alone (``direct.py``), so the
        handle is closed and the maps, checksums and descriptor are kept: the store may
        then hold many segments ready to read for ~50 KB each. Anything else reopens
        the file (:meth:`_file`). Returns whether the handle was let go.
        """
        if (
            self._h5 is None
            or not self._read_only
            or self._fd is None
            or not self._maps
            or any(m is None or n not in self._held_sums for n, m in self._maps.items())
        ):
            return False
        try:
            st = os.fstat(self._fd)
        except OSError:
            return False
        self._identity = (st.st_dev, st.st_ino)
        self._pools.clear()
        self._shapes.clear()
        with contextlib.suppress(Exception):
            self._h5.close()
        self._h5 = None
        return True

    @property
    def compression(self) -> str:
        # Read once: an attribute read costs tens of microseconds, paid per new pool.
        if self._compression is None:
            self._compression = str(self._file().attrs.get("compression", "none"))
        return self._compression

    def _filter_args(self, dtype: str) -> dict:
        kind, level, shuffle = parse_compression(self.compression)
        if kind == "none" or (kind == "auto" and dtype in _UNCOMPRESSED_UNDER_AUTO):
            return {}
        return {"compression": "gzip", "compression_opts": level, "shuffle": shuffle}

    def _pool(
        self,
        name: str,
        dtype: str | None = None,
        shape: Sequence[int] | None = None,
        rows: int = 0,
    ):
        ds = self._pools.get(name)
        if ds is not None:
            return ds
        if self._read_only:
            ds = self._open_for_reading(name)
            self._pools[name] = ds
            return ds
        if self._created and dtype is not None and shape is not None:
            # A file this object created holds no pool it did not make (they are all in
            # ``_pools``): a new one, made without looking.
            ds = h5py.Dataset(self._new_pool(name, dtype, shape, rows))
            self._pools[name] = ds
            return ds
        group = self._file()["pools"]
        if name in group:
            ds = group[name]
        elif dtype is None or shape is None:
            raise StorageError(f"the array file {self.path} has no pool {name}; run verify")
        else:
            ds = h5py.Dataset(self._new_pool(name, dtype, shape, rows))
        self._pools[name] = ds
        return ds

    def _new_pool(self, name: str, dtype: str, shape: Sequence[int], rows: int = 0) -> Any:
        """A new pool ``pools/<name>`` of ``rows`` slots (none written): resizable along
        its slots, chunked by :func:`_chunks`, filtered as the file's compression says,
        made as h5py's ``create_dataset`` makes it (shuffle before deflate, no time
        stamps) through HDF5's own calls (h5py's cost a few hundred microseconds a pool)."""
        row_shape = tuple(int(d) for d in shape)
        np_dtype = NUMPY_DTYPES[dtype]
        plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        plist.set_chunk(_chunks(row_shape, np_dtype.itemsize, 64))
        filters = self._filter_args(dtype)
        if filters:
            if filters["shuffle"]:
                plist.set_shuffle()
            level = filters["compression_opts"]
            plist.set_deflate(_DEFAULT_GZIP if level is None else level)
        plist.set_obj_track_times(False)
        space = h5py.h5s.create_simple((rows, *row_shape), (h5py.h5s.UNLIMITED, *row_shape))
        tid = h5py.h5t.py_create(np_dtype, logical=1)
        gid = h5py.h5g.open(self._h5.id, b"pools")
        return h5py.h5d.create(gid, name.encode(), tid, space, dcpl=plist)

    def _open_for_reading(self, name: str) -> h5py.Dataset:
        """Pool ``name`` of a file opened read-only (StorageError when it has none)."""
        path = f"pools/{name}".encode()
        try:
            # An unfiltered chunk is read straight from the file: a cache would only hold
            # a copy of what the OS caches anyway (the export's scattered reads would fill
            # it, a few MB per segment file, for nothing). So a pool is opened without
            # one, and a filtered pool (a compressed one: rarer) again with it. Open
            # handles of one dataset share one cache, so the first handle is closed
            # before the second opens. (One open, not two, for an unfiltered pool: ~40 µs
            # of a first read's ~90 µs a pool.)
            dsid = h5py.h5d.open(self._file().id, path, dapl=_NO_CACHE)
        except KeyError:
            raise StorageError(
                f"the array file {self.path} has no pool {name}; run verify"
            ) from None
        if dsid.get_create_plist().get_nfilters():
            dsid.close()
            dsid = h5py.h5d.open(self._file().id, path)
        return h5py.Dataset(dsid)

    def _shape_of(self, name: str) -> tuple[Any, np.dtype, tuple[int, ...], int]:
        """``(dataset id, dtype, row shape, rows per chunk)`` of pool ``name``."""
        got = self._shapes.get(name)
        if got is None:
            dsid = self._pool(name).id
            # The low-level calls: h5py's properties cost tens of microseconds each.
            plist = dsid.get_create_plist()
            crow = plist.get_chunk()[0] if plist.get_layout() == h5py.h5d.CHUNKED else 1
            got = (dsid, dsid.dtype, tuple(dsid.shape[1:]), crow)
            self._shapes[name] = got
            self._geometry[name] = got[1:]
        return got

    def _geometry_of(self, name: str) -> tuple[np.dtype, tuple[int, ...], int]:
        """``(dtype, row shape, rows per chunk)`` of pool ``name`` (no HDF5 call once known)."""
        got = self._geometry.get(name)
        return self._shape_of(name)[1:] if got is None else got

    def _sums(self, name: str) -> h5py.Dataset | None:
        """The checksum twin of pool ``name`` (None: the file has none, as files written
        before them, or a file being written not yet: :meth:`_writing` makes it)."""
        key = SUMS_GROUP + "/" + name
        ds = self._pools.get(key)
        if ds is not None:
            return ds
        # One low-level open of the path (KeyError: no twin, or no ``sums`` group at
        # all, as in files written before them).
        try:
            ds = h5py.Dataset(h5py.h5d.open(self._file().id, key.encode()))
        except KeyError:
            return None
        self._pools[key] = ds
        return ds

    def write(
        self,
        name: str,
        dtype: str,
        shape: Sequence[int],
        first_slot: int,
        arrays: Sequence[np.ndarray],
        keys: Sequence[tuple[bytes, str]] | None = None,
    ) -> None:
        """Queue ``arrays`` (each of ``shape``) for consecutive slots from ``first_slot``.

        ``keys``: each array's ``(hash, kind)``, which a bound file (``bound=True``)
        needs: it records them and binds the checksums to them. The arrays must not be
        changed afterwards; :meth:`sync` waits for the write. A write of at most
        ``inline_write_bytes`` before any larger one is done before this returns.
        """
        if self.bound and (keys is None or len(keys) != len(arrays)):
            raise StorageError(f"writing pool {name} in {self.path}: every array needs its key")
        # All of one dtype and shape: one size each (not a sum over a batch's arrays).
        size = len(arrays) * int(arrays[0].nbytes) if len(arrays) else 0
        self._unflushed += size
        job = (name, dtype, shape, first_slot, arrays, keys if self.bound else None)
        if self._writer is None and size <= self.inline_write_bytes:
            # Nothing is queued (no thread yet): written here, in order; a failure
            # reported as the queue's are (:meth:`_settle_oldest`).
            try:
                self._write_now(*job)
            except StorageError:
                raise
            except Exception as exc:
                raise StorageError(
                    f"writing to {self.path} failed: {describe_os_error(exc)}"
                ) from exc
            return
        # Report a failed write early, and keep the queue (the arrays it holds) bounded.
        # The bound is checked before this write is queued, not after: a write larger
        # than the bound (one bulk add of many series) is queued alone and the caller
        # goes on (the store's catalog inserts) while it is written, instead of waiting
        # for all of it at once. Its arrays are the caller's and held by it anyway.
        while self._pending and (
            self._pending[0][0].done() or self._pending_bytes + size > self.max_pending_bytes
        ):
            self._settle_oldest()
        future = self._writer_thread().submit(self._write_now, *job)
        self._pending.append((future, size))
        self._pending_bytes += size

    def start_writeback(self) -> None:
        """Start flushing the bytes written so far to the device, behind the queued
        writes, in the writer thread (whose ``fdatasync`` waits without the GIL while the
        caller goes on): :meth:`finish`'s fsync then has little left to wait for.

        Not a queued write: :meth:`sync` (and so :attr:`h5`) does not wait for it, so the
        caller may write more (a transaction's record) while it runs. Its failure is this
        file's write failure, reported by :meth:`finish` (never dropped: a writeback
        error the kernel reports to this descriptor is not reported again to the one
        :meth:`finish` opens). Nothing when less than :data:`WRITEBACK_MIN_BYTES` was
        written since the last one."""
        if self._unflushed < WRITEBACK_MIN_BYTES:
            return
        self._unflushed = 0
        self._flushes.append(self._writer_thread().submit(self._write_back))

    def _writer_thread(self) -> ThreadPoolExecutor:
        """The writer thread, started on first use."""
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="infrastore-sqlite-h5")
        return self._writer

    def _write_back(self) -> None:
        """:meth:`start_writeback`'s flush; the writer thread's side."""
        try:
            fsync_path(self.path, data_only=True)
        except OSError as exc:
            raise StorageError(f"syncing {self.path} failed: {describe_os_error(exc)}") from exc

    def _write_now(self, *job: Any) -> None:
        """Do one write of :meth:`write` (its arguments, in order); the writer thread's side.

        Through HDF5's own calls on the pool's and its twins' handles, looked up once per
        pool (:meth:`_writing`): h5py's slicing, resizing and properties cost tens of
        microseconds a call, several calls a pool, which a bulk add of many small pools
        (one write each) paid for every twin too."""
        name, dtype, shape, first_slot, arrays, keys = job
        try:
            # Refused before a byte is written: a pool whose checksums cannot be made.
            if self.sum_rows is None:
                raise StorageError(
                    f"cannot add to {self.path}: its slot checksums are of an unknown kind "
                    f"(root attribute {SUMS_FORMAT_ATTR}); run verify"
                )
            end = first_slot + len(arrays)
            ds, np_dtype, sums, held = self._writing(name, dtype, shape, keys is not None, end)
            rows = self._extents[name]
            if rows < end:
                # Grown by half at least, its twins with it (they are always as long).
                rows = max(end, rows + rows // 2)
                for dsid in (ds, sums, held):
                    if dsid is not None:
                        dsid.set_extent((rows, *dsid.shape[1:]))
                self._extents[name] = rows
            if len(arrays) == 1:
                block = arrays[0][None, ...]
            elif arrays[0].ndim and len(set(map(_SHAPE, arrays))) == 1:
                # One copy in C: np.stack makes a view of each array in Python first
                # (~1.5 µs an array: 3 ms of a 2,000-series add's 40, against 0.6 ms).
                block = np.concatenate(arrays).reshape(len(arrays), *arrays[0].shape)
            else:  # (shapes that differ: np.stack's refusal)
                block = np.stack(arrays)
            # As stored (the pool's dtype and byte order): what a read checks.
            block = np.ascontiguousarray(block, dtype=np_dtype)
            _write_rows(ds, first_slot, block)
            stored = self.sum_rows(block, np.arange(first_slot, end))
            if keys is not None:
                hashes = _hash_block(keys)
                stored += key_seeds(keys, hashes)  # modulo 2**64, as the sums themselves
                _write_rows(held, first_slot, key_rows(keys, hashes))
            _write_rows(sums, first_slot, stored)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise StorageError(
                f"writing pool {name} in {self.path} failed: {describe_os_error(exc)}"
            ) from exc

    def _writing(
        self, name: str, dtype: str, shape: Sequence[int], bound: bool, end: int
    ) -> tuple[Any, np.dtype, Any, Any]:
        """``(pool, its dtype, sums twin, keys twin or None)`` as low-level dataset
        handles, for the writer thread; made (or opened) on a pool's first write, whose
        slots end at ``end``: a pool this file makes is made that long, its twins with it
        (as long as growing them from empty makes them, without three resizes a pool)."""
        got = self._twins.get(name)
        if got is not None:
            return got
        ds = self._pool(name, dtype, shape, end if self._created else 0).id
        rows = ds.shape[0]
        crow = ds.get_create_plist().get_chunk()[0]
        # A file this object created has no twin it did not make: nothing to look up.
        sums = None if self._created else self._sums(name)
        sums_id = (
            sums.id
            if sums is not None
            else _create_twin(self._h5, SUMS_GROUP, name, np.uint64, 2, crow, rows)
        )
        held = None
        if bound:
            found = None
            if not self._created:
                with contextlib.suppress(KeyError, ValueError):
                    found = h5py.h5d.open(self._h5.id, f"{KEYS_GROUP}/{name}".encode())
            held = (
                found
                if found is not None
                else _create_twin(self._h5, KEYS_GROUP, name, np.uint8, KEY_WIDTH, crow, rows)
            )
        for twin in (sums_id, held):
            if twin is not None and twin.shape[0] != rows:  # an older file's: as long
                twin.set_extent((rows, *twin.shape[1:]))
        got = (ds, ds.dtype, sums_id, held)
        self._twins[name] = got
        self._extents[name] = rows
        return got

    def _settle_oldest(self) -> None:
        future, size = self._pending.popleft()
        self._pending_bytes -= size
        try:
            future.result()
        except StorageError:
            self._fail()
            raise
        except Exception as exc:
            self._fail()
            raise StorageError(f"writing to {self.path} failed: {describe_os_error(exc)}") from exc

    def _fail(self) -> None:
        # A failed write poisons the queue behind it: wait for the rest and drop them
        # (their slots stay unreferenced, which is free space).
        while self._pending:
            future, _ = self._pending.popleft()
            with contextlib.suppress(Exception):
                future.result()
        self._pending_bytes = 0

    def sync(self) -> None:
        """Wait for every queued write; raise StorageError if one failed."""
        while self._pending:
            self._settle_oldest()

    def read_checked(
        self,
        name: str,
        slots: Sequence[int],
        keys: Sequence[tuple[bytes, str]] | None = None,
    ) -> tuple[list[np.ndarray], list[int] | None]:
        """:meth:`read` of whole arrays, checked against the pool's checksums: the arrays
        and the slots whose checksum does not match (None: the pool has no checksums, or
        a bound file's checksums were asked for without the arrays' ``keys``)."""
        self.sync()
        if not slots:
            return [], []
        seeds = None
        if self.bound:
            if keys is None or len(keys) != len(slots):
                return self.read(name, slots), None
            seeds = key_seeds(keys)
        held = self._held_sums.get(name) if self._read_only else None
        if held is not None and self.sum_rows is not None:
            # Held whole already (below): no HDF5 call, the file may even be released.
            bad: list[int] = []
            return self.read(name, slots, (), _check=(held, 0, bad, seeds, self.sum_rows)), bad
        try:
            sums = self._sums(name)
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            sums = None  # a damaged checksum twin: the caller checks by content hash
        if sums is None or self.sum_rows is None:
            return self.read(name, slots), None
        lo, hi = int(min(slots)), int(max(slots)) + 1
        try:
            # One read of the checksums of the whole slot range (16 bytes a slot) instead
            # of one per slab: a read of many pools' arrays pays a call per pool, not more.
            # A read-only file's are read once, whole: its pools never change, and a
            # batch in hash order spans most of a pool anyway (HDF5 takes ~3 ms per
            # 5,000 slots of them, a chunk of 3 at a time).
            if self._read_only and sums.id.shape[0] * 16 <= _SUMS_HELD_BYTES:
                stored = self._held_sums.get(name)
                if stored is None:
                    stored = self._held_sums[name] = _rows(
                        sums.id, _SUMS_DTYPE, 0, sums.id.shape[0]
                    )
                lo = 0
            elif (hi - lo) * 16 <= _SLAB_BYTES:
                stored = _rows(sums.id, _SUMS_DTYPE, lo, hi)
            else:
                stored = None
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            stored = None
        bad = []
        check = (
            sums if stored is None else stored,
            0 if stored is None else lo,
            bad,
            seeds,
            self.sum_rows,
        )
        return self.read(name, slots, (), _check=check), bad

    def read(
        self,
        name: str,
        slots: Sequence[int],
        part: tuple[Any, ...] = (),
        _check: tuple[Any, int, list[int], np.ndarray | None, Any] | None = None,
    ) -> list[np.ndarray]:
        """Read the arrays at ``slots`` (any order), each one a fresh array.

        ``part`` selects within each array (numpy basic indexing, e.g. ``(7,)`` for row 7
        or ``(slice(None), 3)`` for column 3): only that part is read, so a reader that
        sweeps one timestep of many arrays holds one row of each, never the arrays.
        """
        self.sync()
        n = len(slots)
        if n == 0:
            return []
        try:
            got, order = self._read_slabs(name, slots, part, _check)
        except StorageError:
            raise
        except (OSError, ValueError, IndexError, KeyError, RuntimeError, TypeError) as exc:
            # HDF5 raises any of these on a damaged file: a bad object header, a chunk
            # index that points nowhere, a chunk that does not decompress.
            raise StorageError(
                f"reading pool {name} in {self.path} failed: {describe_os_error(exc)}; "
                "the file is damaged (run verify to list the series it holds)"
            ) from exc
        if order is None:
            return got
        out: list[np.ndarray | None] = [None] * n
        for k, arr in zip(order.tolist(), got, strict=True):
            out[k] = arr
        return out  # type: ignore[return-value]

    def _read_slabs(
        self,
        name: str,
        slots: Sequence[int],
        part: tuple[Any, ...],
        check: tuple[Any, int, list[int], np.ndarray | None, Any] | None = None,
    ) -> tuple[list[np.ndarray], np.ndarray | None]:
        """:meth:`read`'s slab reads: the arrays in ascending slot order, and the order
        that puts them back in the order asked (None: already in it). With ``check``
        (the checksums: the twin dataset or those of slots from an offset on, the offset,
        a list, the keys' seeds of a bound file in the order asked, or None, and the
        file's checksum function) each slab
        is checked and the wanted slots whose checksum does not match are appended to the
        list."""
        dtype, row_shape, crow = self._geometry_of(name)
        n = len(slots)
        given = np.asarray(slots, dtype=np.int64)
        gaps = np.diff(given)
        if (gaps > 0).all():  # ascending and distinct, as a batch of one add reads back
            order = None
            at = given
        else:
            order = np.argsort(given, kind="stable")
            at = given[order]
            gaps = np.diff(at)
        distinct = bool((gaps > 0).all())
        seeds = None if check is None else check[3]
        if seeds is not None and order is not None:
            seeds = seeds[order]
        # Slots sharing a chunk come in one read: a chunk is then decompressed once per
        # call, not once per array (a batch in hash order scatters over every chunk).
        # How many slots one slab may span: a few chunks' worth, or what _SLAB_BYTES holds
        # of the selected part (one call per slab is what a read of many arrays costs).
        part_shape = np.empty(row_shape)[part].shape if part else row_shape
        row_bytes = max(1, dtype.itemsize * math.prod(part_shape))
        span = max(2 * crow, _SLAB_BYTES // row_bytes)
        # A run ends where the next slot is more than _SLAB_GAP away and in another chunk
        # (found for all slots at once); a run spanning more than `span` slots is cut.
        ends = np.flatnonzero((gaps > _SLAB_GAP) & (at[1:] // crow != at[:-1] // crow)) + 1
        got: list[np.ndarray] = []
        start = 0
        for stop in [*ends.tolist(), n]:
            while start < stop:
                lo = int(at[start])
                cut = stop
                if int(at[stop - 1]) - lo >= span:
                    cut = start + max(1, int(np.searchsorted(at[start:stop], lo + span)))
                hi = int(at[cut - 1]) + 1
                if part:
                    slab = self._pool(name)[(slice(lo, hi), *part)]
                else:
                    slab = self._slab(name, dtype, row_shape, lo, hi)
                if len(slab) != hi - lo:  # h5py clips a slice past the end
                    raise IndexError(f"slots {lo}..{hi - 1} are past the end of the pool")
                if check is not None:
                    self._check_slab(
                        check,
                        slab,
                        lo,
                        hi,
                        at[start:cut],
                        None if seeds is None else seeds[start:cut],
                    )
                if distinct and hi - lo == cut - start:
                    got.extend(slab)  # every slot of the slab wanted: its rows, as views
                else:
                    # Views would keep the whole slab alive as long as the batch
                    # holding them: when it spans unwanted slots, copy the wanted
                    # ones out instead, into one block (one allocation per slab, not
                    # one per array: a batch of many short arrays would otherwise
                    # leave the heap fragmented with them, issue 37).
                    got.extend(slab[at[start:cut] - lo])
                start = cut
        return got, order

    def _slab(
        self, name: str, dtype: np.dtype, row_shape: tuple[int, ...], lo: int, hi: int
    ) -> np.ndarray:
        """Rows ``lo`` to ``hi - 1`` of pool ``name`` (fewer where it ends): straight from
        a read-only file where ``direct.py`` can, else through HDF5 (:func:`_rows`)."""
        if self._read_only:
            if name in self._maps:
                found = self._maps[name]
            else:
                try:
                    if self._fd is None:
                        self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                    found = chunk_map(self._shape_of(name)[0])
                except (OSError, ValueError, KeyError, RuntimeError, TypeError):
                    found = None  # HDF5's read reports what is wrong, as before
                self._maps[name] = found
            if found is not None and self._fd is not None:
                out = np.empty((max(0, min(hi, found.slots) - lo), *row_shape), dtype=dtype)
                if not out.size or found.read(self._fd, out, lo):
                    return out
        return _rows(self._shape_of(name)[0], dtype, lo, hi)

    @staticmethod
    def _check_slab(
        check: tuple[Any, int, list[int], Any, Any],
        slab: np.ndarray,
        lo: int,
        hi: int,
        wanted,
        seeds: np.ndarray | None = None,
    ) -> None:
        """Compare a slab's checksums with the stored ones; note the wanted slots that
        differ. ``seeds``: a bound file's key terms of the ``wanted`` slots, in order."""
        sums, offset, bad, _seeds, sum_rows = check
        stored = sums[lo - offset : hi - offset]
        if len(stored) != hi - lo:  # the twin is shorter: every slot past it is unchecked
            stored = np.concatenate([stored, np.zeros((hi - lo - len(stored), 2), np.uint64)])
        got = sum_rows(slab, np.arange(lo, hi))
        if seeds is not None:
            # Only the wanted slots: the key of a slot between them is not known here.
            at = np.asarray(wanted, dtype=np.int64) - lo
            differ_at = (got[at] + seeds != stored[at]).any(axis=1)
            if differ_at.any():
                bad.extend(int(k) for k in np.asarray(wanted)[differ_at].tolist())
            return
        differ = (got != stored).any(axis=1)
        if differ.any():
            wanted_set = set(np.flatnonzero(differ) + lo)
            bad.extend(int(k) for k in wanted if int(k) in wanted_set)

    def row_bytes(self, name: str) -> int:
        """Bytes of one array (one slot) of pool ``name``."""
        self.sync()
        try:
            ds = self._pool(name)
            return int(ds.dtype.itemsize * math.prod(ds.shape[1:]))
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise StorageError(
                f"reading pool {name} in {self.path} failed: {describe_os_error(exc)}"
            ) from exc

    def pools(self) -> Iterable[str]:
        return list(self.h5["pools"].keys())

    def flush(self) -> None:
        """Wait for the queued writes and flush the file (raises StorageError if a write failed)."""
        self.sync()
        with contextlib.suppress(Exception):
            self._h5.flush()

    def finish(self) -> None:
        """Complete a file being written: every queued write in, closed, fsynced.

        Raises StorageError (the file is then closed but incomplete) if anything failed.
        """
        try:
            self.sync()
            self._h5.flush()
            # close() writes the last metadata; its failure must be seen, not suppressed.
            self._h5.close()
            for flush in self._flushes:  # start_writeback's: a failed one fails the file
                flush.result()
        except StorageError:
            self.close()
            raise
        except (OSError, RuntimeError, ValueError) as exc:
            self.close()
            raise StorageError(f"writing {self.path} failed: {describe_os_error(exc)}") from exc
        self.close()
        try:
            fsync_path(self.path)
        except OSError as exc:
            raise StorageError(f"syncing {self.path} failed: {describe_os_error(exc)}") from exc

    def close(self) -> None:
        try:
            with contextlib.suppress(StorageError):
                self.sync()
        finally:
            if self._writer is not None:
                self._writer.shutdown(wait=True)  # a flush still running too
                self._writer = None
            self._flushes = []
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = None
            if self._h5 is not None:
                with contextlib.suppress(Exception):
                    self._h5.close()
