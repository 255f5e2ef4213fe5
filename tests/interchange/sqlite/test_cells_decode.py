"""Tests for the ``value`` cells read back on import: what is accepted and what is refused,
scalar and JSON partitions (peer contract §14.4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cells_helpers import (
    ALL_DTYPES,
    BLOB,
    NOT_BOOL,
    NOT_JSON,
    RAGGED,
    assert_same,
    holds,
    not_int,
    null_int,
    raises,
    shapes,
)

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.sqlite import cells as cells_mod
from infrastore_sqlite.interchange.sqlite.cells import (
    DTYPES,
    decode_cells,
    decode_json_cells,
    decode_scalar_cells,
)

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
    assert_same(cells_mod.decode_slow(cells, dtype), want)


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
    assert cells_mod.json_fast(cells, dtype) is None


def test_json_zero_width_and_deep_cells() -> None:
    assert decode_json_cells(["[]", "[]"], "f64").shape == (2, 0)
    assert decode_json_cells(["[[],[]]"], "i32").shape == (1, 2, 0)
    deep = "[" * 40 + "1" + "]" * 40
    with pytest.raises(InvalidParameterError, match="40 deep"):
        decode_json_cells([deep], "f64")
