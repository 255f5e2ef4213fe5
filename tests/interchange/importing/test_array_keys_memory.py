"""What an import holds of a partition's rows stays a few columns (issue 37, Must 3): no
reordered copy of an export's ascending array ids, the hashes compacted a chunk at a time
(never the whole column as text, measured with tracemalloc rather than a clock), series
and owner ids that count up held as ranges, the array ids let go once the rows are
sorted."""

from __future__ import annotations

import hashlib
import tracemalloc

import numpy as np
import pytest

from infrastore_sqlite.interchange.importing import Options, Place, SeriesRows
from infrastore_sqlite.interchange.importing.keys import (
    ArrayKeys,
    compact_hashes,
    joined_hashes,
    spelled_hashes,
)
from infrastore_sqlite.interchange.importing.specs import rows_as_batches
from infrastore_sqlite.model import TimeSeriesType


def _place() -> Place:
    base = "SingleTimeSeries_f64_utc"
    return Place(
        base, TimeSeriesType.SingleTimeSeries, f"{base}_values", f"{base}_series", f"{base}_arrays"
    )


def _hash(i: int) -> str:
    return hashlib.sha256(i.to_bytes(8, "little")).hexdigest()


def test_ascending_ids_are_held_as_given_with_raw_hashes() -> None:
    ids = np.arange(1, 6, dtype=np.int64)
    texts = np.array([_hash(i).encode() for i in range(5)], dtype=np.bytes_)
    keys = ArrayKeys(ids, texts, np.zeros(5, np.int64), ["t0"])
    assert np.shares_memory(keys._ids, ids)  # no reordered copy
    assert keys._hashes.dtype.itemsize == 32  # raw bytes, not 64 hex digits
    assert keys[3] == (_hash(2), "t0") and keys.conflict is None


def test_spelled_hashes_undo_compact_hashes() -> None:
    texts = np.array([_hash(i).encode() for i in range(300)], dtype=np.bytes_)
    raw = compact_hashes(texts)
    assert raw.dtype.itemsize == 32
    assert (spelled_hashes(raw) == texts).all()
    odd = np.array([b"not-hex"], dtype=np.bytes_)
    assert compact_hashes(odd) is odd and spelled_hashes(odd) is odd
    # One chunk that stays text makes the whole column text again, every hash spelled.
    joined = joined_hashes([raw, odd])
    assert joined.tolist() == [*texts.tolist(), b"not-hex"]
    assert joined_hashes([raw, raw]).dtype.itemsize == 32


@pytest.mark.parametrize("last", [None, "ABC", "é"])
def test_chunks_read_as_the_arrays_dict(last: str | None) -> None:
    """More rows than one hash chunk holds; a last hash no raw column holds turns the
    chunks compacted before it back into texts."""
    n = 70_000  # > specs._KEY_CHUNK (65,536): two chunks
    table = [(i + 1, _hash(i), f"axis{i % 3}") for i in range(n)]
    if last is not None:
        table.append((n + 1, last, "axis0"))
    rows = SeriesRows(_place())
    keys = rows.array_keys(table)
    assert isinstance(keys, ArrayKeys) and len(keys) == len(table)
    for aid, h, axis in (table[0], table[65_535], table[65_536], table[-1]):
        assert keys[aid] == (h, axis)
    ids, cuts = keys.key_order()
    assert ids == [aid for aid, _h, _a in sorted(table, key=lambda r: (r[1], r[2], r[0]))]
    assert len(cuts) == len(table) + 1


def test_a_hash_ending_in_nul_after_compacted_chunks_falls_back_to_the_dict() -> None:
    n = 66_000
    table = [(i + 1, _hash(i), "a") for i in range(n)] + [(n + 1, "h\0", "a")]
    keys = SeriesRows(_place()).array_keys(table)
    assert not isinstance(keys, ArrayKeys)
    assert keys[1] == (_hash(0), "a") and keys[n] == (_hash(n - 1), "a")
    assert keys[n + 1] == ("h\0", "a")


def test_reading_an_exports_arrays_rows_holds_about_their_columns() -> None:
    """The peak while 200,000 arrays rows are read into columns: ids (8 bytes), axis
    numbers (8), raw hashes (32, twice while the chunks are joined) and one chunk of
    hash texts, ~100 bytes an array; it was ~310 (the whole column as 64-byte texts,
    sorted and compared as copies)."""
    n = 200_000
    hashes = [_hash(i) for i in range(n)]
    table = [(i + 1, hashes[i], "2020-01-01T00:00:00/PT1H/168") for i in range(n)]
    rows = SeriesRows(_place())
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        keys = rows.array_keys(table)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert len(keys) == n
    assert peak / n < 130, f"{peak / n:.0f} bytes an array"


def _series_rows(rows: SeriesRows, ids: list[int], owners: list[int]) -> list[tuple]:
    base = {
        "owner_type": "Gen",
        "owner_category": "Component",
        "time_series_type": "SingleTimeSeries",
        "features": "",
        "element_type": "f64",
        "element_shape": "[]",
        "time_reference": "UTC",
        "units": "",
        "quantity_kind": "",
        "unit_system": "",
        "component_field": "",
        "application_data": "",
        "initial_timestamp": 1_700_000_000_000,
        "resolution": "PT1H",
        "length": 4,
    }
    out = []
    for k, (fid, owner) in enumerate(zip(ids, owners, strict=True)):
        cells = {**base, "array_id": k + 1, "id": fid, "owner_id": owner, "name": f"s{k}"}
        out.append(tuple(cells[c] for c in rows.columns))
    return out


@pytest.mark.parametrize(
    ("ids", "owners", "ranges"),
    [
        (list(range(5, 15)), list(range(1, 11)), True),  # an export's: counted up by one
        ([5, 6, 8, 9, 10, 11, 12, 13, 14, 15], [1] * 10, False),  # a gap; one owner
    ],
)
def test_series_ids_that_count_up_are_held_as_a_range(
    ids: list[int], owners: list[int], ranges: bool
) -> None:
    """The packed series rows hold no per-row column for file and owner ids that count
    up by one (an export's), and make the same Specs either way."""
    table = [(k + 1, _hash(k), "axis") for k in range(len(ids))]
    rows = SeriesRows(_place())
    keys = rows.array_keys(table)
    packed = rows.spec_columns(rows_as_batches(_series_rows(rows, ids, owners)), keys, Options())
    assert (type(packed.fid) is range) is ranges and (type(packed.owner) is range) is ranges
    assert len(packed.aid) == len(ids)
    # Sorted by (key, id): the array ids are let go, only the order needed them.
    entries = packed.sort(lambda aids: np.argsort(np.argsort([_hash(int(a) - 1) for a in aids])))
    assert len(packed.aid) == 0 and sorted(entries.tolist()) == list(range(len(ids)))
    plain = SeriesRows(_place())
    expected = plain.specs(_series_rows(plain, ids, owners), dict(keys), Options())
    got = [packed.spec(j, expected[j].key) for j in range(len(ids))]
    assert [(s.file_id, s.row_owner_id, s.name, s.key) for s in got] == [
        (s.file_id, s.row_owner_id, s.name, s.key) for s in expected
    ]
