"""Row groups of ``Store.export_parquet``: cut at array boundaries, sized to the target, and
the key and hash buffers that fill them."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from export_parquet_helpers import (
    H,
    assert_like_sqlite,
    assert_values_match_store,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from varied_store import (
    T0,
    add,
    new_store,
    sts,
)

from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    Probabilistic,
    Scenarios,
    Store,
)

# ---------------------------------------------------------------------- row groups


@pytest.mark.parametrize("chunk_rows", [4096, 4], ids=["copied", "chunked"])
def test_row_groups_are_cut_at_array_boundaries(tmp_path: Path, monkeypatch, chunk_rows) -> None:
    from infrastore_sqlite.interchange.parquet import export as writer

    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 10)
    # Short arrays are copied into one buffer, long ones passed as chunks: both paths.
    monkeypatch.setattr(writer, "_CHUNK_ROWS", chunk_rows)
    store = new_store(tmp_path / "s.h5")
    # Arrays of 4, 4, 4 rows (12 > 10: the third starts a group), 25 (spans three
    # groups of 10, 10, 5), then 3 (a new group after the long one).
    for i, n in enumerate([4, 4, 4, 25, 3]):
        add(store, sts(f"s{i}", np.arange(n, dtype=np.float64) + 100 * i), owner=i + 1)
    (e,) = store.export_parquet(tmp_path / "out")
    f = pq.ParquetFile(e["values_file"])
    groups = []
    for g in range(f.metadata.num_row_groups):
        ids = f.read_row_group(g)["array_id"].to_pylist()
        groups.append(ids)
    lengths = [len(g) for g in groups]
    # array ids are ranks of the hash, not insertion order: check the boundaries instead.
    assert sum(lengths) == 40
    sizes = {}
    for g in groups:
        for a in set(g):
            sizes[a] = sizes.get(a, 0) + g.count(a)
    long_id = next(a for a, n in sizes.items() if n == 25)
    for g in groups:
        if long_id in g:
            assert set(g) == {long_id}, "a long array starts and ends groups of its own"
        else:
            assert len(g) <= 10
            # whole arrays only
            for a in set(g):
                assert g.count(a) == sizes[a]
    assert [len(g) for g in groups if long_id in g] == [10, 10, 5]
    assert all(g == sorted(g) for g in groups)
    assert [x for g in groups for x in g] == sorted(x for g in groups for x in g)
    t = pq.read_table(e["values_file"])
    got = sorted(t["value"].to_pylist())
    assert got == sorted(
        float(x + 100 * i) for i, n in enumerate([4, 4, 4, 25, 3]) for x in range(n)
    )
    # Statistics let a reader prune by array_id.
    stats = f.metadata.row_group(0).column(0).statistics
    assert stats.min == groups[0][0] and stats.max == groups[0][-1]
    store.close()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 9), min_size=1, max_size=30),
    st.integers(0, 2**40),
    st.data(),
)
def test_repeat_into_is_np_repeat(counts, first, data) -> None:
    from infrastore_sqlite.interchange.parquet.export import repeat_into

    steps = data.draw(st.lists(st.integers(1, 2**20), min_size=len(counts), max_size=len(counts)))
    ids = first + np.cumsum(np.array(steps, dtype=np.int64))
    counts_arr = np.array(counts, dtype=np.int64)
    out = np.full(int(counts_arr.sum()) + 3, -7, dtype=np.int64)  # a reused buffer's tail
    repeat_into(out[: counts_arr.sum()], ids, counts_arr)
    np.testing.assert_array_equal(out[: counts_arr.sum()], np.repeat(ids, counts_arr))
    assert (out[counts_arr.sum() :] == -7).all()  # nothing written past the rows


@pytest.mark.parametrize("base", [None, np.array([0, 10**12, -5], dtype=np.int64)])
def test_repeated_expands_into_a_buffer_as_into_a_new_array(base) -> None:
    from infrastore_sqlite.interchange.parquet.export import Repeated

    pattern = np.array([0, 3_600_000, 7_200_000], dtype=np.int64)
    column = Repeated(pattern, base, count=3) if base is None else Repeated(pattern, base)
    buffer = np.full(column.rows + 2, -1, dtype=np.int64)
    got = column.expand(buffer[: column.rows])
    np.testing.assert_array_equal(got, column.expand())
    assert column.rows == 9 and (buffer[9:] == -1).all()


def test_hex_array_spells_each_hash_as_hex() -> None:
    from infrastore_sqlite.interchange.parquet.export import hex_array

    hashes = [os.urandom(32) for _ in range(50)] + [bytes(32), b"\xff" * 32, b"\x0f\xf0" * 16]
    got = hex_array(pa, hashes)
    got.validate(full=True)
    assert got.type == pa.string()
    assert got.to_pylist() == [h.hex() for h in hashes]
    assert hex_array(pa, []).to_pylist() == []
    assert hex_array(pa, [b"\x01", b"\x02\x03"]).to_pylist() == ["01", "0203"]
    # Lengths that differ but add up to a multiple of the count are still each their own.
    assert hex_array(pa, [b"\x01", b"\x02\x03\x04"]).to_pylist() == ["01", "020304"]


@pytest.mark.parametrize("hex_slice", [1, 7, 1 << 16])
def test_hex_array_of_a_hash_block_in_slices(monkeypatch, hex_slice: int) -> None:
    """The plan's hashes as one block are spelled a slice at a time; any cut gives the
    texts of the hashes one by one."""
    from infrastore_sqlite.interchange.parquet import encode
    from infrastore_sqlite.interchange.plan import HashColumn

    monkeypatch.setattr(encode, "_HEX_SLICE", hex_slice)
    hashes = [os.urandom(32) for _ in range(20)] + [bytes(32), b"\xff" * 32]
    block = np.frombuffer(b"".join(hashes), dtype=np.uint8).reshape(-1, 32)
    got = encode.hex_array(pa, HashColumn(block))
    got.validate(full=True)
    assert got.type == pa.string()
    assert got.to_pylist() == [h.hex() for h in hashes]
    empty = HashColumn(np.zeros((0, 32), dtype=np.uint8))
    assert encode.hex_array(pa, empty).to_pylist() == []


@pytest.mark.parametrize("axis_slice", [1, 3, 8192])
def test_axis_array_spells_the_codes_texts_in_slices(monkeypatch, axis_slice: int) -> None:
    from infrastore_sqlite.interchange.parquet import encode
    from infrastore_sqlite.interchange.plan import AxisColumn

    monkeypatch.setattr(encode, "_AXIS_SLICE", axis_slice)
    texts = ["R3/2024-01-01T00:00:00Z/PT1H", "x", "", "é€ axis", "R2/1969-12-31T23:00:00Z/PT1H"]
    codes = np.random.default_rng(7).integers(0, len(texts), 200)
    got = encode._axis_array(pa, AxisColumn(codes, texts))
    got.validate(full=True)
    assert got.type == pa.string()
    assert got.to_pylist() == [texts[c] for c in codes]
    # A plain list of texts, as a hand-made plan holds them, gives the same.
    assert encode._axis_array(pa, [texts[c] for c in codes]).equals(got)


def test_key_buffers_serve_groups_of_any_size_and_partitions_one_after_another(
    tmp_path: Path, monkeypatch
) -> None:
    """Groups written from reused key-column buffers: a long group, then shorter ones,
    in two partitions, every coordinate as the SQLite export has it."""
    from infrastore_sqlite.interchange.parquet import export as writer

    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 12)
    store = new_store(tmp_path / "s.h5")
    for i, n in enumerate([5, 7, 3, 2, 11, 1, 30]):
        add(store, sts(f"u{i}", np.arange(n, dtype=np.float64) - i, start=T0 + i * H), owner=i + 1)
        add(
            store,
            Scenarios(
                T0 + i * H, "PT1H", "PT2H", "PT1H", 2, np.arange(8.0).reshape(2, 2, 2) + i, f"c{i}"
            ),
            owner=i + 1,
        )
    sqlite_result = store.export_sqlite(tmp_path / "e.sqlite")
    result = store.export_parquet(tmp_path / "out")
    assert_like_sqlite(result, tmp_path / "e.sqlite", sqlite_result)
    assert_values_match_store(store, result)
    store.close()


def build_runs(store: Store) -> None:
    """Many arrays per partition: stretches on one fixed grid (joined in bulk), calendar
    and irregular grids between them, percentile sets that differ, ragged widths."""
    for i in range(6):
        add(store, sts(f"a{i}", np.arange(5.0) + 10 * i, start=T0 + i * H), owner=i + 1)
    for i in range(2):
        add(store, sts(f"b{i}", -np.arange(7.0) - i - 1, start=T0 - i * H), owner=i + 1)
    add(store, sts("month", np.arange(5.0) * 0.5, start=datetime(2024, 1, 31), res="P1M"))
    add(store, sts("long", np.arange(30.0) / 7))
    for i in range(3):
        vals = np.arange(12.0).reshape(3, 2, 2) + i
        pct = [0.1, 0.5, 0.9]
        add(store, Probabilistic(T0 + i * H, "PT1H", "PT2H", "PT1H", 2, pct, vals, f"p{i}"))
    add(
        store,
        Probabilistic(T0, "PT1H", "PT2H", "PT1H", 2, [0.2, 0.5, 0.8], np.ones((3, 2, 2)), "q"),
    )
    for i in range(3):
        vals = np.arange(12.0).reshape(2, 2, 3) * (i + 1)
        add(store, Scenarios(T0 + i * H, "PT1H", "PT2H", "PT1H", 3, vals, f"s{i}"))
    for i in range(3):
        vals = np.arange(6.0).reshape(3, 2) - i
        add(store, Deterministic(T0 + i * H, "PT1H", "PT3H", "PT2H", 2, vals, f"d{i}"))
    add(store, Deterministic(T0, "PT1H", "PT3H", "PT1H", 2, np.zeros((3, 2)), "d_other"))
    for i in range(3):
        stamps = [T0 + k * (i + 1) * H for k in range(4)]
        add(store, NonSequentialTimeSeries(stamps, np.arange(4.0) * i, f"n{i}"))
    narrow = np.array([[1, 0, 1], [1, 2, 3]], dtype=np.float64)
    wide = np.array([[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0]])
    other = narrow + np.array([0, 0, 1])  # the same counts, other y values
    for i, cells in enumerate([narrow, wide, other]):
        add(store, sts(f"pwl{i}", cells, element_type="piecewise_linear"), owner=i + 1)


def expected_groups(sizes: list[int], target: int) -> list[list[int]]:
    """Row-group lengths the layout prescribes for arrays of ``sizes`` rows, in order."""
    groups: list[list[int]] = []
    current: list[int] = []
    for n in sizes:
        if current and sum(current) + n > target:
            groups.append(current)
            current = []
        if n > target:
            groups.extend([[target]] * (n // target) + ([[n % target]] if n % target else []))
            continue
        current.append(n)
    if current:
        groups.append(current)
    return [[sum(g)] if len(g) > 1 else g for g in groups]


@pytest.mark.parametrize(
    "group_rows, handoff_rows, chunk_rows",
    [(1_048_576, 1 << 16, 4096), (7, 9, 16), (4, 1, 2), (12, 5, 4096)],
    ids=["defaults", "small", "tiny", "split-runs"],
)
def test_runs_of_arrays_on_mixed_grids(
    tmp_path: Path, monkeypatch, group_rows, handoff_rows, chunk_rows
) -> None:
    from infrastore_sqlite.interchange.parquet import export as writer

    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", group_rows)
    monkeypatch.setattr(writer, "_HANDOFF_ROWS", handoff_rows)
    monkeypatch.setattr(writer, "_CHUNK_ROWS", chunk_rows)
    store = new_store(tmp_path / "s.h5")
    build_runs(store)
    sqlite_result = store.export_sqlite(tmp_path / "e.sqlite")
    result = store.export_parquet(tmp_path / "out")
    assert_like_sqlite(result, tmp_path / "e.sqlite", sqlite_result)
    assert_values_match_store(store, result)
    for e in result:
        f = pq.ParquetFile(e["values_file"])
        ids = pq.read_table(e["values_file"])["array_id"].to_numpy()
        sizes = np.unique(ids, return_counts=True)[1].tolist()
        got = [f.metadata.row_group(g).num_rows for g in range(f.metadata.num_row_groups)]
        assert got == [sum(g) for g in expected_groups(sizes, group_rows)], e["values_file"]
    store.close()


def test_default_row_group_target(tmp_path: Path) -> None:
    from infrastore_sqlite.interchange.parquet.layout import ROW_GROUP_ROWS

    assert ROW_GROUP_ROWS == 1_048_576
