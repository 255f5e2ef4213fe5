"""A store's life: creating, opening (converting an old layout, migrating), closing.

``Store.create`` / ``Store.open`` / ``Store.close`` do their work here: a new store
directory built under a work name and renamed into place; an open that finishes or
performs the conversion of a store of the earlier two-file layout into a directory
(:func:`_convert_legacy`, :func:`_finish_conversion`), opens the catalog (which applies
its migrations, ``catalog.py``) and checks that the catalog and the segments belong
together.

``create`` and ``open`` return the :class:`~.state.StoreState` the ``Store`` is
composed around.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import apsw
import h5py

from ..errors import (
    CatalogMigrationRequiredError,
    InvalidParameterError,
    MismatchedArtifactError,
    StorageError,
    StoreExistsError,
)
from .api import check_store_file
from .arrays import COMPRESSIONS, compression_spec, describe_os_error, fsync_path
from .catalog import Catalog
from .segments import (
    GENERATION_KEY,
    LEGACY_SEGMENT,
    SEGMENT_DIR,
    ForeignSegmentError,
    SegmentGone,
    Segments,
    catalog_file,
    legacy_catalog,
    remove_tree,
    stale_work_dirs,
    work_dir,
)
from .state import StoreState
from .tracing import LOG

if TYPE_CHECKING:
    from .transactions import Transactions

_GENERATION_KEY = GENERATION_KEY
_COMPRESSION_KEY = "infrastore_sqlite.compression"

DEFAULT_TIMEOUT = 5.0


def catalog_path(path: str | Path) -> Path:
    """The catalog file of the store at ``path`` (inside the store directory)."""
    return catalog_file(Path(path))


def create_state(
    path: str | Path | None = None,
    *,
    in_memory: bool = False,
    compression: str = "auto",
    compression_level: int = 3,
    shuffle: bool = True,
    catalog: str | None = None,
    overwrite: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> StoreState:
    """The work of :meth:`Store.create` (its docstring has the parameters): the store
    directory built under a work name and renamed into place, then opened (the state the
    ``Store`` is composed around)."""
    if catalog not in (None, "attached", "memory"):
        raise InvalidParameterError(f"unknown catalog {catalog!r}; expected 'attached' or 'memory'")
    if in_memory and overwrite:
        raise InvalidParameterError(
            "overwrite=True is meaningless for an in-memory store: there is no artifact to "
            "replace; drop overwrite= or give Store.create a path"
        )
    if in_memory and catalog == "attached":
        raise InvalidParameterError(
            'an in-memory store has no file for catalog="attached" to sit beside; drop '
            'catalog= (or pass catalog="memory") with in_memory=True'
        )
    if in_memory:
        scratch = new_scratch()
        try:
            state = create_state(
                scratch / "store.h5",
                compression=compression,
                compression_level=compression_level,
                shuffle=shuffle,
            )
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        state.scratch = scratch
        # Removed when the store is collected or the interpreter exits without close();
        # a process killed outright leaves it to the next in-memory create (new_scratch).
        weakref.finalize(state, shutil.rmtree, scratch, ignore_errors=True)
        return state
    if path is None:
        raise InvalidParameterError(
            "Store.create needs a path unless in_memory=True; pass the .h5 file to create"
        )
    if catalog == "memory":
        raise InvalidParameterError(
            'catalog="memory" is not provided for an on-disk store here; use the default '
            '"attached", or in_memory=True for a scratch store'
        )
    path = Path(path)
    if compression not in COMPRESSIONS:
        raise InvalidParameterError(
            f'unknown compression "{compression}"; expected "auto", "deflate" or "none"'
        )
    if not 0 <= int(compression_level) <= 9:
        raise InvalidParameterError(f"compression_level must be 0-9, got {compression_level}")
    legacy = legacy_catalog(path)
    if path.exists() or legacy.exists():
        if not overwrite:
            raise StoreExistsError(
                f"{path} already holds a store; open it with Store.open, or pass "
                "overwrite=True to replace it"
            )
        for p in (path, legacy):
            remove_tree(p)
    if not path.parent.exists():
        raise InvalidParameterError(f"the directory {path.parent} does not exist; create it first")
    spec = compression_spec(compression, compression_level, shuffle)
    for stale in stale_work_dirs(path.parent, path.name, "creating"):
        remove_tree(stale)
    # Built under a work name and renamed into place: a failed or killed create
    # leaves no store behind (a dead process's work directory is removed above).
    work = work_dir(path.parent, path.name, "creating")
    renamed = False
    try:
        (work / SEGMENT_DIR).mkdir(parents=True)
        catalog = Catalog(catalog_file(work), create=True, timeout=timeout)
        try:
            catalog.executemany(
                "INSERT INTO store_attributes (key, value) VALUES (?, ?)",
                [(_GENERATION_KEY, uuid.uuid4().hex), (_COMPRESSION_KEY, spec)],
            )
        finally:
            catalog.close()
        for p in (catalog_file(work), work / SEGMENT_DIR, work):
            fsync_path(p)
        if path.exists():
            raise StoreExistsError(
                f"{path} appeared while the store was created; nothing was changed"
            )
        os.rename(work, path)
        renamed = True
        fsync_path(path.parent)
    except BaseException as exc:
        # Whatever failed, nothing stays: not the work directory, and not the store
        # just renamed into place whose name might not survive a power loss (a failed
        # directory fsync), so the retry starts from a clean directory.
        remove_tree(path if renamed else work)
        if isinstance(exc, OSError):
            raise StorageError(
                f"cannot create the store {path}: {describe_os_error(exc)}; nothing was created"
            ) from exc
        if type(exc) is StorageError:
            # The catalog names the work directory, which no longer exists: name the
            # store the user asked for.
            raise StorageError(
                f"cannot create the store {path}: {str(exc).replace(str(work), str(path))}"
            ) from exc
        raise
    LOG.info("created the store %s (compression %s)", path, spec)
    return open_state(path, timeout=timeout)


def open_state(
    path: str | Path,
    *,
    read_only: bool = False,
    catalog: str = "attached",
    timeout: float = DEFAULT_TIMEOUT,
) -> StoreState:
    """The work of :meth:`Store.open` (its docstring has the parameters): a conversion
    finished or done, the catalog opened (migrated), checked against the segments; the
    state the ``Store`` is composed around (a repair reopens one in place)."""
    if catalog != "attached":
        raise InvalidParameterError(
            f'catalog="{catalog}" is not provided by Store.open here; use the default '
            '"attached" (open_copy gives a copy to change without touching the original)'
        )
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"Store.open: path must be a str or path, not {type(path).__name__}")
    path = Path(path)
    if not read_only:
        _finish_conversion(path)
    if check_store_file(path) == "two files":
        if read_only:
            raise CatalogMigrationRequiredError(
                f"{path} is a store of an earlier version (the two files {path} and "
                f"{legacy_catalog(path)}); open it once for writing (read_only=False, or "
                "any writing command of the CLI) to convert it into a store directory"
            )
        _convert_legacy(path, timeout)
    cat = catalog_file(path)
    catalog = Catalog(cat, read_only=read_only, timeout=timeout)
    try:
        attrs = dict(
            catalog.execute(
                "SELECT key, value FROM store_attributes WHERE key IN (?, ?)",
                (_GENERATION_KEY, _COMPRESSION_KEY),
            ).fetchall()
        )
        segments = Segments(
            path,
            generation=attrs.get(_GENERATION_KEY, ""),
            compression=attrs.get(_COMPRESSION_KEY, "deflate:3:shuffle"),
        )
        _check_generation(cat, catalog, segments)
    except BaseException:
        catalog.close()
        raise
    LOG.info("opened the store %s%s", path, " read-only" if read_only else "")
    return StoreState(path, catalog, segments, read_only=read_only)


def _check_generation(cat: Path, catalog: Catalog, segments: Segments) -> None:
    """Refuse a catalog copied without its segments, or beside another store's.

    One segment file the catalog names must carry the catalog's generation. A missing or
    damaged segment, or one of another generation (another store's file, a damaged
    attribute), is skipped: it is ``verify``'s to report and ``repair``'s to set aside,
    and the store's other series stay readable. Only when the catalog names segments and
    not one of them is there and its own is the catalog refused as not this store's.
    """
    names = [r[0] for r in catalog.execute("SELECT name FROM segments ORDER BY name")]
    foreign = damaged = 0
    for name in names:
        try:
            segments.reader(name)
        except SegmentGone:
            continue
        except ForeignSegmentError:
            foreign += 1
            continue
        except StorageError:
            damaged += 1  # there, but damaged: verify names it
            continue
        return
    if names and not damaged:
        raise MismatchedArtifactError(
            f"the catalog {cat} does not belong to the segments in {segments.dir}: it names "
            f"{len(names)} segment files ({names[0]}, …) and "
            + (
                "none of them is there"
                if not foreign
                else "not one there carries its generation (each does not belong to this store)"
            )
            + "; restore the store directory as it was written, as a whole"
        )


def close_store(state: StoreState, transactions: Transactions) -> None:
    """Close the store (anything uncommitted is rolled back). Safe to call twice."""
    if state.segments is not None:
        LOG.debug("closing the store %s", state.path)
        try:
            transactions.abandon()
        finally:
            _close_files(state)


def _close_files(state: StoreState) -> None:
    """The segments and the catalog closed; a scratch store's directory removed."""
    if state.segments is not None:
        try:
            state.segments.close()
        finally:
            state.catalog.close()
            state.segments = None
            if state.scratch is not None:
                shutil.rmtree(state.scratch, ignore_errors=True)


def _convert_legacy(path: Path, timeout: float) -> None:
    """Turn a store of the two-file layout (``path`` + ``path.sqlite``) into a directory.

    The new directory is built beside the old files under a work name: the old HDF5 file
    is hard-linked in as its one segment (``legacy.h5``, never written again) and the
    catalog copied and migrated. Only when it is complete and durable is it renamed to
    ``.<name>.converted``; then the old file is unlinked and that directory renamed to
    ``path``. A kill before the first rename leaves the old store as it was (and a work
    directory the next open removes); a kill after it is finished by
    :func:`_finish_conversion`.
    """
    parent, name = path.parent, path.name
    old_catalog = legacy_catalog(path)
    for stale in stale_work_dirs(parent, name, "converting"):
        remove_tree(stale)
    work = work_dir(parent, name, "converting")
    try:
        (work / SEGMENT_DIR).mkdir(parents=True)
        try:
            with h5py.File(path, "r", locking=False) as h5:
                generation = h5.attrs.get("catalog_generation")
                compression = h5.attrs.get("compression", "none")
        except OSError as exc:
            raise StorageError(f"cannot read the array file {path}: {exc}") from exc
        if isinstance(generation, bytes):
            generation = generation.decode()
        if isinstance(compression, bytes):
            compression = compression.decode()
        # Opening the old catalog writable rolls back a hot journal a killed writer left.
        src = apsw.Connection(str(old_catalog))
        try:
            src.setbusytimeout(max(0, int(timeout * 1000)))
            dst = apsw.Connection(str(catalog_file(work)))
            try:
                with dst.backup("main", src, "main") as copy:
                    while not copy.done:
                        copy.step(1024)
            finally:
                dst.close()
        except apsw.Error as exc:
            raise StorageError(f"cannot read the catalog {old_catalog}: {exc}") from exc
        finally:
            src.close()
        catalog = Catalog(catalog_file(work), timeout=timeout)  # applies the migrations
        try:
            stored = catalog.scalar(
                "SELECT value FROM store_attributes WHERE key = ?", (_GENERATION_KEY,)
            )
            if stored != generation:
                raise MismatchedArtifactError(
                    f"{old_catalog} does not belong to {path} (catalog generation {stored}, "
                    f"array file {generation}); restore the pair that was written together"
                )
            legacy = catalog.scalar("SELECT 1 FROM segments WHERE name = ?", (LEGACY_SEGMENT,))
            with catalog.transaction():
                catalog.execute(
                    "INSERT OR REPLACE INTO store_attributes (key, value) VALUES (?, ?)",
                    (_COMPRESSION_KEY, str(compression)),
                )
                catalog.execute(
                    "UPDATE segments SET bytes = ? WHERE name = ?",
                    (os.path.getsize(path), LEGACY_SEGMENT),
                )
        finally:
            catalog.close()
        if legacy:
            target = work / SEGMENT_DIR / LEGACY_SEGMENT
            try:
                os.link(path, target)
            except OSError:  # a file system without hard links: a copy does the same
                shutil.copyfile(path, target)
            fsync_path(target)
        for p in (catalog_file(work), work / SEGMENT_DIR, work):
            fsync_path(p)
        done = parent / f".{name}.converted"
        os.rename(work, done)
        fsync_path(parent)
    except OSError as exc:
        remove_tree(work)
        raise StorageError(f"converting the store {path} into a directory failed: {exc}") from exc
    except BaseException:
        remove_tree(work)
        raise
    _finish_conversion(path)


def _finish_conversion(path: Path) -> None:
    """Complete a conversion (see :func:`_convert_legacy`) that is durable but not yet in
    place, and remove what a killed conversion or create left behind."""
    parent, name = path.parent, path.name
    done = parent / f".{name}.converted"
    if not done.is_dir():
        return
    try:
        if path.is_file():
            path.unlink()  # its bytes live on in done/segments/legacy.h5
        # The old catalog goes before the rename, so no directory store ever has one
        # beside it that could be taken for a store of the old layout.
        for p in (legacy_catalog(path), Path(str(legacy_catalog(path)) + "-journal")):
            p.unlink(missing_ok=True)
        if not path.exists():
            os.rename(done, path)
            fsync_path(parent)
    except OSError as exc:
        raise StorageError(
            f"finishing the conversion of {path} into a store directory failed: {exc}; "
            "open it again to retry"
        ) from exc


# ---------------------------------------------------------------------- in-memory scratch
SCRATCH_PREFIX = "infrastore-sqlite-memory-"
# The file in each scratch directory that proves it is one (with the owner's pid in the
# directory's name): only such a directory, of a process that is gone, is swept.
SCRATCH_MARKER = ".infrastore-sqlite-scratch"


def new_scratch() -> Path:
    """A new directory for an in-memory store, named with this process's id, under the
    system temp folder; first the ones of processes that died without removing theirs
    (a SIGKILL, a crash) are removed. A directory is swept only when it is provably one
    of these: the prefix and a pid in its name, the marker file inside, and no process
    with that pid."""
    root = Path(tempfile.gettempdir())
    for entry in root.glob(f"{SCRATCH_PREFIX}*-*"):
        pid_text = entry.name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit() or not (entry / SCRATCH_MARKER).is_file():
            continue
        if not _process_gone(int(pid_text)):
            continue
        shutil.rmtree(entry, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    (scratch / SCRATCH_MARKER).write_text(f"{os.getpid()}\n")
    return scratch


def _process_gone(pid: int) -> bool:
    """Whether no process has id ``pid`` (one we may not signal still exists)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
