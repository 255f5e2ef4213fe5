"""The varied store's Parquet export and readers of its columns, shared by the Parquet
export's test modules."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from varied_store import (
    FORECASTS,
    LANES,
    build_varied,
    new_store,
)

from infrastore_sqlite import (
    Store,
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
