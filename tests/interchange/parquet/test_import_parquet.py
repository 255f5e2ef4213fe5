"""``Store.import_parquet``: the Parquet export read back into an empty store.

The varied store (every partition kind, value type and time reference, NaN payloads, -0.0,
u64 max, composites at mixed paddings, shared arrays) is exported to Parquet and imported;
every series must come back identical, bit for bit (Parquet keeps NaN payloads, unlike
SQLite). Then the paths PATH may name, the DeterministicSingleTimeSeries partition set aside
or refused, arrays that span row groups, the cross-container round trips, dry run,
on_conflict and progress.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from varied_store import add, build_varied, new_store, snapshot, sts

from infrastore_sqlite import Store
from infrastore_sqlite.core.elements import parse_element_type, shrink
from infrastore_sqlite.errors import DuplicateTimeSeriesError, InvalidParameterError
from infrastore_sqlite.interchange.parquet import export as export_mod

# Every test runs with the values file read in line and read ahead (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("read_mode")


def raw_bits(a: Any) -> tuple[str, tuple, bytes]:
    x = np.asarray(a.data)
    et = parse_element_type(a.element_type)
    if et.is_ragged:
        x = shrink(et, x)  # an import keeps composites at their minimal width
    x = np.ascontiguousarray(x)
    return str(x.dtype), x.shape, x.tobytes()


def minimal(meta: dict[str, Any], series: Any) -> dict[str, Any]:
    """The metadata of a series as an import gives it back: composites at minimal width."""
    et = parse_element_type(meta["element_type"])
    if not et.is_ragged:
        return meta
    return {**meta, "element_shape": [raw_bits(series)[1][-1]]}


def assert_same_store(expected: Store, actual: Store) -> None:
    want, got = snapshot(expected, derived=False), snapshot(actual, derived=False)
    assert sorted(want) == sorted(got)
    for key, (meta, series) in want.items():
        meta2, series2 = got[key]
        assert minimal(meta, series) == meta2, key
        # Every bit, NaN payloads and -0.0 included.
        assert raw_bits(series) == raw_bits(series2), key


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("pq_import")
    store = new_store(d / "src.h5")
    build_varied(store)
    # Values SQLite cannot hold: a NaN with a payload, -0.0 as a scalar, u64 max.
    payload = np.array([1.0, 2.0, 3.0])
    payload.view(np.uint64)[1] = 0x7FF8_0000_0000_BEEF
    add(store, sts("nan_payload", payload))
    add(store, sts("neg_zero", np.array([-0.0, 0.0, -0.0])))
    add(store, sts("u64_max", np.array([0, 2**64 - 1, 2**63], dtype=np.uint64)))
    store.export_parquet(d / "out")
    store.export_parquet(d / "derived", include_derived=True)
    yield store, d
    store.close()


def test_varied_store_round_trips_bit_for_bit(varied, tmp_path: Path) -> None:
    src, d = varied
    dst = new_store(tmp_path / "dst.h5")
    ids = dst.import_parquet(d / "out")
    assert isinstance(ids, list)
    assert sorted(ids) == list(range(1, len(ids) + 1))
    assert len(ids) == len(snapshot(src, derived=False))
    assert_same_store(src, dst)
    assert dst.num_distinct_arrays() == src.num_distinct_arrays()
    by_name = {m["name"]: m for m in dst.list_metadata()}
    assert by_name["unspec"]["time_reference"] is None if "unspec" in by_name else True
    got = dst.read_by_id(by_name["nan_payload"]["id"]).data
    assert np.asarray(got).view(np.uint64)[1] == 0x7FF8_0000_0000_BEEF


def test_a_directory_with_the_derived_partition_sets_it_aside(varied, tmp_path: Path) -> None:
    src, d = varied
    dst = new_store(tmp_path / "dst.h5")
    report = dst.import_parquet(d / "derived", on_conflict="ignore")
    assert report.ok
    aside = report.to_dict()["set_aside"]
    assert [a["name"].split(".")[0] for a in aside] == ["DeterministicSingleTimeSeries"] * len(
        aside
    )
    assert "transform" in aside[0]["reason"]
    assert_same_store(src, dst)


def test_a_named_derived_partition_is_refused(varied, tmp_path: Path) -> None:
    _, d = varied
    dst = new_store(tmp_path / "dst.h5")
    stem = next(p for p in (d / "derived").iterdir() if p.name.startswith("DeterministicSingle"))
    with pytest.raises(InvalidParameterError, match="import the SingleTimeSeries and run"):
        dst.import_parquet(stem)
    assert dst.list_metadata() == []


@pytest.mark.parametrize("how", ["values", "series", "arrays", "stem"])
def test_a_file_or_a_stem_names_one_partition(varied, tmp_path: Path, how: str) -> None:
    _src, d = varied
    stem = d / "out" / "Deterministic.f64.utc"
    path = Path(f"{stem}.{how}.parquet") if how != "stem" else stem
    dst = new_store(tmp_path / "dst.h5")
    ids = dst.import_parquet(path)
    names = sorted(dst.get_metadata_by_id(i)["name"] for i in ids)
    want = sorted(pq.read_table(f"{stem}.series.parquet").column("name").to_pylist())
    assert want == ["det", "det1"]
    assert names == want


def test_other_files_in_the_directory_are_ignored_and_listed(varied, tmp_path: Path) -> None:
    import shutil

    _, d = varied
    out = tmp_path / "copy"
    shutil.copytree(d / "out", out)
    (out / "notes.txt").write_text("hello")
    dst = new_store(tmp_path / "dst.h5")
    report = dst.import_parquet(out, dry_run=True)
    assert report.to_dict()["ignored"] == ["notes.txt"]
    assert dst.list_metadata() == []
    assert {p["status"] for p in report.partitions} == {"would_add"}


def test_arrays_spanning_row_groups_are_stitched(tmp_path: Path, monkeypatch) -> None:
    # Row groups of 5 rows: the 12-row array spans three, the 3-row ones share groups.
    monkeypatch.setattr(export_mod, "ROW_GROUP_ROWS", 5)
    src = new_store(tmp_path / "src.h5")
    for owner, n in enumerate((3, 12, 3, 7, 1), start=1):
        add(src, sts("s", np.arange(float(n)) + owner), owner=owner)
    src.export_parquet(tmp_path / "out")
    values = tmp_path / "out" / "SingleTimeSeries.f64.utc.values.parquet"
    assert pq.ParquetFile(values).num_row_groups > 3
    dst = new_store(tmp_path / "dst.h5")
    dst.import_parquet(tmp_path / "out")
    assert_same_store(src, dst)


def test_sqlite_to_parquet_and_back_give_the_same_store(tmp_path: Path) -> None:
    # SQLite → store → Parquet → store (the varied store without the values SQLite
    # cannot hold).
    src = new_store(tmp_path / "src.h5")
    build_varied(src)
    db = tmp_path / "a.db"
    src.export_sqlite(db)
    first = new_store(tmp_path / "first.h5")
    first.import_sqlite(db)
    first.export_parquet(tmp_path / "pq")
    second = new_store(tmp_path / "second.h5")
    second.import_parquet(tmp_path / "pq")
    assert_same_store(first, second)
    hashes = lambda s: sorted(  # noqa: E731
        (m["name"], m["owner_id"], s.get_metadata_by_id(m["id"]).get("data_hash"))
        for m in s.list_metadata()
    )
    assert hashes(first) == hashes(second)
    # and the reverse: Parquet → store → SQLite → store
    third = new_store(tmp_path / "third.h5")
    third.import_parquet(tmp_path / "pq")
    third.export_sqlite(tmp_path / "b.db")
    fourth = new_store(tmp_path / "fourth.h5")
    fourth.import_sqlite(tmp_path / "b.db")
    assert_same_store(third, fourth)
    assert hashes(third) == hashes(fourth) == hashes(first)


def test_on_conflict_and_dry_run(varied, tmp_path: Path) -> None:
    _src, d = varied
    dst = new_store(tmp_path / "dst.h5")
    ids = dst.import_parquet(d / "out")
    with pytest.raises(DuplicateTimeSeriesError):
        dst.import_parquet(d / "out")
    report = dst.import_parquet(d / "out", on_conflict="ignore")
    assert sum(p["skipped"] for p in report.partitions) == len(ids)
    report = dst.import_parquet(d / "out", on_conflict="replace")
    assert sum(p["unchanged"] for p in report.partitions) == len(ids)
    assert sorted(report.ids) == sorted(ids)
    dry = new_store(tmp_path / "dry.h5").import_parquet(d / "out", dry_run=True)
    assert sum(len(p["series"]) for p in dry.partitions) == len(ids)
    assert all(s["file_id"] >= 1 for p in dry.partitions for s in p["series"])


def test_progress_counts_up_to_the_total(varied, tmp_path: Path) -> None:
    _, d = varied
    calls: list[tuple[int, int]] = []
    new_store(tmp_path / "dst.h5").import_parquet(
        d / "out", progress=lambda a, b: calls.append((a, b))
    )
    assert calls and calls[-1][0] == calls[-1][1]
    assert [a for a, _ in calls] == sorted(a for a, _ in calls)


def test_overrides_apply_and_assertions_contradict(varied, tmp_path: Path) -> None:
    _, d = varied
    stem = d / "out" / "SingleTimeSeries.f32.utc"
    dst = new_store(tmp_path / "dst.h5")
    (i,) = dst.import_parquet(stem, overrides={"owner_id": 77, "units": "kW"})
    meta = dst.get_metadata_by_id(i)
    assert (meta["owner_id"], meta["units"]) == (77, "kW")
    with pytest.raises(InvalidParameterError, match="but f64 was asserted"):
        dst.import_parquet(stem, overrides={"element_type": "f64"}, dry_run=True)
    with pytest.raises(InvalidParameterError, match="--layout cannot be used with --parquet"):
        dst.import_parquet(stem, overrides={"layout": "wide"})


def test_one_transaction_in_the_api(varied, tmp_path: Path) -> None:
    _, d = varied
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(d / "out", out)
    # Break the last partition: nothing of the earlier ones stays.
    last = sorted(out.glob("*.arrays.parquet"))[-1]
    t = pq.read_table(last)
    hashes = pa.array([f"{i:064x}" for i in range(t.num_rows)])  # wrong, still ascending
    pq.write_table(t.set_column(1, "data_hash", hashes), last)
    dst = new_store(tmp_path / "dst.h5")
    with pytest.raises(InvalidParameterError, match="does not match its recorded data_hash"):
        dst.import_parquet(out)
    assert dst.list_metadata() == []
    report = dst.import_parquet(out, skip_checksum=True, on_conflict="ignore")
    assert report.ok


def _break_a_later_partition(src: Path, out: Path, how: str) -> None:
    """Copy ``src`` to ``out``, with the last partition's series file made unreadable or
    short of a column."""
    import shutil

    shutil.copytree(src, out)
    last = sorted(out.glob("*.series.parquet"))[-1]
    if how == "unreadable":
        # Its pages garbled, its footer (read by the discovery) left whole.
        raw = bytearray(last.read_bytes())
        raw[4:200] = bytes(196)
        last.write_bytes(bytes(raw))
    else:
        t = pq.read_table(last)
        pq.write_table(t.drop_columns(["units"]), last)


@pytest.mark.parametrize("how", ["unreadable", "short of a column"])
def test_a_later_partition_read_ahead_is_refused_as_read_in_line(
    varied, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # Each partition's arrays and series files are opened and read in a worker while
    # the partition before is imported: a failure there is raised where reading them in
    # line raises it, with the same message.
    from infrastore_sqlite.interchange.parquet.partition import PartitionReader

    _, d = varied
    _break_a_later_partition(d / "out", tmp_path / "in", how)
    messages = []
    for ahead in (True, False):
        if not ahead:
            monkeypatch.setattr(PartitionReader, "read_rows_ahead", lambda self: None)
        dst = new_store(tmp_path / f"dst{ahead}.h5")
        with pytest.raises(Exception) as e:
            dst.import_parquet(tmp_path / "in")
        assert dst.list_metadata() == []
        messages.append((type(e.value), str(e.value)))
    assert messages[0] == messages[1]
    assert ("failed" if how == "unreadable" else "missing column(s)") in messages[0][1]


def test_files_of_several_batches_are_not_read_ahead(
    varied, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infrastore_sqlite.interchange.parquet import partition

    store, d = varied
    monkeypatch.setattr(partition, "_ROW_BATCH", 1)  # every file of two rows or more
    dst = new_store(tmp_path / "dst.h5")
    dst.import_parquet(d / "out")
    assert_same_store(store, dst)


def test_store_method_signature() -> None:
    import inspect

    params = inspect.signature(Store.import_parquet).parameters
    for name in ("skip_checksum", "on_conflict", "overrides", "dry_run", "progress"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
