"""Series as Arrow tables: ``to_arrow`` / ``from_arrow`` and ``Deterministic.to_arrow_windows``.

The table is two columns, ``timestamp`` (``timestamp[ms, tz=Z]``) and ``value`` (the
Arrow primitive of the dtype, nested ``fixed_size_list`` for a per-step shape, composites
in their stored packing), with the series' name, type, element type and shape, time
reference and set descriptors in the schema metadata — the reference's layout
(``shared/spec/parquet-layout.md``, top). The metadata key names live here once
(:data:`METADATA_KEYS`), for the Parquet form to reuse in its footers, as it reuses
:func:`arrow_zone` and :func:`require_pyarrow`.

pyarrow is optional (the ``parquet`` extra) and imported only when a table is asked for.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.elements import dtype_name, parse_element_type
from ..core.periods import as_period, grid
from ..core.timeref import reference_kind
from ..errors import InvalidParameterError, MissingDependencyError
from .base import Series
from .kinds import DESCRIPTORS, TimeSeriesType

if TYPE_CHECKING:
    from .forecasts import Deterministic

#: The ``pip`` command that installs what the Arrow (and Parquet) forms need.
INSTALL_HINT = "pip install 'infrastore-sqlite[parquet]'"

#: Schema-metadata keys every table carries (the Parquet footers use the same names).
NAME = "name"
TIME_SERIES_TYPE = "time_series_type"
ELEMENT_TYPE = "element_type"
ELEMENT_SHAPE = "element_shape"
TIME_REFERENCE = "time_reference"
#: Grid keys: ``resolution`` for a SingleTimeSeries and a window; a window adds the rest.
RESOLUTION, INTERVAL, HORIZON, COUNT, ISSUE_TIME = (
    "resolution",
    "interval",
    "horizon",
    "count",
    "issue_time",
)
#: Every key, in the order a reader should expect them; the descriptors only when set.
METADATA_KEYS: tuple[str, ...] = (
    NAME,
    TIME_SERIES_TYPE,
    ELEMENT_TYPE,
    ELEMENT_SHAPE,
    TIME_REFERENCE,
    *DESCRIPTORS,
    RESOLUTION,
    INTERVAL,
    HORIZON,
    COUNT,
    ISSUE_TIME,
)
#: The ``time_reference`` metadata value of a series without one (its column says UTC).
UNSPECIFIED = "unspecified"


def require_pyarrow() -> tuple[ModuleType, ModuleType]:
    """``(pyarrow, pyarrow.parquet)``, or an error naming the install command.

    Raises
    ------
    MissingDependencyError
        pyarrow is not installed.
    """
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise MissingDependencyError(
            f"the Parquet form needs pyarrow, which is not installed; run {INSTALL_HINT}"
        ) from None
    return pyarrow, pyarrow.parquet


def arrow_zone(time_reference: str | None) -> str | None:
    """The zone of an instant column (a series' table's, a Parquet partition's): ``UTC`` for
    utc and for an unspecified reference, the name or ``±HH:MM`` itself, none (naive)
    for zoneless. A zone literally named ``unspecified`` (which the reference reads as no
    reference, and which no reader could resolve as a zone) is treated as unspecified."""
    kind = reference_kind(time_reference)
    if kind in ("utc", "unspecified") or time_reference == "unspecified":
        return "UTC"
    if kind == "zoneless":
        return None
    return time_reference


def pyarrow() -> Any:
    """The pyarrow module, or :class:`MissingDependencyError` naming the install command."""
    return require_pyarrow()[0]


# --------------------------------------------------------------------------- writing
def _values_array(data: np.ndarray, lead: int) -> Any:
    """``data`` (steps first, then E) as an Arrow array of per-step values, without a
    Python loop: the flat buffer wrapped in one ``FixedSizeListArray`` per axis of E."""
    pa = pyarrow()
    flat = np.ascontiguousarray(data).reshape(-1)
    out = pa.array(flat, type=pa.from_numpy_dtype(flat.dtype))
    for n in reversed(data.shape[lead:]):
        out = pa.FixedSizeListArray.from_arrays(out, int(n))
    return out


def _metadata(series: Series, **extra: str) -> dict[str, str]:
    meta = {
        NAME: series.name,
        TIME_SERIES_TYPE: series.time_series_type.name,
        ELEMENT_TYPE: series.element_type,
        ELEMENT_SHAPE: json.dumps(list(series.element_shape), separators=(",", ":")),
        TIME_REFERENCE: series.time_reference or UNSPECIFIED,
    }
    meta.update({d: v for d, v in series.descriptors().items() if v is not None})
    meta.update(extra)
    return meta


def _table(ms: np.ndarray, data: np.ndarray, tr: str | None, meta: dict[str, str]) -> Any:
    pa = pyarrow()
    stamps = pa.array(np.asarray(ms, dtype=np.int64), type=pa.int64()).cast(
        pa.timestamp("ms", tz=arrow_zone(tr))
    )
    return pa.table({"timestamp": stamps, "value": _values_array(data, 1)}, metadata=meta)


def to_arrow(series: Series) -> Any:
    """A static series (regular, non-sequential or persistent) as an Arrow table."""
    regular = series.time_series_type is TimeSeriesType.SingleTimeSeries
    extra = {RESOLUTION: series.resolution} if regular else {}
    return _table(
        series.timestamps_ms, series._data, series.time_reference, _metadata(series, **extra)
    )


def windows_to_arrow(series: Deterministic) -> dict[datetime, Any]:
    """One table per forecast window, keyed by its issue time, in issue order."""
    out = {}
    for j, issue in enumerate(series.issue_times_ms()):
        when = series._render(int(issue))
        meta = _metadata(
            series,
            **{
                RESOLUTION: series.resolution,
                INTERVAL: series.interval,
                HORIZON: series.horizon,
                COUNT: str(series.count),
                # In UTC, as the reference spells it, whatever the series' time reference.
                ISSUE_TIME: (when.astimezone(UTC) if when.tzinfo else when).isoformat(),
            },
        )
        ms = grid(int(issue), series.resolution_period, series.steps)
        out[when] = _table(ms, series._data[:, j], series.time_reference, meta)
    return out


# --------------------------------------------------------------------------- reading
_UNIT_MS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


def _column(table: Any, name: str) -> Any:
    if name not in table.schema.names:
        raise InvalidParameterError(
            f"the table has no `{name}` column (it has {table.schema.names}); from_arrow "
            "reads the `timestamp` and `value` columns to_arrow writes"
        )
    col = table.column(name)
    return col.combine_chunks() if hasattr(col, "combine_chunks") else col


def _refuse_nulls(arr: Any, what: str) -> None:
    pa = pyarrow()
    while True:
        if arr.null_count:
            raise InvalidParameterError(
                f"the `{what}` column has nulls; a series holds no nulls (NaN is a value, not "
                "an absence), so fill or drop them first"
            )
        if not pa.types.is_fixed_size_list(arr.type):
            return
        arr = arr.flatten()


def _timestamps_ms(col: Any) -> tuple[np.ndarray, str | None]:
    pa = pyarrow()
    if not pa.types.is_timestamp(col.type):
        raise InvalidParameterError(
            f"the `timestamp` column is {col.type}, not a timestamp; cast it to "
            "timestamp[ms] (with a tz for instants)"
        )
    _refuse_nulls(col, "timestamp")
    raw = col.cast(pa.int64()).to_numpy(zero_copy_only=False)
    mul, div = _UNIT_MS[col.type.unit]
    if div > 1:
        bad = np.flatnonzero(raw % div)
        if bad.size:
            raise InvalidParameterError(
                f"the `timestamp` column is in {col.type.unit} and row {int(bad[0])} "
                f"({int(raw[bad[0]])}) is not a whole millisecond; a series records "
                "millisecond instants and does not round one"
            )
    return raw // div * mul, col.type.tz


def _values(col: Any) -> np.ndarray:
    pa = pyarrow()
    _refuse_nulls(col, "value")
    shape: list[int] = []
    arr = col
    while True:
        t = arr.type
        if pa.types.is_fixed_size_list(t):
            shape.append(t.list_size)
            arr = arr.flatten()
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
            raise InvalidParameterError(
                "the `value` column is a variable-length list; from_arrow reads the packed, "
                "fixed-size form composites are stored in (what to_arrow writes)"
            )
        else:
            break
    try:
        flat = arr.to_numpy(zero_copy_only=False)
        dtype_name(flat.dtype)
    except (InvalidParameterError, pa.ArrowException) as exc:
        raise InvalidParameterError(
            f"the `value` column's type {arr.type} has no series dtype; cast it to one of "
            "float64, float32, int64, int32, int16, int8, uint64, uint32, uint16, uint8, bool"
        ) from exc
    return np.ascontiguousarray(flat).reshape(len(col), *shape)


def _reference(meta: dict[str, str], tz: str | None, explicit: str | None) -> str | None:
    if explicit is not None:
        return explicit
    recorded = meta.get(TIME_REFERENCE)
    if recorded == UNSPECIFIED:
        return None
    if recorded is not None:
        return recorded
    if tz is None:
        return "zoneless"
    return "utc" if tz == "UTC" else tz


def from_arrow(
    cls: type[Series], table: Any, *, name: str | None, resolution: Any, kw: dict[str, Any]
) -> Any:
    """Build ``cls`` from a table ``to_arrow`` (or another writer) made; keywords win over
    the metadata, the metadata over what the columns imply."""
    pa = pyarrow()
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise TypeError(f"from_arrow takes a pyarrow Table, not {type(table).__name__}")
    raw = table.schema.metadata or {}
    meta = {k.decode(): v.decode() for k, v in raw.items()}
    ms, tz = _timestamps_ms(_column(table, "timestamp"))
    data = _values(_column(table, "value"))
    name = name if name is not None else meta.get(NAME)
    if name is None:
        raise InvalidParameterError(
            "the table records no series name and none was given; pass name= to from_arrow"
        )
    tr = _reference(meta, tz, kw.pop("time_reference"))
    for d in DESCRIPTORS:
        if kw[d] is None:
            kw[d] = meta.get(d)
    if kw["element_type"] is None:
        recorded = meta.get(ELEMENT_TYPE)
        # A recorded scalar is the column's own dtype; only a composite or tuple says more.
        if recorded is not None and parse_element_type(recorded).kind != "scalar":
            kw["element_type"] = recorded
    as_tr = "utc" if tr is None else tr
    stamps = ms.astype("datetime64[ms]")
    if cls.time_series_type.is_irregular:
        obj = cls(stamps, data, name, time_reference=as_tr, **kw)
    else:
        obj = _regular(cls, stamps, data, name, resolution or meta.get(RESOLUTION), as_tr, kw)
    if tr is None:
        obj._tr = None  # built as UTC (the column's instants), recorded as unspecified
    return obj


def _regular(
    cls: Any, stamps: np.ndarray, data: np.ndarray, name: str, resolution: Any, tr: str, kw: dict
) -> Any:
    if stamps.size == 0:
        raise InvalidParameterError(
            "a SingleTimeSeries is anchored at its first timestamp, and this table has no "
            "rows; read it as a NonSequentialTimeSeries instead"
        )
    if resolution is None:
        return cls.from_timestamps(list(stamps), data, name, time_reference=tr, **kw)
    period = as_period(resolution, what="resolution")
    ms = stamps.astype(np.int64)
    if not np.array_equal(grid(int(ms[0]), period, ms.size), ms):
        raise InvalidParameterError(
            f"the timestamps do not sit on a {period} grid anchored at the first one; pass "
            "the resolution they have, or read the table as a NonSequentialTimeSeries"
        )
    return cls(stamps[0], period, data, name, time_reference=tr, **kw)
