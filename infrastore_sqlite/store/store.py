"""The embedded store: ``Store.create`` / ``Store.open`` and everything they offer.

A store is one directory: ``<path>/catalog.sqlite`` (the catalog, the transactional half)
and ``<path>/segments/*.h5`` (the arrays, in immutable HDF5 segment files; see
``segments.py`` for why and how). A write transaction writes its new arrays into one new
segment, makes it durable, and only then commits the catalog rows that point at it, so a
failed or killed write leaves the store at its last committed state.

Stores of the earlier two-file layout (``<path>`` HDF5 + ``<path>.sqlite``) are
converted into a directory by the first writable open (:func:`_convert_legacy`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import operator
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import apsw
import h5py
import numpy as np
import orjson

from ..core.elements import parse_element_type, shrink
from ..core.gcpause import gc_paused
from ..core.hashing import (
    data_hash,
    data_hashes,
    features_hash,
    features_json,
    timestamps_hash,
    validate_features,
)
from ..core.periods import Period, as_period, divide, grid, step
from ..core.slicing import slice_range, slice_window
from ..core.timeref import ms_to_rfc3339
from ..errors import (
    REMOVE,
    TRANSFORM,
    CatalogMigrationRequiredError,
    DuplicateTimeSeriesError,
    IntegrityError,
    InvalidParameterError,
    MismatchedArtifactError,
    NotFoundError,
    OwnerMismatchError,
    ParameterTypeError,
    ReadOnlyStoreError,
    StorageError,
    StoreExistsError,
    TimeSeriesError,
)
from ..model import (
    SERIES_CLASSES,
    Deterministic,
    OwnerCategory,
    Probabilistic,
    SingleTimeSeries,
    TimeSeriesType,
    _Forecast,
    _Irregular,
    _Series,
)
from .api import StoreApi, Transaction, check_store_file, series_id
from .arrays import (
    COMPRESSIONS,
    compression_spec,
    describe_os_error,
    fsync_path,
    parse_compression,
    pool_name,
)
from .catalog import Catalog
from .rows import (
    SELECT_ROWS,
    SeriesRow,
    build_filter,
    decode_shape,
    feature_rows,
    filter_keywords,
    filter_signature,
)
from .segments import (
    LEGACY_SEGMENT,
    SEGMENT_DIR,
    SegmentGone,
    Segments,
    catalog_file,
    legacy_catalog,
    merge_candidates,
    remove_tree,
    stale_work_dirs,
    work_dir,
)
from .tracing import LOG

_GENERATION_KEY = "infrastore_sqlite.catalog_generation"
_COMPRESSION_KEY = "infrastore_sqlite.compression"
_DEFAULT_BATCH_BYTES = 64 * 1024 * 1024
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SCAN_FROM = 2000  # arrays wanted at once before a table scan is considered
_IRREGULAR = frozenset(t for t in TimeSeriesType if t.is_irregular)
_FORECAST_TYPES = frozenset(t for t in TimeSeriesType if t.is_forecast)
# The catalog's identity of a series (the ts_identity index): a replace keeps these.
_IDENTITY_COLUMNS = frozenset(
    {"owner_id", "owner_category", "time_series_type", "name", "resolution", "interval"}
    | {"features_hash"}
)
DEFAULT_TIMEOUT = 5.0
_BULK_KEYS = frozenset({"owner_id", "owner_type", "owner_category", "time_series", "features"})
_SERIES_TYPES = frozenset(SERIES_CLASSES.values())
# Arrays copied per read/write step when segments are merged or compacted.
_REWRITE_STEP = 1024


def catalog_path(path: str | Path) -> Path:
    """The catalog file of the store at ``path`` (inside the store directory)."""
    return catalog_file(Path(path))


class Store(StoreApi):
    """A content-addressed time-series store (HDF5 segments + SQLite catalog).

    Use :meth:`create` or :meth:`open`; the constructor is not public.
    """

    def __init__(self, path: Path, segments: Segments, catalog: Catalog, read_only: bool) -> None:
        self.path = path
        self._segments = segments
        self._catalog = catalog
        self._read_only = read_only
        self._open_tx: list[Any] = []
        self._doomed: list[str] = []  # segments to delete once the running commit is durable
        self._merging = False
        self._scratch: Path | None = None  # the directory of an in_memory store

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def create(
        cls,
        path: str | Path | None = None,
        *,
        in_memory: bool = False,
        compression: str = "auto",
        compression_level: int = 3,
        shuffle: bool = True,
        catalog: str | None = None,
        overwrite: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Store:
        """Create a new, empty store: the directory ``path``.

        Parameters
        ----------
        path
            The store directory to create (its parent must exist). Ignored with
            ``in_memory=True``.
        in_memory
            A scratch store that nothing at ``path`` backs: it lives in a private
            temporary directory removed on :meth:`close` (``persist_to`` keeps a copy).
        catalog
            ``"attached"`` (the catalog inside the store directory, the default) or, with
            ``in_memory=True``, ``"memory"``; a RAM-only catalog of an on-disk store is not
            provided.
        compression
            ``"auto"`` (default: DEFLATE for integer and bool arrays, none for float
            arrays, which it would shrink by little at a high cost in time),
            ``"deflate"`` (every array) or ``"none"``.
        compression_level
            DEFLATE level 0-9.
        shuffle
            Byte-shuffle before DEFLATE.
        overwrite
            Replace an existing store at ``path`` instead of refusing.
        timeout
            Seconds a write waits for another process's write before StoreBusyError.
        """
        if catalog not in (None, "attached", "memory"):
            raise InvalidParameterError(
                f"unknown catalog {catalog!r}; expected 'attached' or 'memory'"
            )
        if in_memory:
            scratch = Path(tempfile.mkdtemp(prefix="infrastore-sqlite-memory-"))
            try:
                store = cls.create(
                    scratch / "store.h5",
                    compression=compression,
                    compression_level=compression_level,
                    shuffle=shuffle,
                )
            except BaseException:
                shutil.rmtree(scratch, ignore_errors=True)
                raise
            store._scratch = scratch
            return store
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
            raise InvalidParameterError(
                f"the directory {path.parent} does not exist; create it first"
            )
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
        return cls.open(path, timeout=timeout)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        read_only: bool = False,
        catalog: str = "attached",
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Store:
        """Open an existing store.

        Parameters
        ----------
        path
            The store directory (a store of the earlier two-file layout is converted
            into one by a writable open).
        read_only
            Refuse every write; the files are not modified.
        catalog
            ``"attached"`` only: a RAM-only copy of the catalog is not provided here.
        timeout
            Seconds a write waits for another process's write before StoreBusyError.
        """
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
            first = catalog.scalar("SELECT min(name) FROM segments")
            if first is not None:
                # A catalog copied without its segments (or beside another store's) is
                # refused at once; a damaged segment is verify's to report, not open's.
                try:
                    segments.reader(first)
                except SegmentGone:
                    raise MismatchedArtifactError(
                        f"the catalog {cat} does not belong to the segments in {segments.dir}: "
                        f"it names {first}, which is not there; restore the store directory as "
                        "it was written, as a whole"
                    ) from None
                except MismatchedArtifactError:
                    raise
                except StorageError:
                    pass
        except BaseException:
            catalog.close()
            raise
        LOG.info("opened the store %s%s", path, " read-only" if read_only else "")
        return cls(path, segments, catalog, read_only)

    def close(self) -> None:
        """Close the store (anything uncommitted is rolled back). Safe to call twice."""
        if self._segments is not None:
            LOG.debug("closing the store %s", self.path)
            try:
                self._segments.close()
            finally:
                self._catalog.close()
                self._segments = None  # type: ignore[assignment]
                if self._scratch is not None:
                    shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "in-memory" if self._scratch is not None else repr(str(self.path))
        return f"Store({where}, read_only={self._read_only})"

    @property
    def read_only(self) -> bool:
        return self._read_only

    def _writable(self) -> None:
        if self._read_only:
            raise ReadOnlyStoreError(
                f"the store {self.path} is open read-only; open it with read_only=False to write"
            )
        if self._segments is None:
            raise InvalidParameterError("the store is closed")

    def disk_usage(self) -> dict[str, int]:
        """Bytes on disk: ``hdf5_bytes`` (the segments) and ``catalog_bytes`` (with its WAL)."""
        self._open()
        h5 = 0
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self._segments.dir):
                with contextlib.suppress(FileNotFoundError):
                    h5 += entry.stat().st_size
        cat = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                cat += os.path.getsize(str(catalog_file(self.path)) + suffix)
        return {"hdf5_bytes": h5, "catalog_bytes": cat}

    # ------------------------------------------------------------------ transactions
    def transaction(self) -> Transaction:
        """All or nothing for everything inside the block; blocks nest.

        ``with store.transaction() as s`` binds the store to ``s``; the returned object can
        be entered more than once (as in the reference).
        """
        return Transaction(self, self._transaction_block)

    @contextlib.contextmanager
    def _transaction_block(self) -> Iterator[None]:
        """The block :meth:`transaction` enters.

        The outermost block holds the catalog's write lock from its start (a second
        writer waits up to the store's timeout). Its new arrays go into one new segment,
        sealed (complete and fsynced) before the catalog commits; if anything fails, the
        catalog rolls back and the segment is deleted.
        """
        self._writable()
        outer = self._catalog.depth == 0
        try:
            with self._catalog.transaction():
                if outer:
                    self._doomed = []
                    # Holding the write lock, no other writer is mid-segment: any file
                    # the committed catalog does not name is a leftover of a failure.
                    self._segments.sweep(self._segment_names())
                yield
                if outer:
                    self._seal()
        except BaseException:
            if outer:
                self._segments.discard()
                self._doomed = []
            raise
        if outer:
            LOG.info("committed a write to the store %s", self.path)
            self._segments.committed()
            doomed, self._doomed = self._doomed, []
            self._segments.drop(doomed)
            self._merge_small_segments()

    def _segment_names(self) -> set[str]:
        return {r[0] for r in self._catalog.execute("SELECT name FROM segments")}

    def _seal(self) -> None:
        """Make this transaction's segment durable and name it in the catalog."""
        sealed = self._segments.seal()
        if sealed is not None:
            name, nbytes, slots, pools = sealed
            LOG.debug("sealed segment %s: %d arrays, %d bytes, fsynced", name, slots, nbytes)
            self._catalog.execute(
                "INSERT INTO segments (name, bytes, slots, pools) VALUES (?, ?, ?, ?)",
                (name, nbytes, slots, orjson.dumps(pools).decode()),
            )

    def _merge_small_segments(self) -> None:
        """Merge a tier of small segments after a commit (see ``segments.merge_candidates``).

        The write it follows is committed already; a merge that fails (disk full) leaves
        the segments as they were, so its error is not the caller's.
        """
        if self._merging:
            return
        self._merging = True
        try:
            for _ in range(4):  # a merge can fill the next tier; bounded, the rest waits
                names = merge_candidates(
                    self._catalog.execute("SELECT name, bytes FROM segments").fetchall()
                )
                if not names:
                    return
                try:
                    self._rewrite(names)
                except TimeSeriesError:
                    return
        finally:
            self._merging = False

    def _rewrite(self, names: Sequence[str]) -> dict[str, int]:
        """Copy the live arrays of segments ``names`` into one new segment, in one
        transaction; the old files are deleted after its commit."""
        cat = self._catalog
        with self.transaction():
            marks = ", ".join("?" * len(names))
            before = cat.execute(
                f"SELECT COALESCE(sum(slots), 0), COALESCE(sum(bytes), 0) FROM segments "
                f"WHERE name IN ({marks})",
                list(names),
            ).fetchone()
            pools_before = set()
            for (text,) in cat.execute(
                f"SELECT pools FROM segments WHERE name IN ({marks})", list(names)
            ):
                pools_before.update(orjson.loads(text))
            moved = 0
            pools_after: set[str] = set()
            target = None
            for segment in names:
                while True:
                    # Rows leave the old segment as they are moved, so each step reads the
                    # next ones; memory is bounded by the step, not by the store.
                    part = cat.execute(
                        "SELECT hash, kind, dtype, shape, pool, slot FROM arrays "
                        "WHERE segment = ? ORDER BY pool, slot LIMIT ?",
                        (segment, _REWRITE_STEP),
                    ).fetchall()
                    if not part:
                        break
                    by_pool: dict[str, list[tuple]] = {}
                    for r in part:
                        by_pool.setdefault(r[4], []).append(r)
                    updates = []
                    for pool, group in by_pool.items():
                        arrays = self._segments.read(segment, pool, [g[5] for g in group])
                        dtype, shape = group[0][2], orjson.loads(group[0][3])
                        target, first = self._segments.write(pool, dtype, shape, arrays)
                        updates.extend((target, first + i, g[0], g[1]) for i, g in enumerate(group))
                        pools_after.add(pool)
                    cat.executemany(
                        "UPDATE arrays SET segment = ?, slot = ? WHERE hash = ? AND kind = ?",
                        updates,
                    )
                    moved += len(updates)
            cat.execute(f"DELETE FROM segments WHERE name IN ({marks})", list(names))
            self._doomed.extend(names)
        after = cat.scalar("SELECT bytes FROM segments WHERE name = ?", (target,)) if target else 0
        return {
            "slots_reclaimed": int(before[0]) - moved,
            "datasets_dropped": len(pools_before) - len(pools_after),
            "bytes_reclaimed": max(0, int(before[1]) - int(after or 0)),
        }

    def begin_transaction(self) -> None:
        """Begin a transaction that :meth:`commit_transaction` or :meth:`rollback_transaction` ends."""
        cm = self.transaction()
        cm.__enter__()
        self._open_tx.append(cm)

    def commit_transaction(self) -> None:
        if not self._open_tx:
            raise InvalidParameterError("commit_transaction without begin_transaction")
        self._open_tx.pop().__exit__(None, None, None)

    def rollback_transaction(self) -> None:
        if not self._open_tx:
            raise InvalidParameterError("rollback_transaction without begin_transaction")
        cm = self._open_tx.pop()
        with contextlib.suppress(_Rollback):
            cm.__exit__(_Rollback, _Rollback(), None)

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (a property, as in the reference)."""
        return self._catalog.in_transaction

    # ------------------------------------------------------------------ adding
    def add_time_series(
        self,
        owner_id: int,
        owner_type: str,
        owner_category: OwnerCategory | str,
        time_series: _Series,
        *,
        features: Mapping[str, int | float | bool | str] | None = None,
    ) -> int:
        """Add one series; returns its new catalog id.

        Raises
        ------
        DuplicateTimeSeriesError
            A series with the same identity exists.
        InvalidParameterError
            Bad owner, features, or series object.
        """
        return self.add_time_series_bulk(
            [
                {
                    "owner_id": owner_id,
                    "owner_type": owner_type,
                    "owner_category": owner_category,
                    "time_series": time_series,
                    "features": features,
                }
            ]
        )[0]

    def add_time_series_bulk(self, items: Iterable[Mapping[str, Any]]) -> list[int]:
        """Add many series in one all-or-nothing transaction; returns ids in input order.

        Each item is a dict with ``owner_id``, ``owner_type``, ``owner_category``,
        ``time_series`` and optionally ``features``.
        """
        self._writable()
        # A few dicts per series and no cycles: the collector would only rescan them.
        with gc_paused():
            prepared = self._prepare_bulk(items)
            LOG.debug("adding %d series to the store %s", len(prepared), self.path)
            with self.transaction():
                return self._insert_prepared(prepared)

    def _prepare_bulk(self, items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Every bulk item checked and prepared, the plain arrays hashed in one batch
        (per-array hashing is most of what a small series costs); ragged arrays are
        shrunk and hashed by ``_row_for``."""
        checked = [self._checked(i, item) for i, item in enumerate(items)]
        plain = [i for i, c in enumerate(checked) if not c[3]._et.is_ragged]
        hashes: list[bytes | None] = [None] * len(checked)
        for i, h in zip(plain, data_hashes([checked[i][3]._data for i in plain]), strict=True):
            hashes[i] = h
        return [self._row_for(*c, known_hash=h) for c, h in zip(checked, hashes, strict=True)]

    def _prepare(self, index: int, item: Mapping[str, Any]) -> dict[str, Any]:
        """One bulk item, checked and prepared (hashed on its own; see ``_row_for``)."""
        return self._row_for(*self._checked(index, item))

    def _checked(
        self, index: int, item: Mapping[str, Any]
    ) -> tuple[int, str, OwnerCategory, _Series, dict[str, Any]]:
        """A bulk item's ``(owner_id, owner_type, category, series, features)``, checked."""
        # The exact-type tests first: they are what a plain dict of plain values passes,
        # at a fraction of the cost of the general (ABC) checks behind them.
        if type(item) is not dict and not isinstance(item, Mapping):
            raise InvalidParameterError(
                f"bulk item {index} must be a dict with owner_id, owner_type, owner_category, "
                "time_series and optionally features"
            )
        if not _BULK_KEYS.issuperset(item):
            raise InvalidParameterError(
                f"bulk item {index} has unknown key(s) {sorted(set(item) - _BULK_KEYS)}; "
                f"accepted: {sorted(_BULK_KEYS)}"
            )
        owner_id = item.get("owner_id")
        if type(owner_id) is not int:
            if isinstance(owner_id, bool) or not isinstance(owner_id, int | np.integer):
                raise ParameterTypeError(f"owner_id must be an integer, got {owner_id!r}")
            owner_id = int(owner_id)
        if not -(2**63) <= owner_id < 2**63:
            raise InvalidParameterError(f"owner_id {owner_id} does not fit a signed 64-bit integer")
        owner_type = item.get("owner_type")
        if type(owner_type) is not str and not isinstance(owner_type, str):
            raise ParameterTypeError(f"owner_type must be a str, got {owner_type!r}")
        if not owner_type:
            raise InvalidParameterError(
                f"owner_type must be a non-empty string, got {owner_type!r}"
            )
        category = item.get("owner_category", OwnerCategory.Component)
        if type(category) is not OwnerCategory:
            category = OwnerCategory.coerce(category)
        ts = item.get("time_series")
        if type(ts) not in _SERIES_TYPES:
            raise InvalidParameterError(
                f"time_series must be a series object (SingleTimeSeries, …), got {type(ts).__name__}"
            )
        features = item.get("features")
        empty = features is None or (type(features) is dict and not features)
        feats = {} if empty else validate_features(features)
        return owner_id, owner_type, category, ts, feats

    def _row_for(
        self,
        owner_id: int,
        owner_type: str,
        category: OwnerCategory,
        ts: _Series,
        feats: dict[str, Any],
        known_hash: bytes | None = None,
    ) -> dict[str, Any]:
        """A series prepared for the catalog: its row (``row``, keys in the catalog's
        column order), its arrays (``data``, ``timestamps``), ``features``, ``series`` and
        ``label``. The fields of its array are :func:`array_values`' (an import fills the
        rest of a row from a template, see ``interchange/importing.py``)."""
        et = ts._et
        code, gridded, forecast, irregular, probabilistic = _class_traits(type(ts))
        name = ts.name
        (
            (instant, initial_ms, length, count, ts_hash, pct_json, e_shape, a_shape, digest),
            stored,
        ) = array_values(
            et,
            ts._data,
            ts._initial_ms if gridded else None,
            ts._count if forecast else None,
            ts._percentiles if probabilistic else None,
            ts._ts_ms if irregular else None,
            known_hash,
        )
        # One dict display in the catalog's column order (a bulk add builds one per
        # series); the slots are read directly, the properties would only return them.
        row: dict[str, Any] = {
            "owner_id": owner_id,
            "owner_type": owner_type,
            "owner_category": int(category),
            "time_series_type": code,
            "name": name,
            "initial_timestamp": instant,
            "initial_ms": initial_ms,
            "resolution": _period_text(ts._resolution) if gridded else None,
            "length": length,
            "horizon": _period_text(ts._horizon) if forecast else None,
            "interval": _period_text(ts._interval) if forecast else None,
            "count": count,
            "timestamps_hash": ts_hash,
            "units": ts.units,
            "quantity_kind": ts.quantity_kind,
            "unit_system": ts.unit_system,
            "component_field": ts.component_field,
            "application_data": ts.application_data,
            "time_reference": ts._tr,
            "percentiles_json": pct_json,
            "element_type": _element_text(et),
            "element_shape": e_shape,
            "array_shape": a_shape,
            "data_hash": digest,
            "features_hash": _features_hash_of(feats),
        }
        out = {"row": row, "data": stored, "features": feats}
        if irregular:
            out["timestamps"] = ts._ts_ms
        out["series"] = ts
        out["label"] = series_label(name, owner_id)
        return out

    _INSERT_COLUMNS = (
        "owner_id",
        "owner_type",
        "owner_category",
        "time_series_type",
        "name",
        "initial_timestamp",
        "initial_ms",
        "resolution",
        "length",
        "horizon",
        "interval",
        "count",
        "timestamps_hash",
        "units",
        "quantity_kind",
        "unit_system",
        "component_field",
        "application_data",
        "time_reference",
        "percentiles_json",
        "element_type",
        "element_shape",
        "array_shape",
        "data_hash",
        "features_hash",
    )

    def _insert_prepared(self, prepared: list[dict[str, Any]]) -> list[int]:
        if not prepared:
            return []
        self._store_arrays(
            [(p["row"]["data_hash"], "data", p["data"]) for p in prepared]
            + [
                (p["row"]["timestamps_hash"], "timestamps", p["timestamps"])
                for p in prepared
                if "timestamps" in p
            ]
        )
        cat = self._catalog
        features = {p["row"]["features_hash"]: p["features"] for p in prepared}
        known = self._known_features(list(features))
        for fh, feats in features.items():
            if fh not in known:
                cat.execute(
                    "INSERT INTO feature_maps (features_hash, features_json) VALUES (?, ?)",
                    (fh, features_json(feats)),
                )
                cat.executemany(
                    "INSERT INTO feature_sets VALUES (?, ?, ?, ?, ?, ?, ?)",
                    feature_rows(fh, feats),
                )
        return self._insert_rows(prepared)

    def _known_features(self, hashes: list[bytes]) -> set[bytes]:
        """Which of ``hashes`` the catalog's feature_maps already holds (500 per query)."""
        found: set[bytes] = set()
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            found.update(
                r[0]
                for r in self._catalog.execute(
                    "SELECT features_hash FROM feature_maps WHERE features_hash IN "
                    f"({', '.join('?' * len(chunk))})",
                    chunk,
                )
            )
        return found

    def _insert_rows(self, prepared: list[dict[str, Any]]) -> list[int]:
        """The catalog rows of ``prepared``, in order, in one statement; returns their ids.

        The rule that a Deterministic and a DeterministicSingleTimeSeries exclude each
        other per family is checked once afterwards, for the whole batch: the first new
        row (in input order) whose family already held the other kind is refused, as
        inserting them one at a time would have refused it.
        """
        cat = self._catalog
        sql = (
            f"INSERT INTO time_series_associations ({', '.join(self._INSERT_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(self._INSERT_COLUMNS))})"
        )
        values = operator.itemgetter(*self._INSERT_COLUMNS)  # a row dict's values, in C
        # AUTOINCREMENT numbers the rows of one writer consecutively from past the
        # highest id ever used, so the ids are known without RETURNING (which costs
        # SQLite four times the insert itself).
        first = 1 + cat.scalar(
            "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence "
            "WHERE name = 'time_series_associations'), 0), "
            "COALESCE((SELECT MAX(id) FROM time_series_associations), 0))"
        )
        try:
            cat.executemany(sql, [values(p["row"]) for p in prepared])
        except apsw.ConstraintError as exc:
            done = cat.scalar(
                "SELECT COUNT(*) FROM time_series_associations WHERE id >= ?", (first,)
            )
            raise self._duplicate(prepared[done]) from exc
        ids = list(range(first, first + len(prepared)))
        if cat.conn.last_insert_rowid() != ids[-1]:
            raise IntegrityError(
                "the catalog numbered new series out of sequence; nothing was added. Run "
                "verify, and report this"
            )
        family = [
            sid
            for sid, p in zip(ids, prepared, strict=True)
            if p["row"]["time_series_type"] in (2, 3)
        ]
        for start in range(0, len(family), 500):
            chunk = family[start : start + 500]
            clash = self._catalog.execute(
                "SELECT n.id, o.id FROM time_series_associations n "
                "JOIN time_series_associations o ON o.time_series_type = 5 - n.time_series_type "
                "AND o.owner_id = n.owner_id AND o.owner_category = n.owner_category "
                "AND o.name = n.name AND o.resolution IS n.resolution "
                "AND o.features_hash = n.features_hash AND o.id < n.id "
                f"WHERE n.id IN ({', '.join('?' * len(chunk))}) ORDER BY n.id LIMIT 1",
                chunk,
            ).fetchall()
            if clash:
                new_id, other = clash[0]
                p = prepared[ids.index(new_id)]
                raise self._family_clash(p["row"], p["label"], other)
        return ids

    def _duplicate(self, p: dict[str, Any]) -> DuplicateTimeSeriesError:
        row, label = p["row"], p["label"]
        return DuplicateTimeSeriesError(
            f"a time series with that key already exists: {label}, "
            f"{TimeSeriesType.from_catalog_code(row['time_series_type']).name}"
            + (f" at {row['resolution']}" if row["resolution"] else "")
            + "; remove it first, or give the new one another name or features",
            series=label,
        )

    def _insert_row(self, row: dict[str, Any], label: str) -> int:
        """One catalog row, after the family rule; a clash of identity names the series."""
        self._check_family(row, label)
        sql = (
            f"INSERT INTO time_series_associations ({', '.join(self._INSERT_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(self._INSERT_COLUMNS))})"
        )
        try:
            self._catalog.execute(sql, [row[c] for c in self._INSERT_COLUMNS])
        except apsw.ConstraintError as exc:
            raise self._duplicate({"row": row, "label": label}) from exc
        return self._catalog.conn.last_insert_rowid()

    def _rows_by_identity(
        self, keys: Sequence[tuple], columns: Sequence[str]
    ) -> dict[tuple, dict[str, Any]]:
        """``identity -> {"id": …, column: value}`` for the keys the catalog holds.

        A key is ``(owner_id, owner_category, time_series_type, name, resolution or "",
        interval or "", features_hash)``, as the ``ts_identity`` index spells it;
        ``columns`` are catalog column names (``_INSERT_COLUMNS``). One query per 100 keys.
        """
        unknown = set(columns) - set(self._INSERT_COLUMNS)
        if unknown:  # the names go into the SQL text: only the catalog's own
            raise InvalidParameterError(f"not catalog columns: {sorted(unknown)}")
        identity = (
            "owner_id, owner_category, time_series_type, name, COALESCE(resolution, ''), "
            "COALESCE(interval, ''), features_hash"
        )
        wanted = ("id", *columns)
        found: dict[tuple, dict[str, Any]] = {}
        for start in range(0, len(keys), 100):
            chunk = keys[start : start + 100]
            marks = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(chunk))
            for r in self._catalog.execute(
                f"SELECT {identity}, {', '.join(wanted)} FROM time_series_associations "
                f"WHERE ({identity}) IN (VALUES {marks})",
                [x for k in chunk for x in k],
            ):
                found[tuple(r[:7])] = dict(zip(wanted, r[7:], strict=True))
        return found

    def _replace_rows(self, replacing: list[tuple[int, dict[str, Any]]]) -> None:
        """Update catalog rows in place from prepared items: each keeps its id.

        ``replacing`` holds ``(catalog id, prepared item)`` pairs whose identity is the
        row's. The new arrays go through the same writer as an add; the row's other
        columns become the item's; an array nothing names any more is dropped from the
        catalog (its slot is reclaimed by :meth:`compact`, as after a removal). A
        DeterministicSingleTimeSeries backed by a replaced SingleTimeSeries follows its
        new values when the grid is unchanged, and the replacement is refused otherwise.
        """
        if not replacing:
            return
        self._store_arrays(
            [(p["row"]["data_hash"], "data", p["data"]) for _, p in replacing]
            + [
                (p["row"]["timestamps_hash"], "timestamps", p["timestamps"])
                for _, p in replacing
                if "timestamps" in p
            ]
        )
        cat = self._catalog
        old = {
            r[0]: r[1:]
            for r in cat.execute(
                "SELECT id, data_hash, timestamps_hash, initial_ms, length, resolution "
                f"FROM time_series_associations WHERE id IN ({', '.join('?' * len(replacing))})",
                [i for i, _ in replacing],
            )
        }
        columns = [c for c in self._INSERT_COLUMNS if c not in _IDENTITY_COLUMNS]
        sql = (
            f"UPDATE time_series_associations SET {', '.join(f'{c} = ?' for c in columns)} "
            "WHERE id = ?"
        )
        for sid, p in replacing:
            row = p["row"]
            if row["time_series_type"] == TimeSeriesType.SingleTimeSeries.catalog_code:
                self._follow_source(old[sid], row, p["label"])
            cat.execute(sql, [*(row[c] for c in columns), sid])
        self._sweep_arrays(
            [(v[0], "data") for v in old.values()]
            + [(v[1], "timestamps") for v in old.values() if v[1] is not None]
        )

    def _follow_source(self, old: tuple, row: dict[str, Any], label: str) -> None:
        """Point the derived forecasts of a replaced SingleTimeSeries at its new array."""
        old_hash, _ts, initial_ms, length, resolution = old
        if old_hash == row["data_hash"]:
            return
        where = (
            "time_series_type = 3 AND data_hash = ? AND owner_id = ? AND owner_category = ? "
            "AND name = ? AND resolution IS ? AND features_hash = ?"
        )
        params = (
            old_hash,
            row["owner_id"],
            row["owner_category"],
            row["name"],
            resolution,
            row["features_hash"],
        )
        derived = self._catalog.scalar(
            f"SELECT id FROM time_series_associations WHERE {where}", params
        )
        if derived is None:
            return
        if (initial_ms, length) != (row["initial_ms"], row["length"]):
            raise InvalidParameterError(
                f"cannot replace {label}: it backs the DeterministicSingleTimeSeries id {derived}, "
                "whose windows need the old grid; remove that one first ({remove}) and run "
                "{transform} again after the import",
                series=label,
                terms={"remove": REMOVE, "transform": TRANSFORM},
            )
        self._catalog.execute(
            "UPDATE time_series_associations SET data_hash = ?, element_type = ?, "
            f"element_shape = ?, array_shape = ? WHERE {where}",
            (
                row["data_hash"],
                row["element_type"],
                row["element_shape"],
                row["array_shape"],
                *params,
            ),
        )

    def _sweep_arrays(self, keys: Iterable[tuple[bytes, str]]) -> None:
        """Drop the catalog entries of those arrays that no series names any more."""
        column = {"data": "data_hash", "timestamps": "timestamps_hash"}
        for h, kind in set(keys):
            self._catalog.execute(
                f"DELETE FROM arrays WHERE hash = ? AND kind = ? AND NOT EXISTS (SELECT 1 FROM "
                f"time_series_associations t WHERE t.{column[kind]} = ?)",
                (h, kind, h),
            )

    def _check_family(self, row: dict[str, Any], label: str) -> None:
        """Deterministic and DeterministicSingleTimeSeries exclude each other per family."""
        code = row["time_series_type"]
        if code not in (2, 3):
            return
        other = 3 if code == 2 else 2
        clash = self._catalog.scalar(
            "SELECT id FROM time_series_associations WHERE time_series_type = ? AND owner_id = ?"
            " AND owner_category = ? AND name = ? AND resolution IS ? AND features_hash = ?",
            (
                other,
                row["owner_id"],
                row["owner_category"],
                row["name"],
                row["resolution"],
                row["features_hash"],
            ),
        )
        if clash is not None:
            raise self._family_clash(row, label, clash)

    @staticmethod
    def _family_clash(row: dict[str, Any], label: str, clash: int) -> InvalidParameterError:
        code = row["time_series_type"]
        kinds = ("Deterministic", "DeterministicSingleTimeSeries")
        return InvalidParameterError(
            f"{label} already has a {kinds[(5 - code) - 2]} (id {clash}) for the same owner, "
            f"name, resolution and features; a {kinds[code - 2]} cannot sit beside it. "
            "Remove one first.",
            series=label,
        )

    def _store_arrays(self, entries: list[tuple[bytes, str, np.ndarray]]) -> None:
        """Write every array the catalog does not yet hold into this transaction's
        segment, pooled by dtype and shape, and record where each one went."""
        held = self._found_locations({(h, kind) for h, kind, _ in entries})
        new: dict[tuple[bytes, str], np.ndarray] = {}
        for h, kind, arr in entries:
            if (h, kind) not in new and (h, kind) not in held:
                new[(h, kind)] = arr
        by_pool: dict[tuple, list[tuple[bytes, str, np.ndarray]]] = {}
        for (h, kind), arr in new.items():
            # Empty arrays have no slot: they are all one "pool" of rows without a place.
            key = (arr.dtype, arr.shape) if arr.size else ()
            by_pool.setdefault(key, []).append((h, kind, arr))
        rows = []
        for key, group in by_pool.items():
            if not key:
                rows.extend(
                    (h, kind, _dtype_of(a), _shape_json(a.shape), "", -1, "")
                    for h, kind, a in group
                )
                continue
            dtype = _dtype_of(group[0][2])
            shape = list(group[0][2].shape)
            name = pool_name(dtype, shape)
            segment, first = self._segments.write(name, dtype, shape, [a for _, _, a in group])
            shape_text = _shape_json(tuple(shape))
            rows.extend(
                (h, kind, dtype, shape_text, name, first + i, segment)
                for i, (h, kind, _) in enumerate(group)
            )
        # In key order: the table is clustered on (hash, kind), so sorted inserts fill
        # its pages one after another instead of splitting pages all over the tree.
        # (hash, kind) is unique among them, so the plain tuple order is that order.
        rows.sort()
        self._catalog.executemany(
            "INSERT INTO arrays (hash, kind, dtype, shape, pool, slot, segment) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )

    # ------------------------------------------------------------------ listing
    def _select(
        self, where: str = "1", params: Sequence[Any] = (), order: str = "t.id"
    ) -> list[SeriesRow]:
        return list(self._iter_select(where, params, order))

    def _iter_select(
        self, where: str = "1", params: Sequence[Any] = (), order: str = "t.id"
    ) -> Iterator[SeriesRow]:
        """``_select`` one row at a time (the cursor streams; nothing is held)."""
        self._open()
        cur = self._catalog.execute(f"{SELECT_ROWS} WHERE {where} ORDER BY {order}", params)
        typed: dict[bytes, dict[str, Any]] = {}
        for r in cur:
            row = SeriesRow.from_sql(r)
            # JSON has no ±inf (the feature JSON holds null there); the typed rows do.
            if row.features and None in row.features.values():
                if row.features_hash not in typed:
                    typed[row.features_hash] = self._typed_features(row.features_hash)
                row.features = dict(typed[row.features_hash])
            yield row

    def _typed_features(self, features_hash: bytes) -> dict[str, Any]:
        """A feature map rebuilt from its typed ``feature_sets`` rows."""
        out: dict[str, Any] = {}
        for key, kind, i, f, b, text in self._catalog.execute(
            "SELECT key, value_kind, value_int, value_float, value_bool, value_str "
            "FROM feature_sets WHERE features_hash = ? ORDER BY key",
            (features_hash,),
        ):
            out[key] = {"int": i, "float": f, "bool": bool(b), "str": text}[kind]
        return out

    def _open(self) -> None:
        if self._segments is None:
            raise InvalidParameterError("the store is closed")

    @filter_keywords
    def select_rows(self, **filters: Any) -> list[SeriesRow]:
        """Catalog rows matching the ``list_metadata`` filters, in id order."""
        where, params = build_filter(filters)
        return self._select(where, params)

    @filter_keywords
    def iter_select_rows(self, **filters: Any) -> Iterator[SeriesRow]:
        """``select_rows`` streamed: one row at a time, in id order."""
        where, params = build_filter(filters)
        return self._iter_select(where, params)

    @filter_keywords
    def iter_select_fields(
        self, fields: Sequence[str], ids: Sequence[int] | None = None, **filters: Any
    ) -> Iterator[tuple]:
        """Chosen catalog columns of the matching rows, in id order, as plain tuples.

        For callers that stream many rows and need a few fields of each (the export's
        plan and series tables): no ``SeriesRow`` is built, nothing is decoded.

        Parameters
        ----------
        fields
            Column names of ``time_series_associations`` (``"id"``, ``"data_hash"`` …),
            or ``"features_json"`` (the feature map's JSON text; ±inf are ``null``
            there, :meth:`typed_features` has them).
        ids
            Only these series ids (any order; missing ones are left out), else the
            rows ``filters`` select.
        **filters
            ``list_metadata``'s keywords (not with ``ids``).
        """
        bad = [f for f in fields if f not in _FIELD_COLUMNS]
        if bad:
            raise InvalidParameterError(f"not a catalog field: {', '.join(bad)}")
        self._open()
        if ids is not None:
            wanted = [i for i in ids if _INT64_MIN <= i <= _INT64_MAX]
            if not wanted:
                return iter(())
            where, params = "t.id IN carray(?)", [apsw.carray(np.array(wanted, dtype=np.int64))]
        else:
            where, params = build_filter(filters)
        cols = ", ".join(_FIELD_COLUMNS[f] for f in fields)
        # The feature maps are joined only when their text is asked for (the filters
        # never name them): one search fewer per row.
        join = (
            " LEFT JOIN feature_maps f ON f.features_hash = t.features_hash"
            if "features_json" in fields
            else ""
        )
        return iter(
            self._catalog.execute(
                f"SELECT {cols} FROM time_series_associations t{join} WHERE {where} ORDER BY t.id",
                params,
            )
        )

    def typed_features(self, features_hash: bytes) -> dict[str, Any]:
        """The feature map of ``features_hash`` with its ±inf values (the JSON has null)."""
        self._open()
        return self._typed_features(features_hash)

    @filter_keywords
    def list_metadata(self, **filters: Any) -> list[dict[str, Any]]:
        """Metadata dicts of the series matching the filters (the reference's keywords)."""
        return [r.metadata() for r in self.select_rows(**filters)]

    def get_metadata_by_id(self, id: int) -> dict[str, Any] | None:
        """The metadata row of ``id`` (with timestamps for irregular series), or None."""
        rows = self._select("t.id = ?", (series_id(id),))
        if not rows:
            return None
        row = rows[0]
        ts = (
            self._load({(row.timestamps_hash, "timestamps")})[(row.timestamps_hash, "timestamps")]
            if row.timestamps_hash
            else None
        )
        return row.metadata(ts)

    def list_metadata_by_ids(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        """``list_metadata`` dicts for ``ids``, in the order given; NotFoundError if one is missing."""
        return [r.metadata() for r in self.rows_by_ids(ids)]

    def rows_by_ids(self, ids: Sequence[int]) -> list[SeriesRow]:
        """Rows for ``ids`` in the order given; NotFoundError names any missing id."""
        wanted = [series_id(i) for i in ids]
        # One query for all of them: the ids go in as one int64 buffer (an id no int64
        # holds is no rowid, so it is simply missing).
        lookup = np.array([i for i in wanted if _INT64_MIN <= i <= _INT64_MAX], dtype=np.int64)
        found = (
            {r.id: r for r in self._iter_select("t.id IN carray(?)", (apsw.carray(lookup),))}
            if lookup.size
            else {}
        )
        missing = [i for i in wanted if i not in found]
        if missing:
            raise _missing_ids(missing)
        return [found[i] for i in wanted]

    def is_empty(self) -> bool:
        self._open()
        return (
            not self._holds_series()
            and self._catalog.scalar(
                "SELECT 1 FROM store_attributes WHERE key NOT LIKE 'infrastore_sqlite.%' LIMIT 1"
            )
            is None
        )

    def _holds_series(self) -> bool:
        """Whether the catalog holds any series row (one index probe)."""
        return self._catalog.scalar("SELECT 1 FROM time_series_associations LIMIT 1") is not None

    def num_distinct_arrays(self) -> int:
        self._open()
        return int(self._catalog.scalar("SELECT count(*) FROM arrays WHERE kind = 'data'"))

    def counts_by_type(self) -> dict[str, int]:
        self._open()
        out = {}
        for code, n in self._catalog.execute(
            "SELECT time_series_type, count(*) FROM time_series_associations GROUP BY 1 ORDER BY 1"
        ):
            out[TimeSeriesType.from_catalog_code(code).name] = n
        return out

    # ------------------------------------------------------------------ reading
    def _locations(self, keys: Iterable[tuple[bytes, str]]) -> dict[tuple[bytes, str], tuple]:
        keys = set(keys)
        found = self._found_locations(keys)
        if len(found) < len(keys):
            raise _missing_array(*next(k for k in keys if k not in found))
        return found

    def _found_locations(self, keys: Iterable[tuple[bytes, str]]) -> dict[tuple[bytes, str], tuple]:
        """Where each of ``keys`` the catalog holds is stored (absent keys are left out)."""
        keyset = keys if isinstance(keys, set | frozenset) else set(keys)
        found: dict[tuple[bytes, str], tuple] = {}
        if len(keyset) >= _SCAN_FROM and len(keyset) * 4 >= self._catalog.scalar(
            "SELECT count(*) FROM arrays"
        ):
            # Most of the table: one pass over it beats a primary-key search per array.
            for r in self._catalog.execute(
                "SELECT hash, kind, dtype, shape, pool, slot, segment FROM arrays"
            ):
                key = (r[0], r[1])
                if key in keyset:
                    found[key] = r[2:]
            return found
        by_kind: dict[str, list[bytes]] = {}
        for h, kind in keyset:
            by_kind.setdefault(kind, []).append(h)
        for kind, hashes in by_kind.items():
            # One query per kind, the hashes bound as one carray (the primary key finds each).
            for r in self._catalog.execute(
                "SELECT hash, dtype, shape, pool, slot, segment FROM arrays "
                "WHERE kind = ? AND hash IN carray(?)",
                (kind, apsw.carray(tuple(hashes))),
            ):
                found[(r[0], kind)] = r[1:]
        return found

    def _load(
        self, keys: Iterable[tuple[bytes, str]], part: tuple = ()
    ) -> dict[tuple[bytes, str], np.ndarray]:
        """Read distinct arrays, grouped by segment and pool so neighbours come in one slab.

        ``part`` reads only that selection of each array (``ArrayFile.read``).

        A segment merged away since the catalog named it sends the read back to the
        catalog for the arrays' new places (the newest committed snapshot).
        """
        keys = set(keys)
        for attempt in range(3):
            try:
                return self._load_once(keys, part)
            except SegmentGone:
                if attempt == 2 or self._catalog.in_transaction:
                    raise
        raise AssertionError("unreachable")

    def _load_once(
        self, keys: set[tuple[bytes, str]], part: tuple = (), places: dict | None = None
    ) -> dict[tuple[bytes, str], np.ndarray]:
        """One try of :meth:`_load` (``places``: the keys' places, when already known)."""
        locs = self._locations(keys) if places is None else places
        by_pool: dict[tuple[str, str], list[tuple[bytes, str]]] = {}
        out: dict[tuple[bytes, str], np.ndarray] = {}
        from ..core.elements import NUMPY_DTYPES

        for key, (dtype, shape, pool, _slot, segment) in locs.items():
            if not pool:
                out[key] = np.zeros(orjson.loads(shape), dtype=NUMPY_DTYPES[dtype])[part]
            else:
                by_pool.setdefault((segment, pool), []).append(key)
        for (segment, pool), group in by_pool.items():
            arrays = self._segments.read(segment, pool, [locs[k][3] for k in group], part)
            out.update(zip(group, arrays, strict=True))
        return out

    def iter_arrays(
        self,
        rows: Sequence[SeriesRow],
        *,
        batch_bytes: int = _DEFAULT_BATCH_BYTES,
        with_timestamps: bool = True,
    ) -> Iterator[list[tuple[SeriesRow, np.ndarray, np.ndarray | None]]]:
        """Yield ``(row, stored array, timestamps)`` for ``rows`` a bounded batch at a time.

        Each distinct array is read once per batch and dropped when the batch is done,
        so memory follows ``batch_bytes``, not the selection. Rows come back in the
        order given. The array is the stored (composite: minimal-width) form.
        """
        self._open()
        for group in self._row_groups(rows, batch_bytes):
            yield self._read_batch(group, with_timestamps)

    @staticmethod
    def _row_groups(
        rows: Iterable[SeriesRow], batch_bytes: int = _DEFAULT_BATCH_BYTES
    ) -> Iterator[list[SeriesRow]]:
        """``rows`` in consecutive groups whose distinct arrays hold about ``batch_bytes``."""
        batch: list[SeriesRow] = []
        seen: set[bytes] = set()
        size = 0
        for row in rows:
            if row.data_hash not in seen:
                nbytes = math.prod(row.array_shape) * 8
                if batch and size + nbytes > batch_bytes:
                    yield batch
                    batch, seen, size = [], set(), 0
                seen.add(row.data_hash)
                size += nbytes
            batch.append(row)
        if batch:
            yield batch

    def _read_batch(self, rows: list[SeriesRow], with_timestamps: bool):
        data = {r.data_hash: (r.data_hash, "data") for r in rows}
        stamps = (
            {
                r.timestamps_hash: (r.timestamps_hash, "timestamps")
                for r in rows
                if r.timestamps_hash
            }
            if with_timestamps
            else {}
        )
        loaded = self._load([*data.values(), *stamps.values()])
        # Keyed by hash alone from here: one lookup per row, no key tuple built per row.
        arrays = {h: loaded[k] for h, k in data.items()}
        times = {h: loaded[k] for h, k in stamps.items()}
        return [
            (r, arrays[r.data_hash], times.get(r.timestamps_hash) if r.timestamps_hash else None)
            for r in rows
        ]

    def _series_from(
        self, row: SeriesRow, stored: np.ndarray, ts_ms: np.ndarray | None, *, pad: bool = True
    ) -> _Series:
        """A series object from a catalog row and its stored array (no re-validation).

        Ragged composites are stored at their minimal width; ``pad`` restores the width
        the series was added with (an export wants the minimal form and passes False).
        """
        fields = (
            row.id,
            row.type,
            row.name,
            row.element_type,
            row.time_reference,
            row.units,
            row.quantity_kind,
            row.unit_system,
            row.component_field,
            row.application_data,
            row.initial_ms,
            row.resolution,
            row.horizon,
            row.interval,
            row.count,
            row.percentiles,
            row.array_shape,
        )
        return _series_of(fields, stored, ts_ms, pad)

    def _read_fields(self, ids: Sequence[int]) -> list[tuple]:
        """``_READ_FIELDS`` (and the data array's pool, slot and segment) of each of
        ``ids``, in the order given: one query, no catalog row objects; NotFoundError
        names a missing id."""
        wanted, lookup = _id_lookup(ids)
        self._open()
        found = (
            {
                r[0]: r
                for r in self._catalog.execute(
                    f"SELECT {_READ_FIELDS}, a.pool, a.slot, a.segment "
                    "FROM time_series_associations t LEFT JOIN arrays a "
                    "ON a.hash = t.data_hash AND a.kind = 'data' WHERE t.id IN carray(?)",
                    (apsw.carray(lookup),),
                )
            }
            if lookup.size
            else {}
        )
        if len(found) < len(set(wanted)):
            raise _missing_ids([i for i in wanted if i not in found])
        return [found[i] for i in wanted]

    def _data_arrays(self, fields: list[tuple]) -> dict[bytes, np.ndarray]:
        """The stored data array of each of ``_read_fields``' rows, by data hash: each
        distinct array read once, the slots of one segment's pool in one call.

        Raises SegmentGone when a segment was merged away since the rows were read.
        """
        out: dict[bytes, np.ndarray] = {}
        groups: dict[tuple[str, str], tuple[list[int], list[bytes]]] = {}
        empty: list[bytes] = []
        for f in fields:
            h = f[_AT_DATA_HASH]
            if h in out:
                continue
            pool = f[_AT_POOL]
            out[h] = None  # type: ignore[assignment]  # claimed; filled in below
            if not pool:
                if pool is None:  # no arrays row: the catalog is damaged
                    raise _missing_array(h, "data")
                empty.append(h)  # a zero-size array has no slot
                continue
            key = (f[_AT_POOL + 2], pool)
            group = groups.get(key)
            if group is None:
                group = groups[key] = ([], [])
            group[0].append(f[_AT_POOL + 1])
            group[1].append(h)
        if empty:
            out.update((k[0], a) for k, a in self._load_once({(h, "data") for h in empty}).items())
        for (segment, pool), (slots, hashes) in groups.items():
            out.update(zip(hashes, self._segments.read(segment, pool, slots), strict=True))
        return out

    def read_by_ids(
        self,
        ids: Sequence[int],
        *,
        start_time: datetime | None = None,
        len: int | None = None,
        count: int | None = None,
    ) -> list[_Series]:
        """Read many series by id, in the order given (repeats read once, returned in place)."""
        # A few objects per series and no cycles: the collector would only rescan them.
        with gc_paused():
            return self._read_by_ids(ids, start_time, len, count)

    def _read_by_ids(
        self,
        ids: Sequence[int],
        start_time: datetime | None,
        len: int | None,
        count: int | None,
    ) -> list[_Series]:
        for attempt in range(3):
            fields = self._read_fields(ids)
            # The places came with the rows; a segment merged away meanwhile sends the
            # read back for the new ones, as _load does.
            try:
                arrays = self._data_arrays(fields)
                break
            except SegmentGone:
                if attempt == 2 or self._catalog.in_transaction:
                    raise
        stamps = {(f[_AT_TS_HASH], "timestamps") for f in fields if f[_AT_TS_HASH]}
        times = {k[0]: a for k, a in self._load(stamps).items()} if stamps else {}
        out: list[_Series] = [
            _series_of(
                f,
                arrays[f[_AT_DATA_HASH]],
                times[f[_AT_TS_HASH]] if f[_AT_TS_HASH] else None,
                True,
            )
            for f in fields
        ]
        if start_time is not None or len is not None or count is not None:
            out = [slice_window(o, start_time=start_time, length=len, count=count) for o in out]
        return out

    def read_by_id(
        self,
        id: int,
        *,
        start_time: datetime | None = None,
        len: int | None = None,
        count: int | None = None,
        owner_id: int | None = None,
        owner_category: OwnerCategory | str | None = None,
    ) -> _Series:
        """Read one series (or the window ``start_time``/``len``/``count`` names).

        ``owner_id`` with ``owner_category`` (both or neither) guard the read: a series of
        another owner raises :class:`OwnerMismatchError` instead of being returned.
        """
        if (owner_id is None) != (owner_category is None):
            raise InvalidParameterError(
                "read_by_id requires both owner_id and owner_category, or neither"
            )
        if owner_id is not None:
            self._check_owner(self.rows_by_ids([id]), owner_id, owner_category)
        return self.read_by_ids([id], start_time=start_time, len=len, count=count)[0]

    def read_by_ids_range(
        self, ids: Sequence[int], time_range: tuple[datetime, datetime]
    ) -> list[_Series]:
        """Read many series, each clipped to the half-open ``time_range`` (start, end)."""
        rows = self.rows_by_ids(ids)
        out = []
        for batch in self.iter_arrays(rows):
            for row, arr, ts in batch:
                out.append(slice_range(self._series_from(row, arr, ts), time_range, row.label))
        return out

    # ------------------------------------------------------------------ removing
    def remove_by_ids(
        self,
        ids: Sequence[int],
        *,
        owner_id: int | None = None,
        owner_category: OwnerCategory | str | None = None,
    ) -> int:
        """Remove series by id, all or nothing; returns how many were removed."""
        self._writable()
        rows = self.rows_by_ids(list(dict.fromkeys(series_id(i) for i in ids)))
        if owner_id is not None or owner_category is not None:
            if owner_id is None or owner_category is None:
                raise InvalidParameterError("pass owner_id and owner_category together")
            self._check_owner(rows, owner_id, owner_category, "nothing was removed")
        LOG.debug("removing %d series from the store %s", len(rows), self.path)
        with self.transaction():
            self._remove_rows(rows)
        return len(rows)

    @staticmethod
    def _check_owner(
        rows: list[SeriesRow], owner_id: int, owner_category: Any, outcome: str = "not read"
    ) -> None:
        """The owner guard: any row of another owner refuses the whole call."""
        cat = OwnerCategory.coerce(owner_category)
        for r in rows:
            if r.owner_id != owner_id or r.owner_category is not cat:
                raise OwnerMismatchError(
                    f"series {r.id} belongs to owner {r.owner_id} ({r.owner_category.name}), "
                    f"not to the expected owner {owner_id} ({cat.name}); {outcome}",
                    series=r.label,
                )

    @filter_keywords
    def remove_by_filter(self, **filters: Any) -> int:
        """Remove every series matching the filters, all or nothing; returns the count."""
        self._writable()
        rows = self.select_rows(**filters)
        with self.transaction():
            self._remove_rows(rows)
        return len(rows)

    def _remove_rows(self, rows: list[SeriesRow]) -> None:
        cat = self._catalog
        ids = {r.id for r in rows}
        for r in rows:
            if r.type is TimeSeriesType.SingleTimeSeries:
                backing = cat.scalar(
                    "SELECT id FROM time_series_associations WHERE time_series_type = 3 AND "
                    "data_hash = ? AND owner_id = ? AND owner_category = ? AND name = ? AND "
                    "resolution IS ? AND features_hash = ?",
                    (
                        r.data_hash,
                        r.owner_id,
                        int(r.owner_category),
                        r.name,
                        r.resolution,
                        r.features_hash,
                    ),
                )
                if backing is not None and backing not in ids:
                    raise InvalidParameterError(
                        f"cannot remove {r.label}: it backs the DeterministicSingleTimeSeries "
                        f"id {backing}; remove that one too (or first)",
                        series=r.label,
                    )
        cat.executemany(
            "DELETE FROM time_series_associations WHERE id = ?", [(r.id,) for r in rows]
        )
        # Free what nothing references any more (the slot is reclaimed by compact()).
        cat.execute(
            "DELETE FROM arrays WHERE kind = 'data' AND NOT EXISTS (SELECT 1 FROM "
            "time_series_associations t WHERE t.data_hash = arrays.hash)"
        )
        cat.execute(
            "DELETE FROM arrays WHERE kind = 'timestamps' AND NOT EXISTS (SELECT 1 FROM "
            "time_series_associations t WHERE t.timestamps_hash = arrays.hash)"
        )
        cat.execute(
            "DELETE FROM feature_sets WHERE NOT EXISTS (SELECT 1 FROM time_series_associations t"
            " WHERE t.features_hash = feature_sets.features_hash)"
        )
        cat.execute(
            "DELETE FROM feature_maps WHERE NOT EXISTS (SELECT 1 FROM time_series_associations t"
            " WHERE t.features_hash = feature_maps.features_hash)"
        )

    # ------------------------------------------------------------------ transform
    def transform_single_time_series(
        self,
        horizon: Any,
        interval: Any,
        *,
        owner_category: OwnerCategory | str | None = None,
        resolution: Any = None,
    ) -> int:
        """Derive DeterministicSingleTimeSeries rows from stored SingleTimeSeries.

        Returns the number of rows created (0 when re-run with the same parameters).
        """
        self._writable()
        filters: dict[str, Any] = {"time_series_type": TimeSeriesType.SingleTimeSeries}
        if owner_category is not None:
            filters["owner_category"] = owner_category
        if resolution is not None:
            filters["resolution"] = resolution
        rows = self.select_rows(**filters)
        hor = as_period(horizon, what="horizon")
        itv = as_period(interval, what="interval")
        by_res: dict[str, set[tuple[int, int]]] = {}
        for r in rows:
            by_res.setdefault(r.resolution, set()).add((r.initial_ms, r.length))
        for res, pairs in by_res.items():
            if len(pairs) > 1:
                raise IntegrityError(
                    f"the SingleTimeSeries at resolution {res} have more than one "
                    "(initial_timestamp, length) pair; transform needs them to share one grid "
                    "(pass resolution= to transform one group, or align the series)"
                )
        created = 0
        with self.transaction():
            for r in rows:
                res = as_period(r.resolution)
                h = divide(hor, res, what="horizon")
                if h > r.length:
                    raise InvalidParameterError(
                        f"horizon {hor} is longer than {r.label} ({r.length} steps of {res})"
                    )
                if itv.is_positive:
                    steps = divide(itv, res, what="interval")
                    if steps > h:
                        raise InvalidParameterError(
                            f"interval {itv} is longer than horizon {hor}, which would leave gaps"
                        )
                    count = (r.length - h) // steps + 1
                    _check_calendar_windows(r, res, itv, h, steps, count)
                else:
                    if h != r.length:
                        raise InvalidParameterError(
                            "interval PT0S is only allowed when the horizon spans the whole series"
                        )
                    count = 1
                existing = self._catalog.execute(
                    "SELECT horizon, interval FROM time_series_associations WHERE "
                    "time_series_type = 3 AND owner_id = ? AND owner_category = ? AND name = ? "
                    "AND resolution = ? AND features_hash = ?",
                    (r.owner_id, int(r.owner_category), r.name, r.resolution, r.features_hash),
                ).fetchall()
                if (str(hor), str(itv)) in [tuple(e) for e in existing]:
                    continue
                if any(e[1] == str(itv) for e in existing):
                    raise InvalidParameterError(
                        f"{r.label} already has a DeterministicSingleTimeSeries with interval "
                        f"{itv} and another horizon; remove it first",
                        series=r.label,
                    )
                row = {
                    "owner_id": r.owner_id,
                    "owner_type": r.owner_type,
                    "owner_category": int(r.owner_category),
                    "time_series_type": 3,
                    "name": r.name,
                    "initial_timestamp": ms_to_rfc3339(r.initial_ms),
                    "initial_ms": r.initial_ms,
                    "resolution": r.resolution,
                    "length": r.length,
                    "horizon": str(hor),
                    "interval": str(itv),
                    "count": count,
                    "timestamps_hash": None,
                    **r.descriptors(),
                    "time_reference": r.time_reference,
                    "percentiles_json": None,
                    "element_type": r.element_type,
                    "element_shape": orjson.dumps(r.element_shape).decode(),
                    "array_shape": orjson.dumps(list(r.array_shape)).decode(),
                    "data_hash": r.data_hash,
                    "features_hash": r.features_hash,
                }
                self._insert_row(row, r.label)
                created += 1
        return created

    # ------------------------------------------------------------------ integrity
    def verify_integrity(self, *, progress: Any = None) -> dict[str, Any]:
        """Check that every catalog row's array (and time axis) exists and re-hashes to
        the hash the catalog records.

        Parameters
        ----------
        progress
            Optional ``progress(done, total)`` callable, counted in distinct arrays.

        Returns
        -------
        dict
            ``{"ok": bool, "errors": [str, ...], "checked": n}``.
        """
        self._open()
        errors: list[str] = []
        rows = self._select(order="t.data_hash, t.id")
        held = {(bytes(h), k) for h, k in self._catalog.execute("SELECT hash, kind FROM arrays")}
        readable = []
        for row in rows:
            if (row.data_hash, "data") not in held:
                errors.append(
                    f"{row.label} (id {row.id}) names array {row.data_hash.hex()}, which the "
                    "store does not hold"
                )
            elif row.timestamps_hash and (row.timestamps_hash, "timestamps") not in held:
                errors.append(
                    f"{row.label} (id {row.id}) names a time axis the store does not hold"
                )
            else:
                readable.append(row)
        for (name,) in self._catalog.execute("SELECT name FROM segments ORDER BY name"):
            if not self._segments.path(name).is_file():
                errors.append(f"the segment file {self._segments.path(name)} is missing")
        total = len({r.data_hash for r in readable})
        checked = 0
        seen: set[bytes] = set()
        for batch in self._verify_batches(readable, errors):
            for row, arr, ts in batch:
                if row.data_hash in seen:
                    continue
                seen.add(row.data_hash)
                checked += 1
                actual = data_hash(arr)
                if actual != row.data_hash:
                    errors.append(
                        f"array {row.data_hash.hex()} of {row.label} re-hashes to {actual.hex()}"
                    )
                if ts is not None and timestamps_hash(ts) != row.timestamps_hash:
                    errors.append(f"the time axis of {row.label} does not match its hash")
            if progress:
                progress(checked, total)
        return {"ok": not errors, "errors": errors, "checked": checked}

    def _verify_batches(self, rows: list[SeriesRow], errors: list[str]) -> Iterator[list]:
        """``iter_arrays`` for verify: a batch that cannot be read (a damaged segment file)
        is reported, one series at a time, naming the file, and verify goes on."""
        for group in self._row_groups(rows):
            try:
                yield self._read_batch(group, True)
                continue
            except StorageError:
                pass
            for row in group:
                try:
                    yield self._read_batch([row], True)
                except StorageError as exc:
                    errors.append(f"{row.label} (id {row.id}) cannot be read: {exc}")

    @property
    def write_buffer_bytes(self) -> int:
        """How many bytes of array writes may queue ahead of the background writer.

        Adds hand their arrays to one writer thread per store, which compresses and writes
        them into the transaction's segment while the caller goes on; past this many
        queued bytes an add waits for the writer. Raising it lets a burst of adds run
        further ahead (the queued arrays are held in memory meanwhile); lowering it bounds
        that memory. It belongs to this ``Store`` object and is not persisted (a reopened
        store is back to the default, 16 MiB). Setting it applies to the writes that follow.

        Raises
        ------
        InvalidParameterError
            Zero.
        OverflowError
            A negative value, or one of 2**64 or more.
        TypeError
            A value that is not an integer.
        """
        self._open()
        return int(self._segments.write_buffer_bytes)

    @write_buffer_bytes.setter
    def write_buffer_bytes(self, value: int) -> None:
        # The reference's classes for the same refusals (its setter takes a u64).
        n = operator.index(value)
        if n < 0:
            raise OverflowError("write_buffer_bytes cannot be negative")
        if n >= 2**64:
            raise OverflowError("write_buffer_bytes must be less than 2**64")
        if n == 0:
            raise InvalidParameterError("write_buffer_bytes must be greater than zero")
        self._open()
        self._segments.write_buffer_bytes = n
        if self._segments.writer is not None:
            self._segments.writer.max_pending_bytes = n

    @property
    def compression(self) -> str:
        """The HDF5 filter new arrays get: ``none`` or ``deflate:<level>:<shuffle|noshuffle>``."""
        self._open()
        return self._segments.compression

    def get_compression(self) -> dict[str, Any]:
        """The HDF5 filter new arrays get, in the reference's shape:
        ``{"compression": "auto" | "deflate" | "none", "level": int | None, "shuffle": bool}``
        (``auto``: the level and shuffle of the integer and bool arrays; floats are stored
        uncompressed)."""
        kind, level, shuffle = parse_compression(self.compression)
        return {"compression": kind, "level": level, "shuffle": shuffle}

    def compact(self) -> dict[str, int]:
        """Rewrite the live arrays into one segment, reclaiming removed arrays' space.

        Like every write it is one transaction: a failure leaves the store as it was.
        """
        self._writable()
        if self._catalog.in_transaction:
            raise InvalidParameterError("compact() cannot run inside a transaction")
        cat = self._catalog
        names = sorted(self._segment_names())
        live = int(cat.scalar("SELECT count(*) FROM arrays WHERE pool != ''"))
        slots = int(cat.scalar("SELECT COALESCE(sum(slots), 0) FROM segments"))
        if len(names) > 1 or slots != live:
            report = self._rewrite(names)
        else:
            with self.transaction():  # still sweeps what a failed write left behind
                pass
            report = {"slots_reclaimed": 0, "datasets_dropped": 0, "bytes_reclaimed": 0}
        # The reference's keys; feature maps and time axes are swept at removal already.
        return {**report, "feature_sets_reclaimed": 0, "timestamp_sets_reclaimed": 0}

    # ------------------------------------------------------------------ interchange
    # The reference's API, so methods of the store, though the container is a layer above:
    # each imports it when called, so loading the store never loads the interchange layer
    # (docs/architecture.md, "The calls that point up").
    def export_sqlite(self, path: str | Path, **kwargs: Any) -> list[dict[str, Any]]:
        """Export the selection to the SQLite interchange layout; see :func:`export_sqlite`."""
        from ..interchange.sqlite import export_sqlite

        LOG.info("exporting from the store %s to %s", self.path, path)
        return export_sqlite(self, path, **kwargs)

    @filter_keywords
    def export_parquet(
        self,
        dir: str | Path,
        *,
        time_range: tuple[datetime, datetime] | None = None,
        include_derived: bool = False,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        **filters: Any,
    ) -> list[dict[str, Any]]:
        """Export the selection as Parquet files in ``dir`` (three per partition); see
        :func:`infrastore_sqlite.interchange.parquet.export_parquet`. Needs pyarrow
        (``pip install 'infrastore-sqlite[parquet]'``)."""
        from ..interchange.parquet import export_parquet

        return export_parquet(
            self,
            dir,
            time_range=time_range,
            include_derived=include_derived,
            dry_run=dry_run,
            progress=progress,
            **filters,
        )

    def import_parquet(
        self,
        path: str | Path,
        *,
        skip_checksum: bool = False,
        on_conflict: str = "error",
        overrides: dict[str, Any] | None = None,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Import Parquet files (a directory, a file or a partition stem); see
        :func:`infrastore_sqlite.interchange.parquet.import_parquet`. Needs pyarrow."""
        from ..interchange.parquet import import_parquet

        return import_parquet(
            self,
            path,
            skip_checksum=skip_checksum,
            on_conflict=on_conflict,  # type: ignore[arg-type]
            overrides=overrides,
            dry_run=dry_run,
            progress=progress,
            **kwargs,
        )

    def import_sqlite(self, path: str | Path, **kwargs: Any) -> list[int]:
        """Import an interchange database; see :func:`import_sqlite`."""
        from ..interchange.sqlite import import_sqlite

        LOG.info("importing %s into the store %s", path, self.path)
        return import_sqlite(self, path, **kwargs)

    def diff_parquet(self, path: str | Path, **kwargs: Any) -> list[dict[str, Any]]:
        """What importing Parquet files would change; see :func:`diff_parquet`."""
        from ..interchange.parquet import diff_parquet

        return diff_parquet(self, path, **kwargs)

    def diff_sqlite(self, path: str | Path, **kwargs: Any) -> list[dict[str, Any]]:
        """What importing an interchange database would change; see :func:`diff_sqlite`."""
        from ..interchange.sqlite.diff import diff_sqlite

        return diff_sqlite(self, path, **kwargs)


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


class _Rollback(Exception):
    """Raised into a transaction context to roll it back on request."""


def _id_lookup(ids: Sequence[int]) -> tuple[list[int], np.ndarray]:
    """``ids`` checked as series ids (``series_id``), and those an int64 can hold as one
    int64 array (an id no int64 holds is no rowid: simply missing)."""
    wanted = ids if type(ids) is list else list(ids)
    if set(map(type, wanted)) <= {int}:
        # Plain ints (what a caller holds, what list_metadata gives): one conversion in
        # C instead of a check per id; one outside int64 sends them the long way.
        with contextlib.suppress(OverflowError):
            return wanted, np.array(wanted, dtype=np.int64)
    wanted = [series_id(i) for i in wanted]
    return wanted, np.array([i for i in wanted if _INT64_MIN <= i <= _INT64_MAX], dtype=np.int64)


def _missing_ids(missing: list[int]) -> NotFoundError:
    return NotFoundError(
        f"no series with id {', '.join(map(str, missing[:10]))}"
        + (" …" if len(missing) > 10 else "")
        + "; list_metadata shows the ids the store holds"
    )


def _missing_array(h: bytes, kind: str) -> IntegrityError:
    return IntegrityError(
        f"the catalog names an array {h.hex()[:12]} ({kind}) that the store does not "
        "hold; run verify to list every damaged series",
        key=h.hex(),
    )


# What a series object is built from, in this order (``_series_of``); a read selects
# these columns, then the data hash, the timestamps hash and the data array's place.
_READ_FIELDS = (
    "t.id, t.time_series_type, t.name, t.element_type, t.time_reference, t.units, "
    "t.quantity_kind, t.unit_system, t.component_field, t.application_data, t.initial_ms, "
    "t.resolution, t.horizon, t.interval, t.count, t.percentiles_json, t.array_shape, "
    "t.data_hash, t.timestamps_hash"
)
_AT_DATA_HASH, _AT_TS_HASH, _AT_POOL = 17, 18, 19  # then the slot and the segment

# What ``iter_select_fields`` may name: every catalog column (the id and the columns a
# series row is written with), and the feature map's text.
_FIELD_COLUMNS = {name: f"t.{name}" for name in ("id", *Store._INSERT_COLUMNS)} | {
    "features_json": "f.features_json"
}


def _series_of(f: tuple, stored: np.ndarray, ts_ms: np.ndarray | None, pad: bool) -> _Series:
    """A series object from its ``_READ_FIELDS`` (a catalog row's: the type as its enum
    or catalog code, percentiles and array shape decoded or as catalog JSON text) and
    its stored array, with no re-validation: the values were checked when written."""
    kind, cls, et, resolution, ragged = _series_kind(f[1], f[3], f[11])
    arr = stored
    obj = cls.__new__(cls)
    # Plain attribute stores: a read builds one per series.
    obj.name = f[2]
    obj._et = et
    obj._tr = f[4]
    obj.units = f[5]
    obj.quantity_kind = f[6]
    obj.unit_system = f[7]
    obj.component_field = f[8]
    obj.application_data = f[9]
    if resolution is None:  # the irregular types
        obj._ts_ms = ts_ms
    else:
        obj._initial_ms = f[10]
        obj._resolution = resolution
    if kind in _FORECAST_TYPES:
        obj._horizon = _period(f[12], "horizon")
        obj._interval = _period(f[13], "interval")
        obj._count = f[14]
        if kind is TimeSeriesType.DeterministicSingleTimeSeries:
            arr = _materialize_windows(arr, resolution, obj._horizon, obj._interval, f[14])
    if pad and ragged:
        width = (f[16] if isinstance(f[16], tuple) else decode_shape(f[16]))[-1]
        if arr.shape[-1] != width:
            extra = np.zeros((*arr.shape[:-1], width - arr.shape[-1]), arr.dtype)
            arr = np.concatenate([arr, extra], axis=-1)
    if kind is TimeSeriesType.Probabilistic:
        p = f[15]
        obj._percentiles = [] if not p else list(p if isinstance(p, list) else orjson.loads(p))
    obj._data = arr
    return obj


# typed: an IntEnum member equals its int value, and a catalog code is not that value.
@functools.lru_cache(maxsize=1024, typed=True)
def _series_kind(type_: TimeSeriesType | int, element_type: str, resolution: str | None):
    """``(type, class, element type, resolution period or None, ragged)`` for a catalog
    row's type (enum or code), element type and resolution text, worked out once."""
    kind = type_ if isinstance(type_, TimeSeriesType) else TimeSeriesType.from_catalog_code(type_)
    et = _element_type(element_type)
    period = None if kind in _IRREGULAR else _period(resolution, "resolution")
    return kind, SERIES_CLASSES.get(kind, Deterministic), et, period, et.is_ragged


@functools.lru_cache(maxsize=256)
def _element_type(text: str):
    """``parse_element_type`` of catalog text, parsed once (an ElementType is frozen)."""
    return parse_element_type(text)


@functools.lru_cache(maxsize=1024)
def _period(text: str, what: str):
    """``as_period`` of catalog text, parsed once (a Period is immutable)."""
    return as_period(text, what=what)


@functools.lru_cache(maxsize=64)
def _class_traits(cls: type) -> tuple[int, bool, bool, bool, bool]:
    """``(catalog code, gridded, forecast, irregular, probabilistic)`` of a series class,
    worked out once (a bulk add asks for every series)."""
    gridded = issubclass(cls, SingleTimeSeries | _Forecast)
    return (
        cls.time_series_type.catalog_code,
        gridded,
        gridded and issubclass(cls, _Forecast),
        not gridded and issubclass(cls, _Irregular),
        issubclass(cls, Probabilistic),
    )


def _dtype_of(arr: np.ndarray) -> str:
    return _dtype_text(arr.dtype)


# Catalog text that many series of one batch share (shapes, instants, periods, dtypes,
# the empty feature map) is built once: per-series Python is what a bulk add of many
# small series costs. Each cache is keyed by the exact value its text is made from.
@functools.lru_cache(maxsize=256)
def _dtype_text(dtype: np.dtype) -> str:
    from ..core.elements import dtype_name

    return dtype_name(dtype)


def _element_text(et: Any) -> str:
    # Not cached: hashing the (frozen dataclass) element type costs more than str().
    return str(et)


@functools.lru_cache(maxsize=1024)
def _shape_json(shape: tuple[int, ...]) -> str:
    return orjson.dumps([int(d) for d in shape]).decode()


@functools.lru_cache(maxsize=4096)
def _catalog_instant(ms: int) -> str:
    return ms_to_rfc3339(ms)


#: The catalog columns a series' array decides (:func:`array_values`' order).
ARRAY_FIELDS = (
    "initial_timestamp",
    "initial_ms",
    "length",
    "count",
    "timestamps_hash",
    "percentiles_json",
    "element_shape",
    "array_shape",
    "data_hash",
)


def array_values(
    et: Any,
    data: np.ndarray,
    initial_ms: int | None,
    count: int | None,
    percentiles: list[float] | None,
    timestamps: np.ndarray | None,
    known_hash: bytes | None = None,
) -> tuple[tuple, np.ndarray]:
    """The values of the :data:`ARRAY_FIELDS` of a series' array, and the array as stored
    (a ragged composite at its minimal width): what differs between series that share
    everything else. ``known_hash`` is the stored array's content hash when the caller
    has it. (Positional: a bulk add calls it once per series.)"""
    stored = shrink(et, data) if et.is_ragged else data
    shape = data.shape
    values = (
        None if initial_ms is None else _catalog_instant(initial_ms),
        initial_ms,
        int(shape[0]),
        count,
        None if timestamps is None else timestamps_hash(timestamps),
        None if percentiles is None else orjson.dumps(percentiles).decode(),
        _shape_json(shape[1:]),
        _shape_json(shape),
        data_hash(stored) if known_hash is None else known_hash,
    )
    return values, stored


def series_label(name: str, owner_id: int) -> str:
    """How a refusal names a series being filed: ``'name' (owner 7)``."""
    return f"'{name}' (owner {owner_id})"


_PERIOD_TEXTS: dict[tuple[int, int, bool], str] = {}


def _period_text(period: Period) -> str:
    """``str(period)``, built once per distinct period. Keyed by its fields: every series
    holds its own Period object, and a frozen dataclass's own hash costs several times
    this key's."""
    key = (period.months, period.ms, period.calendar)
    text = _PERIOD_TEXTS.get(key)
    if text is None:
        if len(_PERIOD_TEXTS) >= 1024:  # many distinct periods: keep it bounded
            _PERIOD_TEXTS.clear()
        text = _PERIOD_TEXTS[key] = str(period)
    return text


_EMPTY_FEATURES_HASH = features_hash({})


_FEATURE_HASHES: dict[tuple, bytes] = {}


def _features_hash_of(feats: Mapping[str, Any]) -> bytes:
    """``features_hash``, computed once per distinct feature map (a bulk add's series
    share a few: one SHA-256 and a sort each cost more than the key below)."""
    if not feats:
        return _EMPTY_FEATURES_HASH
    # Keyed by each value's type and exact value: 1, 1.0 and True differ, and a float by
    # its bits (0.0 and -0.0 compare equal; NaNs all hash alike, as features_hash has it).
    # Only plain values are keyed (what validate_features gives); anything else is hashed.
    key = []
    for k, v in feats.items():
        t = type(v)
        if t is float:
            key.append((k, t, v.hex()))
        elif t is int or t is str or t is bool:
            key.append((k, t, v))
        else:
            return features_hash(feats)
    found = _FEATURE_HASHES.get(tuple(key))
    if found is None:
        found = features_hash(feats)
        if len(_FEATURE_HASHES) >= 4096:
            _FEATURE_HASHES.clear()
        _FEATURE_HASHES[tuple(key)] = found
    return found


def _check_calendar_windows(row: SeriesRow, res, itv, h: int, steps: int, count: int) -> None:
    """A view's window j steps from its own issue time; on a calendar grid whose day of month
    is clamped (anchored on the 29th-31st) that can name other dates than the source's own
    timestamps, so such a view is refused rather than mislabelling values."""
    if not res.calendar:
        return
    source = grid(row.initial_ms, res, row.length)
    for j in range(1, count):
        issue = step(row.initial_ms, itv, j)
        if not np.array_equal(grid(issue, res, h), source[j * steps : j * steps + h]):
            raise InvalidParameterError(
                f"cannot derive a DeterministicSingleTimeSeries of {row.label} at resolution "
                f"{res} with interval {itv}: the source grid starts on day "
                f"{ms_to_rfc3339(row.initial_ms)[8:10]} of its month, which shorter months clamp, "
                f"so window {j} would put the source's values under other dates. Anchor the "
                "series on a day every month has (1-28), or store it as a NonSequentialTimeSeries.",
                series=row.label,
            )


def _materialize_windows(src: np.ndarray, res, hor, itv, count: int) -> np.ndarray:
    """The ``[H, count, *E]`` window array a DeterministicSingleTimeSeries reads as."""
    h = divide(hor, res, what="horizon")
    steps = divide(itv, res, what="interval") if itv.is_positive else 0
    idx = np.arange(h)[:, None] + steps * np.arange(count)[None, :]
    return np.ascontiguousarray(src[idx])


__all__ = ["DEFAULT_TIMEOUT", "Store", "catalog_path"]


def _method_signature(fn: Any, *, filters: bool) -> inspect.Signature:
    """``fn(store, …)``'s signature as a Store method's (``self`` for ``store``), so that
    ``help(Store.export_sqlite)`` shows the keywords the delegate takes."""
    sig = inspect.signature(fn)
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    sig = sig.replace(parameters=[self_param, *list(sig.parameters.values())[1:]])
    return filter_signature(sig) if filters else sig


def _delegate_signatures(export_sqlite: Any, import_sqlite: Any) -> None:
    # Called by the package root once the container is loaded: the store does not import
    # the interchange layer (docs/architecture.md), so it is handed the functions.
    Store.export_sqlite.__signature__ = _method_signature(export_sqlite, filters=True)  # type: ignore[attr-defined]
    Store.import_sqlite.__signature__ = _method_signature(import_sqlite, filters=False)  # type: ignore[attr-defined]
