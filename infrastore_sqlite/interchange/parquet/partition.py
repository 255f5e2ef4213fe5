"""The Parquet reader of one exported partition (a :class:`PartitionSource` for the import
core): the arrays file whole, the series file and the values file a batch at a time,
walked together by ``array_id``.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import orjson

from ...core.elements import NUMPY_DTYPES
from ...errors import InvalidParameterError, StorageError, Term, rehash_dir_term
from ...model import TimeSeriesType
from ..importing import (
    Group,
    Place,
    Spec,
    check_columns_present,
    fmt_ms,
    stray_values_row,
)
from ..importing.limits import Limits
from ..layout import series_columns, values_key_columns
from ..pipeline import Prefetch
from .bounds import check_cells, check_row_groups, row_limit, too_many_rows
from .columns import is_list, list_lengths, list_values, null_mask, to_numpy
from .discovery import Partition, reading_errors
from .grids import affine_of, sts_grids
from .layout import (
    ELEMENT_SHAPE_KEY,
)
from .location import is_uri
from .parts import PartsFile, open_parquet, stray_run, stray_text, text_columns
from .spark import spark_instants

_SORT = "sort the file by array_id (then issue_time, timestamp) and import again"

__all__ = ["PartitionReader", "rehash_of"]


def rehash_of(values_file: str) -> Term:
    """How to recompute the hashes of the partition whose values file is named
    ``values_file`` (a report's text): ``rehash`` of the directory that holds it (the
    arrays file sits beside it); of a local copy, for object storage."""
    if is_uri(values_file):  # a URI as text: its prefix, not a Path's (which drops a /)
        return rehash_dir_term(posixpath.dirname(str(values_file).rstrip("/")))
    return rehash_dir_term(str(Path(values_file).parent))


# ------------------------------------------------------------------------------ reader
@dataclass(slots=True)
class _Run:
    """The rows of one array (so far) in the values file: pieces (one per batch it spans,
    each a batch's numpy columns and the rows ``lo:hi`` of them), its 0-based first row."""

    aid: int
    start: int
    pieces: list[tuple[dict[str, np.ndarray], int, int]]
    #: The grid its rows walk, when found for the whole batch at once (:func:`sts_grids`);
    #: None to look at the run alone.
    affine: tuple | None = None

    def column(self, name: str) -> np.ndarray | None:
        """One column of the rows, stitched across the pieces; None if the file has none."""
        if name not in self.pieces[0][0]:
            return None
        if len(self.pieces) == 1:
            cols, lo, hi = self.pieces[0]
            return cols[name][lo:hi]
        return np.concatenate([cols[name][lo:hi] for cols, lo, hi in self.pieces])


#: A regular series' time axis (``R<steps>/<anchor>/<resolution>``, the layout's spelling).
_REGULAR_AXIS = re.compile(r"R(\d+)/[^/]+/[^/]+")

#: Values rows converted to numpy at a time: a row group is read in batches of this many,
#: so memory holds one batch (and the array being stitched), not a whole row group. 64K
#: rows (1.5 MB of values and instants) costs no more per row than larger batches.
_BATCH_ROWS = 1 << 16
#: Values files of more rows than this are read a batch ahead (:func:`_read_ahead`): with
#: a few batches there is little of the caller's work to overlap the decoding with.
_READ_AHEAD_ROWS = 4 * _BATCH_ROWS
#: ... and only when their arrays hold this many rows on average: with shorter ones the
#: caller's work per array dwarfs the decoding, and the worker's turns at the GIL only
#: slow it (2,000 arrays of 168 rows: 84 -> 77 ms in line; 500 of 8,760: 145 ms ahead,
#: 185 in line; medians of 14-16 fresh processes).
_READ_AHEAD_ARRAY_ROWS = 1024
#: Files are read through a buffered stream of this many bytes, so a row group's column
#: chunks are not all held compressed at once (they can be tens of MB). Not pre-buffered:
#: pyarrow's pre-buffering reads a row group's chunks whole, whatever the stream's size
#: (a 1M-row group of the values file: +20 MB at 20,000 short series, and no faster).
_READ_BUFFER = 1 << 20
#: Series and arrays rows turned into Python values at a time.
_ROW_BATCH = 4096
#: Columns whose texts the import keeps for every array or series (an array's key, a
#: series' owner type) and which repeat from row to row: held once per distinct text.
_SHARED_TEXT = frozenset({"time_axis", "owner_type"})


_UNIT_DIV = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}


class PartitionReader:
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
        #: The arrays and series files opened and read in a worker (:meth:`read_rows_ahead`).
        self._rows_ahead: dict[str, Future[tuple[Any, tuple, list | None]]] = {}
        #: The partition the import reads next (set by it).
        self.successor: PartitionReader | None = None
        self._arrays: Mapping[int, tuple[str, str]] = {}
        self._row_tr: str | None = None  # the first series row's time_reference text
        # The cell shape the value column must be nested as: the footer's, else the
        # first series row's element_shape (JSON text).
        self._shape: str | None = part.footers.get("values", {}).get(ELEMENT_SHAPE_KEY)

    def _file(self, role: str) -> Any:
        """The role's file opened (once; the core closes them after the partition)."""
        pf = self._pf.get(role)
        if pf is None:
            ahead = self._rows_ahead.get(role)
            if ahead is not None:
                # Opened by read_rows_ahead; its failure to open is raised here, as here.
                pf = self._pf[role] = ahead.result()[0]
            else:
                pf = self._pf[role] = self._open(role)
        return pf

    def _open(self, role: str) -> Any:
        # With the metadata discovery read: the footer is not read and parsed again.
        meta = self.part.metadata.get(role)
        with reading_errors(self.files[role]):
            kw: dict[str, Any] = {}
            if role != "values" and meta is not None:
                # The text columns of the series and arrays files read as dictionaries:
                # a dictionary page's one long text repeated by every row's index stays
                # one text (spelled out, a batch of 4,096 rows of one 8 MiB entry took
                # 32 GiB), and the rows share its Python object (_columns).
                kw["read_dictionary"] = text_columns(self.pa, meta)
            return open_parquet(
                self.pq,
                self.part.files[role],
                meta,
                role,
                buffer_size=_READ_BUFFER,
                pre_buffer=False,
                **kw,
            )

    def read_rows_ahead(self) -> None:
        """Start opening the arrays and series files, and reading the rows of each that
        is one batch, in a worker thread (once): :meth:`_file` and :meth:`_columns` take
        them from there. The import starts the next partition's while this one's values
        are walked, so a directory of many small partitions does not wait for each of
        its files in turn."""
        if self._rows_ahead:
            return
        wanted = {
            "arrays": ("id", "data_hash", "time_axis"),
            "series": ("array_id", "id", *series_columns(self.type)),
        }
        pool = ThreadPoolExecutor(1, thread_name_prefix="infrastore-sqlite-parquet")
        self._rows_ahead = {
            role: pool.submit(self._read_small, role, columns)
            for role, columns in wanted.items()
            if role in self.files and role not in self._pf
        }
        pool.shutdown(wait=False)

    def _read_small(self, role: str, columns: tuple[str, ...]) -> tuple[Any, tuple, list | None]:
        """``(the file opened, columns, its batches of them)``; no batches for a file of
        more than one batch, or one that does not read (read again in line, where its
        refusal is raised as always)."""
        pf = self._open(role)
        if pf.metadata.num_rows > _ROW_BATCH:
            return pf, columns, None
        try:
            batches = pf.iter_batches(
                batch_size=_ROW_BATCH, columns=list(columns), use_threads=False
            )
            return pf, columns, list(batches)
        except Exception:  # the same read in line raises it, in its place
            return pf, columns, None

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        try:
            yield
        except (OSError, self.pa.ArrowException) as exc:
            raise StorageError(
                f"reading {self.files['values']} (and its series and arrays files) failed: "
                f"{exc}; if a file was cut short or damaged, export it again",
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
            if is_list(types, t):
                t = t.value_type
                continue
            return

    # -- rows for the core ---------------------------------------------------------------
    def array_rows(self) -> Iterable[Sequence[Any]]:
        file = self.files["arrays"]
        prev: tuple[Any, Any] | None = None
        n = 0
        for ids, hashes, axes in self._columns("arrays", ["id", "data_hash", "time_axis"]):
            keys = list(zip(hashes, axes, strict=True))
            # A batch of plain cells ascending in both ids and keys (as an export writes
            # them) is handed on as it is; any other is walked row by row, which names
            # the row at fault.
            if (
                set(map(type, ids)) == {int}
                and set(map(type, hashes)) == set(map(type, axes)) == {str}
                and (prev is None or (ids[0] > prev[0] and keys[0] > prev[1]))
                and all(map(operator.lt, ids, ids[1:]))
                and all(map(operator.lt, keys, keys[1:]))
            ):
                if ids:
                    prev = (ids[-1], keys[-1])
                n += len(ids)
                yield from zip(ids, hashes, axes, strict=True)
                continue
            for aid, h, axis in zip(ids, hashes, axes, strict=True):
                n += 1
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

    def series_batches(self, columns: Sequence[str]) -> Iterable[Sequence[Sequence[Any]]]:
        file = self.files["series"]
        # An array id seen again after another's rows is refused. While the ids ascend
        # (as the layout orders them) none can be: the ids whose rows ended are kept as
        # int64 columns, a batch at a time (8 bytes an array; a set of Python ints took
        # ~57, 17 MB for 300,000), and become a set only once the order breaks.
        seen: set[Any] | None = None
        ended: list[np.ndarray] = []
        top: int = -1 << 63
        last: Any = None
        tr_at = list(columns).index("time_reference")
        shape_at = list(columns).index("element_shape")
        start = 0
        for cols in self._columns("series", list(columns)):
            batch_ended: list[int] = []
            for row, aid in enumerate(cols[0], start=start + 1):
                if aid != last:
                    if seen is None and not (type(aid) is int and top < aid < 1 << 63):
                        seen = {*itertools.chain.from_iterable(e.tolist() for e in ended)}
                        seen.update(batch_ended)
                        ended = batch_ended = []
                    if seen is None:
                        if last is not None:
                            batch_ended.append(last)
                        top = aid
                    else:
                        if aid in seen:
                            raise InvalidParameterError(
                                f"{file} row {row}: array_id {aid} reappears after another "
                                f"array's rows (partition {self.part.stem}); {_SORT}",
                                table=file,
                            )
                        if last is not None:
                            seen.add(last)
                    last = aid
            if batch_ended:
                ended.append(np.array(batch_ended, dtype=np.int64))
            if self._row_tr is None:
                self._row_tr = next((v for v in cols[tr_at] if isinstance(v, str)), None)
            if self._shape is None:
                self._shape = next((v for v in cols[shape_at] if isinstance(v, str)), None)
            start += len(cols[0])
            yield cols

    def _columns(self, role: str, columns: list[str]) -> Iterator[list[list[Any]]]:
        """A file's ``columns`` as lists of Python values, a batch of rows at a time (a
        file of many series is never held as Python objects whole); instants as epoch
        integers.

        The texts of :data:`_SHARED_TEXT` columns, which the import keeps per array or
        series and which repeat from row to row, are one object per distinct text."""
        pf = self._file(role)
        pa = self.pa
        shared: dict[Any, Any] = {}
        ahead = self._rows_ahead.pop(role, None)
        read = ahead.result() if ahead is not None else None
        if read is not None and read[2] is not None and read[1] == tuple(columns):
            batches: Iterable[Any] = read[2]
        else:
            # Decoded in line: a series or arrays file is small, and handing its columns
            # to pyarrow's thread pool costs more waiting than decoding them here.
            batches = pf.iter_batches(batch_size=_ROW_BATCH, columns=columns, use_threads=False)
        del ahead, read
        start = 0
        for batch in batches:
            cols = []
            check_cells(batch, self.limits, start, self.files[role])
            start += batch.num_rows
            for c in columns:
                col = batch.column(c)
                if pa.types.is_timestamp(col.type):
                    col = col.view(pa.int64())  # a view: no compute kernel, no copy
                if pa.types.is_dictionary(col.type):
                    cols.append(_dictionary_cells(col))
                    continue
                cells = col.to_pylist()
                if c in _SHARED_TEXT and (
                    pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
                ):  # (cells of any other type are refused by the core as they are)
                    cells = list(map(shared.setdefault, cells, cells))
                cols.append(cells)
            yield cols

    #: The store's bounds (the entry point sets the caller's).
    limits: Limits = Limits()

    def open_values(self, arrays: Mapping[int, tuple[str, str]]) -> None:
        self._arrays = arrays
        pf = self._file("values")
        if isinstance(pf, PartsFile):
            pf.known = arrays  # (a part's refusal says whether an id is the arrays file's)
        self._check_row_groups()
        self._check_group_order()

    def _check_row_groups(self) -> None:
        """Refuse what the footer proves is one array longer than the store reads."""
        pf = self._file("values")
        at = pf.schema_arrow.get_field_index("array_id") if self._has_aid else -1
        limit = row_limit(self.limits, self.type)
        # A part-file directory: each part's footer alone (an array that continues across
        # parts is bounded by the values walk as it grows, _runs).
        metas = (
            list(zip(pf.meta.parts, pf.meta.metas, strict=True))
            if isinstance(pf, PartsFile)
            else [(self.files["values"], pf.metadata)]
        )
        for where, meta in metas:
            found = check_row_groups(meta, at, limit)
            if found is not None:
                what, rows = found
                raise self._too_many(f"{where}: {what}", rows, limit, at_least=False)

    def _bound(self, aid: int, first: int, rows: int, limit: int) -> None:
        if rows > limit:
            what = f"{self.files['values']}: array_id {aid} (from row {first + 1})"
            raise self._too_many(what, rows, limit, at_least=True)

    def _too_many(
        self, what: str, rows: int, limit: int, *, at_least: bool
    ) -> InvalidParameterError:
        return too_many_rows(
            self.limits, what, rows, limit, file=self.files["values"], stem=self.part.stem,
            at_least=at_least,
        )  # fmt: skip

    def _check_group_order(self) -> None:
        """Refuse a values file whose row groups do not follow each other in ``array_id``
        order, before any array is filed: each group's smallest id must not be below the
        one before's largest (the statistics say so; a group without them is read)."""
        pf = self._file("values")
        if not self._has_aid or isinstance(pf, PartsFile):
            return  # (parts are merged in order as they are read, each checked)
        at = pf.schema_arrow.get_field_index("array_id")
        meta = pf.metadata
        prev_hi: int | None = None
        prev_at = (0, 0)  # the group that held prev_hi, and its first row
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
                    ids = to_numpy(self.pa, col.combine_chunks())
                    lo, hi = int(ids.min()), int(ids.max())
            if lo is not None and hi is not None and prev_hi is not None and lo < prev_hi:
                self._refuse_stray_between(pf, prev_at, i)
                raise InvalidParameterError(
                    f"{self.files['values']}: row group {i + 1} (from row {start + 1}) holds "
                    f"array_id {lo} after array_id {prev_hi}, so an array reappears after "
                    f"another array's rows or comes out of order (partition {self.part.stem}); "
                    f"{_SORT}",
                    table=self.files["values"],
                )
            if hi is not None:
                prev_hi, prev_at = hi, (i, start)
            start += rg.num_rows

    def _check_handover(
        self, prev: _Run, a: int, ts: np.ndarray, lo: int, hi: int, start: int
    ) -> None:
        """Refuse the first row of array ``a`` (batch rows ``lo:hi``, timestamps ``ts``
        in ms) when it is the last row of the array before it given ``a``'s id: that
        array has fewer rows than its time axis counts (``R<n>/…``, a regular series)
        and the row's timestamp comes after the next row's. Left alone, the short array
        fails its data_hash first, and the refusal says to rehash: a rehash would not
        mend it."""
        if self.type is not TimeSeriesType.SingleTimeSeries or hi - lo < 2:
            return
        if ts[lo] <= ts[lo + 1]:
            return
        axis = self._arrays.get(prev.aid, ("", ""))[1]
        m = _REGULAR_AXIS.fullmatch(axis)
        n = sum(h - b for _, b, h in prev.pieces)
        if m is None or n >= int(m.group(1)):
            return
        raise InvalidParameterError(
            f"{self.files['values']} row {start + lo + 1} (timestamp {fmt_ms(int(ts[lo]))}): "
            f"array_id {a}'s first row comes after its next row, and array_id {prev.aid} "
            f"before it has {n} rows where its time axis {axis} in {self.files['arrays']} "
            f"counts {m.group(1)}: the row looks like array_id {prev.aid}'s last, given "
            f"array_id {a}; give it back array_id {prev.aid} and import again (partition "
            f"{self.part.stem})",
            table=self.files["values"],
        )

    def _refuse_stray_between(self, pf: Any, prev_at: tuple[int, int], i: int) -> None:
        """Row groups ``prev_at[0]`` to ``i`` (the first starting at file row
        ``prev_at[1]``) hold ids out of order: refuse naming the run of rows that sits
        among another array's rows, when one does (their ``array_id`` read; the groups'
        statistics say only that the order breaks somewhere)."""
        first, row = prev_at
        col = pf.read_row_groups(list(range(first, i + 1)), columns=["array_id"]).column(0)
        if col.null_count or not self.pa.types.is_integer(col.type):
            return
        ids = to_numpy(self.pa, col.combine_chunks())
        if ids.size < 2:
            return
        cut = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        starts = [0, *cut.tolist()]
        heads = ids[starts].tolist()
        k = next((k for k in range(1, len(heads)) if heads[k] < heads[k - 1]), None)
        if k is None:
            return
        found = stray_run(heads, [row + x for x in starts], row + ids.size, k, None)
        if found is not None:
            raise InvalidParameterError(
                f"{self.files['values']} {stray_text(found, known=found[2] in self._arrays)} "
                f"(partition {self.part.stem})",
                table=self.files["values"],
            )

    def groups(
        self, wanted: Sequence[tuple[tuple[str, str], list[int], Spec | None]], dtype: str
    ) -> Iterator[Group | None]:
        # Each array's fixed resolution (its first series row's), for the batch grid
        # check; not the Specs themselves, which the core lets go as it files them.
        made = getattr(wanted, "res_ms", None)
        # The import's entries give them as columns (a dict would hold ~100 bytes per
        # array for the partition, and iterating them makes each entry's Spec); a
        # rehash hands a list.
        res_ms: Mapping[int, int] = (
            made()
            if made is not None
            else {
                ids[0]: spec.res.ms
                for _key, ids, spec in wanted
                if spec is not None and spec.res is not None and not spec.res.calendar
            }
        )
        runs = self._runs(dtype, res_ms)
        pending = next(runs, None)
        for key, ids, spec in wanted:
            self.place.naming = spec
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

    def _runs(self, dtype: str, res_ms: Mapping[int, int] | None = None) -> Iterator[_Run]:
        """The values file's arrays in file order, a batch of a row group at a time,
        stitched across batches and groups; refuses an array that reappears and one the
        arrays file does not hold. With ``res_ms`` (array id -> the fixed resolution of its
        first series row), the grids of a SingleTimeSeries batch's arrays are found in one
        pass over the batch."""
        pf = self._file("values")
        names = ["timestamp", *(c for c, _ in values_key_columns(self.type)), "value"]
        if self._has_aid:
            names.insert(0, "array_id")
        if self.successor is not None:
            # The next partition's arrays and series files are read while this one's
            # values are.
            self.successor.read_rows_ahead()
        seen_last = -(2**63)
        carry: _Run | None = None
        start = 0
        limit = row_limit(self.limits, self.type)
        # A file of a few batches, or of short arrays, is read in line; a longer one of
        # long arrays a batch ahead, decoded in the read-ahead thread while the caller cuts
        # and builds the batch before. Never in pyarrow's thread pool: starting and waking
        # its threads cost a process more than decoding a batch of a few columns (mixed
        # 40, fresh processes: 144 -> 117 ms).
        rows = pf.metadata.num_rows
        ahead = rows > _READ_AHEAD_ROWS and rows >= _READ_AHEAD_ARRAY_ROWS * len(self._arrays)
        batches = self._batches(pf, names)
        for found, batch in _read_ahead(batches) if ahead else batches:
            if batch is None:
                # The whole group's order is checked before any of its arrays is handed
                # on, so a file out of order is refused as such, not as a short array
                # (a group of one batch is checked as the batch is).
                if found is not None:
                    heads, at, rows = found
                    self._check_runs(heads, (start + at).tolist(), seen_last, start + rows)
                continue
            n = batch.num_rows
            cols = self._numpy(batch, dtype, start)
            aid = cols.pop("array_id") if self._has_aid else np.full(n, self._aid, np.int64)
            cuts = np.flatnonzero(aid[1:] != aid[:-1]) + 1
            bounds = [0, *cuts.tolist(), n]
            heads = aid[bounds[:-1]]
            ts = cols["timestamp"]
            self._check_runs(
                heads,
                [start + b for b in bounds[:-1]],
                seen_last,
                start + n,
                lambda row, ts=ts, start=start: fmt_ms(int(ts[row - start])),
            )
            grids = (
                sts_grids(cols["timestamp"], heads, bounds, res_ms)
                if res_ms and self.type is TimeSeriesType.SingleTimeSeries
                else None
            )
            known = self._arrays
            # The arrays whose first row comes after their second (one numpy pass, so
            # that an array that starts in order costs nothing more): each is looked at
            # as a row the array before may have lost (:meth:`_check_handover`).
            firsts = np.asarray(bounds[:-1])
            late = (
                set(firsts[ts[firsts] > ts[np.minimum(firsts + 1, n - 1)]].tolist())
                if self.type is TimeSeriesType.SingleTimeSeries
                else ()
            )
            for a, lo, hi, grid in zip(
                heads.tolist(),
                bounds[:-1],
                bounds[1:],
                grids or [None] * len(heads),
                strict=True,
            ):
                piece = (cols, lo, hi)
                if carry is not None and carry.aid == a:
                    carry.pieces.append(piece)
                    carry.affine = None  # stitched: its grid is looked at whole
                    # Refused as it grows: an array over the bound is never held whole.
                    self._bound(a, carry.start, sum(h - b for _, b, h in carry.pieces), limit)
                    continue
                if carry is not None:
                    if lo in late:
                        self._check_handover(carry, a, ts, lo, hi, start)
                    yield carry
                if a not in known:
                    raise stray_values_row(self.place, a, start + lo + 1)
                self._bound(a, start + lo, hi - lo, limit)
                seen_last = a
                # The batch's last array may go on in the next batch (then reset above).
                carry = _Run(a, start + lo, [piece], grid)
            start += n
            del batch, cols
        if carry is not None:
            yield carry

    def _batches(
        self, pf: Any, names: list[str]
    ) -> Iterator[tuple[tuple[np.ndarray, np.ndarray, int] | None, Any]]:
        """The values file's row groups in order, as ``(None, batch)`` for each non-empty
        batch of ``names``; a group of more than one batch is announced first by ``(its
        array_id runs or None, None)`` (:meth:`_group_runs`). Only pyarrow work (and the
        numpy of the runs), so that :func:`_read_ahead` may run it in its thread."""
        if isinstance(pf, PartsFile):
            # Parts merged by array_id: each batch a whole number of arrays.
            for batch in pf.iter_batches(batch_size=_BATCH_ROWS, columns=names):
                yield None, batch
            return
        for i in range(pf.num_row_groups):
            rows = pf.metadata.row_group(i).num_rows
            if rows == 0:
                continue
            if self._has_aid and rows > _BATCH_ROWS:
                yield self._group_runs(pf, i), None
            for batch in pf.iter_batches(
                batch_size=_BATCH_ROWS, row_groups=[i], columns=names, use_threads=False
            ):
                if batch.num_rows:
                    yield None, batch

    def _group_runs(self, pf: Any, i: int) -> tuple[np.ndarray, np.ndarray, int] | None:
        """Row group ``i``'s runs of ``array_id`` (their ids, and the rows they start at,
        from the group's first) and its rows, read a batch at a time; None when the column
        is not a plain integer one (the batches refuse it, naming the row)."""
        heads: list[np.ndarray] = []
        rows: list[np.ndarray] = []
        last = None
        offset = 0
        for batch in pf.iter_batches(
            batch_size=_BATCH_ROWS, row_groups=[i], columns=["array_id"], use_threads=False
        ):
            col = batch.column(0)
            if col.null_count or not self.pa.types.is_integer(col.type):
                return None
            aid = to_numpy(self.pa, col)
            if aid.size == 0:
                continue
            new = np.concatenate([[last is None or aid[0] != last], aid[1:] != aid[:-1]])
            at = np.flatnonzero(new)
            heads.append(aid[at])
            rows.append(offset + at)
            last = aid[-1]
            offset += aid.size
        if not heads:
            return None
        return np.concatenate(heads), np.concatenate(rows), offset

    def _check_runs(
        self,
        heads: np.ndarray,
        rows: list[int],
        seen_last: int,
        end: int,
        when: Callable[[int], str] | None = None,
    ) -> None:
        """Refuse a row group whose runs of ``array_id`` (their ids ``heads``, starting at
        file rows ``rows``, the last ending at ``end``) do not ascend from ``seen_last``;
        a run sitting among another array's rows (a row moved, or given another id) is
        named itself, with its first row's timestamp (``when(row)``) when known, rather
        than the array whose rows go on after it."""
        prev = seen_last
        ids = heads.tolist()
        for k, a in enumerate(ids):
            if a < prev or (a == prev and k > 0):
                before = None if seen_last == -(2**63) else seen_last
                stray = stray_run(ids, rows, end, k, before)
                if stray is not None:
                    text = stray_text(
                        stray,
                        known=stray[2] in self._arrays,
                        when=when(stray[0]) if when is not None else None,
                    )
                    raise InvalidParameterError(
                        f"{self.files['values']} {text} (partition {self.part.stem})",
                        table=self.files["values"],
                    )
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
                i = int(np.flatnonzero(null_mask(col))[0])
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
                out[name] = to_numpy(pa, col).astype(np.float64, copy=False)
            else:  # array_id, scenario
                if not pa.types.is_integer(col.type):
                    raise InvalidParameterError(
                        f"{file}: `{name}` is {col.type}, not an integer (partition "
                        f"{self.part.stem}); write it as int64",
                        table=file,
                    )
                raw = to_numpy(pa, col)
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
        # A column Spark's schema declares an instant is UTC, however it is stored.
        spark_utc = t.tz is None and name in spark_instants(self.part.footers.get("values", {}))
        if t.tz is None and not zoneless and not spark_utc:
            raise InvalidParameterError(
                f"{file}: `{name}` is naive (no zone), but the series rows' time_reference is "
                f'"{self._row_tr}" (partition {self.part.stem}); a naive column is a zoneless '
                "series' wall clock: write the column zoned (UTC) and import again",
                table=file,
            )
        if (t.tz is not None or spark_utc) and zoneless:
            raise InvalidParameterError(
                f"{file}: `{name}` is zoned ({t.tz or 'a Spark timestamp, UTC'}), but the "
                "series rows say zoneless "
                f"(partition {self.part.stem}); a zoneless series' wall clock is written "
                "naive: drop the zone from the column (in Spark: cast it to timestamp_ntz) "
                "and import again",
                table=file,
            )
        raw = to_numpy(pa, col)
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
        while is_list(pa.types, arr.type):
            if arr.null_count:
                i = int(np.flatnonzero(null_mask(arr))[0])
                raise self._null_value(start, i, n, len(arr))
            if pa.types.is_fixed_size_list(arr.type):
                size = arr.type.list_size
            else:
                lengths = list_lengths(pa, arr)
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
            arr = list_values(pa, arr)
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
            i = int(np.flatnonzero(null_mask(arr))[0])
            raise self._null_value(start, i, n, len(arr), floating=pa.types.is_floating(want))
        flat = to_numpy(pa, arr)
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
        lo = run.start
        values = run.column("value")
        assert values is not None
        n = len(values)
        rowids = lambda: list(range(lo + 1, lo + n + 1))  # noqa: E731
        if spec is not None and run.affine is not None:
            # On a grid found for its whole batch: the core needs the values alone (it
            # spells the instants out from the grid, should it ever need them).
            return Group(key, [run.aid], n, values, affine=run.affine, rowids=rowids)
        lane = run.column("percentile")
        group = Group(
            key,
            [run.aid],
            n,
            values,
            run.column("timestamp"),
            run.column("issue_time"),
            lane if lane is not None else run.column("scenario"),
            rowids=rowids,
        )
        if spec is not None:
            group.affine = affine_of(self.type, group, spec)
        return group


def _dictionary_cells(col: Any) -> list[Any]:
    """A dictionary column's cells: one Python object per dictionary entry, shared by
    the rows that use it, made only for the stretch of entries this batch uses.

    A column chunk whose dictionary pages fell back to plain ones (distinct texts, as
    ``data_hash``) is read with a dictionary that grows over the row group's batches,
    every text seen so far: spelling it out whole each batch made Python strings for
    the whole group every batch (on an arrays file of 100,000 rows in one group, 1.2
    million of them in batches of 4,096, and +84 MB of resident memory where 10,000
    rows took +20). The entries a batch uses are the newest ones or a few shared ones.
    """
    indices = col.indices
    if indices.null_count or len(indices) == 0:
        words = col.dictionary.to_pylist()
        return [None if i is None else words[i] for i in indices.to_pylist()]
    # From the buffer: ``to_numpy`` imports pandas on its first call (its memory too).
    width = indices.type.bit_width // 8
    at = np.frombuffer(
        indices.buffers()[1],
        dtype=f"<i{width}",
        count=len(indices),
        offset=indices.offset * width,
    )
    lo, hi = int(at.min()), int(at.max())
    words = col.dictionary.slice(lo, hi - lo + 1).to_pylist()
    return list(map(words.__getitem__, (at - lo).tolist()))


def _read_ahead(items: Iterator[Any]) -> Iterator[Any]:
    """``items`` produced one ahead in the pipeline's worker thread: pyarrow reads and
    decodes the next batch (without the GIL) while the caller cuts and builds this one's
    arrays, on the other core. An error reading one is raised when the caller reaches
    it, as reading in line would; leaving early stops the worker."""
    with Prefetch(items, depth=1) as ahead:
        yield from ahead
