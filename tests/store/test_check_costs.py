"""Issue 33, Must 3's cost: the checks made cheaper must check the same.

The row checksums of an add and a read are computed in C-level passes over a batch
(``rowcheck.row_checks``), a pool's checksum and key twins are written through HDF5's
own calls (``ArrayFile._writing``), and a transaction record through ``h5d``/``h5a``
(``journal.write_record``). These tests hold each to what the slower code did: the same
stored values, the same refusals naming the same row, the same file layout.
"""

from __future__ import annotations

import enum
import hashlib
import marshal
from pathlib import Path

import h5py
import numpy as np
import pytest

from infrastore_sqlite.core.elements import NUMPY_DTYPES
from infrastore_sqlite.errors import DamagedStoreError
from infrastore_sqlite.store import journal
from infrastore_sqlite.store.arrays import KEY_WIDTH, ArrayFile, key_seeds, slot_hashes
from infrastore_sqlite.store.prepare import STORED_COLUMNS
from infrastore_sqlite.store.rowcheck import (
    CHECKED_COLUMNS,
    RowChecker,
    row_check,
    row_checks,
)


def _row(k: int) -> tuple:
    """A plausible catalog row (:data:`STORED_COLUMNS` order: array ids in the hashes'
    places) for series ``k``."""
    out = []
    for c in STORED_COLUMNS:
        if c.endswith("_id") and c != "owner_id":
            out.append(k * 11 + 1)
        elif c.endswith("hash"):
            out.append(hashlib.sha256(f"{c}{k}".encode()).digest())
        elif c in ("owner_id", "initial_ms", "length", "count"):
            out.append(k * 7)
        elif c in ("owner_category", "time_series_type"):
            out.append(1)
        elif c == "horizon":
            out.append(None)
        else:
            out.append(f"{c}-{k % 5}")
    return tuple(out)


def test_row_checks_are_the_checksum_row_check_defines() -> None:
    rows = [(sid, *_row(sid)) for sid in range(101, 151)]
    assert row_checks(rows) == [row_check(r) for r in rows]
    assert row_checks(iter(rows)) == [row_check(r) for r in rows]


class _Kind(enum.IntEnum):
    one = 1


def test_values_marshal_cannot_pack_are_checked_as_sqlite_stores_them() -> None:
    rows = [_row(k) for k in range(5)]
    odd = list(rows[3])
    odd[STORED_COLUMNS.index("owner_category")] = _Kind.one  # marshal refuses an IntEnum
    rows[3] = tuple(odd)
    with pytest.raises(ValueError):
        marshal.dumps((4, *rows[3]), 0)
    got = row_checks([(sid, *row) for sid, row in enumerate(rows, 1)])
    plain = (4, *_row(3))  # what SQLite stores for it: the plain 1
    assert got[3] == row_check(plain)
    assert got == [row_check((sid, *_row(sid - 1))) for sid in range(1, 6)]
    assert row_checks([(1, *rows[0]), (4, *rows[3])]) == [
        row_check((1, *rows[0])),
        row_check(plain),
    ]


def _selected(checker_cols: list[str | None], sid: int) -> tuple:
    """A row as a read selects it: ``checker_cols`` then the checker's extra columns."""
    values = dict(zip(CHECKED_COLUMNS, (sid, *_row(sid)), strict=True))
    checker = RowChecker(checker_cols)
    extra = [c.strip().removeprefix("t.") for c in checker.extra.split(",")]
    front = [values[c] if c is not None else "joined" for c in checker_cols]
    back = [values[c] for c in extra[:-1]]
    return (*front, *back, row_check(tuple(values[c] for c in CHECKED_COLUMNS)))


@pytest.mark.parametrize("n", [1, 3, 1024, 2500])
def test_a_flipped_field_anywhere_in_a_batch_is_refused_naming_its_row(n: int) -> None:
    cols: list[str | None] = ["id", "name", None, "data_id"]
    checker = RowChecker(cols)
    rows = [_selected(cols, sid) for sid in range(1, n + 1)]
    assert checker.check(list(rows), "demo") == rows
    assert list(checker.cut(iter(rows), len(cols), "demo")) == [r[: len(cols)] for r in rows]
    victim = n // 2  # the last block of cut's when n > 1024
    bad = list(rows[victim])
    bad[1] = bad[1][:-1] + "X"  # the name, as it now reads
    rows[victim] = tuple(bad)
    for run in (
        lambda: checker.check(list(rows), "demo"),
        lambda: list(checker.cut(iter(rows), len(cols), "demo")),
    ):
        with pytest.raises(DamagedStoreError) as err:
            run()
        assert f"series id {victim + 1} " in str(err.value)
        assert repr(bad[1]) in str(err.value)


def test_a_damaged_stored_checksum_is_refused_too() -> None:
    cols: list[str | None] = ["id", "name"]
    checker = RowChecker(cols)
    rows = [_selected(cols, sid) for sid in range(1, 10)]
    rows[7] = (*rows[7][:-1], rows[7][-1] ^ 1)
    with pytest.raises(DamagedStoreError, match="series id 8 "):
        checker.check(rows, "demo")


def test_twins_are_chunked_as_their_pool_and_grow_with_it(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", bound=True)
    arrays = [np.arange(6.0) + k for k in range(10)]
    keys = [(hashlib.sha256(bytes([k])).digest(), "data") for k in range(10)]
    f.write("f64__6", "f64", [6], 0, arrays[:3], keys[:3])
    f.write("f64__6", "f64", [6], 3, arrays[3:], keys[3:])  # grows pool and twins
    f.sync()
    h5 = f.h5
    pool, sums, held = h5["pools/f64__6"], h5["sums/f64__6"], h5["keys/f64__6"]
    assert pool.shape[0] >= 10 and sums.shape == (pool.shape[0], 2)
    assert held.shape == (pool.shape[0], KEY_WIDTH)
    assert sums.chunks == (pool.chunks[0], 2) and held.chunks == (pool.chunks[0], KEY_WIDTH)
    assert sums.maxshape == (None, 2) and held.maxshape == (None, KEY_WIDTH)
    assert sums.dtype == np.uint64 and held.dtype == np.uint8
    assert sums.compression is None and held.compression is None
    block = np.stack(arrays)
    want = slot_hashes(block, np.arange(10)) + key_seeds(keys)
    np.testing.assert_array_equal(sums[:10], want)
    assert [bytes(r[:32]) for r in held[:10]] == [k for k, _ in keys]
    assert list(held[:10, 32]) == [0] * 10
    np.testing.assert_array_equal(pool[:10], block)
    got, bad = f.read_checked("f64__6", [9, 0, 4], [keys[9], keys[0], keys[4]])
    assert bad == [] and [int(a[0]) for a in got] == [9, 0, 4]
    _got, bad = f.read_checked("f64__6", [1], [keys[2]])  # another array's key
    assert bad == [1]
    f.close()


def test_a_file_written_before_twins_gets_them_on_its_next_write(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x")
    f.write("i32__2", "i32", [2], 0, [np.array([1, 2], dtype=np.int32)])
    f.close()
    with h5py.File(tmp_path / "a.h5", "r+") as h5:
        del h5["sums"]  # as a file written before the checksums
    g = ArrayFile(tmp_path / "a.h5", "r+")
    g.write("i32__2", "i32", [2], 1, [np.array([3, 4], dtype=np.int32)])
    got, bad = g.read_checked("i32__2", [0, 1])
    # The new slot is checked; the old one never had a checksum: it is left to the
    # caller's check by content hash (damage.read_group), never passed unchecked.
    assert [a.tolist() for a in got] == [[1, 2], [3, 4]] and bad == [0]
    g.close()


def test_a_record_reads_back_as_written_and_a_copy_is_kept(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", bound=True)
    journal.write_record(f, 1_000_000_000_000_001, 1_000_000_000_000_000, b"payload one")
    journal.write_record(f, 1_000_000_000_000_002, 1_000_000_000_000_001, b"payload two")
    journal.write_record(f, 1_000_000_000_000_001, 7, b"another")  # the first is kept
    f.close()
    with h5py.File(tmp_path / "a.h5", "r") as h5:
        assert journal.records_of(h5) == [
            (1_000_000_000_000_001, 1_000_000_000_000_000, b"payload one"),
            (1_000_000_000_000_002, 1_000_000_000_000_001, b"payload two"),
        ]
        ds = h5["journal"][f"{1_000_000_000_000_001:020d}"]
        assert ds.dtype == np.uint8 and ds.chunks is None
        assert ds.attrs["seq"].dtype == np.int64 and ds.attrs["prev"].dtype == np.int64


def test_records_written_together_and_damaged_headers_skipped(tmp_path: Path) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", bound=True)
    journal.write_records(f, [(11, 0, b"one"), (12, 11, b"two"), (11, 5, b"again"), (13, 12, b"x")])
    f.close()
    with h5py.File(tmp_path / "a.h5", "r+") as h5:
        group = h5["journal"]
        assert sorted(group) == [f"{n:020d}" for n in (11, 12, 13)]
        group[f"{12:020d}"].attrs["seq"] = "12"  # a header that is no number
        group[f"{13:020d}"].attrs["prev"] = np.array([12, 12])  # not one value
    with h5py.File(tmp_path / "a.h5", "r") as h5:
        assert journal.records_of(h5) == [(11, 0, b"one")]
        assert journal.heads_of(h5) == [(11, 0)]


def _layout(ds: h5py.Dataset) -> tuple:
    plist = ds.id.get_create_plist()
    return (
        ds.shape,
        ds.maxshape,
        ds.chunks,
        ds.dtype.str,
        [plist.get_filter(i)[:3] for i in range(plist.get_nfilters())],
        plist.get_obj_track_times(),
        plist.get_fill_time(),
        plist.get_alloc_time(),
    )


@pytest.mark.parametrize("compression", ["auto", "deflate", "none"])
def test_pools_and_twins_are_made_as_h5py_makes_them(tmp_path: Path, compression: str) -> None:
    f = ArrayFile(tmp_path / "a.h5", "x", compression=compression, bound=True)
    cases = {"f64__3": ("f64", [3]), "i8__s": ("i8", []), "bool__2_5": ("bool", [2, 5])}
    for name, (dtype, shape) in cases.items():
        arrays = [np.ones(shape, dtype=NUMPY_DTYPES[dtype])] * 2
        f.write(name, dtype, shape, 0, arrays, [(bytes([k]) * 32, "data") for k in range(2)])
    f.sync()
    # The same datasets made by h5py's create_dataset (chunks and filters as the pool's:
    # what is compared is how the dataset is made, whole pipeline and properties).
    with h5py.File(tmp_path / "b.h5", "w") as ref:
        for name, (dtype, shape) in cases.items():
            pool = f.h5["pools"][name]
            made = ref.create_dataset(
                f"pools/{name}",
                shape=pool.shape,
                maxshape=(None, *shape),
                dtype=NUMPY_DTYPES[dtype],
                chunks=pool.chunks,
                compression=pool.compression,
                compression_opts=pool.compression_opts,
                shuffle=pool.shuffle,
            )
            assert _layout(pool) == _layout(made)
            rows = pool.chunks[0]
            for group, width, twin_dtype in (("sums", 2, np.uint64), ("keys", KEY_WIDTH, np.uint8)):
                twin = f.h5[group][name]
                made = ref.create_dataset(
                    f"{group}/{name}",
                    shape=twin.shape,
                    maxshape=(None, width),
                    dtype=twin_dtype,
                    chunks=(rows, width),
                )
                assert _layout(twin) == _layout(made)
    f.close()
