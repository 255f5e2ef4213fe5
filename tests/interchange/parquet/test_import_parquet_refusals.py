"""Every refusal of the Parquet import (``parquet-layout.md`` §7), each with its message.

A clean export is copied and one file rewritten with pyarrow into something hostile; the
import must refuse it, naming the file (and the partition, array or series where there is
one), and leave the store as it was.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from varied_store import T0, add, new_store, sts

from infrastore_sqlite import Deterministic, NonSequentialTimeSeries
from infrastore_sqlite.errors import InvalidParameterError

STS = "SingleTimeSeries.f64.utc"
ZONELESS = "SingleTimeSeries.f64.zoneless"
DET = "Deterministic.f64.utc"
NONSEQ = "NonSequentialTimeSeries.f64.utc"
SHAPED = "SingleTimeSeries.f64_2x3.utc"

# Every test runs with the values file read in line and read ahead (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("read_mode")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pq_hostile")
    store = new_store(d / "src.h5")
    add(store, sts("a", np.array([1.0, np.nan, 3.0, 4.0])), owner=1)
    add(store, sts("a", np.array([1.0, np.nan, 3.0, 4.0])), owner=2)  # shares array 1
    add(store, sts("b", np.arange(6.0), start=T0 + timedelta(hours=3)), owner=3)
    add(store, sts("z", np.arange(3.0), start=datetime(2024, 5, 1)), owner=4)
    add(store, sts("m", np.arange(12.0).reshape(2, 2, 3)), owner=5)
    add(store, Deterministic(T0, "PT1H", "PT3H", "PT2H", 2, np.arange(6.0).reshape(3, 2), "d"))
    stamps = [T0, T0 + timedelta(minutes=7), T0 + timedelta(hours=5)]
    add(store, NonSequentialTimeSeries(stamps, np.array([1.0, 2.0, 3.0]), "ns"), owner=6)
    store.export_parquet(d / "out")
    store.close()
    return d / "out"


def _copy(exported: Path, tmp_path: Path, stem: str) -> Path:
    out = tmp_path / "in"
    out.mkdir()
    for role in ("values", "series", "arrays"):
        name = f"{stem}.{role}.parquet"
        shutil.copy(exported / name, out / name)
    return out


def _rewrite(path: Path, fn: Callable[[pa.Table], pa.Table]) -> None:
    pq.write_table(fn(pq.read_table(path)), path)


def _set(t: pa.Table, name: str, arr: pa.Array) -> pa.Table:
    i = t.schema.get_field_index(name)
    return t.set_column(i, pa.field(name, arr.type), arr)


def _footer(t: pa.Table, **keys: str) -> pa.Table:
    meta = {k.decode(): v.decode() for k, v in (t.schema.metadata or {}).items()}
    meta.update(keys)
    return t.replace_schema_metadata(meta)


def _take(t: pa.Table, rows: list[int]) -> pa.Table:
    return t.take(pa.array(rows))


def _ts_ms(t: pa.Table, name: str = "timestamp") -> np.ndarray:
    return t.column(name).cast(pa.int64()).to_numpy().copy()


def _shift_one(t: pa.Table) -> pa.Table:
    ms = _ts_ms(t)
    ms[1] += 60_000
    return _set(t, "timestamp", pa.array(ms).cast(t.schema.field("timestamp").type))


def _swap_det_rows(t: pa.Table) -> pa.Table:
    # Row 1 becomes a second copy of row 0's slot: the same row count, one slot twice.
    rows = list(range(t.num_rows))
    rows[1] = 0
    return _take(t, rows)


def _interleave(t: pa.Table) -> pa.Table:
    ids = t.column("array_id").to_pylist()
    first = [i for i, a in enumerate(ids) if a == ids[0]]
    rest = [i for i, a in enumerate(ids) if a != ids[0]]
    assert len(first) >= 2 or len(rest) >= 2
    if len(first) < 2:
        first, rest = rest, first
    return _take(t, first[:1] + rest + first[1:])


def _micro(t: pa.Table) -> pa.Table:
    us = _ts_ms(t) * 1000
    us[2] += 5
    return _set(t, "timestamp", pa.array(us, pa.timestamp("us", tz="UTC")))


CASES: list[tuple[str, str, str, Callable[[Path], None], list[str]]] = [
    (
        "normalized_v1",
        STS,
        "values",
        lambda p: _rewrite(p, lambda t: _footer(t, **{"infrastore:format": "normalized_v1"})),
        ["normalized_v1", "export it again", "values.parquet"],
    ),
    (
        "unknown format",
        STS,
        "series",
        lambda p: _rewrite(p, lambda t: _footer(t, **{"infrastore:format": "v9"})),
        ['infrastore:format "v9"', "series.parquet"],
    ),
    (
        "disagreeing footers",
        STS,
        "series",
        lambda p: _rewrite(p, lambda t: _footer(t, element_type="f32")),
        ["disagree on element_type", '"f64"', '"f32"', "values.parquet", "series.parquet"],
    ),
    (
        "wrong role",
        STS,
        "arrays",
        lambda p: _rewrite(p, lambda t: _footer(t, **{"infrastore:role": "values"})),
        ['infrastore:role "values"', "arrays.parquet"],
    ),
    (
        "missing column",
        STS,
        "values",
        lambda p: _rewrite(p, lambda t: t.drop_columns(["value"])),
        ["missing column(s)", "value", "values.parquet"],
    ),
    (
        "null instant",
        STS,
        "values",
        lambda p: _rewrite(
            p,
            lambda t: _set(
                t,
                "timestamp",
                pc.if_else(
                    pa.array([i == 2 for i in range(t.num_rows)]),
                    pa.scalar(None, t.schema.field("timestamp").type),
                    t.column("timestamp").combine_chunks(),
                ),
            ),
        ),
        ["row 3", "`timestamp` is null", "values.parquet"],
    ),
    (
        "null value",
        STS,
        "values",
        lambda p: _rewrite(
            p,
            lambda t: _set(
                t,
                "value",
                pc.if_else(
                    pa.array([i == 0 for i in range(t.num_rows)]),
                    pa.scalar(None, pa.float64()),
                    t.column("value").combine_chunks(),
                ),
            ),
        ),
        ["`value` is null", 'dtype_backend="pyarrow"', "row 1"],
    ),
    (
        "integer instants",
        STS,
        "values",
        lambda p: _rewrite(p, lambda t: _set(t, "timestamp", pa.array(_ts_ms(t)))),
        ["`timestamp` is int64, not a timestamp", "cast it to a timestamp"],
    ),
    (
        "date instants",
        STS,
        "values",
        lambda p: _rewrite(
            p,
            lambda t: _set(
                t, "timestamp", pa.array((_ts_ms(t) // 86_400_000).astype("int32"), pa.date32())
            ),
        ),
        ["not a timestamp", "cast it to a timestamp"],
    ),
    (
        "sub-millisecond",
        STS,
        "values",
        lambda p: _rewrite(p, _micro),
        ["row 3", "in us", "not a whole millisecond"],
    ),
    (
        "naive for zoned",
        STS,
        "values",
        lambda p: _rewrite(
            p, lambda t: _set(t, "timestamp", pa.array(_ts_ms(t), pa.timestamp("ms")))
        ),
        ["`timestamp` is naive", '"utc"'],
    ),
    (
        "aware for zoneless",
        ZONELESS,
        "values",
        lambda p: _rewrite(
            p, lambda t: _set(t, "timestamp", pa.array(_ts_ms(t), pa.timestamp("ms", tz="UTC")))
        ),
        ["is zoned (UTC)", "zoneless"],
    ),
    (
        "leaf type is not the dtype",
        STS,
        "values",
        lambda p: _rewrite(
            p, lambda t: _set(t, "value", t.column("value").combine_chunks().cast(pa.float32()))
        ),
        ["values are float", "does not cast"],
    ),
    (
        "struct values",
        STS,
        "values",
        lambda p: _rewrite(
            p,
            lambda t: _set(
                t, "value", pa.StructArray.from_arrays([t.column("value").combine_chunks()], ["x"])
            ),
        ),
        ["is a Struct"],
    ),
    (
        "wrong list nesting",
        SHAPED,
        "values",
        lambda p: _rewrite(
            p,
            lambda t: _set(
                t,
                "value",
                pa.FixedSizeListArray.from_arrays(
                    t.column("value").combine_chunks().flatten().flatten(), 6
                ),
            ),
        ),
        ["SingleTimeSeries.f64_2x3.utc.values.parquet", "nested as [6]", "[2, 3]"],
    ),
    (
        "array reappears",
        STS,
        "values",
        lambda p: _rewrite(p, _interleave),
        ["reappears after another array's rows", "sort the file by array_id"],
    ),
    (
        "series array reappears",
        STS,
        "series",
        lambda p: _rewrite(p, _interleave),
        ["reappears after another array's rows", "series.parquet"],
    ),
    (
        "arrays ids do not ascend",
        STS,
        "arrays",
        lambda p: _rewrite(p, lambda t: _take(t, [1, 0])),
        ["does not ascend", "arrays.parquet"],
    ),
    (
        "arrays keys do not ascend",
        STS,
        "arrays",
        lambda p: _rewrite(
            p,
            lambda t: _set(t, "id", pa.array(t.column("id").to_pylist()[::-1])).take(
                pa.array([1, 0])
            ),
        ),
        ["does not ascend with its id"],
    ),
    (
        "series row without values",
        STS,
        "values",
        lambda p: _rewrite(p, lambda t: t.filter(pc.not_equal(t.column("array_id"), 2))),
        ["a series row names an array", "the values file does not hold"],
    ),
    (
        "values group no series row claims",
        STS,
        "series",
        lambda p: _rewrite(p, lambda t: t.filter(pc.not_equal(t.column("array_id"), 2))),
        ["that no series row names", "array_id 2"],
    ),
    (
        "values array_id the arrays file lacks",
        STS,
        "values",
        lambda p: _rewrite(
            p,
            lambda t: _set(
                t,
                "array_id",
                pc.if_else(pc.equal(t.column("array_id"), 2), 9, t.column("array_id")),
            ),
        ),
        ["`array_id` 9", "arrays file does not hold"],
    ),
    (
        "series array_id the arrays file lacks",
        STS,
        "series",
        lambda p: _rewrite(
            p,
            lambda t: _set(
                t,
                "array_id",
                pc.if_else(pc.equal(t.column("array_id"), 2), 9, t.column("array_id")),
            ),
        ),
        ["`array_id` 9", "arrays file does not hold"],
    ),
    (
        "off the grid",
        STS,
        "values",
        lambda p: _rewrite(p, _shift_one),
        ["does not sit on a PT1H grid", "between two steps"],
    ),
    (
        "forecast slot twice",
        DET,
        "values",
        lambda p: _rewrite(p, _swap_det_rows),
        ["has two rows for window 0, step 0"],
    ),
    (
        "forecast hole",
        DET,
        "values",
        lambda p: _rewrite(p, lambda t: t.slice(0, t.num_rows - 1)),
        ["rows, but its grid holds"],
    ),
    (
        "non-sequential timestamps repeat",
        NONSEQ,
        "values",
        lambda p: _rewrite(p, lambda t: _take(t, [0, 0, 2])),
        ["timestamps must be strictly increasing", "repeats"],
    ),
    (
        "variable lists of different lengths",
        SHAPED,
        "values",
        lambda p: _rewrite(
            p,
            lambda t: _set(
                t,
                "value",
                pa.array([[1.0, 2.0], [3.0]], pa.list_(pa.float64())),
            ),
        ),
        ["`value` lists have different lengths", "values.parquet"],
    ),
    (
        "checksum",
        STS,
        "values",
        lambda p: _rewrite(
            p, lambda t: _set(t, "value", pc.add(t.column("value").combine_chunks(), 1.0))
        ),
        ["does not match its recorded data_hash", "rehash_parquet(", "skip_checksum=True"],
    ),
    (
        "row-level: owner category",
        STS,
        "series",
        lambda p: _rewrite(p, lambda t: _set(t, "owner_category", pa.array(["Nope"] * t.num_rows))),
        ['unknown owner_category "Nope"'],
    ),
]


@pytest.mark.parametrize(
    ("stem", "role", "damage", "fragments"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_hostile_file_is_refused(exported, tmp_path, stem, role, damage, fragments) -> None:
    d = _copy(exported, tmp_path, stem)
    damage(d / f"{stem}.{role}.parquet")
    store = new_store(tmp_path / "dst.h5")
    with pytest.raises(InvalidParameterError) as info:
        store.import_parquet(d)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert store.list_metadata() == []


def test_checksum_mismatch_imports_with_skip_checksum(exported, tmp_path) -> None:
    d = _copy(exported, tmp_path, STS)
    path = d / f"{STS}.values.parquet"
    _rewrite(path, lambda t: _set(t, "value", pc.add(t.column("value").combine_chunks(), 1.0)))
    store = new_store(tmp_path / "dst.h5")
    ids = store.import_parquet(d, skip_checksum=True)
    got = sorted(float(np.nansum(store.read_by_id(i).data)) for i in ids)
    assert got == [11.0, 11.0, 21.0]


@pytest.mark.parametrize(
    ("missing", "fragments"),
    [
        ("series", ["but no", "series.parquet", "name the file itself", "foreign file"]),
        ("arrays", ["but no", "arrays.parquet beside it"]),
        ("values", ["but no", "values.parquet beside it"]),
    ],
)
def test_missing_sibling_in_a_directory(exported, tmp_path, missing, fragments) -> None:
    d = _copy(exported, tmp_path, STS)
    (d / f"{STS}.{missing}.parquet").unlink()
    with pytest.raises(InvalidParameterError) as info:
        new_store(tmp_path / "dst.h5").import_parquet(d)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_a_series_file_named_without_its_values_file(exported, tmp_path) -> None:
    d = _copy(exported, tmp_path, STS)
    (d / f"{STS}.values.parquet").unlink()
    with pytest.raises(InvalidParameterError, match=r"values\.parquet beside it"):
        new_store(tmp_path / "dst.h5").import_parquet(d / f"{STS}.series.parquet")


def test_nothing_there(tmp_path) -> None:
    store = new_store(tmp_path / "dst.h5")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidParameterError, match="holds no exported partitions"):
        store.import_parquet(tmp_path / "empty")
    with pytest.raises(InvalidParameterError, match="neither a directory, a file nor"):
        store.import_parquet(tmp_path / "nope")


def test_row_groups_read_in_small_batches(exported, tmp_path, monkeypatch) -> None:
    # Batches of 3 rows: every array spans batches and is stitched, and the order of a
    # row group longer than one batch is checked before any of its arrays is filed.
    from infrastore_sqlite.interchange.parquet import partition as reader

    monkeypatch.setattr(reader, "_BATCH_ROWS", 3)
    d = _copy(exported, tmp_path, STS)
    store = new_store(tmp_path / "dst.h5")
    ids = store.import_parquet(d)
    got = sorted(float(np.nansum(store.read_by_id(i).data)) for i in ids)
    assert got == [8.0, 8.0, 15.0]
    _rewrite(d / f"{STS}.values.parquet", _interleave)
    with pytest.raises(InvalidParameterError, match="reappears after another array's rows"):
        new_store(tmp_path / "d2.h5").import_parquet(d, skip_checksum=True)


@pytest.mark.parametrize(
    ("stem", "role", "damage", "fragments"),
    [c[1:] for c in CASES if c[2] in ("series", "arrays")],
    ids=[c[0] for c in CASES if c[2] in ("series", "arrays")],
)
def test_series_and_arrays_faults_across_batches(
    exported, tmp_path, monkeypatch, stem, role, damage, fragments
) -> None:
    # Series and arrays rows one per batch: a batch is checked whole when it passes and
    # row by row when not, so a fault between two batches must be refused as one inside.
    from infrastore_sqlite.interchange.parquet import partition as reader

    monkeypatch.setattr(reader, "_ROW_BATCH", 1)
    test_hostile_file_is_refused(exported, tmp_path, stem, role, damage, fragments)
