"""The ``value`` column of the interchange tables: numpy rows to SQLite cells and back.

An exported partition stores one value per table row. A scalar element (per-step shape
``()``) goes into a ``REAL`` or ``INTEGER`` cell; anything shaped goes into a ``TEXT`` cell
holding compact JSON, nested row-major (``[[0.0,1.0],[2.0,3.0]]``). This module turns a
block of ``N`` rows ``[N, *E]`` into ``N`` cells and ``N`` cells back into ``[N, *E]``.

Both directions run on millions of rows, so each has a fast path built from whole-block
numpy and orjson calls and a per-cell path that is only taken when the fast path sees
something it cannot vouch for. The per-cell path is the definition of what is accepted;
the fast paths must give bit-identical results or step aside, never guess.

Cell rules (peer contract §5, §7, §14.4):

* Floats in JSON use the shortest round-trip text with a fraction or an exponent
  (``1.0``, ``0.00001``, ``1e+16``, ``1e-6``). f32 is widened to f64 first, so ``0.1f``
  is written ``0.10000000149011612``. NaN is ``null``, the infinities are the strings
  ``"Infinity"`` and ``"-Infinity"``, -0.0 is ``-0.0``. Booleans are ``1``/``0``.
* A scalar NaN is bound as a double; SQLite stores it as NULL, which reads back as NaN.
* A u64 above ``2**63 - 1`` has no SQLite INTEGER, and is refused.
* On the way in, the shape of the result comes from the cells themselves (a REAL, an
  INTEGER or a NULL has shape ``[]``); every cell of one array must agree.

Refusals use the reference's own words (``a `value` cell is not JSON: …``, with the
backticks), minus the series: the importer adds which array it was reading. Only the
parser's detail after "not JSON:" differs, as it comes from orjson, not serde_json.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import orjson

from infrastore_sqlite.core.gcpause import gc_paused
from infrastore_sqlite.errors import InvalidParameterError

__all__ = [
    "DTYPES",
    "decode_cells",
    "decode_json_cells",
    "decode_scalar_cells",
    "encode_json_cells",
    "encode_scalar_cells",
    "has_negative_zero",
    "max_cell_bytes",
    "oversized_cell",
    "sql_value_type",
]

#: The store's physical dtypes, by their catalog spelling.
DTYPES: dict[str, np.dtype] = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "i64": np.dtype(np.int64),
    "i32": np.dtype(np.int32),
    "u64": np.dtype(np.uint64),
    "bool": np.dtype(np.bool_),
    "i16": np.dtype(np.int16),
    "i8": np.dtype(np.int8),
    "u32": np.dtype(np.uint32),
    "u16": np.dtype(np.uint16),
    "u8": np.dtype(np.uint8),
}
_NAMES: dict[np.dtype, str] = {dt: name for name, dt in DTYPES.items()}

_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1
# The closed range each integer dtype holds (bool is handled on its own).
_INT_RANGE: dict[str, tuple[int, int]] = {
    name: (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
    for name, dt in DTYPES.items()
    if dt.kind in "iu"
}
_INF = math.inf
_NAN = math.nan

# Element shapes deeper than this cannot become a numpy array once the row axis is added
# (numpy allows 64 dimensions); nothing the store writes comes near it.
_MAX_ELEMENT_DIMS = 32

_NOT_JSON = "a `value` cell is not JSON: {}"
_BLOB = "a `value` cell is a blob; the layout writes numbers or JSON text"
_HOLDS = "a `value` cell holds {}, not a number"
_RAGGED = "a `value` cell is a ragged JSON array"
_SHAPES = "two `value` cells of one array have different shapes ({} and {})"
_NOT_INT = "a {} array holds a value that is not an integer"
_NO_FIT = "{} does not fit a {}"
_NOT_BOOL = "a bool array holds a value other than 0 or 1"
_U64 = "u64 value {} does not fit a SQLite INTEGER"
_OVERSIZED = (
    "{} is {}longer than the {} bytes {} can need; write the cell again as one element "
    "(JSON numbers only) and import again"
)

# The longest number the layout writes is 24 characters (-2.2250738585072014e-308); the
# bound per leaf leaves room for the spaces and line breaks a hand-written JSON text may
# hold, and the slack for the brackets of any nesting. It only has to stop a cell that
# no element could need before it is fetched and parsed, never a real one.
_CELL_BYTES_PER_LEAF = 64
_CELL_BYTES_SLACK = 4096


# ---------------------------------------------------------------------------------------
# dtypes


def _dtype_name(dtype: Any) -> str:
    """The catalog spelling of a numpy dtype, refusing the ones the store does not hold."""
    dt = np.dtype(dtype)
    name = _NAMES.get(dt.newbyteorder("=") if not dt.isnative else dt)
    if name is None:
        raise InvalidParameterError(
            f"numpy dtype {dt} is not a store dtype; use one of {', '.join(DTYPES)}"
        )
    return name


def _check_dtype(dtype: str) -> np.dtype:
    try:
        return DTYPES[dtype]
    except (KeyError, TypeError):
        raise InvalidParameterError(
            f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}"
        ) from None


def _native(rows: np.ndarray) -> np.ndarray:
    # The arithmetic below and orjson both want native byte order.
    return rows if rows.dtype.isnative else rows.astype(rows.dtype.newbyteorder("="))


def _widen_f64(rows: np.ndarray) -> np.ndarray:
    # Exact for f32; numpy warns when the NaN it widens is a signalling one, which is no
    # news here: every NaN becomes NULL or null whatever its payload.
    with np.errstate(invalid="ignore"):
        return np.ascontiguousarray(rows, dtype=np.float64)


def sql_value_type(dtype: str, element_shape: tuple[int, ...]) -> str:
    """The declared type of the ``value`` column for one partition.

    Parameters
    ----------
    dtype
        The physical dtype (``'f64'``, ``'u8'``, ``'bool'`` ...).
    element_shape
        The per-step shape; ``()`` for a scalar series.

    Returns
    -------
    str
        ``'REAL'`` for a scalar float, ``'INTEGER'`` for a scalar integer or bool,
        ``'TEXT'`` (JSON) for anything with a per-step shape.
    """
    dt = _check_dtype(dtype)
    if tuple(element_shape):
        return "TEXT"
    return "REAL" if dt.kind == "f" else "INTEGER"


# ---------------------------------------------------------------------------------------
# export


def _refuse_big_u64(rows: np.ndarray) -> None:
    """Refuse a u64 block holding a value above i64 max, naming the first one."""
    if rows.size == 0:
        return
    flat = rows.reshape(-1)
    if int(flat.max()) <= _I64_MAX:
        return
    value = int(flat[int(np.argmax(flat > np.uint64(_I64_MAX)))])
    raise InvalidParameterError(_U64.format(value), key=value)


def encode_scalar_cells(rows: np.ndarray) -> np.ndarray:
    """The ``value`` cells of ``N`` scalar rows, ready for ``apsw.carray``.

    Parameters
    ----------
    rows
        Shape ``[N]``, one of the store dtypes.

    Returns
    -------
    numpy.ndarray
        Contiguous float64 for float rows (f32 widened exactly; NaN stays NaN, which
        SQLite stores as NULL), contiguous int64 for integer and bool rows. It may share
        memory with ``rows``.

    Raises
    ------
    InvalidParameterError
        A u64 value above ``2**63 - 1`` (the first one is named, and is the error's
        ``key``); rows that are not one-dimensional; a dtype the store does not hold.

    Notes
    -----
    A -0.0 is passed through: SQLite would read it back as +0.0, so the exporter refuses
    such series up front with :func:`has_negative_zero`.
    """
    rows = np.asarray(rows)
    name = _dtype_name(rows.dtype)
    if rows.ndim != 1:
        raise InvalidParameterError(
            f"scalar cells take rows of shape [N], got {list(rows.shape)}; "
            "rows with a per-step shape are written as JSON text (encode_json_cells)"
        )
    if name in ("f64", "f32"):
        return _widen_f64(rows)
    rows = _native(rows)
    if name == "u64":
        _refuse_big_u64(rows)
    return np.ascontiguousarray(rows, dtype=np.int64)


def has_negative_zero(rows: np.ndarray) -> bool:
    """Whether float rows hold a -0.0 (a SQLite REAL cannot keep its sign).

    Parameters
    ----------
    rows
        Any shape; integer and bool rows never hold one.

    Returns
    -------
    bool
    """
    rows = np.asarray(rows)
    if rows.dtype.kind != "f" or rows.size == 0:
        return False
    rows = np.ascontiguousarray(_native(rows))
    # Comparing the raw bits finds -0.0 in one pass, where `x == 0` alone cannot see it.
    if rows.dtype.itemsize == 8:
        return bool((rows.view(np.uint64) == np.uint64(1 << 63)).any())
    if rows.dtype.itemsize == 4:
        return bool((rows.view(np.uint32) == np.uint32(1 << 31)).any())
    return bool((np.signbit(rows) & (rows == 0)).any())


def _jsonable_floats(value: Any) -> Any:
    """A nested list of Python floats with the infinities spelled as JSON strings."""
    if type(value) is list:
        return [_jsonable_floats(v) for v in value]
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return value  # NaN: orjson writes null


def _encode_row_slow(row: np.ndarray) -> str:
    # Python floats go through the same orjson float writer as the numpy fast path.
    return orjson.dumps(_jsonable_floats(row.tolist())).decode("ascii")


def encode_json_cells(rows: np.ndarray) -> list[str]:
    """The JSON ``value`` cells of ``N`` shaped rows.

    Parameters
    ----------
    rows
        Shape ``[N, *E]`` with ``E`` non-empty, one of the store dtypes.

    Returns
    -------
    list of str
        One compact JSON text per row, nested row-major over ``E``.

    Raises
    ------
    InvalidParameterError
        A u64 value above ``2**63 - 1`` (the first one in row-major order is named, and
        is the error's ``key``); rows without a per-step shape; a dtype the store does
        not hold.
    """
    rows = np.asarray(rows)
    name = _dtype_name(rows.dtype)
    if rows.ndim < 2:
        raise InvalidParameterError(
            f"JSON cells take rows of shape [N, *E] with a per-step shape E, got "
            f"{list(rows.shape)}; scalar rows are written as numbers (encode_scalar_cells)"
        )
    n = rows.shape[0]
    if n == 0:
        return []
    rows = _native(rows)
    is_float = name in ("f64", "f32")
    if is_float:
        # orjson writes an f32 as its own shortest text (0.1); the layout wants the
        # f64 widening (0.10000000149011612).
        arr = _widen_f64(rows)
    elif name == "bool":
        # orjson writes numpy bools as true/false; the layout wants 1/0.
        arr = np.ascontiguousarray(rows, dtype=np.uint8)
    else:
        if name == "u64":
            _refuse_big_u64(rows)
        arr = np.ascontiguousarray(rows)

    if 0 in rows.shape[1:]:
        # orjson drops the inner axes of an empty row, so the split below would not find
        # the row boundaries. The store never holds such rows; stay correct anyway.
        return [_encode_row_slow(row) for row in arr]

    # One orjson call for the whole block, then cut the text at the row boundaries.
    # Inside a row of k axes, brackets run at most k-1 deep between two values, so
    # "]]..],[[.." with k of each appears only between rows.
    text = orjson.dumps(arr, option=orjson.OPT_SERIALIZE_NUMPY).decode("ascii")
    k = rows.ndim - 1
    if n == 1:
        cells = [text[1:-1]]
    else:
        cells = text[1:-1].replace("]" * k + "," + "[" * k, "]" * k + "\n" + "[" * k).split("\n")
    if len(cells) != n:  # pragma: no cover - the split cannot miss if orjson is orjson
        cells = [_encode_row_slow(row) for row in arr]

    if is_float:
        # orjson writes an infinity as null, which would read back as NaN; redo those rows.
        bad = np.isinf(arr.reshape(n, -1)).any(axis=1)
        if bad.any():
            for i in np.flatnonzero(bad).tolist():
                cells[i] = _encode_row_slow(arr[i])
    return cells


# ---------------------------------------------------------------------------------------
# import: per-cell rules (the definition of what is accepted)

# serde_json, which the reference reads with, takes the JSON token -0 as the float -0.0;
# orjson and the json module take it as the integer 0. Where a cell holds the token,
# it is re-read with a hook that keeps the sign.
_BARE_NEG_ZERO = re.compile(r"-0(?![0-9.eE])")
# The string that separates the cells when the JSON fast path parses them as one text.
_MARKER = '"|"'
_MARKER_SEP = "," + _MARKER + ","


def _serde_int(text: str) -> int | float:
    if text == "-0":
        return -0.0
    value = int(text)
    # orjson (like serde_json) reads an integer outside i64/u64 as a float.
    if not _I64_MIN <= value < 2**64:
        return float(text)
    return value


def _parse_json(cell: str) -> Any:
    try:
        value = orjson.loads(cell)
    except orjson.JSONDecodeError as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if exc.lineno else ""
        raise InvalidParameterError(_NOT_JSON.format(f"{exc.msg}{where}")) from None
    if "-0" in cell and _BARE_NEG_ZERO.search(cell):
        # orjson has already vouched for the text, so the json module reads it the same
        # way except for the -0 token (NaN/Infinity literals were refused above).
        value = json.loads(cell, parse_int=_serde_int)
    return value


def _holds(value: Any) -> InvalidParameterError:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    return InvalidParameterError(_HOLDS.format(text))


# A cell is read in two passes, in the reference's order: first its JSON is walked for
# shape and numbers (a stray string or object, a ragged array), then its numbers are
# converted to the dtype (not an integer, out of range, not 0/1). So in an i32 array
# '[1.5,"abc"]' reports the string, and '[3000000000,1.5]' the range.


def _json_number(v: Any) -> Any:
    """Pass one: a JSON leaf as a number (or None/bool), the two infinities included."""
    t = type(v)
    if t is float or t is int or t is bool or v is None:
        return v
    if t is str:
        if v == "Infinity":
            return _INF
        if v == "-Infinity":
            return -_INF
    raise _holds(v)


def _float_converters() -> tuple[Callable[[Any], float], Callable[[float], float]]:
    def from_json(v: Any) -> float:
        t = type(v)
        if t is float:
            return v
        if v is None:
            return _NAN
        if t is bool:
            return 1.0 if v else 0.0
        return float(v)

    def from_real(x: float) -> float:
        return x

    return from_json, from_real


def _int_converters(name: str) -> tuple[Callable[[Any], int], Callable[[float], int]]:
    lo, hi = _INT_RANGE[name]
    not_int = _NOT_INT.format(name)

    def fit(v: int) -> int:
        if lo <= v <= hi:
            return v
        raise InvalidParameterError(_NO_FIT.format(v, name))

    def from_json(v: Any) -> int:
        t = type(v)
        if t is int:
            # A JSON integer beyond i64 is not one the reader takes as an integer.
            if _I64_MIN <= v <= _I64_MAX:
                return fit(v)
            raise InvalidParameterError(not_int)
        if t is bool:
            return fit(int(v))
        # null, a JSON float (even 2.0) and the infinities
        raise InvalidParameterError(not_int)

    def from_real(x: float) -> int:
        # A REAL cell is taken when it is a whole number that an i64 holds.
        if math.isfinite(x) and x.is_integer() and -(2.0**63) <= x < 2.0**63:
            return fit(int(x))
        raise InvalidParameterError(not_int)

    return from_json, from_real


def _bool_converters() -> tuple[Callable[[Any], bool], Callable[[float], bool]]:
    def from_json(v: Any) -> bool:
        t = type(v)
        if t is bool:
            return v
        if t is int and (v == 0 or v == 1):
            return v == 1
        raise InvalidParameterError(_NOT_BOOL)

    def from_real(x: float) -> bool:
        if x == 0.0:
            return False
        if x == 1.0:
            return True
        raise InvalidParameterError(_NOT_BOOL)

    return from_json, from_real


def _converters(name: str) -> tuple[Callable[[Any], Any], Callable[[float], Any]]:
    """Pass two: ``(from_json, from_real)`` for one dtype.

    ``from_json`` takes what :func:`_json_number` gives (an INTEGER cell too);
    ``from_real`` takes a REAL cell, which an integer dtype accepts when it is whole.
    """
    if name in ("f64", "f32"):
        return _float_converters()
    if name == "bool":
        return _bool_converters()
    return _int_converters(name)


def _json_shape(value: Any) -> tuple[int, ...]:
    """The shape a JSON value claims, read down its first elements."""
    shape = []
    while type(value) is list:
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return tuple(shape)


def _fill(value: Any, shape: tuple[int, ...], depth: int, out: list, conv: Callable) -> None:
    """Append the leaves of ``value`` to ``out`` row-major, checking it is not ragged.

    Leaves are converted as they are met, so the first bad leaf in reading order is the
    one reported, and a ragged sub-array is reported when it is reached.
    """
    if depth == len(shape):
        if type(value) is list:
            raise InvalidParameterError(_RAGGED)
        out.append(conv(value))
        return
    if type(value) is not list or len(value) != shape[depth]:
        raise InvalidParameterError(_RAGGED)
    if depth + 1 == len(shape):
        for v in value:
            if type(v) is list:
                raise InvalidParameterError(_RAGGED)
            out.append(conv(v))
    else:
        for v in value:
            _fill(v, shape, depth + 1, out, conv)


def _fmt_shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _from_flat(flat: list, name: str, n: int, shape: tuple[int, ...]) -> np.ndarray:
    if name in ("f64", "f32"):
        out = np.array(flat, dtype=np.float64)
        if name == "f32":
            out = _narrow_f32(out)
    elif name == "bool":
        out = np.array(flat, dtype=np.bool_)
    else:
        # Every value has passed its range check, so the cast is exact.
        out = np.array(flat, dtype=np.int64).astype(DTYPES[name])
    return out.reshape((n, *shape))


def _narrow_f32(values: np.ndarray) -> np.ndarray:
    # Round to nearest like numpy's cast; a value beyond f32 becomes an infinity,
    # which is what it would have become in the store.
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(np.float32)


def _decode_slow(cells: Sequence, name: str) -> np.ndarray:
    """Decode cell by cell, reporting the first offending cell in order."""
    from_json, from_real = _converters(name)
    flat: list = []
    first: tuple[int, ...] | None = None
    for cell in cells:
        if type(cell) is str:
            value = _parse_json(cell)
            shape = _json_shape(value)
            if len(shape) > _MAX_ELEMENT_DIMS:
                raise InvalidParameterError(
                    f"a `value` cell nests JSON arrays {len(shape)} deep; "
                    f"an element has at most {_MAX_ELEMENT_DIMS} dimensions"
                )
            numbers: list = []
            _fill(value, shape, 0, numbers, _json_number)
            flat.extend(map(from_json, numbers))
        elif cell is None:
            shape = ()
            flat.append(from_json(None))
        elif isinstance(cell, (float, np.floating)):
            shape = ()
            flat.append(from_real(float(cell)))
        elif isinstance(cell, (int, np.integer)):
            # A SQLite INTEGER: read like a JSON integer (it always fits an i64).
            shape = ()
            flat.append(from_json(int(cell)))
        elif isinstance(cell, (bytes, bytearray, memoryview)):
            raise InvalidParameterError(_BLOB)
        else:
            raise InvalidParameterError(
                f"a `value` cell is a Python {type(cell).__name__}; "
                "cells are read from SQLite as numbers, text or NULL"
            )
        if first is None:
            first = shape
        elif shape != first:
            raise InvalidParameterError(_SHAPES.format(_fmt_shape(first), _fmt_shape(shape)))
    assert first is not None
    return _from_flat(flat, name, len(cells), first)


# ---------------------------------------------------------------------------------------
# import: fast paths (whole-block calls; return None to hand over to _decode_slow)

_NUMBER_TYPES = frozenset({float, int, type(None)})


def _scalar_fast(cells: Sequence, name: str) -> np.ndarray | None:
    """Numbers as apsw hands them back: REAL/NULL for floats, INTEGER for the rest."""
    n = len(cells)
    if name in ("f64", "f32"):
        # numpy would also turn the *text* '5.5' or 'nan' into a float, so the types are
        # checked first; None becomes NaN, as a NULL cell should.
        if not set(map(type, cells)) <= _NUMBER_TYPES:
            return None
        out = np.fromiter(cells, dtype=np.float64, count=n)
        return _narrow_f32(out) if name == "f32" else out
    # Inference yields int64 only when every cell is a Python int that fits an i64;
    # a REAL, a NULL or text gives another dtype and goes to the per-cell path.
    try:
        arr = np.array(cells)
    except (TypeError, ValueError, OverflowError):
        return None
    if arr.dtype != np.int64 or arr.shape != (n,):
        return None
    if name == "bool":
        if not ((arr == 0) | (arr == 1)).all():
            raise InvalidParameterError(_NOT_BOOL)
        return arr.astype(np.bool_)
    lo, hi = _INT_RANGE[name]
    if n and (int(arr.min()) < lo or int(arr.max()) > hi):
        bad = int(arr[np.flatnonzero((arr < lo) | (arr > hi))[0]])
        raise InvalidParameterError(_NO_FIT.format(bad, name))
    return arr.astype(DTYPES[name])


def _flatten(rows: list, shape: tuple[int, ...]) -> Iterator[Any] | None:
    """The leaves of ``rows`` (one nested list per cell) row-major, if every cell has ``shape``.

    Each nesting level is checked by its set of lengths: ``len`` of a number, a bool or
    None raises, and a string (only the two infinities get this far) is taken apart into
    characters that fail the float conversion of the leaves. A list at leaf depth fails
    that conversion too. So a cell of another shape or nesting never yields a wrong array.
    """
    level: Any = rows
    try:
        for i, dim in enumerate(shape):
            if set(map(len, level)) != {dim}:
                return None
            level = itertools.chain.from_iterable(level)
            if i + 1 < len(shape):
                level = list(level)
    except TypeError:
        return None
    return iter(level)


def _json_fast(cells: Sequence, name: str) -> np.ndarray | None:
    """JSON cells as the layout writes them: one orjson call for the whole array.

    The collector stays paused until the parsed lists are freed again: re-enabled while
    they live, its next young-generation pass would walk every one of them.
    """
    with gc_paused():
        return _json_fast_parse(cells, name)


def _json_fast_parse(cells: Sequence, name: str) -> np.ndarray | None:
    """The body of :func:`_json_fast`.

    Steps aside (returns None) for anything it cannot vouch for: a cell that is not
    text, a string other than ``"Infinity"``/``"-Infinity"``, an escape, an object, the
    ``-0`` token, broken JSON, cells of different shapes, and values an integer dtype
    does not take as they are. The per-cell path then finds the first bad cell.
    """
    n = len(cells)
    # The cells are parsed as one JSON array with the string "|" between each two of
    # them. Without that marker a cell could borrow brackets from its neighbour
    # ('[1,2],[3' then '4]' reads as two good rows). With it, and with no other string
    # than the markers and the two infinities, every marker must land at the top level
    # between two whole cells, so each cell is exactly one JSON value.
    try:
        text = "[" + _MARKER_SEP.join(cells) + "]"  # TypeError when a cell is not text
    except TypeError:
        return None
    if "\\" in text or "{" in text:
        return None  # an escape or an object: the per-cell path judges those
    quotes = text.count('"')
    if quotes != 2 * (n - 1):
        markers = text.count(_MARKER)
        infinities = text.count('"Infinity"') + text.count('"-Infinity"')
        if markers != n - 1 or quotes != 2 * (markers + infinities):
            return None  # a string that is neither a marker nor an infinity
    # (Exactly 2 * (n - 1) quotes are the markers' own: the cells hold no string.)
    if "-0" in text and _BARE_NEG_ZERO.search(text):
        return None  # orjson reads the -0 token as the integer 0; see _serde_int
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if type(parsed) is not list or len(parsed) != 2 * n - 1:
        return None
    if n > 1 and parsed[1::2].count("|") != n - 1:
        return None
    rows = parsed[0::2]
    del parsed
    shape = _json_shape(rows[0])
    if not shape or 0 in shape or len(shape) > _MAX_ELEMENT_DIMS:
        return None
    leaves = _flatten(rows, shape)
    if leaves is None:
        return None
    count = n * math.prod(shape)

    if name in ("f64", "f32"):
        # float() of each leaf: None is NaN, true/false are 1/0, the two strings are the
        # infinities; a list (a cell nested deeper than the first) raises.
        try:
            out = np.fromiter(leaves, dtype=np.float64, count=count)
        except (TypeError, ValueError):
            return None
        if name == "f32":
            out = _narrow_f32(out)
        return out.reshape((n, *shape))

    # Integers must arrive exactly: numpy's inference gives int64 only when every leaf
    # is an int (or bool) an i64 holds; a float, a null, a string or a big integer gives
    # another dtype. (numpy's cast from a float leaf would truncate it silently.)
    try:
        arr = np.array(list(leaves))
    except (TypeError, ValueError, OverflowError):
        return None
    if arr.shape != (count,):
        return None
    if name == "bool":
        if arr.dtype == np.bool_:
            return arr.reshape((n, *shape))
        if arr.dtype != np.int64 or not ((arr == 0) | (arr == 1)).all():
            return None
        return arr.astype(np.bool_).reshape((n, *shape))
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int64)
    if arr.dtype != np.int64:
        return None
    lo, hi = _INT_RANGE[name]
    if int(arr.min()) < lo or int(arr.max()) > hi:
        return None
    return arr.astype(DTYPES[name]).reshape((n, *shape))


# ---------------------------------------------------------------------------------------
# import: public entry points


def max_cell_bytes(element_shape: Sequence[int]) -> int:
    """The largest ``value`` cell, in bytes, that one element of ``element_shape`` can need.

    Parameters
    ----------
    element_shape
        The per-step shape ``E`` (``()`` for a scalar; for a composite, the row width the
        partition pads to).

    Returns
    -------
    int
        A generous bound: every number at its longest with room for whitespace. The
        reader refuses a bigger cell before fetching it, and :func:`decode_cells` before
        parsing it, so a hostile cell of gigabytes costs no memory.
    """
    return _CELL_BYTES_PER_LEAF * math.prod(int(d) for d in element_shape) + _CELL_BYTES_SLACK


def oversized_cell(
    size: int | None, element_shape: Sequence[int], *, what: str = "a `value` cell"
) -> InvalidParameterError:
    """The refusal of a cell of ``size`` bytes, too big for an element of ``element_shape``.

    Parameters
    ----------
    size
        The cell's length in bytes; None when it is not known (SQLite refused to read it,
        and measuring it would mean reading it).
    element_shape
        The per-step shape it should hold.
    what
        How the message starts, naming the cell.

    Returns
    -------
    InvalidParameterError
        To raise; the message gives the size, the bound and the shape.
    """
    shape = tuple(int(d) for d in element_shape)
    element = f"an element of shape {_fmt_shape(shape)}" if shape else "a scalar element"
    length = f"{size} bytes long, " if size is not None else ""
    return InvalidParameterError(_OVERSIZED.format(what, length, max_cell_bytes(shape), element))


def _refuse_oversized(cells: Sequence, element_shape: Sequence[int]) -> None:
    """Refuse the first text or blob cell longer than ``element_shape`` can need.

    The length of a ``str`` counts characters, never more than its UTF-8 bytes, so a
    cell it lets pass can still be bigger in bytes only when it holds non-ASCII text,
    which the parser refuses for what it is.
    """
    limit = max_cell_bytes(element_shape)
    for cell in cells:
        if isinstance(cell, (str, bytes, bytearray, memoryview)) and len(cell) > limit:
            size = len(cell.encode("utf-8")) if isinstance(cell, str) else len(cell)
            raise oversized_cell(size, element_shape)


def decode_cells(
    cells: Sequence, dtype: str, *, element_shape: Sequence[int] | None = None
) -> np.ndarray:
    """Decode the ``value`` cells of one array, whatever they hold.

    Parameters
    ----------
    cells
        The cells of one array in row order, as apsw fetches them (float, int, str,
        bytes or None).
    dtype
        The physical dtype of the array (``'f64'`` ...).

    Returns
    -------
    numpy.ndarray
        ``[N, *E]`` in ``dtype``. ``E`` is read from the cells: ``()`` for REAL,
        INTEGER, NULL and JSON-scalar text cells, the nesting of the JSON arrays
        otherwise. The caller checks ``E`` against the element type. No cells give
        shape ``[0]``.
    element_shape
        The per-step shape the cells should hold, when the caller knows it: a text or
        blob cell longer than such an element can need (:func:`max_cell_bytes`) is then
        refused before anything is parsed. ``None`` checks no size.

    Raises
    ------
    InvalidParameterError
        The first offending cell in row order: not JSON, a blob, a string other than
        ``"Infinity"``/``"-Infinity"``, a ragged array, two cells of different shapes,
        a value that is not an integer or does not fit the dtype, a bool that is not
        0 or 1, a cell longer than ``element_shape`` can need. The message does not
        name the series; the caller adds it.
    """
    np_dtype = _check_dtype(dtype)
    name = dtype
    if len(cells) == 0:
        return np.empty((0,), dtype=np_dtype)
    if element_shape is not None:
        _refuse_oversized(cells, element_shape)
    out = _json_fast(cells, name) if type(cells[0]) is str else _scalar_fast(cells, name)
    return out if out is not None else _decode_slow(cells, name)


def decode_scalar_cells(cells: Sequence, dtype: str) -> np.ndarray:
    """Decode the cells of a REAL or INTEGER partition.

    Parameters
    ----------
    cells
        The cells of one array in row order, as apsw fetches them.
    dtype
        The physical dtype of the array.

    Returns
    -------
    numpy.ndarray
        ``[N]`` in ``dtype`` when the cells are numbers (NULL is NaN in a float array).
        Text cells are read as JSON, as the reference does; if every one holds an array
        of one shape, the result is ``[N, *E]``.

    Raises
    ------
    InvalidParameterError
        As :func:`decode_cells`.
    """
    np_dtype = _check_dtype(dtype)
    name = dtype
    if len(cells) == 0:
        return np.empty((0,), dtype=np_dtype)
    out = _scalar_fast(cells, name)
    return out if out is not None else _decode_slow(cells, name)


def decode_json_cells(cells: Sequence, dtype: str) -> np.ndarray:
    """Decode the cells of a TEXT (JSON) partition.

    Parameters
    ----------
    cells
        The cells of one array in row order, as apsw fetches them.
    dtype
        The physical dtype of the array.

    Returns
    -------
    numpy.ndarray
        ``[N, *E]`` in ``dtype``, ``E`` being the shape of the JSON arrays.

    Raises
    ------
    InvalidParameterError
        As :func:`decode_cells`; a NULL or number cell among JSON arrays is a cell of
        another shape (``[]``).
    """
    np_dtype = _check_dtype(dtype)
    name = dtype
    if len(cells) == 0:
        return np.empty((0,), dtype=np_dtype)
    out = _json_fast(cells, name)
    return out if out is not None else _decode_slow(cells, name)
