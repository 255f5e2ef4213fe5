"""What every path of the ``value`` cells shares: the store's dtypes, their checks and
ranges, the bound on a cell's size, and the wording of every refusal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from infrastore_sqlite.errors import InvalidParameterError

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

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
# The closed range each integer dtype holds (bool is handled on its own).
INT_RANGE: dict[str, tuple[int, int]] = {
    name: (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
    for name, dt in DTYPES.items()
    if dt.kind in "iu"
}
INF = math.inf
NAN = math.nan

# Element shapes deeper than this cannot become a numpy array once the row axis is added
# (numpy allows 64 dimensions); nothing the store writes comes near it.
MAX_ELEMENT_DIMS = 32

NOT_JSON = "a `value` cell is not JSON: {}"
# The same cell in a scalar partition, where the layout writes a number and a JSON text
# is only tolerated (as the reference reads it): "not JSON" would send the reader
# looking for JSON that was never meant to be there.
_TEXT_FOR_NUMBER = (
    "a `value` cell holds the text {} where {} belongs (the `value` column of a scalar "
    "{} partition is {}{}); write {} in that cell, or export the file again"
)
BLOB = "a `value` cell is a blob; the layout writes numbers or JSON text"
HOLDS = "a `value` cell holds {}, not a number"
RAGGED = "a `value` cell is a ragged JSON array"
SHAPES = "two `value` cells of one array have different shapes ({} and {})"
NOT_INT = "{} array holds a value that is not an integer"
# A NULL cell is how a NaN is written, which an integer or bool array cannot hold: say
# NULL, not "not an integer" (the cell holds no value at all).
NULL_IN_INT = "{} array holds a NULL `value` cell (a NaN, which it cannot hold); write {} there"


def a_dtype(name: str) -> str:
    """``name`` with its article as it is read aloud: "an i64", "an f32", "a u8", "a bool"."""
    return f"{'an' if name[:1] in 'aeifhlmnorsx' else 'a'} {name}"


NO_FIT = "{} does not fit {}"
NOT_BOOL = "a bool array holds a value other than 0 or 1"
U64 = "u64 value {} does not fit a SQLite INTEGER"
OVERSIZED = (
    "{} is {}longer than the {} bytes {} can need; write the cell again as one element "
    "(JSON numbers only) and import again"
)

# The longest number the layout writes is 24 characters (-2.2250738585072014e-308); the
# bound per leaf leaves room for the spaces and line breaks a hand-written JSON text may
# hold, and the slack for the brackets of any nesting. It only has to stop a cell that
# no element could need before it is fetched and parsed, never a real one.
CELL_BYTES_PER_LEAF = 64
CELL_BYTES_SLACK = 4096


# ---------------------------------------------------------------------------------------
# dtypes


def dtype_name(dtype: Any) -> str:
    """The catalog spelling of a numpy dtype, refusing the ones the store does not hold."""
    dt = np.dtype(dtype)
    name = _NAMES.get(dt.newbyteorder("=") if not dt.isnative else dt)
    if name is None:
        raise InvalidParameterError(
            f"numpy dtype {dt} is not a store dtype; use one of {', '.join(DTYPES)}"
        )
    return name


def check_dtype(dtype: str) -> np.dtype:
    try:
        return DTYPES[dtype]
    except (KeyError, TypeError):
        raise InvalidParameterError(
            f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}"
        ) from None


def native(rows: np.ndarray) -> np.ndarray:
    # The arithmetic below and orjson both want native byte order.
    return rows if rows.dtype.isnative else rows.astype(rows.dtype.newbyteorder("="))


def widen_f64(rows: np.ndarray) -> np.ndarray:
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
    dt = check_dtype(dtype)
    if tuple(element_shape):
        return "TEXT"
    return "REAL" if dt.kind == "f" else "INTEGER"


def text_for_number(cell: str, dtype: str) -> InvalidParameterError:
    """The refusal of a text cell that is not JSON where a scalar ``dtype`` partition
    holds numbers: the text (its first 40 characters), what belongs there, what to do.

    Parameters
    ----------
    cell
        The text found.
    dtype
        The partition's dtype (``'f64'`` ...), which says what belongs there.

    Returns
    -------
    InvalidParameterError
        To raise; the caller adds the table, row and series.
    """
    shown = repr(cell[:40]) + ("…" if len(cell) > 40 else "")
    if dtype == "bool":
        what, null = "0 or 1", ""
    elif check_dtype(dtype).kind == "f":
        what, null = "a number", ": a number, or NULL for NaN"
    else:
        what, null = "an integer", ""
    return InvalidParameterError(
        _TEXT_FOR_NUMBER.format(shown, what, dtype, sql_value_type(dtype, ()), null, what)
    )


def fmt_shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"
