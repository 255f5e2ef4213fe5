"""Slots of a read-only file read straight from it (``store/direct.py``): the same bytes as
HDF5's read for every dtype and slot list, the pools it leaves to HDF5, and the damage
it never returns (a short file, a flipped byte, a chunk never written)."""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import pytest

from infrastore_sqlite.core.elements import NUMPY_DTYPES
from infrastore_sqlite.store import arrays as arrays_module
from infrastore_sqlite.store.arrays import ArrayFile, pool_name
from infrastore_sqlite.store.direct import chunk_map


@pytest.fixture
def hdf5_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The datasets read through HDF5's read call (``arrays._rows``) from now on: a test
    of the direct path sees that it was taken, not that HDF5 quietly stood in."""
    seen: list[str] = []
    real = arrays_module._rows

    def recording(dsid, *args, **kwargs):
        seen.append(h5py.h5i.get_name(dsid).decode())
        return real(dsid, *args, **kwargs)

    monkeypatch.setattr(arrays_module, "_rows", recording)
    return seen


def _random_arrays(dtype: str, shape: tuple[int, ...], n: int) -> list[np.ndarray]:
    """``n`` arrays of random bytes (NaN payloads, -0.0 and all), as the store keeps them."""
    rng = np.random.default_rng(11)
    item = NUMPY_DTYPES[dtype]
    raw = rng.integers(0, 256, size=(n, int(np.prod(shape, dtype=np.int64)) * item.itemsize))
    arrays = [np.ascontiguousarray(r.astype(np.uint8)).view(item).reshape(shape) for r in raw]
    if dtype == "bool":
        arrays = [a.view(np.uint8) % 2 == 1 for a in arrays]
    return arrays


@pytest.mark.parametrize("dtype", sorted(NUMPY_DTYPES))
@pytest.mark.parametrize("shape", [(), (5, 2), (3000,)])
def test_every_dtype_reads_the_same_bytes_as_hdf5(
    tmp_path: Path, hdf5_reads: list[str], dtype: str, shape
) -> None:
    name = pool_name(dtype, list(shape))
    arrays = _random_arrays(dtype, shape, 700)
    f = ArrayFile(tmp_path / "a.h5", "x", compression="none")
    f.write(name, dtype, list(shape), 0, arrays[:400])
    f.write(name, dtype, list(shape), 400, arrays[400:])  # a second write: more chunks
    f.close()
    rng = np.random.default_rng(3)
    cases = [
        list(range(700)),
        rng.permutation(700)[:150].tolist(),
        [699, 0, 350, 351, 352, 5, 5],
    ]
    direct = ArrayFile(tmp_path / "a.h5", "r")
    through_hdf5 = ArrayFile(tmp_path / "a.h5", "r")
    through_hdf5._maps[name] = None  # as for a pool direct.py leaves to HDF5
    for slots in cases:
        got = direct.read(name, slots)
        assert f"/pools/{name}" not in hdf5_reads  # read straight from the file
        want = through_hdf5.read(name, slots)
        hdf5_reads.clear()
        assert [g.dtype for g in got] == [NUMPY_DTYPES[dtype]] * len(slots)
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
        assert [g.tobytes() for g in got] == [arrays[s].tobytes() for s in slots]
        checked, bad = direct.read_checked(name, slots)
        assert bad == [] and [c.tobytes() for c in checked] == [g.tobytes() for g in got]
    assert direct._maps[name] is not None  # the reads took the direct path
    direct.close()
    through_hdf5.close()
    writable = ArrayFile(tmp_path / "a.h5", "r+")  # may change: always read through HDF5
    assert writable.read(name, [3])[0].tobytes() == arrays[3].tobytes()
    assert name not in writable._maps
    writable.close()


def test_pools_whose_slots_are_not_plain_bytes_are_left_to_hdf5(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "p.h5", "w") as h5:
        h5.create_dataset("plain", data=np.zeros((10, 4)), chunks=(3, 4))
        h5.create_dataset("whole", data=np.zeros((10, 4)))  # contiguous
        h5.create_dataset("gzip", data=np.zeros((10, 4)), chunks=(3, 4), compression="gzip")
        h5.create_dataset("big_endian", data=np.zeros((10, 4), dtype=">f8"), chunks=(3, 4))
        h5.create_dataset("row_split", data=np.zeros((10, 5, 3)), chunks=(1, 2, 3))
        h5.create_dataset("rows_and_split", data=np.zeros((10, 4)), chunks=(2, 2))
        h5.create_dataset("split_inside", data=np.zeros((10, 4, 6)), chunks=(1, 4, 3))
        h5.create_dataset("strings", data=np.array([b"ab"] * 10), chunks=(3,))
        compact = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        compact.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((2, 2))
        h5py.h5d.create(h5.id, b"compact", h5py.h5t.NATIVE_DOUBLE, space, dcpl=compact)
    with h5py.File(tmp_path / "p.h5", "r") as h5:
        plain = chunk_map(h5["plain"].id)
        whole = chunk_map(h5["whole"].id)
        assert plain is not None and (plain.crow, plain.row_bytes, plain.slots) == (3, 32, 10)
        assert whole is not None and (whole.crow, whole.addr.size) == (10, 1)
        split = chunk_map(h5["row_split"].id)  # 5 rows of 3 cut in chunks of 2: 3 parts
        assert split is not None and (split.crow, split.parts, split.part_bytes) == (1, 3, 48)
        for name in ("gzip", "big_endian", "rows_and_split", "split_inside", "strings", "compact"):
            assert chunk_map(h5[name].id) is None, name


def test_a_flipped_byte_read_straight_is_caught_by_the_checksums(tmp_path: Path) -> None:
    arrays = [np.arange(50.0) + k for k in range(40)]
    f = ArrayFile(tmp_path / "a.h5", "x", compression="none")
    f.write("f64__50", "f64", [50], 0, arrays)
    f.close()
    with h5py.File(tmp_path / "a.h5", "r") as h5:
        m = chunk_map(h5["pools/f64__50"].id)
    assert m is not None
    at = int(m.addr[17 // m.crow, 0]) + (17 % m.crow) * m.row_bytes + 100
    with open(tmp_path / "a.h5", "r+b") as fh:
        fh.seek(at)
        byte = fh.read(1)[0]
        fh.seek(at)
        fh.write(bytes([byte ^ 0x10]))
    g = ArrayFile(tmp_path / "a.h5", "r")
    got, bad = g.read_checked("f64__50", [3, 17, 30])
    assert bad == [17]
    assert g._maps["f64__50"] is not None  # read straight, and still caught
    assert got[0].tobytes() == arrays[3].tobytes() and got[2].tobytes() == arrays[30].tobytes()
    g.close()


def test_a_file_cut_short_while_open_is_never_read_short(tmp_path: Path) -> None:
    # HDF5 refuses to open a file shorter than it records; one cut while open (another
    # process, a full disk) reads short straight from the file: HDF5 then reads it, as it
    # did before, and the checksums name the slot.
    arrays = [np.arange(3000.0) + k for k in range(60)]
    f = ArrayFile(tmp_path / "a.h5", "x", compression="none")
    f.write("f64__3000", "f64", [3000], 0, arrays)
    f.close()
    g = ArrayFile(tmp_path / "a.h5", "r")
    got, bad = g.read_checked("f64__3000", [0])  # the map is made, the checksums held
    assert bad == [] and got[0].tobytes() == arrays[0].tobytes()
    m = g._maps["f64__3000"]
    assert m is not None
    last = int(m.addr.max())  # the chunk that lies furthest into the file
    slot = int(np.argmax(m.addr)) * m.crow
    os.truncate(tmp_path / "a.h5", last + m.row_bytes // 2)  # cut inside its first slot
    got, bad = g.read_checked("f64__3000", [0, slot])
    assert bad == [slot]
    assert got[0].tobytes() == arrays[0].tobytes()
    assert got[1].tobytes() != arrays[slot].tobytes()
    g.close()


def test_slots_never_written_read_as_hdf5_reads_them(tmp_path: Path, hdf5_reads: list[str]) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", compression="none")
    f.write("f64__4", "f64", [4], 0, [np.full(4, 1.0)])
    f.write("f64__4", "f64", [4], 9000, [np.full(4, 7.0)])  # the chunks between: never written
    f.close()
    direct = ArrayFile(tmp_path / "a.h5", "r")
    through_hdf5 = ArrayFile(tmp_path / "a.h5", "r")
    through_hdf5._maps["f64__4"] = None
    slots = [0, 4000, 8999, 9000, 4001]
    got = direct.read("f64__4", slots)
    # 4000 and 4001, one slab in a chunk never written: HDF5 gives its fill value; 8999
    # shares a written chunk with 9000 and is read straight (zeros, as HDF5 reads it).
    assert hdf5_reads == ["/pools/f64__4"]
    assert [g.tolist() for g in got] == [w.tolist() for w in through_hdf5.read("f64__4", slots)]
    assert got[0].tolist() == [1.0] * 4 and got[3].tolist() == [7.0] * 4
    assert (direct._maps["f64__4"].addr < 0).any()  # a map with holes, used where whole
    direct.close()
    through_hdf5.close()


@pytest.mark.parametrize("dtype", ["f64", "i16", "bool", "f32"])
def test_arrays_longer_than_a_chunk_read_the_same_bytes_as_hdf5(
    tmp_path: Path, hdf5_reads: list[str], dtype: str
) -> None:
    # An array of more than 256 KB is cut into chunks along its first axis (a year of
    # quarter-hours: 35,040 values); each slot is then read part by part.
    shape = {"f64": (70_000,), "i16": (150_000,), "bool": (300_000,), "f32": (40_000, 2)}[dtype]
    name = pool_name(dtype, list(shape))
    arrays = _random_arrays(dtype, shape, 9)
    f = ArrayFile(tmp_path / "a.h5", "x", compression="none")
    f.write(name, dtype, list(shape), 0, arrays[:5])
    f.write(name, dtype, list(shape), 5, arrays[5:])
    f.close()
    direct = ArrayFile(tmp_path / "a.h5", "r")
    through_hdf5 = ArrayFile(tmp_path / "a.h5", "r")
    through_hdf5._maps[name] = None
    for slots in ([0, 1, 2, 3, 4, 5, 6, 7, 8], [8, 2, 2, 5], [4]):
        got, bad = direct.read_checked(name, slots)
        assert f"/pools/{name}" not in hdf5_reads  # read straight from the file
        want = through_hdf5.read(name, slots)
        hdf5_reads.clear()
        assert bad == []
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
        assert [g.tobytes() for g in got] == [arrays[s].tobytes() for s in slots]
    found = direct._maps[name]
    assert found is not None and found.parts > 1  # read part by part, straight
    assert [a.tolist() for a in direct.read(name, [3], (slice(10, 12),))] == [
        arrays[3][10:12].tolist()
    ]
    direct.close()
    through_hdf5.close()
