"""The slot checksums a segment keeps beside each pool (``sums/<pool>``), by format.

Segments this release writes carry ``SUMS_FORMAT_ATTR`` = 2 and keep
:func:`~infrastore_sqlite.store.arrays.slot_hashes` (XXH3-128 seeded with the slot) plus
the array key's seeds; segments written before keep :func:`slot_sums` and are read as
they always were (``tests/data/damage_world`` is such a store, kept byte for byte).
"""

from __future__ import annotations

import hashlib
import shutil
from datetime import UTC, datetime
from pathlib import Path

import h5py
import numpy as np
import pytest
import xxhash

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.errors import StorageError
from infrastore_sqlite.store.arrays import (
    KEYS_GROUP,
    SUMS_FORMAT,
    SUMS_FORMAT_ATTR,
    ArrayFile,
    key_seeds,
    slot_hashes,
    slot_sums,
)

KEPT_WORLD = Path(__file__).resolve().parents[1] / "data" / "damage_world"
POOL = "f64__6"


def _keys(n: int) -> list[tuple[bytes, str]]:
    return [(hashlib.sha256(bytes([k])).digest(), "data") for k in range(n)]


def _written(path: Path, n: int = 5) -> tuple[list[np.ndarray], list[tuple[bytes, str]]]:
    """A bound file of ``n`` arrays in slots 0..n-1 of pool ``f64__6``, closed."""
    arrays = [np.arange(6.0) * (k + 1) + k for k in range(n)]
    keys = _keys(n)
    f = ArrayFile(path, "x", bound=True)
    f.write(POOL, "f64", [6], 0, arrays, keys)
    f.finish()
    return arrays, keys


def _bad(path: Path, slots: list[int], keys: list[tuple[bytes, str]]) -> list[int] | None:
    f = ArrayFile(path, "r")
    try:
        return f.read_checked(POOL, slots, keys)[1]
    finally:
        f.close()


def test_slot_hashes_are_xxh3_128_of_the_row_seeded_with_its_slot() -> None:
    rows = np.random.default_rng(3).random((4, 10))
    got = slot_hashes(rows, np.arange(7, 11))
    for k in range(4):
        digest = xxhash.xxh3_128_digest(rows[k].tobytes(), 7 + k)
        assert got[k].tolist() == np.frombuffer(digest, dtype="<u8").tolist()
    assert got.dtype == np.uint64 and got.shape == (4, 2) and got.flags.writeable


def test_slot_hashes_see_zeros_other_slots_and_every_single_bit() -> None:
    rows = np.random.default_rng(5).random((3, 16))
    sums = slot_hashes(rows, np.arange(3))
    zeros = slot_hashes(np.zeros_like(rows), np.arange(3))
    assert (zeros != 0).all()  # a zeroed row never matches a zeroed checksum
    assert (zeros != sums).any(axis=1).all()
    assert (slot_hashes(rows, np.arange(1, 4)) != sums).any(axis=1).all()  # another slot's
    raw = rows.view(np.uint8)
    for bit in range(raw.shape[1] * 8):  # each bit of row 0 flipped alone is seen
        flipped = raw.copy()
        flipped[0, bit // 8] ^= 1 << (bit % 8)
        differ = (slot_hashes(flipped.view(rows.dtype), np.arange(3)) != sums).any(axis=1)
        assert differ.tolist() == [True, False, False]
    words = rows.copy().view("<u4")
    words[0, 2] ^= 1 << 31
    words[0, 5] ^= 1 << 31  # the same bit in two words
    assert (slot_hashes(words.view(rows.dtype), np.arange(3)) != sums).any(axis=1)[0]


def test_slot_hashes_of_odd_rows_empty_rows_and_big_endian_pools() -> None:
    odd = np.arange(21, dtype=np.uint8).reshape(3, 7)  # not a whole number of words
    got = slot_hashes(odd, np.arange(3))
    want = [np.frombuffer(xxhash.xxh3_128_digest(odd[k].tobytes(), k), "<u8") for k in range(3)]
    np.testing.assert_array_equal(got, np.stack(want))
    empty = np.zeros((2, 0), dtype=np.float64)
    assert (slot_hashes(empty, np.arange(2))[0] != slot_hashes(empty, np.arange(2))[1]).all()
    little = np.arange(8.0).reshape(2, 4)
    big = little.astype(">f8")  # hashed as stored: the bytes differ, so do the checksums
    assert (slot_hashes(little, np.arange(2)) != slot_hashes(big, np.arange(2))).all()


def test_a_new_file_records_its_format_and_its_checksums(tmp_path: Path) -> None:
    arrays, keys = _written(tmp_path / "a.h5")
    with h5py.File(tmp_path / "a.h5", "r") as h5:
        assert h5.attrs[SUMS_FORMAT_ATTR] == SUMS_FORMAT == 2
        stored = h5[f"sums/{POOL}"][:5]
    want = slot_hashes(np.stack(arrays), np.arange(5)) + key_seeds(keys)
    np.testing.assert_array_equal(stored, want)
    assert _bad(tmp_path / "a.h5", [4, 0, 2], [keys[4], keys[0], keys[2]]) == []


def test_a_row_from_another_slot_never_passes(tmp_path: Path) -> None:
    """Slot 0's bytes and checksum copied over slot 1 (a catalog's slot pointing at a
    copy): the slot seed differs, so the read of slot 1 refuses it, even with its key."""
    path = tmp_path / "a.h5"
    _arrays, keys = _written(path)
    with h5py.File(path, "r+") as h5:
        h5[f"pools/{POOL}"][1] = h5[f"pools/{POOL}"][0]
        h5[f"sums/{POOL}"][1] = h5[f"sums/{POOL}"][0]
    assert _bad(path, [1], [keys[0]]) == [1]
    assert _bad(path, [1], [keys[1]]) == [1]
    assert _bad(path, [0, 2], [keys[0], keys[2]]) == []


def test_another_arrays_key_never_passes(tmp_path: Path) -> None:
    path = tmp_path / "a.h5"
    _arrays, keys = _written(path)
    assert _bad(path, [1, 3], [keys[3], keys[1]]) == [1, 3]  # swapped keys
    assert _bad(path, [2], [_keys(9)[8]]) == [2]  # a key the file never held


def test_a_zeroed_row_with_a_zeroed_checksum_never_passes(tmp_path: Path) -> None:
    path = tmp_path / "a.h5"
    _arrays, keys = _written(path)
    with h5py.File(path, "r+") as h5:
        h5[f"pools/{POOL}"][3] = 0
        h5[f"sums/{POOL}"][3] = 0
    assert _bad(path, [2, 3, 4], keys[2:5]) == [3]


def test_an_unknown_format_is_not_trusted_and_not_written_to(tmp_path: Path) -> None:
    """A later release's format (or a damaged attribute): reads are left to the content
    hash (no checksum verdict), and a write refuses, naming the file and the attribute."""
    path = tmp_path / "a.h5"
    arrays, keys = _written(path)
    with h5py.File(path, "r+") as h5:
        h5.attrs[SUMS_FORMAT_ATTR] = 99
    f = ArrayFile(path, "r")
    got, bad = f.read_checked(POOL, [0, 1], keys[:2])
    f.close()
    assert bad is None and [a.tolist() for a in got] == [a.tolist() for a in arrays[:2]]
    with h5py.File(path, "r") as h5:
        before = {g: h5[f"{g}/{POOL}"][...] for g in ("pools", "sums")}
    g = ArrayFile(path, "r+")
    g.write(POOL, "f64", [6], 5, [arrays[0]], [keys[0]])
    with pytest.raises(StorageError, match=rf"a\.h5.*{SUMS_FORMAT_ATTR}.*run verify"):
        g.sync()
    g.close()
    with h5py.File(path, "r") as h5:  # refused before a byte was written
        for group, rows in before.items():
            assert np.array_equal(h5[f"{group}/{POOL}"][...], rows)


def _old_format(path: Path) -> None:
    """Rewrite a file as main's code wrote it: no format attribute, ``slot_sums``."""
    with h5py.File(path, "r+") as h5:
        del h5.attrs[SUMS_FORMAT_ATTR]
        for pool in h5["pools"]:
            rows = h5[f"pools/{pool}"][...]
            held = h5[f"{KEYS_GROUP}/{pool}"][...]
            seeds = np.ascontiguousarray(held[:, :16]).view("<u8").astype(np.uint64)
            h5[f"sums/{pool}"][...] = slot_sums(rows, np.arange(len(rows))) + seeds


def test_an_old_format_file_verifies_and_grows_as_before(tmp_path: Path) -> None:
    path = tmp_path / "a.h5"
    arrays, keys = _written(path)
    _old_format(path)
    assert _bad(path, [0, 1, 2, 3, 4], keys) == []
    assert _bad(path, [1], [keys[2]]) == [1]  # bound to its key as before
    # Its next write (a repair adding to it) keeps the file's own kind of checksum.
    g = ArrayFile(path, "r+")
    more = _keys(7)[5:]
    g.write(POOL, "f64", [6], 5, [arrays[0] + 100, arrays[1] + 100], more)
    g.finish()
    with h5py.File(path, "r") as h5:
        assert SUMS_FORMAT_ATTR not in h5.attrs
        stored = h5[f"sums/{POOL}"][5:7]
    block = np.stack([arrays[0] + 100, arrays[1] + 100])
    np.testing.assert_array_equal(stored, slot_sums(block, np.arange(5, 7)) + key_seeds(more))
    assert _bad(path, [0, 5, 6], [keys[0], *more]) == []
    with h5py.File(path, "r+") as h5:
        h5[f"pools/{POOL}"][6, 2] += 1.0
    assert _bad(path, [5, 6], more) == [6]


def test_the_kept_stores_segments_are_old_format_and_verify(tmp_path: Path) -> None:
    """``tests/data/damage_world`` as main's code wrote it: every slot of every pool
    passes its old checksums, and one changed value is caught."""
    store = tmp_path / "world"
    shutil.copytree(KEPT_WORLD, store)
    segments = sorted((store / "segments").glob("*.h5"))
    assert segments
    checked = 0
    for seg in segments:
        with h5py.File(seg, "r") as h5:
            assert SUMS_FORMAT_ATTR not in h5.attrs
            held = {p: h5[f"{KEYS_GROUP}/{p}"][...] for p in h5["pools"]}
        f = ArrayFile(seg, "r")
        for pool, rows in held.items():
            keys = [(bytes(r[:32]), "data" if r[32] == 0 else "timestamps") for r in rows]
            _got, bad = f.read_checked(pool, list(range(len(rows))), keys)
            assert bad == []
            checked += len(rows)
        f.close()
    assert checked >= len(segments)
    seg = segments[0]
    with h5py.File(seg, "r+") as h5:
        pool = next(iter(h5["pools"]))
        h5[f"pools/{pool}"][0] = h5[f"pools/{pool}"][0] + 1
        row = h5[f"{KEYS_GROUP}/{pool}"][0]
    f = ArrayFile(seg, "r")
    kind = "data" if row[32] == 0 else "timestamps"
    assert f.read_checked(pool, [0], [(bytes(row[:32]), kind)])[1] == [0]
    f.close()


def test_a_new_stores_segments_are_new_format(tmp_path: Path) -> None:
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    with Store.create(tmp_path / "s") as s:
        ids = [
            s.add_time_series(
                10 + k, "Gen", "Component", SingleTimeSeries(t0, "PT1H", np.arange(24.0) + k, "x")
            )
            for k in range(3)
        ]
    segments = list((tmp_path / "s" / "segments").glob("*.h5"))
    assert segments
    for seg in segments:
        with h5py.File(seg, "r") as h5:
            assert h5.attrs[SUMS_FORMAT_ATTR] == SUMS_FORMAT
    with Store.open(tmp_path / "s", read_only=True) as s:
        assert [float(s.read_by_id(i).data[0]) for i in ids] == [0.0, 1.0, 2.0]
        assert s.diagnose().ok
