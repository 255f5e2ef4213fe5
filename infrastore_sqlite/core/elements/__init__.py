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

The package holds ``kinds`` (the dtypes, ``ElementType`` and its parsing, shape and row
checks, ``minimal_width`` / ``shrink`` / ``pad``) and ``codec`` (Python values ↔ arrays);
this module re-exports their names.

Layer: imports ``errors`` (``tests/test_layers.py`` checks it).
"""

from __future__ import annotations

from .codec import decode_element_values, encode_element_values, infer_element_type
from .kinds import (
    DTYPE_NAMES,
    NUMPY_DTYPES,
    ElementType,
    as_store_array,
    check_composite_rows,
    check_element_shape,
    default_element_type,
    dtype_name,
    minimal_width,
    pad,
    parse_element_type,
    shrink,
)

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
    "infer_element_type",
    "minimal_width",
    "pad",
    "parse_element_type",
    "shrink",
]
