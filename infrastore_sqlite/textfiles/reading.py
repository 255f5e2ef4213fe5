"""Reading series from CSV files (``infrastore-sqlite add --csv``, the demo store).

Long layout: one file holds one series. A header row is required; every cell is
trimmed. The header decides how the rows are read:

* ``timestamp,…`` — one row per step, the first column its instant. A
  NonSequentialTimeSeries or PersistentTimeSeries takes its timestamps from it; a
  SingleTimeSeries is checked against the grid its initial timestamp and resolution
  generate (every row, and the row count).
* ``issue_time,target_time,…`` — a forecast, one row per (window, step), windows in
  issue order. The value columns are the percentiles (Probabilistic) or scenarios
  (Scenarios) side by side; the rows are transposed back into the stored axes.
* anything else — flat: the value cells, read row-major, fill the series' full shape.

Each step's value cells are its element, row-major: ``timestamp,value[0],value[1]`` is a
``[2]``-shaped element; a ``piecewise_linear`` row is its packed ``[n, x1, y1, …]``.

Wide layout (``timestamp,col1,col2,…``): one scalar series per column, for many owners
sharing one clock; see :func:`read_wide_csv`.

Nothing here opens a store: the functions return series objects for the caller to add.
"""

from __future__ import annotations

import csv
import io
import math
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..core.distinct import distinct_ints
from ..core.elements import NUMPY_DTYPES, ElementType, parse_element_type
from ..core.periods import Period, as_period, divide, grid, step
from ..core.timeref import ms_to_rfc3339, normalize_time_reference, parse_instant
from ..errors import InvalidParameterError, NotFoundError, counted
from ..model import (
    Deterministic,
    NonSequentialTimeSeries,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
    TimeSeriesType,
)

__all__ = [
    "WRITABLE_TYPES",
    "CsvSpec",
    "describe",
    "parse_feature",
    "read_csv_series",
    "read_owner_map",
    "read_wide_csv",
]

WRITABLE_TYPES = (
    TimeSeriesType.SingleTimeSeries,
    TimeSeriesType.NonSequentialTimeSeries,
    TimeSeriesType.PersistentTimeSeries,
    TimeSeriesType.Deterministic,
    TimeSeriesType.Probabilistic,
    TimeSeriesType.Scenarios,
)

_INT_RE = re.compile(r"[+-]?[0-9]+")
_LANE_RE = re.compile(r"value\[(?P<kind>[ps])(?P<label>[^\]]+)\]", re.IGNORECASE)


@dataclass
class CsvSpec:
    """What the flags say about the series a CSV holds.

    Every field but ``name`` is optional; what the file implies (the anchor, the element
    shape, a forecast's count, percentiles from ``value[p0.1]`` headers) fills the rest,
    and what is given is checked against the file. ``type`` None reads it from the
    header, as ``export -f csv`` writes it (:func:`read_csv_series`).
    """

    type: TimeSeriesType | None
    name: str
    element_type: str | None = None
    element_shape: tuple[int, ...] | None = None
    initial_timestamp: str | None = None
    resolution: str | None = None
    horizon: str | None = None
    interval: str | None = None
    count: int | None = None
    percentiles: tuple[float, ...] | None = None
    scenario_count: int | None = None
    time_reference: str | None = None
    descriptors: dict[str, str | None] = field(default_factory=dict)


# ----------------------------------------------------------------------------- cells


def parse_feature(text: str) -> tuple[str, int | float | bool | str]:
    """``k=v`` → ``(k, v)``; ``v`` is an int, else a float, else true/false, else a string."""
    key, sep, raw = text.partition("=")
    if not sep:
        raise InvalidParameterError(f"feature {text!r} is not key=value (e.g. model_year=2030)")
    key = key.strip()
    raw = raw.strip()
    if not key:
        raise InvalidParameterError(f"feature {text!r} has an empty key")
    if _INT_RE.fullmatch(raw):
        value = int(raw)
        if -(2**63) <= value < 2**63:
            return key, value
    if raw and "_" not in raw:
        try:
            number = float(raw)
        except ValueError:
            pass
        else:
            if math.isfinite(number):
                return key, number
    if raw.lower() in ("true", "false"):
        return key, raw.lower() == "true"
    return key, raw


class _Source:
    """The rows of one CSV, trimmed, blank lines dropped, with line numbers for errors."""

    def __init__(self, source: str | Path, what: str = "CSV") -> None:
        self.label = "stdin" if str(source) == "-" else str(source)
        try:
            if str(source) == "-":
                text = sys.stdin.read()
            else:
                text = Path(source).read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise NotFoundError(f"{what} file {self.label} does not exist") from None
        except IsADirectoryError:
            raise InvalidParameterError(f"{what} file {self.label} is a directory") from None
        except UnicodeDecodeError as exc:
            raise InvalidParameterError(
                f"{self.label} is not UTF-8 text ({exc.reason} at byte {exc.start})"
            ) from None
        except OSError as exc:
            raise InvalidParameterError(f"cannot read {self.label}: {exc.strerror}") from None
        self.rows: list[list[str]] = []
        self.lines: list[int] = []
        reader = csv.reader(io.StringIO(text))
        try:
            for row in reader:
                cells = [c.strip() for c in row]
                if any(cells):
                    self.rows.append(cells)
                    self.lines.append(reader.line_num)
        except csv.Error as exc:
            raise InvalidParameterError(
                f"{self.label} line {reader.line_num}: not valid CSV ({exc})"
            ) from None
        if not self.rows:
            raise InvalidParameterError(
                f"{self.label} is empty; a CSV needs a header row and at least one data row"
            )
        self.header = self.rows[0]
        width = len(self.header)
        for cells, line in zip(self.rows[1:], self.lines[1:], strict=True):
            if len(cells) != width:
                raise InvalidParameterError(
                    f"{self.label} line {line} has {len(cells)} cells, but the header has {width}"
                )
        if len(self.rows) < 2:
            raise InvalidParameterError(f"{self.label} has a header row but no data rows")

    @property
    def data(self) -> list[list[str]]:
        return self.rows[1:]

    def where(self, i: int, col: int) -> str:
        """``file line N, column 'x'`` of data row ``i``."""
        return f"{self.label} line {self.lines[i + 1]}, column {self.header[col]!r}"


def _cell_ok(text: str, dtype: str) -> bool:
    try:
        _parse_cell(text, dtype, "")
    except InvalidParameterError:
        return False
    return True


def _parse_cell(text: str, dtype: str, where: str) -> Any:
    if text == "":
        raise InvalidParameterError(f"{where}: the value cell is empty")
    if dtype == "bool":
        low = text.lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise InvalidParameterError(f"{where}: {text!r} is not a bool (true, false, 1 or 0)")
    if dtype in ("f64", "f32"):
        if "_" not in text:
            try:
                return float(text)
            except ValueError:
                pass
        raise InvalidParameterError(f"{where}: {text!r} is not a number")
    if not _INT_RE.fullmatch(text):
        raise InvalidParameterError(f"{where}: {text!r} is not an integer ({dtype})")
    value = int(text)
    info = np.iinfo(NUMPY_DTYPES[dtype])
    if not info.min <= value <= info.max:
        raise InvalidParameterError(f"{where}: {value} does not fit {dtype}")
    return value


def _values(src: _Source, first_col: int, dtype: str) -> np.ndarray:
    """The value cells (columns ``first_col:``) as an array ``[rows, cells]``."""
    out = []
    for i, cells in enumerate(src.data):
        out.append(
            [
                _parse_cell(c, dtype, src.where(i, first_col + j))
                for j, c in enumerate(cells[first_col:])
            ]
        )
    arr = np.array(out, dtype=NUMPY_DTYPES[dtype])
    return arr.reshape(len(out), len(src.header) - first_col)


# ----------------------------------------------------------------------------- instants


class _Clock:
    """Turns instant texts into ms and settles the series' time reference.

    Texts with an offset (or ``Z``) are instants; texts without one are wall clocks,
    which only a zoneless series can hold. Epoch milliseconds fit either.
    """

    def __init__(self, explicit: str | None) -> None:
        self.explicit = normalize_time_reference(explicit)
        self.implied: str | None = None
        self._first_text: str | None = None

    def ms(self, text: str, where: str) -> int:
        ms, ref = parse_instant(text, what=where)
        epoch = _INT_RE.fullmatch(text.strip()) is not None
        if epoch:
            return ms
        zoneless = ref == "zoneless"
        if self.explicit is not None:
            if self.explicit == "zoneless" and not zoneless:
                raise InvalidParameterError(
                    f"{where}: {text!r} carries a UTC offset, but the series is zoneless "
                    "(--time-reference zoneless); drop the offsets or the flag"
                )
            if self.explicit != "zoneless" and zoneless:
                raise InvalidParameterError(
                    f"{where}: {text!r} has no UTC offset, but --time-reference "
                    f"{self.explicit} records instants; write it with Z or an offset "
                    "(2024-01-01T00:00:00Z, 2024-01-01T00:00:00-07:00)"
                )
            return ms
        if self.implied is None:
            self.implied, self._first_text = ref, text
        elif (self.implied == "zoneless") != zoneless:
            raise InvalidParameterError(
                f"{where}: {text!r} and {self._first_text!r} mix a wall clock (no offset) "
                "with an instant (Z or an offset); write every timestamp the same way"
            )
        return ms

    @property
    def reference(self) -> str:
        return self.explicit or self.implied or "utc"

    def show(self, ms: int) -> str:
        text = ms_to_rfc3339(ms)
        return text[:-6] if self.reference == "zoneless" else text


def _dt64(ms: int | np.ndarray) -> Any:
    if isinstance(ms, np.ndarray):
        return ms.astype(np.int64).astype("datetime64[ms]")
    return np.datetime64(int(ms), "ms")


def _period(text: str | None, what: str) -> Period | None:
    return None if text is None else as_period(text, what=what)


# ----------------------------------------------------------------------------- shapes


def _element(spec: CsvSpec) -> ElementType:
    return parse_element_type(spec.element_type or "f64")


def _element_shape(spec: CsvSpec, et: ElementType, cells: int, what: str) -> tuple[int, ...]:
    """E for ``cells`` value cells per step (per lane), checked against the flags."""
    if spec.element_shape is not None:
        shape = tuple(int(d) for d in spec.element_shape)
    elif et.kind == "tuple":
        shape = (int(et.n),)  # type: ignore[arg-type]
    elif et.kind == "linear_function":
        shape = (2,)
    elif et.kind == "quadratic_function":
        shape = (3,)
    elif et.is_ragged:
        shape = (cells,)
    else:
        shape = () if cells == 1 else (cells,)
    if int(np.prod(shape, dtype=np.int64)) != cells:
        raise InvalidParameterError(
            f"{what} has {cells} value cell(s) per step, but element shape "
            f"{list(shape)} ({et}) needs {int(np.prod(shape, dtype=np.int64))}"
        )
    return shape


def _check_header(src: _Source, dtype: str) -> None:
    first = src.header
    if all(_cell_ok(c, dtype) for c in first[1:]) and (
        _cell_ok(first[0], dtype) or _looks_like_instant(first[0])
    ):
        raise InvalidParameterError(
            f"the first row of {src.label} ({','.join(first)}) is data, not a header; "
            "add a header row such as 'timestamp,value'"
        )


def _looks_like_instant(text: str) -> bool:
    try:
        parse_instant(text)
    except InvalidParameterError:
        return False
    return True


def _layout(src: _Source) -> str:
    head = [h.lower() for h in src.header]
    if head[0] == "timestamp":
        return "timestamp"
    if head[:2] == ["issue_time", "target_time"]:
        return "forecast"
    return "flat"


# ----------------------------------------------------------------------------- series


def read_csv_series(source: str | Path, spec: CsvSpec) -> Any:
    """Read one series from a long-layout CSV.

    Parameters
    ----------
    source
        A path, or ``"-"`` for stdin.
    spec
        The type, name and whatever else the flags give (see :class:`CsvSpec`).

    Returns
    -------
    A series object (``SingleTimeSeries``, …) ready for ``Store.add_time_series``.

    Raises
    ------
    NotFoundError
        The file does not exist.
    InvalidParameterError
        The file or the flags are not acceptable; the message names the line and column.
    """
    if spec.type is not None and spec.type not in WRITABLE_TYPES:
        raise InvalidParameterError(
            f"{spec.type.name} cannot be added: it is derived from a stored SingleTimeSeries; "
            "add that one and run `transform`"
        )
    et = _element(spec)
    src = _Source(source)
    _check_header(src, et.dtype)
    layout = _layout(src)
    if spec.type is None:
        spec = replace(spec, type=_type_of(src, layout))
    kwargs = {"element_type": str(et), **{k: v for k, v in spec.descriptors.items()}}
    clock = _Clock(spec.time_reference)
    if layout == "forecast":
        if not spec.type.is_forecast:
            raise InvalidParameterError(
                f"{src.label} has issue_time,target_time columns, which hold a forecast, "
                f"but --type is {spec.type.name}"
            )
        return _forecast(src, spec, et, clock, kwargs)
    if spec.type.is_forecast:
        if layout == "timestamp":
            raise InvalidParameterError(
                f"a {spec.type.name} CSV starts with issue_time,target_time columns; "
                f"{src.label} starts with timestamp"
            )
        return _flat_forecast(src, spec, et, clock, kwargs)
    if layout == "timestamp":
        return _timestamped(src, spec, et, clock, kwargs)
    return _flat_static(src, spec, et, clock, kwargs)


def _type_of(src: _Source, layout: str) -> TimeSeriesType:
    """The series type a header says, as ``export -f csv`` writes it: ``timestamp,value…``
    a SingleTimeSeries (its timestamps must then lie on one grid), ``issue_time,
    target_time`` a forecast whose value columns name its lanes (``value[p0.5]`` a
    Probabilistic, ``value[s0]`` Scenarios, else a Deterministic)."""
    if layout == "timestamp":
        return TimeSeriesType.SingleTimeSeries
    if layout == "forecast":
        kinds = {(m["kind"].lower() if m else "") for m in map(_LANE_RE.match, src.header[2:])}
        if kinds == {"p"}:
            return TimeSeriesType.Probabilistic
        if kinds == {"s"}:
            return TimeSeriesType.Scenarios
        return TimeSeriesType.Deterministic
    raise InvalidParameterError(
        f"{src.label} has neither a timestamp nor issue_time,target_time columns, so it does "
        "not say which series it holds: pass --type (and --initial-timestamp, --resolution)"
    )


def _timestamped(src: _Source, spec: CsvSpec, et: ElementType, clock: _Clock, kwargs: dict):
    values = _values(src, 1, et.dtype)
    shape = _element_shape(spec, et, values.shape[1], src.label)
    data = values.reshape((values.shape[0], *shape))
    initial = (
        None
        if spec.initial_timestamp is None
        else clock.ms(spec.initial_timestamp, "--initial-timestamp")
    )
    ms = np.array(
        [clock.ms(cells[0], src.where(i, 0)) for i, cells in enumerate(src.data)],
        dtype=np.int64,
    )
    tr = clock.reference
    if spec.type is not TimeSeriesType.SingleTimeSeries:
        if spec.resolution is not None:
            raise InvalidParameterError(
                f"--resolution does not apply to a {spec.type.name}: its timestamps are the "
                "first column"
            )
        if initial is not None and initial != ms[0]:
            raise InvalidParameterError(
                f"--initial-timestamp {spec.initial_timestamp} is not the first timestamp of "
                f"{src.label} ({src.data[0][0]})"
            )
        cls = (
            NonSequentialTimeSeries
            if spec.type is TimeSeriesType.NonSequentialTimeSeries
            else PersistentTimeSeries
        )
        return cls(_dt64(ms), data, spec.name, time_reference=tr, **kwargs)
    anchor = int(ms[0]) if initial is None else initial
    res = _period(spec.resolution, "resolution") or _infer_step(ms, src, "resolution")
    expected = grid(anchor, res, ms.size)
    bad = np.nonzero(expected != ms)[0]
    if bad.size:
        i = int(bad[0])
        raise InvalidParameterError(
            f"{src.where(i, 0)}: {src.data[i][0]} is not on the {res} grid anchored at "
            f"{clock.show(anchor)} (step {i} is {clock.show(int(expected[i]))}); a "
            "SingleTimeSeries is one grid: --type non_sequential (or persistent) keeps the "
            "timestamps as given"
        )
    return SingleTimeSeries(_dt64(anchor), str(res), data, spec.name, time_reference=tr, **kwargs)


def _infer_step(ms: np.ndarray, src: _Source, what: str) -> Period:
    if ms.size < 2 or ms[1] <= ms[0]:
        raise InvalidParameterError(
            f"cannot tell the {what} of {src.label} from its timestamps; pass --{what} "
            "(an ISO-8601 duration such as PT1H)"
        )
    return Period.of_ms(int(ms[1] - ms[0]))


def _flat_static(src: _Source, spec: CsvSpec, et: ElementType, clock: _Clock, kwargs: dict):
    if spec.type is not TimeSeriesType.SingleTimeSeries:
        raise InvalidParameterError(
            f"a {spec.type.name} takes its timestamps from the first column, which must be "
            f"named 'timestamp'; {src.label} starts with {src.header[0]!r}"
        )
    if spec.initial_timestamp is None or spec.resolution is None:
        raise InvalidParameterError(
            f"{src.label} has no timestamp column, so --initial-timestamp and --resolution "
            "are needed to place its values"
        )
    flat = _values(src, 0, et.dtype).reshape(-1)
    shape = _flat_shape(spec, et, src)
    width = int(np.prod(shape, dtype=np.int64))
    if flat.size % width:
        raise InvalidParameterError(
            f"{src.label} holds {flat.size} values, which is not a whole number of "
            f"{list(shape)} elements"
        )
    data = flat.reshape((flat.size // width, *shape))
    anchor = clock.ms(spec.initial_timestamp, "--initial-timestamp")
    return SingleTimeSeries(
        _dt64(anchor), spec.resolution, data, spec.name, time_reference=clock.reference, **kwargs
    )


def _flat_shape(spec: CsvSpec, et: ElementType, src: _Source) -> tuple[int, ...]:
    """E of a flat file: the flags', the element type's, or one curve per row."""
    if spec.element_shape is not None:
        return tuple(int(d) for d in spec.element_shape)
    if et.kind == "tuple":
        return (int(et.n),)  # type: ignore[arg-type]
    if et.kind in ("linear_function", "quadratic_function"):
        return (2,) if et.kind == "linear_function" else (3,)
    if et.is_ragged:
        return (len(src.header),)
    return ()


def _lanes(
    spec: CsvSpec, et: ElementType, src: _Source, cells: int
) -> tuple[int, tuple[int, ...], list[float] | None]:
    """(lanes, element shape, percentiles) of a forecast's value columns."""
    labels = [_LANE_RE.fullmatch(h) for h in src.header[2:]]
    percentiles = list(spec.percentiles) if spec.percentiles is not None else None
    if spec.type is TimeSeriesType.Probabilistic:
        if percentiles is None:
            if labels and all(m and m["kind"].lower() == "p" for m in labels):
                try:
                    percentiles = [float(m["label"]) for m in labels if m]
                except ValueError:
                    percentiles = None
            if percentiles is None:
                raise InvalidParameterError(
                    f"a Probabilistic needs its percentiles: pass --percentile P for each, or "
                    f"name the value columns of {src.label} value[p0.1], value[p0.5], …"
                )
        lanes = len(percentiles)
    elif spec.type is TimeSeriesType.Scenarios:
        if spec.scenario_count is not None:
            lanes = spec.scenario_count
        elif spec.element_shape is not None or et.kind != "scalar":
            lanes = cells // max(1, int(np.prod(_flat_shape(spec, et, src), dtype=np.int64)))
        else:
            lanes = cells
    else:
        lanes = 1
    if lanes < 1 or cells % lanes:
        raise InvalidParameterError(
            f"{src.label} has {cells} value column(s), which do not split into {lanes} "
            f"{'percentile' if spec.type is TimeSeriesType.Probabilistic else 'scenario'} lane(s)"
        )
    shape = _element_shape(spec, et, cells // lanes, src.label)
    return lanes, shape, percentiles


def _forecast(src: _Source, spec: CsvSpec, et: ElementType, clock: _Clock, kwargs: dict):
    values = _values(src, 2, et.dtype)
    lanes, shape, percentiles = _lanes(spec, et, src, values.shape[1])
    issue = np.array(
        [clock.ms(c[0], src.where(i, 0)) for i, c in enumerate(src.data)], dtype=np.int64
    )
    target = np.array(
        [clock.ms(c[1], src.where(i, 1)) for i, c in enumerate(src.data)], dtype=np.int64
    )
    anchor = (
        int(issue[0])
        if spec.initial_timestamp is None
        else clock.ms(spec.initial_timestamp, "--initial-timestamp")
    )
    distinct = distinct_ints(issue)
    first_window = target[issue == issue[0]]
    res = _period(spec.resolution, "resolution") or _infer_step(first_window, src, "resolution")
    horizon = _period(spec.horizon, "horizon")
    if horizon is None:
        if res.calendar:
            raise InvalidParameterError("pass --horizon: it cannot be inferred on a calendar grid")
        horizon = Period.of_ms(res.ms * int(first_window.size))
    if spec.interval is not None:
        interval = as_period(spec.interval, what="interval")
    elif distinct.size > 1:
        interval = Period.of_ms(int(distinct[1] - distinct[0]))
    else:
        interval = Period.of_ms(0)
    count = int(distinct.size) if spec.count is None else int(spec.count)
    steps = divide(horizon, res, what="horizon")
    if issue.size != count * steps:
        raise InvalidParameterError(
            f"{src.label} has {issue.size} rows, but {count} window(s) of {steps} step(s) "
            f"(horizon {horizon}, resolution {res}) need {count * steps}"
        )
    issues = np.array(
        [step(anchor, interval, j) if interval.is_positive else anchor for j in range(count)],
        dtype=np.int64,
    )
    for j in range(count):
        for h in range(steps):
            r = j * steps + h
            if issue[r] != issues[j]:
                raise InvalidParameterError(
                    f"{src.where(r, 0)}: {src.data[r][0]} is not window {j}'s issue time "
                    f"{clock.show(int(issues[j]))} (windows every {interval} from "
                    f"{clock.show(anchor)}, {steps} rows each)"
                )
            want = step(int(issues[j]), res, h)
            if target[r] != want:
                raise InvalidParameterError(
                    f"{src.where(r, 1)}: {src.data[r][1]} is not step {h} of the window issued "
                    f"at {clock.show(int(issues[j]))} ({clock.show(want)} on a {res} grid)"
                )
    cube = values.reshape((count, steps, lanes, *shape))
    tr = clock.reference
    args = (_dt64(anchor), str(res), str(horizon), str(interval), count)
    if spec.type is TimeSeriesType.Deterministic:
        data = np.moveaxis(cube[:, :, 0], 0, 1)  # [H, count, *E]
        return Deterministic(*args, data, spec.name, time_reference=tr, **kwargs)
    data = np.transpose(cube, (2, 1, 0, *range(3, cube.ndim)))  # [lanes, H, count, *E]
    if spec.type is TimeSeriesType.Probabilistic:
        return Probabilistic(*args, percentiles, data, spec.name, time_reference=tr, **kwargs)
    return Scenarios(*args, data, spec.name, time_reference=tr, **kwargs)


def _flat_forecast(src: _Source, spec: CsvSpec, et: ElementType, clock: _Clock, kwargs: dict):
    missing = [
        flag
        for flag, value in (
            ("--initial-timestamp", spec.initial_timestamp),
            ("--resolution", spec.resolution),
            ("--horizon", spec.horizon),
            ("--interval", spec.interval),
            ("--count", spec.count),
        )
        if value is None
    ]
    if missing:
        raise InvalidParameterError(
            f"{src.label} has no issue_time,target_time columns, so a {spec.type.name} needs "
            f"{', '.join(missing)} to place its values"
        )
    res = as_period(spec.resolution, what="resolution")  # type: ignore[arg-type]
    horizon = as_period(spec.horizon, what="horizon")  # type: ignore[arg-type]
    steps = divide(horizon, res, what="horizon")
    count = int(spec.count)  # type: ignore[arg-type]
    flat = _values(src, 0, et.dtype).reshape(-1)
    if spec.type is TimeSeriesType.Probabilistic:
        if not spec.percentiles:
            raise InvalidParameterError("a Probabilistic needs --percentile P for each percentile")
        lanes = len(spec.percentiles)
    elif spec.type is TimeSeriesType.Scenarios:
        if spec.scenario_count is None:
            raise InvalidParameterError("a flat Scenarios CSV needs --scenario-count")
        lanes = spec.scenario_count
    else:
        lanes = 1
    shape = _flat_shape(spec, et, src)
    per = steps * count * lanes * int(np.prod(shape, dtype=np.int64))
    if flat.size != per:
        raise InvalidParameterError(
            f"{src.label} holds {flat.size} values, but {counted(lanes, 'lane')} x "
            f"{counted(steps, 'step')} x {counted(count, 'window')} of element shape "
            f"{list(shape)} need {per}"
        )
    lead = [steps, count] if spec.type is TimeSeriesType.Deterministic else [lanes, steps, count]
    data = flat.reshape((*lead, *shape))
    anchor = clock.ms(spec.initial_timestamp, "--initial-timestamp")  # type: ignore[arg-type]
    args = (_dt64(anchor), str(res), str(horizon), spec.interval, count)
    tr = clock.reference
    if spec.type is TimeSeriesType.Deterministic:
        return Deterministic(*args, data, spec.name, time_reference=tr, **kwargs)
    if spec.type is TimeSeriesType.Probabilistic:
        return Probabilistic(
            *args, list(spec.percentiles), data, spec.name, time_reference=tr, **kwargs
        )
    return Scenarios(*args, data, spec.name, time_reference=tr, **kwargs)


# ----------------------------------------------------------------------------- wide


def read_owner_map(source: str | Path) -> dict[str, tuple[int, str | None]]:
    """A sidecar CSV ``column,owner_id[,owner_type]`` (header required) → {column: (id, type)}."""
    src = _Source(source, "owner map")
    head = [h.lower() for h in src.header]
    if head[:2] != ["column", "owner_id"] or len(head) > 3 or head[2:] not in ([], ["owner_type"]):
        raise InvalidParameterError(
            f"{src.label} must start with the header column,owner_id (optionally ,owner_type); "
            f"it starts with {','.join(src.header)}"
        )
    out: dict[str, tuple[int, str | None]] = {}
    for i, cells in enumerate(src.data):
        if not _INT_RE.fullmatch(cells[1]):
            raise InvalidParameterError(f"{src.where(i, 1)}: {cells[1]!r} is not an integer")
        if cells[0] in out:
            raise InvalidParameterError(f"{src.where(i, 0)}: column {cells[0]!r} is mapped twice")
        out[cells[0]] = (int(cells[1]), (cells[2] or None) if len(cells) > 2 else None)
    return out


def read_wide_csv(source: str | Path, spec: CsvSpec) -> list[tuple[str, Any]]:
    """Read a wide CSV: one scalar series per value column, all on the first column's clock.

    Returns ``[(column header, series), …]`` in column order; every series gets
    ``spec``'s name, type, resolution and descriptors. A SingleTimeSeries may leave out
    the ``timestamp`` column when ``--initial-timestamp`` and ``--resolution`` are given.
    """
    if spec.type.is_forecast or spec.type not in WRITABLE_TYPES:
        raise InvalidParameterError(
            f"the wide layout holds static series, one per column; {spec.type.name} is not one"
        )
    et = _element(spec)
    if et.kind != "scalar" or spec.element_shape:
        raise InvalidParameterError(
            f"the wide layout holds one scalar per cell; element type {et} needs the long layout"
        )
    src = _Source(source)
    _check_header(src, et.dtype)
    timestamped = _layout(src) == "timestamp"
    columns = src.header[1:] if timestamped else src.header
    seen: set[str] = set()
    for c in columns:
        if not c or c in seen:
            raise InvalidParameterError(
                f"{src.label}: every value column needs its own non-empty header; {c!r} is not"
            )
        seen.add(c)
    out = []
    for j, col in enumerate(columns):
        sub = _Column(src, 0 if timestamped else None, j + (1 if timestamped else 0))
        one = CsvSpec(**{**spec.__dict__, "element_shape": None})
        reader = _timestamped if timestamped else _flat_static
        kwargs = {"element_type": str(et), **spec.descriptors}
        out.append((col, reader(sub, one, et, _Clock(spec.time_reference), kwargs)))
    return out


class _Column(_Source):
    """One value column of a wide source, presented as a long source."""

    def __init__(self, parent: _Source, time_col: int | None, value_col: int) -> None:
        keep = [value_col] if time_col is None else [time_col, value_col]
        self.label = parent.label
        self.rows = [[r[k] for k in keep] for r in parent.rows]
        self.lines = parent.lines
        self.header = self.rows[0]


def describe(series: Any) -> dict[str, Any]:
    """What ``add --dry-run`` prints for a series it would add."""
    return {
        "type": series.time_series_type.name,
        "name": series.name,
        "element_type": series.element_type,
        "shape": list(series.data.shape),
        "time_reference": series.time_reference,
    }
