"""Element types: what one timestep of a series holds, and how it is laid out in the array.

A stored array has shape ``[*leading, *E]``: the leading axes index timesteps (and windows,
percentiles, scenarios), ``E`` is the per-step element shape. The element type names how ``E``
is to be read:

* a scalar dtype (``f64``, ``i32``, ...): any dense ``E``, the values are the numbers;
* ``tuple(N,dtype)``: ``E == [N]``;
* ``linear_function`` / ``quadratic_function``: ``E == [2]`` / ``[3]`` coefficients, f64;
* ``piecewise_linear`` / ``piecewise_step``: ragged curves packed into rows of width ``W``
  whose first cell is a point count ``n``, then the used span, then zero padding.

The ragged kinds are padded to the widest step of the *whole* array, so one curve may be
stored at several widths. :func:`shrink` maps every padding of the same curves to one
canonical array (minimal width, garbage after the used span zeroed), which is what the
content hash of a composite is taken over on export.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy

from ..errors import InvalidParameterError

__all__ = [
    "DTYPE_NAMES",
    "NUMPY_DTYPES",
    "ElementType",
    "as_store_array",
    "check_composite_rows",
    "check_element_shape",
    "decode_element_values",
    "default_element_type",
    "dtype_name",
    "encode_element_values",
    "minimal_width",
    "pad",
    "parse_element_type",
    "shrink",
]


def _invalid(message: str, *, hint: str | None = None) -> InvalidParameterError:
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
_FIXED_WIDTH = {"linear_function": 2, "quadratic_function": 3}
_ALL_KINDS = frozenset({"scalar", "tuple"}) | _FUNCTION_KINDS

# The characters Rust's ``str::trim`` removes (Unicode White_Space). Python's ``str.strip()``
# also strips U+001C..U+001F, which the reference parser keeps, so the set is spelled out.
_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_U64_MAX = 2**64 - 1


def _shape_text(shape: Iterable[int]) -> str:
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
        raise _invalid(
            f"{dt!r} is not a numpy dtype",
            hint=f"use one of the supported dtypes: {_SUPPORTED_TEXT}.",
        ) from exc
    # structured and sub-array dtypes share kind/itemsize with plain ones: rule them out
    name = None
    if d.fields is None and d.subdtype is None:
        name = _KIND_SIZE_TO_NAME.get((d.kind, d.itemsize))
    if name is None:
        raise _invalid(
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
        raise _invalid(
            f"{what} is not a rectangular numeric array: {exc}",
            hint="pass a numpy array (or nested lists of equal lengths) of numbers.",
        ) from exc
    if arr.dtype.kind == "O":
        raise _invalid(
            f"{what} is an object array",
            hint=f"pass numbers of one of the supported dtypes: {_SUPPORTED_TEXT}.",
        )
    try:
        name = dtype_name(arr.dtype)
    except InvalidParameterError as exc:
        raise _invalid(
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
            raise _invalid(f"unknown element kind {self.kind!r}")
        if self.dtype not in NUMPY_DTYPES:
            raise _invalid(f"unknown dtype {self.dtype!r} in element type")
        if self.kind in _FUNCTION_KINDS and self.dtype != "f64":
            raise _invalid(f"element kind {self.kind} is always f64")
        if self.kind == "tuple":
            if not isinstance(self.n, int) or not 1 <= self.n <= _U64_MAX:
                raise _invalid(f"a tuple element type needs N >= 1, got {self.n!r}")
        elif self.n is not None:
            raise _invalid(f"element kind {self.kind} takes no arity")

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
    return _invalid(
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
        raise _invalid(
            f"element_type {et} holds {et.dtype} values, but the array's dtype is {dtype}",
            hint=f"convert the array to {et.dtype} or declare the element_type that matches it.",
        )
    if et.kind == "scalar":
        return
    if et.kind == "tuple" or et.kind in _FIXED_WIDTH:
        width = et.n if et.kind == "tuple" else _FIXED_WIDTH[et.kind]
        if shape != (width,):
            raise _invalid(
                f"element_type {et} needs per-step element dims [{width}], "
                f"got {_shape_text(shape)}",
                hint=f"give the array shape [*leading, {width}].",
            )
        return
    # ragged kinds
    if len(shape) != 1:
        raise _invalid(
            f"element_type {et} needs exactly one per-step element dim (the row width), "
            f"got {_shape_text(shape)}",
            hint="give the array shape [*leading, width].",
        )
    width = shape[0]
    if width < 1:
        raise _invalid(
            f"element_type {et} needs a row width of at least 1 (the leading count), got {width}",
            hint="every row starts with its point count.",
        )
    if et.kind == "piecewise_linear" and width % 2 == 0:
        raise _invalid(
            f"element_type piecewise_linear cannot have row width {width}: a row holds "
            "1 + 2*points values, so the width is odd",
            hint="pad every row to 1 + 2 * (most points in any row).",
        )
    if et.kind == "piecewise_step" and width != 1 and width % 2 == 1:
        raise _invalid(
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
        raise _invalid(
            f"element_type {et}: row {i} leading count is {shown}, "
            "which is not a non-negative whole number",
            hint="the first cell of every row must hold the number of points in that row.",
        )
    n = int(c)
    need = 1 + 2 * n if et.kind == "piecewise_linear" else (1 if n == 0 else 2 * n)
    raise _invalid(
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
        raise _invalid(f"element_type {et} needs an array with a row axis, got a 0-d array")
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
        raise _invalid(
            f"element_type {et} has a fixed element shape; it cannot be padded to width {width}"
        )
    if width < current:
        raise _invalid(
            f"cannot pad rows of width {current} to the narrower width {width}",
            hint="use shrink() to narrow a ragged array.",
        )
    check_element_shape(et, (width,), et.dtype)
    a = as_store_array(a)
    out = numpy.zeros((*a.shape[:-1], width), dtype=NUMPY_DTYPES["f64"])
    out[..., :current] = a
    return out


# ------------------------------------------------------------------ encode / decode


def _as_float(value: Any) -> float:
    # Accept what a Python float conversion accepts for numbers (ints, bools, numpy
    # scalars, objects with __float__/__index__) but never parse text: "1.5" is refused.
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (str, bytes, bytearray, Sequence, Mapping)) or value is None:
        raise TypeError(f"must be a real number, not {type(value).__name__}")
    if isinstance(value, numpy.ndarray) and value.ndim != 0:
        raise TypeError("must be a real number, not a numpy array")
    kind = type(value)
    if not (hasattr(kind, "__float__") or hasattr(kind, "__index__")):
        raise TypeError(f"must be a real number, not {kind.__name__}")
    return float(value)


def _float_list(value: Any, what: str) -> list[float]:
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"{what} must be a sequence of numbers, not {type(value).__name__}")
    if isinstance(value, numpy.ndarray):
        if value.ndim != 1:
            raise TypeError(f"{what} must be a 1-d sequence of numbers")
        value = value.tolist()
    elif isinstance(value, Mapping) or not isinstance(value, (Sequence, Iterable)):
        raise TypeError(f"{what} must be a sequence of numbers, not {type(value).__name__}")
    return [_as_float(v) for v in value]


def _field(entry: Any, key: str, what: str) -> Any:
    if isinstance(entry, (str, bytes, bytearray, Sequence)) or not hasattr(entry, "__getitem__"):
        raise TypeError(f"{what} must be a mapping with key {key!r}, not {type(entry).__name__}")
    try:
        return entry[key]
    except KeyError:
        raise _invalid(
            f"{what} has no {key!r} entry",
            hint=f"give every entry the key {key!r}.",
        ) from None


def _sequence(entry: Any, what: str) -> Sequence[Any]:
    if isinstance(entry, (str, bytes, bytearray, Mapping)) or not isinstance(
        entry, (Sequence, numpy.ndarray, Iterable)
    ):
        raise TypeError(f"{what} must be a sequence, not {type(entry).__name__}")
    return list(entry)


def _leading_dims(leading_dims: Any, count: int) -> tuple[int, ...]:
    if leading_dims is None:
        return (count,)
    if isinstance(leading_dims, (str, bytes)) or not isinstance(leading_dims, Iterable):
        raise TypeError(
            f"leading_dims must be a sequence of ints, not {type(leading_dims).__name__}"
        )
    dims = tuple(operator.index(d) for d in leading_dims)
    if any(d < 0 for d in dims):
        raise _invalid(
            f"leading_dims {list(dims)} has a negative dimension",
            hint="every leading dimension is a count (>= 0).",
        )
    return dims


def encode_element_values(
    values: Iterable[Any], element_type: str, leading_dims: Sequence[int] | None = None
) -> numpy.ndarray:
    """Pack per-timestep logical values into the array layout of an element type.

    The inverse of :func:`decode_element_values`.

    Parameters
    ----------
    values
        One logical value per timestep, row-major over the leading axes: a list of ``N``
        numbers (tuple), ``{"proportional", "constant"}`` (linear),
        ``{"quadratic", "proportional", "constant"}`` (quadratic), a list of
        ``{"x", "y"}`` points (piecewise_linear), ``{"x": [...], "y": [...]}`` with one
        ``y`` fewer than ``x`` (piecewise_step).
    element_type
        The element-type string. Scalar types have nothing to encode.
    leading_dims
        The shape of the leading axes (``(len,)``, ``(H, count)``, ``(P, H, count)``);
        default ``(len(values),)``. Its product must equal the number of values.

    Returns
    -------
    numpy.ndarray
        A new float64 C-contiguous array of shape ``(*leading_dims, width)``. Ragged kinds
        are padded to the widest value of the whole input.

    Raises
    ------
    InvalidParameterError
        Scalar element type, tuple of a non-f64 dtype, arity mismatch, a step function whose
        ``y`` count is not one less than its ``x`` count, missing keys, or a value count
        that does not fill ``leading_dims``.
    TypeError
        A value is not of the expected structure or not a number.
    """
    et = parse_element_type(element_type)
    if et.kind == "scalar":
        raise _invalid(
            f"a scalar element_type ({et}) has no values to encode",
            hint="pass the numpy array to add_time_series directly.",
        )
    items = list(values) if not isinstance(values, (str, bytes)) else None
    if items is None:
        raise TypeError(f"values must be a sequence of timesteps, not {type(values).__name__}")
    f64 = NUMPY_DTYPES["f64"]

    if et.kind == "tuple":
        rows = [_float_list(v, f"tuple row {i}") for i, v in enumerate(items)]
        width = len(rows[0]) if rows else int(et.n or 0)
        for i, r in enumerate(rows):
            if len(r) != width:
                raise _invalid(
                    f"tuple rows must all have the same arity: row {i} has {len(r)} values, "
                    f"expected {width}",
                    hint=f"give every row {et.n} values.",
                )
        # The encoder always builds f64; a non-f64 tuple is refused like any dtype mismatch.
        check_element_shape(et, (width,), "f64")
        flat = numpy.array(rows, dtype=f64).reshape(len(rows), width)
    elif et.kind in _FIXED_WIDTH:
        keys = (
            ("proportional", "constant")
            if et.kind == "linear_function"
            else ("quadratic", "proportional", "constant")
        )
        rows = [
            [_as_float(_field(v, k, f"{et.kind} value {i}")) for k in keys]
            for i, v in enumerate(items)
        ]
        flat = numpy.array(rows, dtype=f64).reshape(len(rows), len(keys))
    elif et.kind == "piecewise_linear":
        curves = []
        for i, v in enumerate(items):
            pts = _sequence(v, f"piecewise_linear value {i}")
            curve: list[float] = []
            for j, p in enumerate(pts):
                what = f"piecewise_linear value {i} point {j}"
                curve.append(_as_float(_field(p, "x", what)))
                curve.append(_as_float(_field(p, "y", what)))
            curves.append(curve)
        top = max((len(c) // 2 for c in curves), default=0)
        flat = numpy.zeros((len(curves), 1 + 2 * top), dtype=f64)
        for i, c in enumerate(curves):
            flat[i, 0] = len(c) // 2
            flat[i, 1 : 1 + len(c)] = c
    else:  # piecewise_step
        steps: list[tuple[int, list[float]]] = []
        for i, v in enumerate(items):
            what = f"piecewise_step value {i}"
            xs = _float_list(_field(v, "x", what), f"{what} 'x'")
            ys = _float_list(_field(v, "y", what), f"{what} 'y'")
            need = max(len(xs) - 1, 0)
            if len(ys) != need:
                raise _invalid(
                    f"piecewise_step row {i} has {len(xs)} x-coords, so it needs {need} "
                    f"y-values, but has {len(ys)}",
                    hint="a step function has one y-value between each pair of x-coords.",
                )
            steps.append((len(xs), xs + ys))
        top = max((n for n, _ in steps), default=0)
        flat = numpy.zeros((len(steps), max(1, 2 * top)), dtype=f64)
        for i, (n, cells) in enumerate(steps):
            flat[i, 0] = n
            flat[i, 1 : 1 + len(cells)] = cells  # n x-coords then n - 1 y-values

    dims = _leading_dims(leading_dims, flat.shape[0])
    expected = math.prod(dims)
    if expected != flat.shape[0]:
        raise _invalid(
            f"{flat.shape[0]} decoded timesteps do not fill leading dims {list(dims)} "
            f"({expected} expected)",
            hint="pass one value per cell of the leading axes, row-major.",
        )
    return numpy.ascontiguousarray(flat.reshape((*dims, flat.shape[1])))


def _row_kind(row: Any) -> str | None:
    """The element kind one ``from_values`` entry names, or None for an empty list (no vote)."""
    if isinstance(row, Mapping):
        if not row:
            return None
        if "quadratic" in row:
            return "quadratic_function"
        if "x" in row or "y" in row:
            return "piecewise_step"
        return "linear_function"
    if isinstance(row, (str, bytes, bytearray)) or not isinstance(row, (Sequence, numpy.ndarray)):
        return "number"
    if isinstance(row, numpy.ndarray) and row.ndim != 1:
        return "number"
    if len(row) == 0:
        return None
    return "piecewise_linear" if isinstance(row[0], Mapping) else "tuple"


def infer_element_type(values: Sequence[Any], *, declared: str | None = None) -> str:
    """The element type per-timestep logical values name (``from_values``'s table).

    Parameters
    ----------
    values
        One logical value per timestep: ``{"proportional", "constant"}`` →
        ``linear_function``; with ``"quadratic"`` → ``quadratic_function``;
        ``list[{"x", "y"}]`` → ``piecewise_linear``; ``{"x": list, "y": list}`` →
        ``piecewise_step``; ``list[float]`` of length N → ``tuple(N,f64)``.
    declared
        The caller's ``element_type=``: an assertion checked against the values, and the
        only guide where the values name nothing (no values, or only empty rows).

    Returns
    -------
    str
        The canonical element-type string.

    Raises
    ------
    InvalidParameterError
        Plain numbers (they are ``data=`` on the constructor), a scalar ``declared``, rows
        of different kinds, nothing to infer from and nothing declared, or a ``declared``
        type the values disagree with.
    """
    if isinstance(values, (str, bytes, bytearray, Mapping)) or not isinstance(
        values, (Sequence, numpy.ndarray)
    ):
        raise TypeError(
            f"values must be a sequence of per-timestep values, not {type(values).__name__}"
        )
    want = None if declared is None else parse_element_type(declared)
    if want is not None and want.kind == "scalar":
        raise _invalid(
            "from_values encodes composite per-timestep values (a cost curve, a linear "
            f'function, a tuple), and element_type "{want}" is a scalar',
            hint="a series of plain numbers is `data=` on the constructor, which needs no "
            "encoding.",
        )
    kind: str | None = None
    first = -1
    for i, row in enumerate(values):
        k = _row_kind(row)
        if k == "number":
            raise _invalid(
                "from_values takes per-timestep composite values (a cost curve, a linear "
                f"function, a tuple), and row {i} is {type(row).__name__}",
                hint="a series of plain numbers is `data=` on the constructor, which needs "
                "no encoding.",
            )
        if k is None:
            continue
        if kind is None:
            kind, first = k, i
        elif k != kind:
            raise _invalid(
                f"from_values rows disagree: row {first} is a {kind} value but row {i} is "
                f"a {k} value",
                hint="one series holds one element type; split the values into two series.",
            )
    if kind is None:
        if want is not None and want.kind == "tuple":
            # A tuple's arity lives in its rows: with none (or only empty ones) the
            # declaration cannot be checked, so it is refused rather than trusted.
            if len(values) == 0:
                raise _invalid(
                    "an empty tuple series cannot be built from values, because a tuple's "
                    "arity lives in its rows and there are none",
                    hint=f'encode it with encode_element_values([], "{want}") and pass the '
                    "array to the constructor with the same element_type=.",
                )
            raise _invalid(
                f'element_type "{want}" disagrees with the values, which are "tuple(0,f64)"',
                hint="give every row its values, or drop the declaration.",
            )
        if want is not None and want.kind != "piecewise_linear" and len(values):
            raise _invalid(
                f'element_type "{want}" disagrees with the values, whose rows are all empty '
                "sequences, which read as `piecewise_linear` curves with no points, not as "
                f'"{want}"',
                hint="give the rows their values, or declare piecewise_linear.",
            )
        if want is not None:
            return str(want)
        if len(values) == 0:
            raise _invalid(
                "cannot infer an element_type from an empty `values`",
                hint="declare element_type= to say what the series holds.",
            )
        raise _invalid(
            "cannot tell what these values are: every row is empty, which reads equally as "
            "a `piecewise_linear` curve with no points or a tuple with no fields",
            hint="declare `element_type=` to say which.",
        )
    found = f"tuple({len(values[first])},f64)" if kind == "tuple" else kind
    if want is not None and str(want) != found:
        raise _invalid(
            f'element_type "{want}" disagrees with the values, which are "{found}"',
            hint="drop the declaration: from_values derives it.",
        )
    return found


def decode_element_values(
    data: numpy.ndarray, element_type: str, leading_dims: int = 1
) -> list | None:
    """Unpack a stored array into one logical value per timestep.

    Parameters
    ----------
    data
        The stored array, leading axes first.
    element_type
        Its element-type string.
    leading_dims
        How many leading axes precede the element shape: 1 static, 2 Deterministic,
        3 Probabilistic / Scenarios.

    Returns
    -------
    list or None
        One entry per cell of the leading axes, row-major: ``list[float]`` (tuple),
        ``{"proportional", "constant"}`` (linear), ``{"quadratic", "proportional",
        "constant"}`` (quadratic), ``list[{"x", "y"}]`` (piecewise_linear),
        ``{"x": list, "y": list}`` (piecewise_step). ``None`` for a scalar element type
        and for any non-f64 array: their elements already are the values.

    Raises
    ------
    InvalidParameterError
        Unknown element type, too few axes, dtype or element shape not matching the
        element type, or bad ragged-row counts.
    """
    et = parse_element_type(element_type)
    arr = numpy.asarray(data)
    name = dtype_name(arr.dtype)
    ld = operator.index(leading_dims)
    if ld < 0:
        raise _invalid(
            f"leading_dims must be >= 0, got {ld}",
            hint="use 1 for a static series, 2 for Deterministic, 3 for Probabilistic/Scenarios.",
        )
    if arr.ndim < ld:
        raise _invalid(
            f"shape {_shape_text(arr.shape)} has fewer than the {ld} leading dims its "
            "time-series type requires",
            hint="pass the full stored array.",
        )
    element_shape = arr.shape[ld:]
    check_element_shape(et, element_shape, name)
    if et.kind == "scalar" or name != "f64":
        return None
    count = math.prod(arr.shape[:ld])
    rows = as_store_array(arr).reshape(count, math.prod(element_shape))
    if et.kind == "tuple":
        return rows.tolist()
    if et.kind == "linear_function":
        return [{"proportional": p, "constant": c} for p, c in rows.tolist()]
    if et.kind == "quadratic_function":
        return [{"quadratic": q, "proportional": p, "constant": c} for q, p, c in rows.tolist()]
    check_composite_rows(et, rows)
    out: list[Any] = []
    if et.kind == "piecewise_linear":
        for row in rows.tolist():
            n = int(row[0])
            out.append([{"x": row[1 + 2 * k], "y": row[2 + 2 * k]} for k in range(n)])
    else:
        for row in rows.tolist():
            n = int(row[0])
            # n x-coords, then n - 1 y-values (none at all when the step is empty)
            out.append({"x": row[1 : 1 + n], "y": row[1 + n : 1 + n + max(n - 1, 0)]})
    return out
