"""The ``value`` cells against the reference implementation (``infrastore`` 0.15.1).

Every test builds a small store with the reference, exports it with ``export_sqlite`` and
reads the ``value`` column back with apsw: our encoders must write the same cells, our
decoders must read the reference's cells back bit-exactly, and on edited cells our
decoders must accept what the reference's import accepts and refuse what it refuses,
with the same message.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from pathlib import Path

import apsw
import infrastore
import numpy as np
import pytest

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.sqlite.cells import (
    decode_cells,
    decode_json_cells,
    decode_scalar_cells,
    encode_json_cells,
    encode_scalar_cells,
    has_negative_zero,
)

pytestmark = pytest.mark.interop

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOT_JSON = "a `value` cell is not JSON: "
NAMES = {
    np.dtype(np.float64): "f64",
    np.dtype(np.float32): "f32",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.bool_): "bool",
    np.dtype(np.int16): "i16",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint8): "u8",
}


def reference_export(path: Path, data: np.ndarray, element_type: str | None = None) -> str:
    """Export one SingleTimeSeries with the reference; the name of its values table."""
    store = infrastore.Store.create(in_memory=True)
    kwargs = {"element_type": element_type} if element_type else {}
    series = infrastore.SingleTimeSeries(T0, "PT1H", data, "x", **kwargs)
    store.add_time_series(1, "Gen", infrastore.OwnerCategory.Component, series)
    store.export_sqlite(str(path))
    with apsw.Connection(str(path)) as con:
        (name,) = con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%\\_values' ESCAPE '\\'"
        ).fetchone()
    return name


def read_cells(path: Path, table: str) -> list:
    con = apsw.Connection(str(path))
    try:
        return [v for (v,) in con.execute(f'SELECT value FROM "{table}" ORDER BY timestamp')]
    finally:
        con.close()


def reference_cells(tmp_path: Path, data: np.ndarray, element_type: str | None = None) -> list:
    path = tmp_path / "ref.db"
    return read_cells(path, reference_export(path, data, element_type))


def canonical(data: np.ndarray) -> np.ndarray:
    """What the store keeps: every NaN as the canonical quiet NaN."""
    data = data.copy()
    if data.dtype.kind == "f":
        data[np.isnan(data)] = np.nan
    return data


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind == "f":
        nan = np.isnan(expected)
        assert np.array_equal(np.isnan(actual), nan)
        size = actual.dtype.itemsize
        a = np.ascontiguousarray(actual).view(f"u{size}")
        e = np.ascontiguousarray(expected).view(f"u{size}")
        assert np.array_equal(a[~nan], e[~nan])
    else:
        assert np.array_equal(actual, expected)


def random_floats(rng: np.random.Generator, n: int, dtype: type) -> np.ndarray:
    """Random bit patterns, plus the awkward values, in one array."""
    width = np.dtype(dtype).itemsize * 8
    patterns = rng.integers(0, 2**width, size=n, dtype=np.uint64 if width == 64 else np.uint32)
    values = patterns.view(dtype)
    info = np.finfo(dtype)
    special = [np.nan, np.inf, -np.inf, -0.0, 0.0, info.max, -info.max, info.tiny]
    special += [info.smallest_subnormal, 0.1, 1e-5, 2.5e-5, 1e15, 1e16, 1e-6, 1e-7, 1 / 3]
    values[: len(special)] = np.array(special).astype(dtype)
    # Round numbers and powers of ten exercise the fixed/scientific boundary.
    tens = 10.0 ** rng.integers(-30, 30, size=n // 4)
    values[len(special) : len(special) + tens.size] = tens.astype(dtype)
    return values


# ---------------------------------------------------------------------------------------
# our cells are the reference's cells


SHAPED_CASES = {
    "f64_2": lambda: np.array(
        [
            [0.0, 1.0],
            [np.nan, -0.0],
            [np.inf, -np.inf],
            [1e-5, 1e16],
            [5e-324, 1.7976931348623157e308],
        ]
    ),
    "f64_2x3": lambda: np.arange(24.0).reshape(4, 2, 3) / 7 - 1,
    "f32_2": lambda: np.array(
        [[0.1, 1.1], [np.nan, -0.0], [np.inf, 3.4028235e38]], dtype=np.float32
    ),
    "f32_2x3": lambda: (np.arange(12.0).reshape(2, 2, 3) / 3).astype(np.float32),
    "i32_2": lambda: np.array([[-(2**31), 2**31 - 1], [0, -1]], dtype=np.int32),
    "i64_2": lambda: np.array([[-(2**63), 2**63 - 1], [0, 1]], dtype=np.int64),
    "u64_2": lambda: np.array([[2**63 - 1, 0], [5, 6]], dtype=np.uint64),
    "i16_3": lambda: np.array([[-32768, 32767, 0]], dtype=np.int16),
    "i8_2x3": lambda: np.array([[[-128, 127, 0], [1, 2, 3]]], dtype=np.int8),
    "u32_2": lambda: np.array([[4294967295, 0]], dtype=np.uint32),
    "u16_2": lambda: np.array([[65535, 0]], dtype=np.uint16),
    "u8_2x3": lambda: np.array([[[255, 0, 1], [2, 3, 4]]], dtype=np.uint8),
    "bool_2": lambda: np.array([[True, False], [False, True]]),
    "bool_2x3": lambda: np.array([[[True, False, True], [False, False, True]]]),
}


@pytest.mark.parametrize("case", list(SHAPED_CASES))
def test_json_cells_match_the_reference(tmp_path: Path, case: str) -> None:
    data = SHAPED_CASES[case]()
    cells = reference_cells(tmp_path, data)
    assert cells == encode_json_cells(data)
    dtype = NAMES[data.dtype]
    assert_same(decode_json_cells(cells, dtype), canonical(data))


def test_tuple_cells_match_the_reference(tmp_path: Path) -> None:
    data = np.array([[1.0, 2.0, 3.0], [np.nan, -0.0, np.inf], [0.1, 1e-7, 1e22]])
    cells = reference_cells(tmp_path, data, element_type="tuple(3,f64)")
    assert cells == encode_json_cells(data)
    assert cells[1] == '[null,-0.0,"Infinity"]'
    assert_same(decode_json_cells(cells, "f64"), canonical(data))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_random_float_texts_match_the_reference(tmp_path: Path, dtype: type) -> None:
    rng = np.random.default_rng(20240101 + np.dtype(dtype).itemsize)
    data = random_floats(rng, 3000, dtype).reshape(-1, 2)
    cells = reference_cells(tmp_path, data)
    ours = encode_json_cells(data)
    mismatches = [(a, b) for a, b in zip(cells, ours, strict=True) if a != b]
    assert not mismatches, mismatches[:5]
    assert_same(decode_json_cells(cells, NAMES[np.dtype(dtype)]), canonical(data))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_random_scalar_floats_match_the_reference(tmp_path: Path, dtype: type) -> None:
    rng = np.random.default_rng(7 + np.dtype(dtype).itemsize)
    data = random_floats(rng, 2000, dtype)
    data = data[~((data == 0) & np.signbit(data))]  # the reference refuses a scalar -0.0
    cells = reference_cells(tmp_path, data)
    ours = encode_scalar_cells(data).tolist()
    assert [None if math.isnan(v) else v for v in ours] == cells  # NaN is stored as NULL
    for a, b in zip(cells, ours, strict=True):
        if a is not None:
            assert math.copysign(1.0, a) == math.copysign(1.0, b)
    assert_same(decode_scalar_cells(cells, NAMES[np.dtype(dtype)]), canonical(data))


@pytest.mark.parametrize(
    "data",
    [
        np.array([-(2**63), 2**63 - 1, 0], dtype=np.int64),
        np.array([-(2**31), 2**31 - 1], dtype=np.int32),
        np.array([2**63 - 1, 0], dtype=np.uint64),
        np.array([-32768, 32767], dtype=np.int16),
        np.array([-128, 127], dtype=np.int8),
        np.array([4294967295, 0], dtype=np.uint32),
        np.array([65535, 0], dtype=np.uint16),
        np.array([255, 0], dtype=np.uint8),
        np.array([True, False, True]),
    ],
    ids=lambda a: NAMES[a.dtype],
)
def test_scalar_int_cells_match_the_reference(tmp_path: Path, data: np.ndarray) -> None:
    cells = reference_cells(tmp_path, data)
    assert encode_scalar_cells(data).tolist() == cells
    assert_same(decode_scalar_cells(cells, NAMES[data.dtype]), data)


@pytest.mark.parametrize("shape", [(), (2,)])
def test_u64_refusal_matches_the_reference(tmp_path: Path, shape: tuple[int, ...]) -> None:
    data = np.array([1, 2**63, 2**64 - 1, 3], dtype=np.uint64).reshape((-1, *shape))
    with pytest.raises(infrastore.InvalidParameterError) as ref:
        reference_export(tmp_path / "u64.db", data)
    encode = encode_json_cells if shape else encode_scalar_cells
    with pytest.raises(InvalidParameterError) as ours:
        encode(data)
    assert str(ours.value) == str(ref.value)
    assert str(ours.value) == "u64 value 9223372036854775808 does not fit a SQLite INTEGER"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_negative_zero_refusal_matches_the_reference(tmp_path: Path, dtype: type) -> None:
    scalar = np.array([1.0, -0.0], dtype=dtype)
    with pytest.raises(infrastore.InvalidParameterError, match=r"scalar -0\.0"):
        reference_export(tmp_path / "nz.db", scalar)
    assert has_negative_zero(scalar)
    # Inside JSON the sign survives, on both sides.
    shaped = np.array([[1.0, -0.0]], dtype=dtype)
    cells = reference_cells(tmp_path, shaped)
    assert cells == encode_json_cells(shaped) == ["[1.0,-0.0]"]
    assert_same(decode_json_cells(cells, NAMES[np.dtype(dtype)]), shaped)


# ---------------------------------------------------------------------------------------
# edited cells: what the reference's import accepts, we accept; what it refuses, we refuse

EDITED = [
    # (dtype, element shape, cells written over the exported ones, row by row)
    ("f64", (), ["5.5", 7.0]),
    ("f64", (), ["abc", 7.0]),
    ("f64", (), [b"ab", 7.0]),
    ("f64", (), ['"5.5"', 7.0]),
    ("f64", (), ["true", 7.0]),
    ("f64", (), ["null", 7.0]),
    ("f64", (), [None, 7.0]),
    ("f64", (), [3, 7.0]),
    ("f64", (), ['"Infinity"', '"-Infinity"']),
    ("f64", (), ['"NaN"', 7.0]),
    ("f64", (), ["[1.0]", 7.0]),
    ("f64", (), ["[1.5]", "[2]"]),
    ("f64", (), [" 5.5 ", "+5"]),
    ("f64", (), ["1e400", "-0"]),
    ("f64", (), ["{}", 1.0]),
    ("f64", (), ["", 1.0]),
    ("f64", (), ["5 x", 1.0]),
    ("f32", (), [1e300, 0.1]),
    ("i32", (), [2.0, 3000000000]),
    ("i32", (), [1.5, 3]),
    ("i32", (), [None, 3]),
    ("i32", (), ["7", "7.0"]),
    ("i32", (), ["abc", 3]),
    ("i32", (), [b"x", 3]),
    ("i32", (), [1e30, 3]),
    ("i32", (), [math.inf, 3]),
    ("i32", (), ["true", "false"]),
    ("i32", (), ['"7"', 3]),
    ("i32", (), ["3e9", 7]),
    ("i32", (), ["9223372036854775808", 7]),
    ("i32", (), [-0.0, 4.611686018427388e18]),
    ("u64", (), [-1, 3]),
    ("u64", (), [9.2e18, 7]),
    ("u64", (), ["18446744073709551615", 7]),
    ("u8", (), [256, 3]),
    ("i64", (), [9.223372036854776e18, 3]),
    ("bool", (), [2, 1]),
    ("bool", (), [1.0, None]),
    ("bool", (), ["true", "false"]),
    ("bool", (), ["1", 0]),
    ("bool", (), [0.5, 0]),
    ("bool", (), ['"x"', 1]),
    ("bool", (), ['"Infinity"', 1]),
    ("bool", (), [-0.0, 1.0]),
    ("f64", (2,), ['[1,"Infinity"]', '[null,"-Infinity"]']),
    ("f64", (2,), ['[1,"NaN"]', "[1,2]"]),
    ("f64", (2,), ["[1,2,3]", "[1,2]"]),
    ("f64", (2,), [None, "[1,2]"]),
    ("f64", (2,), ["[1,2]", None]),
    ("f64", (2,), ["[1,2", "[1,2]"]),
    ("f64", (2,), [" [ 1 , 2 ] ", "[1,2]\n"]),
    ("f64", (2,), ["[true,false]", "[-0,1]"]),
    ("f64", (2,), ["[[1,2]]", "[1,2]"]),
    ("f64", (2,), ["[1e400,2]", "[1,2]"]),
    ("f64", (2,), ['["1",2]', "[1,2]"]),
    ("f64", (2,), ["[1,{}]", "[1,2]"]),
    ("f64", (2,), [1.5, "[1,2]"]),
    ("f64", (2,), [1.5, 2.5]),
    ("f64", (2,), [b"[1,2]", "[1,2]"]),
    ("f64", (2,), ["[1,2]", "[1,2]x"]),
    ("f64", (2,), ["[1,2],[3", "4]"]),
    ("f64", (2,), ['[1,"a\\"b\\u00e9\\n"]', "[1,2]"]),
    ("f64", (2,), ['["\\u0049nfinity",2]', "[1,2]"]),
    ("f64", (2,), ["[1,2,3]", '[1,"NaN"]']),
    ("f64", (2,), ['[[1,"NaN"],[2]]', "[1,2]"]),
    ("f64", (2,), ['[[2],[1,"NaN"]]', "[1,2]"]),
    ("f64", (2,), ['[1,[2],"NaN"]', "[1,2]"]),
    ("f64", (2,), ["[1,2]", "[[1,2],[3]]"]),
    ("f64", (2,), ["[1,2]", "[1,18446744073709551615]"]),
    ("f32", (2,), ["[0.1,3.4028235677973366e38]", "[1e-46,-0.0]"]),
    ("i32", (2,), ["[1,2.0]", "[1,2]"]),
    ("i32", (2,), ["[1,null]", "[1,2]"]),
    ("i32", (2,), ["[1,3000000000]", "[1,2]"]),
    ("i32", (2,), ['[1,"Infinity"]', "[1,2]"]),
    ("i32", (2,), ["[1,true]", "[false,2]"]),
    ("i32", (2,), ['[1.5,"abc"]', "[1,2]"]),
    ("i32", (2,), ["[3000000000,1.5]", "[1,2]"]),
    ("i32", (2,), ["[1,2]", "[1.5,2,3]"]),
    ("i32", (2,), ["[1,2]", "[3000000000,1,2]"]),
    ("i64", (2,), ["[-0,1]", "[1,1]"]),
    ("i64", (2,), ["[-9223372036854775808,9223372036854775807]", "[-9223372036854775809,1]"]),
    ("u64", (2,), ["[1,18446744073709551615]", "[1,2]"]),
    ("u64", (2,), ["[1,-1]", "[1,2]"]),
    ("u64", (2,), ["[9223372036854775807,2]", "[0,2]"]),
    ("bool", (2,), ["[1,2]", "[1,0]"]),
    ("bool", (2,), ["[true,false]", "[1.0,0]"]),
    ("bool", (2,), ["[null,0]", "[1,0]"]),
    ("bool", (2,), ['["Infinity",0]', "[1,0]"]),
    ("bool", (2,), ["[true,false]", "[0,1]"]),
    ("f64", (2, 3), ["[[1,2,3],[4,5,6]]", "[1,2,3,4,5,6]"]),
    ("f64", (2, 3), ["[[1,2,3],[4,5]]", "[[1,2,3],[4,5,6]]"]),
    ("f64", (2, 3), ["[[1,2,3],[4,5,6]]", "[[1,2],[3,4],[5,6]]"]),
    ("f64", (2, 3), ["[[1,2,3],[4,5,6]]", "[[1,2,3],4]"]),
]

DTYPE_OF = {name: dt for dt, name in NAMES.items()}


def edited_export(path: Path, dtype: str, shape: tuple[int, ...], cells: list) -> list:
    """Export zeros with the reference, overwrite the value cells; the cells read back."""
    table = reference_export(path, np.zeros((len(cells), *shape), dtype=DTYPE_OF[dtype]))
    con = apsw.Connection(str(path))
    try:
        rowids = [r for (r,) in con.execute(f'SELECT rowid FROM "{table}" ORDER BY timestamp')]
        for rowid, cell in zip(rowids, cells, strict=True):
            con.execute(f'UPDATE "{table}" SET value = ? WHERE rowid = ?', (cell, rowid))
    finally:
        con.close()
    # Affinity may have turned the text into a number: compare on what the file holds.
    return read_cells(path, table)


def in_reference_words(message: str) -> str:
    """Our refusal spelled as the reference spells it. Two rewordings of ours (issue 38),
    and only those: the article before a dtype ("an i32 array", "does not fit an i32")
    and a NULL in an integer or bool array named as a NULL (the reference calls it "not
    an integer" and "other than 0 or 1")."""
    null = re.fullmatch(r"an? (\w+) array holds a NULL `value` cell .*", message)
    if null:
        dtype = null.group(1)
        if dtype == "bool":
            return "a bool array holds a value other than 0 or 1"
        return f"a {dtype} array holds a value that is not an integer"
    return re.sub(r"\ban ([if]\d+)\b", r"a \1", message)


@pytest.mark.parametrize(("dtype", "shape", "cells"), EDITED)
def test_edited_cells_decode_as_the_reference_imports_them(
    tmp_path: Path, dtype: str, shape: tuple[int, ...], cells: list
) -> None:
    path = tmp_path / "edited.db"
    stored = edited_export(path, dtype, shape, cells)
    target = infrastore.Store.create(in_memory=True)
    try:
        ids = target.import_sqlite(str(path), skip_checksum=True)
    except infrastore.InvalidParameterError as exc:
        expected = str(exc)
        with pytest.raises(InvalidParameterError) as ours:
            decode_cells(stored, dtype)
        if expected.startswith(NOT_JSON):
            # The parser's own words differ (serde_json there, orjson here).
            assert str(ours.value).startswith(NOT_JSON)
        else:
            assert in_reference_words(str(ours.value)) == expected
        return
    reference = np.asarray(target.read_by_id(ids[0]).data)
    assert_same(decode_cells(stored, dtype), reference)
