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

import bisect
import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ..core.elements import minimal_width, shrink
from ..core.hashing import data_hash
from ..core.periods import Period, as_period, grid, step
from ..core.slicing import slice_range
from ..errors import INCLUDE_DERIVED, TRANSFORM, ZONED_RETRY, InvalidParameterError, Notice
from ..model import OwnerCategory, TimeSeriesType
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


class PartitionPlan:
    """One partition of a plan, held as compact columns rather than an object per series.

    Series are in catalog (id) order, arrays in array-id order (position ``k`` is array
    id ``k + 1``). A plan of 20,000 series holds a few numpy vectors and one hash and
    one (shared) axis text per distinct array.

    Attributes
    ----------
    ids, owners, aids, anchors, counts : numpy.ndarray
        Per series (int64): catalog id, owner id, array id, the exported grid's first
        instant (0 for the irregular types, which have none) and its ``length`` or, for
        the forecast types, ``count``.
    name_codes : numpy.ndarray
        Per series: its name's index in ``names``.
    hashes, axes : list
        Per array: the ``data_hash`` (raw bytes) and the ``time_axis`` text of its key.
    array_rows, firsts : numpy.ndarray
        Per array: value rows, and the position (in the series vectors) of the first
        series in catalog order that holds it (the one its values are read through).
    rows
        Value rows of the partition (each distinct array once).
    width
        The widest value row (last axis) of any array, read from the catalog or the
        planned slice: a Parquet file fixes its composite column's width before any row.
    source
        The store planned from (the writers read the full series rows back from it).
    """

    __slots__ = (
        "_array_ids",
        "aids",
        "anchors",
        "array_rows",
        "axes",
        "counts",
        "firsts",
        "hashes",
        "ids",
        "name_codes",
        "names",
        "owners",
        "partition",
        "rows",
        "source",
        "width",
    )

    def __init__(
        self,
        partition: Partition,
        *,
        ids: np.ndarray,
        owners: np.ndarray,
        aids: np.ndarray,
        anchors: np.ndarray,
        counts: np.ndarray,
        name_codes: np.ndarray,
        names: list[str],
        hashes: list[bytes],
        axes: list[str],
        array_rows: np.ndarray,
        firsts: np.ndarray,
        width: int,
        source: Store | None = None,
    ) -> None:
        self.partition = partition
        self.ids, self.owners, self.aids = ids, owners, aids
        self.anchors, self.counts = anchors, counts
        self.name_codes, self.names = name_codes, names
        self.hashes, self.axes = hashes, axes
        self.array_rows, self.firsts = array_rows, firsts
        self.rows = int(array_rows.sum())
        self.width = width
        self.source = source
        self._array_ids: _ArrayIds | None = None

    def __repr__(self) -> str:
        return (
            f"PartitionPlan({self.partition.base!r}, series={len(self.ids)}, "
            f"arrays={len(self.hashes)}, rows={self.rows})"
        )

    def key(self, array_id: int) -> tuple[str, str]:
        """The ``(data_hash hex, time_axis)`` key of an array id."""
        return self.hashes[array_id - 1].hex(), self.axes[array_id - 1]

    def label(self, position: int) -> str:
        """How errors name the series at ``position``: ``'load' (owner 1)``."""
        return _label(self.names[self.name_codes[position]], int(self.owners[position]))

    def labels_by_array(self) -> Callable[[int], list[str]]:
        """``labels(array_id)``: the labels of every series holding it, catalog order."""
        order = np.argsort(self.aids, kind="stable")  # catalog order within an array
        bounds = np.searchsorted(self.aids[order], np.arange(1, len(self.hashes) + 2)).tolist()
        positions = order.tolist()

        def labels(array_id: int) -> list[str]:
            return [self.label(p) for p in positions[bounds[array_id - 1] : bounds[array_id]]]

        return labels

    @property
    def array_ids(self) -> Mapping[tuple[str, str], int]:
        """``{key: array id}``, read-only, in id order; it holds nothing of its own (a
        key is found by bisecting the plan's sorted hashes)."""
        if self._array_ids is None:
            self._array_ids = _ArrayIds(self)
        return self._array_ids

    @property
    def series(self) -> list[ExportSeries]:
        """One ``ExportSeries`` per series, catalog order (built anew on every use:
        streaming writers use the columns instead)."""
        forecast = self.partition.key.type.is_forecast
        irregular = self.partition.key.type.is_irregular
        keys = [(h.hex(), axis) for h, axis in zip(self.hashes, self.axes, strict=True)]
        rows = self.array_rows.tolist()
        out = []
        for sid, owner, code, aid, anchor, n in zip(
            self.ids.tolist(),
            self.owners.tolist(),
            self.name_codes.tolist(),
            self.aids.tolist(),
            self.anchors.tolist(),
            self.counts.tolist(),
            strict=True,
        ):
            out.append(
                ExportSeries(
                    row=SeriesRef(sid, owner, self.names[code]),
                    key=keys[aid - 1],
                    initial_ms=None if irregular else anchor,
                    length=None if forecast else n,
                    count=n if forecast else None,
                    rows=rows[aid - 1],
                )
            )
        return out

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
            len(self.hashes),
            len(self.ids),
            self.rows,
        )
        return dict(zip(SUMMARY_KEYS, values, strict=True))


class _ArrayIds(Mapping[tuple[str, str], int]):
    """A partition plan's ``{(data_hash hex, time_axis): array id}`` over its columns.

    The keys are held sorted (ids are their rank), so a lookup bisects the hashes and
    steps over the few axes one hash may have.
    """

    __slots__ = ("_pp",)

    def __init__(self, pp: PartitionPlan) -> None:
        self._pp = pp

    def __getitem__(self, key: tuple[str, str]) -> int:
        try:
            hx, axis = key
            h = bytes.fromhex(hx)
        except (TypeError, ValueError):
            raise KeyError(key) from None
        hashes, axes = self._pp.hashes, self._pp.axes
        i = bisect.bisect_left(hashes, h)
        while i < len(hashes) and hashes[i] == h:
            if axes[i] == axis:
                return i + 1
            i += 1
        raise KeyError(key)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return ((h.hex(), axis) for h, axis in zip(self._pp.hashes, self._pp.axes, strict=True))

    def __len__(self) -> int:
        return len(self._pp.hashes)


def _label(name: str, owner_id: int) -> str:
    return f"'{name}' (owner {owner_id})"


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
    """The planned series as columns (lists while the catalog streams by)."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.owners: list[int] = []
        self.name_codes: list[int] = []
        self.pkeys: list[PartitionKey] = []
        self.hashes: list[bytes | None] = []
        self.axes: list[str | None] = []
        self.anchors: list[int] = []
        self.counts: list[int] = []
        self.rows: list[int] = []
        self.widths: list[int] = []

    def set_key(self, pos: int, key: tuple) -> None:
        h, axis, anchor, n, rows, width = key
        self.hashes[pos], self.axes[pos] = h, axis
        self.anchors[pos] = 0 if anchor is None else anchor
        self.counts[pos], self.rows[pos], self.widths[pos] = n, rows, width


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
    # The catalog streams by as plain tuples of the few fields a plan needs; the plan
    # keeps columns (ids, keys, grids), and a series' arrays are read only when its key
    # depends on them (a time_range slice, a materialized DST).
    planned = _Planned()
    names: dict[str, int] = {}
    to_read: list[int] = []  # positions in ``planned``
    derived_left_out = 0
    aware = time_range is not None and time_range[0].tzinfo is not None
    zoneless: list[str] = []
    # Ragged composites are stored at their minimal width, which the catalog row (the
    # width the series was added with) does not record: looked up below, per array.
    ragged: dict[int, bytes] = {}
    classes: dict[tuple, Any] = {}
    head, tail = _CLASS_FIELDS
    # One loop step per selected series: the appends are bound once.
    add_id, add_owner, add_name = (
        planned.ids.append,
        planned.owners.append,
        planned.name_codes.append,
    )
    add_pkey, add_hash, add_axis = (
        planned.pkeys.append,
        planned.hashes.append,
        planned.axes.append,
    )
    add_anchor, add_count, add_rows, add_width = (
        planned.anchors.append,
        planned.counts.append,
        planned.rows.append,
        planned.widths.append,
    )
    for r in store.iter_select_fields(_PLAN_FIELDS, **filters):
        fields = r[head] + r[tail]
        c = classes.get(fields)
        if c is None:
            if len(classes) >= 65536:  # many distinct grids: keep the cache bounded
                classes.clear()
            c = classes[fields] = _row_class(fields, time_range, include_derived)
        if c is _LEFT_OUT:
            derived_left_out += 1
            continue
        pkey, read, axis, anchor, n, rows, width, is_ragged = c
        sid, owner, name, h = r[0], r[1], r[2], r[7]
        if aware and pkey.time_reference == "zoneless":
            zoneless.append(_label(name, owner))
        code = names.get(name)
        if code is None:
            code = names[name] = len(names)
        if read:
            to_read.append(len(planned.ids))
        elif is_ragged:
            ragged[len(planned.ids)] = h
        add_id(sid)
        add_owner(owner)
        add_name(code)
        add_pkey(pkey)
        add_hash(h)
        add_axis(r[8].hex() if axis is None and not read else axis)
        add_anchor(anchor)
        add_count(n)
        add_rows(rows)
        add_width(width)
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
    name_list = list(names)
    if to_read:
        done = 0
        rows = iter_rows(store, [planned.ids[p] for p in to_read])
        positions = iter(to_read)
        for batch in store.iter_arrays(rows):  # type: ignore[arg-type]
            for row, stored, ts in batch:
                obj = export_object(store, row, stored, ts, time_range)
                hx, axis, anchor, n = _key_of(obj)
                key = (bytes.fromhex(hx), axis, anchor, n, _rows_of(obj), _width(obj._data.shape))
                planned.set_key(next(positions), key)
                done += 1
            if progress:
                progress(done, len(to_read))
    del to_read
    if ragged:
        locations = store._locations({(h, "data") for h in ragged.values()})
        widths = {h: _width(orjson.loads(loc[1])) for (h, _), loc in locations.items()}
        for pos, h in ragged.items():
            planned.widths[pos] = widths[h]
    del ragged

    empty = [
        _label(name_list[planned.name_codes[p]], planned.owners[p])
        for p, n in enumerate(planned.rows)
        if n == 0
    ]
    if empty:
        raise InvalidParameterError(
            f"{len(empty)} of the selected series hold no values and cannot be exported: "
            f"{', '.join(empty)}. Narrow the selection past them.",
            series=empty,
        )

    by_key: dict[PartitionKey, list[int]] = {}
    for pos, pkey in enumerate(planned.pkeys):
        by_key.setdefault(pkey, []).append(pos)
    columns = {
        c: np.array(getattr(planned, c), dtype=np.int64)
        for c in ("ids", "owners", "anchors", "counts", "name_codes", "rows")
    }
    partitions = [
        _partition_plan(part, by_key.pop(part.key), planned, columns, name_list, store)
        for part in assign_names(by_key, table_prefix)
    ]
    return ExportPlan(partitions, time_range, include_derived, derived_left_out)


def _partition_plan(
    part: Partition,
    positions: list[int],
    planned: _Planned,
    columns: dict[str, np.ndarray],
    names: list[str],
    store: Store,
) -> PartitionPlan:
    """One partition's columns from its series' positions (catalog order) in ``planned``."""
    first: dict[tuple[bytes, str], int] = {}
    hashes, axes = planned.hashes, planned.axes
    keys = []
    for pos in positions:
        k = (hashes[pos], axes[pos])
        keys.append(k)
        first.setdefault(k, pos)  # type: ignore[arg-type]
    # Ids are the 1-based rank of the key, compared as byte strings (a hash's hex text
    # sorts as its bytes; the axis texts are ASCII).
    ordered = sorted(first)
    ids = {k: i for i, k in enumerate(ordered, 1)}
    take = np.array(positions, dtype=np.int64)
    firsts = np.array([first[k] for k in ordered], dtype=np.int64)
    # Each array's first series, as a position among this partition's series.
    local = np.searchsorted(take, firsts)  # positions are ascending (catalog order)
    return PartitionPlan(
        part,
        ids=columns["ids"][take],
        owners=columns["owners"][take],
        aids=np.array([ids[k] for k in keys], dtype=np.int64),
        anchors=columns["anchors"][take],
        counts=columns["counts"][take],
        name_codes=columns["name_codes"][take],
        names=names,
        hashes=[k[0] for k in ordered],
        axes=[k[1] for k in ordered],
        array_rows=columns["rows"][firsts],
        firsts=local,
        width=max(planned.widths[p] for p in positions),
        source=store,
    )


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
            block.labels = labels(aid)
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
    anchors = pp.anchors[pp.firsts].tolist()
    rows = pp.array_rows.tolist()
    grids: dict[tuple[int, str, int], Affine | np.ndarray] = {}
    start = 0
    n_arrays = len(pp.hashes)
    # The first batches are small and each is twice the last, up to ``batch_bytes``:
    # the writer waits for the first one before its first statement.
    limit = max(1, batch_bytes // 32)
    while start < n_arrays:
        stop, size = start, 0
        while stop < n_arrays and (stop == start or size + rows[stop] * step_bytes <= limit):
            size += rows[stop] * step_bytes
            stop += 1
        limit = min(2 * limit, batch_bytes)
        loaded = store._load({(h, "data") for h in pp.hashes[start:stop]})
        for k in range(start, stop):
            h, axis, n = pp.hashes[k], pp.axes[k], rows[k]
            g = (anchors[k], axis, n)
            coords = grids.get(g)
            if coords is None:
                if len(grids) >= 4096:
                    grids.clear()
                res = _axis_resolution(axis)
                res_ms = _fixed_ms(res)
                coords = grids[g] = (
                    Affine(anchors[k], 0, res_ms, n, 1)
                    if res_ms is not None
                    else grid(anchors[k], res, n)
                )
            values = loaded[(h, "data")]
            if isinstance(coords, Affine):
                block = RowBlock((h.hex(), axis), k + 1, values, None, None, None, coords, tst)
            else:
                block = RowBlock((h.hex(), axis), k + 1, values, coords, None, None, None, tst)
            block.labels = labels(k + 1)
            yield block
        del loaded
        start = stop


@functools.lru_cache(maxsize=256)
def _axis_resolution(axis: str) -> Period:
    """The resolution a SingleTimeSeries axis (``R<n>/<anchor>/<resolution>``) names."""
    return as_period(axis.rsplit("/", 1)[1])


def iter_rows(store: Store, ids: Sequence[int], chunk: int = 500) -> Iterator[SeriesRow]:
    """Full catalog rows for ``ids`` in the order given, read back ``chunk`` at a time."""
    for start in range(0, len(ids), chunk):
        yield from store.rows_by_ids(ids[start : start + chunk])


#: The catalog fields of a series-table row (``Store.iter_select_fields``), in this order.
_SERIES_FIELDS = (
    "id",
    "owner_type",
    "owner_category",
    "name",
    "resolution",
    "interval",
    "horizon",
    "features_hash",
    "features_json",
    "element_type",
    "element_shape",
    "units",
    "quantity_kind",
    "unit_system",
    "component_field",
    "application_data",
)
_OWNER_CATEGORY_NAMES = {c.value: c.name for c in OwnerCategory}


# Series whose catalog fields, or plan columns, are turned into Python values at a time.
_ROWS_CHUNK = 4096


def _series_fields(
    store: Store, ids: Sequence[int] | np.ndarray, chunk: int = _ROWS_CHUNK
) -> Iterator[tuple]:
    """``_SERIES_FIELDS`` of each of ``ids``, in the order given, ``chunk`` at a time."""
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        if isinstance(part, np.ndarray):
            part = part.tolist()
        found = {r[0]: r for r in store.iter_select_fields(_SERIES_FIELDS, ids=part)}
        if len(found) < len(set(part)):
            store.rows_by_ids([i for i in part if i not in found])  # raises NotFoundError
        for i in part:
            yield found[i]


def _chunked_rows(
    positions: np.ndarray, *columns: np.ndarray, chunk: int = _ROWS_CHUNK
) -> Iterator[tuple[int, ...]]:
    """``(columns[0][p], columns[1][p], …)`` as Python ints for each of ``positions``,
    converted ``chunk`` positions at a time."""
    for start in range(0, len(positions), chunk):
        take = positions[start : start + chunk]
        yield from zip(*(c[take].tolist() for c in columns), strict=True)


def _series_fields_ascending(store: Store, ids: list[int]) -> Iterator[tuple]:
    """``_series_fields`` of ascending ``ids``: one query, its rows in id order, each
    checked against the id it stands for (no map of rows by id)."""
    expected = iter(ids)
    for r in store.iter_select_fields(_SERIES_FIELDS, ids=ids):
        if r[0] != next(expected, None):
            break
        yield r
    else:
        if next(expected, None) is None:
            return
    found = {r[0] for r in store.iter_select_fields(("id",), ids=ids)}
    store.rows_by_ids([i for i in ids if i not in found])  # raises NotFoundError
    raise AssertionError("unreachable: a series row went missing")


class _SeriesText:
    """The series table's texts that many rows share, made once per distinct input."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.features: dict[bytes, str] = {}
        self.shapes: dict[str, str] = {}

    def feature_text(self, features_hash: bytes, features_json: str | None) -> str:
        text = self.features.get(features_hash)
        if text is None:
            features = orjson.loads(features_json) if features_json else {}
            # JSON has no ±inf (the feature JSON holds null there); the typed rows do.
            if features and None in features.values():
                features = self.store.typed_features(features_hash)
            text = orjson.dumps(features, option=orjson.OPT_SORT_KEYS).decode()
            if len(self.features) >= 4096:
                self.features.clear()
            self.features[features_hash] = text
        return text

    def shape_text(self, element_shape: str) -> str:
        text = self.shapes.get(element_shape)
        if text is None:
            text = self.shapes[element_shape] = orjson.dumps(
                list(decode_shape(element_shape))
            ).decode()
        return text


def series_records(
    store: Store, pp: PartitionPlan, *, order: str = "id"
) -> Iterator[tuple[Any, ...]]:
    """Every series-table column of each series, as one tuple per series in the
    layout's column order (``array_id``, ``id``, then ``layout.series_columns``).

    ``order`` is ``"id"`` (catalog order, the SQLite table's) or ``"array"`` (by array id,
    then id: the Parquet file's). The catalog fields stream back a chunk at a time; a
    container may retype a column (Parquet's ``initial_timestamp`` is a timestamp).
    """
    tst = pp.partition.key.type
    if order == "id":
        positions = np.arange(len(pp.ids))
    elif order == "array":
        positions = np.lexsort((pp.ids, pp.aids))
    else:
        raise ValueError(f"order must be 'id' or 'array', not {order!r}")
    reference = pp.partition.key.reference_label
    texts = _SeriesText(store)
    type_name = tst.name
    ids = pp.ids[positions]
    fields = (
        _series_fields_ascending(store, ids.tolist())
        if order == "id"
        else _series_fields(store, ids)
    )
    # The plan's columns as Python values a chunk at a time (a list of each whole would
    # hold 36 bytes a series per column).
    columns = zip(
        _chunked_rows(positions, pp.aids, pp.owners, pp.anchors, pp.counts),
        fields,
        strict=True,
    )
    forecast, static = tst.is_forecast, tst is TimeSeriesType.SingleTimeSeries
    categories = _OWNER_CATEGORY_NAMES
    feature_text, shape_text = texts.feature_text, texts.shape_text
    # One tuple per series, spelled out per kind of grid (this runs once per series).
    for (aid, owner, anchor, n), f in columns:
        sid, otype, ocat, name, res, itv, hor, fh, fjson, et, eshape, u, qk, us, cf, ad = f
        tail = (
            feature_text(fh, fjson),
            et,
            shape_text(eshape),
            reference,
            "" if u is None else u,
            "" if qk is None else qk,
            "" if us is None else us,
            "" if cf is None else cf,
            "" if ad is None else ad,
        )
        if static:
            yield (aid, sid, owner, otype, categories[ocat], type_name, name, anchor, res, n, *tail)
        elif forecast:
            yield (
                *(aid, sid, owner, otype, categories[ocat], type_name, name),
                *(anchor, res, itv, hor, n),
                *tail,
            )
        else:
            yield (aid, sid, owner, otype, categories[ocat], type_name, name, *tail)


def series_values(
    store: Store, pp: PartitionPlan, ordered: Sequence[ExportSeries]
) -> Iterator[dict[str, Any]]:
    """Every series-table column of each series in ``ordered``, as the layout spells it
    (a container may retype a column: Parquet's ``initial_timestamp`` is a timestamp).
    The catalog fields stream back a chunk at a time. (``series_records`` gives the
    same as tuples without the ``ExportSeries`` list.)"""
    tst = pp.partition.key.type
    reference = pp.partition.key.reference_label
    texts = _SeriesText(store)
    for s, f in zip(ordered, _series_fields(store, [s.row.id for s in ordered]), strict=True):
        (sid, otype, ocat, name, res, itv, hor, fh, fjson, et, eshape, *descriptors) = f
        yield {
            "array_id": pp.array_ids[s.key],
            "id": sid,
            "owner_id": s.row.owner_id,
            "owner_type": otype,
            "owner_category": _OWNER_CATEGORY_NAMES[ocat],
            "time_series_type": tst.name,
            "name": name,
            "initial_timestamp": s.initial_ms,
            "resolution": res,
            "length": s.length,
            "interval": itv,
            "horizon": hor,
            "count": s.count,
            "features": texts.feature_text(fh, fjson),
            "element_type": et,
            "element_shape": texts.shape_text(eshape),
            "time_reference": reference,
            **{
                k: (v if v is not None else "")
                for k, v in zip(_DESCRIPTORS, descriptors, strict=True)
            },
        }


_DESCRIPTORS = ("units", "quantity_kind", "unit_system", "component_field", "application_data")


def series_labels(series: Sequence[ExportSeries]) -> list[str]:
    return [s.row.label for s in series]
