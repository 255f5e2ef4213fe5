"""End-to-end tests of ``Store.export_parquet``, read back with pyarrow (not our code).

The varied store of ``test_export_sqlite`` (every partition kind, value type and time
reference) is exported once both ways; the Parquet files are checked against the spec
(names, columns, Arrow types, nullability, footer, encodings, row groups, sort order),
against the SQLite export of the same selection (partitions, suffixes, ids, hashes,
coordinates) and against the store, value bit for bit. Then the values SQLite cannot
hold, time_range, dry_run, the refusals and atomicity.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from catalog_rows import recheck_rows
from hypothesis import given, settings
from hypothesis import strategies as st
from varied_store import (
    FORECASTS,
    LANES,
    SERIES_TAIL,
    T0,
    add,
    build_varied,
    new_store,
    sts,
)

import infrastore_sqlite
from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    Probabilistic,
    Scenarios,
    Store,
)
from infrastore_sqlite.errors import (
    InvalidParameterError,
    MissingDependencyError,
    StorageError,
)

PARQUET_KEYS = [
    "values_file",
    "series_file",
    "arrays_file",
    "time_series_type",
    "value_type",
    "time_reference",
    "arrays",
    "series",
    "rows",
]
ARROW_DTYPES = {
    "f64": pa.float64(),
    "f32": pa.float32(),
    "i64": pa.int64(),
    "i32": pa.int32(),
    "u64": pa.uint64(),
    "bool": pa.bool_(),
    "i16": pa.int16(),
    "i8": pa.int8(),
    "u32": pa.uint32(),
    "u16": pa.uint16(),
    "u8": pa.uint8(),
}
ZONES = {"utc": "UTC", "unspecified": "UTC", "zoneless": None}
H = timedelta(hours=1)


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("pq_varied")
    store = new_store(d / "s.h5")
    build_varied(store)
    sqlite_result = store.export_sqlite(d / "e.sqlite", include_derived=True)
    result = store.export_parquet(d / "out", include_derived=True)
    yield store, d, result, sqlite_result
    store.close()


def stem_of(entry: dict[str, Any]) -> str:
    return Path(entry["values_file"]).name[: -len(".values.parquet")]


def leaf(type_: pa.DataType) -> tuple[pa.DataType, list[int]]:
    sizes = []
    while pa.types.is_fixed_size_list(type_):
        sizes.append(type_.list_size)
        type_ = type_.value_type
    return type_, sizes


def value_matrix(column: pa.ChunkedArray) -> np.ndarray:
    """The value column as numpy [rows, *cell shape], straight from Arrow's leaf buffer."""
    arr = column.combine_chunks()
    _base, sizes = leaf(arr.type)
    n = len(arr)
    while pa.types.is_fixed_size_list(arr.type):
        arr = arr.flatten()
    flat = arr.to_numpy(zero_copy_only=False)
    return flat.reshape(n, *sizes)


def expected_rows(series: Any, tst: str) -> np.ndarray:
    """A store series' values in the layout's row order (window-major, then lanes)."""
    data = np.asarray(series.data)
    if tst in ("Probabilistic", "Scenarios"):
        rows = np.transpose(data, (2, 1, 0, *range(3, data.ndim)))
        return rows.reshape(-1, *data.shape[3:])
    if tst in FORECASTS:
        return np.swapaxes(data, 0, 1).reshape(-1, *data.shape[2:])
    return data


def fit(a: np.ndarray, width: int) -> np.ndarray:
    """Composite rows at ``width``: zero padding cut or added at the end."""
    if a.shape[-1] >= width:
        assert not a[..., width:].any()
        return a[..., :width]
    return np.concatenate([a, np.zeros((*a.shape[:-1], width - a.shape[-1]))], axis=-1)


def bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "f":
        return a.view(f"u{a.dtype.itemsize}")
    return a


# ---------------------------------------------------------------------- names and partitions


def test_same_partitions_names_and_counts_as_the_sqlite_export(varied) -> None:
    _, d, result, sqlite_result = varied
    assert all(list(e) == PARQUET_KEYS for e in result)
    assert len(result) == len(sqlite_result)
    for e, s in zip(result, sqlite_result, strict=True):
        for k in PARQUET_KEYS[3:]:
            assert e[k] == s[k]
        stem = stem_of(e)
        assert s["values_table"] == stem.replace(".", "_") + "_values"
        for role in ("values", "series", "arrays"):
            assert e[f"{role}_file"] == os.path.join(str(d / "out"), f"{stem}.{role}.parquet")
    stems = [stem_of(e) for e in result]
    assert "SingleTimeSeries.f64.offset_minus07_00" in stems
    assert "SingleTimeSeries.f64.America_Denver" in stems
    assert "SingleTimeSeries.tuple3_f64.utc" in stems
    assert "SingleTimeSeries.f64_2x3.utc" in stems
    assert "PersistentTimeSeries.i32_2.utc" in stems
    files = sorted(os.listdir(d / "out"))
    assert files == sorted(
        f"{s}.{r}.parquet" for s in stems for r in ("values", "series", "arrays")
    )


def test_collision_suffix_is_the_sqlite_one(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    for i, zone in enumerate(["Etc/GMT+1", "Etc/GMT-1"]):
        start = datetime(2024, 1, 1, tzinfo=UTC).astimezone(__import__("zoneinfo").ZoneInfo(zone))
        add(store, sts(f"z{i}", [1.0, 2.0], start=start))
    sq = store.export_sqlite(tmp_path / "e.sqlite")
    res = store.export_parquet(tmp_path / "out")
    assert [s["values_table"] for s in sq] == [
        "SingleTimeSeries_f64_Etc_GMT_1_values",
        "SingleTimeSeries_f64_Etc_GMT_1_2_values",
    ]
    assert [stem_of(e) for e in res] == [
        "SingleTimeSeries.f64.Etc_GMT_1",
        "SingleTimeSeries.f64.Etc_GMT_1_2",
    ]
    # The footer and series rows carry the exact key, not the file name.
    for e, zone in zip(res, ["Etc/GMT+1", "Etc/GMT-1"], strict=True):
        meta = pq.read_schema(e["values_file"]).metadata
        assert meta[b"time_reference"].decode() == zone
        assert pq.read_table(e["series_file"])["time_reference"].to_pylist() == [zone]
    store.close()


# ---------------------------------------------------------------------- schemas


def test_columns_types_and_nullability(varied) -> None:
    _, _, result, _ = varied
    kinds = set()
    for e in result:
        tst, vtype, ref = e["time_series_type"], e["value_type"], e["time_reference"]
        kinds.add(tst)
        zone = ZONES.get(ref, ref)
        ts = pa.timestamp("ms", tz=zone)
        values = pq.read_schema(e["values_file"])
        keys = []
        if tst in FORECASTS:
            keys.append(("issue_time", ts))
        if tst == "Probabilistic":
            keys.append(("percentile", pa.float64()))
        if tst == "Scenarios":
            keys.append(("scenario", pa.int64()))
        expected = [("array_id", pa.int64()), ("timestamp", ts), *keys]
        assert [(f.name, f.type) for f in values][:-1] == expected
        value = values.field("value")
        base, sizes = leaf(value.type)
        dtype = vtype.split("_")[0] if not vtype.startswith("tuple") else vtype.split("_")[1]
        if vtype in ("linear_function", "quadratic_function", "piecewise_linear", "piecewise_step"):
            dtype = "f64"
        assert base == ARROW_DTYPES[dtype], e["values_file"]
        shape = json.loads(values.metadata[b"element_shape"])
        assert sizes == shape
        if vtype.startswith("tuple"):
            assert sizes == [int(vtype[5 : vtype.index("_")])]
        elif "_" in vtype and vtype.split("_")[1][0].isdigit():
            assert sizes == [int(x) for x in vtype.split("_")[1].split("x")]
        # Every field and every list child is non-nullable (Parquet REQUIRED).
        t = value.type
        while pa.types.is_fixed_size_list(t):
            assert t.value_field.name == "element" and not t.value_field.nullable
            t = t.value_type
        series = pq.read_schema(e["series_file"])
        arrays = pq.read_schema(e["arrays_file"])
        for schema in (values, series, arrays):
            assert not any(f.nullable for f in schema)
        assert [(f.name, f.type) for f in arrays] == [
            ("id", pa.int64()),
            ("data_hash", pa.string()),
            ("time_axis", pa.string()),
        ]
        grid = {
            "SingleTimeSeries": [
                ("initial_timestamp", ts),
                ("resolution", pa.string()),
                ("length", pa.int64()),
            ],
            "NonSequentialTimeSeries": [],
            "PersistentTimeSeries": [],
        }.get(
            tst,
            [
                ("initial_timestamp", ts),
                ("resolution", pa.string()),
                ("interval", pa.string()),
                ("horizon", pa.string()),
                ("count", pa.int64()),
            ],
        )
        tail = [c for c, *_ in SERIES_TAIL]
        assert [(f.name, f.type) for f in series] == [
            ("array_id", pa.int64()),
            ("id", pa.int64()),
            ("owner_id", pa.int64()),
            ("owner_type", pa.string()),
            ("owner_category", pa.string()),
            ("time_series_type", pa.string()),
            ("name", pa.string()),
            *grid,
            *((c, pa.string()) for c in tail),
        ]
    assert kinds == {
        "SingleTimeSeries",
        "NonSequentialTimeSeries",
        "PersistentTimeSeries",
        *FORECASTS,
    }


def test_zones_and_composite_widths(varied) -> None:
    _, _, result, _ = varied
    by = {(e["time_series_type"], e["value_type"], e["time_reference"]): e for e in result}

    def schema(key: tuple[str, str, str]) -> pa.Schema:
        return pq.read_schema(by[key]["values_file"])

    assert schema(("SingleTimeSeries", "f64", "-07:00")).field("timestamp").type.tz == "-07:00"
    denver = schema(("SingleTimeSeries", "f64", "America/Denver")).field("timestamp").type
    assert denver.tz == "America/Denver"
    assert schema(("SingleTimeSeries", "f64", "zoneless")).field("timestamp").type.tz is None
    widths = {
        "linear_function": 2,
        "quadratic_function": 3,
        "piecewise_linear": 5,  # the over-padded width-9 array shrinks to its minimal 5
        "piecewise_step": 4,
    }
    for kind, w in widths.items():
        s = schema(("SingleTimeSeries", kind, "utc"))
        assert s.field("value").type == pa.list_(pa.field("element", pa.float64(), False), w)
        assert s.metadata[b"element_shape"] == f"[{w}]".encode()


def test_footer_keys_agree_across_the_three_files(varied) -> None:
    _, _, result, _ = varied
    for e in result:
        metas = {}
        for role in ("values", "series", "arrays"):
            meta = {
                k.decode(): v.decode()
                for k, v in pq.read_schema(e[f"{role}_file"]).metadata.items()
            }
            assert list(meta) == [
                "infrastore:format",
                "infrastore:role",
                "time_series_type",
                "element_type",
                "element_shape",
                "time_reference",
                "infrastore:writer",
            ]
            assert meta["infrastore:role"] == role
            assert meta["infrastore:format"] == "normalized_v2"
            assert meta["infrastore:writer"] == f"infrastore-sqlite {infrastore_sqlite.__version__}"
            assert meta["time_series_type"] == e["time_series_type"]
            assert meta["time_reference"] == e["time_reference"]
            del meta["infrastore:role"]
            metas[role] = meta
        assert metas["values"] == metas["series"] == metas["arrays"]
        # The series file's element_shape is the cell shape of this file too.
        shapes = set(pq.read_table(e["series_file"])["element_shape"].to_pylist())
        assert shapes == {metas["values"]["element_shape"]}
        # And the catalog element type, exactly.
        types = set(pq.read_table(e["series_file"])["element_type"].to_pylist())
        assert types == {metas["values"]["element_type"]}


def test_encodings_statistics_and_sort_order(varied) -> None:
    _, _, result, _ = varied
    for e in result:
        for role in ("values", "series", "arrays"):
            f = pq.ParquetFile(e[f"{role}_file"])
            md = f.metadata
            if role != "values":
                assert md.num_row_groups == 1
            rg = md.row_group(0)
            for i in range(rg.num_columns):
                c = rg.column(i)
                path = c.path_in_schema
                top = path.split(".")[0]
                assert c.compression == "ZSTD", (e[f"{role}_file"], path)
                assert c.statistics is not None and c.statistics.has_min_max
                physical = c.physical_type
                field = f.schema_arrow.field(top)
                base, _ = leaf(field.type)
                if pa.types.is_string(base) or top in ("array_id", "percentile", "scenario"):
                    assert "RLE_DICTIONARY" in c.encodings, path
                elif pa.types.is_timestamp(base):
                    assert "DELTA_BINARY_PACKED" in c.encodings, path
                    assert "RLE_DICTIONARY" not in c.encodings
                elif top == "value" and pa.types.is_floating(base):
                    assert "BYTE_STREAM_SPLIT" in c.encodings, path
                elif top == "value" and pa.types.is_integer(base):
                    assert "RLE_DICTIONARY" in c.encodings, (path, physical)
            names = [fd.name for fd in f.schema_arrow]
            order = {
                "values": ["array_id", "issue_time", "timestamp", "percentile", "scenario"],
                "series": ["array_id", "id"],
                "arrays": ["id"],
            }[role]
            assert [names[s.column_index] for s in rg.sorting_columns] == [
                c for c in order if c in names
            ]
            assert not any(s.descending for s in rg.sorting_columns)


def test_rows_are_in_the_declared_order(varied) -> None:
    _, _, result, _ = varied
    for e in result:
        t = pq.read_table(e["values_file"])
        cols = [
            c
            for c in ("array_id", "issue_time", "timestamp", "percentile", "scenario")
            if c in t.column_names
        ]
        keys = list(
            zip(
                *(
                    t[c].cast(pa.int64()) if c in ("timestamp", "issue_time") else t[c]
                    for c in cols
                ),
                strict=False,
            )
        )
        py = [tuple(x.as_py() for x in k) for k in keys]
        assert py == sorted(py), e["values_file"]
        s = pq.read_table(e["series_file"])
        pairs = list(zip(s["array_id"].to_pylist(), s["id"].to_pylist(), strict=False))
        assert pairs == sorted(pairs)
        a = pq.read_table(e["arrays_file"])
        assert a["id"].to_pylist() == list(range(1, len(a) + 1))
        keys_ = list(zip(a["data_hash"].to_pylist(), a["time_axis"].to_pylist(), strict=False))
        assert keys_ == sorted(keys_, key=lambda k: (k[0].encode(), k[1].encode()))


# ---------------------------------------------------------------------- against -f sqlite and the store


def assert_like_sqlite(result: list[dict], db: Path, sqlite_result: list[dict]) -> None:
    """Ids, hashes, series rows and every coordinate equal the SQLite export's."""
    con = sqlite3.connect(db)
    try:
        for e, s in zip(result, sqlite_result, strict=True):
            arrays = pq.read_table(e["arrays_file"])
            rows = con.execute(
                f'SELECT id, data_hash, time_axis FROM "{s["arrays_table"]}" ORDER BY id'
            ).fetchall()
            assert (
                list(
                    zip(
                        *(arrays[c].to_pylist() for c in ("id", "data_hash", "time_axis")),
                        strict=False,
                    )
                )
                == rows
            )
            series = pq.read_table(e["series_file"]).to_pylist()
            sq = [
                dict(zip([c[0] for c in cur.description], r, strict=False))
                for cur in [
                    con.execute(f'SELECT * FROM "{s["series_table"]}" ORDER BY array_id, id')
                ]
                for r in cur.fetchall()
            ]
            assert len(series) == len(sq)
            for p, q in zip(series, sq, strict=True):
                for k, v in q.items():
                    if k == "initial_timestamp":
                        assert int(p[k].timestamp() * 1000) == v
                    elif k != "element_shape":  # the cell shape here, the catalog's E there
                        assert p[k] == v, k
            t = pq.read_table(e["values_file"])
            tst = e["time_series_type"]
            lane = LANES.get(tst)
            cols = (
                ["array_id", "timestamp"]
                + (["issue_time"] if tst in FORECASTS else [])
                + ([lane] if lane else [])
            )
            order = (
                "array_id, "
                + ("issue_time, " if tst in FORECASTS else "")
                + "timestamp"
                + (f", {lane}" if lane else "")
            )
            want = con.execute(
                f'SELECT {", ".join(cols)} FROM "{s["values_table"]}" ORDER BY {order}'
            ).fetchall()
            got = list(
                zip(
                    *(
                        t[c].cast(pa.int64()).to_pylist()
                        if c in ("timestamp", "issue_time")
                        else t[c].to_pylist()
                        for c in cols
                    ),
                    strict=False,
                )
            )
            assert got == want, e["values_file"]
    finally:
        con.close()


def test_ids_hashes_and_coordinates_equal_the_sqlite_export(varied) -> None:
    _, d, result, sqlite_result = varied
    assert_like_sqlite(result, d / "e.sqlite", sqlite_result)


def assert_values_match_store(store: Store, result: list[dict]) -> None:
    """Every array's rows, bit for bit, against its series read back from the store."""
    for e in result:
        tst = e["time_series_type"]
        values = pq.read_table(e["values_file"])
        series = pq.read_table(e["series_file"])
        width = json.loads(pq.read_schema(e["values_file"]).metadata[b"element_shape"])
        composite = e["value_type"] in (
            "linear_function",
            "quadratic_function",
            "piecewise_linear",
            "piecewise_step",
        )
        for array_id, sid in zip(
            series["array_id"].to_pylist(), series["id"].to_pylist(), strict=False
        ):
            rows = values.filter(pc.equal(values["array_id"], array_id))
            got = value_matrix(rows["value"])
            want = expected_rows(store.read_by_id(sid), tst)
            if composite:
                want = fit(want, width[0])
            assert got.dtype == want.dtype
            assert got.shape == want.shape, e["values_file"]
            assert np.array_equal(bits(got), bits(want)), (e["values_file"], sid)


def test_every_value_bit_for_bit_against_the_store(varied) -> None:
    store, _, result, _ = varied
    assert_values_match_store(store, result)


def test_values_sqlite_cannot_hold_are_written_exactly(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    payload = np.array([0x7FF8_0000_0000_0001, 0xFFF0_0000_0000_00AB], dtype=np.uint64).view(
        np.float64
    )
    f64 = np.array([-0.0, np.inf, -np.inf, payload[0], payload[1], 0.0])
    add(store, sts("special", f64))
    f32 = np.array([0x7FC0_0001, 0x8000_0000], dtype=np.uint32).view(np.float32)
    add(store, sts("special32", f32))
    u64 = np.array([2**64 - 1, 2**63, 0], dtype=np.uint64)
    add(store, sts("big", u64))
    with pytest.raises(InvalidParameterError):
        store.export_sqlite(tmp_path / "e.sqlite")  # the SQLite-only refusals
    res = store.export_parquet(tmp_path / "out")
    by = {e["value_type"]: e for e in res}
    got = pq.read_table(by["f64"]["values_file"])["value"].to_numpy()
    assert np.array_equal(got.view(np.uint64), f64.view(np.uint64))
    got32 = pq.read_table(by["f32"]["values_file"])["value"].to_numpy()
    assert np.array_equal(got32.view(np.uint32), f32.view(np.uint32))
    assert pq.read_table(by["u64"]["values_file"])["value"].to_pylist() == [2**64 - 1, 2**63, 0]
    # NaN is a value, not a null.
    assert pq.read_table(by["f64"]["values_file"])["value"].null_count == 0
    store.close()


def test_the_reference_from_arrow_rebuilds_one_array(varied) -> None:
    import infrastore

    store, _, result, _ = varied
    picked = {
        ("SingleTimeSeries", "f64", "America/Denver"),
        ("SingleTimeSeries", "f64_2x3", "utc"),
        ("SingleTimeSeries", "tuple3_f64", "utc"),
        ("SingleTimeSeries", "u64", "utc"),
        ("SingleTimeSeries", "f64", "utc"),
    }
    seen = 0
    for e in result:
        if (e["time_series_type"], e["value_type"], e["time_reference"]) not in picked:
            continue
        values = pq.read_table(e["values_file"])
        series = pq.read_table(e["series_file"]).to_pylist()[0]
        one = values.filter(pc.equal(values["array_id"], series["array_id"]))
        rebuilt = infrastore.SingleTimeSeries.from_arrow(one, name=series["name"])
        ours = store.read_by_id(series["id"])
        assert rebuilt.element_type == series["element_type"]
        assert rebuilt.time_reference == e["time_reference"]
        assert rebuilt.resolution == series["resolution"]
        assert np.array_equal(bits(np.asarray(rebuilt.data)), bits(np.asarray(ours.data)))
        seen += 1
    assert seen == len(picked)


# ---------------------------------------------------------------------- row groups


@pytest.mark.parametrize("chunk_rows", [4096, 4], ids=["copied", "chunked"])
def test_row_groups_are_cut_at_array_boundaries(tmp_path: Path, monkeypatch, chunk_rows) -> None:
    from infrastore_sqlite.interchange.parquet import export as writer

    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 10)
    # Short arrays are copied into one buffer, long ones passed as chunks: both paths.
    monkeypatch.setattr(writer, "_CHUNK_ROWS", chunk_rows)
    store = new_store(tmp_path / "s.h5")
    # Arrays of 4, 4, 4 rows (12 > 10: the third starts a group), 25 (spans three
    # groups of 10, 10, 5), then 3 (a new group after the long one).
    for i, n in enumerate([4, 4, 4, 25, 3]):
        add(store, sts(f"s{i}", np.arange(n, dtype=np.float64) + 100 * i), owner=i + 1)
    (e,) = store.export_parquet(tmp_path / "out")
    f = pq.ParquetFile(e["values_file"])
    groups = []
    for g in range(f.metadata.num_row_groups):
        ids = f.read_row_group(g)["array_id"].to_pylist()
        groups.append(ids)
    lengths = [len(g) for g in groups]
    # array ids are ranks of the hash, not insertion order: check the boundaries instead.
    assert sum(lengths) == 40
    sizes = {}
    for g in groups:
        for a in set(g):
            sizes[a] = sizes.get(a, 0) + g.count(a)
    long_id = next(a for a, n in sizes.items() if n == 25)
    for g in groups:
        if long_id in g:
            assert set(g) == {long_id}, "a long array starts and ends groups of its own"
        else:
            assert len(g) <= 10
            # whole arrays only
            for a in set(g):
                assert g.count(a) == sizes[a]
    assert [len(g) for g in groups if long_id in g] == [10, 10, 5]
    assert all(g == sorted(g) for g in groups)
    assert [x for g in groups for x in g] == sorted(x for g in groups for x in g)
    t = pq.read_table(e["values_file"])
    got = sorted(t["value"].to_pylist())
    assert got == sorted(
        float(x + 100 * i) for i, n in enumerate([4, 4, 4, 25, 3]) for x in range(n)
    )
    # Statistics let a reader prune by array_id.
    stats = f.metadata.row_group(0).column(0).statistics
    assert stats.min == groups[0][0] and stats.max == groups[0][-1]
    store.close()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 9), min_size=1, max_size=30),
    st.integers(0, 2**40),
    st.data(),
)
def test_repeat_into_is_np_repeat(counts, first, data) -> None:
    from infrastore_sqlite.interchange.parquet.export import _repeat_into

    steps = data.draw(st.lists(st.integers(1, 2**20), min_size=len(counts), max_size=len(counts)))
    ids = first + np.cumsum(np.array(steps, dtype=np.int64))
    counts_arr = np.array(counts, dtype=np.int64)
    out = np.full(int(counts_arr.sum()) + 3, -7, dtype=np.int64)  # a reused buffer's tail
    _repeat_into(out[: counts_arr.sum()], ids, counts_arr)
    np.testing.assert_array_equal(out[: counts_arr.sum()], np.repeat(ids, counts_arr))
    assert (out[counts_arr.sum() :] == -7).all()  # nothing written past the rows


@pytest.mark.parametrize("base", [None, np.array([0, 10**12, -5], dtype=np.int64)])
def test_repeated_expands_into_a_buffer_as_into_a_new_array(base) -> None:
    from infrastore_sqlite.interchange.parquet.export import _Repeated

    pattern = np.array([0, 3_600_000, 7_200_000], dtype=np.int64)
    column = _Repeated(pattern, base, count=3) if base is None else _Repeated(pattern, base)
    buffer = np.full(column.rows + 2, -1, dtype=np.int64)
    got = column.expand(buffer[: column.rows])
    np.testing.assert_array_equal(got, column.expand())
    assert column.rows == 9 and (buffer[9:] == -1).all()


def test_hex_array_spells_each_hash_as_hex() -> None:
    from infrastore_sqlite.interchange.parquet.export import _hex_array

    hashes = [os.urandom(32) for _ in range(50)] + [bytes(32), b"\xff" * 32, b"\x0f\xf0" * 16]
    got = _hex_array(pa, hashes)
    got.validate(full=True)
    assert got.type == pa.string()
    assert got.to_pylist() == [h.hex() for h in hashes]
    assert _hex_array(pa, []).to_pylist() == []
    assert _hex_array(pa, [b"\x01", b"\x02\x03"]).to_pylist() == ["01", "0203"]
    # Lengths that differ but add up to a multiple of the count are still each their own.
    assert _hex_array(pa, [b"\x01", b"\x02\x03\x04"]).to_pylist() == ["01", "020304"]


@pytest.mark.parametrize("hex_slice", [1, 7, 1 << 16])
def test_hex_array_of_a_hash_block_in_slices(monkeypatch, hex_slice: int) -> None:
    """The plan's hashes as one block are spelled a slice at a time; any cut gives the
    texts of the hashes one by one."""
    from infrastore_sqlite.interchange.parquet import encode
    from infrastore_sqlite.interchange.plan import HashColumn

    monkeypatch.setattr(encode, "_HEX_SLICE", hex_slice)
    hashes = [os.urandom(32) for _ in range(20)] + [bytes(32), b"\xff" * 32]
    block = np.frombuffer(b"".join(hashes), dtype=np.uint8).reshape(-1, 32)
    got = encode._hex_array(pa, HashColumn(block))
    got.validate(full=True)
    assert got.type == pa.string()
    assert got.to_pylist() == [h.hex() for h in hashes]
    empty = HashColumn(np.zeros((0, 32), dtype=np.uint8))
    assert encode._hex_array(pa, empty).to_pylist() == []


@pytest.mark.parametrize("axis_slice", [1, 3, 8192])
def test_axis_array_spells_the_codes_texts_in_slices(monkeypatch, axis_slice: int) -> None:
    from infrastore_sqlite.interchange.parquet import encode
    from infrastore_sqlite.interchange.plan import AxisColumn

    monkeypatch.setattr(encode, "_AXIS_SLICE", axis_slice)
    texts = ["R3/2024-01-01T00:00:00Z/PT1H", "x", "", "é€ axis", "R2/1969-12-31T23:00:00Z/PT1H"]
    codes = np.random.default_rng(7).integers(0, len(texts), 200)
    got = encode._axis_array(pa, AxisColumn(codes, texts))
    got.validate(full=True)
    assert got.type == pa.string()
    assert got.to_pylist() == [texts[c] for c in codes]
    # A plain list of texts, as a hand-made plan holds them, gives the same.
    assert encode._axis_array(pa, [texts[c] for c in codes]).equals(got)


def test_key_buffers_serve_groups_of_any_size_and_partitions_one_after_another(
    tmp_path: Path, monkeypatch
) -> None:
    """Groups written from reused key-column buffers: a long group, then shorter ones,
    in two partitions, every coordinate as the SQLite export has it."""
    from infrastore_sqlite.interchange.parquet import export as writer

    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 12)
    store = new_store(tmp_path / "s.h5")
    for i, n in enumerate([5, 7, 3, 2, 11, 1, 30]):
        add(store, sts(f"u{i}", np.arange(n, dtype=np.float64) - i, start=T0 + i * H), owner=i + 1)
        add(
            store,
            Scenarios(
                T0 + i * H, "PT1H", "PT2H", "PT1H", 2, np.arange(8.0).reshape(2, 2, 2) + i, f"c{i}"
            ),
            owner=i + 1,
        )
    sqlite_result = store.export_sqlite(tmp_path / "e.sqlite")
    result = store.export_parquet(tmp_path / "out")
    assert_like_sqlite(result, tmp_path / "e.sqlite", sqlite_result)
    assert_values_match_store(store, result)
    store.close()


def build_runs(store: Store) -> None:
    """Many arrays per partition: stretches on one fixed grid (joined in bulk), calendar
    and irregular grids between them, percentile sets that differ, ragged widths."""
    for i in range(6):
        add(store, sts(f"a{i}", np.arange(5.0) + 10 * i, start=T0 + i * H), owner=i + 1)
    for i in range(2):
        add(store, sts(f"b{i}", -np.arange(7.0) - i - 1, start=T0 - i * H), owner=i + 1)
    add(store, sts("month", np.arange(5.0) * 0.5, start=datetime(2024, 1, 31), res="P1M"))
    add(store, sts("long", np.arange(30.0) / 7))
    for i in range(3):
        vals = np.arange(12.0).reshape(3, 2, 2) + i
        pct = [0.1, 0.5, 0.9]
        add(store, Probabilistic(T0 + i * H, "PT1H", "PT2H", "PT1H", 2, pct, vals, f"p{i}"))
    add(
        store,
        Probabilistic(T0, "PT1H", "PT2H", "PT1H", 2, [0.2, 0.5, 0.8], np.ones((3, 2, 2)), "q"),
    )
    for i in range(3):
        vals = np.arange(12.0).reshape(2, 2, 3) * (i + 1)
        add(store, Scenarios(T0 + i * H, "PT1H", "PT2H", "PT1H", 3, vals, f"s{i}"))
    for i in range(3):
        vals = np.arange(6.0).reshape(3, 2) - i
        add(store, Deterministic(T0 + i * H, "PT1H", "PT3H", "PT2H", 2, vals, f"d{i}"))
    add(store, Deterministic(T0, "PT1H", "PT3H", "PT1H", 2, np.zeros((3, 2)), "d_other"))
    for i in range(3):
        stamps = [T0 + k * (i + 1) * H for k in range(4)]
        add(store, NonSequentialTimeSeries(stamps, np.arange(4.0) * i, f"n{i}"))
    narrow = np.array([[1, 0, 1], [1, 2, 3]], dtype=np.float64)
    wide = np.array([[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0]])
    other = narrow + np.array([0, 0, 1])  # the same counts, other y values
    for i, cells in enumerate([narrow, wide, other]):
        add(store, sts(f"pwl{i}", cells, element_type="piecewise_linear"), owner=i + 1)


def expected_groups(sizes: list[int], target: int) -> list[list[int]]:
    """Row-group lengths the layout prescribes for arrays of ``sizes`` rows, in order."""
    groups: list[list[int]] = []
    current: list[int] = []
    for n in sizes:
        if current and sum(current) + n > target:
            groups.append(current)
            current = []
        if n > target:
            groups.extend([[target]] * (n // target) + ([[n % target]] if n % target else []))
            continue
        current.append(n)
    if current:
        groups.append(current)
    return [[sum(g)] if len(g) > 1 else g for g in groups]


@pytest.mark.parametrize(
    "group_rows, handoff_rows, chunk_rows",
    [(1_048_576, 1 << 16, 4096), (7, 9, 16), (4, 1, 2), (12, 5, 4096)],
    ids=["defaults", "small", "tiny", "split-runs"],
)
def test_runs_of_arrays_on_mixed_grids(
    tmp_path: Path, monkeypatch, group_rows, handoff_rows, chunk_rows
) -> None:
    from infrastore_sqlite.interchange.parquet import export as writer

    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", group_rows)
    monkeypatch.setattr(writer, "_HANDOFF_ROWS", handoff_rows)
    monkeypatch.setattr(writer, "_CHUNK_ROWS", chunk_rows)
    store = new_store(tmp_path / "s.h5")
    build_runs(store)
    sqlite_result = store.export_sqlite(tmp_path / "e.sqlite")
    result = store.export_parquet(tmp_path / "out")
    assert_like_sqlite(result, tmp_path / "e.sqlite", sqlite_result)
    assert_values_match_store(store, result)
    for e in result:
        f = pq.ParquetFile(e["values_file"])
        ids = pq.read_table(e["values_file"])["array_id"].to_numpy()
        sizes = np.unique(ids, return_counts=True)[1].tolist()
        got = [f.metadata.row_group(g).num_rows for g in range(f.metadata.num_row_groups)]
        assert got == [sum(g) for g in expected_groups(sizes, group_rows)], e["values_file"]
    store.close()


def test_default_row_group_target(tmp_path: Path) -> None:
    from infrastore_sqlite.interchange.parquet.layout import ROW_GROUP_ROWS

    assert ROW_GROUP_ROWS == 1_048_576


# ---------------------------------------------------------------------- selection, dry run, refusals


def test_time_range_and_filters(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    add(store, sts("a", np.arange(10.0)), owner=1)
    add(store, sts("b", np.arange(10.0) * 2), owner=2)
    rng = (T0 + 2 * H, T0 + 5 * H)
    res = store.export_parquet(tmp_path / "out", time_range=rng, name="a")
    sq = store.export_sqlite(tmp_path / "e.sqlite", time_range=rng, name="a")
    (e,) = res
    assert (e["series"], e["rows"]) == (1, 3)
    t = pq.read_table(e["values_file"])
    assert t["value"].to_pylist() == [2.0, 3.0, 4.0]
    assert t["timestamp"].cast(pa.int64()).to_pylist()[0] == int((T0 + 2 * H).timestamp() * 1000)
    con = sqlite3.connect(tmp_path / "e.sqlite")
    axis = con.execute(f'SELECT time_axis, data_hash FROM "{sq[0]["arrays_table"]}"').fetchall()
    con.close()
    a = pq.read_table(e["arrays_file"])
    assert list(zip(a["time_axis"].to_pylist(), a["data_hash"].to_pylist(), strict=False)) == axis
    store.close()


def test_dry_run_writes_nothing(varied, tmp_path: Path) -> None:
    store, _, result, _ = varied
    target = tmp_path / "dry"
    got = store.export_parquet(target, include_derived=True, dry_run=True)
    assert not target.exists()
    assert [{k: v for k, v in e.items() if not k.endswith("_file")} for e in got] == [
        {k: v for k, v in e.items() if not k.endswith("_file")} for e in result
    ]
    assert [Path(e["values_file"]).name for e in got] == [
        Path(e["values_file"]).name for e in result
    ]


def test_existing_files_are_refused_case_insensitively_naming_them(varied, tmp_path: Path) -> None:
    store, _, result, _ = varied
    target = tmp_path / "out"
    target.mkdir()
    first = Path(result[0]["series_file"]).name.lower()
    (target / first).write_text("mine")
    (target / "unrelated.txt").write_text("keep")
    for dry in (True, False):
        with pytest.raises(InvalidParameterError) as info:
            store.export_parquet(target, include_derived=True, dry_run=dry)
        assert first in str(info.value) and "nothing was written" in str(info.value)
        # The way out in the caller's words: the keyword for the API, the flag for the CLI.
        assert "overwrite=True" in str(info.value) and "--overwrite" not in str(info.value)
        cli = info.value.render("cli")
        assert "--overwrite" in cli and "overwrite=True" not in cli
    assert sorted(os.listdir(target)) == sorted([first, "unrelated.txt"])
    assert (target / first).read_text() == "mine"


def test_directory_refusals(varied, tmp_path: Path) -> None:
    store = varied[0]
    with pytest.raises(InvalidParameterError, match=r"parent .* does not exist"):
        store.export_parquet(tmp_path / "no" / "out")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidParameterError, match="is a file, not a directory"):
        store.export_parquet(tmp_path / "file")


def test_empty_series_and_derived_filter_refusals_stay(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    add(store, NonSequentialTimeSeries([], np.zeros(0), "empty"))
    with pytest.raises(InvalidParameterError, match="hold no values"):
        store.export_parquet(tmp_path / "out")
    with pytest.raises(InvalidParameterError, match="include_derived=True"):
        store.export_parquet(tmp_path / "out", time_series_type="DeterministicSingleTimeSeries")
    assert not (tmp_path / "out").exists()
    store.close()


def test_empty_selection_creates_nothing(varied, tmp_path: Path) -> None:
    assert varied[0].export_parquet(tmp_path / "out", name="no such series") == []
    assert not (tmp_path / "out").exists()


def test_progress_counts_rows_up_to_the_total(varied, tmp_path: Path) -> None:
    store, _, result, _ = varied
    calls: list[tuple[int, int]] = []
    store.export_parquet(
        tmp_path / "out", include_derived=True, progress=lambda d, t: calls.append((d, t))
    )
    total = sum(e["rows"] for e in result)
    writes = [c for c in calls if c[1] == total]
    assert writes[-1] == (total, total)
    assert [d for d, _ in writes] == sorted(d for d, _ in writes)


# ---------------------------------------------------------------------- atomicity


@pytest.mark.parametrize("role", ["values", "series", "arrays"])
def test_a_failure_midway_leaves_nothing(varied, tmp_path: Path, monkeypatch, role) -> None:
    store = varied[0]
    calls = {"n": 0}
    real = pq.ParquetWriter.write_table

    def failing(self, *args, **kwargs):
        # The third file of this role fails: some partitions are complete by then.
        if f".{role}.parquet" in str(self.where):
            calls["n"] += 1
            if calls["n"] == 3:
                raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing)
    target = tmp_path / "out"
    with pytest.raises(StorageError, match="No space left on device") as info:
        store.export_parquet(target, include_derived=True)
    assert f".{role}.parquet" in str(info.value) and ".partial" not in str(info.value)
    assert not target.exists()  # created by the export, so removed with it
    target.mkdir()
    (target / "keep.txt").write_text("x")
    calls["n"] = 0
    with pytest.raises(StorageError):
        store.export_parquet(target, include_derived=True)
    assert os.listdir(target) == ["keep.txt"]


def test_a_failure_in_the_encoder_thread_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    from infrastore_sqlite.interchange.parquet import export as writer

    # Groups of 4 rows: the first groups of the partition are encoded in the writer
    # thread while the next are gathered; the second one fails there.
    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 4)
    store = new_store(tmp_path / "s.h5")
    for i in range(6):
        add(store, sts(f"s{i}", np.arange(3.0) + 10 * i), owner=i + 1)
    calls = {"n": 0}
    real = pq.ParquetWriter.write_table
    threads = []

    def failing(self, *args, **kwargs):
        calls["n"] += 1
        threads.append(threading.current_thread().name)
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing)
    with pytest.raises(StorageError, match="No space left on device") as info:
        store.export_parquet(tmp_path / "out")
    assert ".values.parquet" in str(info.value)
    assert threads[1].startswith("infrastore-sqlite-parquet")
    assert not (tmp_path / "out").exists()
    store.close()


def test_a_failed_group_waits_for_the_group_queued_behind_it(tmp_path: Path, monkeypatch) -> None:
    """A group is queued before the one before it is done: when that one fails, the
    file is closed only once the queued group's write has finished (never under it)."""
    import time

    from infrastore_sqlite.interchange.parquet import export as writer

    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 4)  # one 3-row array per group
    store = new_store(tmp_path / "s.h5")
    for i in range(6):
        add(store, sts(f"s{i}", np.arange(3.0) + 10 * i), owner=i + 1)
    events: list[str] = []
    real_write, real_close = pq.ParquetWriter.write_table, pq.ParquetWriter.close

    def write(self, *args, **kwargs):
        first = "start" not in events
        events.append("start")
        time.sleep(0.05)  # the next group is queued meanwhile
        try:
            if first:
                raise OSError(28, "No space left on device")
            return real_write(self, *args, **kwargs)
        finally:
            events.append("end")

    def close(self):
        events.append("close")
        return real_close(self)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write)
    monkeypatch.setattr(pq.ParquetWriter, "close", close)
    with pytest.raises(StorageError, match="No space left on device"):
        store.export_parquet(tmp_path / "out")
    assert events.count("start") >= 2, events  # a second group was queued
    assert events.index("close") > max(i for i, e in enumerate(events) if e == "end"), events
    assert events.count("start") == events.count("end")
    assert not (tmp_path / "out").exists()
    store.close()


def test_a_composite_wider_than_its_plan_is_refused_and_leaves_nothing(
    tmp_path: Path, monkeypatch
) -> None:
    from infrastore_sqlite.errors import IntegrityError
    from infrastore_sqlite.interchange.parquet import export as writer

    store = new_store(tmp_path / "s.h5")
    pwl = np.array([[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0]])
    add(store, sts("pwl", pwl, element_type="piecewise_linear"))
    add(store, sts("f", [1.0, 2.0]), owner=2)
    real = writer.plan_export

    def narrow(*args, **kwargs):
        # A catalog that records a narrower width than the stored rows have.
        plan = real(*args, **kwargs)
        for pp in plan.partitions:
            if pp.partition.key.et.is_ragged:
                pp.width = 3
        return plan

    monkeypatch.setattr(writer, "plan_export", narrow)
    with pytest.raises(IntegrityError, match=r"'pwl' \(owner 1\).* 5 wide, more than the 3"):
        store.export_parquet(tmp_path / "out")
    assert not (tmp_path / "out").exists()
    store.close()


def test_a_failure_while_renaming_removes_what_was_renamed(
    varied, tmp_path: Path, monkeypatch
) -> None:
    from infrastore_sqlite.interchange.parquet import export as writer

    store = varied[0]
    real = os.replace
    n = {"k": 0}

    def flaky(src, dst):
        n["k"] += 1
        if n["k"] == 4:
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(writer.os, "replace", flaky)
    with pytest.raises(KeyboardInterrupt):
        store.export_parquet(tmp_path / "out", include_derived=True)
    assert not (tmp_path / "out").exists()


def test_without_pyarrow_the_error_names_the_install_command(
    varied, tmp_path: Path, monkeypatch
) -> None:
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(MissingDependencyError) as info:
        varied[0].export_parquet(tmp_path / "out")
    assert "pip install 'infrastore-sqlite[parquet]'" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_forecast_coordinates_are_window_major(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    add(store, Deterministic(T0, "PT1H", "PT3H", "PT2H", 2, np.arange(6.0).reshape(3, 2), "det"))
    (e,) = store.export_parquet(tmp_path / "out")
    t = pq.read_table(e["values_file"])
    ms = int(T0.timestamp() * 1000)
    h = 3_600_000
    assert t["issue_time"].cast(pa.int64()).to_pylist() == [ms] * 3 + [ms + 2 * h] * 3
    assert t["timestamp"].cast(pa.int64()).to_pylist() == [
        ms,
        ms + h,
        ms + 2 * h,
        ms + 2 * h,
        ms + 3 * h,
        ms + 4 * h,
    ]
    # stored [H, count]: window 0 is column 0
    assert t["value"].to_pylist() == [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
    store.close()


def test_store_method_matches_module_function(varied, tmp_path: Path) -> None:
    from infrastore_sqlite.interchange.parquet import export_parquet

    store = varied[0]
    a = export_parquet(store, tmp_path / "a", name="f64")
    b = store.export_parquet(tmp_path / "b", name="f64")
    assert [{k: v for k, v in x.items() if not k.endswith("_file")} for x in a] == [
        {k: v for k, v in x.items() if not k.endswith("_file")} for x in b
    ]
    assert Path(a[0]["values_file"]).read_bytes() == Path(b[0]["values_file"]).read_bytes()
    assert isinstance(store, Store)


def test_unspecified_reference_is_utc_with_the_footer_saying_so(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    add(store, sts("u", [1.0, 2.0]))
    add(store, sts("v", [1.0, 2.0], time_reference="unspecified"), owner=2)
    store.close()
    cat = sqlite3.connect(tmp_path / "s.h5" / "catalog.sqlite")
    cat.execute("UPDATE time_series_associations SET time_reference = NULL WHERE name = 'u'")
    recheck_rows(cat, "name = 'u'")  # as an earlier release's row, migrated
    cat.commit()
    cat.close()
    store = Store.open(tmp_path / "s.h5")
    res = store.export_parquet(tmp_path / "out")
    store.close()
    assert [stem_of(e) for e in res] == [
        "SingleTimeSeries.f64.unspecified",
        "SingleTimeSeries.f64.unspecified_2",
    ]
    for e in res:
        schema = pq.read_schema(e["values_file"])
        assert schema.field("timestamp").type.tz == "UTC"
        assert schema.metadata[b"time_reference"] == b"unspecified"
        series = pq.read_table(e["series_file"])
        assert series["time_reference"].to_pylist() == ["unspecified"]
        assert series.schema.field("initial_timestamp").type.tz == "UTC"
