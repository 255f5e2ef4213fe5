"""Export planning and row generation, independent of the container.

``plan_export`` turns a selection into partitions, each with its series, its distinct
array keys (``data_hash``, ``time_axis``) and their 1-based ids, and the refusals that
must fire before anything is written (empty series, a derived-type filter). Most keys
come straight from the catalog; only a ``time_range`` slice or a materialized
DeterministicSingleTimeSeries needs its arrays read (and hashed) while planning.

``iter_partition_arrays`` then streams one partition's distinct arrays in key order as
``RowBlock`` objects: the value rows in table order and the coordinates beside them. A
SQLite writer and a Parquet writer consume the same blocks.

What a plan holds (``ExportPlan``, ``PartitionPlan``, ``ExportSeries``, ``ExportSummary``)
is in :mod:`.plan_types`; the series tables' rows of a planned partition
(``series_records``, ``series_values``) are in :mod:`.series_rows`. This module re-exports
their names, so ``interchange.plan`` stays the one place the containers import from.
"""

from __future__ import annotations

import functools
import math
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ..core.elements import minimal_width, shrink
from ..core.hashing import data_hash
from ..core.periods import Period, as_period, grid, step
from ..errors import (
    ZONED_RETRY,
    IntegrityError,
    InvalidParameterError,
)
from ..model import AnySeries, TimeSeriesType
from ..model.slicing import slice_range
from ..store.queries import refuse_unknown_ids
from ..store.reading import series_from
from ..store.rows import SeriesRow, decode_shape
from .layout import (
    Partition,
    PartitionKey,
    assign_names,
    forecast_axis,
    static_axis,
    validate_prefix,
    value_shape_for,
)
from .pipeline import release_free_heap
from .plan_types import (
    HASH_BYTES,
    SUMMARY_KEYS,
    AxisColumn,
    ExportPlan,
    ExportSeries,
    ExportSummary,
    HashColumn,
    PartitionPlan,
    SeriesRef,
    label_of,
)
from .selection import Selection
from .series_rows import (
    OWNER_CATEGORY_NAMES,
    SERIES_FIELDS,
    SeriesText,
    iter_rows,
    series_fields,
    series_labels,
    series_records,
    series_values,
)

if TYPE_CHECKING:
    from ..store import Store

Progress = Callable[[int, int], None]

__all__ = [
    "OWNER_CATEGORY_NAMES",
    "SERIES_FIELDS",
    "SUMMARY_KEYS",
    "Affine",
    "AxisColumn",
    "ExportPlan",
    "ExportSeries",
    "ExportSummary",
    "HashColumn",
    "PartitionPlan",
    "Progress",
    "RowBlock",
    "SeriesRef",
    "SeriesText",
    "export_object",
    "iter_partition_arrays",
    "iter_rows",
    "plan_export",
    "row_block",
    "series_fields",
    "series_labels",
    "series_records",
    "series_values",
]


def _rows_of(series: AnySeries) -> int:
    """Value rows an exported series writes: product of its leading dims."""
    lead = series.time_series_type.leading_dims
    return int(np.prod(series.stored_array.shape[:lead], dtype=np.int64))


def export_object(
    store: Store, row: SeriesRow, stored: np.ndarray, ts: np.ndarray | None, time_range: Any
) -> AnySeries:
    """The series object an export writes: minimal-width, materialized, clipped."""
    obj = series_from(row, stored, ts, pad=False)
    if time_range is not None:
        obj = slice_range(obj, time_range, row.label)
    et = obj.element_type_info
    data = obj.stored_array
    if et.is_ragged and data.size and minimal_width(et, data) < data.shape[-1]:
        # A slice (or a DST's windows) may need fewer points than the whole stored array:
        # write it, and hash it, at its own minimal width.
        obj = obj.replace(data=shrink(et, data))
    return obj


def _key_of(obj: AnySeries, hash_hex: str | None = None) -> tuple[str, str, int | None, int | None]:
    """(data_hash, time_axis, initial_ms, length|count) of an export object."""
    data = obj.stored_array
    h = hash_hex or data_hash(data).hex()
    tst = obj.time_series_type
    if tst.is_irregular:
        from ..core.hashing import timestamps_hash

        ts = obj.timestamps_ms
        return h, timestamps_hash(ts).hex(), None, int(ts.size)
    anchor = obj.initial_ms
    if tst.is_forecast:
        count = obj.count
        axis = forecast_axis(count, anchor, obj.interval, obj.horizon, obj.resolution)
        return h, axis, anchor, count
    n = int(data.shape[0])
    return h, static_axis(n, anchor, obj.resolution), anchor, n


# Axis texts: many series of a store share a grid, and formatting the anchor instant is
# most of a key's cost, so each distinct grid's text is built once.
_static_axis = functools.lru_cache(maxsize=4096)(static_axis)
_forecast_axis = functools.lru_cache(maxsize=4096)(forecast_axis)


def _width(shape: Sequence[int]) -> int:
    return int(shape[-1]) if shape else 1


@functools.lru_cache(maxsize=256)
def _is_ragged(key: PartitionKey) -> bool:
    return key.et.is_ragged


def _partition_key(row: SeriesRow) -> PartitionKey:
    return _partition_key_of(row.type, row.element_type, row.array_shape, row.time_reference)


@functools.lru_cache(maxsize=256)
def _partition_key_of(
    tst: TimeSeriesType, element_type: str, array_shape: tuple[int, ...], reference: str | None
) -> PartitionKey:
    """A partition key from the row fields it depends on (few distinct ones: cached)."""
    lead = 1 if tst is TimeSeriesType.DeterministicSingleTimeSeries else tst.leading_dims
    return PartitionKey(
        tst, element_type, value_shape_for(element_type, tuple(array_shape[lead:])), reference
    )


#: The catalog fields a plan is made from (``Store.iter_select_fields``), in this order.
_PLAN_FIELDS = (
    "id",
    "owner_id",
    "name",
    "time_series_type",
    "element_type",
    "array_shape",
    "time_reference",
    "data_hash",
    "timestamps_hash",
    "initial_ms",
    "resolution",
    "interval",
    "horizon",
    "count",
)
_DST = TimeSeriesType.DeterministicSingleTimeSeries


class _Planned:
    """The planned series as columns, filled while the catalog streams by.

    Numbers go in ``array('q')`` columns (8 bytes a value), hashes end to end in one
    ``bytearray`` (32 bytes each), and the partition key and axis text of a series as a
    code into the distinct ones: a series costs some 100 bytes here, not a few hundred
    in Python objects. Names are not kept (a refusal reads the few it needs back).
    """

    def __init__(self) -> None:
        self.ids = array("q")
        self.owners = array("q")
        self.pkey_codes = array("q")
        self.axis_codes = array("q")
        self.anchors = array("q")
        self.counts = array("q")
        self.rows = array("q")
        self.widths = array("q")
        self.hashes = bytearray()
        self.pkeys: dict[PartitionKey, int] = {}
        self.axes: dict[str, int] = {}

    def axis_code(self, axis: str) -> int:
        code = self.axes.get(axis)
        if code is None:
            code = self.axes[axis] = len(self.axes)
        return code

    def pkey_code(self, pkey: PartitionKey) -> int:
        code = self.pkeys.get(pkey)
        if code is None:
            code = self.pkeys[pkey] = len(self.pkeys)
        return code

    def set_key(self, pos: int, key: tuple) -> None:
        h, axis, anchor, n, rows, width = key
        self.hashes[HASH_BYTES * pos : HASH_BYTES * (pos + 1)] = h
        self.axis_codes[pos] = self.axis_code(axis)
        self.anchors[pos] = 0 if anchor is None else anchor
        self.counts[pos], self.rows[pos], self.widths[pos] = n, rows, width

    def column(self, name: str) -> np.ndarray:
        """A column as an ``int64`` vector over the ``array``'s own buffer (no copy)."""
        return np.frombuffer(getattr(self, name), dtype=np.int64)


_NO_HASH = bytes(HASH_BYTES)  # the place of a hash that is read and set later


# What a plan takes from a catalog row beside its id, owner, name and hashes: the
# fields its partition and its grid follow from (many rows share them).
_CLASS_FIELDS = slice(3, 7), slice(9, 14)
_LEFT_OUT = object()


def _row_class(
    fields: tuple, time_range: Any, include_derived: bool
) -> tuple[PartitionKey, bool, str | None, int, int, int, int, bool] | object:
    """What every catalog row with these ``_CLASS_FIELDS`` plans to.

    ``(partition key, needs a read, axis (None: the irregular types', from the
    timestamps hash), anchor, length|count, rows, width, ragged)``, or ``_LEFT_OUT`` for
    a derived series the export leaves out. The key straight from the catalog is that
    of the whole series in stored form; ragged composites are stored at minimal width,
    looked up later.
    """
    code, element_type, shape_text, reference, initial_ms, resolution, interval, horizon, count = (
        fields
    )
    kind = TimeSeriesType.from_catalog_code(code)
    if kind is _DST and not include_derived:
        return _LEFT_OUT
    shape = decode_shape(shape_text)
    pkey = _partition_key_of(kind, element_type, shape, reference)
    ragged = _is_ragged(pkey)
    if time_range is not None or kind is _DST:
        return pkey, True, None, 0, 0, 0, 0, ragged
    width = int(shape[-1]) if shape else 1
    if kind.is_irregular:
        return pkey, False, None, 0, shape[0], shape[0], width, ragged
    if kind.is_forecast:
        axis = _forecast_axis(count, initial_ms, interval, horizon, resolution)
        rows = math.prod(shape[: kind.leading_dims])
        return pkey, False, axis, initial_ms, count, rows, width, ragged
    axis = _static_axis(shape[0], initial_ms, resolution)
    return pkey, False, axis, initial_ms, shape[0], shape[0], width, ragged


def plan_export(
    store: Store,
    selection: Selection | None = None,
    *,
    table_prefix: str = "",
    progress: Progress | None = None,
) -> ExportPlan:
    """Plan an export of the series ``selection`` takes (every stored series but the
    derived ones when None); the selection was checked when it was made.

    Raises
    ------
    InvalidParameterError
        Bad prefix, or empty series in the selection (all named in one error).
    """
    validate_prefix(table_prefix)
    if selection is None:
        selection = Selection()
    filters = selection.filters
    time_range = selection.time_range
    include_derived = selection.include_derived
    # The catalog streams by as plain tuples of the few fields a plan needs; the plan
    # keeps columns (ids, keys, grids), and a series' arrays are read only when its key
    # depends on them (a time_range slice, a materialized DST).
    planned = _Planned()
    to_read = array("q")  # positions in ``planned``
    derived_left_out = 0
    aware = time_range is not None and time_range[0].tzinfo is not None
    zoneless: list[str] = []
    # Ragged composites are stored at their minimal width, which the catalog row (the
    # width the series was added with) does not record: looked up below, per array.
    ragged = array("q")
    classes: dict[tuple, Any] = {}
    head, tail = _CLASS_FIELDS
    # One loop step per selected series: the appends are bound once.
    add_id, add_owner, add_pkey, add_axis = (
        planned.ids.append,
        planned.owners.append,
        planned.pkey_codes.append,
        planned.axis_codes.append,
    )
    add_hash = planned.hashes.extend
    add_anchor, add_count, add_rows, add_width = (
        planned.anchors.append,
        planned.counts.append,
        planned.rows.append,
        planned.widths.append,
    )
    axis_code = planned.axis_code
    if filters.get("ids") is not None:
        refuse_unknown_ids(store, filters["ids"])
    for r in store.iter_select_fields(_PLAN_FIELDS, **filters):
        fields = r[head] + r[tail]
        c = classes.get(fields)
        if c is None:
            if len(classes) >= 65536:  # many distinct grids: keep the cache bounded
                classes.clear()
            c = classes[fields] = _coded(
                planned, _row_class(fields, time_range, include_derived), aware
            )
        if c is _LEFT_OUT:
            derived_left_out += 1
            continue
        pcode, read, acode, anchor, n, rows, width, is_ragged, is_zoneless = c
        if is_zoneless:
            zoneless.append(label_of(r[2], r[1]))
        if read:
            to_read.append(len(planned.ids))
            add_hash(_NO_HASH)
            add_axis(-1)
        else:
            if is_ragged:
                ragged.append(len(planned.ids))
            add_hash(r[7])
            # The irregular types' axis is their timestamps hash (one per series).
            add_axis(axis_code(r[8].hex()) if acode is None else acode)
        add_id(r[0])
        add_owner(r[1])
        add_pkey(pcode)
        add_anchor(anchor)
        add_count(n)
        add_rows(rows)
        add_width(width)
    del classes
    if zoneless:
        raise InvalidParameterError(
            f"{len(zoneless)} of the selected series are zoneless (wall clock only) and cannot "
            f"be clipped to a range with UTC offsets: {', '.join(zoneless[:10])}"
            + (" …" if len(zoneless) > 10 else "")
            + ". Give the bounds without an offset (each series is then clipped on its own "
            "wall clock), or leave the zoneless series out: {zoned}. Nothing was written.",
            series=zoneless,
            terms={"zoned": ZONED_RETRY},
        )
    if len(planned.hashes) != HASH_BYTES * len(planned.ids):
        raise IntegrityError(
            f"the catalog holds a data_hash that is not {HASH_BYTES} bytes long, so the "
            "selection cannot be planned; verify_integrity names the damaged rows"
        )
    if to_read:
        done = 0
        rows = iter_rows(store, [planned.ids[p] for p in to_read])
        positions = iter(to_read)
        for batch in store.iter_arrays(rows):  # type: ignore[arg-type]
            for row, stored, ts in batch:
                obj = export_object(store, row, stored, ts, time_range)
                hx, axis, anchor, n = _key_of(obj)
                key = (
                    bytes.fromhex(hx),
                    axis,
                    anchor,
                    n,
                    _rows_of(obj),
                    _width(obj.stored_array.shape),
                )
                planned.set_key(next(positions), key)
                done += 1
            if progress:
                progress(done, len(to_read))
    del to_read
    if ragged:
        hashes = {bytes(planned.hashes[HASH_BYTES * p : HASH_BYTES * (p + 1)]) for p in ragged}
        locations = store.array_locations({(h, "data") for h in hashes})
        widths = {h: _width(orjson.loads(loc[1])) for (h, _), loc in locations.items()}
        for p in ragged:
            planned.widths[p] = widths[bytes(planned.hashes[HASH_BYTES * p : HASH_BYTES * (p + 1)])]
    del ragged

    columns = {
        c: planned.column(c)
        for c in ("ids", "owners", "anchors", "counts", "rows", "widths", "axis_codes")
    }
    empty_at = np.flatnonzero(columns["rows"] == 0)
    if empty_at.size:
        empty = _labels(store, columns["ids"][empty_at])
        raise InvalidParameterError(
            f"{len(empty)} of the selected series hold no values and cannot be exported: "
            f"{', '.join(empty)}. Narrow the selection past them.",
            series=empty,
        )

    pkey_codes = planned.column("pkey_codes")
    by_key = {pkey: np.flatnonzero(pkey_codes == code) for pkey, code in planned.pkeys.items()}
    del pkey_codes
    # The distinct axis texts, and each one's rank in sorted order: keys compare as
    # (hash bytes, axis text), and ranks compare as the texts do.
    texts = list(planned.axes)
    rank = np.empty(len(texts) + 1, dtype=np.int64)  # [-1]: never used (all keys are set)
    rank[sorted(range(len(texts)), key=texts.__getitem__)] = np.arange(len(texts))
    block = np.frombuffer(planned.hashes, dtype=np.uint8).reshape(-1, HASH_BYTES)
    partitions = [
        _partition_plan(part, by_key.pop(part.key), columns, block, rank, texts, store)
        for part in assign_names(by_key, table_prefix)
    ]
    del planned, columns, block, by_key
    # Planning's columns and sort keys (some 200 bytes a series) are freed now, among
    # the plan's own: given back, so that their pages are not resident for the whole
    # export while the values are read in another thread (see ``release_free_heap``).
    release_free_heap()
    return ExportPlan(partitions, time_range, include_derived, derived_left_out)


def _coded(planned: _Planned, c: Any, aware: bool) -> Any:
    """A ``_row_class`` with its partition key and axis as codes into ``planned``, and
    whether its series are zoneless ones a range with offsets cannot clip."""
    if c is _LEFT_OUT:
        return c
    pkey, read, axis, anchor, n, rows, width, ragged = c
    acode = None if axis is None else planned.axis_code(axis)
    zoneless = aware and pkey.time_reference == "zoneless"
    return planned.pkey_code(pkey), read, acode, anchor, n, rows, width, ragged, zoneless


def _labels(store: Store, ids: np.ndarray) -> list[str]:
    """The labels of the series ``ids`` (ascending), names read from the catalog."""
    return [
        label_of(name, owner)
        for _, owner, name in store.iter_select_fields(("id", "owner_id", "name"), ids=ids.tolist())
    ]


# Series whose sorted keys are compared at a time while a partition is planned.
_COMPARE_SLICE = 1 << 16


def _partition_plan(
    part: Partition,
    take: np.ndarray,
    columns: dict[str, np.ndarray],
    block: np.ndarray,
    rank: np.ndarray,
    texts: list[str],
    store: Store,
) -> PartitionPlan:
    """One partition's columns from its series' positions (ascending: catalog order).

    Array ids are the 1-based rank of the key ``(data_hash, time_axis)`` compared as
    byte strings (a hash's hex text sorts as its bytes; the axis texts are ASCII), found
    by sorting the columns: the hash as four big-endian words, then the axis rank.
    """
    if len(take) == len(block):
        # The whole selection is one partition: its columns are the plan's, uncopied.
        def pick(column: np.ndarray) -> np.ndarray:
            return column

    else:

        def pick(column: np.ndarray) -> np.ndarray:
            return column[take]

    hashes = pick(block)
    words = hashes.view(">u8")
    codes = pick(columns["axis_codes"])
    ranks = rank[codes]
    # Stable: among the series of one key, the first in catalog order comes first.
    order = np.lexsort((ranks, words[:, 3], words[:, 2], words[:, 1], words[:, 0]))
    # Where a new key starts in sorted order, compared a slice at a time: the sorted
    # keys are never copied whole (32 bytes a series, at the plan's peak).
    new = np.ones(len(order), dtype=bool)
    for start in range(1, len(order), _COMPARE_SLICE):
        at = order[start : start + _COMPARE_SLICE]
        before = order[start - 1 : start - 1 + at.size]
        new[start : start + at.size] = (words[at] != words[before]).any(axis=1) | (
            ranks[at] != ranks[before]
        )
    aids = np.empty(len(order), dtype=np.int64)
    aids[order] = np.cumsum(new)
    # Each array's first series, as a position among this partition's series.
    local = order[new]
    return PartitionPlan(
        part,
        ids=narrow(pick(columns["ids"])),
        owners=narrow(pick(columns["owners"])),
        aids=narrow(aids),
        anchors=narrow(pick(columns["anchors"])),
        counts=narrow(pick(columns["counts"])),
        hashes=HashColumn(np.ascontiguousarray(hashes[local])),
        axes=AxisColumn(narrow(codes[local]), texts),
        array_rows=narrow(columns["rows"][take[local]]),
        firsts=narrow(local),
        width=int(pick(columns["widths"]).max()),
        source=store,
    )


_INT32 = np.iinfo(np.int32)


def narrow(column: np.ndarray) -> np.ndarray:
    """An ``int64`` plan column held in less: one value throughout as a read-only
    broadcast of it (8 bytes in all: the anchors of series that start together), else
    ``int32`` when every value fits (ids, counts, array ids and positions mostly do),
    else as it is. The export holds its plan's columns from start to end (some 100 bytes
    a series at ``int64``), so they are a part of its memory that grows with the store.
    Readers index these columns or spell them out (``tolist``); arithmetic on them that
    could pass ``int32`` casts first."""
    if column.size == 0:
        return column
    lo, hi = int(column.min()), int(column.max())
    if lo == hi:
        return np.broadcast_to(column[:1].copy(), column.shape)
    if _INT32.min <= lo and hi <= _INT32.max:
        return column.astype(np.int32)
    return column


# ---------------------------------------------------------------------- row blocks
@dataclass(slots=True)
class Affine:
    """Coordinates computable from the row number: fixed-period grids.

    Row r of a block: window ``j = r // (steps * lanes)``, step ``h = (r // lanes) % steps``,
    lane ``l = r % lanes``; ``issue = anchor + j * interval_ms`` and
    ``timestamp = issue + h * resolution_ms``. A static series is one window of ``rows`` steps.
    """

    anchor: int
    interval_ms: int
    resolution_ms: int
    steps: int
    lanes: int


@dataclass(slots=True)
class RowBlock:
    """One distinct array's value rows, in the table's row order."""

    key: tuple[str, str]
    array_id: int
    values: np.ndarray  # [N, *E]
    timestamps: np.ndarray | None  # int64 [N]; None when ``affine`` describes them
    issue_times: np.ndarray | None
    lane_values: np.ndarray | None  # per-lane percentile (float64) or None for scenarios
    affine: Affine | None
    tst: TimeSeriesType
    lanes: int = 1
    #: Gives the labels of the series sharing this array (catalog order); called only
    #: when a refusal names them, so an export holds no label per series.
    label_source: Callable[[], list[str]] | None = None

    @property
    def labels(self) -> list[str]:
        """The labels of the series sharing this array, catalog order."""
        return [] if self.label_source is None else self.label_source()

    @property
    def n(self) -> int:
        return int(self.values.shape[0])

    def coordinates(self) -> dict[str, np.ndarray]:
        """Every key column as a full vector (for writers without an affine fast path)."""
        n = self.n
        out: dict[str, np.ndarray] = {}
        if self.affine is not None:
            a = self.affine
            r = np.arange(n, dtype=np.int64)
            j = r // (a.steps * a.lanes)
            h = (r // a.lanes) % a.steps
            issue = a.anchor + j * a.interval_ms
            out["timestamp"] = issue + h * a.resolution_ms
            if self.tst.is_forecast:
                out["issue_time"] = issue
        else:
            out["timestamp"] = self.timestamps
            if self.issue_times is not None:
                out["issue_time"] = self.issue_times
        lane = np.arange(n, dtype=np.int64) % self.lanes
        if self.tst is TimeSeriesType.Probabilistic:
            out["percentile"] = self.lane_values[lane]
        elif self.tst is TimeSeriesType.Scenarios:
            out["scenario"] = lane
        return out


def _fixed_ms(p: Period) -> int | None:
    """``layout.period_ms`` of a Period already parsed (no text round trip)."""
    return None if p.calendar else p.ms


def row_block(obj: AnySeries, key: tuple[str, str], array_id: int) -> RowBlock:
    """The value rows of one export object, window-major for forecasts."""
    tst = obj.time_series_type
    data = obj.stored_array
    if tst.is_irregular:
        return RowBlock(key, array_id, data, obj.timestamps_ms, None, None, None, tst)
    res: Period = obj.resolution_period
    res_ms = _fixed_ms(res)
    anchor = obj.initial_ms
    if not tst.is_forecast:
        n = int(data.shape[0])
        if res_ms is not None:
            return RowBlock(
                key, array_id, data, None, None, None, Affine(anchor, 0, res_ms, n, 1), tst
            )
        return RowBlock(key, array_id, data, grid(anchor, res, n), None, None, None, tst)
    # Forecast: stored [.., H, count, *E] -> rows [count, H, lanes, *E].
    lead = tst.leading_dims
    if lead == 2:
        rows = np.swapaxes(data, 0, 1)
        lanes = 1
    else:
        rows = np.transpose(data, (2, 1, 0, *range(3, data.ndim)))
        lanes = int(data.shape[0])
    count, steps = int(rows.shape[0]), int(rows.shape[1])
    values = np.ascontiguousarray(rows).reshape(count * steps * lanes, *data.shape[lead:])
    lane_values = (
        np.asarray(obj.percentiles, dtype=np.float64)
        if tst is TimeSeriesType.Probabilistic
        else None
    )
    itv: Period = obj.interval_period
    itv_ms = _fixed_ms(itv)
    if res_ms is not None and itv_ms is not None:
        aff = Affine(anchor, itv_ms, res_ms, steps, lanes)
        return RowBlock(key, array_id, values, None, None, lane_values, aff, tst, lanes)
    issues = np.array([step(anchor, itv, j) for j in range(count)], dtype=np.int64)
    targets = np.array(
        [[step(int(i), res, h) for h in range(steps)] for i in issues], dtype=np.int64
    ).reshape(count, steps)
    ts = np.repeat(targets.reshape(-1), lanes)
    it = np.repeat(issues, steps * lanes)
    return RowBlock(key, array_id, values, ts, it, lane_values, None, tst, lanes)


def iter_partition_arrays(
    store: Store, plan: ExportPlan, pp: PartitionPlan, *, batch_bytes: int = 4 * 1024 * 1024
) -> Iterator[RowBlock]:
    """Each distinct array of a partition once, in array_id (key) order, read in bounded
    batches; the labels of every series sharing it ride along (catalog order)."""
    labels = pp.labels_by_array()
    key = pp.partition.key
    if (
        plan.time_range is None
        and key.type is TimeSeriesType.SingleTimeSeries
        and not key.et.is_ragged
    ):
        yield from _static_arrays(store, pp, labels, batch_bytes)
        return
    rows = iter_rows(store, pp.ids[pp.firsts].tolist())
    aid = 0
    for batch in store.iter_arrays(rows, batch_bytes=batch_bytes):  # type: ignore[arg-type]
        for row, stored, ts in batch:
            aid += 1
            obj = export_object(store, row, stored, ts, plan.time_range)
            block = row_block(obj, pp.key(aid), aid)
            block.label_source = functools.partial(labels, aid)
            yield block


def _static_arrays(
    store: Store, pp: PartitionPlan, labels: Callable[[int], list[str]], batch_bytes: int
) -> Iterator[RowBlock]:
    """``iter_partition_arrays`` of whole stored SingleTimeSeries (no range, not ragged).

    Such a series writes its stored array as it is, on the grid its key names, so the
    block is made from the plan's columns and the stored array, with no catalog row and
    no series object per array (what ``export_object`` and ``row_block`` would build).
    """
    tst = TimeSeriesType.SingleTimeSeries
    step_bytes = 8 * max(1, math.prod(pp.partition.key.element_shape) or pp.width)
    # Bytes of the arrays up to each one: a batch's end is found by bisecting them (no
    # Python value per array is made ahead of its batch).
    ends = np.cumsum(pp.array_rows.astype(np.int64) * step_bytes)
    grids: dict[tuple[int, str, int], Affine | np.ndarray] = {}
    start = 0
    n_arrays = len(pp.hashes)
    # The first batches are small and each is twice the last, up to ``batch_bytes``:
    # the writer waits for the first one before its first statement.
    limit = max(1, batch_bytes // 32)
    while start < n_arrays:
        before = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + limit, side="right")))
        limit = min(2 * limit, batch_bytes)
        # This batch's keys and grids as Python values once (the plan holds columns).
        hashes, axes = pp.hashes[start:stop], pp.axes[start:stop]
        anchors = pp.anchors[pp.firsts[start:stop]].tolist()
        rows = pp.array_rows[start:stop].tolist()
        loaded = store.load_arrays({(h, "data") for h in hashes})
        for k in range(start, stop):
            at = k - start
            h, axis, n, anchor = hashes[at], axes[at], rows[at], anchors[at]
            g = (anchor, axis, n)
            coords = grids.get(g)
            if coords is None:
                if len(grids) >= 4096:
                    grids.clear()
                res = _axis_resolution(axis)
                res_ms = _fixed_ms(res)
                coords = grids[g] = (
                    Affine(anchor, 0, res_ms, n, 1) if res_ms is not None else grid(anchor, res, n)
                )
            values = loaded[(h, "data")]
            if isinstance(coords, Affine):
                block = RowBlock((h.hex(), axis), k + 1, values, None, None, None, coords, tst)
            else:
                block = RowBlock((h.hex(), axis), k + 1, values, coords, None, None, None, tst)
            block.label_source = functools.partial(labels, k + 1)
            yield block
        del loaded
        start = stop


@functools.lru_cache(maxsize=256)
def _axis_resolution(axis: str) -> Period:
    """The resolution a SingleTimeSeries axis (``R<n>/<anchor>/<resolution>``) names."""
    return as_period(axis.rsplit("/", 1)[1])
