"""The embedded store end to end: lifecycle, adds, reads, identity, content addressing,
transactions, read-only mode, removal, compaction, transform, filters."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import infrastore_sqlite
from infrastore_sqlite import (
    Deterministic,
    DuplicateTimeSeriesError,
    IntegrityError,
    InvalidParameterError,
    MismatchedArtifactError,
    NonSequentialTimeSeries,
    NotFoundError,
    OwnerCategory,
    PersistentTimeSeries,
    Probabilistic,
    ReadOnlyStoreError,
    Scenarios,
    SingleTimeSeries,
    Store,
    StoreExistsError,
    TimeSeriesType,
)
from infrastore_sqlite.core.hashing import data_hash_hex
from infrastore_sqlite.errors import DamagedStoreError
from infrastore_sqlite.store import catalog_path
from tests.bitpatterns import SPECIAL_F32, SPECIAL_F64

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
C = OwnerCategory.Component
SA = OwnerCategory.SupplementalAttribute
DST = TimeSeriesType.DeterministicSingleTimeSeries


def sts(name: str = "load", values: Any = None, start: datetime = T0, res: str = "PT1H", **kw):
    data = np.arange(10.0) if values is None else values
    return SingleTimeSeries(start, res, data, name, **kw)


def add(store: Store, ts, owner_id: int = 1, owner_type: str = "Gen", category=C, **kw) -> int:
    return store.add_time_series(owner_id, owner_type, category, ts, **kw)


def snapshot(store: Store) -> tuple:
    """Everything a failed write must leave alone."""
    cat = store._catalog
    return (
        store.list_metadata(),
        store.num_distinct_arrays(),
        cat.execute("SELECT * FROM arrays ORDER BY hash, kind").fetchall(),
        cat.execute("SELECT * FROM segments ORDER BY name").fetchall(),
        cat.execute("SELECT * FROM feature_maps ORDER BY features_hash").fetchall(),
        cat.execute("SELECT * FROM feature_sets ORDER BY features_hash, key").fetchall(),
        cat.scalar("SELECT seq FROM sqlite_sequence WHERE name = 'time_series_associations'"),
    )


def file_digests(path: Path) -> dict[str, str]:
    """Every file of a closed store directory, by name, with a digest of its bytes.

    SQLite's WAL index (-shm) and an empty WAL are left out: a read-only reader creates
    them to coordinate with writers, and they hold no content.
    """
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
        and not p.name.endswith("-shm")
        and not (p.name.endswith("-wal") and p.stat().st_size == 0)
    }


def segment_files(path: Path) -> list[Path]:
    return sorted((path / "segments").iterdir())


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


# =========================================================================== adding and reading
def test_metadata_of_a_single_time_series(store: Store) -> None:
    i = add(
        store,
        sts(units="MW", quantity_kind="power", component_field="max_active_power"),
        owner_id=7,
        owner_type="Generator",
        features={"year": 2030, "scen": "hi", "w": 0.5, "on": True},
    )
    assert store.get_metadata_by_id(i) == {
        "owner_id": 7,
        "owner_type": "Generator",
        "owner_category": "Component",
        "time_series_type": "SingleTimeSeries",
        "name": "load",
        "data_hash": data_hash_hex(np.arange(10.0)),
        "id": i,
        "initial_timestamp": "2024-01-01T00:00:00+00:00",
        "length": 10,
        "resolution": "PT1H",
        "horizon": None,
        "interval": None,
        "count": None,
        "percentiles": None,
        "element_type": "f64",
        "element_shape": [],
        "timestamps": None,
        "features": {"on": True, "scen": "hi", "w": 0.5, "year": 2030},
        "units": "MW",
        "quantity_kind": "power",
        "unit_system": None,
        "time_reference": "utc",
        "component_field": "max_active_power",
        "application_data": None,
    }
    assert store.get_metadata_by_id(i + 100) is None
    assert store.counts_by_type() == {"SingleTimeSeries": 1}
    assert not store.is_empty()


def test_every_type_round_trips(store: Store) -> None:
    p_data = np.arange(12.0).reshape(2, 2, 3)
    series = [
        sts(values=np.arange(6, dtype=np.uint16).reshape(3, 2)),
        NonSequentialTimeSeries([T0, T0 + 2 * H], np.array([True, False]), "ns"),
        PersistentTimeSeries([T0 - 24 * H, T0], np.array([1.5, -0.0]), "pe"),
        Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, np.arange(6.0).reshape(2, 3), "det"),
        Probabilistic(T0, "PT1H", "PT2H", "PT1H", 3, [0.1, 0.9], p_data, "prob"),
        Scenarios(T0, "PT1H", "PT2H", "PT1H", 3, p_data, "sc"),
    ]
    ids = [add(store, s) for s in series]
    back = store.read_by_ids(ids)
    for want, got in zip(series, back, strict=True):
        assert type(got) is type(want)
        assert got.data.dtype == want.data.dtype
        assert got.data.tobytes() == want.data.tobytes()
        assert got.name == want.name
        assert got.element_type == want.element_type
        assert got.time_reference == want.time_reference
        for attr in ("initial_timestamp", "resolution", "horizon", "interval", "count"):
            if hasattr(want, attr):
                assert getattr(got, attr) == getattr(want, attr), attr
        if hasattr(want, "timestamps"):
            assert got.timestamps == want.timestamps
    assert back[4].percentiles == [0.1, 0.9]
    assert back[5].scenario_count == 2
    # Probabilistic and Scenarios hold the same array: one copy
    assert store.num_distinct_arrays() == 5
    meta = {m["name"]: m for m in store.list_metadata()}
    # the catalog quirk: length = shape[0], element_shape = shape[1:]
    assert (meta["det"]["length"], meta["det"]["element_shape"]) == (2, [3])
    assert (meta["prob"]["length"], meta["prob"]["element_shape"]) == (2, [2, 3])
    assert meta["prob"]["percentiles"] == [0.1, 0.9]
    assert meta["load"]["element_type"] == "u16"
    assert meta["load"]["element_shape"] == [2]
    assert meta["ns"]["initial_timestamp"] is None and meta["ns"]["resolution"] is None
    assert meta["ns"]["timestamps"] is None  # list_metadata leaves the axis out
    assert store.get_metadata_by_id(ids[2])["timestamps"] == [
        "2023-12-31T00:00:00+00:00",
        "2024-01-01T00:00:00+00:00",
    ]
    assert store.counts_by_type() == {
        "SingleTimeSeries": 1,
        "NonSequentialTimeSeries": 1,
        "Deterministic": 1,
        "Probabilistic": 1,
        "Scenarios": 1,
        "PersistentTimeSeries": 1,
    }


def test_empty_series_round_trip(store: Store) -> None:
    ids = [
        add(store, sts("e", np.zeros(0))),
        add(store, NonSequentialTimeSeries([], np.zeros((0, 2)), "n")),
        add(store, Deterministic(T0, "PT1H", "PT2H", "PT1H", 0, np.zeros((2, 0)), "d")),
    ]
    e, n, d = store.read_by_ids(ids)
    assert e.length == 0 and e.initial_timestamp == T0
    assert n.data.shape == (0, 2) and n.timestamps == [] and n.time_reference is None
    assert d.data.shape == (2, 0) and d.count == 0
    assert store.get_metadata_by_id(ids[1])["time_reference"] is None


def test_time_references_round_trip(store: Store) -> None:
    from zoneinfo import ZoneInfo

    denver = datetime(2024, 3, 10, 1, tzinfo=ZoneInfo("America/Denver"))
    ids = [
        add(store, sts("z", start=datetime(2024, 1, 1, 5))),
        add(store, sts("d", start=denver)),
        add(
            store,
            NonSequentialTimeSeries(
                [datetime(2024, 1, 1), datetime(2024, 1, 2, 0, 0, 0, 1000)], np.zeros(2), "nz"
            ),
        ),
        add(store, sts("ms", start=T0 + timedelta(milliseconds=500), res="PT0.25S")),
    ]
    z, d, nz, ms = store.read_by_ids(ids)
    assert z.initial_timestamp == datetime(2024, 1, 1, 5) and z.time_reference == "zoneless"
    assert d.initial_timestamp == denver and d.initial_timestamp.tzinfo == ZoneInfo(
        "America/Denver"
    )
    # 01:00 MST + 1 h is 03:00 MDT (daylight saving starts): compare instants
    assert d.timestamps[1].astimezone(UTC) == denver.astimezone(UTC) + H
    assert d.timestamps[1].utcoffset() == -6 * H and d.timestamps[1].hour == 3
    assert nz.timestamps[1] == datetime(2024, 1, 2, 0, 0, 0, 1000)
    assert ms.timestamps[1] == T0 + timedelta(milliseconds=750)
    # the API shows a zoneless wall clock without an offset; instants as UTC text
    assert store.get_metadata_by_id(ids[0])["initial_timestamp"] == "2024-01-01T05:00:00"
    assert store.get_metadata_by_id(ids[1])["initial_timestamp"] == "2024-03-10T08:00:00+00:00"
    assert store.get_metadata_by_id(ids[2])["timestamps"] == [
        "2024-01-01T00:00:00",
        "2024-01-02T00:00:00.001",
    ]
    assert store.get_metadata_by_id(ids[3])["initial_timestamp"] == "2024-01-01T00:00:00.500+00:00"
    # the catalog itself keeps the UTC-style text for every reference
    text = store._catalog.scalar(
        "SELECT initial_timestamp FROM time_series_associations WHERE id = ?", (ids[0],)
    )
    assert text == "2024-01-01T05:00:00+00:00"


def test_nan_payloads_negative_zero_and_inf(store: Store) -> None:
    bits_a = np.array(
        [0x7FF8000000000001, 0xFFF0000000000001, 0x8000000000000000, 0x7FF0000000000000], np.uint64
    )
    bits_b = np.array(
        [0x7FF8000000000002, 0x7FF8000000000000, 0x8000000000000000, 0x7FF0000000000000], np.uint64
    )
    a = add(store, sts("a", bits_a.view(np.float64)))
    b = add(store, sts("b", bits_b.view(np.float64)))
    # NaNs hash alike, so b shares a's array and reads a's bits (as the reference does)
    assert store.num_distinct_arrays() == 1
    assert store.read_by_id(a).data.view(np.uint64).tolist() == bits_a.tolist()
    assert store.read_by_id(b).data.view(np.uint64).tolist() == bits_a.tolist()
    # -0.0 and +0.0 are different arrays
    add(store, sts("pz", np.array([0.0])))
    nz = add(store, sts("nz", np.array([-0.0])))
    assert store.num_distinct_arrays() == 3
    assert np.signbit(store.read_by_id(nz).data[0])
    f32 = np.array([0x7FC00001, 0xFFC00000, 0x80000000], np.uint32)
    c = add(store, sts("f32", f32.view(np.float32)))
    assert store.read_by_id(c).data.view(np.uint32).tolist() == f32.tolist()


def test_over_padded_composites_share_the_minimal_array(store: Store) -> None:
    minimal = np.array([[1, 5, 6, 0, 0], [2, 1, 2, 3, 4]], dtype=float)
    wide = np.array([[1, 5, 6, 0, 0, 0, 0], [2, 1, 2, 3, 4, 0, 0]], dtype=float)
    garbage = np.array([[1, 5, 6, 9, 9, 9, 9], [2, 1, 2, 3, 4, 9, 9]], dtype=float)
    i = add(store, sts("min", minimal, element_type="piecewise_linear"))
    j = add(store, sts("wide", wide, element_type="piecewise_linear"))
    k = add(store, sts("garbage", garbage, element_type="piecewise_linear"))
    assert store.num_distinct_arrays() == 1
    hashes = {store.get_metadata_by_id(x)["data_hash"] for x in (i, j, k)}
    assert hashes == {data_hash_hex(minimal)}
    assert store.get_metadata_by_id(j)["element_shape"] == [7]  # the width the caller gave
    got_min, got_wide, got_garbage = store.read_by_ids([i, j, k])
    np.testing.assert_array_equal(got_min.data, minimal)
    np.testing.assert_array_equal(got_wide.data, wide)
    np.testing.assert_array_equal(got_garbage.data, wide)  # canonical: padding zeroed
    assert (
        got_garbage.decoded_values()
        == sts("x", minimal, element_type="piecewise_linear").decoded_values()
    )
    # the same bytes as a plain f64 array are a different element type but the same hash
    plain = add(store, sts("plain", minimal))
    assert store.num_distinct_arrays() == 1
    assert store.read_by_id(plain).element_type == "f64"


def test_negative_zero_step_count_is_canonical(store: Store) -> None:
    step = np.array([[-0.0], [0.0]])
    i = add(store, sts("s", step, element_type="piecewise_step"))
    assert not np.signbit(store.read_by_id(i).data).any()


# =========================================================================== identity
def test_identity_rules(store: Store) -> None:
    add(store, sts(), features={"k": 1})
    for dup in (
        {"ts": sts(values=np.ones(10))},  # other data
        {"owner_type": "Other"},
        {"ts": sts(units="kW")},
        {"ts": sts(start=T0 + H)},
        {"ts": sts(values=np.ones(3))},  # other length
    ):
        with pytest.raises(DuplicateTimeSeriesError, match="already exists: 'load' \\(owner 1\\)"):
            add(
                store,
                dup.get("ts", sts()),
                owner_type=dup.get("owner_type", "Gen"),
                features={"k": 1},
            )
    # each of these is a new identity
    add(store, sts(), category=SA, features={"k": 1})
    add(store, sts(res="PT2H"), features={"k": 1})
    add(store, sts(), features={"k": 1.0})
    add(store, sts(), features={"k": True})
    add(store, sts(), features={"k": "1"})
    add(store, sts())
    add(store, sts(), owner_id=2, features={"k": 1})
    assert len(store.list_metadata()) == 8
    assert store.num_distinct_arrays() == 1


def test_infinite_features_read_back(store: Store) -> None:
    feats = {"hi": float("inf"), "lo": float("-inf"), "big": 1e308, "n": 1, "b": False}
    i = add(store, sts(), features=feats)
    assert store.get_metadata_by_id(i)["features"] == feats
    assert store.list_metadata(features={"hi": float("inf")})[0]["features"] == feats
    assert store.list_metadata(features=feats, features_exact=True)[0]["id"] == i
    j = add(store, sts(), features={**feats, "hi": float("-inf")})  # another identity
    assert store.get_metadata_by_id(j)["features"]["hi"] == float("-inf")


def test_forecast_identity_includes_interval_not_horizon(store: Store) -> None:
    add(store, Deterministic(T0, "PT1H", "PT2H", "PT1H", 1, np.zeros((2, 1)), "d"))
    with pytest.raises(DuplicateTimeSeriesError):
        add(store, Deterministic(T0, "PT1H", "PT3H", "PT1H", 1, np.zeros((3, 1)), "d"))
    add(store, Deterministic(T0, "PT1H", "PT2H", "PT2H", 1, np.zeros((2, 1)), "d"))
    ns = NonSequentialTimeSeries([T0], np.zeros(1), "n")
    add(store, ns)
    with pytest.raises(DuplicateTimeSeriesError):  # NULL resolution/interval collide
        add(store, NonSequentialTimeSeries([T0 + H], np.ones(1), "n"))


# =========================================================================== failed writes
BAD_ADDS = {
    "reserved feature": (
        {"features": {"name": "x"}},
        InvalidParameterError,
        'feature name "name" is reserved',
    ),
    "NaN feature": ({"features": {"x": float("nan")}}, InvalidParameterError, "NaN"),
    "-0.0 feature": ({"features": {"x": -0.0}}, InvalidParameterError, "negative zero"),
    "None feature": ({"features": {"x": None}}, InvalidParameterError, "is None"),
    "list feature": ({"features": {"x": [1]}}, InvalidParameterError, "type list"),
    "i64 overflow feature": ({"features": {"x": 2**63}}, InvalidParameterError, "64-bit"),
    "owner_id str": ({"owner_id": "1"}, InvalidParameterError, "owner_id must be an integer"),
    "owner_id bool": ({"owner_id": True}, InvalidParameterError, "owner_id must be an integer"),
    "owner_id huge": ({"owner_id": 2**63}, InvalidParameterError, "signed 64-bit"),
    "owner_type empty": ({"owner_type": ""}, InvalidParameterError, "owner_type must be"),
    "category": ({"category": "Comp"}, InvalidParameterError, "unknown owner_category"),
    "not a series": ({"ts": np.zeros(3)}, InvalidParameterError, "must be a series object"),
    "duplicate": ({}, DuplicateTimeSeriesError, "already exists"),
}


@pytest.mark.parametrize("case", list(BAD_ADDS))
def test_failed_add_writes_nothing(store: Store, case: str) -> None:
    add(store, sts("load"))
    before = snapshot(store)
    kw, exc, message = BAD_ADDS[case]
    ts = kw.pop("ts", sts("load", np.arange(10.0) + 1))  # new data: would need a new array
    with pytest.raises(exc, match=message):
        store.add_time_series(
            kw.get("owner_id", 1),
            kw.get("owner_type", "Gen"),
            kw.get("category", C),
            ts,
            features=kw.get("features"),
        )
    assert snapshot(store) == before
    i = add(store, sts("next", np.arange(10.0) + 2))
    np.testing.assert_array_equal(store.read_by_id(i).data, np.arange(10.0) + 2)
    assert i == 2  # the failed add consumed no id


def test_bulk_add_is_all_or_nothing(store: Store) -> None:
    add(store, sts("existing"))
    store.transform_single_time_series("PT1H", "PT1H")  # so a Deterministic "existing" clashes
    before = snapshot(store)

    def item(name: str, values: np.ndarray, **kw) -> dict:
        return {
            "owner_id": 1,
            "owner_type": "Gen",
            "owner_category": C,
            "time_series": sts(name, values),
            **kw,
        }

    batches = {
        "duplicate in batch": [item("a", np.ones(10)), item("a", np.full(10, 2.0))],
        "duplicate of stored": [item("b", np.ones(10)), item("existing", np.full(10, 3.0))],
        "bad features late": [item("c", np.ones(10)), item("d", np.ones(10), features={"id": 1})],
        "unknown key": [item("e", np.ones(10)), item("f", np.ones(10), feautres={})],
        "not a dict": [item("g", np.ones(10)), ("h",)],
        "family clash": [
            item("i", np.ones(10)),
            {
                "owner_id": 1,
                "owner_type": "Gen",
                "owner_category": C,
                "time_series": Deterministic(
                    T0, "PT1H", "PT1H", "PT1H", 1, np.ones((1, 1)), "existing"
                ),
            },
        ],
    }
    for name, batch in batches.items():
        with pytest.raises((DuplicateTimeSeriesError, InvalidParameterError)):
            store.add_time_series_bulk(batch)
        assert snapshot(store) == before, name
    ids = store.add_time_series_bulk([item("x", np.full(10, 4.0)), item("y", np.full(10, 4.0))])
    assert ids == [3, 4]
    assert store.num_distinct_arrays() == 2
    assert [s.data[0] for s in store.read_by_ids(ids)] == [4.0, 4.0]
    assert store.add_time_series_bulk([]) == []


def test_bulk_add_refusals_name_the_offending_item(store: Store) -> None:
    add(store, sts("existing"))
    store.transform_single_time_series("PT1H", "PT1H")

    def item(name: str, ts=None, owner_id: int = 1) -> dict:
        return {
            "owner_id": owner_id,
            "owner_type": "Gen",
            "owner_category": C,
            "time_series": ts if ts is not None else sts(name, np.full(10, float(owner_id))),
        }

    det = Deterministic(T0, "PT1H", "PT1H", "PT1H", 1, np.ones((1, 1)), "existing")
    ok = [item(f"ok{k}", owner_id=k + 1) for k in range(5)]
    with pytest.raises(DuplicateTimeSeriesError, match=r"'dup' \(owner 7\)"):
        store.add_time_series_bulk([*ok, item("dup", owner_id=7), item("dup", owner_id=7)])
    with pytest.raises(InvalidParameterError, match=r"'existing' \(owner 1\) already has a Det"):
        store.add_time_series_bulk([*ok, item("x", det)])
    assert len(store.list_metadata()) == 2


def test_bulk_ids_follow_the_highest_id_ever_used(store: Store) -> None:
    ids = store.add_time_series_bulk(
        [
            {"owner_id": k, "owner_type": "Gen", "owner_category": C, "time_series": sts()}
            for k in range(3)
        ]
    )
    assert ids == [1, 2, 3]
    store.remove_by_ids([3])
    again = store.add_time_series_bulk(
        [
            {"owner_id": k, "owner_type": "Gen", "owner_category": C, "time_series": sts()}
            for k in (7, 8)
        ]
    )
    assert again == [4, 5]  # AUTOINCREMENT: id 3 is not reused
    assert [m["owner_id"] for m in store.list_metadata_by_ids(again)] == [7, 8]


# =========================================================================== content addressing
def test_same_array_is_stored_once_across_owners_and_types(store: Store) -> None:
    data = np.arange(4.0)
    add(store, sts("a", data))
    add(store, sts("b", data), owner_id=2, category=SA)
    add(store, NonSequentialTimeSeries([T0 + k * H for k in range(4)], data, "c"))
    add(store, sts("d", data.reshape(2, 2), element_type="tuple(2,f64)"))  # other shape
    add(store, sts("e", data.reshape(2, 2), element_type="linear_function"))
    assert store.num_distinct_arrays() == 2
    hashes = {m["name"]: m["data_hash"] for m in store.list_metadata()}
    assert hashes["a"] == hashes["b"] == hashes["c"] == data_hash_hex(data)
    assert hashes["d"] == hashes["e"] == data_hash_hex(data.reshape(2, 2))


def test_removing_the_last_reference_frees_the_array(store: Store, store_path: Path) -> None:
    big = np.random.default_rng(1).random(50_000)
    a = add(store, sts("a", big))
    b = add(store, sts("b", big), owner_id=2)
    c = add(store, sts("c", big + 1), features={"x": "y"})
    assert store.num_distinct_arrays() == 2
    assert store.remove_by_ids([a]) == 1
    assert store.num_distinct_arrays() == 2  # b still uses it
    np.testing.assert_array_equal(store.read_by_id(b).data, big)
    assert store.remove_by_ids([b]) == 1
    assert store.num_distinct_arrays() == 1
    assert store._catalog.scalar("SELECT count(*) FROM feature_maps") == 1  # {x: y} only
    assert store.remove_by_ids([c]) == 1
    assert store.num_distinct_arrays() == 0
    assert store._catalog.scalar("SELECT count(*) FROM feature_maps") == 0
    assert store._catalog.scalar("SELECT count(*) FROM feature_sets") == 0
    keep = add(store, sts("keep", np.arange(3.0)))
    size_before = store.disk_usage()["hdf5_bytes"]
    result = store.compact()
    assert result["slots_reclaimed"] == 2
    assert result["bytes_reclaimed"] > 0
    assert store.disk_usage()["hdf5_bytes"] < size_before
    assert len(segment_files(store_path)) == 1
    np.testing.assert_array_equal(store.read_by_id(keep).data, np.arange(3.0))
    assert store.verify_integrity()["ok"]
    # ids are never reissued: not after removal, compaction or reopening
    assert add(store, sts("after")) == 5
    store.close()
    with Store.open(store_path) as again:
        assert add(again, sts("reopened")) == 6
        again.remove_by_ids([5, 6])
        again.compact()
        assert add(again, sts("last")) == 7
        np.testing.assert_array_equal(again.read_by_id(keep).data, np.arange(3.0))


def test_compact_keeps_every_live_array(store: Store) -> None:
    rng = np.random.default_rng(3)
    arrays = {f"s{k}": rng.random((5, 2)).astype(np.float32) for k in range(30)}
    ids = {name: add(store, sts(name, a)) for name, a in arrays.items()}
    ns = add(store, NonSequentialTimeSeries([T0, T0 + H], np.array([1, 2], np.int64), "ns"))
    store.remove_by_ids([ids.pop(f"s{k}") for k in range(0, 30, 3)])
    store.compact()
    for name, i in ids.items():
        assert store.read_by_id(i).data.tobytes() == arrays[name].tobytes()
    assert store.read_by_id(ns).timestamps == [T0, T0 + H]
    # the reference's keys only; diagnose counts the arrays it read: 20 + the ns series'
    # values and time axis
    assert store.verify_integrity() == {"ok": True, "errors": []}
    assert store.diagnose().checked == 22
    with pytest.raises(InvalidParameterError, match="inside a transaction"), store.transaction():
        store.compact()


def test_compact_report(store: Store) -> None:
    add(store, sts("empty", np.zeros(0)))  # a zero-size array has no slot
    add(store, sts("a", np.arange(3.0)))
    b = add(store, sts("b", np.arange(4.0)))
    add(store, sts("c", np.arange(4.0) + 1))
    store.remove_by_ids([b])
    report = store.compact()
    assert set(report) == {  # the reference's keys
        "slots_reclaimed",
        "datasets_dropped",
        "feature_sets_reclaimed",
        "timestamp_sets_reclaimed",
        "bytes_reclaimed",
    }
    assert (report["slots_reclaimed"], report["datasets_dropped"]) == (1, 0)
    store.remove_by_filter(name="c")
    assert store.compact()["datasets_dropped"] == 1
    assert store.compact()["slots_reclaimed"] == 0
    assert [s.length for s in store.read_by_ids([1, 2])] == [0, 3]


def test_verify_integrity_finds_tampered_arrays(store: Store, store_path: Path) -> None:
    i = add(store, sts("a", np.arange(4.0)))
    j = add(store, sts("b", np.arange(4.0) + 1))
    pool, slot, segment = store._catalog.execute(
        "SELECT pool, slot, segment FROM arrays WHERE hash = ?",
        (store.rows_by_ids([i])[0].data_hash,),
    ).fetchone()
    store.close()
    with h5py.File(store_path / "segments" / segment, "r+") as h5:
        h5["pools"][pool][slot, 0] = 99.0
    with Store.open(store_path, read_only=True) as again:
        report = again.verify_integrity()
        assert not report["ok"] and set(report) == {"ok", "errors"}
        found = again.diagnose()
        assert found.checked == 2
        assert [(s.file, s.problem, s.arrays_lost) for s in found.segments] == [
            (str(store_path / "segments" / segment), "hash mismatch", 1)
        ]
        assert [(s.id, s.name, s.owner_id) for s in found.series_lost] == [(i, "a", 1)]
        # the changed value is never returned: the read fails, naming the series and file
        with pytest.raises(DamagedStoreError, match=r"cannot read 'a' \(owner 1, id 1\)") as e:
            again.read_by_id(i)
        assert segment in str(e.value) and "Store.diagnose()" in str(e.value)
        assert again.read_by_id(j).data.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_verify_names_a_damaged_segment_file(store: Store, store_path: Path) -> None:
    i = add(store, sts("a", np.arange(4.0)))
    j = add(store, sts("b", np.arange(400.0)))
    (segment,) = store._catalog.execute(
        "SELECT segment FROM arrays WHERE hash = ?", (store.rows_by_ids([j])[0].data_hash,)
    ).fetchone()
    store.close()
    damaged = store_path / "segments" / segment
    damaged.write_bytes(damaged.read_bytes()[:1500])
    with Store.open(store_path, read_only=True) as again:
        report = again.verify_integrity()
        assert not report["ok"]
        assert all("\n" not in e for e in report["errors"])
        assert any(str(damaged) in e and "truncated" in e for e in report["errors"])
        assert any("'b' (owner 1, id 2)" in e for e in report["errors"])
        (lost,) = again.diagnose().series_lost
        assert (lost.id, lost.files) == (j, [str(damaged)])
        assert again.read_by_id(i).data.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_missing_array_location_is_an_integrity_error(store: Store) -> None:
    i = add(store, sts())
    store._catalog.execute("DELETE FROM arrays")
    with pytest.raises(IntegrityError, match=r"does not hold; run Store\.diagnose"):
        store.read_by_id(i)


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


# =========================================================================== reading by id
def test_read_by_ids_order_repeats_and_missing(store: Store) -> None:
    a = add(store, sts("a", np.zeros(2)))
    b = add(store, sts("b", np.ones(2)))
    assert [s.name for s in store.read_by_ids([b, a, b])] == ["b", "a", "b"]
    assert store.read_by_ids([]) == []
    with pytest.raises(NotFoundError, match=r"no series with id 99; list_metadata"):
        store.read_by_ids([a, 99])
    with pytest.raises(NotFoundError, match=r"id 100, 101, .*, 109 …"):
        store.read_by_ids(list(range(100, 120)))
    with pytest.raises(NotFoundError):
        store.read_by_id(99)
    # list_metadata_by_ids: order, repeats, and a missing id is an error (as in the reference)
    assert [m["name"] for m in store.list_metadata_by_ids([b, a, b])] == ["b", "a", "b"]
    with pytest.raises(NotFoundError):
        store.list_metadata_by_ids([a, 99])


@pytest.mark.parametrize("route", ["search", "scan"])
def test_read_by_ids_many_every_dtype_bit_exact(
    store: Store, route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read of many series (locations found by key search, or by one pass over the
    arrays table) gives back each series' own bytes: NaN payloads, -0.0, ±inf, integer
    extremes, every dtype; in the order asked, repeats included, each a writable copy."""
    from bitpatterns import grid_data

    from infrastore_sqlite.core.elements import DTYPE_NAMES
    from infrastore_sqlite.store import reading as reading_module

    monkeypatch.setattr(reading_module, "_SCAN_FROM", 1 if route == "scan" else 10**9)
    added: dict[int, tuple[str, np.ndarray]] = {}
    stamps = [T0 + k * H for k in (0, 2, 3, 7)]
    for seed, dtype in enumerate(DTYPE_NAMES):
        for copy in range(3):  # the third shares the first one's array
            data = grid_data(dtype, (), (4,), seed * 10 + copy % 2)
            ts = sts(f"{dtype}-{copy}", data, element_type=dtype)
            added[add(store, ts)] = ("SingleTimeSeries", data)
        data = grid_data(dtype, (), (4,), seed)
        irregular = NonSequentialTimeSeries(stamps, data, f"n{dtype}", element_type=dtype)
        added[add(store, irregular)] = ("NonSequentialTimeSeries", data)
    u64 = np.array([0, 1, 2**63, 2**64 - 1], dtype=np.uint64)
    added[add(store, sts("u64max", u64, element_type="u64"))] = ("SingleTimeSeries", u64)
    ids = list(added)
    order = [*reversed(ids), ids[0], ids[len(ids) // 2], ids[0]]
    got = store.read_by_ids(order)
    for i, g in zip(order, got, strict=True):
        kind, want = added[i]
        assert type(g).__name__ == kind
        data = g.data
        assert data.dtype == want.dtype and data.shape == want.shape
        assert data.tobytes() == want.tobytes(), i
        data[...] = 0  # a fresh writable copy: the series keeps its values
        assert g.data.tobytes() == want.tobytes()
    # An id no int64 holds is no series, named as such (not an overflow).
    with pytest.raises(NotFoundError, match=str(2**64)):
        store.read_by_ids([ids[0], 2**64])
    import gc

    assert gc.isenabled()  # the read pauses the collector, and gives it back on a refusal


def test_read_by_ids_takes_ids_in_any_integer_form_and_refuses_the_rest(store: Store) -> None:
    """Plain ints go to the catalog in one conversion; numpy integers, tuples and arrays
    give the same series; a bool, a float or a string is refused as a single read refuses
    it; an id no int64 holds is missing; an empty array reads back with no slot."""
    from infrastore_sqlite.errors import ParameterTypeError

    a = add(store, sts("a", np.arange(3.0)))
    b = add(store, sts("b", np.arange(3.0) + 1))
    e = add(store, sts("e", np.zeros(0)))
    want = [x.data.tolist() for x in store.read_by_ids([b, a, e])]
    assert want == [[1.0, 2.0, 3.0], [0.0, 1.0, 2.0], []]
    for ids in ((b, a, e), np.array([b, a, e]), [np.int64(b), a, np.int32(e)]):
        assert [x.data.tolist() for x in store.read_by_ids(ids)] == want
    for bad in (True, 1.0, "1"):
        with pytest.raises(ParameterTypeError, match="a series id is an int"):
            store.read_by_ids([a, bad])
    for missing in (2**63, -(2**63) - 1, 10**6):
        with pytest.raises(NotFoundError, match=str(missing)):
            store.read_by_ids([a, missing])
    assert store.read_by_ids([]) == []


def test_windows_and_ranges_through_the_store(store: Store) -> None:
    s = add(store, sts())
    d = add(store, Deterministic(T0, "PT1H", "PT2H", "PT3H", 4, np.arange(8.0).reshape(2, 4), "d"))
    got = store.read_by_id(s, start_time=T0 + 2 * H, len=3)
    assert got.data.tolist() == [2.0, 3.0, 4.0] and got.initial_timestamp == T0 + 2 * H
    got = store.read_by_id(d, start_time=T0 + 3 * H, count=2)
    assert got.data.tolist() == [[1.0, 2.0], [5.0, 6.0]] and got.count == 2
    both = store.read_by_ids([s, s], start_time=T0 + 8 * H)
    assert [x.data.tolist() for x in both] == [[8.0, 9.0], [8.0, 9.0]]
    with pytest.raises(InvalidParameterError, match="len applies to static"):
        store.read_by_ids([s, d], len=2)
    clipped = store.read_by_ids_range([s, d, s], (T0 + 3 * H, T0 + 5.5 * H))
    assert clipped[0].data.tolist() == [3.0, 4.0, 5.0]
    assert clipped[0].initial_timestamp == T0 + 3 * H
    assert clipped[1].count == 1 and clipped[1].initial_timestamp == T0 + 3 * H
    assert clipped[2].data.tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(InvalidParameterError, match="must align to a window boundary"):
        store.read_by_ids_range([s, d], (T0 + 1.5 * H, T0 + 4 * H))
    with pytest.raises(InvalidParameterError, match=r"'d' \(owner 1\).*resolves to window index 4"):
        store.read_by_ids_range([d], (T0 + 12 * H, T0 + 13 * H))
    # reads never change what is stored
    assert store.read_by_id(s).data.tolist() == list(range(10))


def test_iter_arrays_batches_reads(store: Store) -> None:
    ids = [add(store, sts(f"s{k}", np.full(100, float(k)))) for k in range(5)]
    ids.append(add(store, sts("dup", np.full(100, 0.0))))
    rows = store.rows_by_ids(ids)
    batches = list(store.iter_arrays(rows, batch_bytes=1000))
    # 800 bytes per array, so a batch holds one distinct array; "dup" repeats s0's array
    # after s0's batch was dropped, so it is read again in a batch of its own
    assert len(batches) == 6
    flat = [(r.name, float(a[0])) for batch in batches for r, a, _ in batch]
    assert flat == [("s0", 0.0), ("s1", 1.0), ("s2", 2.0), ("s3", 3.0), ("s4", 4.0), ("dup", 0.0)]


# =========================================================================== removal
def test_remove_by_ids_is_all_or_nothing(store: Store) -> None:
    a = add(store, sts("a"))
    b = add(store, sts("b"), owner_id=2)
    before = snapshot(store)
    with pytest.raises(NotFoundError, match="99"):
        store.remove_by_ids([a, 99])
    assert snapshot(store) == before
    with pytest.raises(
        InvalidParameterError, match=r"belongs to owner 2 .*not to the expected owner 1"
    ):
        store.remove_by_ids([a, b], owner_id=1, owner_category=C)
    assert snapshot(store) == before
    with pytest.raises(InvalidParameterError, match="owner_id and owner_category together"):
        store.remove_by_ids([a], owner_id=1)
    assert store.remove_by_ids([a, a], owner_id=1, owner_category="Component") == 1
    assert store.remove_by_ids([]) == 0
    assert [m["id"] for m in store.list_metadata()] == [b]


def test_remove_by_filter(store: Store) -> None:
    add(store, sts("a"), features={"scen": "hi"})
    add(store, sts("b"), features={"scen": "lo"})
    add(store, sts("c"), owner_id=2)
    assert store.remove_by_filter(features={"scen": "hi"}) == 1
    assert store.remove_by_filter(name="nothing") == 0
    assert store.remove_by_filter(features={"name": "reserved, so matches nothing"}) == 0
    assert store.remove_by_filter(owner_id=2) == 1
    assert [m["name"] for m in store.list_metadata()] == ["b"]
    assert store.remove_by_filter() == 1
    assert store.is_empty()


# =========================================================================== transform
def test_transform_single_time_series(store: Store) -> None:
    s = add(store, sts("load", units="MW"), features={"k": 1})
    add(store, sts("other", np.arange(10.0) * 2), owner_id=2)
    assert store.transform_single_time_series("PT3H", "PT2H") == 2
    assert store.num_distinct_arrays() == 2  # no array data written
    dst = store.list_metadata(time_series_type=DST)
    assert [m["name"] for m in dst] == ["load", "other"]
    meta = dst[0]
    src = store.get_metadata_by_id(s)
    for key in (
        "owner_id",
        "owner_type",
        "name",
        "data_hash",
        "initial_timestamp",
        "length",
        "resolution",
        "element_type",
        "element_shape",
        "features",
        "units",
        "time_reference",
    ):
        assert meta[key] == src[key], key
    assert (meta["horizon"], meta["interval"], meta["count"]) == ("PT3H", "PT2H", 4)
    view = store.read_by_id(meta["id"])
    assert type(view) is Deterministic  # a DST reads as a Deterministic
    np.testing.assert_array_equal(view.data, [[0, 2, 4, 6], [1, 3, 5, 7], [2, 4, 6, 8]])
    assert view.count == 4 and view.horizon == "PT3H"
    # windows of the view
    part = store.read_by_id(meta["id"], start_time=T0 + 2 * H, count=2)
    np.testing.assert_array_equal(part.data, [[2, 4], [3, 5], [4, 6]])
    # a query for Deterministic also matches DST, one for DST only DST
    assert len(store.list_metadata(time_series_type=TimeSeriesType.Deterministic)) == 2
    # idempotent
    assert store.transform_single_time_series("PT3H", "PT2H") == 0
    # another interval is another DST
    assert store.transform_single_time_series("PT2H", "PT1H") == 2
    assert len(store.list_metadata(time_series_type=DST)) == 4


def test_transform_whole_series_window(store: Store) -> None:
    add(store, sts())
    assert store.transform_single_time_series("PT10H", "PT0S") == 1
    m = store.list_metadata(time_series_type=DST)[0]
    assert (m["interval"], m["count"]) == ("PT0S", 1)
    np.testing.assert_array_equal(store.read_by_id(m["id"]).data[:, 0], np.arange(10.0))


@pytest.mark.parametrize(
    ("horizon", "interval", "exc", "message"),
    [
        ("PT2H", "PT3H", InvalidParameterError, "which would leave gaps"),
        ("PT11H", "PT1H", InvalidParameterError, "horizon PT11H is longer than"),
        ("PT90M", "PT1H", InvalidParameterError, "not a whole multiple"),
        ("PT3H", "PT0S", InvalidParameterError, "only allowed when the horizon spans"),
        ("PT3H", "PT90M", InvalidParameterError, "not a whole multiple"),
        ("P1M", "P1M", InvalidParameterError, "different kinds of period"),
        ("3h", "PT1H", InvalidParameterError, "did you mean 'PT3H'"),
    ],
)
def test_transform_refusals_write_nothing(store: Store, horizon, interval, exc, message) -> None:
    add(store, sts("a"))
    add(store, sts("b"), owner_id=2)
    before = snapshot(store)
    with pytest.raises(exc, match=message):
        store.transform_single_time_series(horizon, interval)
    assert snapshot(store) == before


def test_transform_needs_one_grid_per_resolution(store: Store) -> None:
    add(store, sts("a"))
    add(store, sts("b", np.arange(5.0)))
    add(store, sts("c", res="PT30M"))
    with pytest.raises(IntegrityError, match="more than one \\(initial_timestamp, length\\) pair"):
        store.transform_single_time_series("PT2H", "PT1H")
    assert store.transform_single_time_series("PT1H", "PT1H", resolution="PT30M") == 1
    assert store.transform_single_time_series("PT1H", "PT1H", owner_category=SA) == 0


def test_transform_is_all_or_nothing(store: Store) -> None:
    add(store, sts("a"))
    add(store, sts("b", res="PT2H"))
    before = snapshot(store)
    with pytest.raises(InvalidParameterError, match="not a whole multiple"):
        store.transform_single_time_series("PT3H", "PT3H")  # fine for PT1H, not for PT2H
    assert snapshot(store) == before


def test_dst_rules(store: Store) -> None:
    s = add(store, sts("load"))
    store.transform_single_time_series("PT3H", "PT2H")
    dst = store.list_metadata(time_series_type=DST)[0]["id"]
    before = snapshot(store)
    with pytest.raises(InvalidParameterError, match=r"with interval PT2H and another horizon"):
        store.transform_single_time_series("PT4H", "PT2H")
    with pytest.raises(InvalidParameterError, match="cannot sit beside it"):
        add(store, Deterministic(T0, "PT1H", "PT2H", "PT5H", 2, np.zeros((2, 2)), "load"))
    with pytest.raises(InvalidParameterError, match="backs the DeterministicSingleTimeSeries"):
        store.remove_by_ids([s])
    with pytest.raises(InvalidParameterError, match="backs the DeterministicSingleTimeSeries"):
        store.remove_by_filter(time_series_type=TimeSeriesType.SingleTimeSeries)
    assert snapshot(store) == before
    assert store.remove_by_ids([s, dst]) == 2
    assert store.num_distinct_arrays() == 0
    # and the other way round: a Deterministic blocks the view
    add(store, sts("load"))
    add(store, Deterministic(T0, "PT1H", "PT2H", "PT5H", 2, np.zeros((2, 2)), "load"))
    with pytest.raises(InvalidParameterError, match="cannot sit beside it"):
        store.transform_single_time_series("PT3H", "PT2H")
    assert len(store.list_metadata(time_series_type=DST)) == 0


@pytest.mark.parametrize(
    ("start", "horizon", "interval", "ok"),
    [
        (datetime(2024, 1, 31, tzinfo=UTC), "P2M", "P1M", False),  # window 1 from Feb 29
        (datetime(2024, 1, 31, tzinfo=UTC), "P2M", "P2M", True),  # Mar 31 + 1 month is Apr 30
        (datetime(2024, 1, 31, tzinfo=UTC), "P4M", "P1M", True),  # one window only
        (datetime(2024, 1, 28, tzinfo=UTC), "P2M", "P1M", True),
        (datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), "P2M", "P1M", False),
    ],
)
def test_dst_on_a_clamped_calendar_grid(store: Store, start, horizon, interval, ok) -> None:
    add(store, sts("m", np.arange(4.0), start=start, res="P1M"))
    if not ok:
        with pytest.raises(InvalidParameterError, match="shorter months clamp"):
            store.transform_single_time_series(horizon, interval)
        assert store.list_metadata(time_series_type=DST) == []
        return
    assert store.transform_single_time_series(horizon, interval) == 1
    view = store.read_by_id(store.list_metadata(time_series_type=DST)[0]["id"])
    source = store.read_by_id(1)
    stamps = dict(zip(source.timestamps, source.data, strict=True))
    months = int(interval[1:-1])
    for j in range(view.count):
        issue = source.timestamps[j * months]
        for h in range(view.steps):
            # every value of the view sits at the source's own timestamp for it
            when = source.timestamps[j * months + h]
            assert view.data[h, j] == stamps[when]
            assert when == (SingleTimeSeries(issue, "P1M", np.zeros(h + 1), "t").timestamps[h])


def test_dst_of_composite_and_shaped_sources(store: Store) -> None:
    pw = np.array(
        [[1, 5, 6, 0, 0, 0, 0], [2, 1, 2, 3, 4, 0, 0], [0] * 7, [1, 7, 7, 0, 0, 0, 0]], float
    )
    add(store, sts("pw", pw, element_type="piecewise_linear"))  # over-padded: stored at width 5
    shaped = np.arange(24, dtype=np.int16).reshape(4, 3, 2)
    add(store, sts("m", shaped))
    assert store.transform_single_time_series("PT2H", "PT1H") == 2
    views = {
        m["name"]: store.read_by_id(m["id"]) for m in store.list_metadata(time_series_type=DST)
    }
    assert views["pw"].data.shape == (2, 3, 7)
    np.testing.assert_array_equal(views["pw"].data[:, 1], pw[1:3])
    assert views["m"].data.dtype == np.int16
    np.testing.assert_array_equal(views["m"].data[1, 2], shaped[3])


# =========================================================================== filters
@pytest.fixture
def filled(store: Store) -> Store:
    add(
        store,
        sts("load", component_field="max_active_power"),
        features={"year": 2030, "scen": "hi"},
    )
    add(store, sts("load"), features={"year": 2030, "scen": "lo"})
    add(store, sts("load"), features={"year": 2030.0})
    add(store, sts("load"))
    add(store, sts("load", res="PT30M"), owner_id=2, owner_type="Load")
    add(store, sts("wall", start=datetime(2024, 1, 1)), owner_id=3, owner_type="Attr", category=SA)
    add(store, sts("late", np.arange(5.0), start=T0 + H), owner_id=3, owner_type="Attr")
    add(store, NonSequentialTimeSeries([T0, T0 + 2 * H], np.arange(2.0), "ns"), owner_id=4)
    add(
        store,
        Deterministic(T0, "PT1H", "PT2H", "PT3H", 4, np.zeros((2, 4)), "det"),
        features={"year": 2030},
    )
    add(store, Probabilistic(T0, "PT1H", "PT2H", "PT3H", 4, [0.5], np.zeros((1, 2, 4)), "prob"))
    store.transform_single_time_series("PT2H", "PT1H", resolution="PT30M")
    return store


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        ({"owner_id": 1}, [1, 2, 3, 4, 9, 10]),
        ({"owner_id": np.int64(3)}, [6, 7]),
        ({"owner_category": SA}, [6]),
        ({"owner_category": "Component", "owner_id": 3}, [7]),
        ({"owner_type": "Attr"}, [6, 7]),
        ({"time_series_type": TimeSeriesType.Deterministic}, [9, 11]),
        ({"time_series_type": DST}, [11]),
        ({"time_series_type": "probabilistic"}, [10]),
        ({"name": "load"}, [1, 2, 3, 4, 5, 11]),
        ({"name_glob": "*a*"}, [1, 2, 3, 4, 5, 6, 7, 11]),
        ({"name_glob": "L*"}, []),  # GLOB is case-sensitive
        ({"name": "load", "name_glob": "d*"}, []),
        ({"component_field": "max_active_power"}, [1]),
        ({"zoneless": True}, [6]),
        ({"zoneless": False}, [1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
        ({"resolution": "PT60M"}, [1, 2, 3, 4, 6, 7, 9, 10]),
        ({"resolution": timedelta(minutes=30)}, [5, 11]),
        ({"interval": "PT3H"}, [9, 10]),
        ({"interval": timedelta(hours=1)}, [11]),
        ({"initial_timestamp": T0 + H}, [7]),
        ({"initial_timestamp": T0}, [1, 2, 3, 4, 5, 6, 9, 10, 11]),
        ({"length": 5}, [7]),
        ({"features": {"year": 2030}}, [1, 2, 9]),
        ({"features": {"year": 2030.0}}, [3]),  # a float feature is not the int
        ({"features": {"year": 2030, "scen": "hi"}}, [1]),
        ({"features": {"year": 2030}, "features_exact": True}, [9]),
        ({"features": {}, "features_exact": True}, [4, 5, 6, 7, 8, 10, 11]),
        ({"features_exact": True}, [4, 5, 6, 7, 8, 10, 11]),
        ({"features": {}}, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        ({"features": {"name": "x"}}, []),  # unstorable feature: matches nothing
        ({"features": {"x": float("nan")}, "features_exact": True}, []),
        ({"features": {"x": -0.0}}, []),
        ({"owner_id": None, "name": None}, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
    ],
)
def test_list_metadata_filters(filled: Store, filters: dict, expected: list) -> None:
    assert [m["id"] for m in filled.list_metadata(**filters)] == expected


@pytest.mark.parametrize(
    ("filters", "exc", "message"),
    [
        ({"nme": "x"}, TypeError, "unknown filter keyword"),
        ({"owner_id": "1"}, InvalidParameterError, "owner_id must be an integer"),
        ({"time_series_type": "weekly"}, InvalidParameterError, "unknown time_series_type"),
        ({"owner_category": "Comp"}, InvalidParameterError, "unknown owner_category"),
        ({"resolution": "1h"}, InvalidParameterError, "did you mean 'PT1H'"),
        ({"initial_timestamp": "2024-01-01"}, InvalidParameterError, "expected a datetime"),
        ({"features": {"x": None}}, InvalidParameterError, "is None"),
        ({"features": {"name": None}}, InvalidParameterError, "is None"),
        ({"features": {"x": float("nan"), "y": [1]}}, InvalidParameterError, "type list"),
        ({"features": {1: 1}}, InvalidParameterError, "not a str"),
        ({"features": [("year", 2030)]}, InvalidParameterError, "must be a mapping"),
    ],
)
def test_filter_refusals(filled: Store, filters: dict, exc: type, message: str) -> None:
    with pytest.raises(exc, match=message):
        filled.list_metadata(**filters)


def test_a_failed_background_array_write_rolls_the_catalog_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infrastore_sqlite.errors import StorageError
    from infrastore_sqlite.store.arrays import ArrayFile

    kept = add(store, sts("kept", np.arange(3.0)))
    real = ArrayFile._write_now

    def failing(self: ArrayFile, *args: Any) -> None:
        raise StorageError("writing pool f64__3 failed: disk full (simulated)")

    monkeypatch.setattr(ArrayFile, "_write_now", failing)
    with pytest.raises(StorageError, match="disk full"):
        store.add_time_series_bulk(
            [
                {
                    "owner_id": 2,
                    "owner_type": "Gen",
                    "time_series": sts("lost", np.arange(3.0) + 1),
                },
                {
                    "owner_id": 3,
                    "owner_type": "Gen",
                    "time_series": sts("lost", np.arange(3.0) + 2),
                },
            ]
        )
    assert [r["name"] for r in store.list_metadata()] == ["kept"]
    assert store._catalog.scalar("SELECT count(*) FROM arrays") == 1
    monkeypatch.setattr(ArrayFile, "_write_now", real)
    again = add(store, sts("lost", np.arange(3.0) + 1), owner_id=2)
    assert store.read_by_id(again).data.tolist() == [1.0, 2.0, 3.0]
    assert store.read_by_id(kept).data.tolist() == [0.0, 1.0, 2.0]


def test_features_hash_of_caches_by_exact_type_and_bits() -> None:
    """The bulk add's feature-hash cache gives features_hash's answer for every map,
    however many share a key by ==: 1, 1.0 and True, 0.0 and -0.0 stay apart."""
    from infrastore_sqlite.core.hashing import features_hash
    from infrastore_sqlite.store.prepare import _features_hash_of

    maps = [
        {"a": 1},
        {"a": 1.0},
        {"a": True},
        {"a": 0.0},
        {"a": -0.0},
        {"a": "1"},
        {"a": 1, "b": "x"},
        {"b": "x", "a": 1},
        {"a": np.int64(1)},
        {"a": float("inf")},
        {},
    ]
    for _ in range(2):  # the second pass is answered from the cache
        assert [_features_hash_of(m) for m in maps] == [features_hash(m) for m in maps]
    assert _features_hash_of({"a": 0.0}) != _features_hash_of({"a": -0.0})


def test_series_tally_counts_what_the_rows_hold(tmp_path: Path) -> None:
    """``series_tally`` (what ``info`` prints) agrees with counting the catalog rows."""
    from tests.varied_store import build_varied, new_store

    s = new_store(tmp_path / "varied.h5")
    try:
        build_varied(s)
        rows = s.select_rows()
        refs: dict[str, int] = {}
        for r in rows:
            refs[r.time_reference or "unspecified"] = (
                refs.get(r.time_reference or "unspecified", 0) + 1
            )
        assert len(refs) > 1  # the store mixes references: the grouping is exercised
        owners = {(r.owner_category, r.owner_id) for r in rows}
        assert len(owners) > 1
        assert s.series_tally() == {
            "series": len(rows),
            "owners": len(owners),
            "time_references": dict(sorted(refs.items())),
        }
    finally:
        s.close()


def test_series_tally_of_an_empty_store(store: Store) -> None:
    assert store.series_tally() == {"series": 0, "owners": 0, "time_references": {}}
