"""Element types: grammar, shape rules, ragged re-packing, and the encode/decode codec."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infrastore_sqlite.core.elements import (
    DTYPE_NAMES,
    NUMPY_DTYPES,
    ElementType,
    as_store_array,
    check_composite_rows,
    check_element_shape,
    decode_element_values,
    default_element_type,
    dtype_name,
    encode_element_values,
    minimal_width,
    pad,
    parse_element_type,
    shrink,
)
from infrastore_sqlite.errors import InvalidParameterError

# A copy of the shared conformance vectors: tests read nothing outside the repository.
CONFORMANCE = Path(__file__).resolve().parents[1] / "data"
VECTORS = json.loads((CONFORMANCE / "element_type_vectors.json").read_text())["vectors"]

PL = parse_element_type("piecewise_linear")
PS = parse_element_type("piecewise_step")


def same(a: Any, b: Any) -> bool:
    """Deep equality that tells -0.0 from 0.0, treats NaN as equal to NaN and checks types."""
    if isinstance(a, float) or isinstance(b, float):
        if type(a) is not float or type(b) is not float:
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


# ------------------------------------------------------------------ conformance vectors


def test_vector_file_has_the_ten_vectors() -> None:
    assert len(VECTORS) == 10
    assert len({v["name"] for v in VECTORS}) == 10


@pytest.mark.parametrize("vec", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_decode(vec: dict) -> None:
    arr = np.array(vec["values"], dtype="<f8").reshape(vec["shape"])
    assert arr.tobytes().hex() == vec["bytes_hex"]
    decoded = decode_element_values(arr, vec["element_type"], vec["leading_dims"])
    assert same(decoded, vec["decoded"]["timesteps"])


@pytest.mark.parametrize("vec", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_encode(vec: dict) -> None:
    shape = vec["shape"]
    leading = shape[: vec["leading_dims"]]
    out = encode_element_values(vec["decoded"]["timesteps"], vec["element_type"], leading)
    assert out.dtype == np.dtype("<f8")
    assert out.flags.c_contiguous
    assert list(out.shape) == shape
    assert out.tobytes().hex() == vec["bytes_hex"]


@pytest.mark.parametrize("vec", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_kind_matches_element_type(vec: dict) -> None:
    et = parse_element_type(vec["element_type"])
    assert vec["decoded"]["kind"] == et.kind
    assert str(et) == vec["element_type"]


@pytest.mark.parametrize("vec", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_is_already_minimal(vec: dict) -> None:
    # encode produces minimal width, so shrink leaves the conformance bytes alone
    et = parse_element_type(vec["element_type"])
    arr = np.array(vec["values"], dtype="<f8").reshape(vec["shape"])
    assert shrink(et, arr).tobytes().hex() == vec["bytes_hex"]


# ------------------------------------------------------------------------------- dtypes


def test_dtype_names_code_order() -> None:
    assert DTYPE_NAMES == (
        "f64",
        "f32",
        "i64",
        "i32",
        "u64",
        "bool",
        "i16",
        "i8",
        "u32",
        "u16",
        "u8",
    )
    assert list(NUMPY_DTYPES) == list(DTYPE_NAMES)
    assert NUMPY_DTYPES["bool"] == np.dtype(np.bool_)
    for name, dt in NUMPY_DTYPES.items():
        assert dt.byteorder in ("<", "|", "=")
        assert dtype_name(dt) == name
        assert dtype_name(dt.newbyteorder(">")) == name


@pytest.mark.parametrize(
    ("numpy_dtype", "name"),
    [
        (np.float64, "f64"),
        (">f4", "f32"),
        (np.int64, "i64"),
        (">i4", "i32"),
        (np.uint64, "u64"),
        (np.bool_, "bool"),
        (np.int16, "i16"),
        (np.int8, "i8"),
        (">u4", "u32"),
        (np.uint16, "u16"),
        (np.uint8, "u8"),
    ],
)
def test_dtype_name(numpy_dtype: Any, name: str) -> None:
    assert dtype_name(np.dtype(numpy_dtype)) == name


@pytest.mark.parametrize(
    "bad",
    ["f2", "c16", "O", "U3", "S2", "M8[ms]", "m8[s]", np.longdouble, [("a", "f8")], "V8"],
)
def test_dtype_name_refuses(bad: Any) -> None:
    with pytest.raises(InvalidParameterError) as info:
        dtype_name(np.dtype(bad))
    text = str(info.value)
    for name in DTYPE_NAMES:
        assert name in text


def test_as_store_array_view_when_already_fine() -> None:
    a = np.arange(6.0).reshape(2, 3)
    assert as_store_array(a) is a


def test_as_store_array_normalizes_big_endian_and_fortran() -> None:
    a = np.arange(6.0).reshape(2, 3)
    for variant in (a.astype(">f8"), np.asfortranarray(a), a.T.copy().T, a[:, ::1].astype(">f8")):
        out = as_store_array(variant)
        assert out.dtype == np.dtype("<f8")
        assert out.flags.c_contiguous
        assert out.tobytes() == a.tobytes()


def test_as_store_array_lists_and_refusals() -> None:
    assert as_store_array([1, 2]).dtype == np.dtype("<i8")
    assert as_store_array([1.5]).dtype == np.dtype("<f8")
    assert as_store_array(np.array([True])).dtype == np.dtype(np.bool_)
    for bad in (np.zeros(2, np.float16), np.array([1, "a"], dtype=object), ["a", "b"], [1j]):
        with pytest.raises(InvalidParameterError, match="data"):
            as_store_array(bad)
    with pytest.raises(InvalidParameterError, match="values"):
        as_store_array(np.zeros(2, np.complex64), what="values")


# ------------------------------------------------------------------------------ grammar

ACCEPTED = [
    ("f64", ElementType("scalar", "f64"), "f64"),
    ("bool", ElementType("scalar", "bool"), "bool"),
    ("u8", ElementType("scalar", "u8"), "u8"),
    ("tuple(3,f64)", ElementType("tuple", "f64", 3), "tuple(3,f64)"),
    ("tuple( 3 ,f64 )", ElementType("tuple", "f64", 3), "tuple(3,f64)"),
    ("tuple(2, i32)", ElementType("tuple", "i32", 2), "tuple(2,i32)"),
    ("tuple(\t2\t,bool)", ElementType("tuple", "bool", 2), "tuple(2,bool)"),
    ("tuple(\u00a02,f64)", ElementType("tuple", "f64", 2), "tuple(2,f64)"),
    ("tuple(+2,f64)", ElementType("tuple", "f64", 2), "tuple(2,f64)"),
    ("tuple(02,f64)", ElementType("tuple", "f64", 2), "tuple(2,f64)"),
    ("tuple(1,u64)", ElementType("tuple", "u64", 1), "tuple(1,u64)"),
    (
        "tuple(18446744073709551615,f64)",
        ElementType("tuple", "f64", 2**64 - 1),
        "tuple(18446744073709551615,f64)",
    ),
    ("linear_function", ElementType("linear_function", "f64"), "linear_function"),
    ("quadratic_function", ElementType("quadratic_function", "f64"), "quadratic_function"),
    ("piecewise_linear", ElementType("piecewise_linear", "f64"), "piecewise_linear"),
    ("piecewise_step", ElementType("piecewise_step", "f64"), "piecewise_step"),
]

REJECTED = [
    "",
    "float",
    "float64",
    "F64",
    " f64",
    "f64 ",
    "Tuple(2,f64)",
    "tuple(0,f64)",
    "tuple(-1,f64)",
    "tuple(2.0,f64)",
    "tuple(1_0,f64)",
    "tuple(\uff12,f64)",  # full-width digit: not ASCII
    "tuple(18446744073709551616,f64)",
    "tuple(2,f64) ",
    "tuple (2,f64)",
    "tuple(2,f64,)",
    "tuple(2)",
    "tuple(,f64)",
    "tuple(2,)",
    "tuple()",
    "tuple(2,F64)",
    "tuple(2,float64)",
    "tuple(2,linear_function)",
    "tuple(2,tuple(2,f64))",
    "tuple(2,f64)x",
    "tuple(\x1c2,f64)",  # Python's isspace() says yes, Unicode White_Space says no
    "Linear_function",
    "linear",
    "piecewise_linear ",
    "scalar",
]


@pytest.mark.parametrize(("text", "expected", "canonical"), ACCEPTED)
def test_grammar_accepts(text: str, expected: ElementType, canonical: str) -> None:
    et = parse_element_type(text)
    assert et == expected
    assert str(et) == canonical
    assert parse_element_type(str(et)) == et


@pytest.mark.parametrize("text", REJECTED)
def test_grammar_rejects(text: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        parse_element_type(text)
    assert f'unknown element_type "{text}"' in str(info.value)
    assert "tuple(N,dtype)" in str(info.value)


def test_grammar_type_error() -> None:
    with pytest.raises(TypeError):
        parse_element_type(None)  # type: ignore[arg-type]


def test_element_type_properties() -> None:
    assert not parse_element_type("f64").is_composite
    assert not parse_element_type("tuple(2,f64)").is_composite
    for kind in ("linear_function", "quadratic_function", "piecewise_linear", "piecewise_step"):
        et = parse_element_type(kind)
        assert et.is_composite
        assert et.dtype == "f64"
        assert et.n is None
        assert et.is_ragged == kind.startswith("piecewise")
    assert not parse_element_type("tuple(2,f64)").is_ragged
    with pytest.raises(AttributeError):
        PL.kind = "x"  # type: ignore[misc]
    assert hash(parse_element_type("tuple(02,f64)")) == hash(parse_element_type("tuple(2,f64)"))


@pytest.mark.parametrize(
    ("kind", "dtype", "n"),
    [
        ("vector", "f64", None),
        ("scalar", "f16", None),
        ("linear_function", "f32", None),
        ("tuple", "f64", 0),
        ("tuple", "f64", None),
        ("scalar", "f64", 3),
    ],
)
def test_element_type_constructor_refuses_incoherent(kind: str, dtype: str, n: Any) -> None:
    with pytest.raises(InvalidParameterError):
        ElementType(kind, dtype, n)


def test_default_element_type() -> None:
    assert default_element_type(np.zeros(3, np.int16)) == ElementType("scalar", "i16")
    assert default_element_type(np.zeros((3, 2), ">f4")) == ElementType("scalar", "f32")
    assert str(default_element_type(np.zeros(1, bool))) == "bool"


# ------------------------------------------------------------------------- shape rules

SHAPE_OK = [
    ("f64", (), "f64"),
    ("f64", (2, 2), "f64"),
    ("i32", (5,), "i32"),
    ("tuple(3,f64)", (3,), "f64"),
    ("tuple(2,i8)", (2,), "i8"),
    ("linear_function", (2,), "f64"),
    ("quadratic_function", (3,), "f64"),
    ("piecewise_linear", (1,), "f64"),
    ("piecewise_linear", (7,), "f64"),
    ("piecewise_step", (1,), "f64"),
    ("piecewise_step", (2,), "f64"),
    ("piecewise_step", (6,), "f64"),
]

SHAPE_BAD = [
    ("f64", (), "i64", "dtype is i64"),
    ("tuple(3,f64)", (2,), "f64", "[3], got [2]"),
    ("tuple(3,f64)", (), "f64", "[3], got []"),
    ("tuple(3,f64)", (3, 1), "f64", "[3], got [3, 1]"),
    ("tuple(2,i32)", (2,), "f64", "dtype is f64"),
    ("linear_function", (3,), "f64", "[2], got [3]"),
    ("linear_function", (2,), "f32", "dtype is f32"),
    ("quadratic_function", (2,), "f64", "[3], got [2]"),
    ("piecewise_linear", (), "f64", "exactly one"),
    ("piecewise_linear", (3, 3), "f64", "exactly one"),
    ("piecewise_linear", (0,), "f64", "at least 1"),
    ("piecewise_linear", (4,), "f64", "cannot have row width 4"),
    ("piecewise_linear", (6,), "f64", "the width is odd"),
    ("piecewise_linear", (3,), "i64", "dtype is i64"),
    ("piecewise_step", (0,), "f64", "at least 1"),
    ("piecewise_step", (3,), "f64", "cannot have row width 3"),
    ("piecewise_step", (5,), "f64", "row width 5"),
]


@pytest.mark.parametrize(("text", "shape", "dtype"), SHAPE_OK)
def test_shape_ok(text: str, shape: tuple[int, ...], dtype: str) -> None:
    check_element_shape(parse_element_type(text), shape, dtype)


@pytest.mark.parametrize(("text", "shape", "dtype", "fragment"), SHAPE_BAD)
def test_shape_bad(text: str, shape: tuple[int, ...], dtype: str, fragment: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        check_element_shape(parse_element_type(text), shape, dtype)
    assert fragment in str(info.value)
    assert f"element_type {text}" in str(info.value)


ROWS_BAD = [
    (PL, [[1, 2, 3], [2, 0, 0]], "row 1 declares 2 points, which needs 5 slots"),
    (PL, [[0.5, 0, 0]], "row 0 leading count is 0.5"),
    (PL, [[0, 0, 0], [-1, 0, 0]], "row 1 leading count is -1"),
    (PL, [[np.nan, 0, 0]], "leading count is NaN"),
    (PL, [[np.inf, 0, 0]], "leading count is inf"),
    (PL, [[1e300, 0, 0]], "row 0 declares"),
    (PS, [[1, 0], [5, 0]], "row 1 declares 5 points, which needs 10 slots but the row width is 2"),
    (PS, [[1.0]], "row 0 declares 1 points, which needs 2 slots but the row width is 1"),
    (PS, [[0, 0], [0.25, 0]], "row 1 leading count is 0.25"),
]


@pytest.mark.parametrize(("et", "rows", "fragment"), ROWS_BAD)
def test_composite_rows_bad(et: ElementType, rows: list, fragment: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        check_composite_rows(et, np.array(rows, dtype=float))
    assert fragment in str(info.value)
    # decode reaches the same check
    with pytest.raises(InvalidParameterError):
        decode_element_values(np.array(rows, dtype=float), str(et))


def test_composite_rows_ok() -> None:
    check_composite_rows(PL, np.array([[-0.0, 9, 9], [1, 2, 3]]))
    check_composite_rows(PS, np.array([[0.0, 9], [1, 2]]))
    check_composite_rows(PS, np.zeros((0, 4)))
    check_composite_rows(PL, np.zeros((2, 3, 5)))  # leading dims are flattened
    check_composite_rows(parse_element_type("linear_function"), np.array([[np.nan, 1.0]]))


# --------------------------------------------------------------------- shrink and pad


def test_minimal_width() -> None:
    assert minimal_width(PL, np.array([[2, 0, 1, 1, 2, 0, 0], [1, 0, 1, 0, 0, 0, 0]])) == 5
    assert minimal_width(PL, np.zeros((3, 7))) == 1
    assert minimal_width(PL, np.zeros((0, 7))) == 1
    assert minimal_width(PS, np.zeros((3, 6))) == 1
    assert minimal_width(PS, np.array([[1, 5, 0, 0]])) == 2
    assert minimal_width(PS, np.array([[3, 0, 1, 2, 5, 6]])) == 6
    assert minimal_width(parse_element_type("linear_function"), np.zeros((4, 2))) == 2
    assert minimal_width(PL, np.zeros((2, 2, 9))) == 1


def test_two_paddings_shrink_to_same_bytes() -> None:
    curves = [[{"x": 0.0, "y": 1.0}, {"x": 2.0, "y": 3.0}], [{"x": 5.0, "y": -0.0}]]
    narrow = encode_element_values(curves, "piecewise_linear")
    wide = pad(PL, narrow, 9)
    assert wide.shape == (2, 9)
    assert not np.array_equal(narrow.shape, wide.shape)
    assert shrink(PL, wide).tobytes() == narrow.tobytes()
    assert shrink(PL, narrow).tobytes() == narrow.tobytes()
    assert same(decode_element_values(wide, "piecewise_linear"), curves)

    steps = [{"x": [0.0, 1.0], "y": [4.0]}, {"x": [], "y": []}]
    narrow = encode_element_values(steps, "piecewise_step")
    wide = pad(PS, narrow, 8)
    assert shrink(PS, wide).tobytes() == narrow.tobytes()
    assert shrink(PS, wide).shape == (2, 4)


def test_shrink_zeroes_garbage_after_the_count() -> None:
    dirty = np.array([[-0.0, 7, 7, 9, 9], [1, 2, 3, np.nan, 5]])
    out = shrink(PL, dirty)
    assert out.shape == (2, 3)
    assert out.tobytes() == np.array([[0.0, 0, 0], [1, 2, 3]]).tobytes()  # -0.0 count → 0.0
    assert np.isnan(dirty[1, 3]) and dirty[0, 1] == 7  # input untouched

    dirty = np.array([[0.0, 3, 4, 4], [1, 2, 8, 8]])
    assert shrink(PS, dirty).tobytes() == np.array([[0.0, 0], [1, 2]]).tobytes()
    # values inside the used span are kept bit for bit, NaN and -0.0 included
    kept = np.array([[2, 0, -0.0, np.nan, 7, 7]])
    assert shrink(PS, kept).tobytes() == kept[:, :4].tobytes()
    assert np.signbit(shrink(PS, kept)[0, 2])


def test_shrink_keeps_leading_dims_and_normalizes_layout() -> None:
    arr = np.zeros((2, 3, 7))
    arr[1, 2, :3] = [1, 4, 5]
    out = shrink(PL, np.asfortranarray(arr).astype(">f8"))
    assert out.shape == (2, 3, 3)
    assert out.dtype == np.dtype("<f8") and out.flags.c_contiguous
    assert out[1, 2].tolist() == [1, 4, 5]
    assert shrink(PL, np.zeros((0, 7))).shape == (0, 1)


def test_shrink_non_ragged_is_identity_and_refuses_bad_rows() -> None:
    arr = np.array([[1.0, 2.0]])
    assert shrink(parse_element_type("linear_function"), arr) is arr
    f = np.zeros(3)
    assert shrink(parse_element_type("f64"), f) is f
    with pytest.raises(InvalidParameterError):
        shrink(PL, np.array([[3.0, 0, 0]]))
    with pytest.raises(InvalidParameterError):
        shrink(PL, np.zeros((2, 4)))


def test_pad() -> None:
    arr = np.array([[1.0, 2, 3]])
    assert pad(PL, arr, 3) is arr
    out = pad(PL, arr, 7)
    assert out.tolist() == [[1, 2, 3, 0, 0, 0, 0]]
    assert pad(PS, np.zeros((2, 1)), 4).shape == (2, 4)
    assert pad(PL, np.zeros((2, 2, 1)), 5).shape == (2, 2, 5)
    with pytest.raises(InvalidParameterError, match="odd"):
        pad(PL, arr, 4)
    with pytest.raises(InvalidParameterError, match="row width 5"):
        pad(PS, np.zeros((1, 2)), 5)
    with pytest.raises(InvalidParameterError, match="narrower"):
        pad(PL, np.zeros((1, 5)), 3)
    lin = np.zeros((1, 2))
    assert pad(parse_element_type("linear_function"), lin, 2) is lin
    with pytest.raises(InvalidParameterError):
        pad(parse_element_type("linear_function"), lin, 4)


# ------------------------------------------------------------------------- the codec


def test_decode_returns_none_for_scalars_and_non_f64() -> None:
    assert decode_element_values(np.arange(3.0), "f64") is None
    assert decode_element_values(np.arange(6.0).reshape(3, 2), "f64") is None
    assert decode_element_values(np.arange(6, dtype=np.int32).reshape(3, 2), "tuple(2,i32)") is None
    assert decode_element_values(np.zeros((2, 2), np.uint64), "tuple(2,u64)") is None
    assert decode_element_values(np.array([True]), "bool") is None


def test_decode_shapes_and_leading_dims() -> None:
    arr = np.arange(12.0).reshape(3, 2, 2)
    out = decode_element_values(arr, "linear_function", 2)
    assert out is not None and len(out) == 6
    assert out[5] == {"proportional": 10.0, "constant": 11.0}
    assert list(out[0]) == ["proportional", "constant"]
    assert decode_element_values(np.arange(2.0), "linear_function", 0) == [
        {"proportional": 0.0, "constant": 1.0}
    ]
    assert decode_element_values(np.array([1.0, 2, 3]), "piecewise_linear", 0) == [
        [{"x": 2.0, "y": 3.0}]
    ]
    assert decode_element_values(np.zeros((0, 2)), "tuple(2,f64)") == []
    assert decode_element_values(np.zeros((0, 3)), "piecewise_linear") == []
    q = decode_element_values(np.array([[1.0, 2, 3]]), "quadratic_function")
    assert q is not None and list(q[0]) == ["quadratic", "proportional", "constant"]
    # big-endian, Fortran, strided and read-only arrays decode by value
    base = np.arange(6.0).reshape(3, 2)
    for variant in (
        base.astype(">f8"),
        np.asfortranarray(base),
        np.arange(12.0).reshape(3, 4)[:, ::2] / 1,
    ):
        got = decode_element_values(variant, "tuple(2,f64)")
        assert got == np.asarray(variant).tolist()


def test_decode_ragged_details() -> None:
    assert same(
        decode_element_values(np.array([[3, 0, 1, 2, -0.0, np.nan]]), "piecewise_step"),
        [{"x": [0.0, 1.0, 2.0], "y": [-0.0, math.nan]}],
    )
    assert decode_element_values(np.array([[0.0, 1, 2, 3]]), "piecewise_step") == [
        {"x": [], "y": []}
    ]
    assert decode_element_values(np.array([[1.0, 4, 7, 7]]), "piecewise_step") == [
        {"x": [4.0], "y": []}
    ]
    assert decode_element_values(np.array([[-0.0, 1, 1]]), "piecewise_linear") == [[]]
    assert same(
        decode_element_values(np.array([[1, np.nan, 0.0]]), "piecewise_linear"),
        [[{"x": math.nan, "y": 0.0}]],
    )


@pytest.mark.parametrize(
    ("data", "element_type", "leading", "fragment"),
    [
        (np.arange(6.0), "f64", 3, "fewer than the 3 leading dims"),
        (np.array(1.0), "linear_function", 1, "shape [] has fewer than the 1 leading dims"),
        (np.arange(6.0).reshape(2, 3), "linear_function", 1, "[2], got [3]"),
        (np.arange(6.0), "linear_function", 1, "[2], got []"),
        (np.arange(6, dtype=np.float32).reshape(3, 2), "linear_function", 1, "dtype is f32"),
        (np.arange(6).reshape(3, 2), "linear_function", 1, "dtype is i64"),
        (np.arange(6.0).reshape(3, 2), "tuple(2,i32)", 1, "dtype is f64"),
        (np.arange(6.0), "i32", 1, "dtype is f64"),
        (np.array([True]), "f64", 1, "dtype is bool"),
        (np.zeros((2, 0)), "piecewise_step", 1, "at least 1"),
        (np.zeros((1, 4)), "piecewise_linear", 1, "cannot have row width 4"),
        (np.zeros((2, 2), np.float16), "f64", 1, "float16"),
        (np.zeros((2, 2)), "float", 1, 'unknown element_type "float"'),
        (np.zeros((2, 2)), "tuple(2,f64)", -1, ">= 0"),
    ],
)
def test_decode_refusals(data: np.ndarray, element_type: str, leading: int, fragment: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        decode_element_values(data, element_type, leading)
    assert fragment in str(info.value)


def test_encode_basics() -> None:
    out = encode_element_values([{"proportional": 1, "constant": 2}], "linear_function")
    assert out.dtype == np.dtype("<f8") and out.shape == (1, 2) and out.flags.writeable
    assert out.tolist() == [[1.0, 2.0]]
    # extra keys are ignored, bools and numpy scalars are numbers
    out = encode_element_values(
        [{"proportional": True, "constant": np.float32(1.5), "note": "x"}], "linear_function"
    )
    assert out.tolist() == [[1.0, 1.5]]
    assert encode_element_values([(1, 2, 3)], "tuple(3,f64)").tolist() == [[1.0, 2.0, 3.0]]
    assert encode_element_values([np.array([1.0, 2.0])], "tuple(2,f64)").shape == (1, 2)
    assert encode_element_values(([1, 2] for _ in range(2)), "tuple(2,f64)").shape == (2, 2)
    assert encode_element_values(np.array([[1.0, 2], [3, 4]]), "tuple(2,f64)").shape == (2, 2)
    assert encode_element_values([{"x": (0, 1), "y": (5,)}], "piecewise_step").tolist() == [
        [2.0, 0.0, 1.0, 5.0]
    ]
    assert encode_element_values(
        [[{"x": 3, "y": 1}, {"x": 1, "y": 1}]], "piecewise_linear"
    ).tolist() == [[2.0, 3.0, 1.0, 1.0, 1.0]]  # no sorting or validation of points
    nan_inf = encode_element_values(
        [{"proportional": math.nan, "constant": -math.inf}], "linear_function"
    )
    assert math.isnan(nan_inf[0, 0]) and nan_inf[0, 1] == -math.inf


@pytest.mark.parametrize(
    ("element_type", "width"),
    [
        ("tuple(3,f64)", 3),
        ("linear_function", 2),
        ("quadratic_function", 3),
        ("piecewise_linear", 1),
        ("piecewise_step", 1),
    ],
)
def test_encode_empty(element_type: str, width: int) -> None:
    assert encode_element_values([], element_type).shape == (0, width)
    assert encode_element_values([], element_type, (0, 3)).shape == (0, 3, width)


def test_encode_leading_dims() -> None:
    six = [{"proportional": 1, "constant": 2}] * 6
    assert encode_element_values(six, "linear_function", (2, 3)).shape == (2, 3, 2)
    assert encode_element_values(six, "linear_function", [2, 3]).shape == (2, 3, 2)
    assert encode_element_values(six, "linear_function", np.array([6])).shape == (6, 2)
    assert encode_element_values(six[:1], "linear_function", ()).shape == (2,)
    assert encode_element_values([[]] * 4, "piecewise_linear", (1, 2, 2)).shape == (1, 2, 2, 1)
    with pytest.raises(
        InvalidParameterError,
        match=r"6 decoded timesteps do not fill leading dims \[2, 2\] \(4 expected\)",
    ):
        encode_element_values(six, "linear_function", (2, 2))
    with pytest.raises(InvalidParameterError, match="0 decoded timesteps"):
        encode_element_values([], "linear_function", ())
    with pytest.raises(InvalidParameterError, match="negative"):
        encode_element_values(six, "linear_function", (-6,))
    with pytest.raises(TypeError):
        encode_element_values(six, "linear_function", 6)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode_element_values(six, "linear_function", (6.0,))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("values", "element_type", "error", "fragment"),
    [
        ([1.0, 2.0], "f64", InvalidParameterError, "scalar element_type"),
        ([[1, 2]], "i64", InvalidParameterError, "scalar element_type"),
        ([[1, 2]], "tuple(2,i32)", InvalidParameterError, "dtype is f64"),
        ([], "tuple(2,i32)", InvalidParameterError, "dtype is f64"),
        ([[1, 2]], "tuple(3,f64)", InvalidParameterError, "[3], got [2]"),
        (
            [[1, 2, 3], [1, 2]],
            "tuple(3,f64)",
            InvalidParameterError,
            "row 1 has 2 values, expected 3",
        ),
        (
            [{"x": [0, 1], "y": [5, 6]}],
            "piecewise_step",
            InvalidParameterError,
            "needs 1 y-values, but has 2",
        ),
        ([{"x": [], "y": [1]}], "piecewise_step", InvalidParameterError, "0 x-coords"),
        ([{"proportional": 1}], "linear_function", InvalidParameterError, "'constant'"),
        ([{"x": [1]}], "piecewise_step", InvalidParameterError, "'y'"),
        ([[{"x": 1}]], "piecewise_linear", InvalidParameterError, "'y'"),
        ([[1, 2]], "linear_function", TypeError, ""),
        ([{"proportional": "1", "constant": 2}], "linear_function", TypeError, "str"),
        ([{"proportional": None, "constant": 2}], "linear_function", TypeError, "NoneType"),
        ([[[1], [2]]], "tuple(2,f64)", TypeError, ""),
        (["ab"], "tuple(2,f64)", TypeError, ""),
        ([1], "tuple(1,f64)", TypeError, ""),
        ([{"a": 1}], "tuple(1,f64)", TypeError, ""),
        ("ab", "tuple(1,f64)", TypeError, ""),
        (None, "tuple(1,f64)", TypeError, ""),
        ([[(0, 1)]], "piecewise_linear", TypeError, ""),
        ([{"x": 1, "y": 1}], "piecewise_linear", TypeError, ""),
        ([{"x": "ab", "y": [1]}], "piecewise_step", TypeError, ""),
        ([{"x": 1, "y": []}], "piecewise_step", TypeError, ""),
        ([[1.0]], "float", InvalidParameterError, 'unknown element_type "float"'),
    ],
)
def test_encode_refusals(values: Any, element_type: str, error: type, fragment: str) -> None:
    with pytest.raises(error) as info:
        encode_element_values(values, element_type)
    assert fragment in str(info.value)


# ------------------------------------------------------------------ property tests

finite = st.floats(allow_nan=False, width=64)
anyfloat = st.floats(allow_nan=True, allow_infinity=True, width=64)


@st.composite
def logical(draw: st.DrawFn) -> tuple[str, list, tuple[int, ...]]:
    kind = draw(
        st.sampled_from(
            ["tuple", "linear_function", "quadratic_function", "piecewise_linear", "piecewise_step"]
        )
    )
    leading = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))
    count = math.prod(leading)
    if kind == "tuple":
        n = draw(st.integers(1, 4))
        et = f"tuple({n},f64)"
        values = [draw(st.lists(anyfloat, min_size=n, max_size=n)) for _ in range(count)]
    elif kind == "linear_function":
        et = kind
        values = [
            {"proportional": draw(anyfloat), "constant": draw(anyfloat)} for _ in range(count)
        ]
    elif kind == "quadratic_function":
        et = kind
        values = [
            {
                "quadratic": draw(anyfloat),
                "proportional": draw(anyfloat),
                "constant": draw(anyfloat),
            }
            for _ in range(count)
        ]
    elif kind == "piecewise_linear":
        et = kind
        values = [
            [{"x": draw(anyfloat), "y": draw(anyfloat)} for _ in range(draw(st.integers(0, 4)))]
            for _ in range(count)
        ]
    else:
        et = kind
        values = []
        for _ in range(count):
            n = draw(st.integers(0, 4))
            values.append(
                {
                    "x": draw(st.lists(anyfloat, min_size=n, max_size=n)),
                    "y": draw(st.lists(anyfloat, min_size=max(n - 1, 0), max_size=max(n - 1, 0))),
                }
            )
    return et, values, leading


@settings(max_examples=200, deadline=None)
@given(logical())
def test_encode_then_decode_round_trip(case: tuple[str, list, tuple[int, ...]]) -> None:
    et_text, values, leading = case
    arr = encode_element_values(values, et_text, leading)
    et = parse_element_type(et_text)
    assert arr.shape[: len(leading)] == leading
    check_element_shape(et, arr.shape[len(leading) :], "f64")
    back = decode_element_values(arr, et_text, len(leading))
    assert same(back, values)
    # encode output is already canonical, and re-encoding the decoded values is a fixpoint
    assert shrink(et, arr).tobytes() == arr.tobytes() or not et.is_ragged
    again = encode_element_values(back, et_text, leading)
    assert again.tobytes() == arr.tobytes() and again.shape == arr.shape
    # any extra padding decodes to the same values and shrinks back to the same bytes
    if et.is_ragged:
        width = arr.shape[-1]
        wider = pad(et, arr, 2 if et == PS and width == 1 else width + 2)
        assert same(decode_element_values(wider, et_text, len(leading)), back)
        assert shrink(et, wider).tobytes() == arr.tobytes()


@st.composite
def ragged_array(draw: st.DrawFn) -> tuple[ElementType, np.ndarray]:
    et = draw(st.sampled_from([PL, PS]))
    rows = draw(st.integers(0, 5))
    counts = [draw(st.integers(0, 3)) for _ in range(rows)]
    top = max(counts, default=0)
    need = 1 + 2 * top if et is PL else max(1, 2 * top)
    width = need + draw(st.integers(0, 2)) * 2
    if et is PS and width > 1 and width % 2:
        width += 1  # step rows are 1 wide (all empty) or even
    arr = np.array(
        [[float(c)] + [draw(anyfloat) for _ in range(width - 1)] for c in counts], dtype=float
    ).reshape(rows, width)
    return et, arr


@settings(max_examples=200, deadline=None)
@given(ragged_array())
def test_shrink_equals_decode_encode(case: tuple[ElementType, np.ndarray]) -> None:
    et, arr = case
    before = arr.tobytes()
    decoded = decode_element_values(arr, str(et))
    canonical = encode_element_values(decoded, str(et), arr.shape[:1])
    assert shrink(et, arr).tobytes() == canonical.tobytes()
    assert shrink(et, arr).shape == canonical.shape
    assert minimal_width(et, arr) == canonical.shape[-1]
    assert arr.tobytes() == before
