"""Export planning and row generation, independent of the container.

``plan_export`` turns a selection into partitions, each with its series, its distinct
array keys (``data_hash``, ``time_axis``) and their 1-based ids, and the refusals that
must fire before anything is written (empty series, a derived-type filter). Most keys
come straight from the catalog; only a ``time_range`` slice or a materialized
DeterministicSingleTimeSeries needs its arrays read (and hashed) while planning.

``iter_partition_arrays`` then streams one partition's distinct arrays in key order as
``RowBlock`` objects: the value rows in table order and the coordinates beside them. A
SQLite writer and a Parquet writer consume the same blocks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ..core.elements import minimal_width, shrink
from ..core.hashing import data_hash
from ..core.periods import Period, grid, step
from ..core.slicing import slice_range
from ..errors import INCLUDE_DERIVED, TRANSFORM, ZONED_RETRY, InvalidParameterError, Notice
from ..model import TimeSeriesType
from ..store.rows import SeriesRow
from .layout import (
    Partition,
    PartitionKey,
    assign_names,
    forecast_axis,
    static_axis,
    validate_prefix,
    value_shape_for,
)

if TYPE_CHECKING:
    from ..store import Store

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class SeriesRef:
    """What a plan keeps of a catalog row: enough to order and name it. The writer reads
    the full row back from the catalog when it needs it (a plan of many series stays small)."""

    id: int
    owner_id: int
    name: str

    @property
    def label(self) -> str:
        return f"'{self.name}' (owner {self.owner_id})"


@dataclass(slots=True)
class ExportSeries:
    """One series as the export writes it (its grid is the exported slice's)."""

    row: SeriesRef
    key: tuple[str, str]  # (data_hash hex, time_axis)
    initial_ms: int | None
    length: int | None
    count: int | None
    rows: int


#: Keys of the per-partition result of an export, in the reference's order.
SUMMARY_KEYS = (
    "values_table",
    "series_table",
    "arrays_table",
    "time_series_type",
    "value_type",
    "time_reference",
    "arrays",
    "series",
    "rows",
)


@dataclass(slots=True)
class PartitionPlan:
    partition: Partition
    series: list[ExportSeries] = field(default_factory=list)
    array_ids: dict[tuple[str, str], int] = field(default_factory=dict)
    rows: int = 0
    # The widest value row (last axis) of any array, read from the catalog or the
    # planned slice: a Parquet file fixes its composite column's width before any row.
    width: int = 0
    # The store planned from: the writer reads the full series rows back from it.
    source: Store | None = field(default=None, repr=False, compare=False)

    def summary(self) -> dict[str, Any]:
        """The per-partition result dict, keys in the reference's order (``SUMMARY_KEYS``)."""
        p = self.partition
        values = (
            p.values_table,
            p.series_table,
            p.arrays_table,
            p.key.type.name,
            p.key.value_slug,
            p.key.reference_label,
            len(self.array_ids),
            len(self.series),
            self.rows,
        )
        return dict(zip(SUMMARY_KEYS, values, strict=True))


@dataclass(slots=True)
class ExportPlan:
    partitions: list[PartitionPlan]
    time_range: tuple[datetime, datetime] | None
    include_derived: bool
    #: DeterministicSingleTimeSeries the selection matched and the export leaves out.
    derived_left_out: int = 0

    @property
    def total_rows(self) -> int:
        return sum(p.rows for p in self.partitions)

    def summary(self) -> ExportSummary:
        return ExportSummary(
            (p.summary() for p in self.partitions), derived_left_out=self.derived_left_out
        )


class ExportSummary(list):
    """What an export returns: one dict per partition (a list, as in the reference), and
    what it left out of the selection.

    Attributes
    ----------
    derived_left_out
        How many DeterministicSingleTimeSeries the selection matched and the export did
        not write (they are views of a stored SingleTimeSeries; ``include_derived=True``
        writes them).
    notices
        The same, as sentences for a person (empty when nothing was left out).
    """

    def __init__(self, parts: Any = (), *, derived_left_out: int = 0) -> None:
        super().__init__(parts)
        self.derived_left_out = derived_left_out

    @property
    def notices(self) -> list[str]:
        return [m.render("api") for m in self.messages()]

    def messages(self) -> list[Notice]:
        """The notices as messages that each caller renders in its own words."""
        if not self.derived_left_out:
            return []
        n = self.derived_left_out
        return [
            Notice(
                f"{n} derived series (DeterministicSingleTimeSeries) "
                f"{'was' if n == 1 else 'were'} left out of the export; {{include_derived}} "
                "writes them too (no import takes them back: their SingleTimeSeries and "
                "{transform} rebuild them)",
                terms={"include_derived": INCLUDE_DERIVED, "transform": TRANSFORM},
            )
        ]


def _rows_of(series: Any) -> int:
    """Value rows an exported series writes: product of its leading dims."""
    lead = series.time_series_type.leading_dims
    return int(np.prod(series._data.shape[:lead], dtype=np.int64))


def _needs_read(row: SeriesRow, time_range: Any) -> bool:
    return time_range is not None or row.type is TimeSeriesType.DeterministicSingleTimeSeries


def export_object(
    store: Store, row: SeriesRow, stored: np.ndarray, ts: Any, time_range: Any
) -> Any:
    """The series object an export writes: minimal-width, materialized, clipped."""
    obj = store._series_from(row, stored, ts, pad=False)
    if time_range is not None:
        obj = slice_range(obj, time_range, row.label)
    et = obj._et
    if et.is_ragged and obj._data.size and minimal_width(et, obj._data) < obj._data.shape[-1]:
        # A slice (or a DST's windows) may need fewer points than the whole stored array:
        # write it, and hash it, at its own minimal width.
        obj._data = shrink(et, obj._data)
    return obj


def _key_of(obj: Any, hash_hex: str | None = None) -> tuple[str, str, int | None, int | None]:
    """(data_hash, time_axis, initial_ms, length|count) of an export object."""
    h = hash_hex or data_hash(obj._data).hex()
    tst = obj.time_series_type
    if tst.is_irregular:
        from ..core.hashing import timestamps_hash

        return h, timestamps_hash(obj._ts_ms).hex(), None, int(obj._ts_ms.size)
    if tst.is_forecast:
        axis = forecast_axis(obj._count, obj._initial_ms, obj.interval, obj.horizon, obj.resolution)
        return h, axis, obj._initial_ms, obj._count
    n = int(obj._data.shape[0])
    return h, static_axis(n, obj._initial_ms, obj.resolution), obj._initial_ms, n


def _catalog_key(row: SeriesRow) -> tuple[str, str, int | None, int | None, int, int]:
    """The export key straight from the catalog (whole series, stored form), with the
    rows it writes and its value width (ragged composites are stored at minimal width)."""
    h = row.data_hash.hex()
    tst = row.type
    shape = row.array_shape
    width = _width(shape)
    if tst.is_irregular:
        return h, row.timestamps_hash.hex(), None, shape[0], shape[0], width
    if tst.is_forecast:
        axis = forecast_axis(row.count, row.initial_ms, row.interval, row.horizon, row.resolution)
        lead = tst.leading_dims
        rows = int(np.prod(shape[:lead], dtype=np.int64))
        return h, axis, row.initial_ms, row.count, rows, width
    return (
        h,
        static_axis(shape[0], row.initial_ms, row.resolution),
        row.initial_ms,
        shape[0],
        shape[0],
        width,
    )


def _width(shape: Sequence[int]) -> int:
    return int(shape[-1]) if shape else 1


def _element_shape(row: SeriesRow) -> tuple[int, ...]:
    """Per-step shape E of a row's values (a DST reads its source's)."""
    lead = 1 if row.type is TimeSeriesType.DeterministicSingleTimeSeries else row.type.leading_dims
    return tuple(row.array_shape[lead:])


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


def plan_export(
    store: Store,
    *,
    table_prefix: str = "",
    time_range: tuple[datetime, datetime] | None = None,
    include_derived: bool = False,
    progress: Progress | None = None,
    **filters: Any,
) -> ExportPlan:
    """Plan an export of the series ``filters`` select (``list_metadata``'s keywords).

    Raises
    ------
    InvalidParameterError
        Bad prefix, a derived-type filter without ``include_derived``, a bad range, or
        empty series in the selection (all named in one error).
    """
    validate_prefix(table_prefix)
    tst = filters.get("time_series_type")
    if (
        tst is not None
        and TimeSeriesType.coerce(tst) is TimeSeriesType.DeterministicSingleTimeSeries
        and not include_derived
    ):
        raise InvalidParameterError(
            "a DeterministicSingleTimeSeries is derived from a stored SingleTimeSeries, so an "
            "export leaves it out unless asked to include derived series ({include_derived}). "
            "No import takes one back: import the SingleTimeSeries and run {transform} instead.",
            terms={"include_derived": INCLUDE_DERIVED, "transform": TRANSFORM},
        )
    if time_range is not None:
        _check_range(time_range)
    # The catalog rows stream by: a plan keeps a SeriesRef and its key, and a full row
    # only while its arrays must be read (a time_range slice, a materialized DST).
    planned: list[tuple[SeriesRef, PartitionKey, tuple | None]] = []
    to_read: list[SeriesRow] = []
    derived_left_out = 0
    aware = time_range is not None and time_range[0].tzinfo is not None
    zoneless: list[str] = []
    # Ragged composites are stored at their minimal width, which the catalog row (the
    # width the series was added with) does not record: looked up below, per array.
    ragged: dict[int, bytes] = {}
    for row in store.iter_select_rows(**filters):
        if not include_derived and row.type is TimeSeriesType.DeterministicSingleTimeSeries:
            derived_left_out += 1
            continue
        if aware and row.time_reference == "zoneless":
            zoneless.append(row.label)
        pkey = _partition_key(row)
        ref = SeriesRef(row.id, row.owner_id, row.name)
        if _needs_read(row, time_range):
            to_read.append(row)
            planned.append((ref, pkey, None))
        else:
            planned.append((ref, pkey, _catalog_key(row)))
            if _is_ragged(pkey):
                ragged[ref.id] = row.data_hash
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
    read_keys: dict[int, tuple] = {}
    done = 0
    for batch in store.iter_arrays(to_read):
        for row, stored, ts in batch:
            obj = export_object(store, row, stored, ts, time_range)
            h, axis, anchor, n = _key_of(obj)
            read_keys[row.id] = (h, axis, anchor, n, _rows_of(obj), _width(obj._data.shape))
            done += 1
        if progress:
            progress(done, len(to_read))
    del to_read
    if read_keys:
        planned = [(ref, pk, k if k is not None else read_keys[ref.id]) for ref, pk, k in planned]
    if ragged:
        locations = store._locations({(h, "data") for h in ragged.values()})
        widths = {h: _width(orjson.loads(loc[1])) for (h, _), loc in locations.items()}
        planned = [
            (ref, pk, (*k[:5], widths[ragged[ref.id]]) if ref.id in ragged else k)
            for ref, pk, k in planned
        ]
    del ragged

    empty = [ref.label for ref, _, k in planned if k[4] == 0]
    if empty:
        raise InvalidParameterError(
            f"{len(empty)} of the selected series hold no values and cannot be exported: "
            f"{', '.join(empty)}. Narrow the selection past them.",
            series=empty,
        )

    by_key: dict[PartitionKey, list[tuple[SeriesRef, tuple]]] = {}
    for ref, pkey, k in planned:
        by_key.setdefault(pkey, []).append((ref, k))
    del planned
    partitions = []
    for part in assign_names(by_key, table_prefix):
        pp = PartitionPlan(part, source=store)
        rows_by_array: dict[tuple[str, str], int] = {}
        is_forecast = part.key.type.is_forecast
        for ref, (h, axis, anchor, n, nrows, width) in by_key[part.key]:
            pp.width = max(pp.width, width)
            pp.series.append(
                ExportSeries(
                    row=ref,
                    key=(h, axis),
                    initial_ms=anchor,
                    length=None if is_forecast else n,
                    count=n if is_forecast else None,
                    rows=nrows,
                )
            )
            rows_by_array[(h, axis)] = nrows
        # Ids are the 1-based rank of the key, compared as byte strings.
        for i, key in enumerate(
            sorted(rows_by_array, key=lambda k: (k[0].encode(), k[1].encode()))
        ):
            pp.array_ids[key] = i + 1
        pp.rows = sum(rows_by_array.values())
        partitions.append(pp)
    return ExportPlan(partitions, time_range, include_derived, derived_left_out)


def _check_range(time_range: Any) -> None:
    try:
        start, end = time_range
    except (TypeError, ValueError):
        raise InvalidParameterError("time_range must be a (start, end) pair of datetimes") from None
    if not isinstance(start, datetime) or not isinstance(end, datetime):
        raise InvalidParameterError("time_range must be a (start, end) pair of datetimes")
    if (start.tzinfo is None) != (end.tzinfo is None):
        raise InvalidParameterError(
            "time_range mixes a naive and an aware bound; spell both the same way"
        )
    if end < start:
        raise InvalidParameterError(f"time_range end < start ({end} < {start})")


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
    labels: list[str] = field(default_factory=list)  # series sharing this array (catalog order)

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


def row_block(obj: Any, key: tuple[str, str], array_id: int) -> RowBlock:
    """The value rows of one export object, window-major for forecasts."""
    tst = obj.time_series_type
    data = obj._data
    if tst.is_irregular:
        return RowBlock(key, array_id, data, obj._ts_ms, None, None, None, tst)
    res: Period = obj._resolution
    res_ms = _fixed_ms(res)
    if not tst.is_forecast:
        n = int(data.shape[0])
        if res_ms is not None:
            return RowBlock(
                key, array_id, data, None, None, None, Affine(obj._initial_ms, 0, res_ms, n, 1), tst
            )
        return RowBlock(key, array_id, data, grid(obj._initial_ms, res, n), None, None, None, tst)
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
        np.asarray(obj._percentiles, dtype=np.float64)
        if tst is TimeSeriesType.Probabilistic
        else None
    )
    itv: Period = obj._interval
    itv_ms = _fixed_ms(itv)
    if res_ms is not None and itv_ms is not None:
        aff = Affine(obj._initial_ms, itv_ms, res_ms, steps, lanes)
        return RowBlock(key, array_id, values, None, None, lane_values, aff, tst, lanes)
    issues = np.array([step(obj._initial_ms, itv, j) for j in range(count)], dtype=np.int64)
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
    first: dict[tuple[str, str], ExportSeries] = {}
    labels: dict[tuple[str, str], list[str]] = {}
    for s in sorted(pp.series, key=lambda s: s.row.id):
        first.setdefault(s.key, s)
        labels.setdefault(s.key, []).append(s.row.label)
    ordered = sorted(first.values(), key=lambda s: pp.array_ids[s.key])
    del first
    by_id = {s.row.id: s for s in ordered}
    rows = iter_rows(store, [s.row.id for s in ordered])
    for batch in store.iter_arrays(rows, batch_bytes=batch_bytes):  # type: ignore[arg-type]
        for row, stored, ts in batch:
            s = by_id.pop(row.id)
            obj = export_object(store, row, stored, ts, plan.time_range)
            block = row_block(obj, s.key, pp.array_ids[s.key])
            block.labels = labels.pop(s.key)
            yield block


def iter_rows(store: Store, ids: Sequence[int], chunk: int = 500) -> Iterator[SeriesRow]:
    """Full catalog rows for ``ids`` in the order given, read back ``chunk`` at a time."""
    for start in range(0, len(ids), chunk):
        yield from store.rows_by_ids(ids[start : start + chunk])


def series_values(
    store: Store, pp: PartitionPlan, ordered: Sequence[ExportSeries]
) -> Iterator[dict[str, Any]]:
    """Every series-table column of each series in ``ordered``, as the layout spells it
    (a container may retype a column: Parquet's ``initial_timestamp`` is a timestamp).
    The full catalog rows stream back a chunk at a time."""
    tst = pp.partition.key.type
    reference = pp.partition.key.reference_label
    for s, r in zip(ordered, iter_rows(store, [s.row.id for s in ordered]), strict=True):
        yield {
            "array_id": pp.array_ids[s.key],
            "id": r.id,
            "owner_id": r.owner_id,
            "owner_type": r.owner_type,
            "owner_category": r.owner_category.name,
            "time_series_type": tst.name,
            "name": r.name,
            "initial_timestamp": s.initial_ms,
            "resolution": r.resolution,
            "length": s.length,
            "interval": r.interval,
            "horizon": r.horizon,
            "count": s.count,
            "features": orjson.dumps(r.features, option=orjson.OPT_SORT_KEYS).decode(),
            "element_type": r.element_type,
            "element_shape": orjson.dumps(r.element_shape).decode(),
            "time_reference": reference,
            **{k: (v if v is not None else "") for k, v in r.descriptors().items()},
        }


def series_labels(series: Sequence[ExportSeries]) -> list[str]:
    return [s.row.label for s in series]
