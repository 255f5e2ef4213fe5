"""``data_hashes`` hashes each distinct large array of a batch once: copies of an array
already hashed (equal dtype, shape and bytes) reuse its digest, which must be exactly
:func:`data_hash`'s for every array, whatever looks alike but is not the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

from infrastore_sqlite.core import hashing
from infrastore_sqlite.core.hashing import data_hash, data_hashes

N = 9000  # 72 KB of f64: past the batch's small-array path


def _batch() -> list[np.ndarray]:
    rng = np.random.default_rng(43)
    a = rng.standard_normal(N)
    nan_a = a.copy()
    nan_a[5] = np.nan
    other_nan = nan_a.copy()
    # Another NaN payload: different bytes, the same digest (NaN is canonical).
    other_nan.view(np.uint64)[5] = 0x7FF8_0000_0000_0BAD
    return [
        a,
        a.copy(),  # a copy: reuses a's digest
        a,  # the same object again
        a.reshape(2, N // 2),  # the same bytes, another shape
        a.view(np.int64),  # the same bytes, another dtype
        a.astype(">f8"),  # the same values, big-endian bytes
        a[::-1],  # not C-contiguous (hashed as it is)
        np.asfortranarray(a.reshape(90, 100)),  # Fortran order, contiguous its own way
        nan_a,
        other_nan,
        a.astype(np.float32),  # 36 KB: the small path, beside the large ones
        rng.standard_normal(N),  # unrelated
        a.copy(),
    ]


def test_every_digest_is_data_hash() -> None:
    batch = _batch()
    assert data_hashes(batch) == [data_hash(x) for x in batch]
    assert data_hash(batch[8]) == data_hash(batch[9])  # canonical NaN, other bytes


def test_copies_are_hashed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[np.ndarray] = []
    real = hashing.data_hash

    def counting(arr: np.ndarray) -> bytes:
        calls.append(arr)
        return real(arr)

    monkeypatch.setattr(hashing, "data_hash", counting)
    rng = np.random.default_rng(7)
    profiles = [rng.standard_normal(N) for _ in range(3)]
    # Four owners per profile, each with its own copy (as series objects hold them).
    batch = [p.copy() for p in profiles for _ in range(4)]
    got = data_hashes(batch)
    assert len(calls) == 3
    assert got == [real(x) for x in batch]


def test_a_key_collision_is_checked_byte_for_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two different arrays under one XXH3 key (a crafted collision, simulated by a key
    function that ignores the bytes): each still gets its own SHA-256."""
    monkeypatch.setattr(hashing.xxhash, "xxh3_128_digest", lambda _raw: b"\0" * 16)
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal(N), rng.standard_normal(N)
    assert data_hashes([a, b, a.copy()]) == [data_hash(a), data_hash(b), data_hash(a)]
