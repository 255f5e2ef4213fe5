"""The Parquet export's columns: numpy made Arrow without a copy where it can be.

Holds the key columns of arrays on one grid kept unexpanded (:class:`Repeated`, built
by :func:`bulk_coordinates`), numpy columns as Arrow arrays straight from their buffers
(:func:`arrow_array`, :func:`_python_array`, :func:`hex_array`), and the series and
arrays files' rows, a row group at a time. ``export.py`` lays out the values and writes
the files with these.
Imports ``interchange`` and below (the plan's blocks, the layout's schemas); pyarrow is
handed in as a module by the caller.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ...model import TimeSeriesType
from ..plan import (
    OWNER_CATEGORY_NAMES,
    SERIES_FIELDS,
    AxisColumn,
    HashColumn,
    PartitionPlan,
    RowBlock,
    SeriesText,
    series_fields,
)
from .layout import arrays_schema, series_column_names, series_schema

if TYPE_CHECKING:
    from ...store import Store

__all__ = [
    "Column",
    "Repeated",
    "_python_array",
    "arrays_groups",
    "arrow_array",
    "block_grid",
    "bulk_coordinates",
    "expanded",
    "hex_array",
    "repeat_into",
    "series_groups",
]


#: What fixes a block's coordinates up to its anchor: its affine grid without the
#: anchor, its rows, and its lanes' percentiles (the bytes of their float64 vector).
_GridOf = tuple[int, int, int, int, int, bytes | None]


def block_grid(block: RowBlock) -> _GridOf | None:
    a = block.affine
    if a is None:
        return None
    lanes = None if block.lane_values is None else block.lane_values.tobytes()
    return (a.interval_ms, a.resolution_ms, a.steps, a.lanes, block.n, lanes)


def bulk_coordinates(blocks: list[RowBlock], grid_of: _GridOf) -> dict[str, Column]:
    """The key columns of blocks sharing one grid but their anchors, as
    ``RowBlock.coordinates`` computes them for each (the same integer arithmetic)."""
    first = blocks[0]
    issue_off, stamp_off, lane = _offsets(*grid_of[:5])
    anchors = np.fromiter((b.affine.anchor for b in blocks), dtype=np.int64, count=len(blocks))  # type: ignore[union-attr]
    # timestamp = (anchor + j * interval) + h * resolution: int64 addition wraps the same
    # way in any order, so adding the precomputed offset gives the same bits.
    out: dict[str, Column] = {"timestamp": Repeated(stamp_off, anchors)}
    if first.tst.is_forecast:
        out["issue_time"] = Repeated(issue_off, anchors)
    if first.tst is TimeSeriesType.Probabilistic:
        assert first.lane_values is not None
        out["percentile"] = Repeated(first.lane_values[lane], count=len(blocks))
    elif first.tst is TimeSeriesType.Scenarios:
        out["scenario"] = Repeated(lane, count=len(blocks))
    return out


class Repeated:
    """A key column of arrays on one grid, kept unexpanded until its row group is
    written: each array's rows are ``base`` (one number per array, or none) plus the
    grid's ``pattern``. A queued or gathering group so holds its values and little else.
    """

    __slots__ = ("base", "count", "pattern")

    def __init__(self, pattern: np.ndarray, base: np.ndarray | None = None, count: int = 0) -> None:
        self.pattern = pattern
        self.base = base
        self.count = count if base is None else int(base.size)

    def arrays(self, start: int, end: int) -> Repeated:
        """The rows of arrays ``start`` to ``end`` (positions in this column)."""
        if self.base is None:
            return Repeated(self.pattern, count=end - start)
        return Repeated(self.pattern, self.base[start:end])

    @property
    def rows(self) -> int:
        return self.count * self.pattern.size

    def expand(self, out: np.ndarray | None = None) -> np.ndarray:
        """The column's rows: in ``out`` (``rows`` long) when given, else a new array."""
        if out is None:
            dtype = (
                self.pattern.dtype if self.base is None else np.result_type(self.base, self.pattern)
            )
            out = np.empty(self.rows, dtype=dtype)
        grid = out.reshape(self.count, self.pattern.size)
        if self.base is None:
            grid[:] = self.pattern
        else:
            np.add(self.base[:, None], self.pattern, out=grid)
        return out


#: A segment's column: its rows, or a key column kept unexpanded.
Column = np.ndarray | Repeated


def expanded(column: Column) -> np.ndarray:
    return column.expand() if isinstance(column, Repeated) else column


@functools.lru_cache(maxsize=64)
def _offsets(
    interval_ms: int, resolution_ms: int, steps: int, lanes: int, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(issue offset, timestamp offset, lane) of each of ``n`` rows on an affine grid,
    relative to its anchor (read-only: shared by every block on that grid)."""
    r = np.arange(n, dtype=np.int64)
    j = r // (steps * lanes)
    h = (r // lanes) % steps
    issue = j * interval_ms
    stamp = issue + h * resolution_ms
    lane = r % lanes
    for a in (issue, stamp, lane):
        a.flags.writeable = False
    return issue, stamp, lane


def repeat_into(out: np.ndarray, ids: np.ndarray, counts: np.ndarray) -> None:
    """``np.repeat(ids, counts)`` written into ``out`` (ascending ids, positive counts)."""
    if counts.size and (counts == counts[0]).all():  # one length: a 2-D broadcast
        out.reshape(ids.size, int(counts[0]))[:] = ids[:, None]
        return
    # Each array's first row carries the step from the previous id; a running sum then
    # spreads every id over its rows.
    out[:] = 0
    out[0] = ids[0]
    out[np.cumsum(counts[:-1])] = np.diff(ids)
    np.cumsum(out, out=out)


def arrow_array(pa: ModuleType, data: np.ndarray, type_: Any) -> Any:
    """A numpy column as an Arrow array of ``type_``: a primitive straight from its
    buffer, a cell shape as fixed-size lists over the row-major leaf buffer.

    Built from buffers rather than with ``pa.array``, which imports pandas on its first
    call (a third of a second, and its memory) only to ask whether this is a pandas
    object.
    """
    levels = []
    t = type_
    while pa.types.is_fixed_size_list(t):
        levels.append(t)
        t = t.value_type
    flat = data.reshape(-1)
    if pa.types.is_boolean(t):
        buffer = np.packbits(flat, bitorder="little")
    else:
        dtype = np.int64 if pa.types.is_timestamp(t) else t.to_pandas_dtype()
        buffer = np.ascontiguousarray(flat, dtype=np.dtype(dtype).newbyteorder("="))
    arr = pa.Array.from_buffers(t, flat.shape[0], [None, pa.py_buffer(buffer)])
    for level in reversed(levels):
        arr = pa.FixedSizeListArray.from_arrays(arr, type=level)
    return arr


def _python_array(pa: ModuleType, values: Sequence[Any], type_: Any) -> Any:
    """A column of Python values (the series and arrays files) as an Arrow array."""
    if pa.types.is_string(type_):
        n = len(values)
        text = "".join(values)
        if text.isascii():
            # Every character one byte: the lengths are the strings' own, and the whole
            # column encodes at once (no Python step per value).
            data = text.encode("ascii")
            lengths = np.fromiter(map(len, values), dtype=np.int64, count=n)
        else:
            encoded = [v.encode() for v in values]
            data = b"".join(encoded)
            lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if offsets[-1] < 2**31:
            offsets = offsets.astype(np.int32)
        else:
            type_ = pa.large_string()  # not reached by any real series file
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(np.frombuffer(data, np.uint8))]
        return pa.Array.from_buffers(type_, n, buffers)
    return arrow_array(pa, np.asarray(values, dtype=np.int64), type_)


def series_groups(
    pa: ModuleType, store: Store, pp: PartitionPlan, group_rows: int
) -> Iterator[Any]:
    """The series file's rows, one row per series by array id, then id: one table of up
    to ``group_rows`` rows at a time (a row group each), never the whole file.

    Built a chunk of series at a time, column by column: the plan's numbers go to Arrow
    straight from its vectors, and only the catalog's texts pass through Python (one
    value per series and column, dropped once the chunk is Arrow). At least one table
    is yielded (an empty one for no series), so the file always gets its schema.
    """
    key = pp.partition.key
    schema = series_schema(pa, key, pp.width)
    names = series_column_names(key.type)
    # Texts every series of the partition shares: the cell shape of this file, as the
    # footer spells it (the catalog's E elsewhere), the type and the time reference.
    shared = {
        "element_shape": schema.metadata[b"element_shape"].decode(),
        "time_series_type": key.type.name,
        "time_reference": key.reference_label,
    }
    # The plan's vectors, by column name.
    planned = {
        "array_id": pp.aids,
        "id": pp.ids,
        "owner_id": pp.owners,
        "initial_timestamp": pp.anchors,
        "length": pp.counts,
        "count": pp.counts,
    }
    texts = SeriesText(store)
    # A text column whose chunk holds one text throughout (a type, a unit, a shape: most
    # of them in most stores) is that text repeated: one Arrow array of it serves every
    # such chunk, so the table holds it once rather than once per series.
    constants = _Constants(pa)
    order = np.lexsort((pp.ids, pp.aids))
    chunk = max(1, min(_SERIES_CHUNK, group_rows))
    for first in range(0, max(order.size, 1), group_rows):
        batches = []
        for start in range(first, min(first + group_rows, order.size), chunk):
            take = order[start : min(start + chunk, first + group_rows)]
            ids = pp.ids[take]
            rows = series_fields(store, ids, len(ids))
            fields = dict(zip(SERIES_FIELDS, zip(*rows, strict=True), strict=True))
            arrays = []
            for name, field in zip(names, schema, strict=True):
                if name in planned:
                    arrays.append(arrow_array(pa, planned[name][take], field.type))
                elif name in shared:
                    arrays.append(constants.get(shared[name], len(take)))
                else:
                    column = _texts(name, fields, texts)
                    if len(set(column)) == 1:
                        arrays.append(constants.get(column[0], len(take)))
                    else:
                        arrays.append(_python_array(pa, column, field.type))
            batches.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
        yield pa.Table.from_batches(batches, schema=schema)
        del batches


# Series rows turned into Arrow columns at a time.
_SERIES_CHUNK = 4096


def _texts(name: str, fields: dict[str, tuple], texts: SeriesText) -> Sequence[str]:
    """The series column ``name`` of a chunk, from its catalog ``fields``, as the
    layout spells it (the catalog's NULL an empty text)."""
    if name == "owner_category":
        return list(map(OWNER_CATEGORY_NAMES.__getitem__, fields["owner_category"]))
    if name == "features":
        return list(map(texts.feature_text, fields["features_hash"], fields["features_json"]))
    column = fields[name]
    if None in column:
        return ["" if v is None else v for v in column]
    return column


class _Constants:
    """String columns of one text repeated, made once per (text, rows) and shared."""

    def __init__(self, pa: ModuleType) -> None:
        self.pa = pa
        self.made: dict[tuple[str, int], Any] = {}

    def get(self, text: str, n: int) -> Any:
        array = self.made.get((text, n))
        if array is None:
            if len(self.made) >= 64:  # many distinct constants: keep a bounded few
                self.made.clear()
            array = self.made[(text, n)] = _constant_array(self.pa, text, n)
        return array


def _constant_array(pa: ModuleType, text: str, n: int) -> Any:
    """A string column of ``n`` rows all ``text``, spelled out in numpy."""
    data = text.encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(data)
    return _string_array(pa, offsets, np.frombuffer(data * n, dtype=np.uint8))


def _string_array(pa: ModuleType, offsets: np.ndarray, data: np.ndarray) -> Any:
    """An Arrow string column from its int64 ``offsets`` (one more than its rows) and
    the UTF-8 bytes they cut ``data`` into: 32-bit offsets where they fit, as pyarrow
    makes a string column (a file of over 2 GiB of text would take 64-bit ones)."""
    if offsets[-1] < 2**31:
        offsets, type_ = offsets.astype(np.int32), pa.string()
    else:
        type_ = pa.large_string()  # not reached by any real series or arrays file
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(type_, len(offsets) - 1, buffers)


def arrays_groups(pa: ModuleType, pp: PartitionPlan, group_rows: int) -> Iterator[Any]:
    """The arrays file's rows, one row per distinct array by id (the plan's order): one
    table of up to ``group_rows`` rows at a time (a row group each; at least one)."""
    schema = arrays_schema(pa, pp.partition.key, pp.width)
    hashes, axes = pp.hashes, pp.axes
    n = len(hashes)
    for lo in range(0, max(n, 1), group_rows):
        hi = min(lo + group_rows, n)
        yield pa.Table.from_arrays(
            [
                arrow_array(pa, np.arange(lo + 1, hi + 1, dtype=np.int64), pa.int64()),
                hex_array(pa, _rows_of(hashes, lo, hi)),
                _axis_array(pa, _rows_of(axes, lo, hi)),
            ],
            schema=schema,
        )


def _rows_of(column: Sequence[Any], lo: int, hi: int) -> Sequence[Any]:
    """Rows ``lo`` to ``hi`` of a plan's hash or axis column, kept in its numpy form
    (a slice of a :class:`HashColumn` or :class:`AxisColumn` is a list of objects)."""
    if isinstance(column, HashColumn):
        return HashColumn(column.block[lo:hi])
    if isinstance(column, AxisColumn):
        return AxisColumn(column.codes[lo:hi], column.texts)
    return column[lo:hi]


_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def hex_array(pa: ModuleType, hashes: Sequence[bytes]) -> Any:
    """The lowercase hex texts of equally long ``hashes`` as one Arrow string array,
    spelled out in numpy (no Python string per hash; none of a ``bytes`` either, when
    the plan holds them as one block)."""
    n = len(hashes)
    if isinstance(hashes, HashColumn):
        block = hashes.block
        width = int(block.shape[1]) if block.ndim == 2 else 0
        raw = np.ascontiguousarray(block).reshape(-1)
    else:
        lengths = set(map(len, hashes))
        width = lengths.pop() if len(lengths) == 1 else 0
        raw = np.frombuffer(b"".join(hashes), dtype=np.uint8) if width else None
    if not width or raw is None:  # none, or not all one length
        return _python_array(pa, [h.hex() for h in hashes], pa.string())
    # The digits are written a slice of hashes at a time: few temporaries.
    digits = np.empty((raw.size, 2), dtype=np.uint8)
    step = _HEX_SLICE * width
    for at in range(0, raw.size, step):
        part = raw[at : at + step]
        np.take(_HEX_DIGITS, part >> 4, out=digits[at : at + step, 0])
        np.take(_HEX_DIGITS, part & 15, out=digits[at : at + step, 1])
    return _string_array(pa, np.arange(0, 2 * width * n + 1, 2 * width, dtype=np.int64), digits)


# Hashes spelled out in hex at a time.
_HEX_SLICE = 1 << 16


def _axis_array(pa: ModuleType, axes: Sequence[str]) -> Any:
    """The ``time_axis`` texts as one Arrow string array: spelled out in numpy from the
    plan's codes into its distinct texts, when it holds them so (no Python string per
    array, and no ``pyarrow.compute``, whose import alone costs megabytes)."""
    if not isinstance(axes, AxisColumn) or not len(axes):
        return _python_array(pa, axes, pa.string())
    encoded = [t.encode() for t in axes.texts]
    blob = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    starts = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    codes = np.asarray(axes.codes, dtype=np.int64)
    n = codes.size
    lengths = sizes[codes]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    # A slice of arrays at a time: each byte's place in ``blob`` is its text's start
    # there plus its place within the text (an index a byte, so kept to a slice).
    for at in range(0, n, _AXIS_SLICE):
        c = codes[at : at + _AXIS_SLICE]
        first, last = int(offsets[at]), int(offsets[at + c.size])
        shift = np.repeat(starts[c] - offsets[at : at + c.size], lengths[at : at + c.size])
        data[first:last] = blob[shift + np.arange(first, last, dtype=np.int64)]
    return _string_array(pa, offsets, data)


# Arrays whose axis texts are spelled out at a time.
_AXIS_SLICE = 8192
