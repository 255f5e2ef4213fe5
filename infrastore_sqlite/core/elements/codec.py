"""Python values and arrays of an element type, both ways: ``encode_element_values`` (values
→ the store's array), ``infer_element_type`` (the type values name) and
``decode_element_values`` (an array → Python values).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy

from .kinds import (
    FIXED_WIDTH,
    NUMPY_DTYPES,
    as_store_array,
    check_composite_rows,
    check_element_shape,
    dtype_name,
    invalid,
    parse_element_type,
    shape_text,
)


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
        raise invalid(
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
        raise invalid(
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
        raise invalid(
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
                raise invalid(
                    f"tuple rows must all have the same arity: row {i} has {len(r)} values, "
                    f"expected {width}",
                    hint=f"give every row {et.n} values.",
                )
        # The encoder always builds f64; a non-f64 tuple is refused like any dtype mismatch.
        check_element_shape(et, (width,), "f64")
        flat = numpy.array(rows, dtype=f64).reshape(len(rows), width)
    elif et.kind in FIXED_WIDTH:
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
                raise invalid(
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
        raise invalid(
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
        raise invalid(
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
            raise invalid(
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
            raise invalid(
                f"from_values rows disagree: row {first} is a {kind} value but row {i} is "
                f"a {k} value",
                hint="one series holds one element type; split the values into two series.",
            )
    if kind is None:
        if want is not None and want.kind == "tuple":
            # A tuple's arity lives in its rows: with none (or only empty ones) the
            # declaration cannot be checked, so it is refused rather than trusted.
            if len(values) == 0:
                raise invalid(
                    "an empty tuple series cannot be built from values, because a tuple's "
                    "arity lives in its rows and there are none",
                    hint=f'encode it with encode_element_values([], "{want}") and pass the '
                    "array to the constructor with the same element_type=.",
                )
            raise invalid(
                f'element_type "{want}" disagrees with the values, which are "tuple(0,f64)"',
                hint="give every row its values, or drop the declaration.",
            )
        if want is not None and want.kind != "piecewise_linear" and len(values):
            raise invalid(
                f'element_type "{want}" disagrees with the values, whose rows are all empty '
                "sequences, which read as `piecewise_linear` curves with no points, not as "
                f'"{want}"',
                hint="give the rows their values, or declare piecewise_linear.",
            )
        if want is not None:
            return str(want)
        if len(values) == 0:
            raise invalid(
                "cannot infer an element_type from an empty `values`",
                hint="declare element_type= to say what the series holds.",
            )
        raise invalid(
            "cannot tell what these values are: every row is empty, which reads equally as "
            "a `piecewise_linear` curve with no points or a tuple with no fields",
            hint="declare `element_type=` to say which.",
        )
    found = f"tuple({len(values[first])},f64)" if kind == "tuple" else kind
    if want is not None and str(want) != found:
        raise invalid(
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
        raise invalid(
            f"leading_dims must be >= 0, got {ld}",
            hint="use 1 for a static series, 2 for Deterministic, 3 for Probabilistic/Scenarios.",
        )
    if arr.ndim < ld:
        raise invalid(
            f"shape {shape_text(arr.shape)} has fewer than the {ld} leading dims its "
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
