"""The import side of the ``value`` cells, one cell at a time: the definition of what is
accepted.

Slow, and taken only when a fast path (:mod:`.fast`) steps aside; it reports the first
offending cell in row order, in the reference's words.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import orjson

from infrastore_sqlite.errors import InvalidParameterError

from .dtypes import (
    BLOB,
    DTYPES,
    HOLDS,
    I64_MAX,
    I64_MIN,
    INF,
    INT_RANGE,
    MAX_ELEMENT_DIMS,
    NAN,
    NO_FIT,
    NOT_BOOL,
    NOT_INT,
    NOT_JSON,
    NULL_IN_INT,
    RAGGED,
    SHAPES,
    a_dtype,
    fmt_shape,
    text_for_number,
)

# ---------------------------------------------------------------------------------------
# import: per-cell rules (the definition of what is accepted)

# serde_json, which the reference reads with, takes the JSON token -0 as the float -0.0;
# orjson and the json module take it as the integer 0. Where a cell holds the token,
# it is re-read with a hook that keeps the sign.
BARE_NEG_ZERO = re.compile(r"-0(?![0-9.eE])")


def _serde_int(text: str) -> int | float:
    if text == "-0":
        return -0.0
    value = int(text)
    # orjson (like serde_json) reads an integer outside i64/u64 as a float.
    if not I64_MIN <= value < 2**64:
        return float(text)
    return value


def _parse_json(cell: str) -> Any:
    try:
        value = orjson.loads(cell)
    except orjson.JSONDecodeError as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if exc.lineno else ""
        raise InvalidParameterError(NOT_JSON.format(f"{exc.msg}{where}")) from None
    if "-0" in cell and BARE_NEG_ZERO.search(cell):
        # orjson has already vouched for the text, so the json module reads it the same
        # way except for the -0 token (NaN/Infinity literals were refused above).
        value = json.loads(cell, parse_int=_serde_int)
    return value


def _holds(value: Any) -> InvalidParameterError:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    return InvalidParameterError(HOLDS.format(text))


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
            return INF
        if v == "-Infinity":
            return -INF
    raise _holds(v)


def _float_converters() -> tuple[Callable[[Any], float], Callable[[float], float]]:
    def from_json(v: Any) -> float:
        t = type(v)
        if t is float:
            return v
        if v is None:
            return NAN
        if t is bool:
            return 1.0 if v else 0.0
        return float(v)

    def from_real(x: float) -> float:
        return x

    return from_json, from_real


def _int_converters(name: str) -> tuple[Callable[[Any], int], Callable[[float], int]]:
    lo, hi = INT_RANGE[name]
    not_int = NOT_INT.format(a_dtype(name))

    def fit(v: int) -> int:
        if lo <= v <= hi:
            return v
        raise InvalidParameterError(NO_FIT.format(v, a_dtype(name)))

    def from_json(v: Any) -> int:
        t = type(v)
        if t is int:
            # A JSON integer beyond i64 is not one the reader takes as an integer.
            if I64_MIN <= v <= I64_MAX:
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
        raise InvalidParameterError(NOT_BOOL)

    def from_real(x: float) -> bool:
        if x == 0.0:
            return False
        if x == 1.0:
            return True
        raise InvalidParameterError(NOT_BOOL)

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


def json_shape(value: Any) -> tuple[int, ...]:
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
            raise InvalidParameterError(RAGGED)
        out.append(conv(value))
        return
    if type(value) is not list or len(value) != shape[depth]:
        raise InvalidParameterError(RAGGED)
    if depth + 1 == len(shape):
        for v in value:
            if type(v) is list:
                raise InvalidParameterError(RAGGED)
            out.append(conv(v))
    else:
        for v in value:
            _fill(v, shape, depth + 1, out, conv)


def _from_flat(flat: list, name: str, n: int, shape: tuple[int, ...]) -> np.ndarray:
    if name in ("f64", "f32"):
        out = np.array(flat, dtype=np.float64)
        if name == "f32":
            out = narrow_f32(out)
    elif name == "bool":
        out = np.array(flat, dtype=np.bool_)
    else:
        # Every value has passed its range check, so the cast is exact.
        out = np.array(flat, dtype=np.int64).astype(DTYPES[name])
    return out.reshape((n, *shape))


def narrow_f32(values: np.ndarray) -> np.ndarray:
    # Round to nearest like numpy's cast; a value beyond f32 becomes an infinity,
    # which is what it would have become in the store.
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(np.float32)


def decode_slow(cells: Sequence, name: str, *, scalar: bool = False) -> np.ndarray:
    """Decode cell by cell, reporting the first offending cell in order.

    With ``scalar`` (the caller knows the partition holds numbers) a text cell that is
    not JSON is named as text where a number belongs, not as broken JSON.
    """
    from_json, from_real = _converters(name)
    flat: list = []
    first: tuple[int, ...] | None = None
    for cell in cells:
        if type(cell) is str:
            try:
                value = _parse_json(cell)
            except InvalidParameterError:
                if scalar:
                    raise text_for_number(cell, name) from None
                raise
            shape = json_shape(value)
            if len(shape) > MAX_ELEMENT_DIMS:
                raise InvalidParameterError(
                    f"a `value` cell nests JSON arrays {len(shape)} deep; "
                    f"an element has at most {MAX_ELEMENT_DIMS} dimensions"
                )
            numbers: list = []
            _fill(value, shape, 0, numbers, _json_number)
            flat.extend(map(from_json, numbers))
        elif cell is None:
            shape = ()
            if name != "bool" and name[:1] in "iu":
                raise InvalidParameterError(NULL_IN_INT.format(a_dtype(name), "an integer"))
            if name == "bool":
                raise InvalidParameterError(NULL_IN_INT.format(a_dtype(name), "0 or 1"))
            flat.append(from_json(None))
        elif isinstance(cell, (float, np.floating)):
            shape = ()
            flat.append(from_real(float(cell)))
        elif isinstance(cell, (int, np.integer)):
            # A SQLite INTEGER: read like a JSON integer (it always fits an i64).
            shape = ()
            flat.append(from_json(int(cell)))
        elif isinstance(cell, (bytes, bytearray, memoryview)):
            raise InvalidParameterError(BLOB)
        else:
            raise InvalidParameterError(
                f"a `value` cell is a Python {type(cell).__name__}; "
                "cells are read from SQLite as numbers, text or NULL"
            )
        if first is None:
            first = shape
        elif shape != first:
            raise InvalidParameterError(SHAPES.format(fmt_shape(first), fmt_shape(shape)))
    assert first is not None
    return _from_flat(flat, name, len(cells), first)
