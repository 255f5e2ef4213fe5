"""The demo store (infrastore_sqlite.demo) and the data it is built from."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from infrastore_sqlite import Store, StoreExistsError, decode_element_values
from infrastore_sqlite.demo import DEMO_SERIES, build_demo_store, data_file

DATA = Path(data_file("wind.csv")).parent


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("demo") / "demo.h5"
    store = build_demo_store(path)
    yield store
    store.close()


def test_every_writable_type_and_sharing(demo: Store) -> None:
    counts = demo.counts_by_type()
    assert counts == {
        "SingleTimeSeries": 8,
        "NonSequentialTimeSeries": 1,
        "Deterministic": 1,
        "Probabilistic": 1,
        "Scenarios": 1,
        "PersistentTimeSeries": 2,
    }
    # loads and wind plants share profiles: fewer distinct arrays than series
    assert demo.num_distinct_arrays() == 11 < sum(counts.values())
    wind = demo.list_metadata(owner_type="RenewableDispatch", time_series_type="SingleTimeSeries")
    assert len({m["data_hash"] for m in wind if m["owner_id"] in (201, 202, 203)}) == 1


def test_time_references_elements_features(demo: Store) -> None:
    rows = demo.list_metadata()
    assert {m["time_reference"] for m in rows} == {"utc", "America/Denver", "-07:00", "zoneless"}
    by_name = {(m["owner_id"], m["time_series_type"], m["name"]): m for m in rows}
    curve = by_name[(401, "PersistentTimeSeries", "variable_cost")]
    assert curve["element_type"] == "piecewise_linear" and curve["element_shape"] == [7]
    reserve = by_name[(501, "SingleTimeSeries", "requirement")]
    assert reserve["element_shape"] == [2] and reserve["time_reference"] == "zoneless"
    prob = by_name[(101, "Probabilistic", "max_active_power")]
    assert prob["percentiles"] == [0.1, 0.5, 0.9] and prob["features"] == {"model_year": 2030}
    outage = by_name[(901, "NonSequentialTimeSeries", "outage_derate")]
    assert outage["owner_category"] == "SupplementalAttribute"
    cost = demo.read_by_id(curve["id"])
    assert decode_element_values(cost.data, "piecewise_linear", 1)[1] == [
        {"x": 50.0, "y": 1250.0},
        {"x": 150.0, "y": 4500.0},
    ]
    solar = demo.read_by_id(by_name[(301, "SingleTimeSeries", "max_active_power")]["id"])
    assert solar.initial_timestamp.isoformat() == "2024-06-30T18:00:00-06:00"
    assert float(np.max(solar.data)) <= 1.0


def test_demo_is_consistent_and_exports(demo: Store, tmp_path: Path) -> None:
    assert demo.verify_integrity()["ok"]
    parts = demo.export_sqlite(tmp_path / "d.db")
    assert sum(p["series"] for p in parts) == 14
    with Store.create(tmp_path / "copy.h5") as copy:
        assert len(copy.import_sqlite(tmp_path / "d.db")) == 14
        assert copy.num_distinct_arrays() == demo.num_distinct_arrays()


def test_every_hourly_series_shares_one_grid(tmp_path: Path) -> None:
    # so `transform` works on the demo without narrowing it first
    with build_demo_store(tmp_path / "t.h5") as store:
        assert store.transform_single_time_series("PT24H", "PT24H") == 8


def test_refuses_an_existing_store(tmp_path: Path) -> None:
    build_demo_store(tmp_path / "x.h5").close()
    with pytest.raises(StoreExistsError):
        build_demo_store(tmp_path / "x.h5")


def test_every_data_file_is_used_and_shipped() -> None:
    used = {entry.csv for entry in DEMO_SERIES}
    assert used == {p.name for p in DATA.glob("*.csv")}
    assert (DATA / "README.md").exists()


def test_generator_reproduces_the_committed_data(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("demo_generate", DATA / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path)
    for path in DATA.glob("*.csv"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
