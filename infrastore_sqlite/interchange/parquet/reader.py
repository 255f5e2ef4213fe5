"""Import the Parquet form of the interchange layout back into a store: the Parquet reader.

A partition is three files, ``<stem>.values.parquet``, ``.series.parquet`` and
``.arrays.parquet`` (``shared/spec/parquet-layout.md`` §7). This module finds them, checks
their footers, and reads them for the import core (``interchange/importing.py``), which
checks, builds, hashes and files every series and words every row-level refusal.

The import is a merge join by ``array_id``: the arrays file is read whole (one row per
distinct array, ids and keys strictly ascending), the values file a row group at a time,
each group's columns turned into numpy once and cut at the ``array_id`` boundaries; an
array that spans row groups is stitched. Peak memory is the arrays and series rows plus
one row group (or one array, when it is longer than a group), never a partition.

What is Parquet's own is checked here, with the core's wording where the core has one:
footers (format, role, keys that agree across the three files), Arrow types (instants
that are timestamps of whole milliseconds, zone against the series row's reference, the
value column's leaf type and nesting, no nulls), and the order of the files (an array
reappearing after another's rows, ids out of order, ``array_id``\\ s the arrays file does
not hold).
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ...core.elements import NUMPY_DTYPES, dtype_name
from ...errors import InvalidParameterError, StorageError, Term, rehash_dir_term
from ...model import DESCRIPTORS, TimeSeriesType, _infer_resolution
from ..filing import OnConflict, check_on_conflict
from ..importing import (
    TEXT_HINT,
    Context,
    Group,
    ImportReport,
    Options,
    Place,
    Progress,
    Spec,
    check_columns_present,
    derived_refused,
    missing_sibling,
    run_import,
    stray_values_row,
)
from ..layout import values_key_columns
from .layout import (
    ELEMENT_SHAPE_KEY,
    ELEMENT_TYPE_KEY,
    FORMAT,
    FORMAT_KEY,
    REFERENCE_KEY,
    ROLE_KEY,
    ROLES,
    TYPE_KEY,
    require_pyarrow,
)

if TYPE_CHECKING:
    from ...store import Store

__all__ = ["Found", "discover", "import_parquet"]

_SUFFIXES = {role: f".{role}.parquet" for role in ROLES}

#: Footer keys that must agree across a partition's three files.
_AGREEING = (FORMAT_KEY, TYPE_KEY, ELEMENT_TYPE_KEY, ELEMENT_SHAPE_KEY, REFERENCE_KEY)

_SORT = "sort the file by array_id (then issue_time, timestamp) and import again"


# ------------------------------------------------------------------------------ entry point
def import_parquet(
    store: Store,
    path: str | os.PathLike[str],
    *,
    skip_checksum: bool = False,
    on_conflict: OnConflict = "error",
    overrides: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    per_partition: bool = False,
    diff: bool = False,
) -> list[int] | ImportReport:
    """Add every series of the Parquet files at ``path``.

    Parameters
    ----------
    store
        The store to add to.
    path
        A directory (every ``*.values/series/arrays.parquet`` directly inside, grouped
        by stem; other files are ignored and listed in a dry run's report), a file
        (``<stem>.values.parquet`` and its siblings; a ``.series``/``.arrays`` file names
        its partition) or a partition stem (``out/SingleTimeSeries.f64.utc``).
    skip_checksum
        Waive the comparison of each array with the arrays file's ``data_hash`` (after
        values were edited). The catalog always records the recomputed hash.
    on_conflict
        ``"error"``, ``"replace"`` or ``"ignore"``, as for ``import_sqlite``.
    overrides
        The inline flags, as for ``import_sqlite``: overrides (``owner_id``,
        ``owner_type``, ``owner_category``, ``name``, ``features``, ``time_reference``,
        the five descriptors) and assertions (``element_type``, ``element_shape``,
        ``resolution``, ``type``).
    dry_run
        Read and check everything, checksums included; write nothing and return an
        :class:`ImportReport`.
    progress
        Called as ``progress(done_rows, total_rows)`` while values are read.
    per_partition
        Commit one transaction per partition (the CLI) and return an
        :class:`ImportReport`; the exception of a failing partition carries the report
        as ``exc.report``.
    diff
        With ``dry_run``: each series entry also says what ``on_conflict="replace"``
        would change.

    Returns
    -------
    list of int or ImportReport
        The new ids in read order (partitions by stem, series by ``(key, id)`` within
        one); a report for ``dry_run``, ``per_partition`` or an ``on_conflict`` other
        than ``"error"``, which also lists the DeterministicSingleTimeSeries partitions
        set aside (``set_aside``) and the files of a directory it ignored (``ignored``).

    Raises
    ------
    MissingDependencyError
        pyarrow is not installed.
    InvalidParameterError
        Anything the files or the arguments get wrong; each message names the file, the
        partition and, where there is one, the array key or series. Nothing is added
        (per partition: nothing of the failing partition).
    DuplicateTimeSeriesError
        A series the store already holds, or two rows with one identity.
    """
    pa, pq = require_pyarrow()
    opts = Options.parse(overrides, flag="--parquet")
    check_on_conflict(on_conflict)
    if dry_run:
        store._open()
    else:
        store._writable()
    found = discover(path)
    readers = [
        _ForeignReader(pa, pq, p, found.where, opts)
        if p.foreign
        else _PartitionReader(pa, pq, p, found.where)
        for p in found.partitions
    ]
    total = sum(r.values_count() for r in readers)
    ctx = Context(store, opts, skip_checksum, progress, total)
    ctx.on_conflict = on_conflict
    ctx.diff = diff
    report = ImportReport(found.where, "", dry_run)
    report.set_aside = found.set_aside
    report.ignored = found.ignored
    return run_import(ctx, readers, report, dry_run=dry_run, per_partition=per_partition)


# ------------------------------------------------------------------------------ discovery
@dataclass(slots=True)
class Partition:
    """One partition's files and what their footers say. A foreign file (a values file
    alone) has ``type`` None until the inline flags and its metadata decide it."""

    stem: str
    files: dict[str, Path]
    type: TimeSeriesType | None
    footers: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def foreign(self) -> bool:
        return "series" not in self.files


@dataclass(slots=True)
class Found:
    """What a path holds: partitions to import, and what was left out."""

    where: str
    partitions: list[Partition]
    set_aside: list[dict[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def _role_of(name: str) -> tuple[str, str] | None:
    for role, suffix in _SUFFIXES.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], role
    return None


def discover(path: str | os.PathLike[str]) -> Found:
    """The partitions at ``path`` (a directory, a file or a stem), by stem.

    Raises
    ------
    InvalidParameterError
        Nothing there, a sibling missing, a named DeterministicSingleTimeSeries partition,
        a footer that says another format or disagrees with its siblings.
    """
    where = os.fspath(path)
    p = Path(where)
    if p.is_dir():
        return _discover_dir(p, where)
    if p.is_file():
        split = _role_of(p.name)
        if split is None:
            # Any other .parquet file is a foreign values file.
            return Found(where, [_foreign(p, p.name.removesuffix(".parquet"), None)])
        return Found(where, [_partition(p.parent, split[0], where, named=True)])
    values = Path(where + _SUFFIXES["values"])
    if values.is_file() or any(Path(where + s).is_file() for s in _SUFFIXES.values()):
        return Found(where, [_partition(p.parent, p.name, where, named=True)])
    raise InvalidParameterError(
        f"{where} is neither a directory, a file nor a partition stem (no "
        f"{values.name} there); name what export -f parquet wrote",
        table=where,
    )


def _discover_dir(d: Path, where: str) -> Found:
    stems: dict[str, set[str]] = {}
    ignored: list[str] = []
    for name in sorted(os.listdir(d), key=lambda n: n.encode()):
        split = _role_of(name)
        if split is None or not (d / name).is_file():
            if not name.startswith("."):
                ignored.append(name)
            continue
        stems.setdefault(split[0], set()).add(split[1])
    found = Found(where, [], ignored=ignored)
    for stem in sorted(stems, key=lambda s: s.encode()):
        roles = stems[stem]
        if "values" in roles and "series" not in roles:
            values = d / f"{stem}{_SUFFIXES['values']}"
            raise InvalidParameterError(
                f"{where} holds {values.name} but no {stem}.series.parquet beside it; a "
                "partition's files come from one export (name the file itself to import it "
                "as a foreign file)",
                table=str(values),
            )
        part = _partition(d, stem, where, named=False)
        if part.type is TimeSeriesType.DeterministicSingleTimeSeries:
            found.set_aside.append(
                {
                    "name": stem,
                    "values_table": str(part.files["values"]),
                    "reason": derived_refused(str(part.files["values"])).message,
                }
            )
            continue
        found.partitions.append(part)
    if not found.partitions and not found.set_aside:
        raise InvalidParameterError(
            f"{where} holds no exported partitions (no *.values.parquet with its "
            "*.series.parquet and *.arrays.parquet)",
            table=where,
        )
    return found


def _partition(d: Path, stem: str, where: str, *, named: bool) -> Partition:
    files = {role: d / f"{stem}{suffix}" for role, suffix in _SUFFIXES.items()}
    have = {role for role, f in files.items() if f.is_file()}
    if "values" not in have:
        other = files["series"] if "series" in have else files["arrays"]
        raise missing_sibling(where, str(other), files["values"].name)
    if "series" not in have:
        # A values file alone is a foreign file (a directory refused it already).
        return _foreign(files["values"], stem, files["arrays"] if "arrays" in have else None)
    if "arrays" not in have:
        raise missing_sibling(where, str(files["values"]), files["arrays"].name)
    footers = {role: _footer(files[role]) for role in ROLES}
    _check_footers(stem, files, footers)
    tst = _partition_type(stem, files, footers)
    if named and tst is TimeSeriesType.DeterministicSingleTimeSeries:
        raise derived_refused(str(files["values"]))
    return Partition(stem, files, tst, footers)


def _foreign(values: Path, stem: str, arrays: Path | None) -> Partition:
    files = {"values": values} if arrays is None else {"values": values, "arrays": arrays}
    footers = {"values": _footer(values)}
    meta = footers["values"]
    if meta.get(FORMAT_KEY) == "normalized_v1" or meta.get(FORMAT_KEY, FORMAT) != FORMAT:
        _check_footers(stem, files, {**footers, "series": {}, "arrays": {}})
    return Partition(stem, files, None, footers)


def _footer(path: Path) -> dict[str, str]:
    _, pq = require_pyarrow()
    with _reading(path):
        schema = pq.read_schema(path)
    raw = schema.metadata or {}
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in raw.items()}


def _check_footers(stem: str, files: dict[str, Path], footers: dict[str, dict[str, str]]) -> None:
    with_footer = [r for r in ROLES if FORMAT_KEY in footers.get(r, {})]
    for role in with_footer:
        meta = footers[role]
        fmt = meta[FORMAT_KEY]
        if fmt == "normalized_v1":
            raise InvalidParameterError(
                f"{files[role]} is in the normalized_v1 layout, the layout before the arrays "
                "file, which this build does not read; export it again",
                table=str(files[role]),
            )
        if fmt != FORMAT:
            raise InvalidParameterError(
                f'{files[role]} says {FORMAT_KEY} "{fmt}", a format this build does not '
                f"read (it reads {FORMAT}); export it again with this package",
                table=str(files[role]),
            )
        if meta.get(ROLE_KEY, role) != role:
            raise InvalidParameterError(
                f'{files[role]} says {ROLE_KEY} "{meta[ROLE_KEY]}": it is a {meta[ROLE_KEY]} '
                f"file named as the partition {stem}'s {role} file; rename it back",
                table=str(files[role]),
            )
    for key in _AGREEING:
        seen = [(r, footers[r][key]) for r in with_footer if key in footers[r]]
        for r, v in seen[1:]:
            if v != seen[0][1]:
                r0, v0 = seen[0]
                raise InvalidParameterError(
                    f'the footers of partition {stem} disagree on {key}: {files[r0]} says "{v0}" '
                    f'and {files[r]} says "{v}"; a partition\'s files come from one export',
                    table=str(files[r]),
                )


def _partition_type(
    stem: str, files: dict[str, Path], footers: dict[str, dict[str, str]]
) -> TimeSeriesType:
    for role in ROLES:
        name = footers[role].get(TYPE_KEY)
        if name is not None and FORMAT_KEY in footers[role]:
            break
    else:
        # No footer (a query engine rewrote the files): the series rows say it.
        _, pq = require_pyarrow()
        with _reading(files["series"]):
            pf = pq.ParquetFile(files["series"])
            if "time_series_type" not in pf.schema_arrow.names:
                raise InvalidParameterError(
                    f"{files['series']} is missing column(s) a series file carries: "
                    "time_series_type",
                    table=str(files["series"]),
                )
            col = pf.read(columns=["time_series_type"]).column(0)
        values = [v for v in col.to_pylist()[:1] if v is not None]
        if not values:
            raise InvalidParameterError(
                f"{files['series']} has no rows and no footer, so nothing says which type "
                f"partition {stem} is; export it again",
                table=str(files["series"]),
            )
        name = values[0]
    try:
        return TimeSeriesType[name]
    except KeyError:
        raise InvalidParameterError(
            f'{files["series"]}: unknown time_series_type "{name}" (partition {stem})',
            table=str(files["series"]),
        ) from None


@contextlib.contextmanager
def _reading(path: Path | str) -> Iterator[None]:
    """pyarrow's and the OS's read errors as a StorageError naming the file."""
    import pyarrow

    try:
        yield
    except (OSError, pyarrow.ArrowException) as exc:
        raise StorageError(f"reading {path} failed: {exc}", table=str(path)) from exc


# ------------------------------------------------------------------------------ reader
@dataclass(slots=True)
class _Run:
    """The rows of one array (so far) in the values file: numpy columns in pieces (one
    per batch it spans), its 0-based first row."""

    aid: int
    start: int
    pieces: list[dict[str, np.ndarray]]

    @property
    def cols(self) -> dict[str, np.ndarray]:
        """The columns stitched (once: the pieces become one)."""
        if len(self.pieces) > 1:
            first = self.pieces[0]
            self.pieces = [{c: np.concatenate([p[c] for p in self.pieces]) for c in first}]
        return self.pieces[0]

    @property
    def n(self) -> int:
        return sum(len(p["value"]) for p in self.pieces)


#: Values rows converted to numpy at a time: a row group is read in batches of this many,
#: so memory holds one batch (and the array being stitched), not a whole row group.
_BATCH_ROWS = 1 << 18
#: Series and arrays rows turned into Python values at a time.
_ROW_BATCH = 4096


_UNIT_DIV = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}


class _PartitionReader:
    """Reads one partition for the import core (a :class:`PartitionSource`): the arrays
    file whole, the series file a row group at a time, the values file a row group at a
    time cut into arrays."""

    def __init__(self, pa: ModuleType, pq: ModuleType, part: Partition, where: str) -> None:
        self.pa, self.pq = pa, pq
        self.part = part
        self.where = where
        self.files = {role: str(p) for role, p in part.files.items()}
        self.place = Place(
            part.stem,
            part.type,  # type: ignore[arg-type]
            self.files["values"],
            self.files.get("series", f"{self.files['values']} (its series row: the inline flags)"),
            self.files.get("arrays", f"{self.files['values']} (no arrays file)"),
            row_word="row",
            word="file",
        )
        self.rehash = rehash_dir_term(str(part.files["values"].parent))
        #: Whether the arrays' hashes can be checked (a foreign file without an arrays
        #: file has none to check against).
        self.checksum = True
        self._has_aid = True  # a foreign file may have no array_id column
        self._aid = 1
        assert part.type is not None
        self.type: TimeSeriesType = part.type
        self._pf: dict[str, Any] = {}
        self._arrays: Mapping[int, tuple[str, str]] = {}
        self._row_tr: str | None = None  # the first series row's time_reference text
        # The cell shape the value column must be nested as: the footer's, else the
        # first series row's element_shape (JSON text).
        self._shape: str | None = part.footers.get("values", {}).get(ELEMENT_SHAPE_KEY)

    def _file(self, role: str) -> Any:
        """The role's file opened (once; the core closes them after the partition)."""
        pf = self._pf.get(role)
        if pf is None:
            with _reading(self.files[role]):
                pf = self._pf[role] = self.pq.ParquetFile(self.files[role])
        return pf

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        try:
            yield
        except (OSError, self.pa.ArrowException) as exc:
            raise StorageError(
                f"reading {self.files['values']} (and its series and arrays files) failed: {exc}",
                table=self.files["values"],
            ) from exc

    def values_count(self) -> int:
        return int(self._file("values").metadata.num_rows)

    def check_columns(self) -> None:
        check_columns_present(self.place, lambda name: set(self._schema_of(name).names))
        values = self._schema_of(self.files["values"])
        for col in ("timestamp", *(c for c, _ in values_key_columns(self.type))):
            if col in ("issue_time", "timestamp"):
                self._check_instant(values.field(col).type, col, self.files["values"])
        self._check_value_type(values.field("value").type)

    def _schema_of(self, name: str) -> Any:
        role = next(r for r, f in self.files.items() if f == name)
        return self._file(role).schema_arrow

    def _check_instant(self, t: Any, col: str, file: str) -> None:
        types = self.pa.types
        if types.is_dictionary(t):
            t = t.value_type
        if not types.is_timestamp(t):
            raise InvalidParameterError(
                f"{file}: `{col}` is {t}, not a timestamp (partition {self.part.stem}); cast it "
                "to a timestamp (timestamp[ms, tz=UTC] for instants) and write the file again",
                table=file,
            )

    def _check_value_type(self, t: Any) -> None:
        types = self.pa.types
        file = self.files["values"]
        while True:
            if types.is_struct(t):
                raise InvalidParameterError(
                    f"{file}: the `value` column is a Struct ({t}), the decoded form this "
                    f"version does not read (partition {self.part.stem}); write composites in "
                    "their packed fixed_size_list<double> form, as export -f parquet does",
                    table=file,
                )
            if _is_list(types, t):
                t = t.value_type
                continue
            return

    # -- rows for the core ---------------------------------------------------------------
    def array_rows(self) -> Iterable[Sequence[Any]]:
        file = self.files["arrays"]
        prev: tuple[Any, Any] | None = None
        rows = self._rows("arrays", ["id", "data_hash", "time_axis"])
        for n, (aid, h, axis) in enumerate(rows, start=1):
            if prev is not None and aid is not None and h is not None and axis is not None:
                if type(aid) is int and type(prev[0]) is int and aid <= prev[0]:
                    raise InvalidParameterError(
                        f"{file} row {n}: id {aid} does not ascend (the row before has id "
                        f"{prev[0]}); the arrays file is sorted by id, its ids strictly "
                        "ascending: sort it by id and import again",
                        table=file,
                    )
                if (h, axis) <= prev[1]:
                    raise InvalidParameterError(
                        f"{file} row {n} (id {aid}): its key ({h[:12]}, {axis}) does not "
                        "ascend with its id; the arrays file's keys ascend with their ids, "
                        "as the export numbers them",
                        table=file,
                        key=(h, axis),
                    )
            if aid is not None and h is not None and axis is not None:
                prev = (aid, (h, axis))
            yield (aid, h, axis)

    def series_rows(self, columns: Sequence[str]) -> Iterable[Sequence[Any]]:
        file = self.files["series"]
        seen: set[int] = set()
        last: Any = None
        tr_at = list(columns).index("time_reference")
        shape_at = list(columns).index("element_shape")
        for row, raw in enumerate(self._rows("series", list(columns)), start=1):
            aid = raw[0]
            if aid != last:
                if aid in seen:
                    raise InvalidParameterError(
                        f"{file} row {row}: array_id {aid} reappears after another array's "
                        f"rows (partition {self.part.stem}); {_SORT}",
                        table=file,
                    )
                if last is not None:
                    seen.add(last)
                last = aid
            if self._row_tr is None and isinstance(raw[tr_at], str):
                self._row_tr = raw[tr_at]
            if self._shape is None and isinstance(raw[shape_at], str):
                self._shape = raw[shape_at]
            yield raw

    def _rows(self, role: str, columns: list[str]) -> Iterator[tuple]:
        """A file's rows as tuples of Python values, a batch at a time (a file of many
        series is never held as Python objects whole); instants as epoch integers."""
        pf = self._file(role)
        pa = self.pa
        for batch in pf.iter_batches(batch_size=_ROW_BATCH, columns=columns):
            cols = []
            for c in columns:
                col = batch.column(c)
                if pa.types.is_timestamp(col.type):
                    col = col.view(pa.int64())  # a view: no compute kernel, no copy
                cols.append(col.to_pylist())
            yield from zip(*cols, strict=True)

    def open_values(self, arrays: Mapping[int, tuple[str, str]]) -> None:
        self._arrays = arrays
        self._check_group_order()

    def _check_group_order(self) -> None:
        """Refuse a values file whose row groups do not follow each other in ``array_id``
        order, before any array is filed: each group's smallest id must not be below the
        one before's largest (the statistics say so; a group without them is read)."""
        pf = self._file("values")
        if not self._has_aid:
            return
        at = pf.schema_arrow.get_field_index("array_id")
        meta = pf.metadata
        prev_hi: int | None = None
        start = 0
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            if rg.num_rows == 0:
                continue
            stats = rg.column(at).statistics if at >= 0 else None
            lo = hi = None
            if stats is not None and stats.has_min_max and isinstance(stats.min, int):
                lo, hi = int(stats.min), int(stats.max)
            else:
                col = pf.read_row_group(i, columns=["array_id"]).column(0)
                if col.null_count == 0 and self.pa.types.is_integer(col.type):
                    ids = _np(self.pa, col.combine_chunks())
                    lo, hi = int(ids.min()), int(ids.max())
            if lo is not None and hi is not None and prev_hi is not None and lo < prev_hi:
                raise InvalidParameterError(
                    f"{self.files['values']}: row group {i + 1} (from row {start + 1}) holds "
                    f"array_id {lo} after array_id {prev_hi}, so an array reappears after "
                    f"another array's rows or comes out of order (partition {self.part.stem}); "
                    f"{_SORT}",
                    table=self.files["values"],
                )
            if hi is not None:
                prev_hi = hi
            start += rg.num_rows

    def groups(
        self, wanted: Sequence[tuple[tuple[str, str], list[int], Spec | None]], dtype: str
    ) -> Iterator[Group | None]:
        runs = self._runs(dtype)
        pending = next(runs, None)
        for key, ids, spec in wanted:
            self.place.label = spec.label if spec is not None else None
            (aid,) = ids  # keys strictly ascend, so a key has one id
            if pending is not None and pending.aid < aid:  # pragma: no cover - _runs refuses
                raise self._stray(pending)
            if pending is None or pending.aid > aid:
                yield None
                continue
            yield self._group(key, pending, spec)
            pending = next(runs, None)
        if pending is not None:
            raise self._stray(pending)

    def check_unclaimed(self) -> None:  # pragma: no cover - the walk refuses these first
        pass

    def close_values(self) -> None:
        self._pf.clear()

    # -- the values walk -----------------------------------------------------------------
    def _stray(self, run: _Run) -> InvalidParameterError:
        return stray_values_row(self.place, run.aid, run.start + 1)

    def _runs(self, dtype: str) -> Iterator[_Run]:
        """The values file's arrays in file order, a batch of a row group at a time,
        stitched across batches and groups; refuses an array that reappears and one the
        arrays file does not hold."""
        pf = self._file("values")
        names = ["timestamp", *(c for c, _ in values_key_columns(self.type)), "value"]
        if self._has_aid:
            names.insert(0, "array_id")
        seen_last = -(2**63)
        carry: _Run | None = None
        start = 0
        for i in range(pf.num_row_groups):
            rows = pf.metadata.row_group(i).num_rows
            if rows == 0:
                continue
            if self._has_aid and rows > _BATCH_ROWS:
                # The whole group's order is checked before any of its arrays is handed
                # on, so a file out of order is refused as such, not as a short array
                # (a group of one batch is checked as the batch is).
                self._check_group_runs(pf, i, start, seen_last)
            for batch in pf.iter_batches(batch_size=_BATCH_ROWS, row_groups=[i], columns=names):
                n = batch.num_rows
                if n == 0:
                    continue
                cols = self._numpy(batch, dtype, start)
                aid = cols.pop("array_id") if self._has_aid else np.full(n, self._aid, np.int64)
                cuts = np.flatnonzero(aid[1:] != aid[:-1]) + 1
                bounds = [0, *cuts.tolist(), n]
                self._check_runs(aid[bounds[:-1]], [start + b for b in bounds[:-1]], seen_last)
                for lo, hi in itertools.pairwise(bounds):
                    a = int(aid[lo])
                    piece = {c: v[lo:hi] for c, v in cols.items()}
                    if carry is not None and carry.aid == a:
                        carry.pieces.append(piece)
                        continue
                    if carry is not None:
                        yield carry
                    if a not in self._arrays:
                        raise stray_values_row(self.place, a, start + lo + 1)
                    seen_last = a
                    carry = _Run(a, start + lo, [piece])
                start += n
                del batch, cols
        if carry is not None:
            yield carry

    def _check_group_runs(self, pf: Any, i: int, start: int, seen_last: int) -> None:
        """:meth:`_check_runs` over row group ``i``'s ``array_id`` column alone, read a
        batch at a time."""
        heads: list[np.ndarray] = []
        rows: list[np.ndarray] = []
        last = None
        offset = start
        for batch in pf.iter_batches(batch_size=_BATCH_ROWS, row_groups=[i], columns=["array_id"]):
            col = batch.column(0)
            if col.null_count or not self.pa.types.is_integer(col.type):
                return  # the batches refuse it, naming the row
            aid = _np(self.pa, col)
            if aid.size == 0:
                continue
            new = np.concatenate([[last is None or aid[0] != last], aid[1:] != aid[:-1]])
            at = np.flatnonzero(new)
            heads.append(aid[at])
            rows.append(offset + at)
            last = aid[-1]
            offset += aid.size
        if heads:
            self._check_runs(np.concatenate(heads), np.concatenate(rows).tolist(), seen_last)

    def _check_runs(self, heads: np.ndarray, rows: list[int], seen_last: int) -> None:
        """Refuse a row group whose runs of ``array_id`` (their ids ``heads``, starting at
        file rows ``rows``) do not ascend from ``seen_last``."""
        prev = seen_last
        for k, a in enumerate(heads.tolist()):
            if a < prev or (a == prev and k > 0):
                again = a in set(heads[:k].tolist()) or a == seen_last
                raise InvalidParameterError(
                    f"{self.files['values']} row {rows[k] + 1}: array_id {a} "
                    + ("reappears after another array's rows" if again else f"comes after {prev}")
                    + f" (partition {self.part.stem}); {_SORT}",
                    table=self.files["values"],
                )
            prev = a

    def _numpy(self, table: Any, dtype: str, start: int) -> dict[str, np.ndarray]:
        """One row group's columns as numpy: ids, instants in ms, lanes, values."""
        pa = self.pa
        file = self.files["values"]
        out: dict[str, np.ndarray] = {}
        for name in table.schema.names:
            col = table.column(name)
            if hasattr(col, "combine_chunks"):
                col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            if pa.types.is_dictionary(col.type):
                col = col.dictionary_decode()
            if name == "value":
                out[name] = self._values(col, dtype, start)
                continue
            if col.null_count:
                i = int(np.flatnonzero(_nulls(col))[0])
                raise InvalidParameterError(
                    f"{file} row {start + i + 1}: `{name}` is null (partition "
                    f"{self.part.stem}); the layout holds no nulls",
                    table=file,
                )
            if name in ("timestamp", "issue_time"):
                out[name] = self._instants(col, name, start)
            elif name == "percentile":
                if not pa.types.is_floating(col.type):
                    raise InvalidParameterError(
                        f"{file}: `percentile` is {col.type}, not a float (partition "
                        f"{self.part.stem})",
                        table=file,
                    )
                out[name] = _np(pa, col).astype(np.float64, copy=False)
            else:  # array_id, scenario
                if not pa.types.is_integer(col.type):
                    raise InvalidParameterError(
                        f"{file}: `{name}` is {col.type}, not an integer (partition "
                        f"{self.part.stem}); write it as int64",
                        table=file,
                    )
                raw = _np(pa, col)
                if raw.dtype == np.uint64 and raw.size and raw.max() > 2**63 - 1:
                    i = int(np.argmax(raw > 2**63 - 1))
                    raise InvalidParameterError(
                        f"{file} row {start + i + 1}: `{name}` {int(raw[i])} does not fit int64",
                        table=file,
                    )
                out[name] = raw.astype(np.int64, copy=False)
        return out

    def _instants(self, col: Any, name: str, start: int) -> np.ndarray:
        pa = self.pa
        file = self.files["values"]
        t = col.type
        self._check_instant(t, name, file)
        zoneless = self._row_tr == "zoneless"
        if t.tz is None and not zoneless:
            raise InvalidParameterError(
                f"{file}: `{name}` is naive (no zone), but the series rows' time_reference is "
                f'"{self._row_tr}" (partition {self.part.stem}); a naive column is a zoneless '
                "series' wall clock: write the column zoned (UTC) and import again",
                table=file,
            )
        if t.tz is not None and zoneless:
            raise InvalidParameterError(
                f"{file}: `{name}` is zoned ({t.tz}), but the series rows say zoneless "
                f"(partition {self.part.stem}); a zoneless series' wall clock is written "
                "naive: drop the zone from the column and import again",
                table=file,
            )
        raw = _np(pa, col)
        div = _UNIT_DIV[t.unit]
        if div is None:
            return raw * 1000
        if div > 1:
            off = raw % div
            if off.any():
                i = int(np.argmax(off != 0))
                raise InvalidParameterError(
                    f"{file} row {start + i + 1}: `{name}` is in {t.unit} and {int(raw[i])} is "
                    f"not a whole millisecond (partition {self.part.stem}); the store records "
                    "instants to the millisecond and does not round one",
                    table=file,
                )
            return raw // div
        return raw

    def _values(self, col: Any, dtype: str, start: int) -> np.ndarray:
        """The value column as ``[n, *cell shape]`` in the element dtype (never cast)."""
        pa = self.pa
        file = self.files["values"]
        n = len(col)
        arr = col
        shape: list[int] = []
        while _is_list(pa.types, arr.type):
            if arr.null_count:
                i = int(np.flatnonzero(_nulls(arr))[0])
                raise self._null_value(start, i, n, len(arr))
            if pa.types.is_fixed_size_list(arr.type):
                size = arr.type.list_size
            else:
                lengths = _list_lengths(pa, arr)
                size = int(lengths[0]) if lengths.size else 0
                if lengths.size and (lengths != size).any():
                    i = int(np.argmax(lengths != size))
                    raise InvalidParameterError(
                        f"{file}: the `value` lists have different lengths ({size} and "
                        f"{int(lengths[i])}, at row {start + i // max(1, len(arr) // n) + 1}) "
                        f"(partition {self.part.stem}); every value of one element type has "
                        "the same shape",
                        table=file,
                    )
            shape.append(size)
            arr = arr.flatten()
        self._check_nesting(shape)
        want = pa.from_numpy_dtype(NUMPY_DTYPES[dtype])
        if arr.type != want:
            raise InvalidParameterError(
                f"{file}: the `value` column's values are {arr.type}, but the series rows' "
                f"element type holds {want} (partition {self.part.stem}); the import does not "
                "cast: write the column in the element type's dtype",
                table=file,
            )
        if arr.null_count:
            i = int(np.flatnonzero(_nulls(arr))[0])
            raise self._null_value(start, i, n, len(arr), floating=pa.types.is_floating(want))
        flat = _np(pa, arr)
        return flat.reshape(n, *shape)

    def _check_nesting(self, shape: list[int]) -> None:
        if self._shape is None:
            return
        try:
            declared = [int(d) for d in orjson.loads(self._shape)]
        except (orjson.JSONDecodeError, TypeError, ValueError):
            return  # the core refuses a malformed element_shape by its own rules
        if declared != shape:
            file = self.files["values"]
            raise InvalidParameterError(
                f"{file}: the `value` column is nested as {shape} per row, but partition "
                f"{self.part.stem} declares element_shape {declared}; write each value as "
                "nested lists of that shape (innermost = last axis)",
                table=file,
            )

    def _null_value(
        self, start: int, i: int, n: int, total: int, *, floating: bool = False
    ) -> InvalidParameterError:
        file = self.files["values"]
        row = start + i // max(1, total // max(1, n)) + 1
        hint = (
            "; pandas with numpy dtypes writes NaN as null: read and write with "
            'dtype_backend="pyarrow" to keep NaN a value'
            if floating
            else ""
        )
        return InvalidParameterError(
            f"{file} row {row}: `value` is null (partition {self.part.stem}); a series holds "
            f"no nulls (NaN is a value, not an absence){hint}",
            table=file,
        )

    def _group(self, key: tuple[str, str], run: _Run, spec: Spec | None) -> Group:
        n = run.n
        lo = run.start
        cols = run.cols
        group = Group(
            key, [run.aid], n, cols["value"], rowids=lambda: list(range(lo + 1, lo + n + 1))
        )
        group.timestamp = cols["timestamp"]
        group.issue = cols.get("issue_time")
        group.lane = cols.get("percentile", cols.get("scenario"))
        if spec is not None:
            group.affine = _affine(self.type, group, spec)
        return group


# ------------------------------------------------------------------------------ foreign files
_SPLIT = "export it with its series file, or split it into one file per array_id"
_OWNER = Term("--owner-id and --owner-type", 'overrides={"owner_id": …, "owner_type": …}')
_RESOLUTION = Term("--resolution", 'overrides={"resolution": …}')


class _ForeignReader(_PartitionReader):
    """A values file with no series file (``parquet-layout.md`` §8): one series, whose
    series row the inline flags, the file's ``to_arrow`` metadata and its columns make up,
    each attribute taken from the first of those that says it."""

    def __init__(
        self, pa: ModuleType, pq: ModuleType, part: Partition, where: str, opts: Options
    ) -> None:
        values = str(part.files["values"])
        with _reading(values):
            pf = pq.ParquetFile(values)
        schema = pf.schema_arrow
        meta = part.footers["values"]
        names = schema.names
        missing = [c for c in ("timestamp", "value") if c not in names]
        if missing:
            raise InvalidParameterError(
                f"{values} is a values file without a series file beside it (a foreign "
                f"file), which needs a `timestamp` and a `value` column; it has no "
                f"{' and no '.join(f'`{c}`' for c in missing)} (it has {', '.join(names)})",
                table=values,
            )
        if "issue_time" in names:
            raise InvalidParameterError(
                f"{values} has an `issue_time` column but no series file beside it: a foreign "
                "forecast is not supported, since its grid lives in the series file; export "
                "the forecast and keep all three files",
                table=values,
            )
        aid = None
        if "array_id" in names:
            with _reading(values):
                col = pf.read(columns=["array_id"]).column(0)
            distinct = [v for v in col.unique().to_pylist()]
            if len(distinct) > 1:
                raise InvalidParameterError(
                    f"{values} holds {len(distinct)} arrays (array_id "
                    f"{', '.join(map(str, sorted(d for d in distinct if d is not None)[:5]))}"
                    f"{', …' if len(distinct) > 5 else ''}) but no series file, so they would "
                    f"all be one series; {_SPLIT}",
                    table=values,
                )
            aid = distinct[0] if distinct else None
        tst = self._type(opts, meta, values)
        part.type = tst
        super().__init__(pa, pq, part, where)
        self._meta = meta
        self._opts = opts
        self._has_aid = "array_id" in names
        if isinstance(aid, int):
            self._aid = aid
        self._shape = None  # no series row to declare one: the element type decides
        self._key = ("", "")
        self.checksum = False
        self._arrays_file = part.files.get("arrays")
        if self._arrays_file is not None and isinstance(aid, int):
            self.checksum = True
        ov = opts.overrides
        if "owner_id" not in ov:
            raise InvalidParameterError(
                f"{values} is a foreign file (no series file beside it), which names no owner; "
                "pass {owner}",
                table=values,
                terms={"owner": _OWNER},
            )
        self._row_tr = self._reference_text(schema.field("timestamp").type)

    def _type(self, opts: Options, meta: Mapping[str, str], values: str) -> TimeSeriesType:
        if opts.type is not None:
            tst = opts.type
        elif TYPE_KEY in meta:
            try:
                tst = TimeSeriesType[meta[TYPE_KEY]]
            except KeyError:
                raise InvalidParameterError(
                    f'{values}: unknown time_series_type "{meta[TYPE_KEY]}" in its metadata; '
                    "pass --type",
                    table=values,
                ) from None
        elif opts.resolution is not None:
            tst = TimeSeriesType.SingleTimeSeries
        else:
            tst = TimeSeriesType.NonSequentialTimeSeries
        if tst.is_forecast:
            raise InvalidParameterError(
                f"{values} would be a {tst.name}, but a foreign forecast (a values file with "
                "no series file) is not supported; export the forecast and keep all three files",
                table=values,
            )
        return tst

    def _reference_text(self, ts_type: Any) -> str:
        ov = self._opts.overrides
        if "time_reference" in ov:
            return "unspecified" if ov["time_reference"] is None else str(ov["time_reference"])
        if REFERENCE_KEY in self._meta:
            return self._meta[REFERENCE_KEY]
        tz = getattr(ts_type, "tz", None)
        if tz is None:
            return "zoneless"
        return "utc" if tz.upper() in ("UTC", "Z", "+00:00") else tz

    def check_columns(self) -> None:
        values = self._file("values").schema_arrow
        self._check_instant(values.field("timestamp").type, "timestamp", self.files["values"])
        self._check_value_type(values.field("value").type)

    def array_rows(self) -> Iterable[Sequence[Any]]:
        if self.checksum:
            assert self._arrays_file is not None
            self.files["arrays"] = str(self._arrays_file)
            for row in super().array_rows():
                if row[0] == self._aid:
                    yield row
                    return
            raise InvalidParameterError(
                f"{self.files['values']} names array_id {self._aid}, which "
                f"{self._arrays_file} does not hold; {TEXT_HINT}",
                table=self.files["values"],
            )
        yield (self._aid, "", "")

    def series_rows(self, columns: Sequence[str]) -> Iterable[Sequence[Any]]:
        meta, opts = self._meta, self._opts
        ov = opts.overrides
        values = self.files["values"]
        row: dict[str, Any] = {
            "array_id": self._aid,
            "id": 1,
            "owner_id": ov["owner_id"],
            "owner_type": ov.get("owner_type", ""),
            "owner_category": "Component",
            "time_series_type": self.type.name,
            "name": ov.get("name", meta.get("name", "")),
            "features": "{}",
            "element_type": self._element_type(),
            "element_shape": "[]",
            "time_reference": self._row_tr,
            **{d: meta.get(d, "") for d in DESCRIPTORS},
        }
        if self.type is TimeSeriesType.SingleTimeSeries:
            ms = self._timestamps()
            if opts.resolution is not None:
                res = str(opts.resolution)
            elif "resolution" in meta:
                res = meta["resolution"]
            else:
                try:
                    res = str(_infer_resolution(ms))
                except InvalidParameterError as exc:
                    raise InvalidParameterError(
                        f"{values}: {exc.message}; or pass {{resolution}} to name the grid",
                        table=values,
                        terms={"resolution": _RESOLUTION},
                    ) from None
            row.update(initial_timestamp=int(ms[0]), resolution=res, length=int(ms.size))
        if not row["name"]:
            row["name"] = ""  # the core refuses it, naming --name
        yield tuple(row[c] for c in columns)

    def _element_type(self) -> str:
        if self._opts.element_type is not None:
            return str(self._opts.element_type)
        recorded = self._meta.get(ELEMENT_TYPE_KEY)
        if recorded is not None:
            return recorded
        t = self._file("values").schema_arrow.field("value").type
        while _is_list(self.pa.types, t):
            t = t.value_type
        try:
            return dtype_name(np.dtype(t.to_pandas_dtype()))
        except (InvalidParameterError, NotImplementedError, TypeError) as exc:
            raise InvalidParameterError(
                f"{self.files['values']}: the `value` column's type {t} has no series dtype; "
                "cast it to one of float64, float32, int64, int32, int16, int8, uint64, "
                "uint32, uint16, uint8, bool",
                table=self.files["values"],
            ) from exc

    def _timestamps(self) -> np.ndarray:
        pf = self._file("values")
        col = pf.read(columns=["timestamp"]).column(0).combine_chunks()
        if col.null_count:
            i = int(np.flatnonzero(_nulls(col))[0])
            raise InvalidParameterError(
                f"{self.files['values']} row {i + 1}: `timestamp` is null; the layout holds "
                "no nulls",
                table=self.files["values"],
            )
        ms = self._instants(col, "timestamp", 0)
        if ms.size == 0:
            raise InvalidParameterError(
                f"{self.files['values']} has no rows; a SingleTimeSeries is anchored at its "
                "first timestamp",
                table=self.files["values"],
            )
        return np.sort(ms)


def _affine(tst: TimeSeriesType, group: Group, spec: Spec) -> tuple | None:
    """The grid the rows walk in file order, when they are exactly the one ``spec``
    declares (the core then does not place them again); None to let the core place them."""
    ts = group.timestamp
    n = group.n
    if ts is None or n == 0 or spec.res is None or spec.res.calendar:
        return None
    r = np.arange(n, dtype=np.int64)
    first = int(ts[0])
    if tst is TimeSeriesType.SingleTimeSeries:
        if np.array_equal(ts, first + r * spec.res.ms):
            return ("sts", first, spec.res.ms)
        return None
    if tst is TimeSeriesType.Deterministic:
        itv, steps = spec.itv, spec.steps
        if itv is None or itv.calendar or not steps or n % steps:
            return None
        if not itv.is_positive and n != steps:
            return None
        it = group.issue
        assert it is not None
        issue = int(it[0])
        want_it = issue + (r // steps) * itv.ms
        if np.array_equal(it, want_it) and np.array_equal(ts - it, (r % steps) * spec.res.ms):
            return ("det", issue, itv.ms, spec.res.ms, steps, n // steps)
    return None


def _is_list(types: Any, t: Any) -> bool:
    return bool(
        types.is_fixed_size_list(t)
        or types.is_list(t)
        or types.is_large_list(t)
        or (hasattr(types, "is_list_view") and types.is_list_view(t))
    )


_NUMPY = {
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "halffloat": np.float16,
    "float": np.float32,
    "double": np.float64,
}


def _np(pa: ModuleType, arr: Any) -> np.ndarray:
    """A primitive Arrow array (no nulls) as numpy, straight from its data buffer.

    Not ``Array.to_numpy``, whose first call imports pandas (half a second, and its
    memory) only to ask whether this is a pandas object; the result is read-only.
    """
    t = arr.type
    n, off = len(arr), arr.offset
    buf = arr.buffers()[1]
    if pa.types.is_boolean(t):
        if buf is None or n == 0:
            return np.zeros(0, dtype=np.bool_)
        bits = np.frombuffer(buf, dtype=np.uint8)
        return np.unpackbits(bits, count=off + n, bitorder="little")[off:].astype(np.bool_)
    if pa.types.is_timestamp(t):
        dtype = np.dtype(np.int64)
    elif str(t) in _NUMPY:
        dtype = np.dtype(_NUMPY[str(t)])
    else:  # pragma: no cover - the type checks above refuse anything else first
        return arr.to_numpy(zero_copy_only=False)
    if buf is None or n == 0:
        return np.empty(0, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=off + n)[off:]


def _list_lengths(pa: ModuleType, arr: Any) -> np.ndarray:
    """Each row's length of a variable-length list array, from its offsets."""
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        dtype = np.int64 if pa.types.is_large_list(arr.type) else np.int32
        n, off = len(arr), arr.offset
        offsets = np.frombuffer(arr.buffers()[1], dtype=dtype, count=off + n + 1)[off:]
        return np.diff(offsets)
    return _np(pa, arr.value_lengths())


def _nulls(arr: Any) -> np.ndarray:
    return arr.is_null().to_numpy(zero_copy_only=False)
