"""Foreign files (``parquet-layout.md`` §8): a values file alone, such as
``pq.write_table(series.to_arrow(), f)`` from this package or from the reference (which is
installed and really runs), imported with the inline flags; what the columns do not say
is inferred, assuming least; the refusals name what is wrong and what to do.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import infrastore as R
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_import_parquet import raw_bits
from varied_store import T0, new_store

import infrastore_sqlite as I
from infrastore_sqlite.errors import InvalidParameterError

OWNER = {"owner_id": 7, "owner_type": "Load"}
TS = [T0, T0 + timedelta(minutes=7), T0 + timedelta(hours=5)]


def _static(mod):
    """Series of every static kind, as module ``mod`` (ours or the reference) builds them."""
    return [
        mod.SingleTimeSeries(T0, "PT1H", np.array([1.0, np.nan, -0.0]), "f64", units="MW"),
        mod.SingleTimeSeries(T0, "PT15M", np.arange(4, dtype=np.int32), "i32"),
        mod.SingleTimeSeries(T0, "PT1H", np.array([0, 2**64 - 1], dtype=np.uint64), "u64"),
        mod.SingleTimeSeries(T0, "PT1H", np.arange(12.0).reshape(2, 2, 3), "shaped"),
        mod.SingleTimeSeries(
            T0, "PT1H", np.arange(6.0).reshape(2, 3), "tup", element_type="tuple(3,f64)"
        ),
        mod.SingleTimeSeries(
            T0,
            "PT1H",
            np.array([[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0]]),
            "pwl",
            element_type="piecewise_linear",
        ),
        mod.SingleTimeSeries(
            datetime(2024, 3, 10, tzinfo=ZoneInfo("America/Denver")),
            "PT1H",
            np.arange(4.0),
            "denver",
        ),
        mod.SingleTimeSeries(
            datetime(2024, 1, 1, tzinfo=timezone(-7 * timedelta(hours=1))),
            "PT1H",
            np.arange(2.0),
            "offset",
        ),
        mod.SingleTimeSeries(datetime(2024, 1, 31), "P1M", np.arange(5.0), "monthly"),
        mod.NonSequentialTimeSeries(TS, np.array([1.0, np.nan, -2.0]), "ns"),
        mod.PersistentTimeSeries(TS, np.array([[1, 2], [3, 4], [5, 6]], dtype=np.int32), "pers"),
    ]


def _describe(series) -> tuple:
    return (
        type(series).__name__,
        series.name,
        str(series.element_type),
        series.time_reference,
        series.units,
        raw_bits(series),
        [str(t) for t in series.timestamps],
    )


@pytest.mark.parametrize("mod", [I, R], ids=["ours", "reference"])
def test_to_arrow_files_import_as_the_series(mod, tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    for k, series in enumerate(_static(mod)):
        path = tmp_path / f"f{k}.parquet"
        pq.write_table(series.to_arrow(), path)
        (sid,) = store.import_parquet(path, overrides=OWNER)
        back = store.read_by_id(sid)
        ours = _static(I)[k]
        assert _describe(back) == _describe(ours), series.name
        meta = store.get_metadata_by_id(sid)
        assert (meta["owner_id"], meta["owner_type"], meta["owner_category"]) == (
            7,
            "Load",
            "Component",
        )


def _plain(tmp_path: Path, ms: list[int], tz: str | None = "UTC", **extra) -> Path:
    cols = {
        "timestamp": pa.array(ms, pa.int64()).cast(pa.timestamp("ms", tz=tz)),
        "value": pa.array(np.arange(float(len(ms)))),
        **extra,
    }
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table(cols), path)
    return path


H_MS = 3_600_000


def test_what_the_columns_do_not_say_is_inferred(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    path = _plain(tmp_path, [0, H_MS, 2 * H_MS], tz="America/Denver")
    # No metadata, no --type, no --resolution: the reading that assumes least.
    (a,) = store.import_parquet(path, overrides={**OWNER, "name": "x"})
    meta = store.get_metadata_by_id(a)
    assert meta["time_series_type"] == "NonSequentialTimeSeries"
    assert meta["time_reference"] == "America/Denver"
    assert meta["element_type"] == "f64"
    # --type single: the resolution from the timestamps, which walk one grid.
    (b,) = store.import_parquet(path, overrides={**OWNER, "name": "y", "type": "single"})
    assert store.get_metadata_by_id(b)["resolution"] == "PT1H"
    # --resolution alone makes it a SingleTimeSeries, checked against that grid.
    with pytest.raises(InvalidParameterError, match="does not sit on a PT30M grid"):
        store.import_parquet(path, overrides={**OWNER, "name": "z", "resolution": "PT30M"})
    (c,) = store.import_parquet(path, overrides={**OWNER, "name": "z", "resolution": "PT1H"})
    assert store.get_metadata_by_id(c)["time_series_type"] == "SingleTimeSeries"
    naive = _plain(tmp_path, [0, H_MS], tz=None)
    (d,) = store.import_parquet(naive, overrides={**OWNER, "name": "w"})
    assert store.get_metadata_by_id(d)["time_reference"] == "zoneless"


def test_flags_override_and_assertions_are_the_answer(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    series = I.SingleTimeSeries(T0, "PT1H", np.arange(6.0).reshape(2, 3), "dense")
    path = tmp_path / "dense.parquet"
    pq.write_table(series.to_arrow(), path)
    (sid,) = store.import_parquet(
        path,
        overrides={
            **OWNER,
            "owner_category": "SupplementalAttribute",
            "name": "renamed",
            "element_type": "tuple(3,f64)",
            "units": "kW",
            "features": {"year": 2030},
        },
    )
    meta = store.get_metadata_by_id(sid)
    assert (meta["name"], meta["element_type"], meta["units"]) == ("renamed", "tuple(3,f64)", "kW")
    assert meta["owner_category"] == "SupplementalAttribute"
    assert meta["features"] == {"year": 2030}


@pytest.mark.parametrize(
    ("extra", "overrides", "fragments"),
    [
        (
            {"array_id": pa.array([1, 1, 2])},
            OWNER,
            ["holds 2 arrays (array_id 1, 2)", "export it with its series file, or split it"],
        ),
        (
            {"issue_time": pa.array([0, 0, 0], pa.int64()).cast(pa.timestamp("ms", tz="UTC"))},
            OWNER,
            ["`issue_time` column", "foreign forecast", "keep all three files"],
        ),
        ({}, {"owner_type": "Load", "name": "x"}, ["names no owner", 'overrides={"owner_id"']),
        ({}, {"owner_id": 1, "name": "x"}, ["pass --owner-type"]),
        ({}, OWNER, ["records no series name", "--name"]),
        ({}, {**OWNER, "name": "x", "type": "deterministic"}, ["foreign forecast"]),
        (
            {},
            {**OWNER, "name": "x", "interval": "PT1H"},
            ["--interval cannot be used with --parquet"],
        ),
        ({}, {**OWNER, "name": "x", "element_type": "i64"}, ["does not cast"]),
    ],
)
def test_foreign_refusals(tmp_path: Path, extra, overrides, fragments) -> None:
    path = _plain(tmp_path, [0, H_MS, 2 * H_MS], **extra)
    store = new_store(tmp_path / "s.h5")
    with pytest.raises(InvalidParameterError) as info:
        store.import_parquet(path, overrides=overrides)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    assert store.list_metadata() == []


def test_a_resolution_the_timestamps_do_not_walk_is_refused(tmp_path: Path) -> None:
    path = _plain(tmp_path, [0, H_MS, 3 * H_MS])
    store = new_store(tmp_path / "s.h5")
    with pytest.raises(InvalidParameterError, match="not on a regular grid") as info:
        store.import_parquet(path, overrides={**OWNER, "name": "x", "type": "single"})
    assert 'overrides={"resolution"' in str(info.value)


def test_one_values_file_of_an_export_with_its_arrays_file_is_checked(tmp_path: Path) -> None:
    src = new_store(tmp_path / "src.h5")
    src.add_time_series(
        1, "Gen", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(3.0), "one")
    )
    src.export_parquet(tmp_path / "out")
    stem = tmp_path / "out" / "SingleTimeSeries.f64.utc"
    Path(f"{stem}.series.parquet").unlink()
    values = Path(f"{stem}.values.parquet")
    dst = new_store(tmp_path / "dst.h5")
    (sid,) = dst.import_parquet(values, overrides={**OWNER, "name": "one"}, dry_run=False)
    assert np.array_equal(dst.read_by_id(sid).data, np.arange(3.0))
    t = pq.read_table(values)
    t = t.set_column(t.schema.get_field_index("value"), "value", pa.array([9.0, 9.0, 9.0]))
    pq.write_table(t, values)
    with pytest.raises(InvalidParameterError, match="does not match its recorded data_hash"):
        new_store(tmp_path / "d2.h5").import_parquet(values, overrides={**OWNER, "name": "one"})
    # In a directory a values file without its series file is refused, pointing here.
    with pytest.raises(InvalidParameterError, match="name the file itself"):
        new_store(tmp_path / "d3.h5").import_parquet(tmp_path / "out")
