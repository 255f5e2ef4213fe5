"""Messages, bit views and comparisons shared by the ``value`` cells' test modules."""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal

import numpy as np
import pytest

from infrastore_sqlite.errors import InvalidParameterError

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
