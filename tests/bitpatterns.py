"""Array data for the store tests that must reach every bit pattern (shared by modules).

``values`` is a hypothesis strategy whose floats are built from their bits, so NaN
payloads, -0.0, infinities and subnormals all occur; ``grid_data`` is the deterministic
counterpart for the exhaustive type × element-type grids.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from infrastore_sqlite.core.elements import NUMPY_DTYPES, parse_element_type

SPECIAL_F64 = [
    0x7FF8000000000000,  # quiet NaN
    0x7FF8000000000001,  # quiet NaN with payload
    0xFFF8000000000000,  # negative NaN
    0x7FF0000000000001,  # signalling NaN
    0x8000000000000000,  # -0.0
    0x7FF0000000000000,  # +inf
    0xFFF0000000000000,  # -inf
    0x0000000000000001,  # smallest subnormal
]
SPECIAL_F32 = [0x7FC00000, 0x7FC00001, 0xFFC00000, 0x7F800001, 0x80000000, 0x7F800000, 0xFF800000]


def values(dtype: str, shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    """Arrays of ``dtype`` with every bit pattern reachable (floats built from their bits)."""
    if dtype in ("f64", "f32"):
        bits, special = (np.uint64, SPECIAL_F64) if dtype == "f64" else (np.uint32, SPECIAL_F32)
        top = 2 ** (8 * np.dtype(bits).itemsize) - 1
        floats = st.floats(width=64 if dtype == "f64" else 32, allow_nan=False)
        as_bits = floats.map(lambda f: int(np.array(f, dtype=NUMPY_DTYPES[dtype]).view(bits)))
        elements = st.one_of(st.sampled_from(special), st.integers(0, top), as_bits)
        return hnp.arrays(bits, shape, elements=elements).map(lambda a: a.view(NUMPY_DTYPES[dtype]))
    return hnp.arrays(NUMPY_DTYPES[dtype], shape)


def grid_data(
    element_type: str, e: tuple[int, ...], lead: tuple[int, ...], seed: int
) -> np.ndarray:
    """Deterministic data for one grid cell, special float values and integer extremes
    included; ragged composites get one full row so their width is minimal."""
    rng = np.random.default_rng(seed)
    et = parse_element_type(element_type)
    dtype = NUMPY_DTYPES[et.dtype]
    shape = (*lead, *e)
    if et.is_ragged:
        cells = int(np.prod(lead))
        width = e[0]
        rows = np.zeros((cells, width))
        for r in range(cells):
            n = int(rng.integers(0, 3))
            used = 1 + 2 * n if et.kind == "piecewise_linear" else (2 * n if n else 1)
            rows[r, 0] = n
            rows[r, 1:used] = rng.normal(size=used - 1)
        rows[0, 0] = 2  # at least one full row, so the width is minimal
        rows[0, 1:] = rng.normal(size=width - 1)
        return rows.reshape(shape)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "f":
        bits = np.uint64 if dtype.itemsize == 8 else np.uint32
        special = SPECIAL_F64 if dtype.itemsize == 8 else SPECIAL_F32
        out = rng.normal(size=shape).astype(dtype)
        flat = out.reshape(-1).view(bits)
        flat[: len(special)] = np.array(special, dtype=bits)[: flat.size]
        return out
    info = np.iinfo(dtype)
    out = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    out.reshape(-1)[:2] = [info.min, info.max][: out.size]
    return out
