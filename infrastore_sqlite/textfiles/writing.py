"""One series as rows, and as a CSV, JSON or JSON-lines file for a spreadsheet: what
``get`` prints and ``export -f csv|json|jsonl`` writes (one series to a stream, or one
file per series into a directory).

Rows: a static series is ``timestamp,value`` (``value[0]``, ``value[1,2]``, … per element
of a shaped value); a forecast ``issue_time,target_time,value…`` with a column per
percentile (``value[p0.5]``) or scenario (``value[s0]``). Instants are ISO-8601 text in
the series' time reference.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
import orjson

from ..core.periods import step
from ..core.timeref import render_instants
from ..errors import InvalidParameterError
from ..model import TimeSeriesType
from ..store.queries import refuse_unknown_ids

if TYPE_CHECKING:
    from ..store import Store

SERIES_FILE_FORMATS = ("csv", "json", "jsonl")


def _value_columns(prefix: str, shape: tuple[int, ...]) -> list[str]:
    if not shape:
        return [prefix]
    return [f"{prefix}[{','.join(map(str, idx))}]" for idx in np.ndindex(*shape)]


def value_rows(series: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """A series as long rows: its columns and one dict per row (see the module doc)."""
    kind = series.time_series_type
    data = np.asarray(series.data)
    tr = series.time_reference
    if not kind.is_forecast:
        shape = tuple(data.shape[1:])
        vcols = _value_columns("value", shape)
        stamps = render_instants(np.asarray(series.timestamps_ms), tr)
        # (an explicit width: an empty range has no rows to infer it from)
        flat = data.reshape(data.shape[0], int(np.prod(shape, dtype=np.int64))).tolist()
        rows = [
            {"timestamp": t, **dict(zip(vcols, v, strict=True))}
            for t, v in zip(stamps, flat, strict=True)
        ]
        return ["timestamp", *vcols], rows
    if kind in (TimeSeriesType.Probabilistic, TimeSeriesType.Scenarios):
        lanes = data.shape[0]
        cube = data  # [L, H, count, *E]
        labels = (
            [f"p{p:g}" for p in series.percentiles]
            if kind is TimeSeriesType.Probabilistic
            else [f"s{i}" for i in range(lanes)]
        )
    else:
        cube = data[None]
        labels = [""]
    steps, count = cube.shape[1], cube.shape[2]
    shape = tuple(cube.shape[3:])
    vcols: list[str] = []
    for label in labels:
        base = f"value[{label}]" if label else "value"
        vcols += _value_columns(base, shape) if shape else [base]
    issues = np.asarray(series.issue_times_ms(), dtype=np.int64)
    res = series.resolution_period
    targets = np.array(
        [step(int(issues[j]), res, h) for j in range(count) for h in range(steps)], dtype=np.int64
    )
    issue_text = render_instants(issues, tr)
    target_text = render_instants(targets, tr)
    # window-major rows; lanes side by side
    per_row = np.moveaxis(cube, 0, 2)  # [H, count, L, *E]
    per_row = np.swapaxes(per_row, 0, 1).reshape(count * steps, -1).tolist()
    rows = []
    for r, values in enumerate(per_row):
        rows.append(
            {
                "issue_time": issue_text[r // steps],
                "target_time": target_text[r],
                **dict(zip(vcols, values, strict=True)),
            }
        )
    return ["issue_time", "target_time", *vcols], rows


# ---------------------------------------------------------------------- one series, written
def json_default(obj: Any) -> Any:
    """What orjson cannot write by itself, as JSON holds it."""
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, Enum):
        return obj.name
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, frozenset | set | tuple):
        return list(obj)
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")


def to_json(obj: Any, *, pretty: bool = False) -> str:
    """``obj`` as JSON text (numpy values, non-string keys and :func:`json_default`'s
    types included); indented when ``pretty``. The CLI renders its documents with it too."""
    option = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
    if pretty:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(obj, option=option, default=json_default).decode()


def json_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row of :func:`value_rows` as JSON holds it, every value kept: NaN as ``null``,
    the infinities as the strings ``"Infinity"`` and ``"-Infinity"``, as the SQLite
    file's JSON cells spell them (JSON numbers cannot hold them, and orjson would write
    all three as ``null``)."""
    out = dict(row)
    for key, value in row.items():
        if isinstance(value, float) and not math.isfinite(value):
            out[key] = None if value != value else ("Infinity" if value > 0 else "-Infinity")
    return out


def text_cell(value: Any) -> str:
    """A cell as a spreadsheet reads it: ``NaN``, ``inf``, ``-inf``; floats round-trip;
    lists and maps as JSON. The CLI's tables and CSV use it too."""
    if value is None:
        return ""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        f = float(value)
        if f != f:
            return "NaN"
        if f in (float("inf"), float("-inf")):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    if isinstance(value, dict | list | tuple):
        return to_json(value)
    return str(value)


def write_series(
    out: TextIO,
    fmt: str,
    meta: Mapping[str, Any],
    columns: Sequence[str],
    rows: Iterable[Mapping[str, Any]],
) -> None:
    """Write one series: ``csv`` (a header, then a line per row), ``json`` (one document:
    ``series`` (its metadata), ``columns``, ``items``) or ``jsonl`` (one object per row).

    CSV spells NaN and the infinities ``NaN``, ``inf``, ``-inf`` (:func:`text_cell`);
    JSON ``null``, ``"Infinity"``, ``"-Infinity"`` (:func:`json_row`)."""
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([text_cell(row.get(c)) for c in columns])
    elif fmt == "json":
        items = [json_row(r) for r in rows]
        out.write(to_json({"series": meta, "columns": list(columns), "items": items}, pretty=True))
        out.write("\n")
    elif fmt == "jsonl":
        for row in rows:
            out.write(to_json(json_row(row)))
            out.write("\n")
    else:
        raise InvalidParameterError(
            f"unknown series file format {fmt!r}; one of {', '.join(SERIES_FILE_FORMATS)}"
        )


# ---------------------------------------------------------------------- one file per series
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def file_name(series_id: int, owner_id: int, name: str, fmt: str) -> str:
    """``<id>_<owner_id>_<name>.<fmt>``: unique by the catalog id, readable by the rest
    (characters outside ``[A-Za-z0-9_.-]`` become ``_``)."""
    slug = _UNSAFE.sub("_", name).strip("._") or "series"
    return f"{series_id}_{owner_id}_{slug}.{fmt}"


@dataclass(slots=True)
class SeriesFile:
    """One file an export of per-series files wrote."""

    id: int
    owner_id: int
    name: str
    file: str
    rows: int


def export_series_files(
    store: Store,
    directory: str | os.PathLike[str],
    fmt: str,
    *,
    time_range: tuple[datetime, datetime] | None = None,
    progress: Callable[[int, int], None] | None = None,
    ids: Sequence[int] | None = None,
    **filters: Any,
) -> list[SeriesFile]:
    """Write each selected series to its own file in ``directory``.

    Parameters
    ----------
    store
        The source store.
    directory
        Created if absent; files are only added (a name already there is refused before
        anything is written). All or nothing: when a series fails (or the call is
        interrupted), the files this call wrote are removed.
    fmt
        ``csv``, ``json`` or ``jsonl`` (see :func:`write_series`).
    time_range
        ``(start, end)``, half-open; each series is clipped as ``read_by_ids_range`` does.
    progress
        Called as ``progress(series_done, series_total)``.
    ids
        Only the series of these catalog ids among those the filters select; an id the
        store does not hold is refused before anything is written.
    **filters
        ``list_metadata``'s keywords.

    Returns
    -------
    list[SeriesFile]
        One per file, in catalog order.

    Raises
    ------
    InvalidParameterError
        An unknown format, or files of these names already in ``directory``.
    NotFoundError
        An id of ``ids`` the store does not hold.
    """
    if fmt not in SERIES_FILE_FORMATS:
        raise InvalidParameterError(
            f"unknown series file format {fmt!r}; one of {', '.join(SERIES_FILE_FORMATS)}"
        )
    target = Path(directory)
    if ids is not None:
        refuse_unknown_ids(store, ids)
    rows = store.select_rows(ids=ids, **filters)
    names = [file_name(r.id, r.owner_id, r.name, fmt) for r in rows]
    there = [n for n in names if (target / n).exists()]
    if there:
        shown = ", ".join(there[:5]) + (f", … and {len(there) - 5} more" if len(there) > 5 else "")
        raise InvalidParameterError(
            f"{target} already holds {len(there)} of the files this export would write "
            f"({shown}); nothing was written. Export into another directory, or remove them."
        )
    target.mkdir(parents=True, exist_ok=True)
    out: list[SeriesFile] = []
    try:
        _write_files(store, target, fmt, rows, names, time_range, progress, out)
    except BaseException:
        # All or nothing, as the other exports: a refusal (or Ctrl-C) part-way through
        # takes back the files this call wrote.
        for written in out:
            Path(written.file).unlink(missing_ok=True)
        raise
    return out


def _write_files(
    store: Store,
    target: Path,
    fmt: str,
    rows: Sequence[Any],
    names: Sequence[str],
    time_range: tuple[datetime, datetime] | None,
    progress: Callable[[int, int], None] | None,
    out: list[SeriesFile],
) -> None:
    for i, (row, name) in enumerate(zip(rows, names, strict=True)):
        series = (
            store.read_by_ids_range([row.id], time_range)[0]
            if time_range is not None
            else store.read_by_id(row.id)
        )
        meta = series_meta(row)
        columns, values = value_rows(series)
        # Written beside its name and renamed when complete: a file there is whole.
        final = target / name
        tmp = target / f".{name}.partial-{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                write_series(f, fmt, meta, columns, values)
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        out.append(SeriesFile(row.id, row.owner_id, row.name, str(final), len(values)))
        if progress is not None:
            progress(i + 1, len(rows))


def series_meta(row: Any) -> dict[str, Any]:
    """A catalog row's metadata as a series file carries it (without its timestamps),
    its ``initial_timestamp`` in the series' own time reference (as its rows)."""
    meta = dict(row.metadata())
    meta.pop("timestamps", None)
    if row.initial_ms is not None:
        meta["initial_timestamp"] = render_instants(
            np.asarray([row.initial_ms], dtype=np.int64), row.time_reference
        )[0]
    return meta
