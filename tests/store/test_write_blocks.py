"""The segment writer's block of a write: many arrays of one pool joined in one copy
(``ArrayFile._write_now``), each stored in its own slot, whatever their layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infrastore_sqlite import StorageError
from infrastore_sqlite.store.arrays import ArrayFile


def test_many_shaped_arrays_each_land_in_their_slot(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", compression="none")
    rng = np.random.default_rng(7)
    arrays = [rng.random((4, 3)) for _ in range(50)]
    f.write("f64__4_3", "f64", [4, 3], 0, arrays)
    back = f.read("f64__4_3", list(range(49, -1, -1)))
    for got, want in zip(back, arrays[::-1], strict=True):
        np.testing.assert_array_equal(got, want)
    f.close()


def test_views_and_other_byte_orders_are_stored_as_their_values(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x")
    base = np.arange(60, dtype=np.float64).reshape(6, 10)
    arrays = [base[:, 1], base[:, 7], np.arange(6, dtype=">f8") * 2.5]  # strided, big-endian
    f.write("f64__6", "f64", [6], 0, arrays)
    for got, want in zip(f.read("f64__6", [0, 1, 2]), arrays, strict=True):
        np.testing.assert_array_equal(got, want)
    f.close()


def test_arrays_of_another_shape_are_refused_even_when_the_sizes_add_up(
    tmp_path: Path,
) -> None:
    # 4 + 2 + 6 values: as many as three arrays of the pool's 4, which a join of the
    # values alone would store shifted across the slots.
    f = ArrayFile(tmp_path / "a.h5", "x")
    f.write("f64__4", "f64", [4], 0, [np.zeros(4)])
    with pytest.raises(StorageError, match="writing pool f64__4"):
        f.write("f64__4", "f64", [4], 1, [np.ones(4), np.ones(2), np.ones(6)])
        f.sync()
    f.write("f64__4", "f64", [4], 1, [np.ones(4), np.full(4, 2.0)])  # the file goes on
    assert [float(a[0]) for a in f.read("f64__4", [0, 1, 2])] == [0.0, 1.0, 2.0]
    f.close()
