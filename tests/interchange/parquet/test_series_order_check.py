"""The series file's array ids are checked for an array that reappears after another's
rows without a set of every id (issue 37, Must 3): while the ids ascend they are kept as
int64 columns; once the order breaks the check goes on with a set. Either way a
reappearance is refused, naming the file and row, read in batches of any size."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from varied_store import add, new_store, sts

from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.parquet import partition

STS = "SingleTimeSeries.f64.utc"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pq_order")
    store = new_store(d / "src.h5")
    for k in range(8):
        add(store, sts(f"s{k}", np.arange(3.0) + 10 * k), owner=k + 1)
    out = d / "out"
    store.export_parquet(out)
    store.close()
    return out


def _with_series_order(exported: Path, tmp_path: Path, order: list[int]) -> Path:
    out = tmp_path / "in"
    shutil.copytree(exported, out)
    path = out / f"{STS}.series.parquet"
    t = pq.read_table(path)
    pq.write_table(t.take(pa.array(order)), path)
    return out


@pytest.mark.parametrize("batch", [1, 2, 3, 4096])
@pytest.mark.parametrize(
    ("order", "row"),
    [
        ([0, 1, 2, 3, 4, 5, 6, 7, 1], 9),  # ascending, then an early array again
        ([0, 1, 5, 4, 3, 5, 6, 7], 6),  # the order breaks, then an array seen before
        ([7, 6, 5, 4, 3, 2, 1, 0, 7], 9),  # descending from the start
    ],
)
def test_an_array_that_reappears_is_refused_at_its_row(
    exported: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    order: list[int],
    row: int,
    batch: int,
) -> None:
    monkeypatch.setattr(partition, "_ROW_BATCH", batch)
    d = _with_series_order(exported, tmp_path, order)
    store = new_store(tmp_path / "dst.h5")
    with pytest.raises(InvalidParameterError, match="reappears after another array's rows") as e:
        store.import_parquet(d)
    assert f"series.parquet row {row}:" in str(e.value)
    assert store.select_rows() == []
    store.close()


@pytest.mark.parametrize("batch", [1, 3, 4096])
def test_ascending_ids_import_whole(
    exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    monkeypatch.setattr(partition, "_ROW_BATCH", batch)
    store = new_store(tmp_path / "dst.h5")
    ids = store.import_parquet(exported)
    assert sorted(float(store.read_by_id(i).data[0]) for i in ids) == [10.0 * k for k in range(8)]
    store.close()
