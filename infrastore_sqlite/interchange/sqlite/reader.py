"""Import the SQLite interchange layout back into a store.

A database holds partitions of three tables each (``<prefix><base>_values``, ``_series``
and ``_arrays``); see ``layout.py`` and the interchange description. The import is a merge
join keyed by the array key ``(data_hash, time_axis)``, never by the local ids or by row
order: the arrays table is read whole and walked in key order, and for each key its values
group is read as one object, checked, re-encoded into the store's array, hashed against the
recorded ``data_hash``, and filed under every series row that names it. Peak memory is the
arrays and series tables plus one group (and a bounded batch of pending writes), never a
partition.

Reading a group goes through the values table's ``array_id`` index to the group's rowid
span, then scans that span: a contiguous group (what every export writes) is one sequential
range, and for the common grids (a SingleTimeSeries or Deterministic on a fixed period) the
coordinates are verified inside SQLite in the same pass that fetches the values, so only
the value column ever crosses into Python. Anything the fast path cannot vouch for (an
edited, re-sorted or damaged group) is read column by column and placed by its coordinates
in numpy, which is also where every refusal is worded.

Everything the file says is checked and refused rather than coerced: NULLs outside
``value``, timestamps that are not whole milliseconds, rows off the declared grid, holes
and doubled slots in a forecast cube, values that do not fit the element type, dangling
array ids on either side, and a recomputed hash that disagrees with the recorded one
(unless ``skip_checksum``).
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np
import orjson

from ...core.elements import (
    ElementType,
    check_composite_rows,
    check_element_shape,
    parse_element_type,
    shrink,
)
from ...core.hashing import composite_data_hash, validate_features
from ...core.periods import Period, as_period, divide, grid_index, step
from ...core.timeref import check_period_for_reference, ms_to_axis_instant, normalize_time_reference
from ...errors import (
    NO_CHECKSUM,
    TRANSFORM,
    DuplicateTimeSeriesError,
    InvalidParameterError,
    StorageError,
    TimeSeriesError,
    rehash_term,
)
from ...model import (
    DESCRIPTORS,
    SERIES_CLASSES,
    UNIT_SYSTEMS,
    OwnerCategory,
    TimeSeriesType,
)
from ..filing import (
    OUTCOMES,
    OnConflict,
    changed_columns,
    check_on_conflict,
    compare,
    conflict_error,
    file_items,
    identity,
    stored_rows,
)
from ..layout import q, series_columns, type_of_table, validate_prefix, values_key_columns
from .cells import decode_cells
from .database import open_database

if TYPE_CHECKING:
    from ...store import Store

__all__ = ["ImportReport", "import_sqlite"]

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
_BATCH_SERIES = 4096
_TEXT_HINT = "a partition's tables come from one export"
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


# ------------------------------------------------------------------------------ report
@dataclass(slots=True)
class ImportReport:
    """What an import did (or, for a dry run, would do), partition by partition.

    Attributes
    ----------
    path
        The database read.
    table_prefix
        The prefix its partitions were found under.
    dry_run
        True when nothing was written.
    partitions
        One dict per partition in read order: ``name`` (the base name, without the prefix),
        ``values_table``, ``series_table``, ``arrays_table``, ``time_series_type``,
        ``status`` (``committed``, ``would_add``, ``failed``, or ``skipped`` for a partition
        never reached after a failure), ``series`` (one dict per series row: ``file_id``,
        the id the file recorded and the import drops, then ``owner_id``, ``owner_type``,
        ``owner_category``, ``name``, ``data_hash`` and ``time_axis``), ``ids`` (the new
        catalog ids, in the order of ``series``), ``arrays``, ``rows`` and ``error`` (the
        message, or None).
    """

    path: str
    table_prefix: str
    dry_run: bool
    partitions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ids(self) -> list[int]:
        """The new catalog ids of every committed partition, in read order."""
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
        }


# ------------------------------------------------------------------------------ entry point
def import_sqlite(
    store: Store,
    path: str | Path,
    *,
    table_prefix: str = "",
    skip_checksum: bool = False,
    dry_run: bool = False,
    overrides: Mapping[str, Any] | None = None,
    per_partition: bool = False,
    on_conflict: OnConflict = "error",
    progress: Progress | None = None,
    diff: bool = False,
) -> list[int] | ImportReport:
    """Add every series an interchange database holds under ``table_prefix``.

    Parameters
    ----------
    store
        The store to add to.
    path
        The SQLite database (as ``export_sqlite`` wrote it, possibly edited since).
    table_prefix
        The prefix the export used; ``""`` for none.
    skip_checksum
        Waive the comparison of each array with its recorded ``data_hash`` (after values
        were edited in place). The catalog always records the recomputed hash.
    dry_run
        Read and check everything, checksums included, and write nothing; returns an
        :class:`ImportReport` with the series each partition would add.
    overrides
        The CLI's inline flags. Overrides replace a column for every series
        (``owner_id``, ``owner_type``, ``owner_category``, ``name``, ``features`` as a
        dict, ``time_reference``, and the five descriptors, where ``""`` clears one);
        assertions (``element_type``, ``element_shape``, ``resolution``, ``type``) must
        agree with the file.
    per_partition
        Commit one transaction per partition (the CLI) and return an
        :class:`ImportReport`; a failing partition leaves those before it committed, and
        the exception it raises carries the report as ``exc.report``.
    on_conflict
        What to do with a series whose identity (owner id and category, type, name,
        resolution, interval, features) the store already holds: ``"error"`` (the
        default) refuses; ``"replace"`` updates it in place from the file (it keeps its
        catalog id; an identical one is left untouched and reported ``unchanged``);
        ``"ignore"`` leaves it as it is (``skipped``), which is how an interrupted import
        is resumed.
    progress
        Called as ``progress(done_rows, total_rows)`` while values are read.
    diff
        With ``dry_run``: each series entry also says what importing it with
        ``on_conflict="replace"`` would change (see :func:`diff_sqlite`).

    Returns
    -------
    list of int or ImportReport
        The new ids in read order (partitions in binary order of their values table,
        series by ``(data_hash, time_axis, id)`` within one); a report for ``dry_run``,
        ``per_partition`` or an ``on_conflict`` other than ``"error"``, whose partitions
        count the series ``added``, ``replaced``, ``unchanged`` and ``skipped``.

    Raises
    ------
    InvalidParameterError
        Anything the file or the arguments get wrong; each message names the table, the
        series or array, and the row. Nothing is added (per partition: nothing of the
        failing partition).
    DuplicateTimeSeriesError
        A series the store already holds, or two rows of the file with one identity.
    ReadOnlyStoreError
        The store is read-only (a dry run is allowed).
    """
    validate_prefix(table_prefix)
    opts = _Options.parse(overrides)
    check_on_conflict(on_conflict)
    if dry_run:
        store._open()
    else:
        store._writable()
    where = str(path)
    conn = open_database(path, read_only=True)
    try:
        try:
            conn.execute("BEGIN")  # one consistent snapshot of the file
            parts = discover(conn, table_prefix, where)
            readers = [_PartitionReader(conn, t, where) for t in parts]
            total = sum(r.values_count() for r in readers)
        except apsw.Error as exc:
            raise StorageError(f"reading {where} failed: {exc}") from exc
        ctx = _Context(store, opts, skip_checksum, progress, total)
        ctx.on_conflict = on_conflict
        ctx.diff = diff
        report = ImportReport(where, table_prefix, dry_run)
        report.partitions = [_partition_entry(r.tables) for r in readers]
        if dry_run:
            return _run_dry(ctx, readers, report)
        if per_partition:
            return _run_per_partition(ctx, readers, report)
        if on_conflict != "error":
            with store.transaction():
                for reader, entry in zip(readers, report.partitions, strict=True):
                    result, ids = _import_partition(ctx, reader, write=True)
                    entry["status"] = "committed"
                    _fill_entry(entry, result, ids)
            ctx.finish()
            return report
        ctx.report = False
        ids: list[int] = []
        with store.transaction():
            for reader in readers:
                ids.extend(_import_partition(ctx, reader, write=True)[1])
        ctx.finish()
        return ids
    finally:
        with contextlib.suppress(apsw.Error):
            conn.close()


def _partition_entry(t: _Tables) -> dict[str, Any]:
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


def _fill_entry(entry: dict[str, Any], result: _PartitionResult, ids: list[int]) -> None:
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
    ctx: _Context, readers: list[_PartitionReader], report: ImportReport
) -> ImportReport:
    for reader, entry in zip(readers, report.partitions, strict=True):
        try:
            with ctx.store.transaction():
                result, ids = _import_partition(ctx, reader, write=True)
        except TimeSeriesError as exc:
            entry["status"] = "failed"
            entry["error"] = str(exc)
            exc.report = report  # type: ignore[attr-defined]
            raise
        entry["status"] = "committed"
        _fill_entry(entry, result, ids)
    ctx.finish()
    return report


def _run_dry(ctx: _Context, readers: list[_PartitionReader], report: ImportReport) -> ImportReport:
    first: TimeSeriesError | None = None
    for reader, entry in zip(readers, report.partitions, strict=True):
        try:
            result, _ = _import_partition(ctx, reader, write=False)
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


# ------------------------------------------------------------------------------ options
@dataclass(slots=True)
class _Options:
    overrides: dict[str, Any] = field(default_factory=dict)
    element_type: ElementType | None = None
    element_shape: tuple[int, ...] | None = None
    resolution: Period | None = None
    type: TimeSeriesType | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> _Options:
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
                flag = "--" + key.replace("_", "-")
                raise InvalidParameterError(
                    f"{flag} cannot be used with --sqlite: {REFUSED_KEYS[key]}"
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


# ------------------------------------------------------------------------------ database
@dataclass(slots=True)
class _Tables:
    """One partition's three tables, with the names SQLite holds them under."""

    base: str
    type: TimeSeriesType
    values: str
    series: str
    arrays: str


def discover(
    conn: apsw.Connection, prefix: str, where: str, *, allow_derived: bool = False
) -> list[_Tables]:
    """The partitions under ``prefix``, in binary order of their values table.

    Raises
    ------
    InvalidParameterError
        No partition at all; a values table without its series or arrays table; any
        DeterministicSingleTimeSeries partition (the whole prefix is refused).
    """
    tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    lower = {n.lower(): n for n in tables}
    found: list[_Tables] = []
    for name in sorted(tables, key=lambda n: n.encode()):
        tst = type_of_table(name, prefix, "_values")
        if tst is None:
            continue
        base = name[len(prefix) : -len("_values")]
        siblings = []
        for suffix in ("_series", "_arrays"):
            sibling = lower.get(f"{prefix}{base}{suffix}".lower())
            if sibling is None:
                raise InvalidParameterError(
                    f"{where} holds {name} but no {prefix}{base}{suffix} beside it; {_TEXT_HINT}",
                    table=name,
                )
            siblings.append(sibling)
        found.append(_Tables(base, tst, name, siblings[0], siblings[1]))
    if not allow_derived and any(
        t.type is TimeSeriesType.DeterministicSingleTimeSeries for t in found
    ):
        raise InvalidParameterError(
            "a DeterministicSingleTimeSeries is derived from a stored SingleTimeSeries rather "
            "than added; import the SingleTimeSeries and run {transform}",
            terms={"transform": TRANSFORM},
            table=next(
                t.values for t in found if t.type is TimeSeriesType.DeterministicSingleTimeSeries
            ),
        )
    if not found:
        if prefix:
            raise InvalidParameterError(
                f'{where} holds no exported partitions under the table prefix "{prefix}"'
            )
        raise InvalidParameterError(
            f"{where} holds no exported partitions without a table prefix (pass the prefix "
            "the export used)"
        )
    return found


# ------------------------------------------------------------------------------ helpers
def _fmt_ms(ms: int) -> str:
    """``2024-01-01 00:00:00 UTC`` (``.001`` when the milliseconds are not zero)."""
    try:
        return ms_to_axis_instant(int(ms))[:-1].replace("T", " ") + " UTC"
    except (InvalidParameterError, OverflowError, ValueError):
        return f"{int(ms)} ms since the epoch"


def _key_text(key: tuple[str, str]) -> str:
    return f"({key[0][:12]}, {key[1]})"


def _column(conn: apsw.Connection, sql: str, params: Any = ()) -> list:
    """One column of a query as a list, fetched as one object (``Cursor.get``).

    ``get`` gives a lone value for a single row and None both for no rows and for a
    single NULL, so a None is asked again, row by row.
    """
    result = conn.execute(sql, params).get
    if type(result) is list:
        return result
    if result is None:
        return [r[0] for r in conn.execute(sql, params).fetchall()]
    return [result]


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


# ------------------------------------------------------------------------------ series rows
@dataclass(slots=True)
class _Spec:
    """One validated series row (overrides applied)."""

    file_id: int
    key: tuple[str, str]
    label: str
    owner_id: int
    owner_type: str
    category: OwnerCategory
    name: str
    features: dict[str, Any]
    et: ElementType
    tr: str | None
    descriptors: dict[str, str | None]
    res: Period | None = None
    itv: Period | None = None
    hor: Period | None = None
    steps: int | None = None
    # Equal for equal ``(res, itv, hor)`` among the rows of one partition (a small int,
    # cheaper to hash than the periods); only compared within one partition.
    grid_key: Any = None


@dataclass(slots=True)
class _Built:
    """One group re-encoded into a store array for one grid."""

    data: np.ndarray
    hash_hex: str
    initial_ms: int | None = None
    timestamps: np.ndarray | None = None
    count: int | None = None
    percentiles: list[float] | None = None


@dataclass(slots=True)
class _Group:
    """One array's rows, decoded. Coordinates are int64/float64 vectors in row order."""

    key: tuple[str, str]
    ids: list[int]
    n: int
    values: np.ndarray  # [n, *E]
    timestamp: np.ndarray | None = None
    issue: np.ndarray | None = None
    lane: np.ndarray | None = None
    # Set by the fast path: the rows are exactly this grid, in table order.
    affine: tuple | None = None
    rowids: Callable[[], list[int]] | None = None


@dataclass(slots=True)
class _PartitionResult:
    series: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    arrays: int = 0
    rows: int = 0


class _Context:
    """What one import carries across partitions."""

    def __init__(
        self,
        store: Store,
        opts: _Options,
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


# ------------------------------------------------------------------------------ reader
class _PartitionReader:
    """Reads one partition: its arrays and series tables whole, its values group by group."""

    def __init__(self, conn: apsw.Connection, tables: _Tables, where: str) -> None:
        self.conn = conn
        self.tables = tables
        self.where = where
        self.type = tables.type
        self.V = q(tables.values)
        self.S = q(tables.series)
        self.A = q(tables.arrays)
        self._count: int | None = None
        self._checked = False
        self._has_rowid = True
        self._mode = "range"  # or "index": how a group's rows are found
        self._temp: str | None = None  # temp table standing in for a missing index
        self._features: dict[str, dict[str, Any]] = {}
        self._periods: dict[tuple[str, str], Period] = {}
        self._shared: dict[tuple, tuple] = {}  # the shared part of series rows, by its cells
        self._shared_cols: tuple[int, ...] | None = None
        self._grids: dict[tuple, int] = {}  # (res, itv, hor) -> grid_key
        self._col_index: tuple[list[str], dict[str, int]] | None = None
        self._label: str | None = None  # the series being read, for messages
        self._spans: dict[int, tuple[int, int] | None] = {}
        self._heads: dict[int, tuple[Any, Any]] = {}  # first row's (timestamp, issue_time)
        # True when the arrays' rowid spans do not overlap: every row inside a span is
        # then the array's own (check_claimed has refused rows of no array).
        self._tiled = False

    # -- structure ---------------------------------------------------------------------
    def values_count(self) -> int:
        if self._count is None:
            self._count = int(self.conn.execute(f"SELECT count(*) FROM {self.V}").get or 0)
        return self._count

    def _columns(self, table: str) -> set[str]:
        return {r[1] for r in self.conn.execute(f"PRAGMA table_info({q(table)})")}

    def check_columns(self) -> None:
        if self._checked:
            return
        t = self.tables
        tname = self.type.name
        need = {
            t.values: [
                "array_id",
                "timestamp",
                *(c for c, _ in values_key_columns(self.type)),
                "value",
            ],
            t.series: ["array_id", "id", *series_columns(self.type)],
            t.arrays: ["id", "data_hash", "time_axis"],
        }
        for table, cols in need.items():
            have = self._columns(table)
            missing = [c for c in cols if c not in have]
            if missing:
                kind = {t.values: "values", t.series: "series", t.arrays: "arrays"}[table]
                raise InvalidParameterError(
                    f"{table} is missing column(s) a {tname} {kind} table carries: "
                    f"{', '.join(missing)}",
                    table=table,
                )
        try:
            self.conn.execute(f"SELECT rowid FROM {self.V} LIMIT 0").fetchall()
        except apsw.SQLError:
            self._has_rowid = False
            self._mode = "index"
        self._checked = True

    def _has_index(self) -> bool:
        for row in self.conn.execute(f"PRAGMA index_list({self.V})"):
            info = self.conn.execute(f"PRAGMA index_info({q(row[1])})").fetchall()
            if info and info[0][2] == "array_id" and not row[4]:  # not a partial index
                return True
        return False

    def prepare_lookup(self) -> None:
        """Make sure a group's rows can be found without scanning the table."""
        if self._has_index() or not self._has_rowid:
            return
        # No index on array_id (dropped, or a rebuilt table): build one in TEMP, which
        # a read-only connection may still write.
        name = f"imp_rows_{abs(hash(self.tables.values)) % 10**8}"
        self.conn.execute(
            f"DROP TABLE IF EXISTS temp.{name}; "
            f"CREATE TEMP TABLE {name} (a INTEGER, r INTEGER); "
            f"INSERT INTO temp.{name} SELECT array_id, rowid FROM {self.V}; "
            f"CREATE INDEX temp.{name}_a ON {name} (a, r)"
        )
        self._temp = name

    def drop_lookup(self) -> None:
        if self._temp is not None:
            with contextlib.suppress(apsw.Error):
                self.conn.execute(f"DROP TABLE IF EXISTS temp.{self._temp}")
            self._temp = None

    # -- arrays ------------------------------------------------------------------------
    def read_arrays(self) -> dict[int, tuple[str, str]]:
        """``id -> (data_hash, time_axis)``; every cell checked."""
        out: dict[int, tuple[str, str]] = {}
        table = self.tables.arrays
        for n, (aid, h, axis) in enumerate(
            self.conn.execute(f"SELECT id, data_hash, time_axis FROM {self.A}"), start=1
        ):
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
            if type(h) is not str or type(axis) is not str:
                col = "data_hash" if type(h) is not str else "time_axis"
                raise InvalidParameterError(
                    f"{table} row {n} (id {aid}) holds a {type(h if col == 'data_hash' else axis).__name__} "
                    f"in `{col}`, which is text in the layout",
                    table=table,
                )
            if aid in out and out[aid] != (h, axis):
                raise InvalidParameterError(
                    f"{table} holds id {aid} twice with different keys; {_TEXT_HINT}", table=table
                )
            out[aid] = (h, axis)
        return out

    # -- series ------------------------------------------------------------------------
    def read_series(self, arrays: dict[int, tuple[str, str]], opts: _Options) -> list[_Spec]:
        """Every series row, validated, overrides applied, in ``(key, id)`` order."""
        tst = self.type
        table = self.tables.series
        cols = ["array_id", "id", *series_columns(tst)]
        sql = f"SELECT {', '.join(cols)} FROM {self.S}"
        specs: list[_Spec] = []
        element_types: set[str] = set()
        tst_at = cols.index("time_series_type")
        # Rows repeat a handful of cell-type patterns; a pattern checked once is known good.
        good_types: set[tuple] = set()
        for n, raw in enumerate(self.conn.execute(sql), start=1):
            types = tuple(map(type, raw))
            if types not in good_types:
                self._check_cells(n, dict(zip(cols, raw, strict=True)), cols)
                good_types.add(types)
            if raw[tst_at] != tst.name:
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
            spec = self._spec(raw, cols, arrays, opts)
            specs.append(spec)
            element_types.add(str(spec.et))
        if len(element_types) > 1:
            raise InvalidParameterError(
                f"{table} mixes time-series or element types; a partition holds one of each "
                f"(element types {', '.join(sorted(element_types))})",
                table=table,
            )
        specs.sort(key=lambda s: (s.key, s.file_id))
        return specs

    def _check_cells(self, n: int, r: dict[str, Any], cols: list[str]) -> None:
        """NULLs and cell types of one series row."""
        table = self.tables.series
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
        opts: _Options,
    ) -> _Spec:
        table = self.tables.series
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
                f"a series row names `array_id` {aid}, which the arrays table does "
                f"not hold; {_TEXT_HINT} ({table} id {fid})",
                table=table,
            )
        label = f"'{row_name}' (owner {owner_id}, id {fid} in {table})"
        name = ov.get("name", row_name)
        if not name:
            raise InvalidParameterError(
                f"the file records no series name and none was given ({table} id {fid}); "
                "pass --name"
            )
        owner_type = ov.get("owner_type", row_owner_type)
        if not owner_type:
            raise InvalidParameterError(
                f"series {label} has no owner_type: an export carries one, a foreign file does "
                "not, so pass --owner-type"
            )
        # Everything else a row says is shared by many rows: worked out (and checked) once
        # per distinct combination, the first row that has it naming it in any message.
        shared_key = tuple(raw[i] for i in self._shared_at(at))
        shared = self._shared.get(shared_key)
        if shared is None:
            shared = self._shared_part(dict(zip(cols, raw, strict=True)), f"series {label}", opts)
            self._shared[shared_key] = shared
        category, et, tr, descriptors, features, res, itv, hor, steps, grid = shared
        return _Spec(
            file_id=fid,
            key=key,
            label=label,
            owner_id=ov.get("owner_id", owner_id),
            owner_type=owner_type,
            category=category,
            name=name,
            features=features,
            et=et,
            tr=tr,
            descriptors=descriptors,
            res=res,
            itv=itv,
            hor=hor,
            steps=steps,
            grid_key=grid,
        )

    def _shared_at(self, at: dict[str, int]) -> tuple[int, ...]:
        if self._shared_cols is None:
            names = ["owner_category", "element_type", "time_reference", *DESCRIPTORS, "features"]
            names += [c for c in ("resolution", "interval", "horizon") if c in at]
            self._shared_cols = tuple(at[c] for c in names)
        return self._shared_cols

    def _shared_part(self, r: dict[str, Any], what: str, opts: _Options) -> tuple:
        tst = self.type
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
        return (category, et, tr, descriptors, features, res, itv, hor, steps, grid)

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

    # -- values ------------------------------------------------------------------------
    def check_claimed(self, arrays: Mapping[int, Any]) -> None:
        """Refuse a values row whose array_id is NULL or not in the arrays table.

        The distinct ids are walked through the index (one seek each), so this costs a
        few lookups per array rather than a pass over the values.
        """
        if self._temp is not None:
            table, col = f"temp.{self._temp}", "a"
        elif self._has_index():
            table, col = self.V, "array_id"
        else:
            self._check_stray_scan()
            return
        if self.conn.execute(f"SELECT 1 FROM {table} WHERE {col} IS NULL LIMIT 1").get:
            self._raise_stray(None)
        # The distinct ids in order, one index seek each, walked inside SQLite; the first
        # that is not an integer id of the arrays table (if any) comes back.
        rows = self.conn.execute(
            f"WITH RECURSIVE d(x) AS (SELECT min({col}) FROM {table} UNION ALL "
            f"SELECT (SELECT min({col}) FROM {table} WHERE {col} > d.x) FROM d "
            "WHERE d.x IS NOT NULL) "
            "SELECT x FROM d WHERE x IS NOT NULL AND (typeof(x) <> 'integer' OR "
            f"x NOT IN (SELECT id FROM {self.A} WHERE typeof(id) = 'integer')) LIMIT 1"
        ).fetchall()
        for (aid,) in rows:
            if type(aid) is not int or aid not in arrays:
                self._raise_stray(aid)
            raise AssertionError(f"array_id {aid!r} is claimed")  # pragma: no cover

    def _check_stray_scan(self) -> None:
        row = self.conn.execute(
            f"SELECT array_id FROM {self.V} WHERE array_id IS NULL OR array_id NOT IN "
            f"(SELECT id FROM {self.A}) LIMIT 1"
        ).fetchone()
        if row is not None:
            self._raise_stray(row[0])

    def _raise_stray(self, aid: Any) -> None:
        values = self.tables.values
        rowid = None
        if self._has_rowid:
            cond = "array_id IS NULL" if aid is None else "array_id = ?"
            rowid = self.conn.execute(
                f"SELECT rowid FROM {self.V} WHERE {cond} LIMIT 1", () if aid is None else (aid,)
            ).get
        where = f"{values} rowid {rowid}" if rowid is not None else values
        if aid is None:
            raise InvalidParameterError(
                f"{where} has NULL in `array_id`; the layout holds NULL only in `value` (NaN)",
                table=values,
            )
        raise InvalidParameterError(
            f"a values row names `array_id` {aid!r}, which the arrays table does not hold; "
            f"{_TEXT_HINT} ({where})",
            table=values,
        )

    def find_spans(self, ids: Sequence[int]) -> None:
        """The rowid span of every array (two index seeks each, all in one query), and
        whether they tile."""
        if self._mode != "range":
            return
        if self._temp is not None:
            table, col, rid = f"temp.{self._temp}", "a", "r"
        else:
            table, col, rid = self.V, "array_id", "rowid"
        # One statement for every array: each correlated min/max is a single index seek,
        # and the coordinates of the first row (which the fast path anchors on) one more.
        issue = "s.issue_time" if self.type.is_forecast else "NULL"
        found: dict[int, tuple[int, int]] = {}
        heads: dict[int, tuple[Any, Any]] = {}
        for aid, lo, hi, t0, i0 in self.conn.execute(
            f"SELECT x.id, x.lo, x.hi, s.timestamp, {issue} FROM (SELECT id, "
            f"(SELECT min({rid}) FROM {table} WHERE {col} = a.id) AS lo, "
            f"(SELECT max({rid}) FROM {table} WHERE {col} = a.id) AS hi FROM {self.A} AS a) "
            f"AS x LEFT JOIN {self.V} AS s ON s.rowid = x.lo"
        ):
            found[aid] = (lo, hi)
            if lo is not None:
                heads[aid] = (t0, i0)
        self._heads = heads
        self._spans = {}
        for aid in ids:
            span = found.get(aid)
            if span is None:
                self._spans[aid] = self._span(aid)
            else:
                self._spans[aid] = None if span[0] is None else span
        spans = sorted(sp for sp in self._spans.values() if sp is not None)
        self._tiled = all(a[1] < b[0] for a, b in itertools.pairwise(spans))

    def _span(self, aid: int) -> tuple[int, int] | None:
        if self._temp is not None:
            lo = self.conn.execute(f"SELECT min(r) FROM temp.{self._temp} WHERE a = ?", (aid,)).get
            if lo is None:
                return None
            hi = self.conn.execute(f"SELECT max(r) FROM temp.{self._temp} WHERE a = ?", (aid,)).get
            return lo, hi
        lo = self.conn.execute(f"SELECT min(rowid) FROM {self.V} WHERE array_id = ?", (aid,)).get
        if lo is None:
            return None
        hi = self.conn.execute(f"SELECT max(rowid) FROM {self.V} WHERE array_id = ?", (aid,)).get
        return lo, hi

    def _head(self, aid: int, lo: int) -> tuple[Any, Any]:
        """``(timestamp, issue_time)`` of the row ``lo`` (the first of the array ``aid``);
        ``issue_time`` is None in a table without one."""
        head = self._heads.get(aid)
        if head is not None:
            return head
        issue = "issue_time" if self.type.is_forecast else "NULL"
        rows = self.conn.execute(
            f"SELECT timestamp, {issue} FROM {self.V} WHERE rowid = ?", (lo,)
        ).fetchall()
        return rows[0] if len(rows) == 1 else (None, None)

    def _where(self, aid: int, span: tuple[int, int] | None) -> tuple[str, tuple]:
        """A WHERE clause selecting one array's rows, and its parameters."""
        if self._mode == "range" and span is not None:
            return "rowid BETWEEN ? AND ? AND +array_id = ?", (span[0], span[1], aid)
        if self._temp is not None:
            return f"rowid IN (SELECT r FROM temp.{self._temp} WHERE a = ?)", (aid,)
        return "array_id = ?", (aid,)

    def _get(self, column: str, where: str, params: tuple) -> list:
        return _column(self.conn, f"SELECT {column} FROM {self.V} WHERE {where}", params)

    def read_group(
        self,
        key: tuple[str, str],
        ids: list[int],
        spec: _Spec | None,
        dtype: str,
    ) -> _Group | None:
        """The rows of the array ``key`` (spread over ``ids``), or None when it has none."""
        self._label = spec.label if spec is not None else None
        spans: list[tuple[int, tuple[int, int] | None]] = []
        for aid in ids:
            span = None
            if self._mode == "range":
                span = self._spans[aid] if aid in self._spans else self._span(aid)
                if span is None:
                    continue  # no rows
            spans.append((aid, span))
        if not spans:
            return None
        if len(spans) == 1 and spec is not None and spans[0][1] is not None:
            group = self._fast(key, spans[0][0], spans[0][1], spec, dtype)
            if group is not None:
                return group
        return self._general(key, spans, dtype)

    # The fused fast path: the rows of one contiguous rowid span, checked inside SQLite
    # against the grid the series row declares; a row that breaks the pattern comes back
    # as a blob, which no valid value cell is, and sends the group to the general path.
    def _fast(
        self, key: tuple[str, str], aid: int, span: tuple[int, int], spec: _Spec, dtype: str
    ) -> _Group | None:
        tst = self.type
        lo, hi = span
        n = hi - lo + 1
        if tst is TimeSeriesType.SingleTimeSeries:
            assert spec.res is not None
            if spec.res.calendar:
                return None
            first = self._head(aid, lo)[0]
            if type(first) is not int:
                return None
            cond = "timestamp IS (?1 + (rowid - ?2) * ?3)"
            params: tuple = (first, lo, spec.res.ms, hi, aid)
            affine: tuple = ("sts", first, spec.res.ms)
        elif tst is TimeSeriesType.Deterministic:
            assert spec.res is not None and spec.itv is not None and spec.steps is not None
            if spec.res.calendar or spec.itv.calendar:
                return None
            steps = spec.steps
            if n % steps or (not spec.itv.is_positive and n != steps):
                return None
            first = self._head(aid, lo)[1]
            if type(first) is not int:
                return None
            issue = "(?1 + ((rowid - ?2) / ?6) * ?3)"
            # The step as an offset from the (verified) issue time: fewer operations per
            # row. An overflowing difference turns REAL and far off, so it never matches.
            cond = f"issue_time IS {issue} AND timestamp - issue_time IS ((rowid - ?2) % ?6) * ?7"
            params = (first, lo, spec.itv.ms, hi, aid, steps, spec.res.ms)
            affine = ("det", first, spec.itv.ms, spec.res.ms, steps, n // steps)
        elif tst in (TimeSeriesType.Probabilistic, TimeSeriesType.Scenarios):
            found = self._fast_lanes(lo, hi, aid, spec)
            if found is None:
                return None
            cond, params, affine = found
        elif tst.is_irregular:
            return self._fast_irregular(key, aid, lo, hi, dtype)
        else:
            return None
        if not self._tiled:
            cond = f"array_id = ?5 AND {cond}"
        cells = _column(
            self.conn,
            f"SELECT CASE WHEN {cond} THEN value ELSE x'00' END "
            f"FROM {self.V} WHERE rowid BETWEEN ?2 AND ?4",
            # ?5 (array_id) is a parameter only when the query still uses it, or when a
            # later one (?6, ?7) makes SQLite count it anyway.
            params if len(params) > 5 or not self._tiled else params[:4],
        )
        if len(cells) != n:
            return None  # a gap in the span: rows of the array are interleaved with others
        try:
            values = _decode(cells, dtype, fused=True)
        except InvalidParameterError:
            return None  # the general path reads the group again and names the row
        if values is None:
            return None
        return _Group(key, [aid], n, values, affine=affine, rowids=lambda: list(range(lo, hi + 1)))

    def _fast_lanes(
        self, lo: int, hi: int, aid: int, spec: _Spec
    ) -> tuple[str, tuple, tuple] | None:
        """The fused check of a Probabilistic or Scenarios group written window by window,
        step by step, lane by lane (what every export writes), or None to read it whole.

        The lanes are the rows of the first (window, step); a percentile lane must be a
        finite, non-zero float, and the lanes strictly increasing, so that they are the
        sorted distinct percentiles the general path would find and compare bit for bit.
        """
        assert spec.res is not None and spec.itv is not None and spec.steps is not None
        if spec.res.calendar or spec.itv.calendar:
            return None
        n = hi - lo + 1
        steps = spec.steps
        t0, first = self._head(aid, lo)
        if type(t0) is not int or type(first) is not int:
            return None
        nxt = self.conn.execute(
            f"SELECT rowid FROM {self.V} WHERE rowid > ?1 AND rowid <= ?2 AND "
            "(timestamp IS NOT ?3 OR issue_time IS NOT ?4) ORDER BY rowid LIMIT 1",
            (lo, hi, t0, first),
        ).get
        lanes = n if nxt is None else nxt - lo
        if lanes < 1 or lanes > 512:
            return None
        block = steps * lanes
        if n % block or (not spec.itv.is_positive and n != block):
            return None
        count = n // block
        # i = rowid - ?2: window i / block, step i % block / lanes, lane i % lanes (the
        # fewest operators per row; each one costs on every row of the group).
        issue = f"(?1 + ((rowid - ?2) / {block}) * ?3)" if count > 1 else "?1"
        offset = f"((rowid - ?2) % {block} / {lanes}) * ?6"
        params: list[Any] = [first, lo, spec.itv.ms, hi, aid, spec.res.ms]
        if self.type is TimeSeriesType.Scenarios:
            lane_cond = f"scenario IS ((rowid - ?2) % {lanes})"
            lane_values = np.arange(lanes, dtype=np.int64)
        else:
            pct = _column(
                self.conn,
                f"SELECT percentile FROM {self.V} WHERE rowid BETWEEN ? AND ?",
                (lo, lo + lanes - 1),
            )
            if len(pct) != lanes or any(
                type(p) is not float or not math.isfinite(p) or p == 0.0 for p in pct
            ):
                return None
            if any(a >= b for a, b in itertools.pairwise(pct)):
                return None
            whens = []
            for i, p in enumerate(pct):
                params.append(p)
                whens.append(f"WHEN {i} THEN ?{len(params)}")
            lane_cond = f"percentile IS (CASE (rowid - ?2) % {lanes} {' '.join(whens)} END)"
            lane_values = np.array(pct, dtype=np.float64)
        cond = f"issue_time IS {issue} AND timestamp - issue_time IS {offset} AND {lane_cond}"
        affine = ("lanes", first, spec.itv.ms, spec.res.ms, steps, count, lanes, lane_values)
        return cond, tuple(params), affine

    def _fast_irregular(
        self, key: tuple[str, str], aid: int, lo: int, hi: int, dtype: str
    ) -> _Group | None:
        """A NonSequential group's contiguous span: integer timestamps and the values."""
        n = hi - lo + 1
        own = "" if self._tiled else " AND array_id = ?3"
        params = (lo, hi) if self._tiled else (lo, hi, aid)
        cells = _column(
            self.conn,
            "SELECT CASE WHEN typeof(timestamp) = 'integer'"
            f"{own} THEN value ELSE x'00' END FROM {self.V} WHERE rowid BETWEEN ?1 AND ?2",
            params,
        )
        if len(cells) != n:
            return None
        try:
            values = _decode(cells, dtype, fused=True)
        except InvalidParameterError:
            return None
        if values is None:
            return None
        ts = _column(
            self.conn, f"SELECT timestamp FROM {self.V} WHERE rowid BETWEEN ? AND ?", (lo, hi)
        )
        if len(ts) != n:  # pragma: no cover - one snapshot
            return None
        group = _Group(key, [aid], n, values, rowids=lambda: list(range(lo, hi + 1)))
        group.timestamp = np.fromiter(ts, dtype=np.int64, count=n)
        return group

    def _general(
        self, key: tuple[str, str], spans: list[tuple[int, tuple[int, int] | None]], dtype: str
    ) -> _Group | None:
        tst = self.type
        columns = ["timestamp", *(c for c, _ in values_key_columns(tst))]
        got: dict[str, list] = {c: [] for c in [*columns, "value"]}
        wheres = []
        for aid, span in spans:
            where, params = self._where(aid, span)
            first = self._get("value", where, params)
            if span is not None and 2 * len(first) < span[1] - span[0] + 1:
                # A sparse span: this partition's arrays are interleaved, so from the next
                # group on the index finds their rows faster than a range scan would.
                self._mode = "index"
            wheres.append((where, params))
            got["value"].extend(first)
            for c in columns:
                got[c].extend(self._get(c, where, params))
        n = len(got["value"])
        if n == 0:
            return None

        def rowids() -> list[int]:
            if not self._has_rowid:
                return list(range(1, n + 1))
            out: list[int] = []
            for where, params in wheres:
                out.extend(self._get("rowid", where, params))
            return out

        group = _Group(key, [a for a, _ in spans], n, np.empty(0), rowids=rowids)
        try:
            group.values = _decode(got["value"], dtype)
        except InvalidParameterError as exc:
            i = _bad_cell(got["value"], dtype)
            raise InvalidParameterError(
                f"{self._row_text(key, rowids(), i, series=True)}: {exc.message}",
                table=self.tables.values,
            ) from None
        group.timestamp = self._ints(got["timestamp"], "timestamp", key, rowids, ms=True)
        if tst.is_forecast:
            group.issue = self._ints(got["issue_time"], "issue_time", key, rowids, ms=True)
        if tst is TimeSeriesType.Probabilistic:
            group.lane = self._floats(got["percentile"], "percentile", key, rowids)
        elif tst is TimeSeriesType.Scenarios:
            group.lane = self._ints(got["scenario"], "scenario", key, rowids, ms=False)
        return group

    def _row_text(
        self, key: tuple[str, str], rowids: list[int], i: int | None, *, series: bool = False
    ) -> str:
        where = f"array {_key_text(key)} in {self.tables.values}"
        if series and self._label is not None:
            where = f"series {self._label}, {where}"
        if i is None or i >= len(rowids):
            return where
        return f"{where}, rowid {rowids[i]}" if self._has_rowid else f"{where}, row {i + 1}"

    def _null(
        self, col: str, key: tuple[str, str], rowids: Callable, i: int
    ) -> InvalidParameterError:
        return InvalidParameterError(
            f"{self._row_text(key, rowids(), i, series=True)}: `{col}` is NULL; the layout holds NULL only "
            "in `value` (NaN)",
            table=self.tables.values,
        )

    def _ints(
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
                raise self._null(col, key, rowids, i)
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
                f"{self._row_text(key, rowids(), i, series=True)}: `{col}` holds {what}",
                table=self.tables.values,
            )
        return out

    def _floats(self, cells: list, col: str, key: tuple[str, str], rowids: Callable) -> np.ndarray:
        types = set(map(type, cells))
        if types <= {float, int}:
            return np.fromiter(cells, dtype=np.float64, count=len(cells))
        for i, v in enumerate(cells):
            if v is None:
                raise self._null(col, key, rowids, i)
            if type(v) not in (float, int):
                raise InvalidParameterError(
                    f"{self._row_text(key, rowids(), i, series=True)}: `{col}` holds {v!r:.40}, not a number",
                    table=self.tables.values,
                )
        raise AssertionError("unreachable")  # pragma: no cover


# ------------------------------------------------------------------------------ decoding
_FLOAT_CELLS = frozenset({float, type(None)})


def _floats_only(cells: list) -> np.ndarray | None:
    """``cells`` as float64 when every one is a float (no NULL, text or blob), else None.

    numpy's own type inference is the cheapest check there is: it gives float64 only
    for a list of floats (and ints, which a REAL column never returns); a None makes it
    an object array, a string or a blob a string array.
    """
    arr = np.array(cells)
    if arr.dtype == np.float64 and arr.ndim == 1:
        return arr
    return None


def _decode(cells: list, dtype: str, *, fused: bool = False) -> np.ndarray | None:
    """Decode one group's value cells.

    With ``fused`` the cells come from the query that checks the grid as it reads: a
    row that failed the check comes back as a blob sentinel, and the answer is None.
    """
    if dtype == "f64":
        arr = _floats_only(cells)
        if arr is not None:
            return arr
    types = set(map(type, cells))
    if dtype == "f64" and types <= _FLOAT_CELLS:
        return np.fromiter(cells, dtype=np.float64, count=len(cells))
    if fused and bytes in types:
        return None
    return decode_cells(cells, dtype)


def _bad_cell(cells: list, dtype: str) -> int | None:
    """The index of the first cell that cannot be decoded, or that differs in shape."""
    first_shape = None
    for i, cell in enumerate(cells):
        try:
            arr = decode_cells([cell], dtype)
        except InvalidParameterError:
            return i
        if first_shape is None:
            first_shape = arr.shape[1:]
        elif arr.shape[1:] != first_shape:
            return i
    return None


# ------------------------------------------------------------------------------ building
def _check_elements(
    reader: _PartitionReader, group: _Group, et: ElementType, spec: _Spec, opts: _Options
) -> np.ndarray:
    """The group's values checked against the element type (composites shrunk later)."""
    values = group.values
    shape = tuple(values.shape[1:])
    try:
        check_element_shape(et, shape, et.dtype)
    except InvalidParameterError as exc:
        raise InvalidParameterError(
            f"series {spec.label}, {reader._row_text(group.key, [], None)}: {exc}",
            table=reader.tables.values,
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
                f"series {spec.label}, {reader._row_text(group.key, group.rowids(), bad)}: {exc}",
                table=reader.tables.values,
            ) from None
    if opts.element_shape is not None and opts.element_shape != shape:
        raise InvalidParameterError(
            f"series {spec.label} has element_shape {list(shape)}, but "
            f"{list(opts.element_shape)} was asserted"
        )
    return values


def _build(reader: _PartitionReader, group: _Group, spec: _Spec, et: ElementType) -> _Built:
    """Re-encode a group into the store array the grid of ``spec`` makes of it."""
    tst = reader.type
    values = group.values
    if group.affine is not None and _affine_fits(group.affine, spec):
        kind = group.affine[0]
        if kind == "sts":
            data = values
            return _Built(np.ascontiguousarray(data), "", initial_ms=group.affine[1])
        if kind == "lanes":
            _, first, _itv, _res, steps, count, lanes, lane_values = group.affine
            e = values.shape[1:]
            data = values.reshape(count, steps, lanes, *e).transpose(2, 1, 0, *range(3, 3 + len(e)))
            if tst is TimeSeriesType.Scenarios:
                return _Built(np.ascontiguousarray(data), "", initial_ms=first, count=count)
            percentiles = [float(p) for p in lane_values]
            return _Built(
                np.ascontiguousarray(data),
                "",
                initial_ms=first,
                count=count,
                percentiles=percentiles,
            )
        _, first, _itv, _res, steps, count = group.affine
        data = values.reshape(count, steps, *values.shape[1:]).swapaxes(0, 1)
        return _Built(np.ascontiguousarray(data), "", initial_ms=first, count=count)
    _materialize(group)
    assert group.timestamp is not None
    if tst is TimeSeriesType.SingleTimeSeries:
        return _build_static(reader, group, spec)
    if tst.is_irregular:
        return _build_irregular(reader, group, spec)
    return _build_forecast(reader, group, spec)


def _affine_fits(affine: tuple, spec: _Spec) -> bool:
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


def _materialize(group: _Group) -> None:
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


def _grid_error(spec: _Spec, anchor: int, detail: str) -> InvalidParameterError:
    return InvalidParameterError(
        f"series {spec.label} does not sit on a {spec.res} grid anchored at {_fmt_ms(anchor)}"
        f" ({detail})"
    )


def _build_static(reader: _PartitionReader, group: _Group, spec: _Spec) -> _Built:
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
            f"{reader._row_text(group.key, rowids(), i)} is at {_fmt_ms(int(ts[i]))}, between "
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
                f"{reader._row_text(group.key, rowids(), i)} repeats the step at "
                f"{_fmt_ms(int(ts[i]))}"
            )
        else:
            missing = int(step(anchor, res, j))
            detail = f"no row holds the step at {_fmt_ms(missing)}, step {j} of {n} rows"
        raise _grid_error(spec, anchor, detail)
    data = group.values if _is_identity(order) else group.values[order]
    return _Built(np.ascontiguousarray(data), "", initial_ms=anchor)


def _is_identity(order: np.ndarray) -> bool:
    return bool((np.diff(order) == 1).all()) if order.size > 1 else True


def _build_irregular(reader: _PartitionReader, group: _Group, spec: _Spec) -> _Built:
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
                f"{reader._row_text(group.key, rowids, b)} repeats {_fmt_ms(int(sts[j]))}"
                + (f" (as rowid {rowids[a]} does)" if reader._has_rowid and rowids else ""),
                table=reader.tables.values,
            )
    identity = _is_identity(order)
    data = group.values if identity else group.values[order]
    return _Built(np.ascontiguousarray(data), "", timestamps=np.ascontiguousarray(sts))


def _build_forecast(reader: _PartitionReader, group: _Group, spec: _Spec) -> _Built:
    tst = reader.type
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
            f"series {spec.label} has an issue time of {_fmt_ms(int(windows[k]))}, which is not "
            f"window {k} of a {itv} grid anchored at {_fmt_ms(anchor)} "
            f"({reader._row_text(group.key, rowids(), i)})"
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
            f"series {spec.label} has a target time of {_fmt_ms(int(ts[i]))}, which is not on "
            f"the {steps}-step grid starting at {_fmt_ms(int(it[i]))} "
            f"({reader._row_text(group.key, rowids(), i)})"
        )
    percentiles = None
    if tst is TimeSeriesType.Probabilistic:
        pct = group.lane
        assert pct is not None
        if not np.isfinite(pct).all():
            i = int(np.argmax(~np.isfinite(pct)))
            raise InvalidParameterError(
                f"series {spec.label} has a percentile of {float(pct[i])!r}, which is not finite "
                f"({reader._row_text(group.key, rowids(), i)})"
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
                f"({reader._row_text(group.key, rowids(), i)})"
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
        where = ", ".join(
            reader._row_text(group.key, rows, int(i)).split(", ")[-1] for i in dup[:2]
        )
        raise InvalidParameterError(
            f"series {spec.label} has two rows for window {w_i}, step {h_i}, lane {lane_i} "
            f"({where} of {reader.tables.values})"
        )
    values = group.values
    out = np.empty((cells, *values.shape[1:]), dtype=values.dtype)
    out[slot] = values
    lead = [steps, count] if tst.leading_dims == 2 else [lanes, steps, count]
    data = out.reshape(*lead, *values.shape[1:])
    return _Built(data, "", initial_ms=anchor, count=count, percentiles=percentiles)


def _finish(built: _Built, et: ElementType) -> _Built:
    """Canonical composite width and the content hash."""
    if et.is_ragged:
        built.data = np.ascontiguousarray(shrink(et, built.data))
    built.hash_hex = composite_data_hash(et, built.data).hex()
    return built


def build_group(
    reader: _PartitionReader, group: _Group, specs: Sequence[_Spec], opts: _Options
) -> dict[tuple, _Built]:
    """Every distinct grid among ``specs`` turned into its store array, hashed."""
    et = specs[0].et
    _check_elements(reader, group, et, specs[0], opts)
    out: dict[tuple, _Built] = {}
    for spec in specs:
        if spec.grid_key not in out:
            out[spec.grid_key] = _finish(_build(reader, group, spec, et), et)
    return out


# ------------------------------------------------------------------------------ series objects
def _series_object(tst: TimeSeriesType, spec: _Spec, built: _Built) -> Any:
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
def _import_partition(
    ctx: _Context, reader: _PartitionReader, *, write: bool
) -> tuple[_PartitionResult, list[int]]:
    try:
        return _read_partition(ctx, reader, write=write)
    except UnicodeDecodeError:
        # apsw decodes TEXT as UTF-8, and SQLite stores whatever bytes it was given.
        raise _invalid_text(reader) from None
    except apsw.Error as exc:
        # The interchange file failed under us (corrupt pages, an odd table definition).
        raise StorageError(
            f"reading {reader.tables.values} (and its series and arrays tables) from "
            f"{reader.where} failed: {exc}",
            table=reader.tables.values,
        ) from exc


def _invalid_text(reader: _PartitionReader) -> InvalidParameterError:
    """The first TEXT cell of a partition's tables that is not UTF-8, as a refusal naming
    its table, row and column (found by a scan that runs only after a decode failed)."""
    conn = reader.conn
    for table in (reader.tables.arrays, reader.tables.series, reader.tables.values):
        for col in [r[1] for r in conn.execute(f"PRAGMA table_info({q(table)})")]:
            sql = (
                f"SELECT rowid, CAST({q(col)} AS BLOB) FROM {q(table)} "
                f"WHERE typeof({q(col)}) = 'text'"
            )
            for rowid, raw in conn.execute(sql):
                try:
                    bytes(raw).decode("utf-8")
                except UnicodeDecodeError as exc:
                    bad = bytes(raw)[exc.start : exc.start + 1].hex()
                    return InvalidParameterError(
                        f"{table}, row with rowid {rowid}, column `{col}`: the text is not valid "
                        f"UTF-8 (byte {exc.start} is 0x{bad}); write that cell again as UTF-8 "
                        "text and import again. Nothing of this partition was added",
                        table=table,
                    )
    return InvalidParameterError(
        f"{reader.where} holds text that is not valid UTF-8 in the tables of "
        f"{reader.tables.values}; write it again as UTF-8 and import again",
        table=reader.tables.values,
    )


def _read_partition(
    ctx: _Context, reader: _PartitionReader, *, write: bool
) -> tuple[_PartitionResult, list[int]]:
    store = ctx.store
    tables = reader.tables
    tst = reader.type
    reader.check_columns()
    arrays = reader.read_arrays()
    specs = reader.read_series(arrays, ctx.opts)
    total_rows = reader.values_count()
    result = _PartitionResult()
    if not specs:
        if total_rows:
            raise InvalidParameterError(
                f"{tables.series} is empty but {tables.values} is not; {_TEXT_HINT}",
                table=tables.series,
            )
        return result, []
    by_key: dict[tuple[str, str], list[_Spec]] = {}
    for s in specs:
        by_key.setdefault(s.key, []).append(s)
    ids_by_key: dict[tuple[str, str], list[int]] = {}
    for aid, key in arrays.items():
        ids_by_key.setdefault(key, []).append(aid)
    dtype = specs[0].et.dtype
    pending: list[dict[str, Any]] = []
    pending_bytes = 0
    advanced = 0
    new_ids: list[int] = []
    try:
        reader.prepare_lookup()
        reader.check_claimed(arrays)
        reader.find_spans(list(arrays))
        for key in sorted(ids_by_key):
            group_specs = by_key.get(key, [])
            group = reader.read_group(
                key, sorted(ids_by_key[key]), group_specs[0] if group_specs else None, dtype
            )
            if group is None:
                if group_specs:
                    raise InvalidParameterError(
                        f"a series row names an array {_key_text(key)} the values file does not "
                        "hold; a partition's values and series come from one export and must "
                        f"describe the same arrays ({tables.series} id {group_specs[0].file_id})",
                        table=tables.series,
                        key=key,
                    )
                continue
            if not group_specs:
                raise InvalidParameterError(
                    f"the values file holds an array {_key_text(key)} that no series row names; "
                    "a partition's values and series come from one export and must describe "
                    f"the same arrays ({tables.values}, array_id {', '.join(map(str, group.ids))})",
                    table=tables.values,
                    key=key,
                )
            built = build_group(reader, group, group_specs, ctx.opts)
            if not ctx.skip_checksum:
                for spec in group_specs:
                    b = built[spec.grid_key]
                    if b.hash_hex != key[0]:
                        raise InvalidParameterError(
                            f"series {spec.label} does not match its recorded data_hash: the file "
                            f"says {key[0]} and its rows hash to {b.hash_hex} (array "
                            f"{_key_text(key)} in {tables.arrays}). Values edited in a query "
                            "engine need the hash recomputed: run {rehash} (or UPDATE the "
                            "arrays table), or pass {no_checksum} to waive the comparison.",
                            terms={"rehash": rehash_term(reader.where), "no_checksum": NO_CHECKSUM},
                            table=tables.arrays,
                            key=key,
                            series=spec.label,
                        )
            result.arrays += 1
            result.rows += group.n
            for spec in group_specs:
                b = built[spec.grid_key]
                obj = _series_object(tst, spec, b)
                # What Store._prepare checks of a bulk item holds here by construction
                # (the series row was validated, the object is built here), but the range.
                if not _I64_MIN <= spec.owner_id <= _I64_MAX:
                    raise InvalidParameterError(
                        f"owner_id {spec.owner_id} does not fit a signed 64-bit integer"
                    )
                prepared = store._row_for(
                    spec.owner_id,
                    spec.owner_type,
                    spec.category,
                    obj,
                    spec.features,
                    bytes.fromhex(b.hash_hex),
                )
                if ctx.report:
                    result.series.append(
                        {
                            "file_id": spec.file_id,
                            "owner_id": spec.owner_id,
                            "owner_type": spec.owner_type,
                            "owner_category": spec.category.name,
                            "name": spec.name,
                            "data_hash": b.hash_hex,
                            "time_axis": key[1],
                        }
                    )
                if write:
                    pending.append(prepared)
                    pending_bytes += b.data.nbytes
                else:
                    outcome, detail = _check_new(ctx, prepared)
                    result.outcomes.append(outcome)
                    if ctx.report and detail:
                        result.series[-1].update(detail)
            del group, built
            if write and (pending_bytes >= _BATCH_BYTES or len(pending) >= _BATCH_SERIES):
                new_ids.extend(_file(ctx, result, pending))
                pending, pending_bytes = [], 0
            ctx.advance(result.rows - advanced)
            advanced = result.rows
        if result.rows != total_rows:  # pragma: no cover - check_claimed refuses these first
            reader._check_stray_scan()
            raise InvalidParameterError(
                f"{tables.values} holds {total_rows} rows but its arrays claim {result.rows}; "
                f"{_TEXT_HINT}",
                table=tables.values,
            )
        if write and pending:
            new_ids.extend(_file(ctx, result, pending))
    finally:
        reader.drop_lookup()
    return result, new_ids


def _file(ctx: _Context, result: _PartitionResult, pending: list[dict[str, Any]]) -> list[int]:
    """File a batch under the import's ``on_conflict`` rule; the catalog ids, in order."""
    filed = file_items(ctx.store, pending, ctx.on_conflict, filed=ctx.filed)
    result.outcomes.extend(filed.outcomes)
    return filed.ids


def _check_new(ctx: _Context, prepared: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
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
