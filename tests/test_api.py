"""The Python API's contracts that need no reference: the caller's array is copied,
from_values infers the element type, len / == / transaction objects behave as documented."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

import infrastore_sqlite as isq
from infrastore_sqlite import InvalidParameterError

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
LIN = {"proportional": 1.0, "constant": 2.0}


def _builders(a: np.ndarray) -> dict[str, object]:
    """Every constructor that takes an array, each given (a view of) ``a``."""
    return {
        "single": lambda: isq.SingleTimeSeries(T0, "PT1H", a, "x"),
        "single_ts": lambda: isq.SingleTimeSeries.from_timestamps([T0, T0 + H, T0 + 2 * H], a, "x"),
        "nonseq": lambda: isq.NonSequentialTimeSeries([T0, T0 + H, T0 + 2 * H], a, "x"),
        "persistent": lambda: isq.PersistentTimeSeries([T0, T0 + H, T0 + 2 * H], a, "x"),
        "det": lambda: isq.Deterministic(T0, "PT1H", "PT3H", "PT1H", 1, a[:, None], "x"),
        "prob": lambda: isq.Probabilistic(
            T0, "PT1H", "PT3H", "PT1H", 1, [0.5], a[None, :, None], "x"
        ),
        "scen": lambda: isq.Scenarios(T0, "PT1H", "PT3H", "PT1H", 1, a[None, :, None], "x"),
    }


@pytest.mark.parametrize("kind", list(_builders(np.zeros(3))))
@pytest.mark.parametrize("dtype", ["f8", "i4", "u1"])
def test_editing_the_callers_array_after_construction_changes_nothing(
    kind: str, dtype: str
) -> None:
    a = np.arange(3).astype(dtype)
    series = _builders(a)[kind]()
    a[0] = 99
    assert series.data.ravel()[0] == 0


def test_the_store_writes_what_was_constructed_not_what_was_edited_later(tmp_path) -> None:
    a = np.arange(3.0)
    ts = isq.SingleTimeSeries(T0, "PT1H", a, "x")
    a[:] = -1.0
    with isq.Store.create(tmp_path / "s.h5") as store:
        sid = store.add_time_series(1, "G", "Component", ts)
        np.testing.assert_array_equal(store.read_by_id(sid).data, [0.0, 1.0, 2.0])


def test_a_buffer_without_numpy_is_copied_too() -> None:
    raw = bytearray(np.arange(2.0).tobytes())
    ts = isq.SingleTimeSeries(T0, "PT1H", np.frombuffer(raw), "x")
    raw[:8] = np.float64(5).tobytes()
    assert ts.data[0] == 0.0


@pytest.mark.parametrize(
    ("values", "element_type", "shape"),
    [
        ([LIN, LIN], "linear_function", (2, 2)),
        ([{"quadratic": 1.0, "proportional": 2.0, "constant": 3.0}], "quadratic_function", (1, 3)),
        ([[{"x": 0.0, "y": 1.0}, {"x": 1.0, "y": 2.0}], []], "piecewise_linear", (2, 5)),
        ([{"x": [0.0, 1.0], "y": [3.0]}], "piecewise_step", (1, 4)),
        ([(1.0, 2.0, 3.0)], "tuple(3,f64)", (1, 3)),
        ([[1, 2]], "tuple(2,f64)", (1, 2)),
        (np.array([[1.0, 2.0]]), "tuple(2,f64)", (1, 2)),
    ],
)
def test_from_values_names_the_element_type(values, element_type, shape) -> None:
    ts = isq.SingleTimeSeries.from_values(T0, "PT1H", values, "x")
    assert (ts.element_type, ts.data.shape) == (element_type, shape)
    # the declaration is an assertion: the same type passes
    again = isq.SingleTimeSeries.from_values(T0, "PT1H", values, "x", element_type=element_type)
    assert again == ts


@pytest.mark.parametrize(
    ("values", "kw", "message"),
    [
        ([1.0, 2.0], {}, "row 0 is float.*`data=` on the constructor"),
        (np.arange(2.0), {}, "row 0 is float64"),
        ([], {}, "empty `values`. Declare element_type="),
        ([[]], {}, "every row is empty"),
        ([[1.0, 2.0]], {"element_type": "tuple(3,f64)"}, 'which are "tuple\\(2,f64\\)"'),
        ([[1.0, 2.0]], {"element_type": "f64"}, "is a scalar"),
        ([LIN, [1.0]], {}, "row 0 is a linear_function value but row 1 is a tuple"),
        ([[1.0, 2.0], [1.0]], {}, "row 1 has 1 values, expected 2"),
        ([], {"element_type": "tuple(2,f64)"}, "empty tuple series cannot be built"),
    ],
)
def test_from_values_refusals_name_the_problem(values, kw, message) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        isq.SingleTimeSeries.from_values(T0, "PT1H", values, "x", **kw)


def test_empty_values_take_the_declared_composite() -> None:
    ts = isq.SingleTimeSeries.from_values(T0, "PT1H", [], "x", element_type="linear_function")
    assert (ts.element_type, ts.data.shape) == ("linear_function", (0, 2))
    rows = isq.SingleTimeSeries.from_values(T0, "PT1H", [[]], "x", element_type="piecewise_linear")
    assert rows.data.tolist() == [[0.0]]


def test_forecast_from_values_fills_the_windows() -> None:
    d = isq.Deterministic.from_values(T0, "PT1H", "PT2H", "PT1H", 3, [LIN] * 6, "f")
    assert (d.element_type, d.data.shape, len(d)) == ("linear_function", (2, 3, 2), 3)
    with pytest.raises(InvalidParameterError, match="5 decoded timesteps"):
        isq.Deterministic.from_values(T0, "PT1H", "PT2H", "PT1H", 3, [LIN] * 5, "f")


def test_len_is_steps_or_windows() -> None:
    assert len(isq.SingleTimeSeries(T0, "PT1H", np.zeros(4), "x")) == 4
    assert len(isq.NonSequentialTimeSeries([T0, T0 + H], np.zeros(2), "x")) == 2
    assert len(isq.Scenarios(T0, "PT1H", "PT2H", "PT1H", 3, np.zeros((2, 2, 3)), "x")) == 3


def test_equality_is_by_content_bit_for_bit() -> None:
    def s(data, name="x", **kw):
        return isq.SingleTimeSeries(T0, "PT1H", np.array(data), name, **kw)

    assert s([np.nan]) == s([np.nan])
    assert s([1.0]) == isq.SingleTimeSeries(T0, "PT60M", np.array([1.0]), "x")
    assert s([0.0]) != s([-0.0])
    assert s([1.0]) != s([1.0], "y")
    assert s([1.0]) != s([1.0], units="MW")
    assert s([1.0]) != s(np.array([1.0], dtype=np.float32))
    assert s([1.0]) != isq.NonSequentialTimeSeries([T0], np.array([1.0]), "x")
    assert s([1.0]) != 1
    with pytest.raises(TypeError, match="unhashable"):
        hash(s([1.0]))


def test_transaction_binds_the_store_and_can_be_entered_again(tmp_path) -> None:
    ts = isq.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x")
    with isq.Store.create(tmp_path / "s.h5") as store:
        tx = store.transaction()
        with tx as bound:
            assert bound is store
            bound.add_time_series(1, "G", "Component", ts)
        with pytest.raises(RuntimeError, match="undo"), tx:
            store.add_time_series(2, "G", "Component", ts)
            with tx:  # nested inside itself
                assert store.in_transaction
            raise RuntimeError("undo")
        assert [m["owner_id"] for m in store.list_metadata()] == [1]


def test_persistent_lookups_take_at_and_refuse_before_the_first_breakpoint() -> None:
    p = isq.PersistentTimeSeries([T0, T0 + 2 * H], np.array([1.0, 2.0]), "p")
    assert p.value_at(at=T0 + 3 * H) == 2.0
    assert p.breakpoint_at(at=T0 + H) == T0
    with pytest.raises(InvalidParameterError, match="before the first breakpoint"):
        p.index_at(T0 - H)
    # A naive instant is read on the series' own wall clock (UTC here), as a range bound is.
    assert p.value_at(datetime(2024, 1, 1, 3)) == p.value_at(T0 + 3 * H) == 2.0


@pytest.mark.parametrize(
    ("stamps", "n", "message"),
    [
        ([T0, T0 + H, T0 + 2 * H], 2, "3 timestamps for 2 value"),
        ([datetime(2024, 1, 1), T0 + H], 2, "disagree about how they are spelled"),
        ([T0, T0 + H, T0 + 3 * H], 3, "not on a regular grid: timestamp 2"),
        ([T0], 1, "from 1 timestamp"),
    ],
)
def test_from_timestamps_refusals(stamps, n, message) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        isq.SingleTimeSeries.from_timestamps(stamps, np.zeros(n), "x")


def test_from_timestamps_infers_whole_months() -> None:
    two = [datetime(2024, m, 1) for m in (1, 3, 5)]
    assert isq.SingleTimeSeries.from_timestamps(two, np.zeros(3), "x").resolution == "P2M"
    ends = [datetime(2024, 1, 31), datetime(2024, 2, 29), datetime(2024, 3, 31)]
    assert isq.SingleTimeSeries.from_timestamps(ends, np.zeros(3), "x").resolution == "P1M"


def test_arrow_without_pyarrow_says_how_to_install_it(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # makes `import pyarrow` fail
    ts = isq.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x")
    with pytest.raises(ImportError, match=r"pip install 'infrastore-sqlite\[parquet\]'"):
        ts.to_arrow()
    with pytest.raises(ImportError, match="parquet"):
        isq.NonSequentialTimeSeries.from_arrow(object())


def test_arrow_round_trip_keeps_unspecified_and_bits() -> None:
    pa = pytest.importorskip("pyarrow")
    data = np.array([np.nan, -0.0, 1.0])
    ts = isq.SingleTimeSeries(T0, "PT1H", data, "x", time_reference="utc")
    ts._tr = None  # as a store row without a time reference reads back
    table = ts.to_arrow()
    assert table.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert table.schema.metadata[b"time_reference"] == b"unspecified"
    back = isq.SingleTimeSeries.from_arrow(table)
    assert back == ts and back.time_reference is None
    with pytest.raises(InvalidParameterError, match=r"row 1 .* not a whole millisecond"):
        isq.SingleTimeSeries.from_arrow(
            pa.table({"timestamp": pa.array([0, 1500], pa.timestamp("us")), "value": [1.0, 2.0]}),
            name="x",
        )
    us = pa.table(
        {"timestamp": pa.array([0, 3_600_000_000], pa.timestamp("us")), "value": [1.0, 2.0]}
    )
    assert isq.SingleTimeSeries.from_arrow(us, name="x").resolution == "PT1H"


def test_store_members_without_the_reference(tmp_path) -> None:
    ts = isq.SingleTimeSeries(T0, "PT1H", np.arange(3.0), "x")
    with isq.Store.create(tmp_path / "s.h5") as store:
        a = store.add_time_series(1, "G", "Component", ts)
        store.add_time_series(2, "G", "Component", ts)
        # replace_owner is all or nothing: owner 2 already has 'x'
        with pytest.raises(isq.DuplicateTimeSeriesError, match="nothing was moved"):
            store.replace_owner(1, 2, "Component")
        assert store.list_owner_ids("Component") == [1, 2]
        with pytest.raises(InvalidParameterError, match="the store's own"):
            store.set_store_attribute("infrastore_sqlite.catalog_generation", "x")
        store.set_store_attribute("k", "v")
        assert store.list_store_attributes() == {"k": "v"}
        with pytest.raises(isq.OwnerMismatchError, match="belongs to owner 1"):
            store.read_by_id(a, owner_id=2, owner_category="Component")
        c = store.copy_time_series(a, 3, "H", new_name="y")
        assert store.read_by_id(c) == isq.SingleTimeSeries(T0, "PT1H", np.arange(3.0), "y")
        assert store.count_array_references(store.get_metadata_by_id(a)["data_hash"]) == {
            "sts": 3,
            "dst": 0,
        }
        assert store.get_compression() == {"compression": "auto", "level": 3, "shuffle": True}


def test_an_in_memory_store_removes_its_scratch_files_on_close() -> None:
    store = isq.Store.create(in_memory=True)
    scratch = store.path.parent
    assert scratch.is_dir() and store.catalog == "memory"
    store.add_time_series(1, "G", "Component", isq.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x"))
    store.close()
    assert not scratch.exists()


def test_persist_to_refuses_inside_a_transaction_and_a_missing_directory(tmp_path) -> None:
    with isq.Store.create(tmp_path / "s.h5") as store:
        with pytest.raises(InvalidParameterError, match="does not exist"):
            store.persist_to(tmp_path / "nowhere" / "c.h5")
        with store.transaction(), pytest.raises(InvalidParameterError, match="commit first"):
            store.persist_to(tmp_path / "c.h5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.h5"]  # the store directory only
