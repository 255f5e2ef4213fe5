"""The store directory and its immutable HDF5 segment files.

Layout of a store at ``<path>``::

    <path>/catalog.sqlite       the catalog (WAL mode: -wal and -shm beside it while in use)
    <path>/segments/<name>.h5   the arrays, one file per write transaction (or merge)

Why segments: HDF5 is not crash-safe when a file is modified in place. A failed write
(disk full, a file-size limit, a kill, power loss) in the middle of extending a dataset
leaves its superblock, B-trees and free-space records disagreeing, and the whole file,
with every array ever stored in it, becomes unreadable. So a file is never modified once
a catalog row names it: each write transaction writes the arrays it adds into one new
segment file, which is finished, closed and fsynced (the file, then its directory entry)
before the catalog commit that first names it. The catalog commit is therefore the one
point at which a write becomes visible; a failure before it leaves an unreferenced file
that the next writer deletes (while it holds the write lock, so never a file another
writer is still writing), a failure after it loses nothing.

Small segments are merged as the store grows (:func:`merge_candidates`), so a user who
adds series one call at a time ends with a few dozen files, not one per call; a merge is
an ordinary write transaction that rewrites the live arrays of some segments into a new
one and deletes the old files after its commit. A reader that finds a segment merged
away under it reads the arrays' locations again (a fresh catalog snapshot) and retries.

Everything is inside one directory, so a store stays one thing to copy.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..errors import MismatchedArtifactError, StorageError
from .arrays import (
    MAX_PENDING_BYTES,
    ArrayFile,
    MissingArrayFileError,
    describe_os_error,
    fsync_path,
    parse_compression,
)

CATALOG_NAME = "catalog.sqlite"
SEGMENT_DIR = "segments"
LEGACY_SEGMENT = "legacy.h5"
LEGACY_CATALOG_SUFFIX = ".sqlite"
#: The mark of a segment sealed whose commit is not done: ``segments/<name>.sealed``.
SEALED_SUFFIX = ".sealed"
_MAX_OPEN_READERS = 64
# Size-tiered merging: a segment's tier is log8 of its size in units of _TIER_BASE, and
# _MERGE_FANIN segments of one tier are merged into one of the next. Every array is then
# rewritten at most _MAX_MERGE_TIER times over the store's life, and a store holds at
# most _MERGE_FANIN - 1 segments per tier below _MAX_MERGE_TIER.
_MERGE_FANIN = 8
_TIER_BASE = 64 * 1024
# Segments of this tier and above (4 MiB and more) are never merged: merging is there so
# that many small writes do not leave many small files, and a file of 4 MiB is already
# big enough that its per-file cost (an open, an HDF5 superblock) is negligible beside
# its data. Merging big segments only rewrites data that is fine where it is: eight
# 10,000-series bulk adds of 168 values were followed by a 1.6 s merge rewriting all
# 80,000 arrays and their catalog rows, a stall that returned at every eighth add and
# made the per-series cost of a bulk add grow with the store (issue 26).
_MAX_MERGE_TIER = 3


class SegmentGone(StorageError):
    """A segment named by an older catalog snapshot was merged away; read the catalog again."""


class WrongSegmentError(StorageError):
    """A segment file holds another segment (it records another name): a file swapped,
    copied over a sibling or renamed. Never read; ``verify`` names it as damage."""


#: The root attribute where a segment records its own file name (the catalog's name for it).
NAME_ATTR = "segment_name"


def catalog_file(root: Path) -> Path:
    """The catalog inside a store directory."""
    return root / CATALOG_NAME


def legacy_catalog(path: Path) -> Path:
    """The catalog file of a two-file store (``<path>.sqlite``, the layout before segments)."""
    return Path(str(path) + LEGACY_CATALOG_SUFFIX)


def tier(nbytes: int) -> int:
    """The merge tier of a segment of ``nbytes``."""
    if nbytes < _TIER_BASE:
        return 0
    return math.floor(math.log(nbytes / _TIER_BASE, _MERGE_FANIN)) + 1


def merge_candidates(segments: Iterable[tuple[str, int]]) -> list[str]:
    """The segments to merge next (``(name, bytes)`` pairs in; names out, or none).

    The lowest tier holding ``_MERGE_FANIN`` segments is merged whole; segments of
    ``_MAX_MERGE_TIER`` and above are left as they are (a merge of the tier below it may
    still produce one).
    """
    by_tier: dict[int, list[str]] = {}
    for name, nbytes in segments:
        t = tier(int(nbytes))
        if t < _MAX_MERGE_TIER:
            by_tier.setdefault(t, []).append(name)
    for t in sorted(by_tier):
        if len(by_tier[t]) >= _MERGE_FANIN:
            return sorted(by_tier[t])
    return []


def stale_work_dirs(parent: Path, name: str, kind: str) -> list[Path]:
    """Work directories ``.<name>.<kind>-<pid>-<id>`` of processes that are gone."""
    out = []
    prefix = f".{name}.{kind}-"
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            if not entry.name.startswith(prefix):
                continue
            pid = entry.name[len(prefix) :].split("-", 1)[0]
            if pid.isdigit() and not pid_alive(int(pid)):
                out.append(entry)
    return out


def work_dir(parent: Path, name: str, kind: str) -> Path:
    """A fresh work directory name beside ``parent/name`` that names this process."""
    return parent / f".{name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (on this machine)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_tree(path: Path) -> None:
    """Remove a work directory (or file) and everything in it; missing is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


class Segments:
    """The segment files of one open store: cached readers and this transaction's writer.

    Parameters
    ----------
    root
        The store directory.
    generation
        The catalog's generation; every segment carries it, so a catalog and segments
        that were not written together are told apart.
    compression
        The store's filter spelling (``none`` or ``deflate:<level>:<shuffle|noshuffle>``)
        for segments this object writes.
    """

    def __init__(self, root: Path, *, generation: str, compression: str) -> None:
        self.root = root
        self.dir = root / SEGMENT_DIR
        self.generation = generation
        self.compression = compression
        #: How far this store's writes may queue ahead of the writer thread, in bytes.
        self.write_buffer_bytes = MAX_PENDING_BYTES
        self._readers: OrderedDict[str, ArrayFile] = OrderedDict()
        self._writer: ArrayFile | None = None
        self._writer_name: str | None = None
        self._slots: dict[str, int] = {}
        self._sealed: str | None = None

    # ------------------------------------------------------------------ reading
    def path(self, name: str) -> Path:
        return self.dir / name

    def reader(self, name: str) -> ArrayFile:
        """An open, read-only segment (the transaction's own one while it is written)."""
        if name == self._writer_name and self._writer is not None:
            return self._writer
        f = self._readers.get(name)
        if f is not None:
            self._readers.move_to_end(name)
            return f
        path = self.path(name)
        try:
            f = ArrayFile(path, "r")
        except MissingArrayFileError:
            raise SegmentGone(
                f"the segment {path} is gone; the catalog snapshot that named it is older "
                "than a merge"
            ) from None
        try:
            actual = f.h5.attrs.get("catalog_generation")
        except (OSError, RuntimeError, KeyError, ValueError) as exc:  # damaged metadata
            f.close()
            raise StorageError(
                f"cannot open the array file {path}: {describe_os_error(exc)}"
            ) from exc
        if isinstance(actual, bytes):
            actual = actual.decode()
        if actual != self.generation:
            f.close()
            raise MismatchedArtifactError(
                f"the segment {path} does not belong to this store's catalog (generation "
                f"{actual}, catalog {self.generation}); restore the store directory as it was "
                "written, as a whole"
            )
        try:
            own = f.h5.attrs.get(NAME_ATTR)
        except (OSError, RuntimeError, KeyError, ValueError) as exc:  # damaged metadata
            f.close()
            raise StorageError(
                f"cannot open the array file {path}: {describe_os_error(exc)}"
            ) from exc
        if isinstance(own, bytes):
            own = own.decode("utf-8", "replace")
        # A segment written before names were recorded has none: read as before.
        if own is not None and own != name:
            f.close()
            raise WrongSegmentError(
                f"cannot open the array file {path}: it holds the segment {own}, not {name} "
                "(a file swapped, copied over another or renamed); it is not read"
            )
        self._readers[name] = f
        while len(self._readers) > _MAX_OPEN_READERS:
            _, old = self._readers.popitem(last=False)
            old.close()
        return f

    def read(
        self, name: str, pool: str, slots: Sequence[int], part: tuple = ()
    ) -> list[np.ndarray]:
        """The arrays at ``slots`` of ``pool`` (only ``part`` of each; see ``ArrayFile.read``)."""
        return self.reader(name).read(pool, slots, part)

    def read_checked(
        self,
        name: str,
        pool: str,
        slots: Sequence[int],
        keys: Sequence[tuple[bytes, str]] | None = None,
    ) -> tuple[list[np.ndarray], list[int] | None]:
        """Whole arrays checked against the segment's checksums (``ArrayFile.read_checked``;
        ``keys``: the arrays' keys, which a segment's checksums are bound to): the arrays
        and the slots that do not match, or None for a segment without them."""
        return self.reader(name).read_checked(pool, slots, keys)

    def row_bytes(self, name: str, pool: str) -> int:
        """Bytes of one array (one slot) of ``pool`` in segment ``name``."""
        return self.reader(name).row_bytes(pool)

    def forget(self, name: str) -> None:
        """Close this object's reader of segment ``name`` (it is being set aside)."""
        f = self._readers.pop(name, None)
        if f is not None:
            f.close()

    # ------------------------------------------------------------------ writing
    def write(
        self,
        pool: str,
        dtype: str,
        shape: Sequence[int],
        arrays: Sequence[np.ndarray],
        keys: Sequence[tuple[bytes, str]],
    ):
        """Queue ``arrays`` (their keys ``(hash, kind)`` in ``keys``) into this
        transaction's segment; returns ``(segment, first slot)``."""
        if self._writer is None:
            self._open_writer()
        assert self._writer is not None and self._writer_name is not None
        first = self._slots.get(pool, 0)
        self._writer.write(pool, dtype, shape, first, arrays, keys)
        self._slots[pool] = first + len(arrays)
        return self._writer_name, first

    def _open_writer(self) -> None:
        name = f"{uuid.uuid4().hex}.h5"
        kind, level, shuffle = parse_compression(self.compression)
        try:
            f = ArrayFile(
                self.path(name),
                "x",
                compression=kind,
                compression_level=3 if level is None else level,
                shuffle=shuffle,
                max_pending_bytes=self.write_buffer_bytes,
                bound=True,
            )
            f.h5.attrs["catalog_generation"] = self.generation
            f.h5.attrs[NAME_ATTR] = name
        except OSError as exc:  # a segment directory that went missing, permissions
            self.path(name).unlink(missing_ok=True)
            raise StorageError(
                f"cannot create a segment in {self.dir}: {describe_os_error(exc)}"
            ) from exc
        self._writer, self._writer_name, self._slots = f, name, {}

    def mark_uncommitted(self) -> None:
        """Mark this transaction's segment ``<name>.sealed`` until its commit is done
        (:meth:`committed` removes the mark, :meth:`discard` too): a segment so marked
        holds a transaction not known to have committed, whose record is therefore no
        sign of a stale catalog (``journal.py``). Made before the record is complete, so
        a complete record is never unmarked before its commit; durable with the segment
        by the seal's directory fsync."""
        if self._writer_name is not None:
            mark = self.path(self._writer_name + SEALED_SUFFIX)
            try:
                os.close(os.open(mark, os.O_WRONLY | os.O_CREAT, 0o644))
            except OSError as exc:
                raise StorageError(
                    f"cannot mark the segment {self.path(self._writer_name)}: "
                    f"{describe_os_error(exc)}"
                ) from exc

    def writer_for_record(self) -> ArrayFile:
        """This transaction's segment, opened when it has none yet: a transaction that
        writes no arrays (a removal) still leaves its record (``journal.py``)."""
        if self._writer is None:
            self._open_writer()
        assert self._writer is not None
        return self._writer

    @property
    def writing(self) -> bool:
        return self._writer is not None

    @property
    def writer(self) -> ArrayFile | None:
        """This transaction's segment while it is being written."""
        return self._writer

    def seal(self) -> tuple[str, int, int, list[str]] | None:
        """Finish this transaction's segment (durable on return) before the commit that
        names it; returns ``(name, bytes, slots, pools)``, or None if nothing was written."""
        if self._writer is None:
            return None
        writer, name = self._writer, self._writer_name
        assert name is not None
        self._writer = None
        self._sealed = name
        writer.finish()
        try:
            fsync_path(self.dir)  # the segment's entry, and its mark (``mark_uncommitted``)
            nbytes = os.path.getsize(self.path(name))
        except OSError as exc:
            raise StorageError(
                f"syncing the segment {self.path(name)} failed: {describe_os_error(exc)}"
            ) from exc
        self._writer_name = None
        pools = sorted(self._slots)
        return name, nbytes, sum(self._slots.values()), pools

    def committed(self) -> None:
        """The commit that names the sealed segment is durable."""
        if self._sealed is not None:
            with contextlib.suppress(OSError):
                self.path(self._sealed + SEALED_SUFFIX).unlink()
        self._sealed = None
        self._writer_name = None
        self._slots = {}

    def discard(self) -> None:
        """The transaction rolled back: its segment (being written or sealed) goes."""
        for name in (self._writer_name, self._sealed):
            if name is None:
                continue
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            self._readers.pop(name, None)
            with contextlib.suppress(OSError):
                self.path(name).unlink()
            with contextlib.suppress(OSError):
                self.path(name + SEALED_SUFFIX).unlink()
        self._writer_name = self._sealed = None
        self._slots = {}

    def sweep(self, referenced: set[str]) -> None:
        """Delete segment files no committed catalog row names (a crash's leftovers).

        Only called with the catalog's write lock held, so no other writer is between
        creating a segment and committing it.
        """
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            raise StorageError(
                f"the store {self.root} has no {SEGMENT_DIR} directory; restore the store "
                "directory as a whole"
            ) from None
        for name in names:
            if name in referenced or name == self._writer_name:
                continue
            self.drop([name])

    def drop(self, names: Iterable[str]) -> None:
        """Delete segments the committed catalog no longer names."""
        for name in names:
            f = self._readers.pop(name, None)
            if f is not None:
                f.close()
            with contextlib.suppress(OSError):
                self.path(name).unlink()

    def pools_of(self, name: str) -> list[str]:
        return list(self.reader(name).pools())

    def close(self) -> None:
        if self._writer is not None:
            self.discard()
        for f in self._readers.values():
            f.close()
        self._readers.clear()
