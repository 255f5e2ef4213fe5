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

This package holds the decoding entry points (:func:`decode_cells` and the two by
column type) and the bound on a cell's size; the rest lives in

* :mod:`.dtypes` — the dtypes, their ranges, the size bound's constants, the refusals' words;
* :mod:`.encode` — numpy rows to cells (the export);
* :mod:`.percell` — cells to numpy one by one, the definition of what is accepted;
* :mod:`.fast` — cells to numpy a whole array at a time, or None to hand over.

Every name is importable from here, as before the split.

Layer: imports ``interchange`` and below, no other container (``tests/test_layers.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from infrastore_sqlite.errors import InvalidParameterError

from .dtypes import (
    CELL_BYTES_PER_LEAF,
    CELL_BYTES_SLACK,
    DTYPES,
    OVERSIZED,
    check_dtype,
    fmt_shape,
    sql_value_type,
)
from .encode import encode_json_cells, encode_scalar_cells, has_negative_zero
from .fast import json_fast, scalar_fast
from .percell import decode_slow

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
    return CELL_BYTES_PER_LEAF * math.prod(int(d) for d in element_shape) + CELL_BYTES_SLACK


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
    element = f"an element of shape {fmt_shape(shape)}" if shape else "a scalar element"
    length = f"{size} bytes long, " if size is not None else ""
    return InvalidParameterError(OVERSIZED.format(what, length, max_cell_bytes(shape), element))


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
    cells: Sequence,
    dtype: str,
    *,
    element_shape: Sequence[int] | None = None,
    scalar: bool = False,
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
    scalar
        True when the caller knows the partition is scalar (its ``value`` column is REAL
        or INTEGER): a text cell that is not JSON is then refused as text where a number
        belongs, naming the text and what to write instead. False keeps the reference's
        words (``a `value` cell is not JSON: …``).

    Raises
    ------
    InvalidParameterError
        The first offending cell in row order: not JSON, a blob, a string other than
        ``"Infinity"``/``"-Infinity"``, a ragged array, two cells of different shapes,
        a value that is not an integer or does not fit the dtype, a bool that is not
        0 or 1, a cell longer than ``element_shape`` can need. The message does not
        name the series; the caller adds it.
    """
    np_dtype = check_dtype(dtype)
    name = dtype
    if len(cells) == 0:
        return np.empty((0,), dtype=np_dtype)
    if element_shape is not None:
        _refuse_oversized(cells, element_shape)
    out = json_fast(cells, name) if type(cells[0]) is str else scalar_fast(cells, name)
    return out if out is not None else decode_slow(cells, name, scalar=scalar)


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
    np_dtype = check_dtype(dtype)
    name = dtype
    if len(cells) == 0:
        return np.empty((0,), dtype=np_dtype)
    out = scalar_fast(cells, name)
    return out if out is not None else decode_slow(cells, name)


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
    np_dtype = check_dtype(dtype)
    name = dtype
    if len(cells) == 0:
        return np.empty((0,), dtype=np_dtype)
    out = json_fast(cells, name)
    return out if out is not None else decode_slow(cells, name)
