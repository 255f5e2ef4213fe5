"""Reading arrays and series: where arrays are, batched reads, series objects.

:class:`Reading` is the store's collaborator for every read of array data: it finds
where arrays are (``arrays`` rows: segment, pool, slot), reads distinct arrays grouped by
segment and pool (:meth:`Reading.load`, retried when a merge moved them), in bounded
batches (:meth:`Reading.iter_arrays`), and builds series objects from catalog rows
without re-validation (:func:`series_from`, :func:`_series_of`). Every array read is
checked against its hash (``damage.read_group``); a damaged one fails the read with a
``DamagedStoreError`` naming its series and file.
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from itertools import repeat
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np
import orjson

from ..core.elements import parse_element_type
from ..core.gcpause import gc_paused
from ..core.periods import as_period, divide
from ..errors import DamagedStoreError, InvalidParameterError, NotFoundError, damage_terms
from ..model import SERIES_CLASSES, Deterministic, OwnerCategory, Series, TimeSeriesType
from ..model.slicing import slice_range, slice_window
from .api import hash_bytes, series_id
from .damage import NOT_HELD, ArraysDamaged, damage_error, read_group
from .queries import check_owner, missing_ids
from .rowcheck import CHECKED_COLUMNS, RowChecker
from .rows import INT64_MAX, INT64_MIN, SeriesRow, decode_shape
from .segments import SegmentGone

if TYPE_CHECKING:
    from .queries import Queries
    from .state import StoreState

DEFAULT_BATCH_BYTES = 64 * 1024 * 1024

_SCAN_FROM = 2000  # arrays wanted at once before a table scan is considered
# Places (segment, slot) whose whole array a part read has checked, kept up to this many.
_VERIFIED_MAX = 1_000_000
_IRREGULAR = frozenset(t for t in TimeSeriesType if t.is_irregular)
_FORECAST_TYPES = frozenset(t for t in TimeSeriesType if t.is_forecast)


def series_from(
    row: SeriesRow, stored: np.ndarray, ts_ms: np.ndarray | None, *, pad: bool = True
) -> Series:
    """A series object from a catalog row and its stored array (no re-validation).

    Ragged composites are stored at their minimal width; ``pad`` restores the width
    the series was added with (an export wants the minimal form and passes False).
    """
    # In the read's layout (``_READ_FIELDS``: :data:`~.rowcheck.CHECKED_COLUMNS`' order);
    # the columns a series object is not built from are None.
    fields = (
        row.id,
        None,  # owner_id
        None,  # owner_type
        None,  # owner_category
        row.type,
        row.name,
        None,  # initial_timestamp
        row.initial_ms,
        row.resolution,
        None,  # length
        row.horizon,
        row.interval,
        row.count,
        None,  # timestamps_id
        row.units,
        row.quantity_kind,
        row.unit_system,
        row.component_field,
        row.application_data,
        row.time_reference,
        row.percentiles,
        row.element_type,
        None,  # element_shape
        row.array_shape,
    )
    return _series_of(fields, stored, ts_ms, pad)


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
    return wanted, np.array([i for i in wanted if INT64_MIN <= i <= INT64_MAX], dtype=np.int64)


def _missing_array(*keys: tuple[bytes, str]) -> ArraysDamaged:
    """Catalog rows name arrays the store does not hold (``Reading`` names the series)."""
    return ArraysDamaged(
        {
            k: ("", NOT_HELD, f"array {k[0].hex()[:12] if k[0] else '?'} ({k[1]}) is not held")
            for k in keys
        }
    )


# What a series object is built from: a read selects every column the row check covers,
# in the order it packs them (the check then takes them as one slice of the row, not a
# pick of 26 positions: rowcheck.RowChecker), then the data hash and the timestamps hash
# (of the arrays rows the series row names by id), the data array's pool, slot and
# segment, the time axis' (None: it has none), and last the checksum.
_READ_FIELDS = ", ".join(f"t.{c}" for c in CHECKED_COLUMNS) + ", a.hash, s.hash"
_AT_DATA_HASH = len(CHECKED_COLUMNS)
_AT_TS_HASH, _AT_POOL, _AT_TS_POOL = _AT_DATA_HASH + 1, _AT_DATA_HASH + 2, _AT_DATA_HASH + 5
_ID = operator.itemgetter(0)
_CHECKER = RowChecker([*CHECKED_COLUMNS, *[None] * 8])
# Where ``_series_of`` finds each field in that layout (a plain index: a read builds one
# series per row).
(
    _F_TYPE,
    _F_NAME,
    _F_INITIAL_MS,
    _F_RESOLUTION,
    _F_HORIZON,
    _F_INTERVAL,
    _F_COUNT,
    _F_UNITS,
    _F_QUANTITY_KIND,
    _F_UNIT_SYSTEM,
    _F_COMPONENT_FIELD,
    _F_APPLICATION_DATA,
    _F_TIME_REFERENCE,
    _F_PERCENTILES,
    _F_ELEMENT_TYPE,
    _F_ARRAY_SHAPE,
) = map(
    CHECKED_COLUMNS.index,
    (
        "time_series_type",
        "name",
        "initial_ms",
        "resolution",
        "horizon",
        "interval",
        "count",
        "units",
        "quantity_kind",
        "unit_system",
        "component_field",
        "application_data",
        "time_reference",
        "percentiles_json",
        "element_type",
        "array_shape",
    ),
)

# What ``iter_select_fields`` may name: every catalog column (the id and the columns a


def _series_of(f: tuple, stored: np.ndarray, ts_ms: np.ndarray | None, pad: bool) -> Series:
    """A series object from its ``_READ_FIELDS`` (a catalog row's: the type as its enum
    or catalog code, percentiles and array shape decoded or as catalog JSON text) and
    its stored array, with no re-validation: the values were checked when written."""
    cls, et, resolution, ragged, forecast, windows, probabilistic = _series_kind(
        f[_F_TYPE], f[_F_ELEMENT_TYPE], f[_F_RESOLUTION]
    )
    arr = stored
    if pad and ragged:
        width = (
            f[_F_ARRAY_SHAPE]
            if isinstance(f[_F_ARRAY_SHAPE], tuple)
            else decode_shape(f[_F_ARRAY_SHAPE])
        )[-1]
        if arr.shape[-1] != width:
            extra = np.zeros((*arr.shape[:-1], width - arr.shape[-1]), arr.dtype)
            arr = np.concatenate([arr, extra], axis=-1)
    if resolution is None:  # the irregular types
        return cls.restore(
            name=f[_F_NAME],
            data=arr,
            element_type=et,
            time_reference=f[_F_TIME_REFERENCE],
            timestamps_ms=ts_ms,
            units=f[_F_UNITS],
            quantity_kind=f[_F_QUANTITY_KIND],
            unit_system=f[_F_UNIT_SYSTEM],
            component_field=f[_F_COMPONENT_FIELD],
            application_data=f[_F_APPLICATION_DATA],
        )
    if not forecast:
        return cls.restore(
            name=f[_F_NAME],
            data=arr,
            element_type=et,
            time_reference=f[_F_TIME_REFERENCE],
            initial_ms=f[_F_INITIAL_MS],
            resolution=resolution,
            units=f[_F_UNITS],
            quantity_kind=f[_F_QUANTITY_KIND],
            unit_system=f[_F_UNIT_SYSTEM],
            component_field=f[_F_COMPONENT_FIELD],
            application_data=f[_F_APPLICATION_DATA],
        )
    horizon, interval = _period(f[_F_HORIZON], "horizon"), _period(f[_F_INTERVAL], "interval")
    if windows:
        arr = _materialize_windows(arr, resolution, horizon, interval, f[_F_COUNT])
    p = f[_F_PERCENTILES]
    return cls.restore(
        name=f[_F_NAME],
        data=arr,
        element_type=et,
        time_reference=f[_F_TIME_REFERENCE],
        initial_ms=f[_F_INITIAL_MS],
        resolution=resolution,
        horizon=horizon,
        interval=interval,
        count=f[_F_COUNT],
        percentiles=(
            (list(p if isinstance(p, list) else orjson.loads(p)) if p else [])
            if probabilistic
            else None
        ),
        units=f[_F_UNITS],
        quantity_kind=f[_F_QUANTITY_KIND],
        unit_system=f[_F_UNIT_SYSTEM],
        component_field=f[_F_COMPONENT_FIELD],
        application_data=f[_F_APPLICATION_DATA],
    )


# typed: an IntEnum member equals its int value, and a catalog code is not that value.
@functools.lru_cache(maxsize=1024, typed=True)
def _series_kind(type_: TimeSeriesType | int, element_type: str, resolution: str | None):
    """``(class, element type, resolution period or None, ragged, forecast, stored as
    windows, probabilistic)`` for a catalog row's type (enum or code), element type and
    resolution text, worked out once (a series built then asks no enum anything: an
    Enum's hash is a Python call)."""
    kind = type_ if isinstance(type_, TimeSeriesType) else TimeSeriesType.from_catalog_code(type_)
    et = _element_type(element_type)
    period = None if kind in _IRREGULAR else _period(resolution, "resolution")
    return (
        SERIES_CLASSES.get(kind, Deterministic),
        et,
        period,
        et.is_ragged,
        kind in _FORECAST_TYPES,
        kind is TimeSeriesType.DeterministicSingleTimeSeries,
        kind is TimeSeriesType.Probabilistic,
    )


@functools.lru_cache(maxsize=256)
def _element_type(text: str):
    """``parse_element_type`` of catalog text, parsed once (an ElementType is frozen)."""
    return parse_element_type(text)


@functools.lru_cache(maxsize=1024)
def _period(text: str, what: str):
    """``as_period`` of catalog text, parsed once (a Period is immutable)."""
    return as_period(text, what=what)


def _materialize_windows(src: np.ndarray, res, hor, itv, count: int) -> np.ndarray:
    """The ``[H, count, *E]`` window array a DeterministicSingleTimeSeries reads as."""
    h = divide(hor, res, what="horizon")
    steps = divide(itv, res, what="interval") if itv.is_positive else 0
    idx = np.arange(h)[:, None] + steps * np.arange(count)[None, :]
    return np.ascontiguousarray(src[idx])


class Reading:
    """Finds and reads the stored arrays and makes series of them (see the module docstring)."""

    __slots__ = ("_queries", "_state", "_verified")

    def __init__(self, state: StoreState, queries: Queries) -> None:
        self._state = state
        self._queries = queries
        # Places whose whole array a part read checked already (segments never change).
        self._verified: set[tuple[str, int]] = set()

    def locations(self, keys: Iterable[tuple[bytes, str]]) -> dict[tuple[bytes, str], tuple]:
        """Where each of ``keys`` is stored; DamagedStoreError names the series of any
        the catalog lacks."""
        keys = set(keys)
        found = self.found_locations(keys)
        if len(found) < len(keys):
            damage = _missing_array(*(k for k in keys if k not in found))
            raise damage_error(self._state, damage.found)
        return found

    def found_locations(self, keys: Iterable[tuple[bytes, str]]) -> dict[tuple[bytes, str], tuple]:
        """Where each of ``keys`` the catalog holds is stored (absent keys are left out)."""
        keyset = keys if isinstance(keys, set | frozenset) else set(keys)
        found: dict[tuple[bytes, str], tuple] = {}
        # The segments' slot count stands for the table's size (it counts the arrays
        # ever written to the live segments: at least the table's, less empty arrays):
        # a count(*) walks every page of the table, on every write.
        if len(keyset) >= _SCAN_FROM and len(keyset) * 4 >= self._state.catalog.scalar(
            "SELECT COALESCE(sum(slots), 0) FROM segments"
        ):
            # Most of the table: one pass over it beats a primary-key search per array.
            for r in self._state.catalog.execute(
                "SELECT hash, kind, dtype, shape, pool, slot, segment FROM arrays"
            ):
                key = (r[0], r[1])
                if key in keyset:
                    found[key] = r[2:]
            return found
        by_kind: dict[str, list[bytes]] = {}
        for h, kind in keyset:
            by_kind.setdefault(kind, []).append(h)
        cat = self._state.catalog
        for kind, hashes in by_kind.items():
            # Two walks, each in order: the hashes (sorted) through the narrow index
            # arrays_key, which holds each one's id, then the rows by id (sorted) through
            # the table; each search starts near where the last one ended, so the pages
            # it needs are the ones just read (schema step 0004).
            hashes.sort()
            ids = {
                r[1]: r[0]
                for r in cat.execute(
                    "SELECT a.hash, a.id FROM carray(?) c JOIN arrays a "
                    "ON a.hash = c.value AND a.kind = ?",
                    (apsw.carray(tuple(hashes)), kind),
                )
            }
            if not ids:
                continue
            for r in cat.execute(
                "SELECT id, dtype, shape, pool, slot, segment FROM arrays "
                "WHERE id IN carray(?) ORDER BY id",
                (apsw.carray(np.array(sorted(ids), dtype=np.int64)),),
            ):
                found[(ids[r[0]], kind)] = r[1:]
        return found

    def load(
        self, keys: Iterable[tuple[bytes, str]], part: tuple = ()
    ) -> dict[tuple[bytes, str], np.ndarray]:
        """Read distinct arrays, grouped by segment and pool so neighbours come in one slab.

        ``part`` reads only that selection of each array (``ArrayFile.read``).

        A segment merged away since the catalog named it sends the read back to the
        catalog for the arrays' new places (the newest committed snapshot); one still
        missing on the last try is damage. Every array is checked against its key:
        :class:`~infrastore_sqlite.errors.DamagedStoreError` names the series of every
        damaged array the read met.
        """
        keys = set(keys)
        try:
            for attempt in range(3):
                final = attempt == 2 or self._state.catalog.in_transaction
                try:
                    return self._load_once(keys, part, final=final)
                except SegmentGone:
                    if final:
                        raise
        except ArraysDamaged as exc:
            raise damage_error(self._state, exc.found) from None
        raise AssertionError("unreachable")

    def _load_once(
        self,
        keys: set[tuple[bytes, str]],
        part: tuple = (),
        places: dict | None = None,
        *,
        final: bool = True,
    ) -> dict[tuple[bytes, str], np.ndarray]:
        """One try of :meth:`load` (``places``: the keys' places, when already known;
        ``final``: a missing segment is damage, not a merge to retry after)."""
        locs = self.locations(keys) if places is None else places
        by_pool: dict[tuple[str, str], list[tuple[bytes, str]]] = {}
        out: dict[tuple[bytes, str], np.ndarray] = {}
        from ..core.elements import NUMPY_DTYPES

        for key, (dtype, shape, pool, _slot, segment) in locs.items():
            if not pool:
                out[key] = np.zeros(orjson.loads(shape), dtype=NUMPY_DTYPES[dtype])[part]
            else:
                by_pool.setdefault((segment, pool), []).append(key)
        found: dict[tuple[bytes, str], tuple[str, str, str]] = {}
        if part and len(self._verified) > _VERIFIED_MAX:
            self._verified.clear()
        for (segment, pool), group in by_pool.items():
            try:
                arrays = read_group(
                    self._state.segments,
                    segment,
                    pool,
                    [locs[k][3] for k in group],
                    group,
                    part,
                    verified=self._verified,
                    gone_is_missing=final,
                )
            except ArraysDamaged as exc:  # the other groups are read still: name them all
                found.update(exc.found)
                continue
            out.update(zip(group, arrays, strict=True))
        if found:
            raise ArraysDamaged(found)
        return out

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
        self._state.check_open()
        for group in self.row_groups(rows, batch_bytes):
            yield self.read_batch(group, with_timestamps)

    @staticmethod
    def row_groups(
        rows: Iterable[SeriesRow], batch_bytes: int = DEFAULT_BATCH_BYTES
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

    def read_batch(self, rows: list[SeriesRow], with_timestamps: bool):
        """``(row, stored array, timestamps or None)`` for ``rows``, each distinct array read once."""
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
        loaded = self.load([*data.values(), *stamps.values()])
        # Keyed by hash alone from here: one lookup per row, no key tuple built per row.
        arrays = {h: loaded[k] for h, k in data.items()}
        times = {h: loaded[k] for h, k in stamps.items()}
        return [
            (r, arrays[r.data_hash], times.get(r.timestamps_hash) if r.timestamps_hash else None)
            for r in rows
        ]

    def _read_fields(self, ids: Sequence[int]) -> list[tuple]:
        """``_READ_FIELDS`` (and the data array's pool, slot and segment) of each of
        ``ids``, in the order given: one query, no catalog row objects; NotFoundError
        names a missing id."""
        wanted, lookup = _id_lookup(ids)
        self._state.check_open()
        try:
            rows = self._fields_by_id(lookup)
        except UnicodeDecodeError as exc:  # a damaged catalog page inside a row's text
            raise DamagedStoreError(
                f"the catalog {self._state.catalog.path} is damaged: the row of "
                f"{self._undecodable(lookup)} holds text that is not UTF-8 ({exc.reason}); "
                "run {verify} to list every damaged series, then {repair} to set the damage "
                "aside",
                terms=damage_terms(str(self._state.path)),
            ) from None
        # Each row checked against its checksum (the columns after the array places).
        _CHECKER.check(rows, str(self._state.path))
        got = list(map(_ID, rows))
        if got == wanted:
            # Every id asked found (the rows come in the order asked, repeats included):
            # the rows are the answer as they are.
            return rows
        found = dict(zip(got, rows, strict=True))
        if len(found) < len(set(wanted)):
            raise missing_ids([i for i in wanted if i not in found])
        return [found[i] for i in wanted]

    def _undecodable(self, lookup: np.ndarray) -> str:
        """Which series of ``lookup`` have a row that does not decode, as a refusal names
        them (``series (id 9)``): each read alone, only once a read of them failed."""
        bad = []
        for sid in lookup.tolist():
            try:
                self._fields_by_id(np.array([sid], dtype=np.int64))
            except UnicodeDecodeError:
                bad.append(f"(id {sid})")
            if len(bad) == 5:
                bad.append("…")
                break
        return "the series " + ", ".join(bad) if bad else "a series asked for"

    def _fields_by_id(self, lookup: np.ndarray) -> list[tuple]:
        """:meth:`_read_fields`' query: the rows of the ids in ``lookup``, in its order
        (fetched at once: stepping the cursor row by row from Python costs more)."""
        if not lookup.size:
            return []
        return self._state.catalog.execute(
            f"SELECT {_READ_FIELDS}, a.pool, a.slot, a.segment, s.pool, s.slot, s.segment, "
            f"{_CHECKER.extra} "
            # The ids' array drives the join: each row looked up by its rowid in the
            # order asked (no list built from the ids, no sort), so the rows come back
            # as the answer whatever the order asked; a repeated id gives its row again.
            "FROM carray(?) c JOIN time_series_associations t ON t.id = c.value "
            "LEFT JOIN arrays a ON a.id = t.data_id AND a.kind = 'data' LEFT JOIN arrays s "
            "ON s.id = t.timestamps_id AND s.kind = 'timestamps'",
            (apsw.carray(lookup),),
        ).fetchall()

    def _stored_arrays(
        self, fields: list[tuple], final: bool
    ) -> tuple[dict[bytes, np.ndarray], dict[bytes, np.ndarray]]:
        """The stored data array and time axis of each of ``_read_fields``' rows, by hash
        (:meth:`_arrays_of`); ArraysDamaged names every damaged one of both."""
        found: dict[tuple[bytes, str], tuple[str, str, str]] = {}
        try:
            arrays = self._arrays_of(fields, final, "data", _AT_DATA_HASH, _AT_POOL)
        except ArraysDamaged as exc:  # the time axes are read still: name them all
            found.update(exc.found)
            arrays = {}
        timed = [f for f in fields if f[_AT_TS_HASH]]
        times: dict[bytes, np.ndarray] = {}
        if timed:
            try:
                times = self._arrays_of(timed, final, "timestamps", _AT_TS_HASH, _AT_TS_POOL)
            except ArraysDamaged as exc:
                found.update(exc.found)
        if found:
            raise ArraysDamaged(found)
        return arrays, times

    def _arrays_of(
        self, fields: list[tuple], final: bool, kind: str, at_hash: int, at_pool: int
    ) -> dict[bytes, np.ndarray]:
        """The stored arrays of ``kind`` of ``_read_fields``' rows, by hash (the hash in
        column ``at_hash``, its pool, slot and segment from column ``at_pool`` on): each
        distinct array read once, the slots of one segment's pool in one call, each
        checked against its key (ArraysDamaged names those that fail).

        Raises SegmentGone when a segment was merged away since the rows were read
        (unless ``final``: then a missing segment is damage).
        """
        out: dict[bytes, np.ndarray] = {}
        groups: dict[tuple[str, str], tuple[list[int], list[bytes]]] = {}
        empty: list[bytes] = []
        missing: list[tuple[bytes, str]] = []
        # One place per distinct array (a repeated hash has the same place): the rows
        # deduplicated, and their places taken apart, in C rather than a step per row.
        distinct = list({f[at_hash]: f for f in fields}.values())
        places = set(map(operator.itemgetter(at_pool + 2, at_pool), distinct))
        if len(places) == 1 and next(iter(places))[1]:
            # The common case: every array in one pool of one segment.
            groups[next(iter(places))] = (
                list(map(operator.itemgetter(at_pool + 1), distinct)),
                list(map(operator.itemgetter(at_hash), distinct)),
            )
        else:
            for f in distinct:
                h = f[at_hash]
                pool = f[at_pool]
                if not pool:
                    if pool is None:  # no arrays row: the catalog is damaged
                        missing.append((h, kind))
                        continue
                    empty.append(h)  # a zero-size array has no slot
                    continue
                key = (f[at_pool + 2], pool)
                group = groups.get(key)
                if group is None:
                    group = groups[key] = ([], [])
                group[0].append(f[at_pool + 1])
                group[1].append(h)
        if empty:
            out.update((k[0], a) for k, a in self._load_once({(h, kind) for h in empty}).items())
        found: dict[tuple[bytes, str], tuple[str, str, str]] = {}
        if missing:
            found.update(_missing_array(*missing).found)
        segments = self._state.segments
        for (segment, pool), (slots, hashes) in groups.items():
            keys = list(zip(hashes, repeat(kind)))
            try:
                arrays = read_group(segments, segment, pool, slots, keys, gone_is_missing=final)
            except ArraysDamaged as exc:  # the other groups are read still: name them all
                found.update(exc.found)
                continue
            out.update(zip(hashes, arrays, strict=True))
        if found:
            raise ArraysDamaged(found)
        return out

    def array_by_hash(self, data_hash: str) -> np.ndarray:
        """``Store.get_array_by_hash``: the stored array of ``data_hash``, a fresh copy."""
        key = (hash_bytes(data_hash), "data")
        self._state.check_open()
        if key not in self.found_locations([key]):
            raise NotFoundError(
                f"the store holds no array with data_hash {data_hash}; list_metadata shows "
                "the hashes it holds",
                key=data_hash,
            )
        return np.array(self.load([key])[key])

    def get_metadata_by_id(self, id: int) -> dict[str, Any] | None:
        """The metadata row of ``id`` (with timestamps for irregular series), or None."""
        rows = self._queries.select("t.id = ?", (series_id(id),))
        if not rows:
            return None
        row = rows[0]
        ts = (
            self.load({(row.timestamps_hash, "timestamps")})[(row.timestamps_hash, "timestamps")]
            if row.timestamps_hash
            else None
        )
        return row.metadata(ts)

    def read_by_ids(
        self,
        ids: Sequence[int],
        *,
        start_time: datetime | None = None,
        len: int | None = None,
        count: int | None = None,
    ) -> list[Series]:
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
    ) -> list[Series]:
        """:meth:`read_by_ids` without the collector pause."""
        for attempt in range(3):
            fields = self._read_fields(ids)
            # The places came with the rows; a segment merged away meanwhile sends the
            # read back for the new ones, as load does (one still missing on the last
            # try is damage).
            final = attempt == 2 or self._state.catalog.in_transaction
            try:
                arrays, times = self._stored_arrays(fields, final)
                break
            except SegmentGone:
                if final:
                    raise
            except ArraysDamaged as exc:
                raise damage_error(self._state, exc.found) from None
        out: list[Series] = [
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
    ) -> Series:
        """Read one series (or the window ``start_time``/``len``/``count`` names).

        ``owner_id`` with ``owner_category`` (both or neither) guard the read: a series of
        another owner raises :class:`OwnerMismatchError` instead of being returned.
        """
        if (owner_id is None) != (owner_category is None):
            raise InvalidParameterError(
                "read_by_id requires both owner_id and owner_category, or neither"
            )
        if owner_id is not None:
            check_owner(self._queries.rows_by_ids([id]), owner_id, owner_category)
        return self.read_by_ids([id], start_time=start_time, len=len, count=count)[0]

    def read_by_ids_range(
        self, ids: Sequence[int], time_range: tuple[datetime, datetime]
    ) -> list[Series]:
        """Read many series, each clipped to the half-open ``time_range`` (start, end)."""
        rows = self._queries.rows_by_ids(ids)
        out = []
        for batch in self.iter_arrays(rows):
            for row, arr, ts in batch:
                out.append(slice_range(series_from(row, arr, ts), time_range, row.label))
        return out
