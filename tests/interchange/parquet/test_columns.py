"""``interchange/parquet/columns.py``: Arrow columns as numpy without compute kernels.

``list_values`` must give what ``Array.flatten`` gives for every list kind the reader
takes (fixed-size, variable, large, nested, sliced, empty), and an import of shaped and
composite values must not load ``pyarrow.compute`` (its first import costs a sixth of a
second, which a small import would pay in full).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
from varied_store import build_varied, new_store

from infrastore_sqlite.interchange.parquet.columns import list_values, to_numpy

ROWS = [[1.5, -0.0], [float("nan"), 2.0], [float("inf"), -3.0], [4.0, 5.0]]


def _lists() -> list[pa.Array]:
    fixed = pa.array(ROWS, type=pa.list_(pa.float64(), 2))
    var = pa.array(ROWS, type=pa.list_(pa.float64()))
    large = pa.array(ROWS, type=pa.large_list(pa.float64()))
    nested = pa.array([[r, r] for r in ROWS], type=pa.list_(pa.list_(pa.float64(), 2), 2))
    return [fixed, var, large, nested]


@pytest.mark.parametrize("arr", _lists(), ids=["fixed", "list", "large_list", "nested"])
@pytest.mark.parametrize("cut", [(0, 4), (1, 2), (3, 1), (2, 0), (4, 0)])
def test_list_values_is_flatten(arr: pa.Array, cut: tuple[int, int]) -> None:
    part = arr.slice(*cut)
    got, want = list_values(pa, part), part.flatten()
    assert got.type == want.type
    assert len(got) == len(want)
    while pa.types.is_list(got.type) or pa.types.is_fixed_size_list(got.type):
        got, want = list_values(pa, got), want.flatten()
    # Bits, so that NaN and -0.0 count.
    assert to_numpy(pa, got).tobytes() == to_numpy(pa, want).tobytes()


def test_list_values_empty_list_array() -> None:
    empty = pa.array([], type=pa.list_(pa.float64()))
    assert len(list_values(pa, empty)) == 0


def test_import_parquet_does_not_load_pyarrow_compute(tmp_path: Path) -> None:
    src = new_store(tmp_path / "src.h5")
    try:
        build_varied(src)  # shaped, tuple and composite values: fixed-size lists
        src.export_parquet(tmp_path / "pq")
    finally:
        src.close()
    script = textwrap.dedent(
        f"""
        import sys
        import pyarrow.parquet
        from infrastore_sqlite import Store
        store = Store.create({str(tmp_path / "dst.h5")!r})
        store.import_parquet({str(tmp_path / "pq")!r})
        store.close()
        print("pyarrow.compute" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
