"""Content hashes: the worked examples of the reference model and their normalizations."""

from __future__ import annotations

import hashlib
import math
import struct

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from infrastore_sqlite.core.elements import DTYPE_NAMES, NUMPY_DTYPES, parse_element_type, shrink
from infrastore_sqlite.core.hashing import (
    RESERVED_FEATURE_NAMES,
    composite_data_hash,
    data_hash,
    data_hash_hex,
    data_hashes,
    features_hash,
    features_json,
    timestamps_hash,
    validate_features,
)
from infrastore_sqlite.errors import InvalidParameterError
from tests.bitpatterns import SPECIAL_F32, SPECIAL_F64, values

F64_123 = "3da730d99628f9eea1a5223e5012b24b96e7caf468ec81d6a3b0f040f1b64ef4"


def naive_hash(arr: np.ndarray) -> str:
    """The reference model's Python recipe, written as plainly as possible."""
    names = {(dt.kind, dt.itemsize): name for name, dt in NUMPY_DTYPES.items()}
    name = names[(arr.dtype.kind, arr.dtype.itemsize)]
    h = hashlib.sha256()
    h.update(name.encode() + b"\0")
    h.update(struct.pack("<Q", arr.ndim))
    for d in arr.shape:
        h.update(struct.pack("<Q", d))
    a = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<")))
    if a.dtype.kind == "f":
        a = a.copy()
        bits = 0x7FF8000000000000 if a.dtype.itemsize == 8 else 0x7FC00000
        a.view(f"<u{a.dtype.itemsize}")[np.isnan(a)] = bits
    h.update(a.tobytes())
    return h.hexdigest()


# ------------------------------------------------------------------------- data_hash


def test_worked_example_bytes_and_digest() -> None:
    arr = np.array([1.0, 2.0, 3.0])
    fed = (
        b"f64\0"
        + (1).to_bytes(8, "little")
        + (3).to_bytes(8, "little")
        + bytes.fromhex("000000000000f03f00000000000000400000000000000840")
    )
    assert hashlib.sha256(fed).hexdigest() == F64_123
    assert data_hash_hex(arr) == F64_123
    assert data_hash(arr) == bytes.fromhex(F64_123)
    assert len(data_hash(arr)) == 32


@pytest.mark.parametrize(
    ("arr", "prefix"),
    [
        (np.array([1, 2, 3], dtype=np.float32), "7e51f87a"),
        (np.array([1, 2, 3], dtype=np.int64), "a0f97214"),
        (np.array([True, False, True]), "0ac92b0f"),
        (np.arange(6.0).reshape(3, 2), "376ec91c"),
        (np.array([1.0, math.nan, 3.0]), "17431811"),
        (np.arange(6.0).reshape(2, 3), "c426e77d"),
        (np.arange(12.0).reshape(2, 2, 3), "7d47b68a"),
    ],
)
def test_verified_prefixes(arr: np.ndarray, prefix: str) -> None:
    assert data_hash_hex(arr).startswith(prefix)


def test_every_dtype_matches_the_recipe() -> None:
    seen = set()
    for name, dt in NUMPY_DTYPES.items():
        arr = np.arange(6).reshape(2, 3).astype(dt)
        digest = data_hash_hex(arr)
        assert digest == naive_hash(arr)
        seen.add(digest)
        header = name.encode() + b"\0" + struct.pack("<QQQ", 2, 2, 3)
        assert digest == hashlib.sha256(header + arr.tobytes()).hexdigest()
    assert len(seen) == len(DTYPE_NAMES)  # the dtype name is part of the hash


def test_shape_is_part_of_the_hash() -> None:
    flat = np.arange(6.0)
    assert data_hash(flat) != data_hash(flat.reshape(2, 3))
    assert data_hash(flat.reshape(2, 3)) != data_hash(flat.reshape(3, 2))
    assert data_hash(np.zeros(0)) != data_hash(np.zeros((0, 2)))
    assert (
        data_hash(np.array(1.0)) == hashlib.sha256(b"f64\0" + struct.pack("<Qd", 0, 1.0)).digest()
    )


def nan_bits(bits: int, dtype: str) -> float:
    return np.array([bits], dtype=f"<u{np.dtype(dtype).itemsize}").view(dtype)[0]


@pytest.mark.parametrize(
    ("dtype", "variants"),
    [
        (
            "<f8",
            [
                0x7FF8000000000000,
                0xFFF8000000000000,
                0x7FF0000000000001,
                0x7FF4000000000000,
                0xFFFFFFFFFFFFFFFF,
            ],
        ),
        ("<f4", [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0xFFFFFFFF]),
    ],
)
def test_nan_payloads_hash_alike_and_input_is_untouched(dtype: str, variants: list[int]) -> None:
    digests = set()
    for bits in variants:
        arr = np.array([1.0, 0.0, 3.0], dtype=dtype)
        arr[1] = nan_bits(bits, dtype)
        before = arr.tobytes()
        digests.add(data_hash(arr))
        assert arr.tobytes() == before
        # also through the slow (big-endian copy) path
        digests.add(data_hash(arr.astype(np.dtype(dtype).newbyteorder(">"))))
    assert len(digests) == 1
    canonical = np.array([1.0, math.nan, 3.0], dtype=dtype)
    assert digests == {data_hash(canonical)}


def test_nan_in_a_late_chunk_of_a_large_array() -> None:
    arr = np.arange(500_000, dtype=np.float64)
    arr[-1] = nan_bits(0xFFF8000000000001, "<f8")
    before = arr.tobytes()
    assert data_hash_hex(arr) == naive_hash(arr)
    assert arr.tobytes() == before
    f32 = np.arange(700_000, dtype=np.float32)
    f32[300_001] = nan_bits(0xFFC00001, "<f4")
    assert data_hash_hex(f32) == naive_hash(f32)


def test_signed_zero_and_infinities_are_verbatim() -> None:
    assert data_hash(np.array([0.0])) != data_hash(np.array([-0.0]))
    assert data_hash(np.array([0.0], np.float32)) != data_hash(np.array([-0.0], np.float32))
    assert data_hash(np.array([math.inf])) != data_hash(np.array([-math.inf]))
    assert data_hash(np.array([math.inf])) != data_hash(np.array([math.nan]))


def test_byte_order_and_memory_order_do_not_matter() -> None:
    base = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    expected = data_hash(base)
    assert data_hash(base.astype(">f8")) == expected
    assert data_hash(np.asfortranarray(base)) == expected
    assert data_hash(np.asfortranarray(base.astype(">f8"))) == expected
    wide = np.zeros((2, 3, 8))
    wide[:, :, ::2] = base
    assert data_hash(wide[:, :, ::2]) == expected  # strided view
    for name, dt in NUMPY_DTYPES.items():
        arr = np.arange(6).reshape(2, 3).astype(dt)
        assert data_hash(arr.astype(dt.newbyteorder(">"))) == data_hash(arr), name
        assert data_hash(arr.T.copy().T) == data_hash(arr), name


def test_bool_bytes() -> None:
    arr = np.array([[True, False], [False, True]])
    assert arr.view(np.uint8).tolist() == [[1, 0], [0, 1]]
    header = b"bool\0" + struct.pack("<QQQ", 2, 2, 2)
    assert data_hash(arr) == hashlib.sha256(header + b"\x01\x00\x00\x01").digest()
    assert data_hash(arr) != data_hash(arr.astype(np.uint8))


def test_data_hash_refuses_unsupported() -> None:
    for bad in (np.zeros(2, np.float16), np.zeros(2, np.complex128), np.array(["a"])):
        with pytest.raises(InvalidParameterError):
            data_hash(bad)


def test_data_hash_accepts_lists() -> None:
    assert data_hash_hex([1.0, 2.0, 3.0]) == F64_123  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(
    hnp.arrays(
        dtype=st.sampled_from([np.dtype(v) for v in NUMPY_DTYPES.values()]),
        shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5),
    ),
    st.booleans(),
)
def test_matches_naive_recipe(arr: np.ndarray, swap: bool) -> None:
    if swap and arr.dtype.itemsize > 1:
        arr = arr.astype(arr.dtype.newbyteorder(">"))
    before = arr.tobytes()
    assert data_hash_hex(arr) == naive_hash(arr)
    assert arr.tobytes() == before


# ------------------------------------------------------------------ data_hashes


def _special_block(dtype: str, n: int) -> list[np.ndarray]:
    """``n`` arrays of one shape, each holding one special bit pattern (or extreme)."""
    if dtype in ("f64", "f32"):
        bits, special = (np.uint64, SPECIAL_F64) if dtype == "f64" else (np.uint32, SPECIAL_F32)
        return [
            np.array(
                [special[i % len(special)], 0, special[(i * 3) % len(special)]], dtype=bits
            ).view(NUMPY_DTYPES[dtype])
            for i in range(n)
        ]
    info = np.iinfo(NUMPY_DTYPES[dtype]) if dtype != "bool" else None
    lo, hi = (0, 1) if info is None else (info.min, info.max)
    return [np.array([lo, hi, i % 2], dtype=NUMPY_DTYPES[dtype]) for i in range(n)]


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("block_bytes", [8, 1 << 20])
def test_data_hashes_equal_data_hash_for_every_dtype_and_bit_pattern(
    dtype: str, block_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # block_bytes 8: one array per stacked block, so block boundaries fall everywhere.
    monkeypatch.setattr("infrastore_sqlite.core.hashing._BATCH_BLOCK_BYTES", block_bytes)
    arrays = _special_block(dtype, 23)
    arrays.append(arrays[3].astype(arrays[3].dtype.newbyteorder(">")))  # big-endian
    arrays.append(np.repeat(arrays[5], 2)[::2])  # strided view
    before = [a.tobytes() for a in arrays]
    assert data_hashes(arrays) == [data_hash(a) for a in arrays]
    assert [a.tobytes() for a in arrays] == before
    assert [h.hex() for h in data_hashes(arrays)] == [naive_hash(a) for a in arrays]


def test_data_hashes_canonicalize_nan_payloads_like_data_hash() -> None:
    quiet, payload = (np.array([b, 0], dtype=np.uint64).view(np.float64) for b in SPECIAL_F64[:2])
    first, second = data_hashes([quiet, payload])
    assert first == second == data_hash(quiet)
    neg_zero = np.array([SPECIAL_F64[4], 0], dtype=np.uint64).view(np.float64)
    assert data_hashes([neg_zero])[0] != data_hashes([np.zeros(2)])[0]


def test_data_hashes_mix_large_small_empty_and_lists() -> None:
    big = np.arange(20_000, dtype=np.float64)  # past the batch size: hashed alone
    big[17_001] = np.nan
    arrays = [big, np.zeros((0, 3)), np.float64(2.5) * np.ones(()), [1, 2], np.ones((2, 3), bool)]
    assert data_hashes(arrays) == [data_hash(a) for a in arrays]
    assert data_hashes([]) == []


def test_data_hashes_refuse_unsupported() -> None:
    with pytest.raises(InvalidParameterError):
        data_hashes([np.zeros(2), np.zeros(2, dtype=np.complex128)])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(DTYPE_NAMES),
            hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
        ),
        max_size=12,
    ).flatmap(lambda specs: st.tuples(*(values(d, s) for d, s in specs)))
)
def test_data_hashes_match_data_hash_on_any_batch(arrays: tuple[np.ndarray, ...]) -> None:
    assert data_hashes(list(arrays)) == [data_hash(a) for a in arrays]


# ------------------------------------------------------------------ composite hash


def test_composite_hash_ignores_padding_and_garbage() -> None:
    pl = parse_element_type("piecewise_linear")
    clean = np.array([[0.0, 0, 0], [1, 2, 3]])
    over = np.array([[0.0, 0, 0, 0, 0], [1, 2, 3, 0, 0]])
    dirty = np.array([[-0.0, 7, 7, 9, 9], [1, 2, 3, math.nan, 5]])
    expected = data_hash(clean)
    assert composite_data_hash(pl, over) == expected
    assert composite_data_hash(pl, dirty) == expected
    assert data_hash(over) != expected  # the plain hash sees the padding
    # values observed on the reference's SQLite export (data_hash column)
    assert expected.hex() == "cd470d6980d6facd07d4eeb2df36be0b0995b77ff288e82fad20960e4a7fb52d"
    ps = parse_element_type("piecewise_step")
    step = np.array([[0.0, 3, 9, 9], [1, 2, 8, 8]])
    assert composite_data_hash(ps, step).hex() == (
        "2d552cfbb5e782555b0567c76f54ec2b73b039a73ad77b1737b9b9f8f654c81a"
    )
    assert composite_data_hash(ps, step) == data_hash(shrink(ps, step))


def test_composite_hash_of_fixed_kinds_is_the_plain_hash() -> None:
    arr = np.array([[1.0, -0.0], [math.nan, 2.0]])
    for text in ("linear_function", "tuple(2,f64)", "f64"):
        assert composite_data_hash(parse_element_type(text), arr) == data_hash(arr)


# -------------------------------------------------------------------------- features


def test_features_hash_examples() -> None:
    assert features_hash({}).hex() == (
        "f0f10eb0149a8828ad7505d73262e3e4a70bfdfed90e4c2e9ce6013758296ede"
    )
    example = {"flag": True, "model_year": 2030, "scen": "hi", "w": 0.5}
    assert features_hash(example).hex() == (
        "c13e96d9c08d9262ede0918d95506ec41283937444236aabf77911b225fa2c30"
    )
    # key order of the input does not matter
    assert features_hash(dict(reversed(list(example.items())))) == features_hash(example)


def naive_features_hash(features: dict) -> bytes:
    h = hashlib.sha256(b"features\0" + struct.pack("<Q", len(features)))
    for key in sorted(features, key=lambda k: k.encode("utf-8")):
        value = features[key]
        kb = key.encode("utf-8")
        h.update(struct.pack("<Q", len(kb)) + kb)
        if isinstance(value, bool):
            h.update(b"b" + bytes([value]))
        elif isinstance(value, int):
            h.update(b"i" + struct.pack("<q", value))
        elif isinstance(value, float):
            h.update(b"f" + struct.pack("<d", value))
        else:
            vb = value.encode("utf-8")
            h.update(b"s" + struct.pack("<Q", len(vb)) + vb)
    return h.digest()


def test_features_hash_kinds_are_distinct() -> None:
    digests = {features_hash({"k": v}) for v in (1, 1.0, True, "1")}
    assert len(digests) == 4
    assert features_hash({"k": 0.0}) != features_hash({"k": -0.0})
    assert features_hash({"k": np.int64(5)}) == features_hash({"k": 5})
    assert features_hash({"k": np.bool_(True)}) == features_hash({"k": True})
    assert features_hash({"k": np.float32(0.5)}) == features_hash({"k": 0.5})
    assert features_hash({"k": math.nan}) == features_hash(
        {"k": struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0]}
    )
    with pytest.raises(InvalidParameterError):
        features_hash({"k": None})  # type: ignore[dict-item]
    with pytest.raises(InvalidParameterError):
        features_hash({"k": 2**63})
    with pytest.raises(InvalidParameterError):
        features_hash({1: 1})  # type: ignore[dict-item]


feature_values = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(),
)
feature_maps = st.dictionaries(st.text(), feature_values, max_size=6)


@settings(max_examples=150, deadline=None)
@given(feature_maps)
def test_features_hash_matches_naive(features: dict) -> None:
    assert features_hash(features) == naive_features_hash(features)


def test_reserved_names() -> None:
    assert len(RESERVED_FEATURE_NAMES) == 32
    for name in ("name", "data_hash", "time_reference", "timestamps_uri", "uri", "id", "ext"):
        assert name in RESERVED_FEATURE_NAMES
    assert "Name" not in RESERVED_FEATURE_NAMES


def test_validate_features_accepts_and_converts() -> None:
    assert validate_features(None) == {}
    assert validate_features({}) == {}
    sub_str = type("S", (str,), {})("v")
    sub_int = type("J", (int,), {})(5)
    out = validate_features(
        {
            "": 1,
            "Name": 2,
            "a": np.int32(3),
            "b": np.float32(0.5),
            "c": np.bool_(False),
            "d": sub_str,
            "e": sub_int,
            "f": math.inf,
            "g": -(2**63),
            "nul\0": "x\0",
            np.str_("k"): "ü",
        }
    )
    assert out == {
        "": 1,
        "Name": 2,
        "a": 3,
        "b": 0.5,
        "c": False,
        "d": "v",
        "e": 5,
        "f": math.inf,
        "g": -(2**63),
        "nul\0": "x\0",
        "k": "ü",
    }
    assert [type(v) for v in out.values()] == [
        int,
        int,
        int,
        float,
        bool,
        str,
        int,
        float,
        int,
        str,
        str,
    ]
    assert all(type(k) is str for k in out)
    src = {"a": 1}
    assert validate_features(src) is not src


@pytest.mark.parametrize(
    ("features", "fragment"),
    [
        ({"name": 1}, '"name" is reserved'),
        ({"data_hash": "x"}, '"data_hash" is reserved'),
        ({"a": None}, '"a" is None'),
        ({"a": math.nan}, '"a" is NaN'),
        ({"a": -0.0}, '"a" is negative zero'),
        ({"a": np.float64(-0.0)}, "negative zero"),
        ({"a": 2**63}, '"a"'),
        ({"a": -(2**63) - 1}, '"a"'),
        ({"a": np.uint64(2**63)}, '"a"'),
        ({"a": [1]}, '"a" has a value of type list'),
        ({"a": b"x"}, "bytes"),
        ({"a": 1j}, "complex"),
        ({"a": np.longdouble(1)}, '"a"'),
        ({1: 1}, "feature name 1"),
        ({"\ud800": 1}, "surrogate"),
        ({"a": "\udc80"}, '"a"'),
        ([("a", 1)], "mapping"),
    ],
)
def test_validate_features_refuses(features: object, fragment: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        validate_features(features)  # type: ignore[arg-type]
    assert fragment in str(info.value)


def test_features_json() -> None:
    assert features_json({}) == "{}"
    assert (
        features_json({"w": 0.5, "flag": True, "scen": "hi", "model_year": 2030})
        == '{"flag":true,"model_year":2030,"scen":"hi","w":0.5}'
    )
    assert features_json({"b": 1e20, "a": 1e-7, "c": 2.0}) == '{"a":1e-7,"b":1e+20,"c":2.0}'
    assert features_json({"ü": "ß", "Z": 'q"\n', "a b": 1}) == '{"Z":"q\\"\\n","a b":1,"ü":"ß"}'
    features = {"x": 1, "é": 0.1, "": "\x01"}
    assert features_json(features) == orjson.dumps(features, option=orjson.OPT_SORT_KEYS).decode()


# ------------------------------------------------------------------------ timestamps


def test_timestamps_examples() -> None:
    first = np.array([1704067200000, 1704070800000, 1704085200000], dtype=np.int64)
    assert timestamps_hash(first).hex() == (
        "bed317d23b25f84e6e42445fe31ea6318ea36eaded611f744ebe6f8290142812"
    )
    second = [1704067200000, 1704067200000 + 3 * 3_600_000]
    assert timestamps_hash(np.array(second)).hex() == (
        "326448c6980209534e48a8f4883a78df41bb2e34ac20d6f16d3cd1025e25389e"
    )
    assert timestamps_hash(second) == timestamps_hash(np.array(second, dtype=">i8"))  # type: ignore[arg-type]
    assert timestamps_hash(np.array(second, dtype=np.uint64)) == timestamps_hash(np.array(second))
    assert timestamps_hash(np.array(second)[::-1][::-1]) == timestamps_hash(np.array(second))
    assert (
        timestamps_hash(np.zeros(0, np.int64)).hex()
        == hashlib.sha256(b"timestamps\0" + bytes(8)).hexdigest()
    )
    assert (
        timestamps_hash(np.array([-1, 2**63 - 1]))
        == hashlib.sha256(b"timestamps\0" + struct.pack("<Qqq", 2, -1, 2**63 - 1)).digest()
    )


@pytest.mark.parametrize(
    "bad",
    [
        np.array([1.0, 2.0]),
        np.zeros((2, 2), np.int64),
        np.array(5),
        np.array([2**63], dtype=np.uint64),
        np.array(["2024-01-01"]),
    ],
)
def test_timestamps_refusals(bad: np.ndarray) -> None:
    with pytest.raises(InvalidParameterError):
        timestamps_hash(bad)
