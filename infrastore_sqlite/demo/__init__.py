"""An example store built from the CSVs shipped in ``infrastore_sqlite/demo/data``.

A week of a small power system: three loads, three wind plants, a solar plant in
Denver, a thermal unit, a hydro reservoir and an operating reserve. It has every
writable series type, a composite cost curve, shaped values, four time references
(``utc``, ``America/Denver``, ``-07:00``, ``zoneless``), features, a supplemental
attribute, and profiles shared between owners, so the store holds fewer distinct arrays
than series::

    from infrastore_sqlite.demo import build_demo_store

    with build_demo_store("demo-store") as store:
        print(store.counts_by_type(), store.num_distinct_arrays())
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..model import TimeSeriesType
from ..store import Store
from ..store.segments import remove_tree
from ..textfiles import CsvSpec, read_csv_series

__all__ = ["DEMO_SERIES", "DemoSeries", "build_demo_store", "data_file"]

T = TimeSeriesType


@dataclass(frozen=True)
class DemoSeries:
    """One CSV of the demo and the owners it is added for (the same array for each)."""

    csv: str
    type: TimeSeriesType
    name: str
    owners: tuple[tuple[int, str], ...]
    owner_category: str = "Component"
    features: dict[str, Any] = field(default_factory=dict)
    element_type: str | None = None
    time_reference: str | None = None
    resolution: str | None = None
    units: str | None = None
    quantity_kind: str | None = None
    unit_system: str | None = None
    component_field: str | None = None

    def spec(self) -> CsvSpec:
        return CsvSpec(
            type=self.type,
            name=self.name,
            element_type=self.element_type,
            resolution=self.resolution,
            time_reference=self.time_reference,
            descriptors={
                "units": self.units,
                "quantity_kind": self.quantity_kind,
                "unit_system": self.unit_system,
                "component_field": self.component_field,
            },
        )


_POWER = {"units": "MW", "quantity_kind": "power", "unit_system": "natural_units"}
_CF = {"units": "pu", "quantity_kind": "capacity_factor", "unit_system": "component_base"}

DEMO_SERIES: tuple[DemoSeries, ...] = (
    DemoSeries("load_residential.csv", T.SingleTimeSeries, "max_active_power",
               ((101, "PowerLoad"), (102, "PowerLoad")), features={"model_year": 2030},
               resolution="PT1H", component_field="max_active_power", **_POWER),
    DemoSeries("load_commercial.csv", T.SingleTimeSeries, "max_active_power",
               ((103, "PowerLoad"),), features={"model_year": 2030},
               resolution="PT1H", component_field="max_active_power", **_POWER),
    DemoSeries("wind.csv", T.SingleTimeSeries, "max_active_power",
               ((201, "RenewableDispatch"), (202, "RenewableDispatch"),
                (203, "RenewableDispatch")),
               resolution="PT1H", component_field="max_active_power", **_CF),
    DemoSeries("solar_denver.csv", T.SingleTimeSeries, "max_active_power",
               ((301, "RenewableDispatch"),), time_reference="America/Denver",
               resolution="PT1H", component_field="max_active_power", **_CF),
    DemoSeries("reserve_requirement.csv", T.SingleTimeSeries, "requirement",
               ((501, "VariableReserve"),), time_reference="zoneless", resolution="PT1H",
               **_POWER),
    DemoSeries("outage_derate.csv", T.NonSequentialTimeSeries, "outage_derate",
               ((901, "GeometricDistributionForcedOutage"),),
               owner_category="SupplementalAttribute", **_POWER),
    DemoSeries("storage_limit.csv", T.PersistentTimeSeries, "storage_level_limit",
               ((601, "HydroReservoir"),), time_reference="zoneless", units="pu",
               quantity_kind="fraction"),
    DemoSeries("thermal_cost_curve.csv", T.PersistentTimeSeries, "variable_cost",
               ((401, "ThermalStandard"),), element_type="piecewise_linear",
               units="$/h", quantity_kind="cost", component_field="operation_cost"),
    DemoSeries("wind_forecast.csv", T.Deterministic, "max_active_power",
               ((201, "RenewableDispatch"),), features={"source": "nwp"}, resolution="PT1H",
               component_field="max_active_power", **_CF),
    DemoSeries("load_forecast_probabilistic.csv", T.Probabilistic, "max_active_power",
               ((101, "PowerLoad"),), features={"model_year": 2030}, resolution="PT1H",
               component_field="max_active_power", **_POWER),
    DemoSeries("hydro_inflow_scenarios.csv", T.Scenarios, "inflow",
               ((601, "HydroReservoir"),), resolution="PT1H", units="m3/s",
               quantity_kind="flow"),
)  # fmt: skip


def data_file(name: str) -> Path:
    """The path of a demo CSV shipped in the package."""
    path = resources.files("infrastore_sqlite.demo") / "data" / name
    return Path(str(path))


def build_demo_store(path: str | Path) -> Store:
    """Create the demo store at ``path`` (refused if a store is there) and return it open.

    Every series is added in one transaction; the caller closes the store.
    """
    items = []
    for entry in DEMO_SERIES:
        series = read_csv_series(data_file(entry.csv), entry.spec())
        for owner_id, owner_type in entry.owners:
            items.append(
                {
                    "owner_id": owner_id,
                    "owner_type": owner_type,
                    "owner_category": entry.owner_category,
                    "time_series": series,
                    "features": dict(entry.features),
                }
            )
    store = Store.create(path)
    try:
        store.add_time_series_bulk(items)
    except BaseException:
        store.close()
        remove_tree(Path(path))
        raise
    return store
