"""Writing the catalog and the arrays: adds, replacements and removals.

:class:`Writing` is the store's collaborator for every write of series: it files
prepared items (``prepare.py``) as catalog rows (``time_series_associations``,
``feature_maps``, ``feature_sets``) and their new arrays into the running transaction's
segment (``arrays``), replaces rows in place (an import's ``on_conflict="replace"``) and
removes rows, keeping the family rule (a Deterministic and a DeterministicSingleTimeSeries
exclude each other) and the derived forecasts' backing arrays. It runs inside the
transaction the store opens (``transactions.py``); it never commits.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np

from ..core.gcpause import gc_paused
from ..core.hashing import features_json
from ..errors import (
    REMOVE,
    TRANSFORM,
    DuplicateTimeSeriesError,
    InvalidParameterError,
)
from ..model import OwnerCategory, TimeSeriesType
from . import journal
from .api import check_attribute_key, series_id
from .arrays import pool_name
from .conflicts import (
    COMPARED_COLUMNS,
    Filed,
    IdsMet,
    OnConflict,
    changed_columns,
    check_on_conflict,
    conflict_error,
    identity,
    listed_twice,
)
from .prepare import (
    ARRAY_ID_COLUMNS,
    DATA_AT,
    IDENTITY_COLUMNS,
    INSERT_COLUMNS,
    STORED_COLUMNS,
    TIMESTAMPS_AT,
    CatalogRow,
    Prepared,
    dtype_of,
    hash_sql,
    id_sql,
    prepare_bulk,
    shape_json,
)
from .queries import check_owner
from .rowcheck import CHECK_COLUMN, RowChecker, row_checks
from .rows import SeriesRow, feature_rows
from .tracing import LOG

if TYPE_CHECKING:
    from .queries import Queries
    from .state import StoreState
    from .transactions import Transactions


#: A catalog row's insert, its values a :class:`CatalogRow` (the arrays by hash: each
#: looked up for its id; an add's rows go by ``_INSERT_CHECKED`` instead).
_INSERT_ROW = (
    f"INSERT INTO time_series_associations ({', '.join(STORED_COLUMNS)}) VALUES ("
    + ", ".join(
        id_sql(s) if s != c else "?" for s, c in zip(STORED_COLUMNS, INSERT_COLUMNS, strict=True)
    )
    + ")"
)

#: A row as stored: its series id (known beforehand), :data:`STORED_COLUMNS` (the arrays
#: by id) and its checksum (:mod:`.rowcheck`).
_INSERT_CHECKED = (
    f"INSERT INTO time_series_associations (id, {', '.join(STORED_COLUMNS)}, {CHECK_COLUMN}) "
    f"VALUES ({', '.join('?' * (len(STORED_COLUMNS) + 2))})"
)


#: An array's catalog row: its id, key, dtype, shape and place (:meth:`Writing.store_arrays`).
_INSERT_ARRAY = (
    "INSERT INTO arrays (id, hash, kind, dtype, shape, pool, slot, segment) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
#: Bytes of arrays handed to the segment writer at once (its queue holds
#: ``write_buffer_bytes``, 16 MiB by default: a few parts run ahead of it).
WRITE_PART_BYTES = 4 * 1024 * 1024
_FIRST = operator.itemgetter(0)
_add = operator.add
_SECOND = operator.itemgetter(1)


class Writing:
    """Files, replaces and removes series rows and their arrays (see the module docstring)."""

    __slots__ = ("_queries", "_state", "_transactions")

    def __init__(self, state: StoreState, queries: Queries, transactions: Transactions) -> None:
        self._state = state
        self._queries = queries
        self._transactions = transactions

    def add_bulk(self, items: Iterable[Mapping[str, Any]]) -> list[int]:
        """:meth:`Store.add_time_series_bulk`: every item prepared, then filed in one
        transaction; returns the new ids in input order."""
        self._state.check_writable()
        # A few dicts per series and no cycles: the collector would only rescan them.
        with gc_paused():
            prepared = prepare_bulk(items)
            LOG.debug("adding %d series to the store %s", len(prepared), self._state.path)
            with self._transactions.block():
                ids = self.insert_prepared(prepared, grow_cache=True, write_back=True)
            # Freed before the collector is back: what it would scan first on waking
            # (a full pass at 300,000 series, ~0.25 s) is then gone.
            del prepared
        return ids

    def add_one(
        self,
        owner_id: int,
        owner_type: str,
        owner_category: Any,
        time_series: Any,
        features: Mapping[str, Any] | None,
    ) -> int:
        """``Store.add_time_series``: one series added as a bulk of one; its new id."""
        item = {
            "owner_id": owner_id,
            "owner_type": owner_type,
            "owner_category": owner_category,
            "time_series": time_series,
            "features": features,
        }
        return self.add_bulk([item])[0]

    def insert_prepared(
        self, prepared: list[Prepared], *, grow_cache: bool = False, write_back: bool = False
    ) -> list[int]:
        """Prepared items filed in the running transaction: their new arrays, new feature
        maps, then their catalog rows (:meth:`_insert_rows`); returns the new ids in order.
        ``grow_cache`` and ``write_back``: see :meth:`store_arrays` (a bulk add's, not an
        import's)."""
        if not prepared:
            return []
        array_ids = self.store_arrays(
            _array_entries(prepared), grow_cache=grow_cache, write_back=write_back
        )
        cat = self._state.catalog
        features = {p.row.features_hash: p.features for p in prepared}
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
        return self._insert_rows(prepared, array_ids)

    def held_rows(self, items: Sequence[Prepared]) -> dict[tuple, dict[str, Any]]:
        """The stored catalog row (``id`` and ``COMPARED_COLUMNS``) of every item whose
        identity the store already holds, by identity."""
        self._state.check_open()
        if not self._queries.holds_series():
            return {}  # an empty store (the usual first import) holds none: nothing to look up
        keys = list(dict.fromkeys(identity(p.row) for p in items))
        return self.rows_by_identity(keys, COMPARED_COLUMNS)

    def insert_all(
        self,
        items: Sequence[Prepared],
        on_conflict: OnConflict,
        filed: IdsMet | None,
    ) -> Filed:
        """``Store.insert_all``: prepared items filed under ``on_conflict``, in the
        running transaction or a block of their own (see ``conflicts.py`` for the policy)."""
        check_on_conflict(on_conflict)
        self._state.check_writable()
        with self._transactions.block():
            return self._file(items, on_conflict, filed)

    def _file(
        self, items: Sequence[Prepared], on_conflict: OnConflict, filed: IdsMet | None
    ) -> Filed:
        filed = set() if filed is None else filed
        within: set[tuple] = set()
        for p in items:
            ident = identity(p.row)
            if ident in within:
                raise listed_twice(p.label)
            within.add(ident)
        stored = self.held_rows(items)
        if not stored:
            # The store holds none of them: each is added (two of one identity among them
            # are refused by the catalog's unique index, as one by one).
            out = Filed(["added"] * len(items), self.insert_prepared(list(items)))
            filed.update(out.ids)
            return out
        outcomes: list[str] = []
        ids: list[int | None] = []
        new: list[Prepared] = []
        replacing: list[tuple[int, Prepared]] = []
        for p in items:
            row = p.row
            held = stored.get(identity(row))
            if held is None:
                outcomes.append("added")
                ids.append(None)
                new.append(p)
                continue
            if held["id"] in filed:
                raise listed_twice(p.label)
            if on_conflict == "error":
                raise conflict_error(p.label, held["id"])
            ids.append(held["id"])
            if on_conflict == "ignore":
                outcomes.append("skipped")
            elif any(changed_columns(held, row).values()):
                outcomes.append("replaced")
                replacing.append((held["id"], p))
            else:
                outcomes.append("unchanged")
        self.replace_rows(replacing)
        added = iter(self.insert_prepared(new))
        out = Filed(outcomes, [i if i is not None else next(added) for i in ids])
        # Whatever happened to each (added, replaced, unchanged, skipped), a later item
        # with its identity is the same series listed twice: taking either is a guess.
        filed.update(out.ids)
        return out

    def _known_features(self, hashes: list[bytes]) -> set[bytes]:
        """Which of ``hashes`` the catalog's feature_maps already holds (500 per query)."""
        found: set[bytes] = set()
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            found.update(
                r[0]
                for r in self._state.catalog.execute(
                    "SELECT features_hash FROM feature_maps WHERE features_hash IN "
                    f"({', '.join('?' * len(chunk))})",
                    chunk,
                )
            )
        return found

    def _insert_rows(
        self, prepared: list[Prepared], array_ids: dict[tuple[bytes, str], int]
    ) -> list[int]:
        """The catalog rows of ``prepared``, in order, in one statement, their arrays
        named by ``array_ids`` (``(hash, kind) -> arrays.id``); returns their ids.

        The rule that a Deterministic and a DeterministicSingleTimeSeries exclude each
        other per family is checked once afterwards, for the whole batch: the first new
        row (in input order) whose family already held the other kind is refused, as
        inserting them one at a time would have refused it.
        """
        cat = self._state.catalog
        # Numbered as AUTOINCREMENT would number them (consecutively from past the
        # highest id ever used; the explicit ids move sqlite_sequence on as its own do),
        # so the ids are known without RETURNING (which costs SQLite four times the
        # insert itself) and each row's checksum, which covers its id, is made with it.
        first = 1 + cat.scalar(
            "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence "
            "WHERE name = 'time_series_associations'), 0), "
            "COALESCE((SELECT MAX(id) FROM time_series_associations), 0))"
        )
        rows = [p.row for p in prepared]
        try:
            stored = _stored(first, rows, array_ids)
            # Each row's checksum appended by C-level maps (no Python frame per row).
            cat.executemany(_INSERT_CHECKED, list(map(_add, stored, zip(row_checks(stored)))))
        except apsw.ConstraintError as exc:
            done = cat.scalar(
                "SELECT COUNT(*) FROM time_series_associations WHERE id >= ?", (first,)
            )
            raise self._duplicate(prepared[done].row, prepared[done].label) from exc
        ids = list(range(first, first + len(prepared)))
        journal.note_added(self._state, ids, rows)
        family = [
            sid for sid, p in zip(ids, prepared, strict=True) if p.row.time_series_type in (2, 3)
        ]
        for start in range(0, len(family), 500):
            chunk = family[start : start + 500]
            clash = self._state.catalog.execute(
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
                raise self._family_clash(p.row, p.label, other)
        return ids

    @staticmethod
    def _duplicate(row: CatalogRow, label: str) -> DuplicateTimeSeriesError:
        """The refusal of a series whose identity the catalog already holds."""
        return DuplicateTimeSeriesError(
            f"a time series with that key already exists: {label}, "
            f"{TimeSeriesType.from_catalog_code(row.time_series_type).name}"
            + (f" at {row.resolution}" if row.resolution else "")
            + "; remove it first, or give the new one another name or features",
            series=label,
        )

    def insert_row(self, values: Mapping[str, Any], label: str) -> int:
        """One catalog row (``values``: every :data:`INSERT_COLUMNS` by name), after the
        family rule; a clash of identity names the series."""
        row = CatalogRow(**values)
        self._check_family(row, label)
        try:
            self._state.catalog.execute(_INSERT_ROW, row)
        except apsw.ConstraintError as exc:
            raise self._duplicate(row, label) from exc
        return self._state.catalog.conn.last_insert_rowid()

    def rows_by_identity(
        self, keys: Sequence[tuple], columns: Sequence[str]
    ) -> dict[tuple, dict[str, Any]]:
        """``identity -> {"id": …, column: value}`` for the keys the catalog holds.

        A key is ``(owner_id, owner_category, time_series_type, name, resolution or "",
        interval or "", features_hash)``, as the ``ts_identity`` index spells it;
        ``columns`` are catalog column names (``_INSERT_COLUMNS``). One query per 100 keys.
        """
        unknown = set(columns) - set(INSERT_COLUMNS)
        if unknown:  # the names go into the SQL text: only the catalog's own
            raise InvalidParameterError(f"not catalog columns: {sorted(unknown)}")
        identity = (
            "owner_id, owner_category, time_series_type, name, COALESCE(resolution, ''), "
            "COALESCE(interval, ''), features_hash"
        )
        wanted = ("id", *columns)
        # Each row checked against its checksum (rowcheck.py) before it is compared.
        checker = RowChecker([None] * 7 + list(wanted))
        found: dict[tuple, dict[str, Any]] = {}
        for start in range(0, len(keys), 100):
            chunk = keys[start : start + 100]
            marks = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(chunk))
            selected = ", ".join(hash_sql(c) for c in wanted)
        for r in checker.cut(
            self._state.catalog.execute(
                f"SELECT {identity}, {selected}, {checker.extra} "
                f"FROM time_series_associations t WHERE ({identity}) IN (VALUES {marks})",
                [x for k in chunk for x in k],
            ),
            7 + len(wanted),
            str(self._state.path),
        ):
            found[tuple(r[:7])] = dict(zip(wanted, r[7:], strict=True))
        return found

    def replace_rows(self, replacing: list[tuple[int, Prepared]]) -> None:
        """Update catalog rows in place from prepared items: each keeps its id.

        ``replacing`` holds ``(catalog id, prepared item)`` pairs whose identity is the
        row's. The new arrays go through the same writer as an add; the row's other
        columns become the item's; an array nothing names any more is dropped from the
        catalog (its slot is reclaimed by :meth:`Store.compact`, as after a removal). A
        DeterministicSingleTimeSeries backed by a replaced SingleTimeSeries follows its
        new values when the grid is unchanged, and the replacement is refused otherwise.
        """
        if not replacing:
            return
        self.store_arrays(_array_entries([p for _, p in replacing]))
        cat = self._state.catalog
        old = {
            r[0]: r[1:]
            for r in cat.execute(
                f"SELECT id, {hash_sql('data_hash')}, {hash_sql('timestamps_hash')}, initial_ms, "
                "length, resolution FROM time_series_associations t "
                f"WHERE id IN ({', '.join('?' * len(replacing))})",
                [i for i, _ in replacing],
            )
        }
        columns = [c for c in INSERT_COLUMNS if c not in IDENTITY_COLUMNS]
        setting = ", ".join(
            f"{c} = ?"
            if c not in ARRAY_ID_COLUMNS
            else f"{ARRAY_ID_COLUMNS[c]} = {id_sql(ARRAY_ID_COLUMNS[c])}"
            for c in columns
        )
        sql = f"UPDATE time_series_associations SET {setting} WHERE id = ?"
        values = operator.itemgetter(*(INSERT_COLUMNS.index(c) for c in columns))
        for sid, p in replacing:
            row = p.row
            if row.time_series_type == TimeSeriesType.SingleTimeSeries.catalog_code:
                self._follow_source(old[sid], row, p.label)
            cat.execute(sql, [*values(row), sid])
        self._sweep_arrays(
            [(v[0], "data") for v in old.values()]
            + [(v[1], "timestamps") for v in old.values() if v[1] is not None]
        )

    def _follow_source(self, old: tuple, row: CatalogRow, label: str) -> None:
        """Point the derived forecasts of a replaced SingleTimeSeries at its new array."""
        old_hash, _ts, initial_ms, length, resolution = old
        if old_hash == row.data_hash:
            return
        where = (
            f"time_series_type = 3 AND data_id = {id_sql('data_id')} AND owner_id = ? "
            "AND owner_category = ? "
            "AND name = ? AND resolution IS ? AND features_hash = ?"
        )
        params = (
            old_hash,
            row.owner_id,
            row.owner_category,
            row.name,
            resolution,
            row.features_hash,
        )
        derived = self._state.catalog.scalar(
            f"SELECT id FROM time_series_associations WHERE {where}", params
        )
        if derived is None:
            return
        if (initial_ms, length) != (row.initial_ms, row.length):
            raise InvalidParameterError(
                f"cannot replace {label}: it backs the DeterministicSingleTimeSeries id {derived}, "
                "whose windows need the old grid; remove that one first ({remove}) and run "
                "{transform} again after the import",
                series=label,
                terms={"remove": REMOVE, "transform": TRANSFORM},
            )
        self._state.catalog.execute(
            f"UPDATE time_series_associations SET data_id = {id_sql('data_id')}, element_type = ?, "
            f"element_shape = ?, array_shape = ? WHERE {where}",
            (
                row.data_hash,
                row.element_type,
                row.element_shape,
                row.array_shape,
                *params,
            ),
        )

    def _sweep_arrays(self, keys: Iterable[tuple[bytes, str]]) -> None:
        """Drop the catalog entries of those arrays that no series names any more."""
        column = {"data": "data_id", "timestamps": "timestamps_id"}
        for h, kind in set(keys):
            self._state.catalog.execute(
                f"DELETE FROM arrays WHERE hash = ? AND kind = ? AND NOT EXISTS (SELECT 1 FROM "
                f"time_series_associations t WHERE t.{column[kind]} = arrays.id)",
                (h, kind),
            )

    def _check_family(self, row: CatalogRow, label: str) -> None:
        """Deterministic and DeterministicSingleTimeSeries exclude each other per family."""
        code = row.time_series_type
        if code not in (2, 3):
            return
        other = 3 if code == 2 else 2
        clash = self._state.catalog.scalar(
            "SELECT id FROM time_series_associations WHERE time_series_type = ? AND owner_id = ?"
            " AND owner_category = ? AND name = ? AND resolution IS ? AND features_hash = ?",
            (
                other,
                row.owner_id,
                row.owner_category,
                row.name,
                row.resolution,
                row.features_hash,
            ),
        )
        if clash is not None:
            raise self._family_clash(row, label, clash)

    @staticmethod
    def _family_clash(row: CatalogRow, label: str, clash: int) -> InvalidParameterError:
        """The refusal of a series whose family already holds the other forecast kind."""
        code = row.time_series_type
        kinds = ("Deterministic", "DeterministicSingleTimeSeries")
        return InvalidParameterError(
            f"{label} already has a {kinds[(5 - code) - 2]} (id {clash}) for the same owner, "
            f"name, resolution and features; a {kinds[code - 2]} cannot sit beside it. "
            "Remove one first.",
            series=label,
        )

    def store_arrays(
        self,
        arrays: dict[tuple[bytes, str], np.ndarray],
        *,
        grow_cache: bool = False,
        write_back: bool = False,
    ) -> dict[tuple, int]:
        """Write every array of ``arrays`` (``(hash, kind) -> array``, one per key) the
        catalog does not yet hold into this transaction's segment, pooled by dtype and
        shape, and record where each one went (``arrays`` is left holding only those).
        Returns the ``arrays`` id of every key, held before or new. ``grow_cache``: grow
        the catalog's page cache with it between parts (:meth:`Catalog.grow_cache`).
        ``write_back``: start flushing the segment to the device once every array is
        handed over (``Segments.start_writeback``), so that the seal's fsync, after the
        catalog rows, finds little left to write (a bulk add, whose transaction ends
        with its rows)."""
        ids = self._held(arrays)
        for key in ids:
            del arrays[key]
        by_pool: dict[tuple, list[tuple[bytes, str]]] = {}
        last_dtype = last_shape = None
        group: list[tuple[bytes, str]] = []
        for key, arr in arrays.items():
            dtype, shape = arr.dtype, arr.shape
            # A batch's arrays mostly share one dtype object and shape: then the pool is
            # the last one's, without hashing a dtype per array.
            if dtype is last_dtype and shape == last_shape:
                group.append(key)
                continue
            # Empty arrays have no slot: they are all one "pool" of rows without a place.
            pool = (dtype, shape) if arr.size else ()
            group = by_pool.setdefault(pool, [])
            group.append(key)
            last_dtype, last_shape = dtype, shape
        if not arrays:
            return ids
        # Numbered past the highest id, in the order written: the table's B-tree grows
        # at its right edge (only the narrow hash index takes random inserts).
        cat = self._state.catalog
        next_id = 1 + (cat.scalar("SELECT max(id) FROM arrays") or 0)
        for pool, keys in by_pool.items():
            if not pool:
                numbers = range(next_id, next_id + len(keys))
                cat.executemany(
                    _INSERT_ARRAY,
                    [
                        (
                            i,
                            h,
                            kind,
                            dtype_of(arrays[h, kind]),
                            shape_json(arrays[h, kind].shape),
                            "",
                            -1,
                            "",
                        )
                        for i, (h, kind) in zip(numbers, keys, strict=True)
                    ],
                )
                ids.update(zip(keys, numbers, strict=True))
                next_id += len(keys)
                continue
            dtype = dtype_of(arrays[keys[0]])
            shape = list(pool[1])
            name = pool_name(dtype, shape)
            shape_text = shape_json(pool[1])
            # Handed to the segment writer a few MiB at a time, each part's catalog rows
            # inserted while the writer thread stores it: one part of a bulk add's whole
            # pool stacked at once (400 MB at 300,000 series of 168 f64) cost seconds of
            # page faults, in the writer and in this thread waiting for the GIL.
            per = max(1, WRITE_PART_BYTES // max(1, arrays[keys[0]].nbytes))
            for lo in range(0, len(keys), per):
                part = keys[lo : lo + per]
                segment, slot = self._state.segments.write(
                    name, dtype, shape, [arrays[k] for k in part], part
                )
                n = len(part)
                numbers = range(next_id, next_id + n)
                # The rows built by C-level zips: no Python frame per array.
                cat.executemany(
                    _INSERT_ARRAY,
                    zip(
                        numbers,
                        map(_FIRST, part),
                        map(_SECOND, part),
                        repeat(dtype, n),
                        repeat(shape_text, n),
                        repeat(name, n),
                        range(slot, slot + n),
                        repeat(segment, n),
                        strict=True,
                    ),
                )
                ids.update(zip(part, numbers, strict=True))
                next_id += n
                if grow_cache:
                    # The catalog grows with each part: its cache with it (bounded), or
                    # the hash index's pages are spilled and read back from the WAL. A
                    # bulk add asks; an import keeps its start cache (its memory bound).
                    cat.grow_cache()
        if write_back:
            self._state.segments.start_writeback()
        return ids

    def _held(self, keys: Iterable[tuple[bytes, str]]) -> dict[tuple[bytes, str], int]:
        """Those of ``keys`` the catalog's ``arrays`` already holds, with their ids.

        One query per kind, the hashes bound as one carray and joined to the hash index;
        only the hashes and ids come back (where they are is not the writer's business).
        """
        by_kind: dict[str, list[bytes]] = {}
        for h, kind in keys:
            hashes = by_kind.get(kind)
            if hashes is None:
                by_kind[kind] = [h]
            else:
                hashes.append(h)
        held: dict[tuple[bytes, str], int] = {}
        for kind, hashes in by_kind.items():
            held.update(
                ((r[0], kind), r[1])
                for r in self._state.catalog.execute(
                    "SELECT a.hash, a.id FROM carray(?) c JOIN arrays a "
                    "ON a.hash = c.value AND a.kind = ?",
                    (apsw.carray(tuple(hashes)), kind),
                )
            )
        return held

    def replace_owner(self, old_owner: int, new_owner: int, owner_category: Any) -> int:
        """``Store.replace_owner``: every series of one owner moved to another, all or
        nothing; returns how many moved."""
        self._state.check_writable()
        cat = int(OwnerCategory.coerce(owner_category))
        for what, v in (("old_owner", old_owner), ("new_owner", new_owner)):
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise TypeError(f"replace_owner: {what} must be an int, not {type(v).__name__}")
        try:
            with self._transactions.block():
                self._state.catalog.execute(
                    "UPDATE time_series_associations SET owner_id = ? "
                    "WHERE owner_id = ? AND owner_category = ?",
                    (int(new_owner), int(old_owner), cat),
                )
                return int(self._state.catalog.conn.changes())
        except apsw.ConstraintError as exc:
            raise DuplicateTimeSeriesError(
                f"replace_owner: owner {new_owner} already has a series with the identity of "
                f"one of owner {old_owner}'s; remove or rename it first, nothing was moved"
            ) from exc

    def set_store_attribute(self, key: str, value: str) -> None:
        """Record ``key`` → ``value`` with the store (replacing one)."""
        check_attribute_key(key, writing=True)
        if not isinstance(value, str):
            raise TypeError(f"a store attribute's value is a str, not {type(value).__name__}")
        with self._transactions.block():
            self._state.catalog.execute(
                "INSERT OR REPLACE INTO store_attributes (key, value) VALUES (?, ?)", (key, value)
            )

    def remove_store_attribute(self, key: str) -> bool:
        """Forget ``key``; returns whether it was recorded."""
        check_attribute_key(key, writing=True)
        with self._transactions.block():
            self._state.catalog.execute("DELETE FROM store_attributes WHERE key = ?", (key,))
            return bool(self._state.catalog.conn.changes())

    def remove_by_ids(self, ids: Sequence[int], owner_id: int | None, owner_category: Any) -> int:
        """:meth:`Store.remove_by_ids`: the rows found (and owner-guarded), then removed."""
        self._state.check_writable()
        rows = self._queries.rows_by_ids(list(dict.fromkeys(series_id(i) for i in ids)))
        if owner_id is not None or owner_category is not None:
            if owner_id is None or owner_category is None:
                raise InvalidParameterError("pass owner_id and owner_category together")
            check_owner(rows, owner_id, owner_category, "nothing was removed")
        LOG.debug("removing %d series from the store %s", len(rows), self._state.path)
        with self._transactions.block():
            self.remove_rows(rows)
        return len(rows)

    def remove_by_filter(self, filters: dict[str, Any]) -> int:
        """:meth:`Store.remove_by_filter`: the matching rows removed in one transaction."""
        self._state.check_writable()
        rows = self._queries.select_rows(**filters)
        with self._transactions.block():
            self.remove_rows(rows)
        return len(rows)

    def remove_rows(self, rows: list[SeriesRow]) -> None:
        """Delete ``rows`` (refused when one backs a DeterministicSingleTimeSeries not
        removed with it) and what nothing names any more: arrays and feature maps."""
        cat = self._state.catalog
        ids = {r.id for r in rows}
        for r in rows:
            if r.type is TimeSeriesType.SingleTimeSeries:
                backing = cat.scalar(
                    "SELECT id FROM time_series_associations WHERE time_series_type = 3 AND "
                    f"data_id = {id_sql('data_id')} AND owner_id = ? AND owner_category = ? "
                    "AND name = ? AND resolution IS ? AND features_hash = ?",
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
            "time_series_associations t WHERE t.data_id = arrays.id)"
        )
        cat.execute(
            "DELETE FROM arrays WHERE kind = 'timestamps' AND NOT EXISTS (SELECT 1 FROM "
            "time_series_associations t WHERE t.timestamps_id = arrays.id)"
        )
        cat.execute(
            "DELETE FROM feature_sets WHERE NOT EXISTS (SELECT 1 FROM time_series_associations t"
            " WHERE t.features_hash = feature_sets.features_hash)"
        )
        cat.execute(
            "DELETE FROM feature_maps WHERE NOT EXISTS (SELECT 1 FROM time_series_associations t"
            " WHERE t.features_hash = feature_maps.features_hash)"
        )


def _stored(
    first: int, rows: Sequence[CatalogRow], ids: dict[tuple[bytes, str], int]
) -> list[tuple]:
    """``rows`` as the catalog stores them, each with its series id from ``first`` on in
    front (``id`` then :data:`STORED_COLUMNS`, what the checksum covers): each array's
    hash replaced by its ``arrays`` id."""
    out = []
    d, t = DATA_AT, TIMESTAMPS_AT
    for sid, r in enumerate(rows, first):
        stored = [sid, *r]
        stored[d + 1] = ids[r[d], "data"]
        if r[t] is not None:
            stored[t + 1] = ids[r[t], "timestamps"]
        out.append(tuple(stored))  # a tuple: the checksum packs the row as one
    return out


def _array_entries(prepared: Sequence[Prepared]) -> dict[tuple[bytes, str], np.ndarray]:
    """``(hash, kind) -> array`` of every array of ``prepared`` (data, then timestamps;
    one entry per key: arrays of one key have one content)."""
    arrays = {(p.row.data_hash, "data"): p.data for p in prepared}
    for p in prepared:
        if p.timestamps is not None:
            arrays[p.row.timestamps_hash, "timestamps"] = p.timestamps
    return arrays
