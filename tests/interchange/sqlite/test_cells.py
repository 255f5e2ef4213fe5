"""Tests for the ``value`` cells, numpy rows to SQLite cells (peer contract §5, §7), and the
size bound on a cell read back."""

from __future__ import annotations

import numpy as np
import pytest
from cells_helpers import (
    ALL_DTYPES,
    INT_DTYPES,
    assert_same,
    raises,
    spec_float_text,
)

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.sqlite import cells as cells_mod
from infrastore_sqlite.interchange.sqlite.cells import (
    DTYPES,
    decode_cells,
    decode_json_cells,
    encode_json_cells,
    encode_scalar_cells,
    has_negative_zero,
    sql_value_type,
)

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
