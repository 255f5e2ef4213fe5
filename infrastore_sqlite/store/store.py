"""The embedded store: ``Store.create`` / ``Store.open`` and everything they offer.

A store is one directory: ``<path>/catalog.sqlite`` (the catalog, the transactional half)
and ``<path>/segments/*.h5`` (the arrays, in immutable HDF5 segment files; see
``segments.py`` for why and how). A write transaction writes its new arrays into one new
segment, makes it durable, and only then commits the catalog rows that point at it, so a
failed or killed write leaves the store at its last committed state.

:class:`Store` is the facade with the reference's names and signatures; its work lives
in rooms named for what they do, one collaborator each, so every method here says which
one does it. ``Store.__init__`` is the composition root: it builds nothing but the rooms,
each handed the one shared :class:`~.state.StoreState` and the rooms it calls, and no
room holds the facade:

* ``lifecycle`` — create, open (converting the earlier two-file layout), close;
* ``self._transactions`` (``transactions.Transactions``) — the write transactions, and
  sealing, merging and rewriting segments;
* ``self._writing`` (``writing.Writing``) — adds, replacements and removals: catalog
  rows and new arrays (what a series becomes first is ``prepare``'s, which touches
  nothing), and :meth:`Store.insert_all`, the import's door (``conflicts``' policy);
* ``self._reading`` (``reading.Reading``) — where arrays are, batched reads, series
  objects;
* ``self._queries`` (``queries.Queries``) — catalog rows, metadata and counts;
* ``self._maintenance`` (``maintenance.Maintenance``) — compact, transform,
  settings and size;
* ``damage`` and ``repair`` — a damaged store diagnosed (``verify_integrity``,
  ``diagnose``) and repaired (``repair``);
* :class:`~.api.StoreApi` (the base class) — the reference's members built on the
  public ones here (discovery, summaries, readers, copies).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..model import OwnerCategory, Series
from . import damage, lifecycle, repair
from .api import StoreApi, Transaction
from .catalog import Catalog
from .conflicts import Filed, IdsMet, OnConflict
from .lifecycle import DEFAULT_TIMEOUT, catalog_path
from .maintenance import Maintenance
from .prepare import ARRAY_FIELDS, Prepared, array_values, series_label
from .queries import Queries
from .reading import DEFAULT_BATCH_BYTES, Reading
from .rows import SeriesRow, filter_keywords
from .segments import Segments
from .state import StoreState
from .tracing import LOG
from .transactions import Transactions
from .writing import Writing

if TYPE_CHECKING:
    # Type names only: the container methods below load the interchange when called.
    from ..interchange.importing import ImportReport
    from ..interchange.options import ExportOptions, ImportOptions
    from ..interchange.plan_types import ExportSummary


class Store(StoreApi):
    """A content-addressed time-series store (HDF5 segments + SQLite catalog).

    Use :meth:`create` or :meth:`open`; the constructor is not public.
    """

    def __init__(self, state: StoreState) -> None:
        # The composition root: the one shared state, and each room handed the state and
        # the rooms it works through (each only rooms placed before it in
        # tests/test_layers.py's ROOM_ORDER). No room holds this facade.
        self._state = state
        self._transactions = Transactions(state)
        self._queries = Queries(state)
        self._reading = Reading(state, self._queries)
        self._writing = Writing(state, self._queries, self._transactions)
        self._maintenance = Maintenance(state, self._queries, self._transactions, self._writing)

    @property
    def path(self) -> Path:
        """The store directory."""
        return self._state.path

    @property
    def migrated_from(self) -> int | None:
        """The catalog schema revision this open found and migrated from in its one
        transaction (an older release's store opened for writing); None when the
        catalog was current."""
        return self._state.catalog.migrated_from

    # The catalog and segments, for the tests that inspect or damage them on purpose.
    @property
    def _catalog(self) -> Catalog:
        return self._state.catalog

    @property
    def _segments(self) -> Segments | None:
        return self._state.segments

    @property
    def _scratch(self) -> Path | None:
        return self._state.scratch

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
        return cls(
            lifecycle.create_state(
                path,
                in_memory=in_memory,
                compression=compression,
                compression_level=compression_level,
                shuffle=shuffle,
                catalog=catalog,
                overwrite=overwrite,
                timeout=timeout,
            )
        )

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
        return cls(
            lifecycle.open_state(path, read_only=read_only, catalog=catalog, timeout=timeout)
        )

    def close(self) -> None:
        """Close the store (anything uncommitted is rolled back). Safe to call twice."""
        lifecycle.close_store(self._state, self._transactions)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        # The reference's spelling: the path unquoted, and ', closed' once closed.
        state = self._state
        where = "in-memory" if state.scratch is not None else str(state.path)
        closed = ", closed" if state.closed else ""
        return f"Store({where}, read_only={state.read_only}{closed})"

    @property
    def read_only(self) -> bool:
        return self._state.read_only

    def check_writable(self) -> None:
        """Refuse a write: ReadOnlyStoreError on a read-only store, InvalidParameterError
        on a closed one (what an import checks before it reads its file)."""
        self._state.check_writable()

    def check_open(self) -> None:
        """Refuse any use of a closed store (InvalidParameterError)."""
        self._state.check_open()

    def disk_usage(self) -> dict[str, int]:
        """Bytes on disk: ``hdf5_bytes`` (the segments) and ``catalog_bytes`` (with its WAL)."""
        return self._maintenance.disk_usage()

    # ------------------------------------------------------------------ transactions
    def transaction(self) -> Transaction:
        """All or nothing for everything inside the block; blocks nest.

        ``with store.transaction() as s`` binds the store to ``s``; the returned object can
        be entered more than once (as in the reference).
        """
        return Transaction(self, self._transactions.block)

    def begin_transaction(self) -> None:
        """Begin a transaction that :meth:`commit_transaction` or :meth:`rollback_transaction` ends."""
        self._transactions.begin()

    def commit_transaction(self) -> None:
        self._transactions.commit()

    def rollback_transaction(self) -> None:
        self._transactions.rollback()

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (a property, as in the reference)."""
        return self._state.catalog.in_transaction

    # ------------------------------------------------------------------ adding
    def add_time_series(
        self,
        owner_id: int,
        owner_type: str,
        owner_category: OwnerCategory | str,
        time_series: Series,
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
        return self._writing.add_one(owner_id, owner_type, owner_category, time_series, features)

    def add_time_series_bulk(self, items: Iterable[Mapping[str, Any]]) -> list[int]:
        """Add many series in one all-or-nothing transaction; returns ids in input order.

        Each item is a dict with ``owner_id``, ``owner_type``, ``owner_category``,
        ``time_series`` and optionally ``features``.
        """
        return self._writing.add_bulk(items)

    def insert_all(
        self,
        items: Sequence[Prepared],
        *,
        on_conflict: OnConflict = "error",
        filed: IdsMet | None = None,
    ) -> Filed:
        """File prepared series into the store under one conflict rule: the one door an
        import comes in by (as sqlite-utils' ``insert_all(replace=, ignore=)``).

        A series is *the same series* as a stored one when its identity matches: owner
        id and category, type, name, resolution, interval and features. Runs in the
        caller's transaction when one is open (an import opens one per partition), else
        in its own, all or nothing.

        Parameters
        ----------
        items
            Prepared series (:class:`~infrastore_sqlite.store.prepare.Prepared`, from
            :func:`~infrastore_sqlite.store.prepare.prepare` or
            :func:`~infrastore_sqlite.store.prepare.row_for`), in the order the outcomes
            are reported.
        on_conflict
            What to do with an item whose series the store holds: ``"error"`` refuses it
            (DuplicateTimeSeriesError, naming the keywords that would file it),
            ``"replace"`` updates the stored row in place (it keeps its id; ``unchanged``
            when the content is already identical), ``"ignore"`` leaves the stored one
            (``skipped``).
        filed
            Catalog ids this import already met; an item of one of those identities is a
            second row of the file for one series, refused whatever ``on_conflict`` says.
            Updated in place with the ids filed here.

        Returns
        -------
        Filed
            ``outcomes`` (``added``, ``replaced``, ``unchanged`` or ``skipped``) and
            ``ids`` (catalog ids), one per item, in order; ``counts()`` tallies them.

        Raises
        ------
        DuplicateTimeSeriesError
            An item the store holds under ``on_conflict="error"``, or two items (or an
            item and an earlier filed one) of one identity.
        InvalidParameterError
            An ``on_conflict`` that is none of the three.
        ReadOnlyStoreError
            The store is open read-only.
        """
        return self._writing.insert_all(items, on_conflict, filed)

    def held_rows(self, items: Sequence[Prepared]) -> dict[tuple, dict[str, Any]]:
        """The stored rows of the series ``items`` name, by identity (what a dry run and
        ``diff`` compare a file's series with).

        Parameters
        ----------
        items
            Prepared series (as :meth:`insert_all` takes them).

        Returns
        -------
        dict
            ``identity -> {"id": …, column: value}`` (the columns of
            :data:`~infrastore_sqlite.store.conflicts.COMPARED_COLUMNS`) for each item
            whose series the store holds; the identity is
            :func:`~infrastore_sqlite.store.conflicts.identity` of its row.
        """
        return self._writing.held_rows(items)

    # ------------------------------------------------------------------ listing
    @filter_keywords
    def select_rows(self, *, ids: Sequence[int] | None = None, **filters: Any) -> list[SeriesRow]:
        """Catalog rows matching the ``list_metadata`` filters, in id order; with ``ids``,
        only those of them (missing ids are left out)."""
        return self._queries.select_rows(ids, **filters)

    @filter_keywords
    def iter_select_rows(
        self, *, ids: Sequence[int] | None = None, **filters: Any
    ) -> Iterator[SeriesRow]:
        """``select_rows`` streamed: one row at a time, in id order."""
        return self._queries.iter_select_rows(ids, **filters)

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
            Only these series ids (any order; missing ones are left out), among the
            rows ``filters`` select.
        **filters
            ``list_metadata``'s keywords.
        """
        return self._queries.iter_select_fields(fields, ids, **filters)

    def typed_features(self, features_hash: bytes) -> dict[str, Any]:
        """The feature map of ``features_hash`` with its ±inf values (the JSON has null)."""
        return self._queries.typed_features(features_hash)

    @filter_keywords
    def list_metadata(self, **filters: Any) -> list[dict[str, Any]]:
        """Metadata dicts of the series matching the filters (the reference's keywords)."""
        return self._queries.list_metadata(**filters)

    def get_metadata_by_id(self, id: int) -> dict[str, Any] | None:
        """The metadata row of ``id`` (with timestamps for irregular series), or None."""
        return self._reading.get_metadata_by_id(id)

    def list_metadata_by_ids(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        """``list_metadata`` dicts for ``ids``, in the order given; NotFoundError if one is missing."""
        return self._queries.list_metadata_by_ids(ids)

    def rows_by_ids(self, ids: Sequence[int]) -> list[SeriesRow]:
        """Rows for ``ids`` in the order given; NotFoundError names any missing id."""
        return self._queries.rows_by_ids(ids)

    def is_empty(self) -> bool:
        return self._queries.is_empty()

    def num_distinct_arrays(self) -> int:
        return self._queries.num_distinct_arrays()

    def counts_by_type(self) -> dict[str, int]:
        return self._queries.counts_by_type()

    def series_tally(self) -> dict[str, Any]:
        """Series, owners and series per time reference, counted in the catalog."""
        return self._queries.series_tally()

    # ------------------------------------------------------------------ reading
    def iter_arrays(
        self,
        rows: Sequence[SeriesRow],
        *,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        with_timestamps: bool = True,
    ) -> Iterator[list[tuple[SeriesRow, np.ndarray, np.ndarray | None]]]:
        """Yield ``(row, stored array, timestamps)`` for ``rows`` a bounded batch at a time.

        Each distinct array is read once per batch and dropped when the batch is done,
        so memory follows ``batch_bytes``, not the selection. Rows come back in the
        order given. The array is the stored (composite: minimal-width) form.
        """
        return self._reading.iter_arrays(
            rows, batch_bytes=batch_bytes, with_timestamps=with_timestamps
        )

    def read_by_ids(
        self,
        ids: Sequence[int],
        *,
        start_time: datetime | None = None,
        len: int | None = None,
        count: int | None = None,
    ) -> list[Series]:
        """Read many series by id, in the order given (repeats read once, returned in place)."""
        return self._reading.read_by_ids(ids, start_time=start_time, len=len, count=count)

    def read_by_id(
        self,
        id: int,
        *,
        start_time: datetime | None = None,
        len: int | None = None,
        count: int | None = None,
        owner_id: int | None = None,
        owner_category: OwnerCategory | str | None = None,
    ) -> Series:
        """Read one series (or the window ``start_time``/``len``/``count`` names).

        ``owner_id`` with ``owner_category`` (both or neither) guard the read: a series of
        another owner raises :class:`OwnerMismatchError` instead of being returned.
        """
        return self._reading.read_by_id(
            id,
            start_time=start_time,
            len=len,
            count=count,
            owner_id=owner_id,
            owner_category=owner_category,
        )

    def read_by_ids_range(
        self, ids: Sequence[int], time_range: tuple[datetime, datetime]
    ) -> list[Series]:
        """Read many series, each clipped to the half-open ``time_range`` (start, end)."""
        return self._reading.read_by_ids_range(ids, time_range)

    # ------------------------------------------------------------------ removing
    def remove_by_ids(
        self,
        ids: Sequence[int],
        *,
        owner_id: int | None = None,
        owner_category: OwnerCategory | str | None = None,
    ) -> int:
        """Remove series by id, all or nothing; returns how many were removed."""
        return self._writing.remove_by_ids(ids, owner_id, owner_category)

    @filter_keywords
    def remove_by_filter(self, **filters: Any) -> int:
        """Remove every series matching the filters, all or nothing; returns the count."""
        return self._writing.remove_by_filter(filters)

    # ------------------------------------------------------------------ maintenance
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
        return self._maintenance.transform(
            horizon, interval, owner_category=owner_category, resolution=resolution
        )

    def verify_integrity(self, *, progress: Any = None) -> dict[str, Any]:
        """Check every segment file, every array against its hash and the catalog.

        Parameters
        ----------
        progress
            Optional ``progress(done, total)`` callable, counted in arrays.

        Returns
        -------
        dict
            ``{"ok": bool, "errors": [str, ...]}``, as the reference returns; one line per
            problem (:meth:`diagnose` has the same findings as structured fields).
        """
        return damage.verify(self._state, progress)

    def diagnose(self, *, progress: Any = None) -> damage.Diagnosis:
        """What is damaged in the store, and which series lost data. Never writes.

        Parameters
        ----------
        progress
            Optional ``progress(done, total)`` callable, counted in arrays.

        Returns
        -------
        Diagnosis
            ``ok``; ``segments``: each damaged segment file with what is wrong
            (``missing``, ``truncated``, ``unreadable``, ``dataset missing``, ``hash
            mismatch``) and how many of its arrays are lost; ``series_lost``: every series
            that lost data (id, owner, type, name, files); ``catalog``: SQLite's integrity
            check of the catalog; ``errors``: one line per problem; ``as_dict()`` gives
            it all as JSON types.
        """
        return damage.diagnose(self._state, progress)

    def repair(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Set damaged segments aside, salvage what still reads, drop the lost series.

        One write transaction (all or nothing, under the write lock): every array of a
        damaged segment that reads and re-hashes to its key is copied into a new segment;
        the series whose data is lost are removed from the catalog; the damaged files are
        moved into ``<store>/damaged-<UTC time>/``. ``diagnose`` passes afterwards.

        Parameters
        ----------
        dry_run
            Report what would be kept and lost; change nothing.

        Returns
        -------
        dict
            ``set_aside`` (files), ``folder``, ``series_kept``, ``series_lost`` (id,
            owner, type, name of each), ``arrays_lost``, ``arrays_salvaged``,
            ``restore`` (how to add the lost series back from an export).
        """
        return repair.repair(
            self._state,
            queries=self._queries,
            transactions=self._transactions,
            writing=self._writing,
            dry_run=dry_run,
        )

    @staticmethod
    def repair_catalog(
        path: str | Path, *, dry_run: bool = False, timeout: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        """Repair the store in the directory ``path``, whatever state its catalog is in,
        even one no open can read (what the command line's ``repair`` runs).

        A stray rollback journal beside the catalog is set aside (moved, not deleted). A
        catalog that cannot be opened (missing, emptied, headerless, without the store's
        tables, unreadable) is rebuilt from the records its segments keep: every series
        whose arrays are intact comes back with its id, and the old catalog is moved
        into ``<store>/damaged-<UTC time>/``, never deleted. Otherwise the store is
        opened and :meth:`repair` runs (which rebuilds a stale catalog, or one damaged
        beyond its indexes, too). Nothing else may have the store open.

        Parameters
        ----------
        path
            The store directory.
        dry_run
            Report what would be done; change nothing.
        timeout
            Seconds to wait for another process's write, as in :meth:`open`.

        Returns
        -------
        dict
            :meth:`repair`'s report; ``catalog_rebuilt`` says how the catalog was rebuilt
            (``from`` ``"segments"``: ``series``, ``transactions`` replayed, ``gaps`` in
            the records, files ``moved`` back; ``"tables"``: ``rows_copied``).

        Raises
        ------
        IntegrityError
            The catalog cannot be opened and the segments hold no record of the store's
            history to rebuild it from; nothing was changed.
        """
        where = Path(path)
        return repair.repair_directory(
            where,
            dry_run=dry_run,
            open_store=lambda read_only: Store.open(where, read_only=read_only, timeout=timeout),
        )

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
        return self._maintenance.write_buffer_bytes()

    @write_buffer_bytes.setter
    def write_buffer_bytes(self, value: int) -> None:
        self._maintenance.set_write_buffer_bytes(value)

    @property
    def compression(self) -> str:
        """The HDF5 filter new arrays get: ``none`` or ``deflate:<level>:<shuffle|noshuffle>``."""
        return self._maintenance.compression()

    def get_compression(self) -> dict[str, Any]:
        """The HDF5 filter new arrays get, in the reference's shape:
        ``{"compression": "auto" | "deflate" | "none", "level": int | None, "shuffle": bool}``
        (``auto``: the level and shuffle of the integer and bool arrays; floats are stored
        uncompressed)."""
        return self._maintenance.get_compression()

    def compact(self) -> dict[str, int]:
        """Rewrite the live arrays into one segment, reclaiming removed arrays' space.

        Like every write it is one transaction: a failure leaves the store as it was.
        The keys come in the reference's order (callers print or compare the dict).
        """
        return self._maintenance.compact()

    # ------------------------------------------------------------------ arrays, owners, attributes
    def count_array_references(self, data_hash: str) -> dict[str, Any]:
        """How many series point at a stored array: ``sts`` (stored series of any type)
        and ``dst`` (forecast views derived from a SingleTimeSeries)."""
        return self._queries.count_array_references(data_hash)

    def get_array_by_hash(self, data_hash: str) -> np.ndarray:
        """The stored array with this ``data_hash`` (hex), as a fresh copy.

        Raises
        ------
        NotFoundError
            The store holds no array with that hash.
        """
        return self._reading.array_by_hash(data_hash)

    def replace_owner(
        self, old_owner: int, new_owner: int, owner_category: OwnerCategory | str
    ) -> int:
        """Move every series of owner ``old_owner`` (of the category) to ``new_owner``;
        returns how many moved. All or nothing: a series the new owner already has
        (same identity) refuses the whole move."""
        return self._writing.replace_owner(old_owner, new_owner, owner_category)

    def association_exists(self, id: int) -> bool:
        """Whether a series with this id is stored."""
        return self._queries.exists(id)

    def set_store_attribute(self, key: str, value: str) -> None:
        """Record a free-form ``key`` → ``value`` pair with the store (replacing one)."""
        self._writing.set_store_attribute(key, value)

    def get_store_attribute(self, key: str) -> str | None:
        """The value recorded for ``key``, or None."""
        return self._queries.store_attribute(key)

    def list_store_attributes(self) -> dict[str, str]:
        """Every recorded attribute, by key."""
        return self._queries.store_attributes()

    def remove_store_attribute(self, key: str) -> bool:
        """Forget ``key``; returns whether it was recorded."""
        return self._writing.remove_store_attribute(key)

    @property
    def catalog(self) -> str:
        """``"memory"`` for an ``in_memory`` store (gone on close), else ``"attached"``."""
        return self._maintenance.catalog_kind()

    def persist_to(self, path: str | Path) -> None:
        """Write a complete, independent copy of the store (its last commit) to the
        directory ``path``, replacing a store there; it is built under a work name and
        renamed into place, so a failure leaves no half-written store.

        Raises
        ------
        InvalidParameterError
            A transaction is open, or ``path``'s directory does not exist.
        """
        self._maintenance.persist_to(path)

    # ------------------------------------------------------------------ arrays by key
    # What the readers (``readers.py``) and the export's plan call once per batch.
    def load_arrays(
        self, keys: Iterable[tuple[bytes, str]], *, part: tuple = ()
    ) -> dict[tuple[bytes, str], np.ndarray]:
        """The stored arrays of ``keys`` (``(hash, kind)``), each read once and checked.

        Parameters
        ----------
        keys
            ``(hash, "data" | "timestamps")`` pairs the catalog holds.
        part
            An index into each array (a reader's one step), else the whole array.

        Raises
        ------
        DamagedStoreError
            An array is missing or does not match its hash; names the series.
        """
        return self._reading.load(keys, part)

    def array_locations(self, keys: Iterable[tuple[bytes, str]]) -> dict[tuple[bytes, str], tuple]:
        """Where each of ``keys`` is stored: ``(segment, pool, slot, dtype, shape)``;
        DamagedStoreError names the series of a key the catalog does not hold."""
        return self._reading.locations(keys)

    # ------------------------------------------------------------------ interchange
    # The reference's API, so methods of the store, though the container is a layer above:
    # each imports it when called, so loading the store never loads the interchange layer
    # (docs/architecture.md, "The calls that point up").
    @filter_keywords
    def export_sqlite(
        self,
        path: str | Path,
        *,
        table_prefix: str = "",
        time_range: tuple[datetime, datetime] | None = None,
        include_derived: bool = False,
        ids: Sequence[int] | None = None,
        dry_run: bool = False,
        overwrite: bool = False,
        progress: Callable[[int, int], None] | None = None,
        provenance: Literal["name", "full"] = "name",
        options: ExportOptions | None = None,
        **filters: Any,
    ) -> ExportSummary:
        """Export the selection to the SQLite interchange layout; see
        :func:`infrastore_sqlite.interchange.sqlite.export_sqlite`.

        ``ids`` keeps only the series of those catalog ids among those the filters select
        (an id the store does not hold is refused). ``options`` (an
        :class:`~infrastore_sqlite.interchange.options.ExportOptions`) holds the selection,
        ``dry_run``, ``overwrite`` and ``progress`` as one value, instead of those
        keywords."""
        from ..interchange.sqlite import export_sqlite

        LOG.info("exporting from the store %s to %s", self.path, path)
        return export_sqlite(
            self,
            path,
            table_prefix=table_prefix,
            time_range=time_range,
            include_derived=include_derived,
            ids=ids,
            dry_run=dry_run,
            overwrite=overwrite,
            progress=progress,
            provenance=provenance,
            options=options,
            **filters,
        )

    @filter_keywords
    def export_parquet(
        self,
        dir: str | Path,
        *,
        time_range: tuple[datetime, datetime] | None = None,
        include_derived: bool = False,
        ids: Sequence[int] | None = None,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        overwrite: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        jobs: int = 1,
        options: ExportOptions | None = None,
        **filters: Any,
    ) -> list[dict[str, Any]]:
        """Export the selection as Parquet files in ``dir`` (three per partition); see
        :func:`infrastore_sqlite.interchange.parquet.export_parquet`. Needs pyarrow
        (``pip install 'infrastore-sqlite[parquet]'``).

        ``dir`` is a local directory or an object-storage prefix (``s3://``, ``gs://``,
        ``az://``, ``abfs://``, ``file://``; needs ``pip install 'infrastore-sqlite[cloud]'``),
        with client options in ``storage_options`` (Polars' names). ``overwrite=True``
        replaces files already there; ``jobs=N`` writes partitions from N processes;
        ``ids`` keeps only the series of those catalog ids (as for :meth:`export_sqlite`);
        ``options`` holds the selection, ``dry_run``, ``overwrite`` and ``progress`` as
        one value."""
        from ..interchange.parquet import export_parquet

        return export_parquet(
            self,
            dir,
            time_range=time_range,
            include_derived=include_derived,
            ids=ids,
            dry_run=dry_run,
            progress=progress,
            overwrite=overwrite,
            storage_options=storage_options,
            jobs=jobs,
            options=options,
            **filters,
        )

    def import_parquet(
        self,
        path: str | Path,
        *,
        skip_checksum: bool = False,
        on_conflict: Literal["error", "replace", "ignore"] = "error",
        overrides: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        per_partition: bool = False,
        diff: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        max_array_bytes: int | None = None,
        max_cell_bytes: int | None = None,
        options: ImportOptions | None = None,
    ) -> ImportReport:
        """Import Parquet files (a directory, a file or a partition stem, local or an
        object-storage URI with ``storage_options=``); see
        :func:`infrastore_sqlite.interchange.parquet.import_parquet`. Needs pyarrow.

        Returns the :class:`~infrastore_sqlite.interchange.importing.ImportReport`,
        whatever the flags: the list of the ids committed, with the report beside it."""
        from ..interchange.parquet import import_parquet

        return import_parquet(
            self,
            path,
            skip_checksum=skip_checksum,
            on_conflict=on_conflict,
            overrides=overrides,
            dry_run=dry_run,
            progress=progress,
            per_partition=per_partition,
            diff=diff,
            storage_options=storage_options,
            max_array_bytes=max_array_bytes,
            max_cell_bytes=max_cell_bytes,
            options=options,
        )

    def import_sqlite(
        self,
        path: str | Path,
        *,
        table_prefix: str = "",
        skip_checksum: bool = False,
        dry_run: bool = False,
        overrides: Mapping[str, Any] | None = None,
        per_partition: bool = False,
        on_conflict: Literal["error", "replace", "ignore"] = "error",
        progress: Callable[[int, int], None] | None = None,
        diff: bool = False,
        max_array_bytes: int | None = None,
        max_cell_bytes: int | None = None,
        options: ImportOptions | None = None,
    ) -> ImportReport:
        """Import an interchange database; see
        :func:`infrastore_sqlite.interchange.sqlite.import_sqlite`.

        Returns the :class:`~infrastore_sqlite.interchange.importing.ImportReport`,
        whatever the flags: the list of the ids committed (what the reference returns),
        with the report beside it."""
        from ..interchange.sqlite import import_sqlite

        LOG.info("importing %s into the store %s", path, self.path)
        return import_sqlite(
            self,
            path,
            table_prefix=table_prefix,
            skip_checksum=skip_checksum,
            dry_run=dry_run,
            overrides=overrides,
            per_partition=per_partition,
            on_conflict=on_conflict,
            progress=progress,
            diff=diff,
            max_array_bytes=max_array_bytes,
            max_cell_bytes=max_cell_bytes,
            options=options,
        )

    def diff_parquet(
        self,
        path: str | Path,
        *,
        overrides: Mapping[str, Any] | None = None,
        progress: Callable[[int, int], None] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        max_array_bytes: int | None = None,
        max_cell_bytes: int | None = None,
        options: ImportOptions | None = None,
    ) -> list[dict[str, Any]]:
        """What importing Parquet files (local, or an object-storage URI with
        ``storage_options=``) would change; see
        :func:`infrastore_sqlite.interchange.parquet.diff_parquet`."""
        from ..interchange.parquet import diff_parquet

        return diff_parquet(
            self,
            path,
            overrides=overrides,
            progress=progress,
            storage_options=storage_options,
            max_array_bytes=max_array_bytes,
            max_cell_bytes=max_cell_bytes,
            options=options,
        )

    def diff_sqlite(
        self,
        path: str | Path,
        *,
        table_prefix: str = "",
        overrides: Mapping[str, Any] | None = None,
        progress: Callable[[int, int], None] | None = None,
        max_array_bytes: int | None = None,
        max_cell_bytes: int | None = None,
        options: ImportOptions | None = None,
    ) -> list[dict[str, Any]]:
        """What importing an interchange database would change; see
        :func:`infrastore_sqlite.interchange.sqlite.diff_sqlite`."""
        from ..interchange.sqlite.diff import diff_sqlite

        return diff_sqlite(
            self,
            path,
            table_prefix=table_prefix,
            overrides=overrides,
            progress=progress,
            max_array_bytes=max_array_bytes,
            max_cell_bytes=max_cell_bytes,
            options=options,
        )


__all__ = [
    "ARRAY_FIELDS",
    "DEFAULT_TIMEOUT",
    "Store",
    "array_values",
    "catalog_path",
    "series_label",
]
