"""The embedded store's life: create, open, close, reopen, transactions, read-only mode."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import h5py
import numpy as np
import pytest
from store_helpers import T0, H, add, file_digests, segment_files, snapshot, sts

import infrastore_sqlite
from infrastore_sqlite import (
    InvalidParameterError,
    MismatchedArtifactError,
    NonSequentialTimeSeries,
    ReadOnlyStoreError,
    Store,
    StoreExistsError,
)
from infrastore_sqlite.store import catalog_path
from tests.bitpatterns import SPECIAL_F32, SPECIAL_F64


# =========================================================================== lifecycle
def test_create_makes_one_directory(store: Store, store_path: Path) -> None:
    assert store_path.is_dir()
    assert catalog_path(store_path) == store_path / "catalog.sqlite"
    assert catalog_path(store_path).is_file()
    assert segment_files(store_path) == []
    assert sorted(p.name for p in store_path.parent.iterdir()) == [store_path.name]
    assert store.is_empty()
    assert not store.read_only
    assert store.list_metadata() == []
    assert store.num_distinct_arrays() == 0
    assert store.counts_by_type() == {}
    assert "read_only=False" in repr(store)


def test_create_on_an_existing_store_is_refused(store: Store, store_path: Path) -> None:
    add(store, sts())
    store.close()
    before = file_digests(store_path)
    with pytest.raises(StoreExistsError, match=r"already holds a store.*overwrite=True"):
        Store.create(store_path)
    assert file_digests(store_path) == before
    # any file at the path is enough to refuse
    shutil.rmtree(store_path)
    store_path.write_bytes(b"")
    with pytest.raises(StoreExistsError):
        Store.create(store_path)


def test_create_with_overwrite_replaces(store: Store, store_path: Path) -> None:
    add(store, sts())
    store.close()
    with Store.create(store_path, overwrite=True) as fresh:
        assert fresh.is_empty()
        assert add(fresh, sts()) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"compression": "zstd"}, 'unknown compression "zstd"'),
        ({"compression_level": 10}, "compression_level must be 0-9"),
    ],
)
def test_create_refuses_bad_options(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        Store.create(tmp_path / "s.h5", **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_create_in_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="does not exist; create it first"):
        Store.create(tmp_path / "nope" / "s.h5")


@pytest.mark.parametrize("compression", ["auto", "deflate", "none"])
def test_every_compression_keeps_every_bit_pattern(tmp_path: Path, compression: str) -> None:
    f64 = np.array([*SPECIAL_F64, 0, 2**64 - 1], dtype=np.uint64).view(np.float64)
    f32 = np.array([*SPECIAL_F32, 0], dtype=np.uint32).view(np.float32)
    u64 = np.array([0, 1, 2**64 - 1, 2**63], dtype=np.uint64)
    with Store.create(tmp_path / "s.h5", compression=compression) as s:
        ids = [add(s, sts(name=f"a{k}", values=a)) for k, a in enumerate([f64, f32, u64])]
    with Store.open(tmp_path / "s.h5", read_only=True) as s:
        assert s.get_compression()["compression"] == compression
        for i, want in zip(ids, [f64, f32, u64], strict=True):
            got = s.read_by_id(i).data
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        assert s.verify_integrity()["ok"]


def test_uncompressed_store_round_trips(tmp_path: Path) -> None:
    with Store.create(tmp_path / "s.h5", compression="none") as s:
        i = add(s, sts())
        np.testing.assert_array_equal(s.read_by_id(i).data, np.arange(10.0))
    (segment,) = segment_files(tmp_path / "s.h5")
    with h5py.File(segment, "r") as h5:
        assert h5.attrs["compression"] == "none"


def test_open_refusals(tmp_path: Path, store: Store, store_path: Path) -> None:
    with pytest.raises(infrastore_sqlite.IoError, match="no store at"):
        Store.open(tmp_path / "missing.h5")
    store.close()
    cat = catalog_path(store_path)
    cat.rename(tmp_path / "aside.sqlite")
    with pytest.raises(infrastore_sqlite.MismatchedArtifactError, match="has no catalog"):
        Store.open(store_path)
    (tmp_path / "junk.h5").write_text("not hdf5")
    with pytest.raises(InvalidParameterError, match="could not be opened as an HDF5 file"):
        Store.open(tmp_path / "junk.h5")
    h5py.File(tmp_path / "bare.h5", "w").close()
    with pytest.raises(InvalidParameterError, match="not an infrastore-sqlite store"):
        Store.open(tmp_path / "bare.h5")
    with pytest.raises(TypeError, match="path must be a str"):
        Store.open(123)  # type: ignore[arg-type]
    (tmp_path / "aside.sqlite").rename(cat)
    Store.open(store_path).close()


@pytest.mark.parametrize("read_only", [False, True])
def test_mismatched_catalog_is_refused(tmp_path: Path, read_only: bool) -> None:
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    Store.create(a).close()
    with Store.create(b) as other:
        add(other, sts())
    catalog_path(a).write_bytes(catalog_path(b).read_bytes())
    with pytest.raises(MismatchedArtifactError, match=r"does not belong to.*restore the store"):
        Store.open(a, read_only=read_only)
    # segments copied in from another store are told apart by their generation too
    Store.create(tmp_path / "c.h5").close()
    for seg in segment_files(b):
        shutil.copy(seg, tmp_path / "c.h5" / "segments" / seg.name)
    catalog_path(tmp_path / "c.h5").write_bytes(catalog_path(b).read_bytes())
    con = sqlite3.connect(catalog_path(tmp_path / "c.h5"))
    con.execute("UPDATE store_attributes SET value = 'x' WHERE key LIKE '%generation'")
    con.commit()
    con.close()
    with pytest.raises(MismatchedArtifactError, match=r"does not belong to this store"):
        Store.open(tmp_path / "c.h5", read_only=read_only)


def test_close_is_idempotent_and_a_closed_store_refuses_work(store: Store) -> None:
    i = add(store, sts())
    store.close()
    store.close()
    for call in (
        store.list_metadata,
        lambda: store.read_by_id(i),
        lambda: add(store, sts("other")),
        store.num_distinct_arrays,
    ):
        with pytest.raises(InvalidParameterError, match="closed"):
            call()


def test_reopen_reads_the_same(store: Store, store_path: Path) -> None:
    ids = [
        add(store, sts()),
        add(store, NonSequentialTimeSeries([T0, T0 + 3 * H], np.array([1, 2], np.int8), "ns")),
    ]
    before = [store.get_metadata_by_id(i) for i in ids]
    store.close()
    with Store.open(store_path, read_only=True) as again:
        assert [again.get_metadata_by_id(i) for i in ids] == before
        np.testing.assert_array_equal(again.read_by_id(ids[1]).data, [1, 2])


# =========================================================================== transactions
def test_rolled_back_block_leaves_nothing(store: Store) -> None:
    add(store, sts("kept", np.zeros(3)))
    before = snapshot(store)
    with pytest.raises(RuntimeError), store.transaction():
        add(store, sts("a", np.ones(3)))
        add(store, NonSequentialTimeSeries([T0], np.ones(1), "n"))
        assert store.in_transaction
        assert len(store.list_metadata()) == 3
        raise RuntimeError("boom")
    assert not store.in_transaction
    assert snapshot(store) == before
    i = add(store, sts("a", np.full(3, 7.0)))
    np.testing.assert_array_equal(store.read_by_id(i).data, [7.0, 7.0, 7.0])


def test_transactions_nest(store: Store) -> None:
    with store.transaction():
        a = add(store, sts("a", np.full(3, 1.0)))
        with pytest.raises(KeyError), store.transaction():
            add(store, sts("b", np.full(3, 2.0)))  # a slot the rollback gives back
            raise KeyError
        c = add(store, sts("c", np.full(3, 3.0)))  # may reuse b's slot
        with store.transaction():
            d = add(store, sts("d", np.full(3, 4.0)))
    assert [m["name"] for m in store.list_metadata()] == ["a", "c", "d"]
    assert [s.data[0] for s in store.read_by_ids([a, c, d])] == [1.0, 3.0, 4.0]
    assert store.num_distinct_arrays() == 3
    assert store.verify_integrity()["ok"]


def test_rolled_back_removal_restores_readable_data(store: Store) -> None:
    x = add(store, sts("x", np.full(3, 5.0)))
    with pytest.raises(RuntimeError), store.transaction():
        store.remove_by_ids([x])
        assert store.num_distinct_arrays() == 0
        add(store, sts("y", np.full(3, 6.0)))  # must not land in x's slot
        raise RuntimeError
    np.testing.assert_array_equal(store.read_by_id(x).data, [5.0, 5.0, 5.0])
    assert store.verify_integrity()["ok"]


def test_begin_commit_rollback(store: Store) -> None:
    store.begin_transaction()
    assert store.in_transaction is True  # a property, as in the reference
    add(store, sts("a"))
    store.rollback_transaction()
    assert store.in_transaction is False
    assert store.list_metadata() == [] and store.num_distinct_arrays() == 0
    store.begin_transaction()
    store.begin_transaction()
    add(store, sts("b"))
    store.commit_transaction()
    store.rollback_transaction()  # the outer one undoes the committed inner one
    assert store.list_metadata() == []
    store.begin_transaction()
    i = add(store, sts("c"))
    store.commit_transaction()
    assert store.read_by_id(i).name == "c"
    with pytest.raises(InvalidParameterError, match="without begin_transaction"):
        store.commit_transaction()
    with pytest.raises(InvalidParameterError, match="without begin_transaction"):
        store.rollback_transaction()


# =========================================================================== read-only
def test_read_only_store_refuses_every_write(store: Store, store_path: Path) -> None:
    i = add(store, sts())
    store.close()
    before = file_digests(store_path)
    with Store.open(store_path, read_only=True) as ro:
        assert ro.read_only
        writes = [
            lambda: add(ro, sts("new")),
            lambda: ro.add_time_series_bulk([]),
            lambda: ro.remove_by_ids([i]),
            lambda: ro.remove_by_filter(name="load"),
            lambda: ro.transform_single_time_series("PT1H", "PT1H"),
            ro.compact,
            ro.begin_transaction,
            lambda: ro.transaction().__enter__(),
        ]
        for write in writes:
            with pytest.raises(ReadOnlyStoreError, match="read-only; open it with read_only=False"):
                write()
        np.testing.assert_array_equal(ro.read_by_id(i).data, np.arange(10.0))
        assert len(ro.list_metadata()) == 1
        assert ro.verify_integrity()["ok"]
    assert file_digests(store_path) == before
