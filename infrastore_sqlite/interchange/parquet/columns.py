"""Arrow columns as numpy, for the Parquet reader: straight from the buffers, without
pandas or compute kernels, and the list-type tests.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

__all__ = ["is_list", "list_lengths", "list_values", "null_mask", "to_numpy"]


def is_list(types: Any, t: Any) -> bool:
    return bool(
        types.is_fixed_size_list(t)
        or types.is_list(t)
        or types.is_large_list(t)
        or (hasattr(types, "is_list_view") and types.is_list_view(t))
    )


_NUMPY = {
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "halffloat": np.float16,
    "float": np.float32,
    "double": np.float64,
}


def to_numpy(pa: ModuleType, arr: Any) -> np.ndarray:
    """A primitive Arrow array (no nulls) as numpy, straight from its data buffer.

    Not ``Array.to_numpy``, whose first call imports pandas (half a second, and its
    memory) only to ask whether this is a pandas object; the result is read-only.
    """
    t = arr.type
    n, off = len(arr), arr.offset
    buf = arr.buffers()[1]
    if pa.types.is_boolean(t):
        if buf is None or n == 0:
            return np.zeros(0, dtype=np.bool_)
        bits = np.frombuffer(buf, dtype=np.uint8)
        return np.unpackbits(bits, count=off + n, bitorder="little")[off:].astype(np.bool_)
    if pa.types.is_timestamp(t):
        dtype = np.dtype(np.int64)
    elif str(t) in _NUMPY:
        dtype = np.dtype(_NUMPY[str(t)])
    else:  # pragma: no cover - the type checks above refuse anything else first
        return arr.to_numpy(zero_copy_only=False)
    if buf is None or n == 0:
        return np.empty(0, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=off + n)[off:]


def list_lengths(pa: ModuleType, arr: Any) -> np.ndarray:
    """Each row's length of a variable-length list array, from its offsets."""
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        dtype = np.int64 if pa.types.is_large_list(arr.type) else np.int32
        n, off = len(arr), arr.offset
        offsets = np.frombuffer(arr.buffers()[1], dtype=dtype, count=off + n + 1)[off:]
        return np.diff(offsets)
    return to_numpy(pa, arr.value_lengths())


def list_values(pa: ModuleType, arr: Any) -> Any:
    """The child values of a list array without nulls at its own level, in row order.

    What ``arr.flatten()`` gives, sliced from the child straight through the offsets:
    ``flatten`` of a fixed-size list imports ``pyarrow.compute`` on its first call (a
    sixth of a second and several MB, for one import of shaped values). A list view,
    whose rows may sit anywhere in its child, is left to ``flatten``.
    """
    types = pa.types
    n, off = len(arr), arr.offset
    if types.is_fixed_size_list(arr.type):
        size = arr.type.list_size
        return arr.values.slice(off * size, n * size)
    if types.is_list(arr.type) or types.is_large_list(arr.type):
        dtype = np.int64 if types.is_large_list(arr.type) else np.int32
        if n == 0:
            return arr.values.slice(0, 0)
        offsets = np.frombuffer(arr.buffers()[1], dtype=dtype, count=off + n + 1)
        first, last = int(offsets[off]), int(offsets[off + n])
        return arr.values.slice(first, last - first)
    return arr.flatten()


def null_mask(arr: Any) -> np.ndarray:
    return arr.is_null().to_numpy(zero_copy_only=False)
