"""The HDF5 half: pool datasets, slot writes, slab reads, compression attributes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from infrastore_sqlite import StorageError
from infrastore_sqlite.core.elements import NUMPY_DTYPES
from infrastore_sqlite.store.arrays import (
    _CHUNK_TARGET,
    DATA_FORMAT_VERSION,
    ArrayFile,
    _chunks,
    pool_name,
)


def test_pool_names() -> None:
    assert pool_name("f64", [8760]) == "f64__8760"
    assert pool_name("i16", (24, 2)) == "i16__24x2"
    assert pool_name("bool", []) == "bool__s"


@pytest.mark.parametrize(
    ("kwargs", "spelled", "float_filters", "int_filters"),
    [
        ({}, "auto:3:shuffle", (None, None, False), ("gzip", 3, True)),
        (
            {"compression_level": 5, "shuffle": False},
            "auto:5:noshuffle",
            (None, None, False),
            ("gzip", 5, False),
        ),
        ({"compression": "deflate"}, "deflate:3:shuffle", ("gzip", 3, True), ("gzip", 3, True)),
        (
            {"compression": "deflate", "compression_level": 9, "shuffle": False},
            "deflate:9:noshuffle",
            ("gzip", 9, False),
            ("gzip", 9, False),
        ),
        ({"compression": "none"}, "none", (None, None, False), (None, None, False)),
    ],
)
def test_new_file_records_its_layout(
    tmp_path: Path, kwargs, spelled, float_filters, int_filters
) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", **kwargs)
    f.write("f64__4", "f64", [4], 0, [np.arange(4.0)])
    f.write("f32__4", "f32", [4], 0, [np.arange(4.0, dtype=np.float32)])
    f.write("i64__4", "i64", [4], 0, [np.arange(4)])
    f.write("bool__4", "bool", [4], 0, [np.arange(4) % 2 == 0])
    f.close()
    with h5py.File(tmp_path / "a.h5", "r") as h5:
        assert h5.attrs["data_format_version"] == DATA_FORMAT_VERSION
        assert h5.attrs["storage_backend"] == "hdf5"
        assert h5.attrs["compression"] == spelled
        for name, filters in [
            ("f64__4", float_filters),
            ("f32__4", float_filters),
            ("i64__4", int_filters),
            ("bool__4", int_filters),
        ]:
            ds = h5[f"pools/{name}"]
            assert (ds.compression, ds.compression_opts, ds.shuffle) == filters, name
            assert ds.maxshape == (None, 4)
        # Whatever the filters, plain h5py reads the values back.
        np.testing.assert_array_equal(h5["pools/f64__4"][0], np.arange(4.0))
        np.testing.assert_array_equal(h5["pools/i64__4"][0], np.arange(4))


@pytest.mark.parametrize("dtype", sorted(NUMPY_DTYPES))
def test_every_dtype_round_trips_bit_for_bit(tmp_path: Path, dtype: str) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x")
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 256, size=(3, 5, 2, NUMPY_DTYPES[dtype].itemsize), dtype=np.uint8)
    arrays = [np.ascontiguousarray(r).view(NUMPY_DTYPES[dtype]).reshape(5, 2) for r in raw]
    if dtype == "bool":
        arrays = [a.view(np.uint8) % 2 == 1 for a in arrays]
    f.write(pool_name(dtype, [5, 2]), dtype, [5, 2], 0, arrays)
    f.close()
    g = ArrayFile(tmp_path / "a.h5", "r")
    back = g.read(pool_name(dtype, [5, 2]), [2, 0, 1])
    for got, want in zip(back, [arrays[2], arrays[0], arrays[1]], strict=True):
        assert got.dtype == NUMPY_DTYPES[dtype]
        assert got.tobytes() == want.tobytes()  # NaN payloads and -0.0 included
    g.close()


def test_slab_reads_with_gaps_and_any_order(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", compression="none")
    arrays = [np.full(3, float(k)) for k in range(40)]
    f.write("f64__3", "f64", [3], 0, arrays[:25])
    f.write("f64__3", "f64", [3], 25, arrays[25:])  # grows the pool
    slots = [39, 0, 3, 4, 20, 1, 38]  # near runs and far jumps
    back = f.read("f64__3", slots)
    assert [int(b[0]) for b in back] == slots
    back[1][0] = -1.0  # reads are independent arrays
    assert f.read("f64__3", [0])[0][0] == 0.0
    assert f.read("f64__3", []) == []
    f.close()


def test_writing_past_the_end_grows_the_pool(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x")
    f.write("i8__2", "i8", [2], 10, [np.array([1, 2], dtype=np.int8)])
    assert f.h5["pools/i8__2"].shape[0] >= 11
    np.testing.assert_array_equal(f.read("i8__2", [10])[0], [1, 2])
    np.testing.assert_array_equal(f.read("i8__2", [3])[0], [0, 0])  # never written: zeros
    assert f.pools() == ["i8__2"]
    f.close()


def test_reopened_file_finds_its_pools(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x")
    f.write("u16__s", "u16", [], 0, [np.array(7, dtype=np.uint16), np.array(9, dtype=np.uint16)])
    f.flush()
    f.close()
    g = ArrayFile(tmp_path / "a.h5", "r+")
    assert [int(a) for a in g.read("u16__s", [1, 0])] == [9, 7]
    g.write("u16__s", "u16", [], 2, [np.array(11, dtype=np.uint16)])
    assert int(g.read("u16__s", [2])[0]) == 11
    g.close()


def test_errors_are_storage_errors(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="cannot open the array file"):
        ArrayFile(tmp_path / "missing.h5", "r")
    f = ArrayFile(tmp_path / "a.h5", "x")
    with pytest.raises(StorageError, match="has no pool f64__9"):
        f.read("f64__9", [0])
    f.write("f64__2", "f64", [2], 0, [np.zeros(2)])
    with pytest.raises(StorageError, match="reading pool f64__2"):
        f.read("f64__2", [100])
    # Writes run in the background: a bad one is reported by the next sync at the latest.
    with pytest.raises(StorageError, match="writing pool f64__2"):
        f.write("f64__2", "f64", [2], 1, [np.zeros(3)])
        f.sync()
    f.close()
    with pytest.raises(StorageError):
        ArrayFile(tmp_path / "a.h5", "x")  # exists


def test_chunking_keeps_chunks_near_the_target() -> None:
    small = _chunks((24,), 8, 64)
    assert small[1:] == (24,)
    assert 1 <= small[0] <= 64
    big = _chunks((100_000, 3), 8, 64)  # 2.4 MB per array: split along its first axis
    assert big[0] == 1 and big[2] == 3
    assert big[1] * 3 * 8 <= _CHUNK_TARGET
    assert _chunks((), 1, 0)[0] >= 1


def test_writes_run_in_a_background_thread_and_reads_wait_for_them(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x")
    threads: list[str] = []
    real = ArrayFile._write_now

    def slow(self, *args):
        threads.append(threading.current_thread().name)
        time.sleep(0.05)
        return real(self, *args)

    ArrayFile._write_now = slow  # type: ignore[method-assign]
    try:
        for k in range(4):
            f.write("f64__3", "f64", [3], k, [np.full(3, float(k))])
        # The read comes back with every queued write in, in order.
        got = f.read("f64__3", [3, 0, 2, 1])
    finally:
        ArrayFile._write_now = real  # type: ignore[method-assign]
    assert [a.tolist() for a in got] == [[3.0] * 3, [0.0] * 3, [2.0] * 3, [1.0] * 3]
    assert threads and all(t.startswith("infrastore-sqlite-h5") for t in threads)
    f.close()


def test_queued_bytes_stay_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", max_pending_bytes=1000)
    real = ArrayFile._write_now
    monkeypatch.setattr(
        ArrayFile, "_write_now", lambda self, *a: (time.sleep(0.01), real(self, *a))[1]
    )
    seen = []
    for k in range(20):
        f.write("f64__50", "f64", [50], k, [np.zeros(50)])  # 400 bytes each
        seen.append(f._pending_bytes)
    assert max(seen) <= 1000
    f.close()
    with h5py.File(tmp_path / "a.h5", "r") as h5:
        assert h5["pools/f64__50"].shape[0] >= 20


def test_a_failed_write_is_reported_once_and_the_file_goes_on(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x")
    f.write("f64__2", "f64", [2], 0, [np.ones(2)])
    with pytest.raises(StorageError, match="writing pool f64__2"):
        f.write("f64__2", "f64", [2], 1, [np.zeros(3)])  # wrong shape
        f.write("f64__2", "f64", [2], 2, [np.zeros(2)])
        f.sync()
    f.sync()  # reported once
    f.write("f64__2", "f64", [2], 3, [np.full(2, 7.0)])
    assert [a.tolist() for a in f.read("f64__2", [0, 3])] == [[1.0, 1.0], [7.0, 7.0]]
    f.close()


@pytest.mark.parametrize("slab_bytes", [64, 8 * 1024 * 1024])
def test_slab_reads_of_any_slot_list_match_the_pool_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slab_bytes: int
) -> None:
    # slab_bytes 64: every run is cut by the span, so the cuts fall everywhere.
    monkeypatch.setattr("infrastore_sqlite.store.arrays._SLAB_BYTES", slab_bytes)
    f = ArrayFile(tmp_path / "a.h5", "x", compression="none")
    rows = [np.array([k, -k, k * 0.5]) for k in range(300)]
    f.write("f64__3", "f64", [3], 0, rows)
    rng = np.random.default_rng(7)
    cases = [
        list(range(300)),  # ascending, dense: row views
        list(range(299, -1, -1)),  # descending
        [5, 5, 6, 5, 200, 7],  # repeats (each a copy of its own)
        [0, 2, 4, 9, 60, 61, 62, 299],  # gaps, within and past _SLAB_GAP
        rng.permutation(300)[:120].tolist(),
        [0, 0, 2],  # a repeat that spans as many slots as it names
        [np.int64(3), 1],
    ]
    for slots in cases:
        got = f.read("f64__3", slots)
        assert [g.tolist() for g in got] == [rows[int(s)].tolist() for s in slots]
        got[0][0] = 1e9  # fresh arrays or views of a fresh slab: the next read is unchanged
        assert f.read("f64__3", [int(slots[0])])[0].tolist() == rows[int(slots[0])].tolist()
    assert [g.tolist() for g in f.read("f64__3", [4, 1, 250], (1,))] == [-4.0, -1.0, -250.0]
    assert f.read("f64__3", []) == []
    with pytest.raises(StorageError, match="reading pool f64__3"):
        f.read("f64__3", [1, 2, 10_000])
    f.close()


def test_a_read_only_file_caches_chunks_of_filtered_pools_only(tmp_path: Path) -> None:
    # An unfiltered chunk is read straight from the file (a cache would copy what the OS
    # caches anyway, a few MB per segment file); a compressed one is kept once inflated.
    f = ArrayFile(tmp_path / "a.h5", "x")  # auto: floats plain, integers deflated
    f.write("f64__4", "f64", [4], 0, [np.arange(4.0) + k for k in range(300)])
    f.write("i64__4", "i64", [4], 0, [np.arange(4) + k for k in range(300)])
    f.close()
    g = ArrayFile(tmp_path / "a.h5", "r")
    plain, packed = g._pool("f64__4"), g._pool("i64__4")
    assert plain.id.get_access_plist().get_chunk_cache()[1] == 0
    assert packed.id.get_access_plist().get_chunk_cache()[1] > 0
    slots = [299, 0, 150, 151, 7]
    assert [float(a[0]) for a in g.read("f64__4", slots)] == [float(s) for s in slots]
    assert [int(a[0]) for a in g.read("i64__4", slots)] == slots
    g.close()
    h = ArrayFile(tmp_path / "a.h5", "r+")  # writable: the file's own (no) cache, as before
    assert h._pool("f64__4").id.get_access_plist().get_chunk_cache()[1] == 0
    assert h._pool("i64__4").id.get_access_plist().get_chunk_cache()[1] == 0
    h.close()
