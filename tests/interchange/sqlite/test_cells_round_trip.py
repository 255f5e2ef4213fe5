"""Round trips of the ``value`` cells, every dtype: by example, by hypothesis over bit
patterns, and through a real SQLite table."""

from __future__ import annotations

import math

import apsw
import numpy as np
import pytest
from cells_helpers import (
    ALL_DTYPES,
    INT_DTYPES,
    NOT_JSON,
    assert_same,
    not_int,
    raises,
    shapes,
    spec_float_text,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.sqlite import cells as cells_mod
from infrastore_sqlite.interchange.sqlite.cells import (
    DTYPES,
    decode_json_cells,
    decode_scalar_cells,
    encode_json_cells,
    encode_scalar_cells,
    has_negative_zero,
)

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
    assert_same(cells_mod.decode_slow(cells, dtype), rows)
    assert_same(cells_mod.json_fast(cells, dtype), rows)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_scalar_round_trip(dtype: str) -> None:
    rows = sample_rows(dtype, (), n=20)
    if rows.dtype.kind == "f":
        rows = rows[~((rows == 0) & np.signbit(rows))]  # -0.0 is refused before this
    cells = encode_scalar_cells(rows).tolist()
    # apsw hands a NaN back as None (the NULL SQLite stored)
    cells = [None if isinstance(c, float) and math.isnan(c) else c for c in cells]
    assert_same(decode_scalar_cells(cells, dtype), rows)
    assert_same(cells_mod.decode_slow(cells, dtype), rows)


def test_fast_path_takes_what_the_layout_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exported cells of every dtype decode without the per-cell path."""

    def boom(*_args: object) -> None:
        raise AssertionError("the per-cell path was used")

    monkeypatch.setattr(cells_mod, "decode_slow", boom)
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
    assert_same(cells_mod.decode_slow(cells, "f64"), rows)


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
    fast = cells_mod.json_fast(cells, dtype)
    try:
        slow = cells_mod.decode_slow(cells, dtype)
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
        slow = cells_mod.decode_slow(cells, dtype)
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
        assert cells_mod.json_fast([row, '"Infinity"'], dtype) is None
        with raises(message):  # a cell is converted before its shape is compared
            decode_json_cells([row, '"Infinity"'], dtype)
    assert cells_mod.json_fast(["[[1,2,3,4,5,6,7,8]]", '["Infinity"]'], "f64") is None


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
