"""Columnar readers: one timestep (or one forecast window) of many series per call.

``Store.build_static_reader`` / ``Store.build_forecast_reader`` match series once and
fix where each column reads; ``Store.static_read`` / ``Store.forecast_read`` then fill
the reader's buffers for one instant. Each read fetches only that row (or window) of
each distinct array from its HDF5 segment (``Store.load_arrays`` with a ``part``), so a reader
holds one row per column, never the arrays: memory follows the number of columns, not
the length of the series. A read looks the arrays' places up again each time, so a
segment merged away between two reads is found at its new place.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.distinct import distinct_ints
from ..core.elements import DTYPE_NAMES, NUMPY_DTYPES
from ..core.periods import Period, as_period, divide, grid, grid_index, step
from ..core.timeref import datetime_to_ms, ms_to_axis_instant, ms_to_datetime, ms_to_datetimes
from ..errors import InvalidParameterError
from ..model import TimeSeriesType
from .rows import SeriesRow, filter_signature

if TYPE_CHECKING:
    from .api import StoreApi

_STATIC = (
    TimeSeriesType.SingleTimeSeries,
    TimeSeriesType.NonSequentialTimeSeries,
    TimeSeriesType.PersistentTimeSeries,
)
_FORECASTS = (
    TimeSeriesType.Deterministic,
    TimeSeriesType.DeterministicSingleTimeSeries,
    TimeSeriesType.Probabilistic,
    TimeSeriesType.Scenarios,
)


#: The ``list_metadata`` filter keywords a reader takes (its type and resolution are its own).
READER_FILTERS = (
    "owner_id",
    "owner_category",
    "owner_type",
    "name",
    "name_glob",
    "component_field",
    "zoneless",
    "initial_timestamp",
    "length",
    "features",
    "features_exact",
)


def reader_filter_keywords(fn: Any) -> Any:
    """Spell ``fn``'s ``**filters`` out as the keyword-only :data:`READER_FILTERS` in its
    signature, in the reference's order (``help()``, editors, introspection)."""
    import inspect

    fn.__signature__ = filter_signature(inspect.signature(fn), READER_FILTERS)
    return fn


def reader_filters(filters: dict[str, Any], what: str) -> dict[str, Any]:
    """``filters`` checked against :data:`READER_FILTERS` (a caller's keyword, so a wrong
    one is a ``TypeError`` naming it, as for any Python function)."""
    for k in filters:
        if k not in READER_FILTERS:
            raise TypeError(f"{what}() got an unexpected keyword argument {k!r}")
    return filters


def _kind(value: Any, what: str) -> TimeSeriesType:
    if isinstance(value, TimeSeriesType):
        return value
    if isinstance(value, str):
        try:
            return TimeSeriesType[value]
        except KeyError:
            pass
    raise InvalidParameterError(
        f"{what}: time_series_type {value!r} is not a time-series type; give one of "
        + ", ".join(t.name for t in TimeSeriesType)
    )


def _axis_reference(rows: list[SeriesRow], what: str) -> str | None:
    """The one time reference a reader's axis carries (``utc`` when columns only agree on
    instants); a mix of zoneless and zoned columns has no common axis."""
    refs = {r.time_reference for r in rows}
    zoneless = [r for r in rows if r.time_reference == "zoneless"]
    if zoneless and len(zoneless) != len(rows):
        other = next(r for r in rows if r.time_reference != "zoneless")
        raise InvalidParameterError(
            f"{what}: series {zoneless[0].label} is zoneless (wall clock) but {other.label} "
            "records instants; a reader needs one kind of axis, so filter with zoneless="
        )
    return refs.pop() if len(refs) == 1 else "utc"


def _instant(when: Any, time_reference: str | None, what: str) -> int:
    """``when`` as ms, spelled the way the reader's axis is (aware, or naive if zoneless)."""
    if not isinstance(when, datetime):
        raise InvalidParameterError(f"{what}: when must be a datetime, got {type(when).__name__}")
    zoneless = time_reference == "zoneless"
    if when.tzinfo is None and not zoneless:
        raise InvalidParameterError(
            f"{what}: when carries no zone, but this reader's timeline records instants "
            f'(time_reference "{time_reference}"); give an aware datetime'
        )
    if when.tzinfo is not None and zoneless:
        raise InvalidParameterError(
            f"{what}: when carries a zone, but this reader's timeline is zoneless (wall "
            "clock only); give a naive datetime"
        )
    return datetime_to_ms(when, what="when")


def _render(ms: int, time_reference: str | None) -> str:
    return ms_to_datetime(int(ms), time_reference).isoformat()


def _grid_step(anchor: int, period: Period, n: int, t: int, what: str) -> int:
    """The step of ``t`` on the grid ``anchor + k·period`` (``k < n``), or a refusal."""
    k = int(grid_index(anchor, period, np.array([t], dtype=np.int64))[0])
    if k < 0:
        raise InvalidParameterError(
            f"{what}: timestamp {ms_to_axis_instant(t)} is not aligned to the {period} grid "
            f"starting at {ms_to_axis_instant(anchor)}"
        )
    if k >= n:
        raise InvalidParameterError(
            f"{what}: timestamp {ms_to_axis_instant(t)} (index {k}) is past the reader's "
            f"extent ({n} steps)"
        )
    return k


def _checked_index(index: Any, n: int, what: str) -> int:
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise InvalidParameterError(f"{what} index must be an int, got {type(index).__name__}")
    if not 0 <= int(index) < n:
        raise InvalidParameterError(
            f"{what} index {index} out of range (this reader has {n}; give 0 to {n - 1})"
        )
    return int(index)


def _fill(buf: np.ndarray, i: int, value: np.ndarray) -> None:
    """Put one column's value in its buffer row; a ragged composite stored at its minimal
    width is padded back to the group's width with zeros."""
    if value.shape == buf.shape[1:]:
        buf[i] = value
    else:
        buf[i] = 0
        buf[(i, *(slice(0, d) for d in value.shape))] = value


class StaticReader:
    """A prepared columnar reader over static series sharing one timeline.

    Build with ``Store.build_static_reader``, fill with ``Store.static_read(reader,
    when)``, then read a group's buffer with :meth:`group_values`. Columns are grouped
    by ``(dtype, element_type, element_shape)``, in id order.
    """

    def __init__(
        self,
        *,
        kind: TimeSeriesType,
        time_reference: str | None,
        groups: list[dict[str, Any]],
        keys: list[list[tuple[bytes, str]]],
        buffers: list[np.ndarray],
        offsets: list[np.ndarray],
        anchor: int,
        period: Period | None,
        length: int,
        timeline: np.ndarray | None,
        column_ts: list[list[np.ndarray]] | None,
        labels: list[list[str]],
    ) -> None:
        self._kind = kind
        self._tr = time_reference
        self._groups = groups
        self._keys = keys
        self._buffers = buffers
        self._offsets = offsets
        self._anchor = anchor
        self._period = period
        self._length = length
        self._timeline = timeline
        self._column_ts = column_ts
        self._labels = labels
        self._read = False

    def grid(self) -> dict[str, Any]:
        """The shared timeline: ``time_series_type``, ``initial_timestamp`` (RFC 3339),
        ``resolution`` (None for the irregular types), ``length``, ``time_reference``."""
        return {
            "time_series_type": self._kind.name,
            "initial_timestamp": _render(self._anchor, self._tr),
            "resolution": None if self._period is None else str(self._period),
            "length": self._length,
            "time_reference": self._tr,
        }

    def groups(self) -> list[dict[str, Any]]:
        """One dict per group: ``dtype``, ``element_type``, ``element_shape``, ``ids``."""
        return [
            dict(g, element_shape=list(g["element_shape"]), ids=list(g["ids"]))
            for g in self._groups
        ]

    def timestamps(self) -> list[datetime]:
        """Every timestamp on the reader's timeline, in order."""
        if self._timeline is not None:
            return ms_to_datetimes(self._timeline, self._tr)
        assert self._period is not None
        return ms_to_datetimes(grid(self._anchor, self._period, self._length), self._tr)

    def group_values(self, index: int) -> np.ndarray:
        """The latest read of group ``index``, shaped ``(num_columns, *element_shape)``."""
        i = _checked_index(index, len(self._groups), "group")
        if not self._read:
            raise InvalidParameterError(
                "group_values: nothing read yet; call Store.static_read(reader, when) first"
            )
        return self._buffers[i].copy()

    def _rows_at(self, t: int, what: str) -> list[np.ndarray]:
        """Each group's per-column row index at instant ``t``."""
        if self._column_ts is not None:  # persistent: the breakpoint in force, per column
            out = []
            for labels, stamps in zip(self._labels, self._column_ts, strict=True):
                idx = np.empty(len(stamps), dtype=np.int64)
                for c, ts in enumerate(stamps):
                    k = int(np.searchsorted(ts, t, side="right")) - 1
                    if k < 0:
                        raise InvalidParameterError(
                            f"{what}: {ms_to_axis_instant(t)} is before the first breakpoint "
                            f"of series {labels[c]}; read at or after it"
                        )
                    idx[c] = k
                out.append(idx)
            return out
        if self._timeline is not None:  # non-sequential: one shared timestamp vector
            k = int(np.searchsorted(self._timeline, t))
            if k >= self._length or int(self._timeline[k]) != t:
                raise InvalidParameterError(
                    f"{what}: timestamp {ms_to_axis_instant(t)} is not on this reader's "
                    "timeline; use one of reader.timestamps()"
                )
        else:
            assert self._period is not None
            k = _grid_step(self._anchor, self._period, self._length, t, what)
        return [off + k for off in self._offsets]

    def __repr__(self) -> str:
        cols = sum(len(g["ids"]) for g in self._groups)
        res = "" if self._period is None else f", resolution={self._period}"
        return (
            f"StaticReader({self._kind.name}, initial_timestamp="
            f"{ms_to_axis_instant(self._anchor)}{res}, length={self._length}, "
            f"groups={len(self._groups)}, columns={cols})"
        )


class ForecastReader:
    """A prepared per-entry window reader over forecasts of one type sharing one window
    timeline. Build with ``Store.build_forecast_reader``, fill with
    ``Store.forecast_read(reader, when)``, then read an entry with :meth:`entry_values`.
    """

    def __init__(
        self,
        *,
        kind: TimeSeriesType,
        time_reference: str | None,
        rows: list[SeriesRow],
        slots: list[int],
        anchor: int,
        resolution: Period,
        interval: Period,
        count: int,
    ) -> None:
        self._kind = kind
        self._tr = time_reference
        self._rows = rows
        self._slots = slots
        self._anchor = anchor
        self._resolution = resolution
        self._interval = interval
        self._count = count
        self._values: list[np.ndarray] | None = None

    def entries(self) -> list[int]:
        """The entries' series ids, in order (parallel to :meth:`entry_values`)."""
        return [r.id for r in self._rows]

    def num_slots(self) -> int:
        """Distinct windows read per ``forecast_read`` (entries sharing an array share one)."""
        return len(set(self._slots))

    def entry_slot(self, index: int) -> int:
        """The 0-based slot behind entry ``index``; equal slots share one window."""
        return self._slots[_checked_index(index, len(self._rows), "entry")]

    def entry_values(self, index: int) -> np.ndarray:
        """The latest read of entry ``index``: its window, shaped like one window."""
        i = _checked_index(index, len(self._rows), "entry")
        if self._values is None:
            raise InvalidParameterError(
                "entry_values: nothing read yet; call Store.forecast_read(reader, when) first"
            )
        return self._values[self._slots[i]].copy()

    def timeline(self) -> dict[str, Any]:
        """The window timeline: ``initial_timestamp``, ``resolution``, ``interval``,
        ``count``, ``time_series_type``, ``time_reference``."""
        return {
            "initial_timestamp": _render(self._anchor, self._tr),
            "resolution": str(self._resolution),
            "interval": str(self._interval),
            "count": self._count,
            "time_series_type": self._kind.name,
            "time_reference": self._tr,
        }

    def timestamps(self) -> list[datetime]:
        """Every window start, in order."""
        return ms_to_datetimes(grid(self._anchor, self._interval, self._count), self._tr)

    def __repr__(self) -> str:
        return (
            f"ForecastReader(time_series_type={self._kind.name}, initial_timestamp="
            f"{ms_to_axis_instant(self._anchor)}, resolution={self._resolution}, "
            f"interval={self._interval}, count={self._count}, entries={len(self._rows)})"
        )


# ---------------------------------------------------------------------- building
def _owner_order(r: SeriesRow) -> tuple:
    """The order of a reader's columns and entries: the reference's, not insertion order.

    Callers zip a reader's columns with their owners; the reference lays them out by owner
    id, then owner category (Component first), then name, then features (none first, then
    by key and value), so ours must too or one owner's values land under another's name.
    The catalog id breaks what is left of a tie. Sorted once, when the reader is built.
    """
    feats = tuple(sorted((str(k), str(v)) for k, v in r.features.items()))
    return (r.owner_id, int(r.owner_category), r.name, feats, r.id)


def build_static_reader(
    store: StoreApi,
    resolution: Any,
    *,
    window_start: datetime | None,
    window_length: int | None,
    time_series_type: Any,
    filters: dict[str, Any],
) -> StaticReader:
    what = "build_static_reader"
    kind = _kind(time_series_type or "SingleTimeSeries", what)
    if kind not in _STATIC:
        raise InvalidParameterError(
            f"{what} handles the static types (SingleTimeSeries / NonSequentialTimeSeries / "
            f"PersistentTimeSeries); got {kind.name} (use build_forecast_reader for forecasts)"
        )
    regular = kind is TimeSeriesType.SingleTimeSeries
    if regular and resolution is None:
        raise InvalidParameterError(
            f"{what} requires a resolution for SingleTimeSeries (one resolution per reader)"
        )
    if not regular and resolution is not None:
        raise InvalidParameterError(
            f"{what}: {kind.name} has no resolution; omit resolution= for this type"
        )
    if not regular and (window_start is not None or window_length is not None):
        raise InvalidParameterError(
            f"{what}: window_start / window_length apply to SingleTimeSeries only; "
            f"{kind.name} carries its own timeline"
        )
    if window_length is not None and window_start is None:
        raise InvalidParameterError(f"{what}: window_length needs a window_start")
    if window_length is not None and (
        isinstance(window_length, bool) or not isinstance(window_length, int) or window_length < 1
    ):
        raise InvalidParameterError(
            f"{what}: window_length must be a positive int (timesteps), got {window_length!r}"
        )
    if regular:
        filters = dict(filters, resolution=resolution)
    rows = sorted(store.select_rows(time_series_type=kind, **filters), key=_owner_order)
    if not rows:
        raise InvalidParameterError(f"{what}: no {kind.name} match the filter")
    tr = _axis_reference(rows, what)
    first = rows[0]
    timeline = None
    period = None
    offsets: dict[int, int] = {}
    if regular:
        period = as_period(first.resolution)
        if window_start is None:
            anchor, length = int(first.initial_ms), first.length
            for r in rows:
                if (r.initial_ms, r.length) != (anchor, length):
                    raise InvalidParameterError(
                        f"StaticReader requires a uniform grid; series {r.label} has grid "
                        f"({ms_to_axis_instant(r.initial_ms)}, {r.resolution}, {r.length}) but "
                        f"the reader grid is ({ms_to_axis_instant(anchor)}, {first.resolution}, "
                        f"{length}). Either build the reader over a window (window_start=, "
                        "plus window_length= if you want one) to sweep a span they share, or "
                        "filter to one grid with initial_timestamp= and length="
                    )
                offsets[r.id] = 0
        else:
            anchor = _instant(window_start, tr, what)
            reach = []
            for r in rows:
                off = int(grid_index(r.initial_ms, period, np.array([anchor], np.int64))[0])
                if off < 0 or off >= r.length:
                    raise InvalidParameterError(
                        f"{what}: series {r.label} does not cover window_start "
                        f"{ms_to_axis_instant(anchor)} on one of its own steps (it starts at "
                        f"{ms_to_axis_instant(r.initial_ms)}, {r.length} steps of "
                        f"{r.resolution}); move window_start or narrow the filter"
                    )
                if period.calendar and (
                    ms_to_datetime(r.initial_ms, "utc").day != ms_to_datetime(anchor, "utc").day
                ):
                    raise InvalidParameterError(
                        f"{what}: re-anchoring the monthly series {r.label} at "
                        f"{ms_to_axis_instant(anchor)} would move its dates (it falls on day "
                        f"{ms_to_datetime(r.initial_ms, 'utc').day}); anchor on that day"
                    )
                offsets[r.id] = off
                reach.append((r.length - off, r))
            length = min(n for n, _ in reach) if window_length is None else window_length
            for n, r in reach:
                if n < length:
                    raise InvalidParameterError(
                        f"{what}: series {r.label} has {n} steps from window_start, fewer "
                        f"than window_length {length}; shorten the window or narrow the filter"
                    )
    elif kind is TimeSeriesType.NonSequentialTimeSeries:
        for r in rows:
            if r.timestamps_hash != first.timestamps_hash:
                raise InvalidParameterError(
                    f"StaticReader requires one timestamp vector; series {r.label} has "
                    f"timestamps other than those of {first.label}; filter to series that "
                    "share one"
                )
        key = (first.timestamps_hash, "timestamps")
        timeline = np.asarray(store.load_arrays([key])[key], dtype=np.int64)
        anchor, length = int(timeline[0]), len(timeline)
        offsets = dict.fromkeys((r.id for r in rows), 0)
    else:  # persistent: each column carries its own breakpoints forward
        keys = {(r.timestamps_hash, "timestamps") for r in rows}
        stamps = {k[0]: np.asarray(v, dtype=np.int64) for k, v in store.load_arrays(keys).items()}
        timeline = distinct_ints(np.concatenate(list(stamps.values())))
        anchor, length = int(timeline[0]), len(timeline)
        offsets = dict.fromkeys((r.id for r in rows), 0)

    dtypes = {
        k: loc[0] for k, loc in store.array_locations({(r.data_hash, "data") for r in rows}).items()
    }
    order: dict[tuple, int] = {}
    groups: list[dict[str, Any]] = []
    members: list[list[SeriesRow]] = []
    for r in rows:
        g = (dtypes[(r.data_hash, "data")], r.element_type, tuple(r.element_shape))
        if g not in order:
            order[g] = len(groups)
            groups.append({"dtype": g[0], "element_type": g[1], "element_shape": g[2], "ids": []})
            members.append([])
        groups[order[g]]["ids"].append(r.id)
        members[order[g]].append(r)
    # The groups in the reference's order too (probed): by dtype in DTYPE_NAMES order
    # (f64, f32, i64, i32, …), then element type, then element shape.
    rank = sorted(
        range(len(groups)),
        key=lambda i: (
            DTYPE_NAMES.index(groups[i]["dtype"]),
            groups[i]["element_type"],
            groups[i]["element_shape"],
        ),
    )
    groups = [groups[i] for i in rank]
    members = [members[i] for i in rank]
    return StaticReader(
        kind=kind,
        time_reference=tr,
        groups=groups,
        keys=[[(r.data_hash, "data") for r in m] for m in members],
        buffers=[
            np.zeros((len(m), *g["element_shape"]), dtype=NUMPY_DTYPES[g["dtype"]])
            for g, m in zip(groups, members, strict=True)
        ],
        offsets=[np.array([offsets[r.id] for r in m], dtype=np.int64) for m in members],
        anchor=anchor,
        period=period,
        length=length,
        timeline=timeline,
        column_ts=None
        if kind is not TimeSeriesType.PersistentTimeSeries
        else [[stamps[r.timestamps_hash] for r in m] for m in members],
        labels=[[r.label for r in m] for m in members],
    )


def _read_instant(reader: Any, cls: type, when: Any, what: str, builder: str) -> int:
    """``when`` in ms, once ``reader`` is known to be a ``cls`` (from ``builder``)."""
    if not isinstance(reader, cls):
        raise InvalidParameterError(
            f"{what} needs a {cls.__name__} from {builder}, got {type(reader).__name__}"
        )
    return _instant(when, reader._tr, what)


def static_read(store: StoreApi, reader: Any, when: Any) -> None:
    """Fill ``reader``'s group buffers with every column's value at ``when``."""
    t = _read_instant(reader, StaticReader, when, "static_read", "build_static_reader")
    rows = reader._rows_at(t, "static_read")
    # Columns reading the same row go in one batch: one row of each distinct array.
    by_row: dict[int, list[tuple[int, int, tuple[bytes, str]]]] = {}
    for g, (keys, idx) in enumerate(zip(reader._keys, rows, strict=True)):
        for c, (key, k) in enumerate(zip(keys, idx, strict=True)):
            by_row.setdefault(int(k), []).append((g, c, key))
    for k, cols in by_row.items():
        values = store.load_arrays({key for _, _, key in cols}, part=(k,))
        for g, c, key in cols:
            _fill(reader._buffers[g], c, values[key])
    reader._read = True


def build_forecast_reader(
    store: StoreApi, time_series_type: Any, resolution: Any, *, filters: dict[str, Any]
) -> ForecastReader:
    what = "build_forecast_reader"
    kind = _kind(time_series_type, what)
    if kind not in _FORECASTS:
        raise InvalidParameterError(
            f"{what} handles forecast types (Deterministic/DeterministicSingleTimeSeries/"
            f"Probabilistic/Scenarios); got {kind.name} (use build_static_reader)"
        )
    if resolution is None:
        raise InvalidParameterError(f"{what} requires a resolution (one resolution per reader)")
    kinds = [kind]
    if kind is TimeSeriesType.Deterministic:  # as a read request: the derived ones too
        kinds.append(TimeSeriesType.DeterministicSingleTimeSeries)
    # A Deterministic selection may already hold the derived rows: one entry per id.
    by_id = {
        r.id: r
        for k in kinds
        for r in store.select_rows(time_series_type=k, resolution=resolution, **filters)
    }
    rows = sorted(by_id.values(), key=_owner_order)
    if not rows:
        raise InvalidParameterError(f"{what}: no forecasts match the filter")
    tr = _axis_reference(rows, what)
    first = rows[0]
    for r in rows:
        if (r.initial_ms, r.interval, r.count) != (first.initial_ms, first.interval, first.count):
            raise InvalidParameterError(
                f"ForecastReader requires one window timeline; series {r.label} has windows "
                f"({ms_to_axis_instant(r.initial_ms)}, interval {r.interval}, count {r.count}) "
                f"but the reader's are ({ms_to_axis_instant(first.initial_ms)}, interval "
                f"{first.interval}, count {first.count}); filter to one with "
                "initial_timestamp= or name="
            )
    # Entries reading the same array the same way share one slot (one read per call).
    plans: dict[tuple, int] = {}
    slots = [plans.setdefault((r.data_hash, r.type, r.horizon), len(plans)) for r in rows]
    return ForecastReader(
        kind=kind,
        time_reference=tr,
        rows=rows,
        slots=slots,
        anchor=int(first.initial_ms),
        resolution=as_period(first.resolution),
        interval=as_period(first.interval, what="interval"),
        count=int(first.count),
    )


def forecast_read(store: StoreApi, reader: Any, when: Any) -> None:
    """Fill ``reader``'s entries with every forecast's window issued at ``when``."""
    t = _read_instant(reader, ForecastReader, when, "forecast_read", "build_forecast_reader")
    k = _grid_step(reader._anchor, reader._interval, reader._count, t, "forecast_read")
    # Group the slots by selection so each selection is one batched read.
    first_of: dict[int, SeriesRow] = {}
    for r, s in zip(reader._rows, reader._slots, strict=True):
        first_of.setdefault(s, r)
    # Keyed by a hashable spelling of the selection (slices are not hashable before 3.12).
    parts: dict[str, tuple[tuple, list[int]]] = {}
    for s, r in first_of.items():
        if r.type is TimeSeriesType.DeterministicSingleTimeSeries:
            # A window of the source series: its steps from the window's issue time.
            res = as_period(r.resolution)
            start = step(r.initial_ms, reader._interval, k)
            i0 = int(grid_index(r.initial_ms, res, np.array([start], np.int64))[0])
            h = divide(as_period(r.horizon, what="horizon"), res)
            part: tuple = (slice(i0, i0 + h),)
        else:
            part = (*([slice(None)] * (r.type.leading_dims - 1)), k)
        parts.setdefault(repr(part), (part, []))[1].append(s)
    values: list[np.ndarray | None] = [None] * len(first_of)
    for part, group in parts.values():
        loaded = store.load_arrays({(first_of[s].data_hash, "data") for s in group}, part=part)
        for s in group:
            values[s] = loaded[(first_of[s].data_hash, "data")]
    reader._values = values  # type: ignore[assignment]
