"""The import's text cells of dictionary-read columns (issue 37 Must 3).

A column of distinct texts (an arrays file's ``data_hash``) falls back to plain pages,
and pyarrow reads it with a dictionary that grows over the row group's batches; the
import spells out only the entries each batch uses, one object per entry.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from infrastore_sqlite.interchange.parquet.partition import _dictionary_cells


def _batches(path: Path, texts: list[str | None], batch: int) -> list[pa.RecordBatch]:
    pq.write_table(pa.table({"t": pa.array(texts, pa.string())}), path, row_group_size=len(texts))
    f = pq.ParquetFile(path, read_dictionary=["t"])
    return list(f.iter_batches(batch_size=batch))


def test_distinct_texts_in_a_growing_dictionary(tmp_path: Path) -> None:
    texts = [f"{i:064x}" for i in range(5000)]
    batches = _batches(tmp_path / "d.parquet", texts, 512)
    # The premise: the reader's dictionary grows past the batch (else nothing to bound).
    assert len(batches[-1].column("t").dictionary) > 512
    cells = [c for b in batches for c in _dictionary_cells(b.column("t"))]
    assert cells == texts


def test_repeated_texts_share_one_object_and_nulls_stay(tmp_path: Path) -> None:
    texts = ["a" * 100, "b", "a" * 100, "b", "b"] * 40
    (batch,) = _batches(tmp_path / "r.parquet", texts, 1000)
    cells = _dictionary_cells(batch.column("t"))
    assert cells == texts
    assert len({id(c) for c in cells}) == 2
    with_null = _batches(tmp_path / "n.parquet", ["x", None, "y", "x"], 10)[0]
    assert _dictionary_cells(with_null.column("t")) == ["x", None, "y", "x"]


def test_a_sliced_column_reads_its_own_rows() -> None:
    col = pa.DictionaryArray.from_arrays(
        pa.array([3, 0, 2, 1, 3, 2], pa.int32()), pa.array(["w", "x", "y", "z"])
    )
    assert _dictionary_cells(col.slice(2, 3)) == ["y", "x", "z"]
    assert _dictionary_cells(col.slice(0, 0)) == []
    idx16 = pa.DictionaryArray.from_arrays(pa.array([1, 1, 0], pa.int16()), pa.array(["p", "q"]))
    assert _dictionary_cells(idx16) == ["q", "q", "p"]
