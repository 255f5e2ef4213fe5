"""The element types themselves: the eleven dtypes and their on-disk codes, ``ElementType``
and its parsing, the element shape an array must have for its type, the composite rows'
checks, and the ragged kinds' widths (``minimal_width``, ``shrink``, ``pad``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy

from ...errors import InvalidParameterError


def invalid(message: str, *, hint: str | None = None) -> InvalidParameterError:
    # The error renders as "message hint": make the two read as two sentences.
    if hint:
        return InvalidParameterError(message + ".", hint=hint[0].upper() + hint[1:])
    return InvalidParameterError(message)


# Code order matters: the index of a name is its on-disk dtype code.
DTYPE_NAMES: tuple[str, ...] = (
    "f64",
    "f32",
    "i64",
    "i32",
    "u64",
    "bool",
    "i16",
    "i8",
    "u32",
    "u16",
    "u8",
)

NUMPY_DTYPES: dict[str, numpy.dtype] = {
    "f64": numpy.dtype("<f8"),
    "f32": numpy.dtype("<f4"),
    "i64": numpy.dtype("<i8"),
    "i32": numpy.dtype("<i4"),
    "u64": numpy.dtype("<u8"),
    "bool": numpy.dtype(numpy.bool_),
    "i16": numpy.dtype("<i2"),
    "i8": numpy.dtype("i1"),
    "u32": numpy.dtype("<u4"),
    "u16": numpy.dtype("<u2"),
    "u8": numpy.dtype("u1"),
}

# (numpy kind, itemsize) → name; byte order deliberately ignored so '>f8' maps to 'f64'.
_KIND_SIZE_TO_NAME: dict[tuple[str, int], str] = {
    (dt.kind, dt.itemsize): name for name, dt in NUMPY_DTYPES.items()
}

_SUPPORTED_TEXT = "/".join(DTYPE_NAMES)

_FUNCTION_KINDS = frozenset(
    {"linear_function", "quadratic_function", "piecewise_linear", "piecewise_step"}
)
_RAGGED_KINDS = frozenset({"piecewise_linear", "piecewise_step"})
FIXED_WIDTH = {"linear_function": 2, "quadratic_function": 3}
_ALL_KINDS = frozenset({"scalar", "tuple"}) | _FUNCTION_KINDS

# The characters Rust's ``str::trim`` removes (Unicode White_Space). Python's ``str.strip()``
# also strips U+001C..U+001F, which the reference parser keeps, so the set is spelled out.
_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_U64_MAX = 2**64 - 1


def shape_text(shape: Iterable[int]) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


# ----------------------------------------------------------------------------- dtypes


def dtype_name(dt: Any) -> str:
    """Return the store's name for a numpy dtype.

    Parameters
    ----------
    dt
        A ``numpy.dtype`` (or anything ``numpy.dtype()`` accepts). Byte order is ignored:
        ``>f8`` and ``<f8`` are both ``'f64'``.

    Returns
    -------
    str
        One of :data:`DTYPE_NAMES`.

    Raises
    ------
    InvalidParameterError
        The dtype is not one of the 11 supported ones (float16, complex, object, strings,
        datetimes, structured dtypes ...).
    """
    try:
        d = dt if isinstance(dt, numpy.dtype) else numpy.dtype(dt)
    except TypeError as exc:
        raise invalid(
            f"{dt!r} is not a numpy dtype",
            hint=f"use one of the supported dtypes: {_SUPPORTED_TEXT}.",
        ) from exc
    # structured and sub-array dtypes share kind/itemsize with plain ones: rule them out
    name = None
    if d.fields is None and d.subdtype is None:
        name = _KIND_SIZE_TO_NAME.get((d.kind, d.itemsize))
    if name is None:
        raise invalid(
            f"unsupported numpy dtype {str(d)!r}",
            hint=f"convert the data to one of the supported dtypes: {_SUPPORTED_TEXT}.",
        )
    return name


def as_store_array(data: Any, *, what: str = "data") -> numpy.ndarray:
    """Return ``data`` as a C-contiguous little-endian array of a supported dtype.

    A view of the input is returned when it already has that layout; big-endian or
    non-C-contiguous (e.g. Fortran-ordered) input is copied into it.

    Parameters
    ----------
    data
        An array or anything ``numpy.asarray`` accepts.
    what
        How to call the value in error messages.

    Returns
    -------
    numpy.ndarray
        The normalized array; its dtype is one of :data:`NUMPY_DTYPES`.

    Raises
    ------
    InvalidParameterError
        The data is an object array or its dtype is not supported.
    """
    try:
        arr = numpy.asarray(data)
    except (ValueError, TypeError) as exc:
        # ragged nested lists end up here with numpy >= 1.24
        raise invalid(
            f"{what} is not a rectangular numeric array: {exc}",
            hint="pass a numpy array (or nested lists of equal lengths) of numbers.",
        ) from exc
    if arr.dtype.kind == "O":
        raise invalid(
            f"{what} is an object array",
            hint=f"pass numbers of one of the supported dtypes: {_SUPPORTED_TEXT}.",
        )
    try:
        name = dtype_name(arr.dtype)
    except InvalidParameterError as exc:
        raise invalid(
            f"{what} has an unsupported dtype {str(arr.dtype)!r}",
            hint=f"convert it to one of the supported dtypes: {_SUPPORTED_TEXT}.",
        ) from exc
    target = NUMPY_DTYPES[name]
    if arr.dtype == target and arr.flags.c_contiguous:
        return arr
    return numpy.ascontiguousarray(arr, dtype=target)


# ----------------------------------------------------------------------- element types


@dataclass(frozen=True, slots=True)
class ElementType:
    """A parsed element type.

    Parameters
    ----------
    kind
        ``'scalar'``, ``'tuple'``, ``'linear_function'``, ``'quadratic_function'``,
        ``'piecewise_linear'`` or ``'piecewise_step'``.
    dtype
        The physical dtype name; always ``'f64'`` for the four function kinds.
    n
        The arity of a tuple; ``None`` for every other kind.
    """

    kind: str
    dtype: str
    n: int | None = None

    def __post_init__(self) -> None:
        # Construction bypassing parse_element_type must still yield a coherent value.
        if self.kind not in _ALL_KINDS:
            raise invalid(f"unknown element kind {self.kind!r}")
        if self.dtype not in NUMPY_DTYPES:
            raise invalid(f"unknown dtype {self.dtype!r} in element type")
        if self.kind in _FUNCTION_KINDS and self.dtype != "f64":
            raise invalid(f"element kind {self.kind} is always f64")
        if self.kind == "tuple":
            if not isinstance(self.n, int) or not 1 <= self.n <= _U64_MAX:
                raise invalid(f"a tuple element type needs N >= 1, got {self.n!r}")
        elif self.n is not None:
            raise invalid(f"element kind {self.kind} takes no arity")

    def __str__(self) -> str:
        if self.kind == "scalar":
            return self.dtype
        if self.kind == "tuple":
            return f"tuple({self.n},{self.dtype})"
        return self.kind

    @property
    def is_composite(self) -> bool:
        """True for the four function kinds (linear, quadratic, piecewise linear / step)."""
        return self.kind in _FUNCTION_KINDS

    @property
    def is_ragged(self) -> bool:
        """True for ``piecewise_linear`` and ``piecewise_step`` (rows carry a point count)."""
        return self.kind in _RAGGED_KINDS


def _unknown(text: str) -> InvalidParameterError:
    return invalid(
        f'unknown element_type "{text}"',
        hint=(
            f"expected a dtype ({_SUPPORTED_TEXT}), tuple(N,dtype), linear_function, "
            "quadratic_function, piecewise_linear, or piecewise_step (case-sensitive)."
        ),
    )


def _parse_arity(text: str) -> int | None:
    # Like Rust's usize parse: optional '+', ASCII digits only, must fit 64 bits.
    body = text[1:] if text.startswith("+") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    value = int(body)
    return value if 1 <= value <= _U64_MAX else None


def parse_element_type(text: str) -> ElementType:
    """Parse an element-type string.

    Parameters
    ----------
    text
        A dtype name (``'f64'``), ``'tuple(N,dtype)'`` (spaces around ``N`` and ``dtype``
        are allowed), or one of the four function kinds. Case-sensitive; no surrounding
        spaces.

    Returns
    -------
    ElementType
        The parsed type; ``str()`` of it is the canonical spelling.

    Raises
    ------
    InvalidParameterError
        The text is not in the grammar (``'Tuple(2,f64)'``, ``'tuple(0,f64)'``, ``'F64'``,
        ``'float64'`` ...).
    TypeError
        ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"element_type must be a str, not {type(text).__name__}")
    if text in NUMPY_DTYPES:
        return ElementType("scalar", text)
    if text in _FUNCTION_KINDS:
        return ElementType(text, "f64")
    if text.startswith("tuple(") and text.endswith(")"):
        parts = text[len("tuple(") : -1].split(",")
        if len(parts) == 2:
            n = _parse_arity(parts[0].strip(_WHITE_SPACE))
            dtype = parts[1].strip(_WHITE_SPACE)
            if n is not None and dtype in NUMPY_DTYPES:
                return ElementType("tuple", dtype, n)
    raise _unknown(text)


def default_element_type(arr: numpy.ndarray) -> ElementType:
    """Return the element type a series gets when none is given: the scalar of its dtype.

    Parameters
    ----------
    arr
        The series data.

    Returns
    -------
    ElementType
        ``ElementType('scalar', dtype_name(arr.dtype))``.
    """
    return ElementType("scalar", dtype_name(arr.dtype))


def check_element_shape(et: ElementType, element_shape: tuple[int, ...], dtype: str) -> None:
    """Check that an array's per-step shape and dtype fit an element type.

    Parameters
    ----------
    et
        The element type.
    element_shape
        ``E``: the array shape after its leading (time, window, percentile ...) axes.
    dtype
        The array's dtype name (one of :data:`DTYPE_NAMES`).

    Raises
    ------
    InvalidParameterError
        The dtype differs from the element type's physical dtype, or ``E`` breaks the
        kind's rule: tuple ``E == [N]``; linear ``[2]``; quadratic ``[3]``;
        piecewise_linear ``[W]`` with ``W`` odd; piecewise_step ``[W]`` with ``W`` 1 or even.
    """
    shape = tuple(int(d) for d in element_shape)
    if dtype != et.dtype:
        raise invalid(
            f"element_type {et} holds {et.dtype} values, but the array's dtype is {dtype}",
            hint=f"convert the array to {et.dtype} or declare the element_type that matches it.",
        )
    if et.kind == "scalar":
        return
    if et.kind == "tuple" or et.kind in FIXED_WIDTH:
        width = et.n if et.kind == "tuple" else FIXED_WIDTH[et.kind]
        if shape != (width,):
            raise invalid(
                f"element_type {et} needs per-step element dims [{width}], got {shape_text(shape)}",
                hint=f"give the array shape [*leading, {width}].",
            )
        return
    # ragged kinds
    if len(shape) != 1:
        raise invalid(
            f"element_type {et} needs exactly one per-step element dim (the row width), "
            f"got {shape_text(shape)}",
            hint="give the array shape [*leading, width].",
        )
    width = shape[0]
    if width < 1:
        raise invalid(
            f"element_type {et} needs a row width of at least 1 (the leading count), got {width}",
            hint="every row starts with its point count.",
        )
    if et.kind == "piecewise_linear" and width % 2 == 0:
        raise invalid(
            f"element_type piecewise_linear cannot have row width {width}: a row holds "
            "1 + 2*points values, so the width is odd",
            hint="pad every row to 1 + 2 * (most points in any row).",
        )
    if et.kind == "piecewise_step" and width != 1 and width % 2 == 1:
        raise invalid(
            f"element_type piecewise_step cannot have row width {width}: a row holds "
            "2*points values, or 1 when every timestep is empty, so the width is even or 1",
            hint="pad every row to 2 * (most x-coordinates in any row), or 1 if all are empty.",
        )


# --------------------------------------------------------------------- ragged helpers


def _ragged_rows(rows: numpy.ndarray) -> numpy.ndarray:
    rows = numpy.asarray(rows)
    if rows.ndim != 2:
        rows = rows.reshape(-1, rows.shape[-1]) if rows.ndim else rows.reshape(1, 1)
    return rows


def _used_span(kind: str, counts: numpy.ndarray) -> numpy.ndarray:
    # Float arithmetic on purpose: an absurd count (1e300) just yields an absurd span,
    # which the width comparison then refuses, instead of overflowing an integer type.
    if kind == "piecewise_linear":
        return 1 + 2 * counts
    return numpy.where(counts == 0, 1, 2 * counts)


def check_composite_rows(et: ElementType, rows: numpy.ndarray) -> None:
    """Check the point counts of ragged rows.

    Parameters
    ----------
    et
        The element type; only the ragged kinds are checked, others return at once.
    rows
        The array reshaped to ``[-1, W]`` (any leading dims are flattened here too).

    Raises
    ------
    InvalidParameterError
        A row's count is not a non-negative whole number, or its used span
        (``1 + 2n`` for piecewise_linear, ``2n`` — 1 when ``n == 0`` — for piecewise_step)
        exceeds ``W``. The message names the first offending row (row-major index).
    """
    if not et.is_ragged:
        return
    rows = _ragged_rows(rows)
    if rows.shape[0] == 0 or rows.shape[1] == 0:
        return
    width = rows.shape[1]
    counts = rows[:, 0].astype(numpy.float64, copy=False)
    with numpy.errstate(invalid="ignore", over="ignore"):
        bad_count = ~(numpy.isfinite(counts) & (counts >= 0) & (counts == numpy.floor(counts)))
        span = numpy.where(bad_count, 0.0, _used_span(et.kind, numpy.where(bad_count, 0, counts)))
        too_wide = span > width
    bad = bad_count | too_wide
    if not bad.any():
        return
    i = int(numpy.argmax(bad))
    c = float(counts[i])
    if bad_count[i]:
        if math.isnan(c):
            shown = "NaN"
        elif math.isinf(c):
            shown = "inf" if c > 0 else "-inf"
        else:
            shown = str(int(c)) if c == int(c) else repr(c)
        raise invalid(
            f"element_type {et}: row {i} leading count is {shown}, "
            "which is not a non-negative whole number",
            hint="the first cell of every row must hold the number of points in that row.",
        )
    n = int(c)
    need = 1 + 2 * n if et.kind == "piecewise_linear" else (1 if n == 0 else 2 * n)
    raise invalid(
        f"element_type {et}: row {i} declares {n} points, which needs {need} slots "
        f"but the row width is {width}",
        hint="fix the count or widen every row of the array.",
    )


def minimal_width(et: ElementType, rows: numpy.ndarray) -> int:
    """Return the narrowest row width that holds every row.

    Parameters
    ----------
    et
        The element type.
    rows
        The array (any leading dims; last axis = row width). Counts are assumed valid
        (see :func:`check_composite_rows`).

    Returns
    -------
    int
        ``1 + 2 * max n`` for piecewise_linear, ``max(1, 2 * max n)`` for piecewise_step,
        the current last-axis width for every other kind.
    """
    rows = numpy.asarray(rows)
    if not et.is_ragged:
        return int(rows.shape[-1]) if rows.ndim else 1
    rows = _ragged_rows(rows)
    top = int(rows[:, 0].max()) if rows.shape[0] and rows.shape[1] else 0
    if et.kind == "piecewise_linear":
        return 1 + 2 * top
    return max(1, 2 * top)


def shrink(et: ElementType, arr: numpy.ndarray) -> numpy.ndarray:
    """Re-pack a ragged array to its canonical form.

    Every padding of the same curves maps to the same bytes: the width becomes
    :func:`minimal_width`, each row keeps its used span, everything after it is zeroed, and
    the count cell is rewritten as an exact non-negative integer (so a ``-0.0`` count
    becomes ``0.0``, as a decode/encode round trip would give).

    Parameters
    ----------
    et
        The element type.
    arr
        The stored array: any leading dims, last axis the row width.

    Returns
    -------
    numpy.ndarray
        A new C-contiguous f64 array for the ragged kinds; ``arr`` itself otherwise.

    Raises
    ------
    InvalidParameterError
        Bad shape, dtype or row counts (see :func:`check_element_shape`,
        :func:`check_composite_rows`).
    """
    if not et.is_ragged:
        return arr
    a = as_store_array(arr)
    if a.ndim < 1:
        raise invalid(f"element_type {et} needs an array with a row axis, got a 0-d array")
    check_element_shape(et, a.shape[-1:], dtype_name(a.dtype))
    rows = a.reshape(-1, a.shape[-1])
    check_composite_rows(et, rows)
    width = minimal_width(et, rows)
    out = rows[:, :width].copy()
    if out.shape[0]:
        counts = numpy.abs(out[:, 0])  # abs turns -0.0 into 0.0; counts are >= 0 otherwise
        span = _used_span(et.kind, counts).astype(numpy.int64)
        out[numpy.arange(width)[None, :] >= span[:, None]] = 0.0
        out[:, 0] = counts
    return out.reshape((*a.shape[:-1], width))


def pad(et: ElementType, arr: numpy.ndarray, width: int) -> numpy.ndarray:
    """Zero-pad the rows of a ragged array to ``width``.

    Parameters
    ----------
    et
        The element type (ragged kinds only; other kinds accept only their current width).
    arr
        The array: any leading dims, last axis the row width.
    width
        The new row width; at least the current one, odd for piecewise_linear, 1 or even
        for piecewise_step.

    Returns
    -------
    numpy.ndarray
        ``arr`` when it already has that width, else a new zero-padded f64 array.

    Raises
    ------
    InvalidParameterError
        ``width`` is narrower than the array, breaks the kind's width rule, or the kind is
        not ragged.
    """
    a = numpy.asarray(arr)
    current = int(a.shape[-1]) if a.ndim else 0
    width = operator.index(width)
    if width == current:
        return arr
    if not et.is_ragged:
        raise invalid(
            f"element_type {et} has a fixed element shape; it cannot be padded to width {width}"
        )
    if width < current:
        raise invalid(
            f"cannot pad rows of width {current} to the narrower width {width}",
            hint="use shrink() to narrow a ragged array.",
        )
    check_element_shape(et, (width,), et.dtype)
    a = as_store_array(a)
    out = numpy.zeros((*a.shape[:-1], width), dtype=NUMPY_DTYPES["f64"])
    out[..., :current] = a
    return out
