"""Tests for the SQLite reader's float64 fast path (``reader.decoding.decode``): it
gives what :func:`decode_cells` gives for every list of cells apsw can hand over, and
a fused read's refused row (a blob) still sends the group back."""

from __future__ import annotations

import numpy as np
import pytest

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.sqlite.cells import decode_cells
from infrastore_sqlite.interchange.sqlite.reader.decoding import decode

CASES = {
    "floats": [1.5, -0.0, 2.25e300, float("inf"), float("-inf")],
    "ints": [1, -2, 2**53 + 1, 2**63 - 1, -(2**63)],
    "mixed": [1.5, 2, -3, 4.25],
    "null": [1.5, None, 3.0],
    "all null": [None, None],
    "json text": [1.5, "2.5", 3],
    "empty": [],
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_as_decode_cells(name: str) -> None:
    cells = CASES[name]
    got = decode(cells, "f64")
    want = decode_cells(cells, "f64")
    assert got.dtype == np.float64
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_nan_cell_kept() -> None:
    got = decode([1.0, float("nan")], "f64")
    assert got[0] == 1.0 and np.isnan(got[1])


def test_fused_blob_marks_refused_row() -> None:
    assert decode([1.5, b"\x00", 2.5], "f64", fused=True) is None


@pytest.mark.parametrize("bad", ["x", b"\x01\x02"])
def test_unfused_bad_cell_refused(bad: object) -> None:
    with pytest.raises(InvalidParameterError):
        decode([1.5, bad], "f64")


def test_other_dtype_untouched() -> None:
    got = decode([1, 2, 3], "i64")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [1, 2, 3])
