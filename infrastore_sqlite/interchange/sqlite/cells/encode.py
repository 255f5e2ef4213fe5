"""The export side of the ``value`` cells: numpy rows to REAL/INTEGER cells or JSON text.

One orjson call turns a whole block of shaped rows into text (cut at the row
boundaries); a row that call cannot write as the layout wants (an infinity, an empty
axis) is written again on its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from infrastore_sqlite.errors import InvalidParameterError

from .dtypes import I64_MAX, INF, U64, dtype_name, native, widen_f64

# ---------------------------------------------------------------------------------------
# export


def _refuse_big_u64(rows: np.ndarray) -> None:
    """Refuse a u64 block holding a value above i64 max, naming the first one."""
    if rows.size == 0:
        return
    flat = rows.reshape(-1)
    if int(flat.max()) <= I64_MAX:
        return
    value = int(flat[int(np.argmax(flat > np.uint64(I64_MAX)))])
    raise InvalidParameterError(U64.format(value), key=value)


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
    name = dtype_name(rows.dtype)
    if rows.ndim != 1:
        raise InvalidParameterError(
            f"scalar cells take rows of shape [N], got {list(rows.shape)}; "
            "rows with a per-step shape are written as JSON text (encode_json_cells)"
        )
    if name in ("f64", "f32"):
        return widen_f64(rows)
    rows = native(rows)
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
    rows = np.ascontiguousarray(native(rows))
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
    if value == INF:
        return "Infinity"
    if value == -INF:
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
    name = dtype_name(rows.dtype)
    if rows.ndim < 2:
        raise InvalidParameterError(
            f"JSON cells take rows of shape [N, *E] with a per-step shape E, got "
            f"{list(rows.shape)}; scalar rows are written as numbers (encode_scalar_cells)"
        )
    n = rows.shape[0]
    if n == 0:
        return []
    rows = native(rows)
    is_float = name in ("f64", "f32")
    if is_float:
        # orjson writes an f32 as its own shortest text (0.1); the layout wants the
        # f64 widening (0.10000000149011612).
        arr = widen_f64(rows)
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
