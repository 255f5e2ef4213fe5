"""Content hashes: arrays, feature maps and timestamp vectors.

All three are SHA-256 digests over a small self-describing header followed by the values
in a fixed little-endian layout, so equal content hashes equally whatever numpy byte order,
memory order or NaN payload it came in. The recipes are the reference store's (its catalog
and its SQLite export carry these digests), see ``reference-model.md`` §3.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy
import orjson
import xxhash

from ..errors import InvalidParameterError, ParameterTypeError
from .elements import NUMPY_DTYPES, ElementType, dtype_name, shrink

__all__ = [
    "RESERVED_FEATURE_NAMES",
    "composite_data_hash",
    "data_hash",
    "data_hash_hex",
    "data_hashes",
    "features_hash",
    "features_json",
    "timestamps_hash",
    "validate_features",
]

_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")

# Canonical quiet NaN of each float dtype (built from its bits, not from numpy.nan, so
# the pattern does not depend on the platform); every NaN hashes as this one.
_CANONICAL_NAN = {
    "f64": numpy.array([0x7FF8000000000000], dtype="<u8").view("<f8")[0],
    "f32": numpy.array([0x7FC00000], dtype="<u4").view("<f4")[0],
}
_CHUNK_BYTES = 1 << 20
_F64_NAN_BITS = b"\x00\x00\x00\x00\x00\x00\xf8\x7f"

RESERVED_FEATURE_NAMES: frozenset[str] = frozenset(
    {
        "application_data",
        "array_shape",
        "association_id",
        "component_field",
        "count",
        "data",
        "data_hash",
        "dtype",
        "element_shape",
        "element_type",
        "ext",
        "features",
        "horizon",
        "id",
        "initial_timestamp",
        "interval",
        "length",
        "name",
        "owner_category",
        "owner_id",
        "owner_type",
        "percentiles",
        "quantity_kind",
        "resolution",
        "scenario_count",
        "time_reference",
        "time_series_type",
        "timestamps",
        "timestamps_uri",
        "unit_system",
        "units",
        "uri",
    }
)
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


# ----------------------------------------------------------------------------- arrays


def _hash_array(h: Any, arr: numpy.ndarray) -> None:
    name = dtype_name(arr.dtype)
    h.update(name.encode("ascii") + b"\0")
    h.update(_U64.pack(arr.ndim))
    for d in arr.shape:
        h.update(_U64.pack(d))
    target = NUMPY_DTYPES[name]
    if arr.dtype != target or not arr.flags.c_contiguous:
        # big-endian or strided input: one normalized copy (the caller's array is untouched)
        arr = numpy.ascontiguousarray(arr, dtype=target)
    flat = arr.reshape(-1)  # a view: arr is C-contiguous here
    if name not in _CANONICAL_NAN:
        h.update(memoryview(flat).cast("B"))
        return
    # Floats go in chunks: a min reduction propagates NaN and allocates nothing, so a chunk
    # without NaN costs one fast pass and is hashed in place; only a chunk that holds NaN
    # is copied (bitwise select) with every NaN replaced by the canonical one. Chunking
    # keeps the copy small and cache-resident and never touches the caller's array.
    canonical = _CANONICAL_NAN[name]
    step = _CHUNK_BYTES // flat.itemsize
    with numpy.errstate(invalid="ignore"):
        for start in range(0, flat.shape[0], step):
            chunk = flat[start : start + step]
            if numpy.isnan(chunk.min()):
                chunk = numpy.where(numpy.isnan(chunk), canonical, chunk)
            h.update(memoryview(chunk).cast("B"))


def data_hash(arr: numpy.ndarray) -> bytes:
    """Return the SHA-256 content hash of an array.

    Hashed: the dtype name and a NUL, the rank and every dimension as u64 LE, then the
    elements row-major little-endian, with every f64 / f32 NaN replaced by the canonical
    quiet NaN. Nothing else is normalized (``-0.0`` and ``+0.0`` differ).

    Parameters
    ----------
    arr
        Any array of a supported dtype, any byte order or memory layout. Not modified.

    Returns
    -------
    bytes
        The 32-byte digest.

    Raises
    ------
    InvalidParameterError
        The dtype is not supported.
    """
    if not isinstance(arr, numpy.ndarray):
        arr = numpy.asarray(arr)
    h = hashlib.sha256()
    _hash_array(h, arr)
    return h.digest()


# Arrays up to this size are hashed in stacked blocks by data_hashes: one numpy pass per
# block instead of several calls per array, which is what many small series cost.
_BATCH_ARRAY_BYTES = 64 * 1024
_BATCH_BLOCK_BYTES = 4 << 20


def _large_hash(arr: numpy.ndarray, seen: dict[bytes, list[tuple[numpy.ndarray, bytes]]]) -> bytes:
    """:func:`data_hash` of a large array, reused from an earlier array of the batch with
    the same dtype, shape and bytes.

    Models attach one profile to many owners, each series holding its own copy: a batch
    of 2,000 year-long series over 500 profiles hashed 2,000 arrays with SHA-256 (~40 µs
    each at 8,760 f64). Each is now keyed by its XXH3-128 (~1.5 µs), and an array whose key
    was seen is compared byte for byte (~4 µs) with the one hashed: equal dtype, shape and
    bytes give the same digest by definition, so the reuse is exact (an XXH3 collision, by
    chance or crafted, only costs a SHA-256). Arrays without a plain buffer (not
    C-contiguous) are hashed as they are.
    """
    try:
        key = xxhash.xxh3_128_digest(memoryview(arr).cast("B"))
    except (TypeError, ValueError, BufferError):  # not contiguous, or no buffer format
        return data_hash(arr)
    held = seen.setdefault(key, [])
    if held:
        raw = arr.tobytes()
        for other, digest in held:
            if other.dtype == arr.dtype and other.shape == arr.shape and other.tobytes() == raw:
                return digest
    digest = data_hash(arr)
    held.append((arr, digest))
    return digest


def data_hashes(arrays: Sequence[numpy.ndarray]) -> list[bytes]:
    """Return :func:`data_hash` of each array, faster for many small ones.

    Arrays of one dtype and shape share their header (hashed once, then copied) and are
    checked for NaN in stacked blocks, so a batch of tiny series costs about one SHA-256
    update each. Large arrays go through :func:`data_hash` one by one, once per distinct
    content (a copy of an array already hashed in the batch reuses its digest).

    Parameters
    ----------
    arrays
        numpy arrays of supported dtypes, any byte order or layout. Not modified.

    Returns
    -------
    list of bytes
        The 32-byte digests, in input order.

    Raises
    ------
    InvalidParameterError
        A dtype is not supported.
    """
    out: list[bytes | None] = [None] * len(arrays)
    groups: dict[tuple[Any, tuple[int, ...]], list[int]] = {}
    seen: dict[bytes, list[tuple[numpy.ndarray, bytes]]] = {}
    # A batch's arrays mostly share one dtype object and shape: then the group is the
    # last one's, without hashing a dtype per array (a third of this loop's cost).
    last_dtype: Any = None
    last_shape: Any = None
    members: list[int] = []  # (the last group's; none before the first array)
    for i, arr in enumerate(arrays):
        if not isinstance(arr, numpy.ndarray):
            out[i] = data_hash(arr)
            continue
        dtype, shape = arr.dtype, arr.shape
        if dtype is last_dtype and shape == last_shape:
            members.append(i)
        elif arr.nbytes > _BATCH_ARRAY_BYTES:
            out[i] = _large_hash(arr, seen)
        else:
            members = groups.setdefault((dtype, shape), [])
            members.append(i)
            last_dtype, last_shape = dtype, shape
    for (dtype, shape), members in groups.items():
        name = dtype_name(dtype)
        head = hashlib.sha256()
        head.update(name.encode("ascii") + b"\0")
        head.update(_U64.pack(len(shape)))
        for d in shape:
            head.update(_U64.pack(d))
        target = NUMPY_DTYPES[name]
        canonical = _CANONICAL_NAN.get(name)
        row_items = int(numpy.prod(shape, dtype=numpy.int64))
        row_bytes = max(1, row_items * target.itemsize)
        step = max(1, _BATCH_BLOCK_BYTES // row_bytes)
        for start in range(0, len(members), step):
            block_ids = members[start : start + step]
            # The stacked copy is in the canonical dtype (little-endian, C order) whatever
            # the inputs were, so each row is the bytes data_hash would feed.
            members_of = [arrays[i] for i in block_ids]
            if shape:
                # Joined along the first axis (C order: row r is array r's bytes), a
                # fifth of what stacking costs per array, cast in the same pass.
                block = numpy.concatenate(members_of, dtype=target)
            else:
                block = numpy.stack(members_of).astype(target, copy=False)
            rows = block.reshape(len(block_ids), row_items)
            if canonical is not None and row_items:
                with numpy.errstate(invalid="ignore"):
                    nan_rows = numpy.flatnonzero(numpy.isnan(rows.min(axis=1)))
                for r in nan_rows:
                    rows[r] = numpy.where(numpy.isnan(rows[r]), canonical, rows[r])
            for r, i in enumerate(block_ids):
                h = head.copy()
                h.update(rows[r])
                out[i] = h.digest()
    return out  # type: ignore[return-value]


def data_hash_hex(arr: numpy.ndarray) -> str:
    """Return :func:`data_hash` as 64 lowercase hex characters.

    Parameters
    ----------
    arr
        Any array of a supported dtype.

    Returns
    -------
    str
        The hex digest.
    """
    return data_hash(arr).hex()


def composite_data_hash(et: ElementType, arr: numpy.ndarray) -> bytes:
    """Return the content hash of an array as the interchange keys it.

    Parameters
    ----------
    et
        The array's element type.
    arr
        The stored array.

    Returns
    -------
    bytes
        ``data_hash(shrink(et, arr))`` for the ragged kinds, so every padding of the same
        curves shares one hash; ``data_hash(arr)`` for every other kind.
    """
    if et.is_ragged:
        return data_hash(shrink(et, arr))
    return data_hash(arr)


# --------------------------------------------------------------------------- features


def _feature_value(key: str, value: Any) -> int | float | bool | str:
    # bool before int: bool is an int subclass, and True must stay distinct from 1.
    if isinstance(value, (bool, numpy.bool_)):
        return bool(value)
    if isinstance(value, (int, numpy.integer)):
        v = int(value)
        if not _I64_MIN <= v <= _I64_MAX:
            raise InvalidParameterError(
                f'feature "{key}" is {v}, outside the 64-bit signed integer range.',
                hint="Store it as a float or a string.",
            )
        return v
    if isinstance(value, (float, numpy.floating)):
        if isinstance(value, numpy.floating) and value.dtype.itemsize > 8:
            raise InvalidParameterError(
                f'feature "{key}" is a {value.dtype} value, wider than a 64-bit float.',
                hint="Convert it with float().",
            )
        return float(value)
    if isinstance(value, str):
        return str(value)
    raise InvalidParameterError(
        f'feature "{key}" has a value of type {type(value).__name__}.',
        hint="Feature values must be int, float, bool, or str.",
    )


def _feature_key(key: Any) -> str:
    if not isinstance(key, str):
        raise InvalidParameterError(
            f"feature name {key!r} is a {type(key).__name__}, not a str.",
            hint="Use strings as feature names.",
        )
    key = str(key)
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidParameterError(
            f"feature name {key!r} is not valid Unicode (it holds a lone surrogate).",
            hint="Use a name that encodes as UTF-8.",
        ) from exc
    return key


def validate_features(features: Mapping[str, Any] | None) -> dict[str, int | float | bool | str]:
    """Check a feature map and return it as a plain dict of plain Python values.

    Parameters
    ----------
    features
        ``None`` (no features) or a mapping from name to int, float, bool or str. numpy
        scalars are accepted and converted (integer → int, floating → float,
        bool → bool); str / int / float subclasses become the base type.

    Returns
    -------
    dict
        A new dict.

    Raises
    ------
    InvalidParameterError
        Not a mapping; a name that is not a str, not UTF-8-encodable, or reserved
        (:data:`RESERVED_FEATURE_NAMES`); a value that is None or of another type, a NaN
        or ``-0.0`` float (the catalog could not give it back faithfully), an int outside
        the i64 range, or a str that is not UTF-8-encodable. The message names the feature.
    """
    if features is None:
        return {}
    if not isinstance(features, Mapping):
        raise ParameterTypeError(
            f"features must be a mapping (a dict), not {type(features).__name__}.",
            hint="Pass a dict from feature name to int, float, bool or str.",
        )
    out: dict[str, int | float | bool | str] = {}
    for raw_key, raw_value in features.items():
        key = _feature_key(raw_key)
        if key in RESERVED_FEATURE_NAMES:
            raise InvalidParameterError(
                f'feature name "{key}" is reserved: it names a field of a time series or of '
                "the key that addresses one.",
                hint="Rename the feature; reserved names are "
                + ", ".join(sorted(RESERVED_FEATURE_NAMES))
                + ".",
            )
        if raw_value is None:
            raise InvalidParameterError(
                f'feature "{key}" is None.',
                hint="Drop the feature or give it an int, float, bool or str value.",
            )
        value = _feature_value(key, raw_value)
        if isinstance(value, float):
            if math.isnan(value):
                raise InvalidParameterError(
                    f'feature "{key}" is NaN, which the catalog cannot store faithfully.',
                    hint="Drop the feature or use a string such as 'NaN'.",
                )
            if value == 0.0 and math.copysign(1.0, value) < 0:
                raise InvalidParameterError(
                    f'feature "{key}" is negative zero, which would read back as 0.0.',
                    hint="Use 0.0.",
                )
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidParameterError(
                    f'feature "{key}" holds a string that is not valid Unicode (a lone surrogate).',
                    hint="Use text that encodes as UTF-8.",
                ) from exc
        out[key] = value
    return out


def features_hash(features: Mapping[str, int | float | bool | str]) -> bytes:
    """Return the SHA-256 hash of a feature map.

    Hashed: ``b"features\\0"``, the entry count as u64 LE, then per entry in ascending key
    order: the UTF-8 key length (u64 LE) and bytes, then ``b"i"`` + i64 LE, ``b"f"`` + f64
    bits LE (NaN canonical), ``b"b"`` + one byte 0/1, or ``b"s"`` + u64 LE length + UTF-8.

    Parameters
    ----------
    features
        Name → int / float / bool / str (numpy scalars are accepted as their Python type).
        Reserved names are not checked here; use :func:`validate_features` on input.

    Returns
    -------
    bytes
        The 32-byte digest. ``{}`` has a hash too.

    Raises
    ------
    InvalidParameterError
        A name is not a str, or a value is of another type or an int outside i64.
    """
    items = sorted((_feature_key(k), v) for k, v in features.items())
    h = hashlib.sha256()
    h.update(b"features\0")
    h.update(_U64.pack(len(items)))
    for key, raw in items:
        kb = key.encode("utf-8")
        h.update(_U64.pack(len(kb)))
        h.update(kb)
        value = _feature_value(key, raw)
        if isinstance(value, bool):
            h.update(b"b\x01" if value else b"b\x00")
        elif isinstance(value, int):
            h.update(b"i" + _I64.pack(value))
        elif isinstance(value, float):
            h.update(b"f" + (_F64_NAN_BITS if math.isnan(value) else _F64.pack(value)))
        else:
            vb = value.encode("utf-8")
            h.update(b"s" + _U64.pack(len(vb)))
            h.update(vb)
    return h.digest()


def features_json(features: Mapping[str, Any]) -> str:
    """Return the interchange JSON text of a feature map.

    Compact, keys sorted by code point, non-ASCII kept raw, floats in shortest round-trip
    form: exactly ``orjson.dumps(features, option=orjson.OPT_SORT_KEYS)``.

    Parameters
    ----------
    features
        A validated feature map.

    Returns
    -------
    str
        The JSON text (``"{}"`` when empty).
    """
    if not isinstance(features, dict):
        features = dict(features)
    return orjson.dumps(features, option=orjson.OPT_SORT_KEYS).decode()


# ------------------------------------------------------------------------- timestamps


def timestamps_hash(ms: numpy.ndarray) -> bytes:
    """Return the SHA-256 hash of a timestamp vector.

    Hashed: ``b"timestamps\\0"``, the count as u64 LE, then each instant as i64 LE Unix
    epoch milliseconds.

    Parameters
    ----------
    ms
        A 1-d integer array (or sequence) of epoch milliseconds.

    Returns
    -------
    bytes
        The 32-byte digest.

    Raises
    ------
    InvalidParameterError
        Not 1-d, not integers, or a value outside the i64 range.
    """
    arr = numpy.asarray(ms)
    if arr.ndim != 1:
        raise InvalidParameterError(
            f"timestamps must be a 1-d vector of epoch milliseconds, got shape {list(arr.shape)}."
        )
    if arr.size == 0:
        arr = numpy.zeros(0, dtype="<i8")
    elif arr.dtype.kind not in "iu":
        raise InvalidParameterError(
            f"timestamps must be integer epoch milliseconds, got dtype {arr.dtype}.",
            hint="Convert instants to int64 milliseconds since 1970-01-01T00:00:00Z.",
        )
    elif arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and int(arr.max()) > _I64_MAX:
        raise InvalidParameterError(
            "a timestamp is beyond the 64-bit signed millisecond range.",
        )
    le = numpy.ascontiguousarray(arr, dtype="<i8")
    h = hashlib.sha256()
    h.update(b"timestamps\0")
    h.update(_U64.pack(le.shape[0]))
    h.update(memoryview(le).cast("B"))
    return h.digest()
