"""A values row out of place is refused naming that row, not the array it left short.

An exported values file is rewritten with pyarrow so that one row sits in another
array's rows: moved there, given another array's ``array_id`` (one the arrays file holds
or not), or, at the edge of two arrays, the last row of one given the next one's id. Each
refusal names the file (or the part), the row's number in it, its ``array_id`` and what
to do, whether the file is one row group, many, read in small batches, or a directory of
parts; the store is left as it was.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from varied_store import add, new_store, sts

from infrastore_sqlite.errors import InvalidParameterError

STS = "SingleTimeSeries.f64.utc"
ROWS = 24  # each array's rows: a row out of place is a run shorter than those beside it

# Every test runs with the values file read in line and read ahead (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("read_mode")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pq_stray")
    store = new_store(d / "src.h5")
    for k in range(4):
        add(store, sts(f"s{k}", np.arange(ROWS, dtype=np.float64) + 100 * k), owner=k + 1)
    store.export_parquet(d / "out")
    store.close()
    return d / "out"


def _ids(t: pa.Table) -> np.ndarray:
    return np.asarray(t.column("array_id").to_pylist())


def _with_ids(t: pa.Table, ids: np.ndarray) -> pa.Table:
    i = t.schema.get_field_index("array_id")
    return t.set_column(i, t.schema.field(i), pa.array(ids, t.schema.field(i).type))


def moved(t: pa.Table, at: int = 2 * ROWS + 5) -> tuple[pa.Table, int, int, str]:
    """Row 6 of array 1 moved into array 3's rows (to row ``at + 1``)."""
    order = list(range(t.num_rows))
    row = order.pop(5)
    order.insert(at, row)
    return t.take(pa.array(order)), at + 1, 1, "among array_id 3's rows"


def renamed(t: pa.Table) -> tuple[pa.Table, int, int, str]:
    """Row 6 of array 1 given array 3's id."""
    ids = _ids(t).copy()
    ids[5] = 3
    return _with_ids(t, ids), 6, 3, "among array_id 1's rows"


def unknown(t: pa.Table) -> tuple[pa.Table, int, int, str]:
    """Row 6 of array 1 given an id the arrays file does not hold."""
    ids = _ids(t).copy()
    ids[5] = 99
    return _with_ids(t, ids), 6, 99, "the arrays file does not hold"


def handed_over(t: pa.Table) -> tuple[pa.Table, int, int, str]:
    """The last row of array 1 given array 2's id (array 1 one row short)."""
    ids = _ids(t).copy()
    ids[ROWS - 1] = 2
    return _with_ids(t, ids), ROWS, 2, "looks like array_id 1's last, given array_id 2"


DAMAGE = [moved, renamed, unknown, handed_over]


def _write_one(t: pa.Table, path: Path) -> Path:
    pq.write_table(t, path)
    return path


def _write_groups(t: pa.Table, path: Path) -> Path:
    pq.write_table(t, path, row_group_size=10)
    return path


def _write_parts(t: pa.Table, path: Path) -> Path:
    # Two parts cut inside array 3's rows (an array going on across parts): every damage
    # sits inside the first, but the far move (its own test).
    path.unlink()
    path.mkdir()
    pq.write_table(t.slice(0, 2 * ROWS + 10), path / "part.0.parquet")
    pq.write_table(t.slice(2 * ROWS + 10), path / "part.1.parquet")
    return path / "part.0.parquet"


WRITERS: dict[str, Callable[[pa.Table, Path], Path]] = {
    "one row group": _write_one,
    "row groups of 10": _write_groups,
    "parts": _write_parts,
}


def _damaged(exported: Path, tmp_path: Path, damage, write) -> tuple[Path, Path, int, int, str]:
    d = tmp_path / "in"
    shutil.copytree(exported, d)
    values = d / f"{STS}.values.parquet"
    t, row, aid, where = damage(pq.read_table(values))
    named = write(t, values)
    return d, named, row, aid, where


CASES = [(d, w) for d in DAMAGE for w in WRITERS]


@pytest.mark.parametrize(("damage", "write"), CASES, ids=[f"{d.__name__}-{w}" for d, w in CASES])
def test_the_row_out_of_place_is_named(exported, tmp_path: Path, damage, write) -> None:
    d, named, row, aid, where = _damaged(exported, tmp_path, damage, WRITERS[write])
    store = new_store(tmp_path / "dst.h5")
    with pytest.raises(InvalidParameterError) as e:
        store.import_parquet(d)
    msg = str(e.value)
    if write == "parts" and damage is handed_over:
        # Seen where the parts are merged: the directory named, the row's number in the
        # parts read in order (here the first part's).
        named = named.parent
    assert f"{named} row {row}" in msg, msg
    assert f"array_id {aid}" in msg and where in msg, msg
    assert "give it back" in msg and "import again" in msg, msg
    assert store.list_metadata() == []  # nothing filed
    store.close()


def test_in_small_batches_too(exported, tmp_path: Path, monkeypatch) -> None:
    # Batches of 7 rows: the runs are seen a batch at a time, the stray one among them.
    from infrastore_sqlite.interchange.parquet import partition as reader

    monkeypatch.setattr(reader, "_BATCH_ROWS", 7)
    for damage in (moved, renamed, unknown):
        d, named, row, _aid, where = _damaged(
            exported, tmp_path / damage.__name__, damage, _write_one
        )
        with pytest.raises(InvalidParameterError) as e:
            new_store(tmp_path / f"{damage.__name__}.h5").import_parquet(d)
        assert f"{named} row {row}" in str(e.value) and where in str(e.value), str(e.value)


def test_a_row_moved_into_the_next_part_is_named_in_it(exported, tmp_path: Path) -> None:
    def far(t: pa.Table) -> tuple[pa.Table, int, int, str]:
        return moved(t, at=2 * ROWS + 16)  # past the cut: in the second part

    d, named, row, _aid, where = _damaged(exported, tmp_path, far, _write_parts)
    part = named.parent / "part.1.parquet"
    with pytest.raises(InvalidParameterError) as e:
        new_store(tmp_path / "dst.h5").import_parquet(d)
    # The row's number in its part: the first part holds 2 * ROWS + 10 rows.
    assert f"{part} row {row - (2 * ROWS + 10)}: array_id 1 sits {where}" in str(e.value)


def test_a_file_out_of_order_is_still_told_to_sort(exported, tmp_path: Path) -> None:
    # The arrays in reverse order: runs as long as those beside them are no stray row,
    # and the refusal says to sort.
    d = tmp_path / "in"
    shutil.copytree(exported, d)
    values = d / f"{STS}.values.parquet"
    t = pq.read_table(values)
    order = [r for k in reversed(range(4)) for r in range(k * ROWS, (k + 1) * ROWS)]
    pq.write_table(t.take(pa.array(order)), values)
    with pytest.raises(InvalidParameterError, match="sort the file by array_id"):
        new_store(tmp_path / "dst.h5").import_parquet(d)


def test_the_rows_back_in_place_import(exported, tmp_path: Path) -> None:
    # The refusals' advice followed: the same rows, each with its own array_id, import.
    d, _named, _row, _aid, _where = _damaged(exported, tmp_path, renamed, _write_one)
    values = d / f"{STS}.values.parquet"
    ids = _ids(pq.read_table(values)).copy()
    ids[5] = 1
    pq.write_table(_with_ids(pq.read_table(values), ids), values)
    store = new_store(tmp_path / "dst.h5")
    assert len(store.import_parquet(d)) == 4
    store.close()
