"""Tests for the ``value`` cells: numpy rows to SQLite cells and back (peer contract §5, §7, §14.4)."""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal

import apsw
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.sqlite import cells as cells_mod
from infrastore_sqlite.interchange.sqlite.cells import (
    DTYPES,
    decode_cells,
    decode_json_cells,
    decode_scalar_cells,
    encode_json_cells,
    encode_scalar_cells,
    has_negative_zero,
    sql_value_type,
)

ALL_DTYPES = ["f64", "f32", "i64", "i32", "u64", "bool", "i16", "i8", "u32", "u16", "u8"]
INT_DTYPES = ["i64", "i32", "u64", "i16", "i8", "u32", "u16", "u8"]

NOT_JSON = "a `value` cell is not JSON: "
BLOB = "a `value` cell is a blob; the layout writes numbers or JSON text"
RAGGED = "a `value` cell is a ragged JSON array"
NOT_BOOL = "a bool array holds a value other than 0 or 1"


def holds(text: str) -> str:
    return f"a `value` cell holds {text}, not a number"


def shapes(a: str, b: str) -> str:
    return f"two `value` cells of one array have different shapes ({a} and {b})"


def not_int(dtype: str) -> str:
    return f"{article(dtype)} {dtype} array holds a value that is not an integer"


def null_int(dtype: str) -> str:
    write = "0 or 1" if dtype == "bool" else "an integer"
    return f"{article(dtype)} {dtype} array holds a NULL `value` cell (a NaN, which it cannot hold); write {write} there"


def article(dtype: str) -> str:
    return "an" if dtype[0] in "if" else "a"


def bits(a: np.ndarray) -> np.ndarray:
    """The raw bits of an array, so that -0.0 and NaN payloads compare exactly."""
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal dtype, shape and bits; any NaN matches any NaN (the payload is not kept)."""
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind == "f":
        nan = np.isnan(expected)
        assert np.array_equal(np.isnan(actual), nan)
        assert np.array_equal(bits(actual)[~nan], bits(expected)[~nan])
    else:
        assert np.array_equal(actual, expected)


def raises(message: str):
    """pytest.raises for an InvalidParameterError whose message is exactly ``message``,
    or starts with it for the "not JSON" messages (the parser's words follow)."""
    tail = "" if message.startswith(NOT_JSON) else "$"
    return pytest.raises(InvalidParameterError, match="^" + re.escape(message) + tail)


def spec_float_text(x: float) -> str:
    """Peer contract §5.2, written independently of orjson: shortest round-trip digits
    (Python's repr), fixed notation for decimal exponents in [-5, 15], else d.ddde±X."""
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    d = Decimal(repr(abs(x))).normalize()
    _, digit_tuple, exp = d.as_tuple()
    digits = "".join(map(str, digit_tuple))
    e = len(digits) - 1 + exp
    if -5 <= e <= 15:
        if e >= 0:
            whole = digits[: e + 1].ljust(e + 1, "0")
            frac = digits[e + 1 :] or "0"
            return f"{sign}{whole}.{frac}"
        return f"{sign}0.{'0' * (-e - 1)}{digits}"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"


def f64_from_bits(u: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", u))[0]


# ---------------------------------------------------------------------------------------
# sql_value_type


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (2,), (2, 3), (3,), (1,)])
def test_sql_value_type(dtype: str, shape: tuple[int, ...]) -> None:
    expected = "TEXT" if shape else ("REAL" if dtype in ("f64", "f32") else "INTEGER")
    assert sql_value_type(dtype, shape) == expected


@pytest.mark.parametrize("dtype", ["float", "f16", "int", "", None])
def test_sql_value_type_refuses_unknown_dtype(dtype) -> None:
    with pytest.raises(InvalidParameterError, match="unknown dtype"):
        sql_value_type(dtype, ())


def test_dtypes_table() -> None:
    assert list(DTYPES) == ALL_DTYPES
    assert DTYPES["bool"] == np.dtype(np.bool_)


# ---------------------------------------------------------------------------------------
# §5.1 cell content, scalar


def test_scalar_f64_is_contiguous_float64_and_nan_inf_pass_through() -> None:
    rows = np.array([1.5, np.nan, np.inf, -np.inf, 5e-324, -1.7976931348623157e308])
    out = encode_scalar_cells(rows)
    assert out.dtype == np.float64 and out.flags.c_contiguous
    assert_same(out, rows)


def test_scalar_f32_is_widened_exactly() -> None:
    rows = np.array([1.1, 0.1, np.nan, np.inf, 3.4028234663852886e38, 1e-45], dtype=np.float32)
    out = encode_scalar_cells(rows)
    assert out.dtype == np.float64
    assert out[0] == 1.100000023841858
    assert out[1] == 0.10000000149011612
    assert_same(out, rows.astype(np.float64))


def test_scalar_strided_input_becomes_contiguous() -> None:
    rows = np.arange(10.0)[::3]
    out = encode_scalar_cells(rows)
    assert out.flags.c_contiguous
    assert out.tolist() == [0.0, 3.0, 6.0, 9.0]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_scalar_int_extremes_are_int64(dtype: str) -> None:
    info = np.iinfo(DTYPES[dtype])
    hi = min(int(info.max), 2**63 - 1)
    rows = np.array([info.min, 0, hi], dtype=DTYPES[dtype])
    out = encode_scalar_cells(rows)
    assert out.dtype == np.int64 and out.flags.c_contiguous
    assert out.tolist() == [int(info.min), 0, hi]


def test_scalar_bool_is_0_1() -> None:
    out = encode_scalar_cells(np.array([True, False, True]))
    assert out.dtype == np.int64
    assert out.tolist() == [1, 0, 1]


def test_scalar_u64_max_allowed_and_above_refused() -> None:
    assert encode_scalar_cells(np.array([2**63 - 1], dtype=np.uint64)).tolist() == [2**63 - 1]
    with raises("u64 value 9223372036854775808 does not fit a SQLite INTEGER") as info:
        encode_scalar_cells(np.array([1, 2**63, 5], dtype=np.uint64))
    assert info.value.key == 2**63


def test_scalar_u64_names_the_first_value_in_row_order() -> None:
    rows = np.array([3, 2**64 - 1, 2**63], dtype=np.uint64)
    with raises("u64 value 18446744073709551615 does not fit a SQLite INTEGER") as info:
        encode_scalar_cells(rows)
    assert info.value.key == 2**64 - 1


def test_scalar_refuses_shaped_rows_and_foreign_dtypes() -> None:
    with pytest.raises(InvalidParameterError, match=r"shape \[N\]"):
        encode_scalar_cells(np.zeros((2, 2)))
    for dtype in (np.float16, np.complex128, object, "U3"):
        with pytest.raises(InvalidParameterError, match="not a store dtype"):
            encode_scalar_cells(np.zeros(2, dtype=dtype))


def test_scalar_big_endian_input() -> None:
    rows = np.array([1.5, -2.0], dtype=">f8")
    assert encode_scalar_cells(rows).tolist() == [1.5, -2.0]
    assert encode_scalar_cells(np.array([7, -8], dtype=">i4")).tolist() == [7, -8]
    assert encode_json_cells(np.array([[1, 2]], dtype=">u2")) == ["[1,2]"]


# ---------------------------------------------------------------------------------------
# §7 -0.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_has_negative_zero(dtype) -> None:
    assert has_negative_zero(np.array([1.0, -0.0, 2.0], dtype=dtype))
    assert not has_negative_zero(np.array([1.0, 0.0, -1.0, np.nan, -np.inf], dtype=dtype))
    # A NaN with its sign bit set is not a zero.
    neg_nan = np.array([-np.nan], dtype=dtype)
    assert np.signbit(neg_nan[0])
    assert not has_negative_zero(neg_nan)
    assert has_negative_zero(np.array([[1.0, 2.0], [3.0, -0.0]], dtype=dtype)[:, 1])
    assert not has_negative_zero(np.array([], dtype=dtype))


def test_has_negative_zero_ints_and_big_endian() -> None:
    assert not has_negative_zero(np.array([0, -0], dtype=np.int64))
    assert not has_negative_zero(np.array([False]))
    assert has_negative_zero(np.array([-0.0], dtype=">f8"))


# ---------------------------------------------------------------------------------------
# §5.1 cell content, JSON


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (np.array([[0.0, 1.0], [2.5, -3.0]]), ["[0.0,1.0]", "[2.5,-3.0]"]),
        (
            np.arange(12.0).reshape(2, 2, 3),
            ["[[0.0,1.0,2.0],[3.0,4.0,5.0]]", "[[6.0,7.0,8.0],[9.0,10.0,11.0]]"],
        ),
        (np.array([[1.0, 2.0, 3.0]]), ["[1.0,2.0,3.0]"]),  # tuple(3,f64) is f64 [3]
        (np.array([[True, False], [False, True]]), ["[1,0]", "[0,1]"]),
        (
            np.array([[np.nan, -0.0], [np.inf, -np.inf]]),
            ["[null,-0.0]", '["Infinity","-Infinity"]'],
        ),
        (np.array([[0.1, 1.1]], dtype=np.float32), ["[0.10000000149011612,1.100000023841858]"]),
        (
            np.array([[-(2**63), 2**63 - 1]], dtype=np.int64),
            ["[-9223372036854775808,9223372036854775807]"],
        ),
        (np.array([[-(2**31), 2**31 - 1]], dtype=np.int32), ["[-2147483648,2147483647]"]),
        (np.array([[2**63 - 1, 0]], dtype=np.uint64), ["[9223372036854775807,0]"]),
        (np.array([[255, 0]], dtype=np.uint8), ["[255,0]"]),
        (np.array([[-128, 127]], dtype=np.int8), ["[-128,127]"]),
        (np.array([[65535, 1]], dtype=np.uint16), ["[65535,1]"]),
        (np.array([[-32768, 1]], dtype=np.int16), ["[-32768,1]"]),
        (np.array([[4294967295, 1]], dtype=np.uint32), ["[4294967295,1]"]),
        (np.array([[[True], [False]]]), ["[[1],[0]]"]),
        (np.array([[1.5]]), ["[1.5]"]),
    ],
)
def test_json_cells(rows: np.ndarray, expected: list[str]) -> None:
    assert encode_json_cells(rows) == expected


def test_json_cells_are_compact() -> None:
    (cell,) = encode_json_cells(np.arange(6.0).reshape(1, 3, 2))
    assert " " not in cell and cell == "[[0.0,1.0],[2.0,3.0],[4.0,5.0]]"


def test_json_inf_rows_fall_back_without_disturbing_the_others() -> None:
    rows = np.array([[1.0, 2.0], [np.inf, 3.0], [4.0, np.nan], [-np.inf, -0.0], [5.0, 6.0]])
    assert encode_json_cells(rows) == [
        "[1.0,2.0]",
        '["Infinity",3.0]',
        "[4.0,null]",
        '["-Infinity",-0.0]',
        "[5.0,6.0]",
    ]
    deep = np.array([[[1.0, np.inf], [np.nan, 2.0]], [[0.5, 0.25], [-np.inf, 1e300]]])
    assert encode_json_cells(deep) == [
        '[[1.0,"Infinity"],[null,2.0]]',
        '[[0.5,0.25],["-Infinity",1e+300]]',
    ]


def test_json_nan_any_payload_is_null() -> None:
    payloads = [0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8000000000000, 0x7FFFFFFFFFFFFFFF]
    rows = np.array([payloads], dtype=np.uint64).view(np.float64)
    assert encode_json_cells(rows) == ["[null,null,null,null]"]
    rows32 = np.array([[0x7FC00000, 0xFFC00001, 0x7F800001]], dtype=np.uint32).view(np.float32)
    assert encode_json_cells(rows32) == ["[null,null,null]"]


def test_json_u64_refused_first_in_row_major_order() -> None:
    rows = np.array([[1, 2], [3, 2**63 + 7], [2**64 - 1, 0]], dtype=np.uint64)
    with raises("u64 value 9223372036854775815 does not fit a SQLite INTEGER") as info:
        encode_json_cells(rows)
    assert info.value.key == 2**63 + 7


def test_json_edge_shapes() -> None:
    assert encode_json_cells(np.zeros((0, 2))) == []
    assert encode_json_cells(np.zeros((3, 0))) == ["[]", "[]", "[]"]
    assert encode_json_cells(np.zeros((2, 0, 2))) == ["[]", "[]"]
    assert encode_json_cells(np.zeros((2, 2, 0))) == ["[[],[]]", "[[],[]]"]
    assert encode_json_cells(np.ones((1, 1, 1, 1))) == ["[[[1.0]]]"]
    # Non-contiguous input (a transposed block) gives the same cells as its copy.
    block = np.arange(12.0).reshape(3, 4).T
    assert encode_json_cells(block) == encode_json_cells(np.ascontiguousarray(block))
    with pytest.raises(InvalidParameterError, match="per-step shape"):
        encode_json_cells(np.zeros(3))


# ---------------------------------------------------------------------------------------
# §5.2 float text format


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.00001, "0.00001"),
        (0.000025, "0.000025"),
        (123456789.0, "123456789.0"),
        (1000000000000000.0, "1000000000000000.0"),
        (9007199254740992.0, "9007199254740992.0"),
        (1e16, "1e+16"),
        (1.2345678901234568e17, "1.2345678901234568e+17"),
        (1e-6, "1e-6"),
        (1.5e-6, "1.5e-6"),
        (1e-7, "1e-7"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (0.1, "0.1"),
        (-2.5, "-2.5"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1e100, "1e+100"),
        (123.456, "123.456"),
    ],
)
def test_float_text_format(value: float, text: str) -> None:
    assert encode_json_cells(np.array([[value]])) == [f"[{text}]"]
    assert spec_float_text(value) == text  # the test oracle agrees with the table
    assert_same(decode_json_cells([f"[{text}]"], "f64"), np.array([[value]]))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (np.float32(0.1), "0.10000000149011612"),
        (np.finfo(np.float32).max, "3.4028234663852886e+38"),
        (np.float32(1e-45), "1.401298464324817e-45"),
        (np.float32(16777216.0), "16777216.0"),
    ],
)
def test_float_text_format_f32_widened(value: np.float32, text: str) -> None:
    rows = np.array([[value]], dtype=np.float32)
    assert encode_json_cells(rows) == [f"[{text}]"]
    assert_same(decode_json_cells([f"[{text}]"], "f32"), rows)


# ---------------------------------------------------------------------------------------
# §14.4 value cells accepted on import: scalar partitions

F = np.float64
SCALAR_ACCEPTED = [
    # (dtype, cells, expected)
    ("f64", [5, 1.5], np.array([5.0, 1.5])),  # an INTEGER in a REAL partition
    ("f64", ["5.5", 7.0], np.array([5.5, 7.0])),  # TEXT that parses as a JSON number
    ("f64", [None, 1.0], np.array([np.nan, 1.0])),  # NULL is NaN
    ("f64", [np.inf, -np.inf], np.array([np.inf, -np.inf])),
    ("f64", ['"Infinity"', '"-Infinity"'], np.array([np.inf, -np.inf])),
    ("f64", ["true", "false"], np.array([1.0, 0.0])),
    ("f64", ["null", "\n5\t"], np.array([np.nan, 5.0])),
    ("f64", ["-0", "-0.0"], np.array([-0.0, -0.0])),
    ("f64", [2**62 + 1], np.array([float(2**62 + 1)])),
    ("f32", [1e300, -1e300, 1e-46], np.array([np.inf, -np.inf, 0.0], dtype=np.float32)),
    ("f32", [0.10000000149011612, None], np.array([0.1, np.nan], dtype=np.float32)),
    ("i32", [2.0, 3], np.array([2, 3], dtype=np.int32)),  # a whole REAL in an int partition
    ("i32", [-0.0, "7"], np.array([0, 7], dtype=np.int32)),
    ("i32", ["true", "false"], np.array([1, 0], dtype=np.int32)),
    ("i64", [-(2**63), 2**63 - 1], np.array([-(2**63), 2**63 - 1])),
    ("u64", [2**63 - 1, 0], np.array([2**63 - 1, 0], dtype=np.uint64)),
    ("u64", [9.2e18], np.array([9200000000000000000], dtype=np.uint64)),
    ("u8", [255, 0.0], np.array([255, 0], dtype=np.uint8)),
    ("bool", [1, 0], np.array([True, False])),
    ("bool", ["true", "false"], np.array([True, False])),  # JSON true
    ("bool", [1.0, 0.0, -0.0], np.array([True, False, False])),  # 1.0
    ("bool", ["1", 0], np.array([True, False])),
]


@pytest.mark.parametrize(("dtype", "cells", "expected"), SCALAR_ACCEPTED)
def test_scalar_cells_accepted(dtype: str, cells: list, expected: np.ndarray) -> None:
    assert_same(decode_scalar_cells(cells, dtype), expected)
    assert_same(decode_cells(cells, dtype), expected)


SCALAR_REFUSED = [
    ("f64", ["abc", 7.0], NOT_JSON + "unexpected character"),
    ("f64", ["5 x"], NOT_JSON),
    ("f64", [""], NOT_JSON),
    ("f64", ["NaN"], NOT_JSON),
    ("f64", ["nan"], NOT_JSON),
    ("f64", ["inf"], NOT_JSON),
    ("f64", ["1e400"], NOT_JSON),
    ("f64", [b"ab", 7.0], BLOB),
    ("i32", [b"x"], BLOB),
    ("bool", [1, b""], BLOB),
    ("f64", ['"5.5"'], holds('"5.5"')),
    ("f64", ['"NaN"'], holds('"NaN"')),
    ("f64", ['{"b":1,"a":[1,2]}'], holds('{"a":[1,2],"b":1}')),
    ("f64", ["[1.0]", 7.0], shapes("[1]", "[]")),
    ("f64", [7.0, "[1.0]"], shapes("[]", "[1]")),
    ("f64", ["[]"], None),  # accepted as shape [0]; checked below
    ("i32", [1.5, 3], not_int("i32")),
    ("i32", [None, 3], null_int("i32")),
    ("i32", [3, None], null_int("i32")),
    ("u8", [None], null_int("u8")),
    ("bool", [None], null_int("bool")),
    ("i32", [1e30], not_int("i32")),
    ("i32", [math.inf], not_int("i32")),
    ("i32", [math.nan], not_int("i32")),
    ("i32", ['"Infinity"'], not_int("i32")),
    ("i32", ["7.0"], not_int("i32")),  # a JSON float, unlike the REAL 7.0
    ("i32", ["-0"], not_int("i32")),  # serde_json reads -0 as a float
    ("i32", ["9223372036854775808"], not_int("i32")),
    ("i64", [9.223372036854776e18], not_int("i64")),
    ("u64", ["18446744073709551615"], not_int("u64")),
    ("i32", [2.0, 3000000000], "3000000000 does not fit an i32"),
    ("i32", ["3e9"], not_int("i32")),
    ("i32", [4.611686018427388e18], "4611686018427387904 does not fit an i32"),
    ("i32", [3000000000.0], "3000000000 does not fit an i32"),
    ("u64", [-1, 3], "-1 does not fit a u64"),
    ("u64", [-1.0], "-1 does not fit a u64"),
    ("u8", [256, 3], "256 does not fit a u8"),
    ("i8", [5, -129], "-129 does not fit an i8"),
    ("i32", ['"7"'], holds('"7"')),
    ("bool", [2, 1], NOT_BOOL),
    ("bool", [1.0, None], null_int("bool")),
    ("bool", [0.5], NOT_BOOL),
    ("bool", ["null"], NOT_BOOL),
    ("bool", ['"Infinity"'], NOT_BOOL),
    ("bool", ["1.0"], NOT_BOOL),  # a JSON float, unlike the REAL 1.0
    ("bool", ['"x"'], holds('"x"')),
]


@pytest.mark.parametrize(("dtype", "cells", "message"), SCALAR_REFUSED)
def test_scalar_cells_refused(dtype: str, cells: list, message: str | None) -> None:
    if message is None:
        assert decode_scalar_cells(cells, dtype).shape == (1, 0)
        return
    with raises(message):
        decode_scalar_cells(cells, dtype)
    with raises(message):
        decode_cells(cells, dtype)


def test_not_json_message_has_a_position() -> None:
    with pytest.raises(InvalidParameterError) as info:
        decode_scalar_cells(["abc"], "f64")
    assert str(info.value) == (
        "a `value` cell is not JSON: unexpected character, expected a JSON value at line 1 column 1"
    )


@pytest.mark.parametrize(
    ("dtype", "cells", "message"),
    [
        (
            "f64",
            [1.0, "abc"],
            "a `value` cell holds the text 'abc' where a number belongs (the `value` column "
            "of a scalar f64 partition is REAL: a number, or NULL for NaN); write a number in "
            "that cell, or export the file again",
        ),
        (
            "u8",
            [3, ""],
            "a `value` cell holds the text '' where an integer belongs (the `value` column "
            "of a scalar u8 partition is INTEGER); write an integer in that cell, or export "
            "the file again",
        ),
        (
            "bool",
            ["x" * 50],
            f"a `value` cell holds the text '{'x' * 40}'… where 0 or 1 belongs (the `value` "
            "column of a scalar bool partition is INTEGER); write 0 or 1 in that cell, or "
            "export the file again",
        ),
        # JSON text that is no number keeps its own words; only broken JSON is reworded.
        ("f64", ['"5.5"'], holds('"5.5"')),
    ],
)
def test_text_where_a_number_belongs(dtype: str, cells: list, message: str) -> None:
    """A caller that knows the partition is scalar hears about text, not JSON (issue 24);
    without ``scalar`` the reference's words stay."""
    with raises(message):
        decode_cells(cells, dtype, scalar=True)
    with raises(NOT_JSON if message.startswith("a `value` cell holds the text") else message):
        decode_cells(cells, dtype)


def test_scalar_fast_path_refuses_ints_out_of_range_naming_the_first() -> None:
    with raises("70000 does not fit a u16"):
        decode_scalar_cells([1, 2, 70000, -5], "u16")
    with raises("-5 does not fit a u16"):
        decode_scalar_cells([1, 2, -5, 70000], "u16")


def test_scalar_numpy_scalars_are_numbers() -> None:
    assert_same(decode_scalar_cells([np.float64(1.5), np.int64(2)], "f64"), np.array([1.5, 2.0]))
    assert_same(decode_scalar_cells([np.int64(2), 1.0], "i8"), np.array([2, 1], dtype=np.int8))


@pytest.mark.parametrize("decode", [decode_cells, decode_scalar_cells, decode_json_cells])
def test_decode_edge_inputs(decode) -> None:
    for dtype in ALL_DTYPES:
        out = decode([], dtype)
        assert out.shape == (0,) and out.dtype == DTYPES[dtype]
        assert decode(tuple([1] if dtype != "bool" else [True]), dtype).dtype == DTYPES[dtype]
    with pytest.raises(InvalidParameterError, match="unknown dtype 'float'"):
        decode([1.0], "float")
    with pytest.raises(InvalidParameterError, match="Python list"):
        decode([[1.0]], "f64")


# ---------------------------------------------------------------------------------------
# §14.4 value cells accepted on import: JSON partitions

JSON_ACCEPTED = [
    ("f64", ['[1,"Infinity"]', '[null,"-Infinity"]'], [[1.0, np.inf], [np.nan, -np.inf]]),
    ("f64", [" [ 1 , 2 ] ", "[1,2]\n"], [[1.0, 2.0], [1.0, 2.0]]),  # whitespace
    ("f64", ["[true,false]", "[1,2]"], [[1.0, 0.0], [1.0, 2.0]]),
    ("f64", ["[-0,1]", "[-0.0,0]"], [[-0.0, 1.0], [-0.0, 0.0]]),
    ("f64", ["[1,18446744073709551615]"], [[1.0, 1.8446744073709552e19]]),
    ("f64", ["[1,100000000000000000000]"], [[1.0, 1e20]]),
    ("f64", ['["\\u0049nfinity",2]'], [[np.inf, 2.0]]),  # an escape, same string
    ("f64", ["[1e-400,2]"], [[0.0, 2.0]]),
    ("f64", ["[[1,2,3],[4,5,6]]"], [[[1, 2, 3], [4, 5, 6]]]),
    ("f64", ["[0.1000000000000000055511151231257827021181583404541015625]"], [[0.1]]),
    ("f32", ["[0.1,3.4028235677973366e38]", "[1e-46,-0.0]"], [[0.1, np.inf], [0.0, -0.0]]),
    ("i32", ["[false,true]", "[0,2]"], [[0, 1], [0, 2]]),
    ("i64", ["[-9223372036854775808,9223372036854775807]"], [[-(2**63), 2**63 - 1]]),
    ("u64", ["[9223372036854775807,2]"], [[2**63 - 1, 2]]),
    ("bool", ["[1,0]", "[true,false]"], [[True, False], [True, False]]),
    ("u8", ["[[255],[0]]"], [[[255], [0]]]),
]


@pytest.mark.parametrize(("dtype", "cells", "expected"), JSON_ACCEPTED)
def test_json_cells_accepted(dtype: str, cells: list, expected: list) -> None:
    want = np.array(expected, dtype=DTYPES[dtype])
    assert_same(decode_json_cells(cells, dtype), want)
    assert_same(decode_cells(cells, dtype), want)
    assert_same(cells_mod._decode_slow(cells, dtype), want)


JSON_REFUSED = [
    ("f64", ['[1,"NaN"]', "[1,2]"], holds('"NaN"')),
    ("f64", ["[1,2,3]", "[1,2]"], shapes("[3]", "[2]")),
    ("f64", ["[1,2]", "[1,2,3]"], shapes("[2]", "[3]")),
    ("f64", [None, "[1,2]"], shapes("[]", "[2]")),
    ("f64", ["[1,2]", None], shapes("[2]", "[]")),
    ("f64", [1.5, "[1,2]"], shapes("[]", "[2]")),
    ("f64", ["5", "[1,2]"], shapes("[]", "[2]")),
    ("f64", ["[[1,2]]", "[1,2]"], shapes("[1, 2]", "[2]")),
    ("f64", ["[1,2]", "[[1,2],[3,4]]"], shapes("[2]", "[2, 2]")),
    ("f64", ["[[1,2,3],[4,5,6]]", "[1,2,3,4,5,6]"], shapes("[2, 3]", "[6]")),
    ("f64", ["[[1,2,3],[4,5,6]]", "[[1,2],[3,4],[5,6]]"], shapes("[2, 3]", "[3, 2]")),
    ("f64", ["[1,2", "[1,2]"], NOT_JSON + "unexpected end of data"),
    ("f64", ["[1,2]", "[1,2]x"], NOT_JSON),
    ("f64", ["[1,2]", "nope"], NOT_JSON),
    ("f64", ["[1,2]", "[NaN,1]"], NOT_JSON),
    ("f64", ["[1,2]", "[Infinity,1]"], NOT_JSON),
    ("f64", ["[1,2]", "\ufeff[1,2]"], NOT_JSON),
    ("f64", ["[1,2]", "[1,2,]"], NOT_JSON),
    ("f64", ["[1,2]", "[01,2]"], NOT_JSON),
    ("f64", ["[1,2]", "[1.,2]"], NOT_JSON),
    ("f64", ["[1e400,2]", "[1,2]"], NOT_JSON),
    ("f64", ["[1,2],[3", "4]"], NOT_JSON),  # a cell may not borrow from its neighbour
    ("f64", ["[1,2,0],0,[3", "4]"], NOT_JSON),
    ("f64", ["[1,2]", "[1,2]", "[1,"], NOT_JSON),
    ("f64", ["[1,2]", b"[1,2]"], BLOB),
    ("f64", ['["1",2]'], holds('"1"')),
    ("f64", ['["infinity",2]'], holds('"infinity"')),
    ("f64", ['[1,"|"]', "[1,2]"], holds('"|"')),
    ("f64", ["[1,{}]"], holds("{}")),
    ("f64", ['[1,{"b":[1,2],"a":1}]'], holds('{"a":1,"b":[1,2]}')),
    ("f64", ['[1,"a\\"b\\u00e9\\n"]'], holds('"a\\"bé\\n"')),
    ("f64", ['[1,"é"]'], holds('"é"')),
    ("f64", ["[[1,2,3],[4,5]]"], RAGGED),
    ("f64", ["[[1],[]]", "[[1],[2]]"], RAGGED),
    ("f64", ["[1,[2]]"], RAGGED),
    ("f64", ["[[1,2,3],4]"], RAGGED),
    # reading order decides which of two faults is reported
    ("f64", ["[1,2,3]", '[1,"NaN"]'], holds('"NaN"')),
    ("f64", ['[[1,"NaN"],[2]]'], holds('"NaN"')),
    ("f64", ['[[2],[1,"NaN"]]'], RAGGED),
    ("f64", ['[1,[2],"NaN"]'], RAGGED),
    ("f64", ['["NaN",[2]]'], holds('"NaN"')),
    ("f64", ['[[2],"NaN"]'], RAGGED),
    ("f64", ["[1,2]", '[[1,2],[3,"NaN"]]'], holds('"NaN"')),
    ("f64", ["[1,2]", "[[1,2],[3]]"], RAGGED),
    ("f64", ['[1,"NaN"]', "[1,2"], holds('"NaN"')),
    ("i32", ["[1,2.0]", "[1,2]"], not_int("i32")),
    ("i32", ["[1,2.5]", "[1,2]"], not_int("i32")),
    ("i32", ["[1,null]", "[1,2]"], not_int("i32")),
    ("i32", ['[1,"Infinity"]'], not_int("i32")),
    ("i32", ["[1,3000000000]", "[1,2]"], "3000000000 does not fit an i32"),
    ("i32", ["[3000000000,1.5]"], "3000000000 does not fit an i32"),
    ("i32", ["[1.5,2]", "[1,2,3]"], not_int("i32")),
    ("i32", ["[1,2]", "[1.5,2,3]"], not_int("i32")),
    ("i32", ["[1,2]", "[3000000000,1,2]"], "3000000000 does not fit an i32"),
    ("i32", ['[1,"abc"]'], holds('"abc"')),
    ("i32", ['[1.5,"abc"]'], holds('"abc"')),
    ("i64", ["[1,1e30]"], not_int("i64")),
    ("i64", ["[-0,1]"], not_int("i64")),
    ("i64", ["[-0.0,1]"], not_int("i64")),
    ("i64", ["[1E2,1]"], not_int("i64")),
    ("i64", ["[-9223372036854775809,1]"], not_int("i64")),
    ("i64", ["[1,100000000000000000000]"], not_int("i64")),
    ("u64", ["[1,18446744073709551615]"], not_int("u64")),
    ("u64", ["[1,-1]"], "-1 does not fit a u64"),
    ("u8", ["[1,2]", "[-1,2]"], "-1 does not fit a u8"),
    ("i8", ["[1,2]", "[-129,2]"], "-129 does not fit an i8"),
    ("bool", ["[1,2]", "[1,0]"], NOT_BOOL),
    ("bool", ["[true,false]", "[1.0,0]"], NOT_BOOL),
    ("bool", ["[null,0]"], NOT_BOOL),
    ("bool", ['["Infinity",0]'], NOT_BOOL),
    ("bool", ["[-0,1]"], NOT_BOOL),
    ("bool", ['["abc",1]'], holds('"abc"')),
    ("bool", ['[2,"abc"]'], holds('"abc"')),
]


@pytest.mark.parametrize(("dtype", "cells", "message"), JSON_REFUSED)
def test_json_cells_refused(dtype: str, cells: list, message: str) -> None:
    with raises(message):
        decode_json_cells(cells, dtype)
    with raises(message):
        decode_cells(cells, dtype)
    # The fast path must step aside rather than return something.
    assert cells_mod._json_fast(cells, dtype) is None


def test_json_zero_width_and_deep_cells() -> None:
    assert decode_json_cells(["[]", "[]"], "f64").shape == (2, 0)
    assert decode_json_cells(["[[],[]]"], "i32").shape == (1, 2, 0)
    deep = "[" * 40 + "1" + "]" * 40
    with pytest.raises(InvalidParameterError, match="40 deep"):
        decode_json_cells([deep], "f64")


# ---------------------------------------------------------------------------------------
# round trips, all dtypes


def sample_rows(dtype: str, shape: tuple[int, ...], n: int = 7) -> np.ndarray:
    """Rows holding the dtype's awkward values, then filler."""
    dt = DTYPES[dtype]
    size = n * math.prod(shape)
    if dt.kind == "f":
        info = np.finfo(dt)
        special = [np.nan, np.inf, -np.inf, -0.0, 0.0, info.max, -info.max, info.tiny]
        special += [info.smallest_subnormal, 0.1, 1 / 3, 1e-5, 1e16, -1e-7]
        filler = np.linspace(-1e6, 1e6, size)
    elif dt.kind == "b":
        special = [True, False]
        filler = np.arange(size) % 3 == 0
    else:
        info = np.iinfo(dt)
        special = [info.min, min(int(info.max), 2**63 - 1), 0, 1]
        filler = np.arange(size) % 100
    values = np.array(special, dtype=dt) if dt.kind != "f" else np.array(special).astype(dt)
    flat = np.concatenate([values, filler.astype(dt)])[:size]
    if flat.size < size:
        flat = np.resize(flat, size)
    return flat.reshape((n, *shape))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(2,), (2, 3), (3,), (1,), (2, 1, 2)])
def test_json_round_trip(dtype: str, shape: tuple[int, ...]) -> None:
    rows = sample_rows(dtype, shape)
    cells = encode_json_cells(rows)
    assert len(cells) == rows.shape[0]
    assert_same(decode_json_cells(cells, dtype), rows)
    assert_same(cells_mod._decode_slow(cells, dtype), rows)
    assert_same(cells_mod._json_fast(cells, dtype), rows)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_scalar_round_trip(dtype: str) -> None:
    rows = sample_rows(dtype, (), n=20)
    if rows.dtype.kind == "f":
        rows = rows[~((rows == 0) & np.signbit(rows))]  # -0.0 is refused before this
    cells = encode_scalar_cells(rows).tolist()
    # apsw hands a NaN back as None (the NULL SQLite stored)
    cells = [None if isinstance(c, float) and math.isnan(c) else c for c in cells]
    assert_same(decode_scalar_cells(cells, dtype), rows)
    assert_same(cells_mod._decode_slow(cells, dtype), rows)


def test_fast_path_takes_what_the_layout_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exported cells of every dtype decode without the per-cell path."""

    def boom(*_args: object) -> None:
        raise AssertionError("the per-cell path was used")

    monkeypatch.setattr(cells_mod, "_decode_slow", boom)
    for dtype in ALL_DTYPES:
        for shape in [(2,), (2, 3)]:
            rows = sample_rows(dtype, shape, n=50)
            assert_same(decode_json_cells(encode_json_cells(rows), dtype), rows)
        rows = sample_rows(dtype, (), n=50)
        cells = [None if c != c else c for c in encode_scalar_cells(rows).tolist()]
        decoded = decode_scalar_cells(cells, dtype)
        assert decoded.dtype == DTYPES[dtype] and decoded.shape == rows.shape


# ---------------------------------------------------------------------------------------
# hypothesis: bit patterns

f64_bits = st.integers(min_value=0, max_value=2**64 - 1)
f32_bits = st.integers(min_value=0, max_value=2**32 - 1)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.lists(f64_bits, min_size=2, max_size=24).filter(lambda v: len(v) % 2 == 0))
def test_property_f64_json_round_trip_bit_exact(patterns: list[int]) -> None:
    rows = np.array(patterns, dtype=np.uint64).view(np.float64).reshape(-1, 2)
    cells = encode_json_cells(rows)
    for cell, row in zip(cells, rows, strict=True):
        expected = [
            "null"
            if math.isnan(x)
            else ('"Infinity"' if x > 0 else '"-Infinity"')
            if math.isinf(x)
            else spec_float_text(x)
            for x in row.tolist()
        ]
        assert cell == "[" + ",".join(expected) + "]"
    decoded = decode_json_cells(cells, "f64")
    assert_same(decoded, rows)  # NaN → NaN, everything else bit-exact including -0.0
    assert_same(cells_mod._decode_slow(cells, "f64"), rows)


@SETTINGS
@given(st.lists(f32_bits, min_size=1, max_size=12))
def test_property_f32_json_round_trip_bit_exact(patterns: list[int]) -> None:
    rows = np.array(patterns, dtype=np.uint32).view(np.float32).reshape(-1, 1)
    cells = encode_json_cells(rows)
    for cell, x in zip(cells, rows[:, 0].astype(np.float64).tolist(), strict=True):
        if not (math.isnan(x) or math.isinf(x)):
            assert cell == f"[{spec_float_text(x)}]"
    assert_same(decode_json_cells(cells, "f32"), rows)


@SETTINGS
@given(st.lists(f64_bits, min_size=1, max_size=30))
def test_property_f64_scalar_round_trip(patterns: list[int]) -> None:
    rows = np.array(patterns, dtype=np.uint64).view(np.float64)
    out = encode_scalar_cells(rows)
    assert_same(out, rows)
    assert has_negative_zero(rows) == any(p == 1 << 63 for p in patterns)
    cells = [None if math.isnan(c) else c for c in out.tolist()]
    assert_same(decode_scalar_cells(cells, "f64"), rows)


@SETTINGS
@given(
    st.sampled_from([*INT_DTYPES, "bool"]),
    st.integers(min_value=1, max_value=5),
    st.lists(st.integers(min_value=-(2**63), max_value=2**64 - 1), min_size=1, max_size=10),
)
def test_property_int_json_round_trip(dtype: str, n: int, values: list[int]) -> None:
    dt = DTYPES[dtype]
    if dt.kind == "b":
        rows = (np.array(values, dtype=object) % 2 == 1).astype(bool)
    else:
        info = np.iinfo(dt)
        rows = np.array([min(max(v, int(info.min)), int(info.max)) for v in values], dtype=dt)
    rows = np.resize(rows, (n, len(values)))
    if dtype == "u64" and (rows > 2**63 - 1).any():
        with pytest.raises(InvalidParameterError, match="does not fit a SQLite INTEGER"):
            encode_json_cells(rows)
        return
    assert_same(decode_json_cells(encode_json_cells(rows), dtype), rows)


# Fragments from which cell lists are built to try to fool the JSON fast path.
FRAGMENTS = [
    "[", "]", ",", "1", "-0", "-0.0", "2.5", "1e400", "null", "true", "false", '"Infinity"',
    '"-Infinity"', '"NaN"', '"|"', " ", "{}", "[1,2]", "[3,4]", "0", "-1", "300", "1.0",
    "\\u0049", '"', "18446744073709551615", "-9223372036854775809",
]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(
    st.sampled_from(["f64", "f32", "i32", "i64", "u8", "bool"]),
    st.lists(
        st.one_of(
            st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join),
            st.sampled_from(["[1,2]", "[3,4]", '[1,"Infinity"]', "[[1,2]]", "[0,1]", "[-0,1]"]),
        ),
        min_size=1,
        max_size=5,
    ),
)
def test_property_json_fast_path_agrees_with_the_per_cell_path(dtype: str, cells: list) -> None:
    fast = cells_mod._json_fast(cells, dtype)
    try:
        slow = cells_mod._decode_slow(cells, dtype)
    except InvalidParameterError:
        assert fast is None
        return
    if fast is not None:
        assert_same(fast, slow)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["f64", "f32", "i32", "i64", "u8", "bool"]),
    st.lists(
        st.one_of(
            st.none(),
            st.integers(min_value=-(2**63), max_value=2**63 - 1),
            st.sampled_from([0, 1, 2, -1, 255, 256]),
            st.floats(allow_nan=True, allow_infinity=True),
            st.sampled_from([0.0, 1.0, -0.0, 2.0, 0.5]),
            st.sampled_from(["5.5", "1", "true", "[1]", "x", "nan"]),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_property_scalar_fast_path_agrees_with_the_per_cell_path(dtype: str, cells: list) -> None:
    try:
        slow = cells_mod._decode_slow(cells, dtype)
    except InvalidParameterError as exc:
        with pytest.raises(InvalidParameterError) as info:
            decode_scalar_cells(cells, dtype)
        assert str(info.value) == str(exc)
        return
    assert_same(decode_scalar_cells(cells, dtype), slow)


def test_json_fast_path_odd_strings_at_list_positions() -> None:
    # A top-level "Infinity" has len 8 like the row [1..8]; it must not be taken apart.
    row = "[" + ",".join(str(i) for i in range(8)) + "]"
    for dtype, message in [("f64", shapes("[8]", "[]")), ("i32", not_int("i32"))]:
        assert cells_mod._json_fast([row, '"Infinity"'], dtype) is None
        with raises(message):  # a cell is converted before its shape is compared
            decode_json_cells([row, '"Infinity"'], dtype)
    assert cells_mod._json_fast(["[[1,2,3,4,5,6,7,8]]", '["Infinity"]'], "f64") is None


# ---------------------------------------------------------------------------------------
# through a real SQLite table


@pytest.fixture
def db() -> apsw.Connection:
    con = apsw.Connection(":memory:")
    yield con
    con.close()


def test_sqlite_real_column(db: apsw.Connection) -> None:
    rows = np.array([1.5, np.nan, np.inf, -np.inf, 5e-324, 2.0**60, -1e-300, 0.0])
    db.execute("CREATE TABLE v (i INTEGER PRIMARY KEY, value REAL)")
    db.execute(
        "INSERT INTO v (value) SELECT value FROM carray(?)",
        (apsw.carray(encode_scalar_cells(rows)),),
    )
    kinds = [t for (t,) in db.execute("SELECT typeof(value) FROM v ORDER BY i")]
    assert kinds == ["real", "null", "real", "real", "real", "real", "real", "real"]
    cells = [c for (c,) in db.execute("SELECT value FROM v ORDER BY i")]
    assert_same(decode_scalar_cells(cells, "f64"), rows)


def test_sqlite_real_column_loses_the_sign_of_zero(db: apsw.Connection) -> None:
    """Why the exporter refuses a scalar -0.0 (peer contract §7)."""
    rows = np.array([-0.0])
    assert has_negative_zero(rows)
    db.execute("CREATE TABLE v (value REAL)")
    db.execute(
        "INSERT INTO v SELECT value FROM carray(?)", (apsw.carray(encode_scalar_cells(rows)),)
    )
    (cell,) = db.execute("SELECT value FROM v").fetchone()
    assert math.copysign(1.0, decode_scalar_cells([cell], "f64")[0]) == 1.0


def test_sqlite_real_column_f32(db: apsw.Connection) -> None:
    rows = np.array([1.1, np.nan, 3.4028235e38, 1e-45, -2.5], dtype=np.float32)
    db.execute("CREATE TABLE v (i INTEGER PRIMARY KEY, value REAL)")
    db.execute(
        "INSERT INTO v (value) SELECT value FROM carray(?)",
        (apsw.carray(encode_scalar_cells(rows)),),
    )
    cells = [c for (c,) in db.execute("SELECT value FROM v ORDER BY i")]
    assert cells[0] == 1.100000023841858
    assert_same(decode_scalar_cells(cells, "f32"), rows)


@pytest.mark.parametrize("dtype", [*INT_DTYPES, "bool"])
def test_sqlite_integer_column(db: apsw.Connection, dtype: str) -> None:
    rows = sample_rows(dtype, (), n=12)
    db.execute("CREATE TABLE v (i INTEGER PRIMARY KEY, value INTEGER)")
    db.execute(
        "INSERT INTO v (value) SELECT value FROM carray(?)",
        (apsw.carray(encode_scalar_cells(rows)),),
    )
    assert {t for (t,) in db.execute("SELECT typeof(value) FROM v")} == {"integer"}
    cells = [c for (c,) in db.execute("SELECT value FROM v ORDER BY i")]
    assert_same(decode_scalar_cells(cells, dtype), rows)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(2,), (2, 3)])
def test_sqlite_text_column(db: apsw.Connection, dtype: str, shape: tuple[int, ...]) -> None:
    rows = sample_rows(dtype, shape, n=9)
    cells = encode_json_cells(rows)
    db.execute("CREATE TABLE v (i INTEGER PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO v (value) SELECT value FROM carray(?)", (apsw.carray(tuple(cells)),))
    db.executemany("INSERT INTO v (value) VALUES (?)", [(c,) for c in cells])
    assert {t for (t,) in db.execute("SELECT typeof(value) FROM v")} == {"text"}
    back = [c for (c,) in db.execute("SELECT value FROM v ORDER BY i")]
    assert back == cells + cells
    assert_same(decode_json_cells(back, dtype), np.concatenate([rows, rows]))


@settings(max_examples=60, deadline=None)
@given(st.lists(f64_bits, min_size=2, max_size=40).filter(lambda v: len(v) % 2 == 0))
def test_property_sqlite_round_trip(patterns: list[int]) -> None:
    rows = np.array(patterns, dtype=np.uint64).view(np.float64)
    con = apsw.Connection(":memory:")
    try:
        con.execute("CREATE TABLE s (i INTEGER PRIMARY KEY, value REAL)")
        con.execute("CREATE TABLE j (i INTEGER PRIMARY KEY, value TEXT)")
        scalar = rows[~((rows == 0) & np.signbit(rows))]
        if scalar.size:
            con.execute(
                "INSERT INTO s (value) SELECT value FROM carray(?)",
                (apsw.carray(encode_scalar_cells(scalar)),),
            )
        shaped = rows.reshape(-1, 2)
        con.executemany(
            "INSERT INTO j (value) VALUES (?)", [(c,) for c in encode_json_cells(shaped)]
        )
        s_cells = [c for (c,) in con.execute("SELECT value FROM s ORDER BY i")]
        j_cells = [c for (c,) in con.execute("SELECT value FROM j ORDER BY i")]
    finally:
        con.close()
    if scalar.size:
        assert_same(decode_scalar_cells(s_cells, "f64"), scalar)
    assert_same(decode_json_cells(j_cells, "f64"), shaped)  # -0.0 survives inside JSON


def test_sqlite_affinity_turns_numeric_text_into_numbers(db: apsw.Connection) -> None:
    """An edited REAL column holds numbers even where text was written (§14.4 '5.5')."""
    db.execute("CREATE TABLE v (i INTEGER PRIMARY KEY, value REAL)")
    db.executemany("INSERT INTO v (value) VALUES (?)", [("5.5",), (" 7 ",), ("abc",), (None,)])
    cells = [c for (c,) in db.execute("SELECT value FROM v ORDER BY i")]
    assert cells == [5.5, 7.0, "abc", None]
    with raises(NOT_JSON):
        decode_scalar_cells(cells, "f64")
    assert_same(decode_scalar_cells(cells[:2] + cells[3:], "f64"), np.array([5.5, 7.0, np.nan]))


# ---------------------------------------------------------------------------------------
# the size bound: a cell bigger than any element of the shape is refused before parsing


def test_max_cell_bytes_grows_with_the_leaves_of_the_shape() -> None:
    assert cells_mod.max_cell_bytes(()) < cells_mod.max_cell_bytes((3,))
    assert cells_mod.max_cell_bytes((3,)) < cells_mod.max_cell_bytes((3, 4))
    assert cells_mod.max_cell_bytes((12,)) == cells_mod.max_cell_bytes((3, 4))


@pytest.mark.parametrize("dtype", ["f64", "i64", "u64", "f32"])
@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 3)])
def test_the_longest_cells_the_layout_writes_fit_the_bound(dtype: str, shape: tuple) -> None:
    # every leaf at its longest text, written as the exporter writes it
    if dtype in ("f64", "f32"):
        leaf = np.float64(-2.2250738585072014e-308) if dtype == "f64" else -np.inf
    else:
        leaf = np.iinfo(DTYPES[dtype]).min if dtype != "u64" else np.uint64(2**63 - 1)
    rows = np.full((2, *shape), leaf, dtype=DTYPES[dtype])
    cells = encode_json_cells(rows) if shape else [orjson_text(rows[0])] * 2
    # as a user might write it by hand: a space and a line break after every comma
    spaced = [c.replace(",", ",\n ") for c in cells]
    out = decode_cells(spaced, dtype, element_shape=shape)
    assert out.shape == (2, *shape)


def orjson_text(value: np.ndarray) -> str:
    return encode_json_cells(value.reshape(1, 1))[0][1:-1]


@pytest.mark.parametrize("kind", ["text", "blob"])
def test_a_cell_bigger_than_the_shape_can_need_is_refused_by_its_size(kind: str) -> None:
    limit = cells_mod.max_cell_bytes((3,))
    big = "[" + ",".join(["1.0"] * (limit // 4 + 1)) + "]"
    cell: str | bytes = big if kind == "text" else big.encode()
    with pytest.raises(InvalidParameterError) as refused:
        decode_cells(["[1.0,2.0,3.0]", cell], "f64", element_shape=(3,))
    message = str(refused.value)
    assert (
        f"a `value` cell is {len(big)} bytes long, longer than the {limit} bytes an "
        "element of shape [3] can need" in message
    )
    # without the shape no size is checked: the cell is refused for what it holds
    with pytest.raises(InvalidParameterError, match=r"different shapes|blob"):
        decode_cells(["[1.0,2.0,3.0]", cell], "f64")


def test_the_size_bound_counts_utf8_bytes() -> None:
    limit = cells_mod.max_cell_bytes(())
    cell = "é" * (limit + 1)  # more characters than the bound: refused, bytes reported
    with pytest.raises(InvalidParameterError, match=f"is {2 * (limit + 1)} bytes long"):
        decode_cells([cell], "f64", element_shape=())
