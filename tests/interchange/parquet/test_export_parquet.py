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
from datetime import UTC, datetime
from pathlib import Path

import export_parquet_helpers
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from catalog_rows import recheck_rows
from export_parquet_helpers import (
    ARROW_DTYPES,
    PARQUET_KEYS,
    ZONES,
    assert_like_sqlite,
    assert_values_match_store,
    bits,
    leaf,
    stem_of,
)
from varied_store import (
    FORECASTS,
    SERIES_TAIL,
    T0,
    add,
    new_store,
    sts,
)

import infrastore_sqlite
from infrastore_sqlite import (
    Deterministic,
    Store,
)
from infrastore_sqlite.errors import (
    InvalidParameterError,
)

varied = export_parquet_helpers.varied

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


def test_ids_hashes_and_coordinates_equal_the_sqlite_export(varied) -> None:
    _, d, result, sqlite_result = varied
    assert_like_sqlite(result, d / "e.sqlite", sqlite_result)


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
