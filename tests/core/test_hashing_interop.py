"""Hashes and the element codec against the reference implementation (infrastore 0.15.1).

Every test feeds the same input to the reference and to this package and compares what the
reference exposes: the catalog ``data_hash``, the SQLite export's ``_arrays.data_hash`` /
``time_axis`` and ``_series.features`` columns, and ``encode/decode_element_values``.
The reference exposes no feature hash, so features are compared through their JSON text.
"""

from __future__ import annotations

import itertools
import math
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import infrastore
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from infrastore_sqlite.core.elements import (
    NUMPY_DTYPES,
    decode_element_values,
    encode_element_values,
    parse_element_type,
)
from infrastore_sqlite.core.hashing import (
    RESERVED_FEATURE_NAMES,
    composite_data_hash,
    data_hash_hex,
    features_json,
    timestamps_hash,
    validate_features,
)
from infrastore_sqlite.errors import InvalidParameterError

pytestmark = pytest.mark.interop

T0 = datetime(2024, 1, 1, tzinfo=UTC)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
COMPONENT = infrastore.OwnerCategory.Component
SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class RefStore:
    """One reference store per test; every series gets a fresh name."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.store = infrastore.Store.create(directory / "r.h5")
        self._names: Iterator[int] = itertools.count()
        self._exports: Iterator[int] = itertools.count()

    def add(self, make: Callable[[str], Any], features: dict | None = None) -> str:
        name = f"s{next(self._names)}"
        self.store.add_time_series(1, "Gen", COMPONENT, make(name), features=features)
        return name

    def catalog_hash(self, name: str) -> str:
        return self.store.list_metadata(name=name)[0]["data_hash"]

    def export(self, **filters: Any) -> sqlite3.Connection:
        path = self.directory / f"e{next(self._exports)}.sqlite"
        self.store.export_sqlite(path, **filters)
        return sqlite3.connect(path)


def export_rows(con: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """(name, data_hash, time_axis, features) of every exported series."""
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    rows = []
    for series in (t for t in tables if t.endswith("_series")):
        arrays = series[: -len("_series")] + "_arrays"
        rows += con.execute(
            f'SELECT s.name, a.data_hash, a.time_axis, s.features FROM "{series}" s '
            f'JOIN "{arrays}" a ON a.id = s.array_id'
        ).fetchall()
    return rows


@pytest.fixture
def ref(tmp_path: Path) -> RefStore:
    return RefStore(tmp_path)


def sts(arr: np.ndarray, element_type: str | None = None) -> Callable[[str], Any]:
    return lambda name: infrastore.SingleTimeSeries(
        T0, "PT1H", arr, name, element_type=element_type
    )


# ----------------------------------------------------------------------- data_hash

store_dtypes = st.sampled_from([np.dtype(v) for v in NUMPY_DTYPES.values()])


@st.composite
def store_arrays(draw: st.DrawFn) -> np.ndarray:
    dtype = draw(store_dtypes)
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    arr = draw(hnp.arrays(dtype=dtype, shape=shape))
    layout = draw(st.sampled_from(["c", "big-endian", "fortran"]))
    if layout == "big-endian" and dtype.itemsize > 1:
        arr = arr.astype(dtype.newbyteorder(">"))
    elif layout == "fortran":
        arr = np.asfortranarray(arr)
    return arr


def test_data_hash_matches_catalog(ref: RefStore) -> None:
    @SETTINGS
    @given(store_arrays())
    def check(arr: np.ndarray) -> None:
        name = ref.add(sts(arr))
        assert data_hash_hex(arr) == ref.catalog_hash(name)

    check()


@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES))
def test_data_hash_fixed_cases_every_dtype(ref: RefStore, dtype: str) -> None:
    dt = NUMPY_DTYPES[dtype]
    for arr in (
        np.zeros(0, dtype=dt),
        np.arange(1).astype(dt),
        np.arange(24).reshape(2, 3, 4).astype(dt),
        np.arange(24).reshape(4, 6).astype(dt.newbyteorder(">")),
    ):
        assert data_hash_hex(arr) == ref.catalog_hash(ref.add(sts(arr))), arr.shape


def test_data_hash_of_forecasts(ref: RefStore) -> None:
    arr = np.arange(24.0).reshape(2, 3, 4)  # [H=2, count=3, E=4]
    det = ref.add(lambda name: infrastore.Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, arr, name))
    assert data_hash_hex(arr) == ref.catalog_hash(det)
    prob = np.arange(12, dtype=np.int32).reshape(2, 2, 3)  # [P=2, H=2, count=3]
    name = ref.add(
        lambda name: infrastore.Probabilistic(
            T0, "PT1H", "PT2H", "PT1H", 3, [10.0, 90.0], prob, name
        )
    )
    assert data_hash_hex(prob) == ref.catalog_hash(name)


def test_nan_payloads_match(ref: RefStore) -> None:
    for dtype, bits in (
        ("<f8", [0xFFF8000000000000, 0x7FF0000000000001, 0x7FF4000000000000, 0xFFFFFFFFFFFFFFFF]),
        ("<f4", [0xFFC00000, 0x7F800001, 0x7FA00000, 0xFFFFFFFF]),
    ):
        for b in bits:
            arr = np.array([1.0, 0.0, -0.0], dtype=dtype)
            arr[1] = np.array([b], dtype=f"<u{arr.itemsize}").view(dtype)[0]
            assert data_hash_hex(arr) == ref.catalog_hash(ref.add(sts(arr)))


def test_bool_bytes_other_than_one_match(ref: RefStore) -> None:
    # numpy lets a bool array hold a byte 2; the reference hashes it verbatim, so do we
    arr = np.frombuffer(b"\x02\x00\x01", dtype=np.bool_)
    assert data_hash_hex(arr) == ref.catalog_hash(ref.add(sts(arr)))


# ---------------------------------------------------------------- composite hashes


@st.composite
def ragged_arrays(draw: st.DrawFn) -> tuple[str, np.ndarray]:
    kind = draw(st.sampled_from(["piecewise_linear", "piecewise_step"]))
    counts = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    top = max(counts)
    need = 1 + 2 * top if kind == "piecewise_linear" else max(1, 2 * top)
    width = need + 2 * draw(st.integers(0, 2))
    if kind == "piecewise_step" and width > 1 and width % 2:
        width += 1
    cells = st.floats(width=64, allow_nan=True, allow_infinity=True)
    rows = []
    for c in counts:
        count = -0.0 if c == 0 and draw(st.booleans()) else float(c)
        rows.append([count] + [draw(cells) for _ in range(width - 1)])
    return kind, np.array(rows, dtype="<f8")


def test_composite_hash_matches_export(ref: RefStore) -> None:
    expected: dict[str, str] = {}

    @SETTINGS
    @given(ragged_arrays())
    def collect(case: tuple[str, np.ndarray]) -> None:
        kind, arr = case
        name = ref.add(sts(arr, kind))
        assert data_hash_hex(arr) == ref.catalog_hash(name)  # catalog: the raw array
        expected[name] = composite_data_hash(parse_element_type(kind), arr).hex()

    collect()
    got = {name: h for name, h, _axis, _f in export_rows(ref.export())}
    assert got == expected


# ------------------------------------------------------------------------ features

feature_values = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False).filter(lambda f: not (f == 0 and math.copysign(1, f) < 0)),
    st.text(max_size=8),
)
feature_maps = st.dictionaries(
    # reserved names are exact and case-sensitive: their upper-case spellings are fine
    st.one_of(
        st.text(max_size=6), st.sampled_from(sorted(RESERVED_FEATURE_NAMES)).map(str.upper)
    ).filter(lambda k: k not in RESERVED_FEATURE_NAMES),
    feature_values,
    max_size=5,
)


def test_features_json_matches_export(ref: RefStore) -> None:
    expected: dict[str, str] = {}

    @SETTINGS
    @given(feature_maps)
    def collect(features: dict) -> None:
        features = validate_features(features)
        expected[ref.add(sts(np.arange(2.0)), features)] = features_json(features)

    collect()
    got = {name: feats for name, _h, _axis, feats in export_rows(ref.export())}
    assert got == expected


@pytest.mark.parametrize(
    "features",
    [
        {"name": 1},
        {"time_reference": "utc"},
        {"timestamps_uri": 1},
        {"a": math.nan},
        {"a": -0.0},
        {"a": None},
        {"a": [1]},
        {"a": 2**63},
        {"a": -(2**63) - 1},
    ],
)
def test_features_refused_by_both(ref: RefStore, features: dict) -> None:
    with pytest.raises((infrastore.InvalidParameterError, OverflowError)):
        ref.add(sts(np.arange(2.0)), features)
    with pytest.raises(InvalidParameterError):
        validate_features(features)


# ---------------------------------------------------------------------- timestamps

MS_RANGE = 10**13  # about ±317 years around 1970: inside what datetime can express


def test_timestamps_hash_matches_time_axis(ref: RefStore) -> None:
    expected: dict[str, str] = {}

    @SETTINGS
    @given(st.sets(st.integers(-MS_RANGE, MS_RANGE), min_size=1, max_size=8))
    def collect(instants: set[int]) -> None:
        ms = sorted(instants)
        stamps = [EPOCH + timedelta(milliseconds=m) for m in ms]
        name = ref.add(
            lambda n: infrastore.NonSequentialTimeSeries(stamps, np.arange(float(len(ms))), n)
        )
        expected[name] = timestamps_hash(np.array(ms, dtype=np.int64)).hex()

    collect()
    got = {name: axis for name, _h, axis, _f in export_rows(ref.export())}
    assert got == expected


# -------------------------------------------------------------- element codec


finite_or_not = st.floats(width=64, allow_nan=True, allow_infinity=True)


@st.composite
def logical_values(draw: st.DrawFn) -> tuple[str, list, tuple[int, ...]]:
    kind = draw(
        st.sampled_from(
            ["tuple", "linear_function", "quadratic_function", "piecewise_linear", "piecewise_step"]
        )
    )
    leading = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))
    count = math.prod(leading)
    num = finite_or_not
    if kind == "tuple":
        n = draw(st.integers(1, 4))
        return (
            f"tuple({n},f64)",
            [draw(st.lists(num, min_size=n, max_size=n)) for _ in range(count)],
            leading,
        )
    if kind == "linear_function":
        return (
            kind,
            [{"proportional": draw(num), "constant": draw(num)} for _ in range(count)],
            leading,
        )
    if kind == "quadratic_function":
        return (
            kind,
            [
                {"quadratic": draw(num), "proportional": draw(num), "constant": draw(num)}
                for _ in range(count)
            ],
            leading,
        )
    if kind == "piecewise_linear":
        return (
            kind,
            [
                [{"x": draw(num), "y": draw(num)} for _ in range(draw(st.integers(0, 3)))]
                for _ in range(count)
            ],
            leading,
        )
    values = []
    for _ in range(count):
        n = draw(st.integers(0, 3))
        values.append(
            {
                "x": draw(st.lists(num, min_size=n, max_size=n)),
                "y": draw(st.lists(num, min_size=max(n - 1, 0), max_size=max(n - 1, 0))),
            }
        )
    return kind, values, leading


def same_repr(a: Any, b: Any) -> bool:
    # repr distinguishes -0.0 and prints every NaN alike, which is what equality needs here
    return repr(a) == repr(b)


def assert_decode_agrees(arr: np.ndarray, element_type: str, leading: int) -> None:
    """Both decoders refuse, or both return the same values (``None`` included)."""
    try:
        theirs = infrastore.decode_element_values(arr, element_type, leading)
    except infrastore.InvalidParameterError:
        with pytest.raises(InvalidParameterError):
            decode_element_values(arr, element_type, leading)
        return
    assert same_repr(decode_element_values(arr, element_type, leading), theirs)


@SETTINGS
@given(logical_values())
def test_encode_decode_match_reference(case: tuple[str, list, tuple[int, ...]]) -> None:
    element_type, values, leading = case
    ours = encode_element_values(values, element_type, leading)
    theirs = infrastore.encode_element_values(values, element_type, leading)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.tobytes() == theirs.tobytes()
    for ld in range(len(leading) + 2):
        assert_decode_agrees(ours, element_type, ld)


@SETTINGS
@given(ragged_arrays())
def test_decode_of_padded_arrays_matches_reference(case: tuple[str, np.ndarray]) -> None:
    kind, arr = case
    assert_decode_agrees(arr, kind, 1)
    assert_decode_agrees(arr.reshape(1, *arr.shape), kind, 2)


@SETTINGS
@given(
    store_arrays(),
    st.sampled_from(
        [
            "f64",
            "f32",
            "i64",
            "u8",
            "bool",
            "tuple(2,f64)",
            "tuple(3,i32)",
            "linear_function",
            "quadratic_function",
            "piecewise_linear",
            "piecewise_step",
        ]
    ),
    st.integers(0, 4),
)
def test_decode_accepts_and_refuses_like_reference(
    arr: np.ndarray, element_type: str, leading: int
) -> None:
    assert_decode_agrees(arr, element_type, leading)
