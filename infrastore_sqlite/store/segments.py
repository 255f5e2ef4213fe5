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
point at which a write becomes visible; a failure after it loses nothing.

Nothing is deleted on a guess. Before the first byte of a new segment is written, the
writer creates an empty marker ``segments/<name>.pending``: the store's record that
``<name>`` is its own file of a transaction not yet committed (not fsynced on its own:
a marker only permits a deletion, so one a power loss takes leaves a file set aside,
never a file deleted). Once the segment is complete the marker is renamed ``<name>.sealed``, made
durable by the directory fsync that makes the segment durable, and after the commit it
is unlinked. So a killed or failed write leaves a file marked ``.pending`` (the next
writer, holding the write lock, so no other writer is between marking and committing,
deletes it when the catalog does not name it: its transaction did not commit) or, in
the instant between the seal and the commit, one marked ``.sealed``, which may be a
commit the catalog lost (a deleted ``-wal``) and is therefore set aside, not deleted.
Any file in ``segments/`` the catalog does not name and no marker claims (an older
catalog restored, a lost ``-wal``, a damaged name in a row, a file someone put there)
is set aside into ``<store>/segments-aside/``, never deleted, and ``verify`` names it.
Why marker files and not a catalog row committed first: the segment is created inside
the catalog's write transaction, which cannot commit a row early; a second commit per
write would cost a WAL fsync, the markers cost no fsync of their own.

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
import stat
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import MismatchedArtifactError, StorageError, shown
from .arrays import (
    INLINE_WRITE_BYTES,
    MAX_PENDING_BYTES,
    ArrayFile,
    MissingArrayFileError,
    describe_os_error,
    fsync_path,
    parse_compression,
    write_attribute,
)
from .tracing import LOG

CATALOG_NAME = "catalog.sqlite"
#: The ``store_attributes`` key of the generation a catalog and its segments share.
GENERATION_KEY = "infrastore_sqlite.catalog_generation"
SEGMENT_DIR = "segments"
LEGACY_SEGMENT = "legacy.h5"
LEGACY_CATALOG_SUFFIX = ".sqlite"
#: The marker of a segment being written: ``segments/<name>.pending`` (see the docstring).
PENDING_SUFFIX = ".pending"
#: The marker of a segment complete and about to be committed: ``<name>.sealed``.
SEALED_SUFFIX = ".sealed"
#: Where files ``segments/`` holds but the catalog does not name are moved: never deleted.
ASIDE_DIR = "segments-aside"
# The most segments a store holds open for reading at once (least recently used closed
# first). Each open segment costs HDF5 ~0.7-1 MB. 16 was measured against 64 (issue 37):
# the 300,000-series SQLite export (60 segments) peaked at 169 MB against 210, but took
# ~6 % more CPU (25.9/28.0 s against 25.8/25.3), because an export reads its arrays in
# key (hash) order, a batch at a time, so every batch visits every segment in the same
# cycle, which least-recently-used closing turns into a reopen per segment and batch
# (~1.5 ms each: the file, its attributes, chunk maps and checksums). At 10^9 values
# (23 segments, batches of ~230 arrays of 70 KB) 16 would reopen at nearly every
# segment of every batch, tens of thousands of times. A store of up to 64 segments is
# read without reopening any.
_MAX_OPEN_READERS = 64
# Of those, the most kept open in HDF5 (issue 37, Must 3). A segment whose pools read so
# far all read straight from the file (``direct.py``: unfiltered pools, their checksums
# held) lets its HDF5 handle go when it falls out of the most recently used few, keeping
# its chunk maps, checksums and file descriptor (~50 KB against ~0.7 MB open): an export,
# whose every batch visits every segment, then reopens nothing, however many segments
# the store has. Segments that still need HDF5 to read (deflated pools) stay open, up to
# _MAX_OPEN_READERS as before.
_MAX_HDF5_OPEN = 4
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


@dataclass
class Leftovers:
    """What ``segments/`` holds that the catalog does not name (:meth:`Segments.leftovers`)."""

    #: Unnamed segments a marker claims: written by a transaction that did not commit.
    pending: list[str] = field(default_factory=list)
    #: Unnamed segments a ``.sealed`` marker claims: complete, their commit not known.
    sealed: list[str] = field(default_factory=list)
    #: Marker files (``<name>.pending``, ``<name>.sealed``), empty.
    markers: list[str] = field(default_factory=list)
    #: Files (or directories) no catalog row names and no marker claims: never deleted.
    unnamed: list[str] = field(default_factory=list)


_MARKS = (PENDING_SUFFIX, SEALED_SUFFIX)


def _is_marker(entry: os.DirEntry | None) -> bool:
    """Whether ``entry`` is what the store writes as a marker: an empty regular file."""
    if entry is None:
        return False
    try:
        return entry.is_file(follow_symlinks=False) and entry.stat().st_size == 0
    except OSError:
        return False


def _is_mark_file(path: Path) -> bool:
    """Whether ``path`` is a marker as the store writes one: an empty regular file."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


class ForeignSegmentError(MismatchedArtifactError, StorageError):
    """A segment file that carries another catalog's generation (another store's file, or
    a damaged attribute): damage to name and set aside, never read."""


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
        # The readers used most recently, the last at the end: the ones not released.
        self._recent: OrderedDict[str, None] = OrderedDict()
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
            self._used(name)
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
            raise ForeignSegmentError(
                f"the segment {path} is not this store's: it carries generation {actual!r}, "
                f"the catalog {self.generation!r}"
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
            old_name, old = self._readers.popitem(last=False)
            self._recent.pop(old_name, None)
            old.close()
        self._used(name)
        return f

    def _used(self, name: str) -> None:
        """Note reader ``name`` as the most recent; release the HDF5 handle of the one
        that falls out of the most recent ``_MAX_HDF5_OPEN`` (see there)."""
        recent = self._recent
        recent[name] = None
        recent.move_to_end(name)
        while len(recent) > _MAX_HDF5_OPEN:
            old, _ = recent.popitem(last=False)
            f = self._readers.get(old)
            if f is not None:
                f.release()

    def hdf5_open(self) -> int:
        """How many of the segments held for reading are open in HDF5 now."""
        return sum(1 for f in self._readers.values() if f.hdf5_open)

    def read(
        self, name: str, pool: str, slots: Sequence[int], part: tuple = ()
    ) -> list[np.ndarray]:
        """The arrays at ``slots`` of ``pool`` (only ``part`` of each; see ``ArrayFile.read``)."""
        try:
            return self.reader(name).read(pool, slots, part)
        except MissingArrayFileError:
            raise self._gone(name) from None

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
        try:
            return self.reader(name).read_checked(pool, slots, keys)
        except MissingArrayFileError:
            raise self._gone(name) from None

    def _gone(self, name: str) -> SegmentGone:
        """A released reader found its file gone when it opened it again: like a reader
        opened after a merge (the caller reads the places again)."""
        self.forget(name)
        return SegmentGone(
            f"the segment {self.path(name)} is gone; the catalog snapshot that named it is "
            "older than a merge"
        )

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
        marker = self.path(name + PENDING_SUFFIX)
        try:
            # The store's record that `name` is its own pending file, made before the
            # file's first byte: only such a file may ever be deleted as a leftover. Not
            # fsynced on its own (a directory fsync per write, measured +5 ms a write
            # here): a marker only ever permits a deletion, so one lost with a power
            # loss leaves its segment unmarked, set aside instead of deleted, and the
            # mark that must not outlive an uncommitted state (.pending once the segment
            # may be committed) is replaced under the seal's own directory fsync.
            os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except OSError as exc:
            marker.unlink(missing_ok=True)
            raise StorageError(
                f"cannot create a segment in {self.dir}: {describe_os_error(exc)}"
            ) from exc
        try:
            f = ArrayFile(
                self.path(name),
                "x",
                compression=kind,
                compression_level=3 if level is None else level,
                shuffle=shuffle,
                max_pending_bytes=self.write_buffer_bytes,
                bound=True,
                inline_write_bytes=INLINE_WRITE_BYTES,
            )
            write_attribute(f.h5, "catalog_generation", self.generation)
            write_attribute(f.h5, NAME_ATTR, name)
        except OSError as exc:  # a segment directory that went missing, permissions
            self.path(name).unlink(missing_ok=True)  # marked: this process's own file
            marker.unlink(missing_ok=True)
            raise StorageError(
                f"cannot create a segment in {self.dir}: {describe_os_error(exc)}"
            ) from exc
        self._writer, self._writer_name, self._slots = f, name, {}

    def mark_uncommitted(self) -> None:
        """Make sure this transaction's segment is marked ``<name>.pending`` before its
        record is complete (``journal.py``): a segment so marked (``.pending``, then
        ``.sealed`` from the seal until :meth:`committed`) holds a transaction not known
        to have committed, whose record is no sign of a stale catalog. The mark was made
        before the file's first byte (:meth:`_open_writer`); made again here only if it
        was removed by hand, so a complete record is never unmarked before its commit."""
        if self._writer_name is not None:
            mark = self.path(self._writer_name + PENDING_SUFFIX)
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

    def start_writeback(self) -> None:
        """Start flushing this transaction's segment to the device while the caller
        goes on (:meth:`ArrayFile.start_writeback`); :meth:`seal` still makes it durable."""
        if self._writer is not None:
            self._writer.start_writeback()

    def seal(self) -> tuple[str, int, int, list[str]] | None:
        """Finish this transaction's segment (durable on return) before the commit that
        names it; returns ``(name, bytes, slots, pools)``, or None if nothing was written."""
        if self._writer is None:
            return None
        writer, name = self._writer, self._writer_name
        assert name is not None
        self._writer = None
        try:
            writer.finish()
        except BaseException:
            # Never sealed, so no commit can name it: the file and its mark go now (a
            # refused write leaves nothing, not even a pending file for the next writer).
            self._readers.pop(name, None)
            with contextlib.suppress(OSError):
                self.path(name).unlink()
            with contextlib.suppress(OSError):
                self.path(name + PENDING_SUFFIX).unlink()
            self._writer_name = None
            raise
        self._sealed = name
        try:
            # Sealed before the directory fsync that makes the segment durable, so that
            # fsync makes the new mark durable too, at no extra cost: a segment whose
            # commit may have happened is never marked pending, whatever then happens
            # to the catalog's -wal.
            try:
                os.replace(self.path(name + PENDING_SUFFIX), self.path(name + SEALED_SUFFIX))
            except FileNotFoundError:  # its marker was removed by hand: sealed all the same
                os.close(os.open(self.path(name + SEALED_SUFFIX), os.O_WRONLY | os.O_CREAT, 0o644))
            fsync_path(self.dir)
            nbytes = os.path.getsize(self.path(name))
        except OSError as exc:
            raise StorageError(
                f"syncing the segment {self.path(name)} failed: {describe_os_error(exc)}"
            ) from exc
        self._writer_name = None
        pools = sorted(self._slots)
        return name, nbytes, sum(self._slots.values()), pools

    def committed(self) -> None:
        """The commit that names the sealed segment is durable: its mark goes (no fsync:
        a mark left beside a segment the catalog names is removed by the next writer)."""
        if self._sealed is not None:
            with contextlib.suppress(OSError):
                self.path(self._sealed + SEALED_SUFFIX).unlink()
        self._sealed = None
        self._writer_name = None
        self._slots = {}

    def discard(self) -> None:
        """The transaction rolled back: its segment goes, or waits for the next writer.

        A segment still being written (marked pending) is deleted with its marker. A
        sealed one failed at its commit: SQLite may still hold that commit in its log
        (a failed fsync after the log write), so it is marked pending again and left for
        the next writer, which deletes it, under the write lock, only if the catalog does
        not name it.
        """
        if self._writer is not None and self._writer_name is not None:
            name = self._writer_name
            # A file that cannot be closed cleanly (the write that failed was its own:
            # a full disk, a file-size limit) is deleted all the same: it is ours.
            with contextlib.suppress(OSError, RuntimeError, ValueError):
                self._writer.close()
            self._writer = None
            self._readers.pop(name, None)
            with contextlib.suppress(OSError):
                self.path(name).unlink()
            with contextlib.suppress(OSError):
                self.path(name + PENDING_SUFFIX).unlink()
        if self._sealed is not None:
            name = self._sealed
            self._readers.pop(name, None)
            with contextlib.suppress(OSError):
                os.replace(self.path(name + SEALED_SUFFIX), self.path(name + PENDING_SUFFIX))
                fsync_path(self.dir)
        self._writer_name = self._sealed = None
        self._slots = {}

    def leftovers(self, referenced: set[str]) -> Leftovers:
        """What ``segments/`` holds beyond the segments ``referenced`` (the catalog's).

        Only a file a ``.pending`` marker claims is a pending file, and only the holder of
        the write lock may take it for a leftover (another writer may be between marking
        and committing it); a ``.sealed`` one may be a commit the catalog lost. The rest
        unnamed is ``unnamed``.
        """
        try:
            entries = {e.name: e for e in os.scandir(self.dir)}
        except FileNotFoundError:
            raise StorageError(
                f"the store {self.root} has no {SEGMENT_DIR} directory; restore the store "
                "directory as a whole"
            ) from None
        except OSError as exc:
            raise StorageError(f"cannot list {self.dir}: {describe_os_error(exc)}") from exc
        out = Leftovers()
        own = {self._writer_name, self._sealed} - {None}
        for name, entry in sorted(entries.items()):
            base, suffix = os.path.splitext(name)
            if name in own or (suffix in _MARKS and base in own):
                continue
            if suffix in _MARKS and _is_marker(entry):
                out.markers.append(name)
            elif name in referenced:
                continue
            elif _is_marker(entries.get(name + PENDING_SUFFIX)):
                out.pending.append(name)
            elif _is_marker(entries.get(name + SEALED_SUFFIX)):
                out.sealed.append(name)
            else:
                out.unnamed.append(name)
        return out

    def sweep(self, referenced: set[str]) -> Leftovers:
        """Clear ``segments/`` of what the catalog does not name, deleting nothing on a
        guess: a pending file (its marker says it is this store's, written by a
        transaction the catalog, read under the write lock, shows did not commit) is
        deleted with its marker; every other unnamed file is moved into
        ``segments-aside/``. Markers whose segment committed or was never written go.

        Only called with the catalog's write lock held, so no other writer is between
        marking a segment and committing it.
        """
        found = self.leftovers(referenced)
        # Sealed files may be commits the catalog lost: kept, like every unnamed file.
        found.unnamed.extend(found.sealed)
        for name in found.pending:
            self.forget(name)
            with contextlib.suppress(OSError):
                self.path(name).unlink()
        if found.unnamed:
            # Before the markers go: a sealed file's mark moves with it (set_aside).
            try:
                moved = self.set_aside(found.unnamed, self.root / ASIDE_DIR)
            except StorageError as exc:  # left where they are: verify names them
                LOG.warning("%s", exc)
            else:
                for src, dst in moved:
                    LOG.warning("set aside %s (the catalog does not name it) as %s", src, dst)
        for name in found.markers:
            with contextlib.suppress(OSError):
                self.path(name).unlink()
        return found

    def set_aside(self, names: Iterable[str], folder: Path) -> list[tuple[Path, Path]]:
        """Move entries of ``segments/`` into ``folder`` (created if need be) under their
        own names (``name.2``… if taken), durably; returns ``(from, to)`` pairs.

        A file's ``.sealed`` mark moves with it: a transaction not known to have
        committed stays so marked where it is kept, so its record is never taken for
        one a stale catalog lost (``journal.unknown_transactions``).
        """
        out = []
        try:
            folder.mkdir(exist_ok=True)
            for name in names:
                self.forget(name)
                src = self.path(name)
                dst = folder / name
                n = 1
                while dst.exists():
                    n += 1
                    dst = folder / f"{name}.{n}"
                os.rename(src, dst)
                out.append((src, dst))
                mark = self.path(name + SEALED_SUFFIX)
                if _is_mark_file(mark):
                    os.replace(mark, dst.with_name(dst.name + SEALED_SUFFIX))
            fsync_path(folder)
            fsync_path(self.dir)
            fsync_path(self.root)
        except OSError as exc:
            raise StorageError(
                f"cannot set {shown([str(n) for n in names])} aside in {folder}: "
                f"{describe_os_error(exc)}; nothing was deleted"
            ) from exc
        return out

    def mark_superseded(self, names: Iterable[str]) -> None:
        """Mark segments ``names`` pending before the commit that supersedes
        them (a merge or compaction: its rows are deleted in that transaction).

        A kill between that commit and :meth:`drop_superseded` then leaves them unnamed
        and marked, which the next writer deletes as the store's own leftovers; if the
        transaction rolls back they stay named, and their markers are simply removed.
        """
        try:
            # Not fsynced (see _open_writer): a mark lost with a power loss leaves the
            # superseded file unmarked, set aside by the next writer instead of deleted.
            for name in names:
                os.close(os.open(self.path(name + PENDING_SUFFIX), os.O_WRONLY | os.O_CREAT, 0o644))
        except OSError as exc:
            raise StorageError(
                f"cannot mark segments in {self.dir} superseded: {describe_os_error(exc)}"
            ) from exc

    def unmark(self, names: Iterable[str]) -> None:
        """Remove the pending marks :meth:`mark_superseded` made (its transaction rolled
        back: the segments are the catalog's still)."""
        for name in names:
            with contextlib.suppress(OSError):
                self.path(name + PENDING_SUFFIX).unlink()

    def drop_superseded(self, names: Iterable[str]) -> None:
        """Delete segments a committed merge, compaction or repair superseded.

        The proof that each is the store's own and holds nothing needed: the committed
        transaction read ``names`` from the catalog's ``segments`` rows, copied every live
        array out of them checked against its checksums or key (``read_group``: a damaged
        array fails the merge instead), and deleted those rows. A name that transaction
        did not supersede is never passed here.
        """
        for name in names:
            self.forget(name)
            with contextlib.suppress(OSError):
                self.path(name).unlink()
            for mark in _MARKS:
                with contextlib.suppress(OSError):
                    self.path(name + mark).unlink()

    def pools_of(self, name: str) -> list[str]:
        return list(self.reader(name).pools())

    def close(self) -> None:
        if self._writer is not None:
            self.discard()
        for f in self._readers.values():
            f.close()
        self._readers.clear()
