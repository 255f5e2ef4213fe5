"""The import side of the ``value`` cells, a whole array at a time: the fast paths.

Built from whole-block numpy and orjson calls; each returns None for anything it cannot
vouch for, and the per-cell path (:mod:`.percell`) then reads the cells and names the
first bad one. The results must be bit-identical to the per-cell path's.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import orjson

from infrastore_sqlite.core.gcpause import gc_paused
from infrastore_sqlite.errors import InvalidParameterError

from .dtypes import DTYPES, INT_RANGE, MAX_ELEMENT_DIMS, NO_FIT, NOT_BOOL, a_dtype
from .percell import BARE_NEG_ZERO, json_shape, narrow_f32

# The string that separates the cells when the JSON fast path parses them as one text.
_MARKER = '"|"'
_MARKER_SEP = "," + _MARKER + ","


# ---------------------------------------------------------------------------------------
# import: fast paths (whole-block calls; return None to hand over to _decode_slow)

_NUMBER_TYPES = frozenset({float, int, type(None)})


def scalar_fast(cells: Sequence, name: str) -> np.ndarray | None:
    """Numbers as apsw hands them back: REAL/NULL for floats, INTEGER for the rest."""
    n = len(cells)
    if name in ("f64", "f32"):
        # numpy would also turn the *text* '5.5' or 'nan' into a float, so the types are
        # checked first; None becomes NaN, as a NULL cell should.
        if not set(map(type, cells)) <= _NUMBER_TYPES:
            return None
        out = np.fromiter(cells, dtype=np.float64, count=n)
        return narrow_f32(out) if name == "f32" else out
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
            raise InvalidParameterError(NOT_BOOL)
        return arr.astype(np.bool_)
    lo, hi = INT_RANGE[name]
    if n and (int(arr.min()) < lo or int(arr.max()) > hi):
        bad = int(arr[np.flatnonzero((arr < lo) | (arr > hi))[0]])
        raise InvalidParameterError(NO_FIT.format(bad, a_dtype(name)))
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


def json_fast(cells: Sequence, name: str) -> np.ndarray | None:
    """JSON cells as the layout writes them: one orjson call for the whole array.

    The collector stays paused until the parsed lists are freed again: re-enabled while
    they live, its next young-generation pass would walk every one of them.
    """
    with gc_paused():
        return _json_fast_parse(cells, name)


def _json_fast_parse(cells: Sequence, name: str) -> np.ndarray | None:
    """The body of :func:`json_fast`.

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
    if "-0" in text and BARE_NEG_ZERO.search(text):
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
    shape = json_shape(rows[0])
    if not shape or 0 in shape or len(shape) > MAX_ELEMENT_DIMS:
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
            out = narrow_f32(out)
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
    lo, hi = INT_RANGE[name]
    if int(arr.min()) < lo or int(arr.max()) > hi:
        return None
    return arr.astype(DTYPES[name]).reshape((n, *shape))
