"""The import core: values groups in numpy columns → checked series → the store.

Container-independent: it knows the interchange layout (partitions of values, series and
arrays rows, the array key ``(data_hash, time_axis)``) but no file format and no SQL. A
container's reader (``interchange/sqlite/reader.py``; a Parquet reader the same way) is a
:class:`PartitionSource` per partition: it names where the rows are (a :class:`Place`),
hands over the arrays and series rows as tuples, and yields each values group as a
:class:`Group` of numpy columns, in key order. This module does the rest, and words every
refusal, with the container's word for the place:

* series rows → :class:`Spec` (cells checked, overrides applied, assertions compared):
  :class:`SeriesRows`;
* a group placed by its coordinates on the grid its series row declares, the lane and
  element checks, the re-encoding into the store's array and the checksum:
  :func:`build_group`;
* filing the series into the store, batched, or checking them in a dry run:
  :class:`Filing` (the one place where what happens to a series the store already holds
  is decided);
* the partition loop and the report: :func:`import_partition`, :func:`run_import`,
  :class:`ImportReport`.

A reader may vouch for what it already checked: a group whose ``affine`` is set has rows
that are exactly that grid in row order (the SQLite reader verifies it inside SQLite), and
the core then skips placing them.

May import: :mod:`infrastore_sqlite.interchange.layout` and below (the store only as the
type it files into).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import orjson

from ..core.elements import (
    ElementType,
    check_composite_rows,
    check_element_shape,
    parse_element_type,
    shrink,
)
from ..core.gcpause import gc_paused
from ..core.hashing import data_hashes, validate_features
from ..core.periods import Period, as_period, divide, grid_index, step
from ..core.timeref import check_period_for_reference, ms_to_axis_instant, normalize_time_reference
from ..errors import (
    NO_CHECKSUM,
    TRANSFORM,
    DuplicateTimeSeriesError,
    InvalidParameterError,
    Term,
    TimeSeriesError,
)
from ..model import DESCRIPTORS, SERIES_CLASSES, UNIT_SYSTEMS, OwnerCategory, TimeSeriesType
from ..store.store import ARRAY_FIELDS, array_values, series_label
from .filing import (
    OUTCOMES,
    OnConflict,
    changed_columns,
    compare,
    conflict_error,
    file_items,
    identity,
    stored_rows,
)
from .layout import series_columns, values_key_columns

if TYPE_CHECKING:
    from ..store import Store

__all__ = [
    "ASSERTION_KEYS",
    "OVERRIDE_KEYS",
    "REFUSED_KEYS",
    "TEXT_HINT",
    "Built",
    "Context",
    "Filing",
    "Group",
    "ImportReport",
    "Options",
    "PartitionSource",
    "Place",
    "SeriesRows",
    "Spec",
    "bad_value",
    "build_grids",
    "build_group",
    "check_columns_present",
    "derived_refused",
    "first_specs",
    "fmt_ms",
    "hash_built",
    "import_partition",
    "key_text",
    "missing_sibling",
    "no_partitions",
    "read_rows",
    "run_import",
    "stray_values_row",
]

Progress = Callable[[int, int], None]

#: Inline flags that replace a column for every series.
OVERRIDE_KEYS = (
    "owner_id",
    "owner_type",
    "owner_category",
    "name",
    "features",
    "time_reference",
    "units",
    "quantity_kind",
    "unit_system",
    "component_field",
    "application_data",
)

#: Inline flags that state what the file must say (a contradiction is an error).
ASSERTION_KEYS = ("element_type", "element_shape", "resolution", "type")

#: Flags of the other importers that make no sense here, with the reason.
_GRID = "the values imply the grid"

REFUSED_KEYS: dict[str, str] = {
    "initial_timestamp": _GRID,
    "interval": _GRID,
    "horizon": _GRID,
    "count": _GRID,
    "percentile": _GRID,
    "percentiles": _GRID,
    "scenario_count": _GRID,
    "layout": "it describes a CSV's columns",
    "owner_map": "the series table names every series' owner",
    "owner_id_from": "the series table names every series' owner",
}

# Pending writes are handed to the store in batches of about this many bytes. The store
# writes them in its background thread, so a small batch starts that work early and it
# overlaps the reading of the next groups.
_BATCH_BYTES = 4 * 1024 * 1024

# ... and of at most this many series: each pending one holds its catalog row and series
# object (a few KB), so this bounds what a partition of many short arrays holds at once
# (2,048 rather than 4,096: ~5 MB less peak RSS importing 20,000 small series; the
# speed difference was within the noise of fresh-process runs).
_BATCH_SERIES = 2048

TEXT_HINT = "a partition's tables come from one export"

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


# ------------------------------------------------------------------------------ report
@dataclass(slots=True)
class ImportReport:
    """What an import did (or, for a dry run, would do), partition by partition.

    Attributes
    ----------
    path
        The database (or the Parquet path) read.
    table_prefix
        The prefix its partitions were found under (``""`` for Parquet).
    dry_run
        True when nothing was written.
    partitions
        One dict per partition in read order: ``name`` (the base name, without the prefix),
        ``values_table``, ``series_table``, ``arrays_table``, ``time_series_type``,
        ``status`` (``committed``, ``would_add``, ``failed``, or ``skipped`` for a partition
        never reached after a failure), ``series`` (one dict per series row: ``file_id``,
        the id the file recorded and the import drops, then ``owner_id``, ``owner_type``,
        ``owner_category``, ``name``, ``data_hash`` and ``time_axis``, and once filed
        ``outcome`` and the catalog ``id``), ``ids`` (the catalog ids, in the order of
        ``series``), ``added``, ``replaced``, ``unchanged`` and ``skipped`` (how many
        series each ``on_conflict`` outcome took), ``arrays``, ``rows`` and ``error``
        (the message, or None). For Parquet the three ``*_table`` keys hold the files.
    set_aside
        Parquet: the DeterministicSingleTimeSeries partitions of a directory, which no
        import takes, left out (``name``, ``values_table``, ``reason``).
    ignored
        Parquet: the files of a directory that belong to no partition.
    """

    path: str
    table_prefix: str
    dry_run: bool
    partitions: list[dict[str, Any]] = field(default_factory=list)
    set_aside: list[dict[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[int]:
        """The catalog ids of every committed partition's series, in read order: the new
        ones, and under ``on_conflict`` the replaced, unchanged or skipped series' own."""
        return [i for p in self.partitions if p["status"] == "committed" for i in p["ids"]]

    @property
    def ok(self) -> bool:
        return all(p["status"] in ("committed", "would_add") for p in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "table_prefix": self.table_prefix,
            "dry_run": self.dry_run,
            "ok": self.ok,
            "ids": self.ids,
            "partitions": self.partitions,
            **({"set_aside": self.set_aside} if self.set_aside else {}),
            **({"ignored": self.ignored} if self.ignored else {}),
        }


def _partition_entry(t: Place) -> dict[str, Any]:
    return {
        "name": t.base,
        "values_table": t.values,
        "series_table": t.series,
        "arrays_table": t.arrays,
        "time_series_type": t.type.name,
        "status": "skipped",
        "series": [],
        "ids": [],
        "arrays": 0,
        "rows": 0,
        **dict.fromkeys(OUTCOMES, 0),
        "error": None,
    }


def _fill_entry(entry: dict[str, Any], result: PartitionResult, ids: list[int]) -> None:
    entry["series"] = result.series
    entry["ids"] = ids
    entry["arrays"] = result.arrays
    entry["rows"] = result.rows
    for outcome in result.outcomes:
        entry[outcome] += 1
    for s, outcome in zip(result.series, result.outcomes, strict=True):
        s["outcome"] = outcome
    for s, i in zip(result.series, ids, strict=False):
        s["id"] = i


def _run_per_partition(
    ctx: Context, sources: Sequence[PartitionSource], report: ImportReport
) -> ImportReport:
    for source, entry in zip(sources, report.partitions, strict=True):
        try:
            with ctx.store.transaction():
                result, ids = import_partition(ctx, source, write=True)
        except TimeSeriesError as exc:
            entry["status"] = "failed"
            entry["error"] = str(exc)
            exc.report = report  # type: ignore[attr-defined]
            raise
        entry["status"] = "committed"
        _fill_entry(entry, result, ids)
    ctx.finish()
    return report


def _run_dry(
    ctx: Context, sources: Sequence[PartitionSource], report: ImportReport
) -> ImportReport:
    first: TimeSeriesError | None = None
    for source, entry in zip(sources, report.partitions, strict=True):
        try:
            result, _ = import_partition(ctx, source, write=False)
        except TimeSeriesError as exc:
            entry["status"] = "failed"
            entry["error"] = str(exc)
            first = first or exc
            continue
        entry["status"] = "would_add"
        _fill_entry(entry, result, [])
    ctx.finish()
    if first is not None:
        first.report = report  # type: ignore[attr-defined]
        raise first
    return report


def run_import(
    ctx: Context,
    sources: Sequence[PartitionSource],
    report: ImportReport,
    *,
    dry_run: bool,
    per_partition: bool,
) -> list[int] | ImportReport:
    """Import every partition in order: one transaction for all of them, one per
    partition (``per_partition``), or none (``dry_run``); see ``import_sqlite``."""
    report.partitions = [_partition_entry(s.place) for s in sources]
    if dry_run:
        return _run_dry(ctx, sources, report)
    if per_partition:
        return _run_per_partition(ctx, sources, report)
    if ctx.on_conflict != "error":
        with ctx.store.transaction():
            for source, entry in zip(sources, report.partitions, strict=True):
                result, ids = import_partition(ctx, source, write=True)
                entry["status"] = "committed"
                _fill_entry(entry, result, ids)
        ctx.finish()
        return report
    ctx.report = False
    ids: list[int] = []
    with ctx.store.transaction():
        for source in sources:
            ids.extend(import_partition(ctx, source, write=True)[1])
    ctx.finish()
    return ids


# ------------------------------------------------------------------------------ options
@dataclass(slots=True)
class Options:
    overrides: dict[str, Any] = field(default_factory=dict)
    element_type: ElementType | None = None
    element_shape: tuple[int, ...] | None = None
    resolution: Period | None = None
    type: TimeSeriesType | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None, *, flag: str = "--sqlite") -> Options:
        """The inline flags of an import; ``flag`` is the container's own (``--sqlite``,
        ``--parquet``), which a refused flag's message names."""
        opts = cls()
        if not raw:
            return opts
        if not isinstance(raw, Mapping):
            raise InvalidParameterError(
                f"overrides must be a dict of inline flags, not {type(raw).__name__}"
            )
        for key, value in raw.items():
            if key not in OVERRIDE_KEYS and key not in ASSERTION_KEYS and key not in REFUSED_KEYS:
                raise InvalidParameterError(
                    f"unknown import flag {key!r}; overrides are {', '.join(OVERRIDE_KEYS)} "
                    f"and assertions are {', '.join(ASSERTION_KEYS)}"
                )
            if value is None:
                continue  # a flag not given
            if key in REFUSED_KEYS:
                refused = "--" + key.replace("_", "-")
                raise InvalidParameterError(
                    f"{refused} cannot be used with {flag}: {REFUSED_KEYS[key]}"
                )
            if key == "element_type":
                opts.element_type = parse_element_type(value)
            elif key == "element_shape":
                opts.element_shape = _parse_shape(value)
            elif key == "resolution":
                opts.resolution = as_period(value, what="resolution")
            elif key == "type":
                opts.type = TimeSeriesType.coerce(value)
            else:
                opts.overrides[key] = _check_override(key, value)
        return opts


def _parse_shape(value: Any) -> tuple[int, ...]:
    if isinstance(value, str):
        try:
            value = orjson.loads(value) if value.strip().startswith("[") else value.split(",")
        except orjson.JSONDecodeError as exc:
            raise InvalidParameterError(f"element_shape {value!r} is not a JSON list") from exc
        if isinstance(value, list) and value == [""]:
            value = []
    try:
        shape = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"element_shape must be a list of non-negative integers, got {value!r}"
        ) from None
    if any(d < 0 for d in shape):
        raise InvalidParameterError(f"element_shape must not hold negative sizes, got {shape}")
    return shape


def _check_override(key: str, value: Any) -> Any:
    if key == "owner_id":
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise InvalidParameterError(f"owner_id must be an integer, got {value!r}")
        return int(value)
    if key == "owner_category":
        return OwnerCategory.coerce(value)
    if key == "features":
        if not isinstance(value, Mapping):
            raise InvalidParameterError(
                f"features must be a dict of name to int, float, bool or str, got {value!r}"
            )
        return validate_features(value)
    if not isinstance(value, str):
        raise InvalidParameterError(f"{key} must be a string, got {value!r}")
    if key in ("owner_type", "name") and not value:
        raise InvalidParameterError(f"{key} must not be empty")
    if key == "time_reference":
        return _parse_reference(value, "the time_reference override")
    if key in DESCRIPTORS:
        return _descriptor(key, value, "the override")
    return value


# ------------------------------------------------------------------------------ helpers
def fmt_ms(ms: int) -> str:
    """``2024-01-01 00:00:00 UTC`` (``.001`` when the milliseconds are not zero)."""
    try:
        return ms_to_axis_instant(int(ms))[:-1].replace("T", " ") + " UTC"
    except (InvalidParameterError, OverflowError, ValueError):
        return f"{int(ms)} ms since the epoch"


def key_text(key: tuple[str, str]) -> str:
    return f"({key[0][:12]}, {key[1]})"


def _parse_reference(text: str, what: str) -> str | None:
    if text == "unspecified":
        return None
    if text == "":
        return "zoneless"
    try:
        return normalize_time_reference(text)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f'time_reference "{text}" ({what}): {exc}') from None


def _descriptor(name: str, value: str, what: str) -> str | None:
    if value == "":
        return None
    if name == "unit_system" and value not in UNIT_SYSTEMS:
        raise InvalidParameterError(
            f'unknown unit_system "{value}" ({what}); expected natural_units, component_base '
            "or an empty string"
        )
    return value


def _parse_features(text: str, what: str) -> dict[str, Any]:
    if text == "":
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InvalidParameterError(f"{what}: features is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidParameterError(f"{what}: features must be a JSON object, not {text[:40]}")
    for k, v in value.items():
        if v is None or isinstance(v, list | dict):
            shown = "null" if v is None else type(v).__name__
            raise InvalidParameterError(
                f'{what}: feature "{k}" is {shown}, but a feature value must be an int, float, '
                "bool, or string"
            )
    try:
        return validate_features(value)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{what}: {exc}") from None


# ------------------------------------------------------------------------------ values
@dataclass(slots=True)
class Spec:
    """One validated series row (overrides applied).

    :attr:`label`, how messages name the series, is spelled out only when asked for: a
    partition holds a Spec per series for the whole import, and most are never named.
    """

    file_id: int
    key: tuple[str, str]
    #: The row's own name and owner id (before any override) and its table, for the label.
    row_name: str
    row_owner_id: int
    table: str
    owner_id: int
    owner_type: str
    name: str
    # From here on, the row's shared part (SeriesRows._shared_part, in this order).
    category: OwnerCategory
    et: ElementType
    tr: str | None
    descriptors: dict[str, str | None]
    features: dict[str, Any]
    res: Period | None = None
    itv: Period | None = None
    hor: Period | None = None
    steps: int | None = None
    # Equal for equal ``(res, itv, hor)`` among the rows of one partition (a small int,
    # cheaper to hash than the periods); only compared within one partition.
    grid_key: Any = None
    #: Equal for rows of one partition that agree on everything but owner id, owner type,
    #: name and array (category, element type, reference, descriptors, features, grid):
    #: their catalog rows differ only there (see :class:`_Settle`).
    part: int = 0

    @property
    def label(self) -> str:
        """``'name' (owner 7, id 3 in <series table>)``: the row as the file holds it."""
        return f"'{self.row_name}' (owner {self.row_owner_id}, id {self.file_id} in {self.table})"


@dataclass(slots=True)
class Built:
    """One group re-encoded into a store array for one grid."""

    data: np.ndarray
    hash_hex: str
    initial_ms: int | None = None
    timestamps: np.ndarray | None = None
    count: int | None = None
    percentiles: list[float] | None = None
    #: The content hash (``hash_hex`` as bytes), set with it by :func:`hash_built`.
    digest: bytes = b""
    #: Its catalog fields and stored form (``array_values``), once a series row needs them.
    fields: tuple[dict[str, Any], np.ndarray] | None = None


@dataclass(slots=True)
class Group:
    """One array's values rows as a reader hands them to the core: ``values`` ``[n, *E]``
    and the coordinates as int64/float64 vectors, in the container's row order;
    ``rowids()`` gives the rows' numbers for messages (:attr:`Place.numbered`)."""

    key: tuple[str, str]
    ids: list[int]
    n: int
    values: np.ndarray  # [n, *E]
    timestamp: np.ndarray | None = None
    issue: np.ndarray | None = None
    lane: np.ndarray | None = None
    # Set by a reader that verified the grid itself (the SQLite fast path): the rows are
    # exactly this grid in row order, and the core does not place them again.
    affine: tuple | None = None
    rowids: Callable[[], list[int]] | None = None


@dataclass(slots=True)
class PartitionResult:
    series: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    arrays: int = 0
    rows: int = 0


class Context:
    """What one import carries across partitions."""

    def __init__(
        self,
        store: Store,
        opts: Options,
        skip_checksum: bool,
        progress: Progress | None,
        total: int,
    ) -> None:
        self.store = store
        self.opts = opts
        self.skip_checksum = skip_checksum
        self.progress = progress
        self.total = total
        self.done = 0
        self.identities: dict[tuple, str] = {}  # dry run: identities seen in the file
        self.on_conflict: OnConflict = "error"
        self.diff = False
        self.filed: set[int] = set()  # ids this import added or replaced
        self.report = True  # whether the caller gets a report (its per-series entries)

    def advance(self, rows: int) -> None:
        self.done += rows
        if self.progress is not None:
            self.progress(self.done, self.total)

    def finish(self) -> None:
        if self.progress is not None and self.done != self.total:
            self.done = self.total
            self.progress(self.done, self.total)


# ------------------------------------------------------------------------------ where
@dataclass(slots=True)
class Place:
    """One partition: its type and where its rows are, in the container's words.

    ``values``, ``series`` and ``arrays`` name the three places (SQLite: the tables; a
    file container: the files) in every message, and ``word`` is what one is called. ``numbered`` says whether a values row
    has a number of the container's own, which messages then name as ``row_word`` (SQLite:
    the ``rowid``); without one a row is named by its position in its group.
    """

    base: str
    type: TimeSeriesType
    values: str
    series: str
    arrays: str
    numbered: bool = True
    row_word: str = "rowid"
    #: What the container calls one of the three places ("table"; a file container "file").
    word: str = "table"
    #: The series row whose group is being read, for messages (set by the reader; its
    #: :attr:`label` is spelled out only when a message names it).
    naming: Spec | None = None
    #: The widest per-step shape the series rows declare (``element_shape``), set by the
    #: core before the values are read, so a reader can refuse a value cell bigger than
    #: any element could need without fetching it; None when no row declares one.
    cell_shape: tuple[int, ...] | None = None

    @property
    def label(self) -> str | None:
        """The series whose group is being read, as messages name it (None: none)."""
        return self.naming.label if self.naming is not None else None

    def row_text(
        self, key: tuple[str, str], rowids: list[int], i: int | None, *, series: bool = False
    ) -> str:
        where = f"array {key_text(key)} in {self.values}"
        if series and self.label is not None:
            where = f"series {self.label}, {where}"
        if i is None or i >= len(rowids):
            return where
        if self.numbered:
            return f"{where}, {self.row_word} {rowids[i]}"
        return f"{where}, row {i + 1}"

    def null_error(
        self, col: str, key: tuple[str, str], rowids: Callable, i: int
    ) -> InvalidParameterError:
        return InvalidParameterError(
            f"{self.row_text(key, rowids(), i, series=True)}: `{col}` is NULL; the layout holds NULL only "
            "in `value` (NaN)",
            table=self.values,
        )

    def ints(
        self, cells: list, col: str, key: tuple[str, str], rowids: Callable, *, ms: bool
    ) -> np.ndarray:
        n = len(cells)
        types = set(map(type, cells))
        if types == {int}:
            return np.fromiter(cells, dtype=np.int64, count=n)
        out = np.empty(n, dtype=np.int64)
        for i, v in enumerate(cells):
            t = type(v)
            if t is int:
                out[i] = v
                continue
            if v is None:
                raise self.null_error(col, key, rowids, i)
            if t is float and math.isfinite(v) and v.is_integer() and abs(v) < 2.0**63:
                out[i] = int(v)
                continue
            if t is float:
                what = (
                    f"{v!r}, which is not a whole millisecond; the store records instants to "
                    "the millisecond"
                    if ms
                    else f"{v!r}, which is not a whole number"
                )
            else:
                what = f"{'text' if t is str else 'a blob'} ({v!r:.40}), not an integer"
            raise InvalidParameterError(
                f"{self.row_text(key, rowids(), i, series=True)}: `{col}` holds {what}",
                table=self.values,
            )
        return out

    def floats(self, cells: list, col: str, key: tuple[str, str], rowids: Callable) -> np.ndarray:
        types = set(map(type, cells))
        if types <= {float, int}:
            return np.fromiter(cells, dtype=np.float64, count=len(cells))
        for i, v in enumerate(cells):
            if v is None:
                raise self.null_error(col, key, rowids, i)
            if type(v) not in (float, int):
                raise InvalidParameterError(
                    f"{self.row_text(key, rowids(), i, series=True)}: `{col}` holds {v!r:.40}, not a number",
                    table=self.values,
                )
        raise AssertionError("unreachable")  # pragma: no cover


# ------------------------------------------------------------------------------ containers
# The refusals of what a container finds (or does not) when it discovers partitions, worded
# here like every other; the reader only says where.
def missing_sibling(where: str, name: str, sibling: str) -> InvalidParameterError:
    """A values table (file) without its series or arrays one beside it."""
    return InvalidParameterError(
        f"{where} holds {name} but no {sibling} beside it; {TEXT_HINT}", table=name
    )


def derived_refused(name: str) -> InvalidParameterError:
    """A DeterministicSingleTimeSeries partition, which no import takes."""
    return InvalidParameterError(
        "a DeterministicSingleTimeSeries is derived from a stored SingleTimeSeries rather "
        "than added; import the SingleTimeSeries and run {transform}",
        terms={"transform": TRANSFORM},
        table=name,
    )


def no_partitions(where: str, prefix: str, *, word: str = "table") -> InvalidParameterError:
    if prefix:
        return InvalidParameterError(
            f'{where} holds no exported partitions under the {word} prefix "{prefix}"'
        )
    return InvalidParameterError(
        f"{where} holds no exported partitions without a {word} prefix (pass the prefix "
        "the export used)"
    )


def check_columns_present(place: Place, columns_of: Callable[[str], set[str]]) -> None:
    """Refuse a partition whose values, series or arrays place lacks a column of the
    layout; ``columns_of(name)`` is what the container found there."""
    tname = place.type.name
    need = {
        place.values: [
            "array_id",
            "timestamp",
            *(c for c, _ in values_key_columns(place.type)),
            "value",
        ],
        place.series: ["array_id", "id", *series_columns(place.type)],
        place.arrays: ["id", "data_hash", "time_axis"],
    }
    for name, cols in need.items():
        have = columns_of(name)
        missing = [c for c in cols if c not in have]
        if missing:
            kind = {place.values: "values", place.series: "series", place.arrays: "arrays"}[name]
            raise InvalidParameterError(
                f"{name} is missing column(s) a {tname} {kind} {place.word} carries: "
                f"{', '.join(missing)}",
                table=name,
            )


def stray_values_row(place: Place, aid: Any, row: int | None) -> InvalidParameterError:
    """A values row whose ``array_id`` is NULL (``aid`` None) or names no array; ``row``
    is its number in the container (None when it has none)."""
    where = f"{place.values} {place.row_word} {row}" if row is not None else place.values
    if aid is None:
        return InvalidParameterError(
            f"{where} has NULL in `array_id`; the layout holds NULL only in `value` (NaN)",
            table=place.values,
        )
    return InvalidParameterError(
        f"a values row names `array_id` {aid!r}, which the arrays {place.word} does not "
        f"hold; {TEXT_HINT} ({where})",
        table=place.values,
    )


def bad_value(
    place: Place, key: tuple[str, str], rowids: list[int], i: int | None, exc: InvalidParameterError
) -> InvalidParameterError:
    """A value cell the container could not decode (row ``i`` of the group)."""
    return InvalidParameterError(
        f"{place.row_text(key, rowids, i, series=True)}: {exc.message}", table=place.values
    )


# ------------------------------------------------------------------------------ the reader
class PartitionSource(Protocol):
    """What a container's reader gives the core for one partition.

    :func:`import_partition` calls, in this order: :meth:`reading` (around everything;
    turns the container's own errors into :class:`~infrastore_sqlite.errors.StorageError`),
    :meth:`check_columns`, :meth:`array_rows`, :meth:`series_batches`, :meth:`values_count`,
    :meth:`open_values`, then :meth:`groups` once, and :meth:`close_values` at the end
    (also after a failure). :meth:`check_unclaimed` is asked only when the values rows do
    not add up to the arrays' (a row of no array the container did not refuse earlier).
    """

    place: Place
    #: The container as the caller named it (a path), for messages.
    where: str
    #: How to recompute the container's hashes (named by a checksum mismatch).
    rehash: Term
    #: False when the container records no hash to check (a foreign Parquet file).
    checksum: bool

    def reading(self) -> contextlib.AbstractContextManager[None]: ...

    def check_columns(self) -> None: ...

    def array_rows(self) -> Iterable[Sequence[Any]]: ...

    def series_batches(self, columns: Sequence[str]) -> Iterable[Sequence[Sequence[Any]]]:
        """The series rows' ``columns`` (the layout's names), a batch of rows at a time,
        each batch as one sequence of cells per column (:func:`rows_as_batches` makes
        them of rows)."""
        ...

    def values_count(self) -> int: ...

    def open_values(self, arrays: Mapping[int, tuple[str, str]]) -> None: ...

    def groups(
        self, wanted: Sequence[tuple[tuple[str, str], list[int], Spec | None]], dtype: str
    ) -> Iterator[Group | None]:
        """One group (or None: the array has no values rows) per entry of ``wanted``
        ``(key, array ids, the first series row naming it)``, in that order (key order).

        The core clears each entry of ``wanted`` once its group is handed back: a reader
        may look ahead of the entry it is at, never back."""
        ...

    def check_unclaimed(self) -> None: ...

    def close_values(self) -> None: ...


# ------------------------------------------------------------------------------ series rows
#: Series rows a reader gives as rows are checked this many at a time, as columns.
_SPEC_BATCH = 4096


def rows_as_batches(rows: Iterable[Sequence[Any]]) -> Iterator[list[tuple]]:
    """``rows`` a batch at a time, each batch as its columns (what
    :meth:`PartitionSource.series_batches` gives)."""
    it = iter(rows)
    while chunk := list(itertools.islice(it, _SPEC_BATCH)):
        yield list(zip(*chunk, strict=True))


def _widest_shape(cells: Iterable[Any]) -> tuple[int, ...] | None:
    """The ``element_shape`` cell with the most leaves, or None if none is a shape.

    The import otherwise reads an element's shape from its values (a composite's row
    width varies per series), so the column only bounds how big a value cell may be.
    A cell that is not a short JSON list of sizes bounds nothing.
    """
    widest: tuple[int, ...] | None = None
    for cell in cells:
        if type(cell) is not str or len(cell) > 200:
            continue
        try:
            shape = orjson.loads(cell)
        except orjson.JSONDecodeError:
            continue
        if type(shape) is not list or not all(type(d) is int and d >= 0 for d in shape):
            continue
        if widest is None or math.prod(shape) > math.prod(widest):
            widest = tuple(shape)
    return widest


class SeriesRows:
    """A partition's arrays and series rows checked and turned into :class:`Spec`.

    Rows repeat a handful of shared parts (category, element type, reference,
    descriptors, features, grid); each distinct one is worked out once.
    """

    def __init__(self, place: Place) -> None:
        self.place = place
        #: The series row's cells, in the order :meth:`specs` takes them.
        self.columns = ["array_id", "id", *series_columns(place.type)]
        self._features: dict[str, dict[str, Any]] = {}
        self._periods: dict[tuple[str, str], Period] = {}
        self._shared: dict[tuple, tuple] = {}  # the shared part of series rows, by its cells
        self._shared_cols: Callable[[tuple], tuple] | None = None
        self._grids: dict[tuple, int] = {}  # (res, itv, hor) -> grid_key
        self._col_index: tuple[list[str], dict[str, int]] | None = None

    def arrays(self, rows: Iterable[Sequence[Any]]) -> dict[int, tuple[str, str]]:
        """``id -> (data_hash, time_axis)`` from the arrays rows ``(id, data_hash,
        time_axis)`` in the container's order; every cell checked."""
        out: dict[int, tuple[str, str]] = {}
        table = self.place.arrays
        for n, (aid, h, axis) in enumerate(rows, start=1):
            if type(aid) is not int or type(h) is not str or type(axis) is not str:
                self._bad_array_row(n, aid, h, axis)
            key = (h, axis)
            if out.setdefault(aid, key) != key:
                raise InvalidParameterError(
                    f"{table} holds id {aid} twice with different keys; {TEXT_HINT}", table=table
                )
        return out

    def _bad_array_row(self, n: int, aid: Any, h: Any, axis: Any) -> None:
        """Refuse arrays row ``n``, whose cells are not an integer and two texts."""
        table = self.place.arrays
        for col, v in (("id", aid), ("data_hash", h), ("time_axis", axis)):
            if v is None:
                raise InvalidParameterError(
                    f"{table} row {n} has NULL in `{col}`; the layout holds NULL only in "
                    "a values table's `value`",
                    table=table,
                )
        if type(aid) is not int:
            raise InvalidParameterError(
                f"{table} row {n} has id {aid!r}, which is not an integer", table=table
            )
        col = "data_hash" if type(h) is not str else "time_axis"
        raise InvalidParameterError(
            f"{table} row {n} (id {aid}) holds a {type(h if col == 'data_hash' else axis).__name__} "
            f"in `{col}`, which is text in the layout",
            table=table,
        )

    def specs(
        self, rows: Iterable[Sequence[Any]], arrays: dict[int, tuple[str, str]], opts: Options
    ) -> list[Spec]:
        """Every series row (cells in the order of :attr:`columns`), validated, overrides
        applied, in ``(key, id)`` order."""
        return self.specs_of_batches(rows_as_batches(rows), arrays, opts)

    def specs_of_batches(
        self,
        batches: Iterable[Sequence[Sequence[Any]]],
        arrays: dict[int, tuple[str, str]],
        opts: Options,
    ) -> list[Spec]:
        """:meth:`specs` of the series rows given a batch at a time as columns (one
        sequence of cells per name of :attr:`columns`, in that order)."""
        table = self.place.series
        specs: list[Spec] = []
        # Each shared part's element type (a part is one element type): compared once
        # at the end, not spelled out per row.
        part_types: dict[int, ElementType] = {}
        shapes: set[Any] = set()
        # Rows repeat a handful of cell-type patterns; a pattern checked once is known good.
        good_types: set[tuple] = set()
        shape_at = self.columns.index("element_shape")
        start = 0
        for batch in batches:
            count = len(batch[0]) if batch else 0
            if not self._batch_specs(batch, arrays, opts, specs, part_types):
                for n, raw in enumerate(zip(*batch, strict=True), start=start + 1):
                    spec = self._row_spec(n, raw, arrays, opts, good_types)
                    specs.append(spec)
                    part_types[spec.part] = spec.et
            shapes.update(batch[shape_at])
            start += count
        element_types = {str(et) for et in part_types.values()}
        if len(element_types) > 1:
            raise InvalidParameterError(
                f"{table} mixes time-series or element types; a partition holds one of each "
                f"(element types {', '.join(sorted(element_types))})",
                table=table,
            )
        specs.sort(key=lambda s: (s.key, s.file_id))
        self.place.cell_shape = _widest_shape(shapes)
        return specs

    def _batch_specs(
        self,
        batch: Sequence[Sequence[Any]],
        arrays: dict[int, tuple[str, str]],
        opts: Options,
        specs: list[Spec],
        part_types: dict[int, ElementType],
    ) -> bool:
        """A batch's Specs appended to ``specs`` a column at a time, when every check the
        rows would pass one by one holds for whole columns (a cell type per column, one
        type name, every array known, names and owner types given). False, appending
        nothing, when one does not: the batch then goes row by row (:meth:`_row_spec`),
        which refuses the first row at fault with the row's own message."""
        cols = self.columns
        if not batch or len(batch) != len(cols):
            return False
        at = {c: i for i, c in enumerate(cols)}
        for c, cells in zip(cols, batch, strict=True):
            types = set(map(type, cells))
            if c in ("array_id", "id", "owner_id"):
                ok = types == {int}
            elif c in ("initial_timestamp", "length", "count"):
                ok = type(None) not in types
            else:
                ok = types == {str}
            if not ok:
                return False
        if set(batch[at["time_series_type"]]) != {self.place.type.name}:
            return False
        keys = list(map(arrays.get, batch[0]))
        if None in keys:
            return False
        ov = opts.overrides
        names = batch[at["name"]]
        owner_types = batch[at["owner_type"]]
        if not (ov["name"] if "name" in ov else all(names)):
            return False
        if not (ov["owner_type"] if "owner_type" in ov else all(owner_types)):
            return False
        shared_keys = list(zip(*(batch[i] for i in self._shared_indices(at)), strict=True))
        parts = self._shared
        for k, shared_key in enumerate(shared_keys):
            if shared_key not in parts:
                try:
                    self._shared_of(shared_key, tuple(c[k] for c in batch), opts)
                except InvalidParameterError:
                    return False  # refused again, in its row's turn, row by row
        fids, owner_ids, table = batch[1], batch[at["owner_id"]], self.place.series
        for shared_key in set(shared_keys):
            part = parts[shared_key]
            part_types[part[-1]] = part[1]  # its number -> its element type
        # Positional: a Spec per series, and keywords cost it three times as much.
        specs.extend(
            Spec(
                fid, key, row_name, owner_id, table, ov.get("owner_id", owner_id),
                ov.get("owner_type", owner_type), ov.get("name", row_name), *parts[shared_key],
            )
            for fid, key, row_name, owner_id, owner_type, shared_key in zip(
                fids, keys, names, owner_ids, owner_types, shared_keys, strict=True
            )
        )  # fmt: skip
        return True

    def _row_spec(
        self,
        n: int,
        raw: Sequence[Any],
        arrays: dict[int, tuple[str, str]],
        opts: Options,
        good_types: set[tuple],
    ) -> Spec:
        """Row ``n`` (1-based) checked and turned into its Spec."""
        cols = self.columns
        tst = self.place.type
        table = self.place.series
        types = tuple(map(type, raw))
        if types not in good_types:
            self._check_cells(n, dict(zip(cols, raw, strict=True)), cols)
            good_types.add(types)
        if raw[cols.index("time_series_type")] != tst.name:
            r = dict(zip(cols, raw, strict=True))
            if r["time_series_type"] in {t.name for t in TimeSeriesType}:
                raise InvalidParameterError(
                    f"{table} mixes time-series or element types; a partition holds one of "
                    f"each (id {r['id']} is a {r['time_series_type']} in a {tst.name} table)",
                    table=table,
                )
            raise InvalidParameterError(
                f'{table} id {r["id"]}: unknown time_series_type "{r["time_series_type"]}"',
                table=table,
            )
        return self._spec(raw, cols, arrays, opts)

    def _check_cells(self, n: int, r: dict[str, Any], cols: list[str]) -> None:
        """NULLs and cell types of one series row."""
        table = self.place.series
        for c in cols:
            if r[c] is None:
                shown = f"id {r['id']}" if r["id"] is not None else f"row {n}"
                raise InvalidParameterError(
                    f"{table} {shown} has NULL in `{c}`; the layout holds NULL only in a "
                    "values table's `value`",
                    table=table,
                )
        for c in ("array_id", "id", "owner_id"):
            if type(r[c]) is not int:
                raise InvalidParameterError(
                    f"{table} row {n}: `{c}` holds {r[c]!r}, which is not an integer",
                    table=table,
                )
        for c in cols[3:]:
            if c not in ("initial_timestamp", "length", "count") and type(r[c]) is not str:
                raise InvalidParameterError(
                    f"{table} id {r['id']}: `{c}` holds {r[c]!r}, which is not text",
                    table=table,
                )

    def _spec(
        self,
        raw: tuple,
        cols: list[str],
        arrays: dict[int, tuple[str, str]],
        opts: Options,
    ) -> Spec:
        table = self.place.series
        ov = opts.overrides
        idx = self._col_index
        if idx is None or idx[0] is not cols:
            idx = self._col_index = (cols, {c: i for i, c in enumerate(cols)})
        at = idx[1]
        aid, fid, owner_id, row_name, row_owner_type = (
            raw[0],
            raw[1],
            raw[at["owner_id"]],
            raw[at["name"]],
            raw[at["owner_type"]],
        )
        key = arrays.get(aid)
        if key is None:
            raise InvalidParameterError(
                f"a series row names `array_id` {aid}, which the arrays {self.place.word} "
                f"does not hold; {TEXT_HINT} ({table} id {fid})",
                table=table,
            )
        name = ov.get("name", row_name)
        if not name:
            raise InvalidParameterError(
                f"the file records no series name and none was given ({table} id {fid}); "
                "pass --name"
            )
        owner_type = ov.get("owner_type", row_owner_type)
        if not owner_type:
            raise InvalidParameterError(
                f"series '{row_name}' (owner {owner_id}, id {fid} in {table}) has no "
                "owner_type: an export carries one, a foreign file does not, so pass "
                "--owner-type"
            )
        # Everything else a row says is shared by many rows: worked out (and checked) once
        # per distinct combination, the first row that has it naming it in any message.
        shared_key = self._shared_at(at)(raw)
        shared = self._shared.get(shared_key)
        if shared is None:
            shared = self._shared_of(shared_key, raw, opts)
        # Positional: a Spec per series, and keywords cost it three times as much.
        return Spec(
            fid, key, row_name, owner_id, table, ov.get("owner_id", owner_id), owner_type, name,
            *shared,
        )  # fmt: skip

    def _shared_indices(self, at: dict[str, int]) -> list[int]:
        """Where the cells a row's shared part is worked out from are, in its columns."""
        names = ["owner_category", "element_type", "time_reference", *DESCRIPTORS, "features"]
        names += [c for c in ("resolution", "interval", "horizon") if c in at]
        return [at[c] for c in names]

    def _shared_at(self, at: dict[str, int]) -> Callable[[tuple], tuple]:
        """The cells of a row its shared part is worked out from, as one tuple (in C)."""
        if self._shared_cols is None:
            self._shared_cols = operator.itemgetter(*self._shared_indices(at))
        return self._shared_cols

    def _shared_of(self, shared_key: tuple, raw: Sequence[Any], opts: Options) -> tuple:
        """The shared part of the first row that has ``shared_key``, worked out (the row
        named in any refusal) and kept for the rows after it."""
        cols = self.columns
        r = dict(zip(cols, raw, strict=True))
        label = f"'{r['name']}' (owner {r['owner_id']}, id {r['id']} in {self.place.series})"
        shared = self._shared_part(r, f"series {label}", opts)
        self._shared[shared_key] = shared
        return shared

    def _shared_part(self, r: dict[str, Any], what: str, opts: Options) -> tuple:
        tst = self.place.type
        ov = opts.overrides
        if "owner_category" in ov:
            category = ov["owner_category"]
        else:
            try:
                category = OwnerCategory[r["owner_category"]]
            except KeyError:
                raise InvalidParameterError(
                    f'{what}: unknown owner_category "{r["owner_category"]}"; expected '
                    "Component or SupplementalAttribute"
                ) from None
        try:
            et = parse_element_type(r["element_type"])
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{what}: {exc}") from None
        if opts.element_type is not None and opts.element_type != et:
            raise InvalidParameterError(
                f"{what} has element_type {et}, but {opts.element_type} was asserted"
            )
        if opts.type is not None and opts.type is not tst:
            raise InvalidParameterError(
                f"{what} is a {tst.name}, but the type {opts.type.name} was asserted"
            )
        if "time_reference" in ov:
            tr = ov["time_reference"]
        else:
            tr = _parse_reference(r["time_reference"], what)
        descriptors = {d: ov[d] if d in ov else _descriptor(d, r[d], what) for d in DESCRIPTORS}
        if "features" in ov:
            features = ov["features"]
        else:
            # Series share a handful of feature maps; parse each text once. The dict is
            # only read from here on, so the series that share it may share the object.
            features = self._features.get(r["features"])
            if features is None:
                features = _parse_features(r["features"], what)
                self._features[r["features"]] = features
        res = itv = hor = None
        steps = None
        if tst is TimeSeriesType.SingleTimeSeries or tst.is_forecast:
            res = self._period(r["resolution"], "resolution", what)
            if not res.is_positive:
                raise InvalidParameterError(f"{what}: resolution must be positive, got {res}")
            if opts.resolution is not None and opts.resolution != res:
                raise InvalidParameterError(
                    f"{what} has resolution {res}, but {opts.resolution} was asserted"
                )
            try:
                check_period_for_reference(res, tr, what="resolution")
            except InvalidParameterError as exc:
                raise InvalidParameterError(f"{what}: {exc}") from None
        elif opts.resolution is not None:
            raise InvalidParameterError(
                f"{what} is a {tst.name}, which has no resolution, but resolution "
                f"{opts.resolution} was asserted"
            )
        if tst.is_forecast:
            assert res is not None
            hor = self._period(r["horizon"], "horizon", what)
            itv = self._period(r["interval"], "interval", what)
            try:
                steps = divide(hor, res, what="horizon")
                if itv.is_positive:
                    check_period_for_reference(itv, tr, what="interval")
                elif str(itv) != "PT0S":
                    raise InvalidParameterError(
                        f"interval must be positive (PT0S only for a single window), got {itv}"
                    )
            except InvalidParameterError as exc:
                raise InvalidParameterError(f"{what}: {exc}") from None
        grid = self._grids.setdefault((res, itv, hor), len(self._grids))
        part = len(self._shared)  # this part's number: it is stored under it next
        return (category, et, tr, descriptors, features, res, itv, hor, steps, grid, part)

    def _period(self, text: str, what: str, series: str) -> Period:
        found = self._periods.get((text, what))
        if found is not None:
            return found
        try:
            period = as_period(text, what=what)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{series}: {exc}") from None
        self._periods[(text, what)] = period
        return period


def read_rows(
    source: PartitionSource, opts: Options
) -> tuple[dict[int, tuple[str, str]], list[Spec]]:
    """A partition's columns checked, then its arrays rows (``id -> key``) and its series
    rows as :class:`Spec` in ``(key, id)`` order: what the import and a rehash both
    start from."""
    source.check_columns()
    rows = SeriesRows(source.place)
    arrays = rows.arrays(source.array_rows())
    return arrays, rows.specs_of_batches(source.series_batches(rows.columns), arrays, opts)


def first_specs(specs: Iterable[Spec]) -> dict[tuple[str, str], Spec]:
    """The first series row naming each array key (the grid a rehash places it by)."""
    first: dict[tuple[str, str], Spec] = {}
    for s in specs:
        first.setdefault(s.key, s)
    return first


# ------------------------------------------------------------------------------ filing
class Filing:
    """Where a partition's built series go: into the store in batches, or (a dry run)
    only checked against it.

    The one place that decides what happens to a series whose identity the store (or the
    file, earlier) already holds, under the import's ``on_conflict``
    (:mod:`infrastore_sqlite.interchange.filing`: refuse, replace in place, or skip); each
    series' outcome (``added``, ``replaced``, ``unchanged``, ``skipped``) goes to the
    partition's result.
    """

    def __init__(self, ctx: Context, result: PartitionResult, *, write: bool) -> None:
        self.ctx = ctx
        self.result = result
        self.write = write
        self.ids: list[int] = []
        self._pending: list[dict[str, Any]] = []
        self._pending_bytes = 0

    def add(self, prepared: dict[str, Any], nbytes: int) -> None:
        """One series, as ``Store._row_for`` prepared it (``nbytes``: its array's size)."""
        if self.write:
            self._pending.append(prepared)
            self._pending_bytes += nbytes
            return
        outcome, detail = _check_new(self.ctx, prepared)
        self.result.outcomes.append(outcome)
        if self.ctx.report and detail:
            self.result.series[-1].update(detail)

    @property
    def pending_bytes(self) -> int:
        """The bytes of the arrays waiting to be handed to the store."""
        return self._pending_bytes

    @property
    def pending_series(self) -> int:
        """How many series wait to be handed to the store."""
        return len(self._pending)

    def group_done(self) -> None:
        """After each group (or batch of groups): hand a full batch to the store."""
        if self.write and (
            self._pending_bytes >= _BATCH_BYTES or len(self._pending) >= _BATCH_SERIES
        ):
            self.flush()

    def flush(self) -> None:
        if self.write and self._pending:
            ctx = self.ctx
            filed = file_items(ctx.store, self._pending, ctx.on_conflict, filed=ctx.filed)
            self.result.outcomes.extend(filed.outcomes)
            self.ids.extend(filed.ids)
            self._pending, self._pending_bytes = [], 0


# ------------------------------------------------------------------------------ building
def _check_elements(
    place: Place, group: Group, et: ElementType, spec: Spec, opts: Options
) -> np.ndarray:
    """The group's values checked against the element type (composites shrunk later)."""
    values = group.values
    shape = tuple(values.shape[1:])
    try:
        check_element_shape(et, shape, et.dtype)
    except InvalidParameterError as exc:
        raise InvalidParameterError(
            f"series {spec.label}, {place.row_text(group.key, [], None)}: {exc}",
            table=place.values,
        ) from None
    if et.is_composite and values.size:
        try:
            check_composite_rows(et, values.reshape(-1, values.shape[-1]))
        except InvalidParameterError as exc:
            rows = values.reshape(group.n, -1, values.shape[-1])
            bad = None
            for i in range(group.n):
                try:
                    check_composite_rows(et, rows[i])
                except InvalidParameterError:
                    bad = i
                    break
            assert group.rowids is not None
            raise InvalidParameterError(
                f"series {spec.label}, {place.row_text(group.key, group.rowids(), bad)}: {exc}",
                table=place.values,
            ) from None
    if opts.element_shape is not None and opts.element_shape != shape:
        raise InvalidParameterError(
            f"series {spec.label} has element_shape {list(shape)}, but "
            f"{list(opts.element_shape)} was asserted"
        )
    return values


def _build(place: Place, group: Group, spec: Spec, et: ElementType) -> Built:
    """Re-encode a group into the store array the grid of ``spec`` makes of it."""
    tst = place.type
    values = group.values
    if group.affine is not None and _affine_fits(group.affine, spec):
        kind = group.affine[0]
        if kind == "sts":
            data = values
            return Built(np.ascontiguousarray(data), "", initial_ms=group.affine[1])
        if kind == "lanes":
            _, first, _itv, _res, steps, count, lanes, lane_values = group.affine
            e = values.shape[1:]
            data = values.reshape(count, steps, lanes, *e).transpose(2, 1, 0, *range(3, 3 + len(e)))
            if tst is TimeSeriesType.Scenarios:
                return Built(np.ascontiguousarray(data), "", initial_ms=first, count=count)
            percentiles = [float(p) for p in lane_values]
            return Built(
                np.ascontiguousarray(data),
                "",
                initial_ms=first,
                count=count,
                percentiles=percentiles,
            )
        _, first, _itv, _res, steps, count = group.affine
        data = values.reshape(count, steps, *values.shape[1:]).swapaxes(0, 1)
        return Built(np.ascontiguousarray(data), "", initial_ms=first, count=count)
    _materialize(group)
    assert group.timestamp is not None
    if tst is TimeSeriesType.SingleTimeSeries:
        return _build_static(place, group, spec)
    if tst.is_irregular:
        return _build_irregular(place, group, spec)
    return _build_forecast(place, group, spec)


def _affine_fits(affine: tuple, spec: Spec) -> bool:
    if affine[0] == "sts":
        return spec.res is not None and not spec.res.calendar and spec.res.ms == affine[2]
    return (
        spec.res is not None
        and spec.itv is not None
        and not spec.res.calendar
        and not spec.itv.calendar
        and spec.itv.ms == affine[2]
        and spec.res.ms == affine[3]
        and spec.steps == affine[4]
    )


def _materialize(group: Group) -> None:
    """Spell out the coordinates of a group the fast path verified."""
    if group.timestamp is not None or group.affine is None:
        return
    r = np.arange(group.n, dtype=np.int64)
    if group.affine[0] == "sts":
        _, first, res = group.affine
        group.timestamp = first + r * res
        return
    if group.affine[0] == "lanes":
        _, first, itv, res, steps, _count, lanes, lane_values = group.affine
        group.issue = first + (r // (steps * lanes)) * itv
        group.timestamp = group.issue + ((r // lanes) % steps) * res
        group.lane = lane_values[r % lanes]
        return
    _, first, itv, res, steps, _count = group.affine
    group.issue = first + (r // steps) * itv
    group.timestamp = group.issue + (r % steps) * res


def _grid_error(spec: Spec, anchor: int, detail: str) -> InvalidParameterError:
    return InvalidParameterError(
        f"series {spec.label} does not sit on a {spec.res} grid anchored at {fmt_ms(anchor)}"
        f" ({detail})"
    )


def _build_static(place: Place, group: Group, spec: Spec) -> Built:
    ts = group.timestamp
    assert ts is not None and spec.res is not None
    n = group.n
    anchor = int(ts.min())
    res = spec.res
    if res.calendar:
        k = grid_index(anchor, res, ts)
        off = k < 0
    else:
        d = ts - anchor
        k = d // res.ms
        off = (d % res.ms) != 0
    rowids = group.rowids or (lambda: [])
    if off.any():
        i = int(np.argmax(off))
        raise _grid_error(
            spec,
            anchor,
            f"{place.row_text(group.key, rowids(), i)} is at {fmt_ms(int(ts[i]))}, between "
            "two steps",
        )
    order = np.argsort(k, kind="stable")
    sk = k[order]
    expected = np.arange(n, dtype=np.int64)
    if not np.array_equal(sk, expected):
        j = int(np.argmax(sk != expected))
        if j > 0 and sk[j] == sk[j - 1]:
            i = int(order[j])
            detail = (
                f"{place.row_text(group.key, rowids(), i)} repeats the step at {fmt_ms(int(ts[i]))}"
            )
        else:
            missing = int(step(anchor, res, j))
            detail = f"no row holds the step at {fmt_ms(missing)}, step {j} of {n} rows"
        raise _grid_error(spec, anchor, detail)
    data = group.values if _is_identity(order) else group.values[order]
    return Built(np.ascontiguousarray(data), "", initial_ms=anchor)


def _is_identity(order: np.ndarray) -> bool:
    return bool((np.diff(order) == 1).all()) if order.size > 1 else True


def _build_irregular(place: Place, group: Group, spec: Spec) -> Built:
    ts = group.timestamp
    assert ts is not None
    order = np.argsort(ts, kind="stable")
    sts = ts[order]
    if sts.size > 1:
        same = np.diff(sts) <= 0
        if same.any():
            j = int(np.argmax(same)) + 1
            rowids = group.rowids() if group.rowids else []
            a, b = int(order[j - 1]), int(order[j])
            raise InvalidParameterError(
                f"series {spec.label}: timestamps must be strictly increasing, but "
                f"{place.row_text(group.key, rowids, b)} repeats {fmt_ms(int(sts[j]))}"
                + (f" (as rowid {rowids[a]} does)" if place.numbered and rowids else ""),
                table=place.values,
            )
    identity = _is_identity(order)
    data = group.values if identity else group.values[order]
    return Built(np.ascontiguousarray(data), "", timestamps=np.ascontiguousarray(sts))


def _build_forecast(place: Place, group: Group, spec: Spec) -> Built:
    tst = place.type
    ts, it = group.timestamp, group.issue
    assert ts is not None and it is not None
    assert spec.res is not None and spec.itv is not None and spec.steps is not None
    res, itv, steps = spec.res, spec.itv, spec.steps
    rowids = group.rowids or (lambda: [])
    n = group.n
    anchor = int(it.min())
    windows, w = np.unique(it, return_inverse=True)
    count = int(windows.size)
    expected = np.array([step(anchor, itv, k) for k in range(count)], dtype=np.int64)
    if not np.array_equal(windows, expected):
        k = int(np.argmax(windows != expected))
        i = int(np.argmax(it == windows[k]))
        raise InvalidParameterError(
            f"series {spec.label} has an issue time of {fmt_ms(int(windows[k]))}, which is not "
            f"window {k} of a {itv} grid anchored at {fmt_ms(anchor)} "
            f"({place.row_text(group.key, rowids(), i)})"
        )
    if not itv.is_positive and count > 1:  # pragma: no cover - caught by the window check
        raise InvalidParameterError(f"series {spec.label} has {count} windows at interval PT0S")
    # Step within the window: on the resolution grid that starts at the window's issue.
    if res.calendar:
        h = np.empty(n, dtype=np.int64)
        for k in range(count):
            sel = w == k
            h[sel] = grid_index(int(windows[k]), res, ts[sel])
        off = (h < 0) | (h >= steps)
    else:
        d = ts - it
        h = d // res.ms
        off = ((d % res.ms) != 0) | (h < 0) | (h >= steps)
    if off.any():
        i = int(np.argmax(off))
        raise InvalidParameterError(
            f"series {spec.label} has a target time of {fmt_ms(int(ts[i]))}, which is not on "
            f"the {steps}-step grid starting at {fmt_ms(int(it[i]))} "
            f"({place.row_text(group.key, rowids(), i)})"
        )
    percentiles = None
    if tst is TimeSeriesType.Probabilistic:
        pct = group.lane
        assert pct is not None
        if not np.isfinite(pct).all():
            i = int(np.argmax(~np.isfinite(pct)))
            raise InvalidParameterError(
                f"series {spec.label} has a percentile of {float(pct[i])!r}, which is not finite "
                f"({place.row_text(group.key, rowids(), i)})"
            )
        lanes_v, lane = np.unique(pct, return_inverse=True)
        lanes = int(lanes_v.size)
        percentiles = [float(p) for p in lanes_v]
    elif tst is TimeSeriesType.Scenarios:
        lane = group.lane
        assert lane is not None
        if lane.size and lane.min() < 0:
            i = int(np.argmax(lane < 0))
            raise InvalidParameterError(
                f"series {spec.label} has scenario {int(lane[i])}; scenarios count from 0 "
                f"({place.row_text(group.key, rowids(), i)})"
            )
        lanes = int(lane.max()) + 1 if lane.size else 0
    else:
        lane = np.zeros(n, dtype=np.int64)
        lanes = 1
    cells = lanes * steps * count
    if n != cells:
        raise InvalidParameterError(
            f"series {spec.label} has {n} rows, but its grid holds {cells} values ({lanes} lanes "
            f"x {steps} steps x {count} windows)"
        )
    slot = (lane.astype(np.int64) * steps + h) * count + w
    seen = np.zeros(cells, dtype=np.int64)
    np.add.at(seen, slot, 1)
    if (seen > 1).any():
        s = int(np.argmax(seen > 1))
        lane_i, rest = divmod(s, steps * count)
        h_i, w_i = divmod(rest, count)
        dup = np.flatnonzero(slot == s)
        rows = rowids()
        where = ", ".join(place.row_text(group.key, rows, int(i)).split(", ")[-1] for i in dup[:2])
        raise InvalidParameterError(
            f"series {spec.label} has two rows for window {w_i}, step {h_i}, lane {lane_i} "
            f"({where} of {place.values})"
        )
    values = group.values
    out = np.empty((cells, *values.shape[1:]), dtype=values.dtype)
    out[slot] = values
    lead = [steps, count] if tst.leading_dims == 2 else [lanes, steps, count]
    data = out.reshape(*lead, *values.shape[1:])
    return Built(data, "", initial_ms=anchor, count=count, percentiles=percentiles)


def _canonical(built: Built, et: ElementType) -> Built:
    """The composite at its canonical (minimal) width, which is what the hash covers."""
    if et.is_ragged:
        built.data = np.ascontiguousarray(shrink(et, built.data))
    return built


def hash_built(builts: Sequence[Built]) -> None:
    """Set the content hash of every array in ``builts`` (already at canonical width).

    One :func:`~infrastore_sqlite.core.hashing.data_hashes` call for the lot: a batch of
    short arrays costs about one SHA-256 update each, rather than the several numpy
    calls per array of hashing them one by one.
    """
    for b, digest in zip(builts, data_hashes([b.data for b in builts]), strict=True):
        b.digest = digest
        b.hash_hex = digest.hex()


def build_grids(
    place: Place, group: Group, specs: Sequence[Spec], opts: Options
) -> dict[Any, Built]:
    """Every distinct grid among ``specs`` turned into its store array, not yet hashed
    (:func:`hash_built`)."""
    et = specs[0].et
    _check_elements(place, group, et, specs[0], opts)
    out: dict[Any, Built] = {}
    for spec in specs:
        if spec.grid_key not in out:
            out[spec.grid_key] = _canonical(_build(place, group, spec, et), et)
    return out


def build_group(
    place: Place, group: Group, specs: Sequence[Spec], opts: Options
) -> dict[Any, Built]:
    """Every distinct grid among ``specs`` turned into its store array, hashed."""
    out = build_grids(place, group, specs, opts)
    hash_built(list(out.values()))
    return out


# ------------------------------------------------------------------------------ series objects
def _series_object(tst: TimeSeriesType, spec: Spec, built: Built) -> Any:
    cls = SERIES_CLASSES[tst]
    obj = cls.__new__(cls)
    obj.name = spec.name
    obj._et = spec.et
    obj._tr = spec.tr
    for d, v in spec.descriptors.items():
        setattr(obj, d, v)
    obj._data = built.data
    if tst.is_irregular:
        obj._ts_ms = built.timestamps
    else:
        obj._initial_ms = built.initial_ms
        obj._resolution = spec.res
    if tst.is_forecast:
        obj._horizon = spec.hor
        obj._interval = spec.itv
        obj._count = built.count
    if tst is TimeSeriesType.Probabilistic:
        obj._percentiles = list(built.percentiles or [])
    return obj


# ------------------------------------------------------------------------------ one partition
def import_partition(
    ctx: Context, source: PartitionSource, *, write: bool
) -> tuple[PartitionResult, list[int]]:
    """Read, check and build one partition's series; file them when ``write``.

    Returns what the report says of the partition and the new ids (none for a dry run).
    """
    # Several objects per series (its Spec, series object, catalog row) and no cycles
    # among them: the cyclic collector would only rescan them, ever more of them as the
    # partition goes on (as for the store's bulk add).
    with source.reading(), gc_paused():
        return _import_partition(ctx, source, write=write)


def _import_partition(
    ctx: Context, source: PartitionSource, *, write: bool
) -> tuple[PartitionResult, list[int]]:
    tables = source.place
    arrays, specs = read_rows(source, ctx.opts)
    total_rows = source.values_count()
    result = PartitionResult()
    if not specs:
        if total_rows:
            raise InvalidParameterError(
                f"{tables.series} is empty but {tables.values} is not; {TEXT_HINT}",
                table=tables.series,
            )
        return result, []
    by_key: dict[tuple[str, str], list[Spec]] = {}
    for s in specs:
        by_key.setdefault(s.key, []).append(s)
    dtype = specs[0].et.dtype
    del specs  # by_key holds them; each key's are let go once its group is filed
    ids_by_key: dict[tuple[str, str], list[int]] = {}
    for aid, key in arrays.items():
        ids_by_key.setdefault(key, []).append(aid)
    wanted: list[Any] = []
    for key in sorted(ids_by_key):
        ids = ids_by_key[key]
        ids.sort()
        wanted.append((key, ids, by_key[key][0] if key in by_key else None))
    del ids_by_key
    filing = Filing(ctx, result, write=write)
    settle = _Settle(ctx, source, result, filing)
    try:
        source.open_values(arrays)
        try:
            for at, ((key, _ids, _first), group) in enumerate(
                zip(wanted, source.groups(wanted, dtype), strict=True)
            ):
                # The entry is let go as soon as it is read, so that the Specs of the
                # series already filed do not live to the end of the partition (a
                # reader only looks ahead of it).
                wanted[at] = None
                group_specs = by_key.pop(key, [])
                if group is None:
                    if group_specs:
                        raise InvalidParameterError(
                            f"a series row names an array {key_text(key)} the values file does "
                            "not hold; a partition's values and series come from one export and "
                            f"must describe the same arrays ({tables.series} id "
                            f"{group_specs[0].file_id})",
                            table=tables.series,
                            key=key,
                        )
                    continue
                if not group_specs:
                    raise InvalidParameterError(
                        f"the values file holds an array {key_text(key)} that no series row "
                        "names; a partition's values and series come from one export and must "
                        f"describe the same arrays ({tables.values}, array_id "
                        f"{', '.join(map(str, group.ids))})",
                        table=tables.values,
                        key=key,
                    )
                settle.add(
                    key, group.n, group_specs, build_grids(tables, group, group_specs, ctx.opts)
                )
                del group
        except Exception:
            # The groups read before the failing one are settled first, so a refusal of
            # theirs (a checksum, a series the file holds twice) is still the one raised,
            # as when every group was settled as soon as it was read.
            settle.pending_only()
            raise
        settle.run()
        if result.rows != total_rows:  # pragma: no cover - check_claimed refuses these first
            source.check_unclaimed()
            raise InvalidParameterError(
                f"{tables.values} holds {total_rows} rows but its arrays claim {result.rows}; "
                f"{TEXT_HINT}",
                table=tables.values,
            )
        filing.flush()
    finally:
        source.close_values()
    return result, filing.ids


#: Groups built but not yet hashed and filed, at most: enough that hashing them in one
#: call costs about one SHA-256 update per array, few enough to stay a small buffer.
_SETTLE_GROUPS = 256


class _Settle:
    """A partition's built groups, hashed and filed in batches (:func:`hash_built`).

    Each group is built as it is read (its refusals come in row order); what follows
    (the hash, the checksum comparison, the catalog row of each series, the filing) runs
    for a batch at a time, in read order. A batch ends where the filing would hand its
    pending series to the store, so that happens after the same group as before.
    """

    def __init__(
        self, ctx: Context, source: PartitionSource, result: PartitionResult, filing: Filing
    ) -> None:
        self.ctx = ctx
        self.source = source
        self.result = result
        self.filing = filing
        self.tst = source.place.type
        self.pending: list[tuple[tuple[str, str], int, list[Spec], dict[Any, Built]]] = []
        self.nbytes = 0  # of the pending arrays, as the filing counts them
        self.series = 0
        self.advanced = 0
        #: Spec.part -> the catalog row of its first series, the others' template.
        self.templates: dict[int, dict[str, Any]] = {}

    def _prepared(self, spec: Spec, b: Built) -> dict[str, Any]:
        """One series as ``Store._row_for`` prepares it.

        The first series of each :attr:`Spec.part` is prepared by ``_row_for`` from a
        series object; the others, written, copy its row and put in what differs
        (owner id and type, name, and the fields of their array, which ``array_values``
        gives as ``_row_for`` takes them): a few dict stores instead of a series object
        and a 25-column row per series. A dry run keeps the object (a diff compares it).
        """
        template = self.templates.get(spec.part)
        if template is None or not self.filing.write:
            obj = _series_object(self.tst, spec, b)
            prepared = self.ctx.store._row_for(
                spec.owner_id, spec.owner_type, spec.category, obj, spec.features, b.digest
            )
            if template is None:
                self.templates[spec.part] = dict(prepared["row"])
            return prepared
        if b.fields is None:
            values, stored = array_values(
                spec.et, b.data, b.initial_ms, b.count, b.percentiles, b.timestamps, b.digest
            )
            b.fields = (dict(zip(ARRAY_FIELDS, values, strict=True)), stored)
        fields, stored = b.fields
        row = template.copy()
        row["owner_id"] = spec.owner_id
        row["owner_type"] = spec.owner_type
        row["name"] = spec.name
        row.update(fields)
        prepared = {
            "row": row,
            "data": stored,
            "features": spec.features,
            "label": series_label(spec.name, spec.owner_id),
        }
        if b.timestamps is not None:
            prepared["timestamps"] = b.timestamps
        return prepared

    def add(self, key: tuple[str, str], n: int, specs: list[Spec], built: dict[Any, Built]) -> None:
        self.pending.append((key, n, specs, built))
        self.series += len(specs)
        for spec in specs:
            self.nbytes += built[spec.grid_key].data.nbytes
        filing = self.filing
        if (
            len(self.pending) >= _SETTLE_GROUPS
            or filing.pending_bytes + self.nbytes >= _BATCH_BYTES
            or filing.pending_series + self.series >= _BATCH_SERIES
        ):
            self.run()

    def run(self) -> None:
        """Settle the pending groups, then let the filing hand a full batch on."""
        if self.pending:
            self.pending_only()
            self.filing.group_done()

    def pending_only(self) -> None:
        """Hash, check and prepare every pending group's series (in read order)."""
        todo, self.pending = self.pending, []
        self.nbytes = self.series = 0
        if not todo:
            return
        hash_built([b for _key, _n, _specs, built in todo for b in built.values()])
        ctx, result, tables = self.ctx, self.result, self.source.place
        filing, prepare = self.filing, self._prepared
        checksum, skip, report, diff = (
            self.source.checksum,
            ctx.skip_checksum,
            ctx.report,
            ctx.diff,
        )
        for key, n, specs, built in todo:
            for spec in specs:
                b = built[spec.grid_key]
                # One comparison serves the checksum refusal and a diff's ``hash_stale``.
                stale = checksum and b.hash_hex != key[0]
                if stale and not skip:
                    raise InvalidParameterError(
                        f"series {spec.label} does not match its recorded data_hash: the file "
                        f"says {key[0]} and its rows hash to {b.hash_hex} (array "
                        f"{key_text(key)} in {tables.arrays}). Values edited in a query "
                        "engine need the hash recomputed: run {rehash} (or UPDATE the "
                        "arrays table), or pass {no_checksum} to waive the comparison.",
                        terms={"rehash": self.source.rehash, "no_checksum": NO_CHECKSUM},
                        table=tables.arrays,
                        key=key,
                        series=spec.label,
                    )
            result.arrays += 1
            result.rows += n
            for spec in specs:
                b = built[spec.grid_key]
                # What Store._prepare checks of a bulk item holds here by construction
                # (the series row was validated, the object is built here), but the range.
                if not _I64_MIN <= spec.owner_id <= _I64_MAX:
                    raise InvalidParameterError(
                        f"owner_id {spec.owner_id} does not fit a signed 64-bit integer"
                    )
                prepared = prepare(spec, b)
                if report:
                    entry = {
                        "file_id": spec.file_id,
                        "owner_id": spec.owner_id,
                        "owner_type": spec.owner_type,
                        "owner_category": spec.category.name,
                        "name": spec.name,
                        "data_hash": b.hash_hex,
                        "time_axis": key[1],
                    }
                    if diff:
                        entry["hash_stale"] = checksum and b.hash_hex != key[0]
                    result.series.append(entry)
                filing.add(prepared, b.data.nbytes)
        ctx.advance(result.rows - self.advanced)
        self.advanced = result.rows


def _check_new(ctx: Context, prepared: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """Dry run: what filing ``prepared`` would do (and, for a diff, what it would change).

    Refuses a series the file holds twice, and one the store holds under
    ``on_conflict="error"``.
    """
    row = prepared["row"]
    ident = identity(row)
    label = prepared["label"]
    if ident in ctx.identities:
        raise DuplicateTimeSeriesError(
            f"a time series with that key already exists: {label} appears twice in the file "
            f"(as {ctx.identities[ident]})",
            series=label,
        )
    ctx.identities[ident] = label
    held = stored_rows(ctx.store, [prepared]).get(ident)
    if ctx.diff:
        detail = compare(ctx.store, prepared, held)
        return detail["change"], detail
    if held is None:
        return "added", None
    if ctx.on_conflict == "error":
        raise conflict_error(label, held["id"])
    if ctx.on_conflict == "ignore":
        return "skipped", {"id": held["id"]}
    changed = any(changed_columns(held, row).values())
    return ("replaced" if changed else "unchanged"), {"id": held["id"]}
