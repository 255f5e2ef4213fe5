"""The import core (``interchange/importing.py``) fed numpy columns directly: no database.

A fake container (:class:`Columns`) hands the core its arrays and series rows as tuples and
its values groups as numpy columns, which is all a container's reader does; the core checks,
builds, hashes and files them into a real store. The SQLite reader's own behaviour is
covered by ``tests/interchange/sqlite``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bitpatterns import grid_data

from infrastore_sqlite import (
    Deterministic,
    DuplicateTimeSeriesError,
    InvalidParameterError,
    NonSequentialTimeSeries,
    SingleTimeSeries,
    Store,
    TimeSeriesType,
)
from infrastore_sqlite.core.elements import parse_element_type, shrink
from infrastore_sqlite.core.hashing import composite_data_hash
from infrastore_sqlite.errors import rehash_term
from infrastore_sqlite.interchange import importing
from infrastore_sqlite.interchange.importing import (
    ArrayKeys,
    Built,
    Context,
    Group,
    ImportReport,
    Options,
    Place,
    SeriesRows,
    build_group,
    hash_built,
    import_partition,
    run_import,
)
from infrastore_sqlite.interchange.layout import forecast_axis, static_axis
from infrastore_sqlite.store.prepare import INSERT_COLUMNS, hash_sql, row_for

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T0_MS = 1_704_067_200_000
H_MS = 3_600_000


def place(tst: TimeSeriesType = TimeSeriesType.SingleTimeSeries, **kw: Any) -> Place:
    base = f"{tst.name}_f64_utc"
    return Place(base, tst, f"{base}_values", f"{base}_series", f"{base}_arrays", **kw)


def series_row(rows: SeriesRows, **cells: Any) -> tuple:
    """One series row in the order the core asks for (``rows.columns``)."""
    tst = rows.place.type
    row: dict[str, Any] = {
        "owner_id": 1,
        "owner_type": "Gen",
        "owner_category": "Component",
        "time_series_type": tst.name,
        "name": "s",
        "features": "",
        "element_type": "f64",
        "element_shape": "[]",
        "time_reference": "UTC",
        "units": "",
        "quantity_kind": "",
        "unit_system": "",
        "component_field": "",
        "application_data": "",
        "initial_timestamp": T0_MS,
        "resolution": "PT1H",
        "length": 4,
        "interval": "PT2H",
        "horizon": "PT3H",
        "count": 2,
    }
    row.update(cells)
    return tuple(row[c] for c in rows.columns)


def spec_of(where: Place, **cells: Any):
    rows = SeriesRows(where)
    key = ("ab" * 32, "axis")
    (spec,) = rows.specs([series_row(rows, array_id=1, id=7, **cells)], {1: key}, Options())
    return spec


def sts_group(ts: list[int], values: list[float], rowids: list[int] | None = None) -> Group:
    n = len(ts)
    return Group(
        ("ab" * 32, "axis"),
        [1],
        n,
        np.asarray(values, dtype=np.float64),
        timestamp=np.asarray(ts, dtype=np.int64),
        rowids=lambda: rowids if rowids is not None else list(range(1, n + 1)),
    )


# ---------------------------------------------------------------------- series rows


def test_series_rows_become_specs_with_overrides_and_grids() -> None:
    where = place()
    rows = SeriesRows(where)
    keys = {1: ("aa" * 32, "x"), 2: ("bb" * 32, "y")}
    got = rows.specs(
        [
            series_row(rows, array_id=2, id=5, name="b", features='{"zone": "n"}'),
            series_row(rows, array_id=1, id=9, name="a", units="MW"),
        ],
        keys,
        Options.parse({"owner_type": "Load"}),
    )
    assert [(s.key, s.file_id, s.name, s.owner_type) for s in got] == [
        (keys[1], 9, "a", "Load"),
        (keys[2], 5, "b", "Load"),
    ]
    assert got[0].descriptors["units"] == "MW" and got[1].features == {"zone": "n"}
    assert str(got[0].res) == "PT1H" and got[0].grid_key == got[1].grid_key
    assert got[0].label == f"'a' (owner 1, id 9 in {where.series})"


_FAULTS: list[dict[str, Any]] = [
    {"units": None},  # a NULL
    {"owner_id": "7"},  # text where an integer belongs
    {"units": 3},  # a number where text belongs
    {"time_series_type": "Deterministic"},  # another type
    {"time_series_type": "Nope"},  # no type at all
    {"array_id": 99},  # an array the arrays file does not hold
    {"name": ""},  # no name
    {"owner_type": ""},  # no owner type
    {"owner_category": "Bus"},  # a shared part that does not parse
    {"resolution": "PT0S"},  # a shared part that is refused
    {"element_type": "i64"},  # two element types in one partition
]


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("tst", ["SingleTimeSeries", "Deterministic"])
def test_series_rows_a_column_at_a_time_are_what_they_are_row_by_row(
    seed: int, tst: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A batch is checked a column at a time when every column passes (SeriesRows.
    # _batch_specs), row by row otherwise: both must give the same Specs, and a batch
    # with a fault the same refusal (the first row at fault's).
    rng = np.random.default_rng(seed)
    where = place(TimeSeriesType[tst])
    n = int(rng.integers(1, 40))
    keys = {a: (f"{a:064x}", f"axis{a % 3}") for a in range(1, n + 1)}
    cells = []
    for a in range(1, n + 1):
        cells.append(
            {
                "array_id": a,
                "id": int(rng.integers(1, 10_000)),
                "owner_id": int(rng.integers(1, 5)),
                "owner_type": str(rng.choice(["Gen", "Load"])),
                "name": f"s{a}",
                "units": str(rng.choice(["", "MW"])),
                "features": str(rng.choice(["", '{"zone": "n"}'])),
                "resolution": str(rng.choice(["PT1H", "PT30M"])),
            }
        )
    if seed % 3 == 0:
        for _ in range(int(rng.integers(1, 3))):
            cells[int(rng.integers(0, n))].update(_FAULTS[int(rng.integers(0, len(_FAULTS)))])
    opts = Options.parse({"owner_type": "Bus"} if seed % 5 == 1 else {})
    batch_size = int(rng.integers(1, 12))
    monkeypatch.setattr(importing.specs, "_SPEC_BATCH", batch_size)

    def specs() -> list[Any] | str:
        rows = SeriesRows(where)
        try:
            got = rows.specs([series_row(rows, **c) for c in cells], keys, opts)
        except InvalidParameterError as exc:
            return str(exc)
        return [(s, s.label) for s in got]

    taken = []
    by_columns = importing.SeriesRows._batch_specs

    def spy(self: Any, *args: Any) -> bool:
        taken.append(by_columns(self, *args))
        return taken[-1]

    monkeypatch.setattr(importing.SeriesRows, "_batch_specs", spy)
    got = specs()
    if seed % 3 != 0:
        assert taken and all(taken)  # clean batches go a column at a time
    monkeypatch.setattr(importing.SeriesRows, "_batch_specs", lambda *a: False)
    assert got == specs()


def test_series_row_refusals_name_the_place() -> None:
    where = place()
    rows = SeriesRows(where)
    with pytest.raises(InvalidParameterError, match=rf"^{where.series} id 7 has NULL in `units`"):
        rows.specs([series_row(rows, array_id=1, id=7, units=None)], {1: ("k", "a")}, Options())
    with pytest.raises(InvalidParameterError, match="which the arrays table does not hold"):
        rows.specs([series_row(rows, array_id=3, id=7)], {1: ("k", "a")}, Options())
    asserted = Options.parse({"element_type": "i64"})
    with pytest.raises(InvalidParameterError, match="has element_type f64, but i64 was asserted"):
        SeriesRows(where).specs([series_row(rows, array_id=1, id=7)], {1: ("k", "a")}, asserted)


def test_arrays_rows_are_checked() -> None:
    rows = SeriesRows(place())
    assert rows.arrays([(1, "h", "a"), (2, "h", "b")]) == {1: ("h", "a"), 2: ("h", "b")}
    with pytest.raises(InvalidParameterError, match=r"_arrays row 2 has NULL in `data_hash`"):
        rows.arrays([(1, "h", "a"), (2, None, "b")])
    with pytest.raises(InvalidParameterError, match="holds id 1 twice with different keys"):
        rows.arrays([(1, "h", "a"), (1, "h", "b")])


@pytest.mark.parametrize(
    "table",
    [
        [(1, "h", "a"), (2, "h", "b"), (3, "g", "a")],  # ids 1..n: found by subtraction
        [(40, "z", "a"), (7, "h", "b"), (7, "h", "b"), (2**62, "é", "a")],  # searched
        [(1, "h\0", "a"), (2, "g", "a")],  # a hash a bytes column cannot hold
        [(1, "h", "a"), (2**70, "g", "a")],  # an id no int64 holds
    ],
)
def test_array_keys_read_as_the_arrays_dict(table: list[tuple]) -> None:
    rows = SeriesRows(place())
    expected = rows.arrays(table)
    keys = rows.array_keys(table)
    assert dict(keys) == expected and len(keys) == len(expected)
    assert all(keys[aid] == key and aid in keys for aid, key in expected.items())
    assert 5 not in keys and "1" not in keys and keys.get(5) is None


def test_array_keys_refuse_what_the_arrays_dict_refuses_first() -> None:
    rows = SeriesRows(place())
    # The id held twice comes before the bad cell, and the second id 3 before id 1's.
    table = [(3, "h", "a"), (1, "h", "a"), (3, "g", "a"), (1, "h", "b"), (4, None, "a")]
    for read in (rows.arrays, rows.array_keys):
        with pytest.raises(InvalidParameterError, match="holds id 3 twice with different keys"):
            read(table)
    with pytest.raises(InvalidParameterError, match=r"_arrays row 2 has NULL in `data_hash`"):
        rows.array_keys([(1, "h", "a"), (2, None, "b"), (1, "g", "a")])


def test_array_keys_order_ids_by_key_then_id() -> None:
    keys = SeriesRows(place()).array_keys(
        [(5, "b", "x"), (2, "a", "y"), (9, "a", "x"), (4, "b", "x"), (1, "ä", "x")]
    )
    assert isinstance(keys, ArrayKeys)
    ids, cuts = keys.key_order()
    assert ids == sorted(dict(keys), key=lambda aid: (keys[aid], aid)) == [9, 2, 4, 5, 1]
    assert cuts == [0, 1, 2, 4, 5]  # (a, x), (a, y), (b, x) twice, (ä, x)


def test_options_refuse_what_the_values_imply() -> None:
    with pytest.raises(InvalidParameterError, match=r"^--interval cannot be used with --sqlite"):
        Options.parse({"interval": "PT1H"})
    with pytest.raises(InvalidParameterError, match=r"^unknown import flag 'colour'"):
        Options.parse({"colour": "red"})


# ---------------------------------------------------------------------- placing a group


def test_a_shuffled_group_is_placed_by_its_coordinates_and_hashed() -> None:
    where = place()
    spec = spec_of(where)
    values = [10.0, 11.0, 12.0, 13.0]
    order = [2, 0, 3, 1]
    group = sts_group([T0_MS + k * H_MS for k in order], [values[k] for k in order])
    (built,) = build_group(where, group, [spec], Options()).values()
    assert built.initial_ms == T0_MS
    np.testing.assert_array_equal(built.data, values)
    expected = composite_data_hash(parse_element_type("f64"), np.asarray(values)).hex()
    assert built.hash_hex == expected


def test_a_vouched_group_skips_the_placing() -> None:
    # The reader verified the grid (affine): the core trusts the row order it was given.
    where = place()
    spec = spec_of(where)
    group = Group(("k", "a"), [1], 3, np.array([1.0, 2.0, 3.0]), affine=("sts", T0_MS, H_MS))
    (built,) = build_group(where, group, [spec], Options()).values()
    assert built.initial_ms == T0_MS and group.timestamp is None
    np.testing.assert_array_equal(built.data, [1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    ("numbered", "row"),
    [(True, "rowid 12"), (False, "row 2")],
    ids=["numbered rows", "positions"],
)
def test_an_off_grid_row_is_named_in_the_containers_words(numbered: bool, row: str) -> None:
    where = place(numbered=numbered)
    spec = spec_of(where)
    group = sts_group([T0_MS, T0_MS + 1, T0_MS + H_MS], [1.0, 2.0, 3.0], rowids=[11, 12, 13])
    with pytest.raises(InvalidParameterError) as refused:
        build_group(where, group, [spec], Options())
    assert str(refused.value) == (
        f"series {spec.label} does not sit on a PT1H grid anchored at 2024-01-01 00:00:00 UTC "
        f"(array ({'ab' * 6}…, axis) in {where.values}, {row} is at 2024-01-01 00:00:00.001 "
        "UTC, between two steps)"
    )


def test_a_missing_and_a_repeated_step_are_refused() -> None:
    where = place()
    spec = spec_of(where)
    with pytest.raises(InvalidParameterError, match=r"no row holds the step at .* step 1 of 2"):
        build_group(where, sts_group([T0_MS, T0_MS + 2 * H_MS], [1.0, 2.0]), [spec], Options())
    with pytest.raises(InvalidParameterError, match=r"rowid 2 repeats the step at"):
        build_group(where, sts_group([T0_MS, T0_MS], [1.0, 2.0]), [spec], Options())


def test_a_forecast_cube_is_placed_and_a_doubled_slot_refused() -> None:
    where = place(TimeSeriesType.Deterministic)
    spec = spec_of(where)  # PT1H steps, 3 per window, windows every PT2H
    issue, target, values = [], [], []
    for w in range(2):
        for h in range(3):
            issue.append(T0_MS + w * 2 * H_MS)
            target.append(T0_MS + w * 2 * H_MS + h * H_MS)
            values.append(10.0 * w + h)
    order = np.random.default_rng(1).permutation(6)

    def group(it: list[int]) -> Group:
        g = Group(("k", "a"), [1], 6, np.asarray(values)[order], rowids=lambda: list(range(6)))
        g.timestamp = np.asarray(target)[order]
        g.issue = np.asarray(it)[order]
        return g

    (built,) = build_group(where, group(issue), [spec], Options()).values()
    assert built.count == 2 and built.initial_ms == T0_MS
    np.testing.assert_array_equal(built.data, [[0.0, 10.0], [1.0, 11.0], [2.0, 12.0]])
    doubled = list(target)
    doubled[1] = doubled[0]  # window 0 holds step 0 twice and no step 1
    g = group(issue)
    g.timestamp = np.asarray(doubled)[order]
    with pytest.raises(InvalidParameterError, match="has two rows for window 0, step 0, lane 0"):
        build_group(where, g, [spec], Options())


def test_irregular_timestamps_must_increase() -> None:
    where = place(TimeSeriesType.NonSequentialTimeSeries)
    spec = spec_of(where)
    g = sts_group([T0_MS + 5, T0_MS, T0_MS + 5], [1.0, 2.0, 3.0], rowids=[4, 5, 6])
    with pytest.raises(InvalidParameterError, match=r"rowid 6 repeats .* \(as rowid 4 does\)"):
        build_group(where, g, [spec], Options())


def test_an_element_shape_that_disagrees_is_refused() -> None:
    where = place()
    spec = spec_of(where)
    g = sts_group([T0_MS, T0_MS + H_MS], [1.0, 2.0])
    with pytest.raises(InvalidParameterError, match=r"element_shape \[\], but \[2\] was asserted"):
        build_group(where, g, [spec], Options.parse({"element_shape": [2]}))


# ---------------------------------------------------------------------- into a store


class Columns:
    """A container that holds its partition as Python tuples and numpy columns."""

    def __init__(self, where: Place, arrays: list[tuple], series: list[dict], groups: dict):
        self.place = where
        self.where = "columns"
        self.rehash = rehash_term("columns")
        self.checksum = True
        self._arrays = arrays
        self._series = series
        self._groups = groups  # array key -> Group
        self.closed = False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        yield

    def check_columns(self) -> None:
        pass

    def array_rows(self) -> list[tuple]:
        return self._arrays

    def series_batches(self, columns: list[str]) -> Iterator[list[tuple]]:
        rows = SeriesRows(self.place)
        return importing.rows_as_batches(series_row(rows, **cells) for cells in self._series)

    def values_count(self) -> int:
        return sum(g.n for g in self._groups.values())

    def open_values(self, arrays: dict) -> None:
        pass

    def groups(self, wanted: list, dtype: str) -> Iterator[Group | None]:
        for key, _ids, _spec in wanted:
            yield self._groups.get(key)

    def check_unclaimed(self) -> None:
        pass

    def close_values(self) -> None:
        self.closed = True


def _hash(values: list[float]) -> str:
    return composite_data_hash(parse_element_type("f64"), np.asarray(values)).hex()


def sts_source(values: list[float], names: tuple[str, ...] = ("a",)) -> Columns:
    where = place()
    key = (_hash(values), static_axis(len(values), T0_MS, "PT1H"))
    n = len(values)
    group = sts_group([T0_MS + k * H_MS for k in reversed(range(n))], values[::-1])
    series = [
        {"array_id": 1, "id": i + 1, "name": name, "length": n} for i, name in enumerate(names)
    ]
    return Columns(where, [(1, *key)], series, {key: group})


def test_numpy_columns_are_filed_into_the_store(tmp_path: Path) -> None:
    values = [1.0, 2.5, -3.0, 4.0]
    source = sts_source(values, names=("a", "b"))
    with Store.create(tmp_path / "s.h5") as store:
        ctx = Context(store, Options(), False, None, source.values_count())
        with store.transaction():
            result, ids = import_partition(ctx, source, write=True)
        assert source.closed and result.arrays == 1 and result.rows == 4 and len(ids) == 2
        for i, name in zip(ids, ("a", "b"), strict=True):
            got = store.read_by_id(i)
            assert isinstance(got, SingleTimeSeries) and got.name == name
            np.testing.assert_array_equal(got.data, values)
            assert got.initial_timestamp == T0


def test_a_checksum_that_disagrees_is_refused_and_nothing_is_filed(tmp_path: Path) -> None:
    source = sts_source([1.0, 2.0])
    (aid, _, axis) = source._arrays[0]
    wrong = ("00" * 32, axis)
    source._arrays = [(aid, *wrong)]
    source._groups = {wrong: next(iter(source._groups.values()))}
    with Store.create(tmp_path / "s.h5") as store:
        ctx = Context(store, Options(), False, None, 2)
        refused = pytest.raises(
            InvalidParameterError, match="does not match its recorded data_hash"
        )
        with refused, store.transaction():
            import_partition(ctx, source, write=True)
        assert store.list_metadata() == []
        # Waived: the recomputed hash is recorded.
        ctx = Context(store, Options(), True, None, 2)
        with store.transaction():
            _, ids = import_partition(ctx, source, write=True)
        assert len(ids) == 1


def test_a_dry_run_reports_and_refuses_a_duplicate_identity(tmp_path: Path) -> None:
    with Store.create(tmp_path / "s.h5") as store:
        ctx = Context(store, Options(), False, None, 4)
        report = ImportReport("columns", "", True)
        got = run_import(ctx, [sts_source([1.0, 2.0])], report, dry_run=True, per_partition=False)
        assert isinstance(got, ImportReport) and got.ok
        assert [p["status"] for p in got.partitions] == ["would_add"]
        assert store.list_metadata() == []
        twice = sts_source([1.0, 2.0], names=("a", "a"))
        report = ImportReport("columns", "", True)
        with pytest.raises(DuplicateTimeSeriesError, match="appears twice in the file"):
            run_import(ctx, [twice], report, dry_run=True, per_partition=False)
        assert report.partitions[0]["status"] == "failed"


def test_a_group_no_series_row_names_is_refused(tmp_path: Path) -> None:
    source = sts_source([1.0, 2.0])
    source._series = []
    source._arrays = [*source._arrays]
    with Store.create(tmp_path / "s.h5") as store:
        ctx = Context(store, Options(), False, None, 2)
        with pytest.raises(InvalidParameterError, match=r"_series is empty but .*_values is not"):
            import_partition(ctx, source, write=False)


def test_forecast_and_irregular_series_are_built_as_the_store_holds_them(tmp_path: Path) -> None:
    # The same classes the store would build: a Deterministic and a NonSequential series.
    with Store.create(tmp_path / "s.h5") as store:
        det = Deterministic(T0, "PT1H", "PT3H", "PT2H", 2, np.arange(6.0).reshape(3, 2), "d")
        irr = NonSequentialTimeSeries([T0, datetime(2024, 1, 3, tzinfo=UTC)], [1.0, 2.0], "n")
        for ts in (det, irr):
            store.add_time_series(1, "Gen", "Component", ts)
        where = place(TimeSeriesType.Deterministic)
        key = (
            _hash(det.data.tolist()),
            forecast_axis(2, T0_MS, "PT2H", "PT3H", "PT1H"),
        )
        g = Group(key, [1], 6, det.data.T.reshape(-1).copy(), rowids=lambda: list(range(6)))
        g.issue = np.repeat([T0_MS, T0_MS + 2 * H_MS], 3)
        g.timestamp = g.issue + np.tile([0, H_MS, 2 * H_MS], 2)
        source = Columns(where, [(1, *key)], [{"array_id": 1, "id": 1, "name": "d2"}], {key: g})
        ctx = Context(store, Options(), False, None, 6)
        with store.transaction():
            _, (new,) = import_partition(ctx, source, write=True)
        got = store.read_by_id(new)
        assert isinstance(got, Deterministic) and got.count == 2
        np.testing.assert_array_equal(got.data, det.data)


# ---------------------------------------------------------------------- batched settling
# The core builds each group as it is read and hashes and files them a batch at a time
# (``Settle``): the hashes must be each array's own, whatever the batch, and a refusal of
# an earlier group must still win over a later group's fault.


@pytest.mark.parametrize(
    ("element_type", "e"),
    [
        *[(d, ()) for d in ("f64", "f32", "i64", "u64", "i8", "bool")],
        ("f64", (2, 3)),
        ("tuple(3,u64)", (3,)),
        ("quadratic_function", (3,)),
        ("piecewise_linear", (5,)),
        ("piecewise_step", (4,)),
    ],
)
def test_hash_built_is_each_arrays_composite_hash(element_type: str, e: tuple[int, ...]) -> None:
    et = parse_element_type(element_type)
    arrays = [grid_data(element_type, e, (n,), seed) for seed, n in enumerate([4, 4, 1, 7, 4])]
    arrays.append(np.empty((0, *e), dtype=arrays[0].dtype))  # an empty one
    arrays.append(arrays[0].astype(arrays[0].dtype.newbyteorder(">")))  # big-endian
    arrays.append(np.asfortranarray(np.stack([arrays[0], arrays[0]]))[0])  # strided
    if et.is_ragged:  # hash_built takes composites at their canonical width, as built
        arrays = [shrink(et, a) for a in arrays]
    builts = [Built(a, "") for a in arrays]
    hash_built(builts)
    for a, b in zip(arrays, builts, strict=True):
        want = composite_data_hash(et, a)
        assert b.digest == want and b.hash_hex == want.hex()


def _many(n: int) -> tuple[Columns, list[np.ndarray]]:
    """``n`` arrays of 3 special-valued f64 rows each, one series per array."""
    where = place()
    arrays, series, groups = [], [], {}
    for k in range(n):
        values = grid_data("f64", (), (3,), k)
        key = (_hash(values.tolist()), static_axis(3, T0_MS + k * H_MS, "PT1H"))
        arrays.append((k + 1, *key))
        series.append(
            {
                "array_id": k + 1,
                "id": k + 1,
                "name": f"s{k}",
                "length": 3,
                "initial_timestamp": T0_MS + k * H_MS,
            }
        )
        ts = [T0_MS + (k + j) * H_MS for j in range(3)]
        groups[key] = sts_group(ts, values.tolist())
        groups[key].values = values  # the bits, NaN payloads included
    return Columns(where, arrays, series, groups), [groups[a[1:]].values for a in arrays]


@pytest.mark.parametrize("batch", [1, 3, 256])
def test_series_settled_in_batches_are_filed_with_their_own_arrays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    monkeypatch.setattr(importing.batches, "_SETTLE_GROUPS", batch)
    source, arrays = _many(10)
    seen: list[tuple[int, int]] = []
    with Store.create(tmp_path / "s.h5") as store:
        ctx = Context(store, Options(), False, lambda d, t: seen.append((d, t)), 30)
        with store.transaction():
            result, ids = import_partition(ctx, source, write=True)
        assert result.arrays == 10 and result.rows == 30 and len(ids) == 10
        by_name = {s.name: s for s in store.read_by_ids(ids)}
        for k, values in enumerate(arrays):
            got = np.asarray(by_name[f"s{k}"].data)
            assert got.tobytes() == values.tobytes()
        assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1][0] == 30


@pytest.mark.parametrize("batch", [1, 256])
@pytest.mark.parametrize("dry_run", [False, True])
def test_an_earlier_groups_checksum_refusal_wins_over_a_later_groups_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int, dry_run: bool
) -> None:
    monkeypatch.setattr(importing.batches, "_SETTLE_GROUPS", batch)
    source, _ = _many(4)
    keys = [a[1:] for a in source._arrays]
    # The second array (in key order) records a stale hash; the third sits off its grid.
    order = sorted(keys)
    stale, off = order[1], order[2]
    wrong = ("0" + stale[0][1:], stale[1]) if stale[0][0] != "0" else ("f" + stale[0][1:], stale[1])
    source._arrays = [(a[0], *(wrong if a[1:] == stale else a[1:])) for a in source._arrays]
    source._groups[wrong] = source._groups.pop(stale)
    source._groups[off].timestamp = source._groups[off].timestamp + np.array([0, 1, 0])
    with Store.create(tmp_path / "s.h5") as store:
        ctx = Context(store, Options(), False, None, 12)
        with pytest.raises(InvalidParameterError, match="does not match its recorded data_hash"):
            if dry_run:
                import_partition(ctx, source, write=False)
            else:
                with store.transaction():
                    import_partition(ctx, source, write=True)
        assert store.list_metadata() == []
        # Waived, the off-grid array is what is refused.
        ctx = Context(store, Options(), True, None, 12)
        with pytest.raises(InvalidParameterError, match="does not sit on a PT1H grid"):
            import_partition(ctx, source, write=False)


def test_a_spec_label_names_the_row_as_the_file_holds_it() -> None:
    rows = SeriesRows(place())
    key = ("ab" * 32, "axis")
    opts = Options.parse({"owner_id": 99, "name": "renamed"})
    (spec,) = rows.specs([series_row(rows, array_id=1, id=7, owner_id=5)], {1: key}, opts)
    assert (spec.owner_id, spec.name) == (99, "renamed")
    assert spec.label == "'s' (owner 5, id 7 in SingleTimeSeries_f64_utc_series)"


def test_the_core_lets_go_of_each_groups_specs_once_it_is_read(tmp_path: Path) -> None:
    source, _ = _many(5)
    seen: list[Sequence] = []
    real = source.groups

    def groups(wanted: Sequence, dtype: str) -> Iterator[Group | None]:
        seen.append(wanted)
        for k, group in enumerate(real(wanted, dtype)):
            # The entries behind the reader name no series row any more (their Specs are
            # let go); the one it is at, and those ahead, still do.
            assert all(w[2] is None for w in wanted[:k])
            assert all(w[2] is not None for w in wanted[k:])
            yield group

    source.groups = groups  # type: ignore[method-assign]
    with Store.create(tmp_path / "s.h5") as store:
        ctx = Context(store, Options(), False, None, 15)
        with store.transaction():
            _, ids = import_partition(ctx, source, write=True)
        assert len(ids) == 5 and seen and all(w[2] is None for w in seen[0])


def _catalog_rows(store: Store) -> dict[tuple, tuple]:
    """Every catalog row but its id, by identity (owner, category, type, name,
    resolution, interval, features)."""
    cols = list(INSERT_COLUMNS)
    rows = store._catalog.execute(
        # The arrays by hash (the catalog holds their ids, schema step 0004).
        f"SELECT {', '.join(hash_sql(c) for c in cols)} FROM time_series_associations t "
        "WHERE time_series_type != 3"
    ).fetchall()
    at = {c: i for i, c in enumerate(cols)}
    key = ("owner_id", "owner_category", "time_series_type", "name", "resolution", "interval")
    return {(*(r[at[c]] for c in key), r[at["features_hash"]]): tuple(r) for r in rows}


def test_rows_filed_from_a_template_equal_rows_from_series_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the first series of each shared part, a written import fills catalog rows from
    a template (``Settle._prepared``): every column of every kind's rows (ragged
    composites of several widths, irregular axes, percentiles, forecasts, several owners
    and names per part) equals the row ``store.prepare.row_for`` makes of a series object."""
    from varied_store import add, build_varied, new_store, sts

    src = new_store(tmp_path / "src.h5")
    build_varied(src)
    for owner in (11, 12, 13):
        # One part (same descriptors and grid), each with its own array, its own most
        # points (so its own minimal width) and padding beyond it.
        points = owner - 10
        wide = np.zeros((2, 1 + 2 * (points + 1)))
        wide[0, : 1 + 2 * points] = [points, *np.arange(2.0 * points) + owner]
        wide[1, :3] = [1, owner, 0.5]
        add(src, sts("pwl", wide, element_type="piecewise_linear"), owner=owner)
        ts = [T0, T0.replace(hour=owner - 8)]
        add(src, NonSequentialTimeSeries(ts, np.array([1.0, owner]), "ns"), owner=owner)
        add(
            src,
            Deterministic(T0, "PT1H", "PT3H", "PT2H", 2, np.full((3, 2), float(owner)), "det"),
            owner=owner,
        )
        add(
            src,
            sts(f"plain{owner}", np.arange(4.0) + owner, start=T0.replace(hour=owner)),
            owner=owner,
            owner_type=f"Bus{owner}",
        )
    db = tmp_path / "export.db"
    src.export_sqlite(db)
    src.close()

    def imported(name: str) -> dict[tuple, tuple]:
        dst = new_store(tmp_path / name)
        dst.import_sqlite(db)
        rows = _catalog_rows(dst)
        dst.close()
        return rows

    templated = imported("templated.h5")

    def from_an_object(self: Any, spec: Any, b: Built) -> dict[str, Any]:
        obj = importing.series_object(self.tst, spec, b)
        return row_for(spec.owner_id, spec.owner_type, spec.category, obj, spec.features, b.digest)

    monkeypatch.setattr(importing.Settle, "_prepared", from_an_object)
    want = imported("objects.h5")
    assert len(want) > 40
    assert templated == want


@pytest.mark.parametrize(
    "batches",
    [
        [[1, 2, 3], [4, 5], [10, 11]],  # consecutive, then a gap
        [[7, 3, 5], [4, 6], [2], [3, 9, 9]],  # out of order, repeated, runs merging
        [[], [2**40, 5], [-3]],
    ],
)
def test_the_ids_an_import_filed_are_found_as_a_set_finds_them(batches: list[list[int]]) -> None:
    filed, expected = importing.options.IdSet(), set()
    for batch in batches:
        filed.update(iter(batch))
        expected.update(batch)
        assert len(filed) == len(expected)
        for i in range(-5, 15):
            assert (i in filed) == (i in expected)
    assert all(i in filed for i in expected) and "3" not in filed
