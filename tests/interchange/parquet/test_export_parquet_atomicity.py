"""``Store.export_parquet``'s selection, dry run and refusals, and its atomicity: a failure
anywhere leaves nothing."""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
from pathlib import Path

import export_parquet_helpers
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from export_parquet_helpers import (
    H,
)
from varied_store import (
    T0,
    add,
    new_store,
    sts,
)

from infrastore_sqlite import (
    NonSequentialTimeSeries,
)
from infrastore_sqlite.errors import (
    InvalidParameterError,
    MissingDependencyError,
    StorageError,
)

varied = export_parquet_helpers.varied

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
