"""The SQLite export against the reference implementation (infrastore 0.15.1).

The same varied store is built in both implementations (every type and dtype, shapes [2]
and [2,3], tuple(3,f64), the four composites, the utc / offset / zone / zoneless /
unspecified references, NaN and infinities, arrays shared across owners, features,
descriptors set and unset, P1M, pre-1970 instants), exported by both, and compared table
by table: the same names in the same sqlite_master order, the same DDL text, the same rows
as multisets, the same hashes and time axes and the same return value. Then our export is
imported into the reference and every series must come back identical to the reference's
own copy.

The documented differences, and only those, are allowed:

* Composite rows: the peer writes a composite array's rows as stored (padding included)
  and hashes the shrunk form; we write every array at its minimal width. The hash, ids
  and every other column agree; only such arrays' JSON cells are compared after shrinking.
* An over-padded composite comes back from the import at its minimal width with a new
  data_hash (the peer's own round trip does the same): its decoded values must agree.
* A DeterministicSingleTimeSeries of a non-scalar source is broken in the peer (§15.1),
  so the derived comparison uses scalar sources only.
* Error message wording (the refusals themselves must agree).
"""

from __future__ import annotations

import sqlite3
import warnings
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from catalog_rows import recheck_rows
from export_interop_helpers import (
    OURS,
    REF,
    T0,
    H,
    compare_databases,
    rederive_hashes,
)

from infrastore_sqlite.core.elements import minimal_width, parse_element_type, shrink
from infrastore_sqlite.core.hashing import data_hash

# ---------------------------------------------------------------------- the varied store


def varied_specs(L: ModuleType) -> list[tuple]:
    """(owner_id, owner_type, category, series, features), identical for both libraries."""
    C = L.OwnerCategory.Component
    SA = L.OwnerCategory.SupplementalAttribute
    STS = L.SingleTimeSeries
    out: list[tuple] = []

    def add(owner: int, ts: Any, feats: dict | None = None, cat: Any = C, ot: str = "Gen"):
        out.append((owner, ot, cat, ts, feats))

    add(
        1,
        STS(
            T0,
            "PT1H",
            np.array([1.5, np.nan, np.inf, -np.inf, 1e-7, 1e16, 0.00001, 123456789.0]),
            "f64",
            units="MW",
            quantity_kind="power",
            unit_system="natural_units",
            component_field="max_active_power",
            application_data='{"a":1}',
        ),
        {"zone": "north", "year": 2030, "w": 0.5, "flag": True, "big": 1e20, "ü": "é", "Z": 2.0},
    )
    add(1, STS(T0, "PT1H", np.array([1.1, 3.4028234663852886e38, np.nan], dtype=np.float32), "f32"))
    for dt in ("int64", "int32", "uint64", "int16", "int8", "uint32", "uint16", "uint8"):
        info = np.iinfo(dt)
        data = np.array([info.min, 0, 7, min(int(info.max), 2**63 - 1)], dtype=dt)
        add(1, STS(T0, "PT1H", data, dt), {"kind": dt})
    add(1, STS(T0, "PT1H", np.array([True, False, True]), "bool", unit_system="component_base"))
    add(1, STS(T0, "PT1H", np.array([[1.0, -0.0], [np.nan, np.inf], [0.1, 1e300]]), "f64_2"))
    add(1, STS(T0, "PT1H", np.arange(12.0).reshape(2, 2, 3) * 0.5 - 1, "f64_2x3"))
    add(1, STS(T0, "PT1H", np.arange(12, dtype=np.int32).reshape(2, 2, 3) - 6, "i32_2x3"))
    add(1, STS(T0, "PT1H", np.array([[True, False], [False, True]]), "bool_2"))
    add(1, STS(T0, "PT1H", np.array([[1, 2], [3, 4]], dtype=np.uint8), "u8_2"))
    add(1, STS(T0, "PT1H", np.arange(6.0).reshape(1, 3, 2), "f64_3x2"))
    add(
        1,
        STS(
            T0,
            "PT1H",
            np.array([[1.0, 2, -0.0], [np.nan, -np.inf, 3.5]]),
            "tup",
            element_type="tuple(3,f64)",
        ),
    )
    add(
        1,
        STS(
            T0,
            "PT1H",
            np.array([[2.5, -1.0], [0.0, 0.0], [1e30, -0.5]]),
            "lin",
            element_type="linear_function",
        ),
    )
    add(
        1,
        STS(
            T0,
            "PT1H",
            np.array([[0.5, 2.0, 3.0], [-1.25, 0.0, 7.5]]),
            "quad",
            element_type="quadratic_function",
        ),
    )
    pwl = np.array([[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0]], dtype=float)
    add(1, STS(T0, "PT1H", pwl, "pwl", element_type="piecewise_linear"))
    add(
        1,
        STS(
            T0,
            "PT1H",
            np.array([[2, 0, 1, 5], [1, 3, 0, 0]], dtype=float),
            "pws",
            element_type="piecewise_step",
        ),
    )
    # Composites stored wider than they need (the documented difference).
    add(
        9,
        STS(
            T0,
            "PT1H",
            np.concatenate([pwl, np.zeros((2, 4))], axis=1),
            "pwl_wide",
            element_type="piecewise_linear",
        ),
    )
    add(
        9,
        STS(
            T0,
            "PT1H",
            np.array([[1, 5, 5, 0, 0], [1, 6, 6, 0, 0]], dtype=float),
            "pwl_pad",
            element_type="piecewise_linear",
        ),
    )
    add(
        9,
        STS(
            T0,
            "PT1H",
            np.array([[1, 2, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]], dtype=float),
            "pws_pad",
            element_type="piecewise_step",
        ),
    )
    # Shared arrays: across owners, categories, and one hash on another axis.
    shared = np.array([10.0, 20.0, 30.0])
    add(2, STS(T0, "PT1H", shared, "shared"))
    add(3, STS(T0, "PT1H", shared, "shared"))
    add(4, STS(T0, "PT1H", shared, "shared"), cat=SA, ot="Weather")
    add(5, STS(T0 + 5 * H, "PT1H", shared, "shared_later"))
    # References.
    add(1, STS(datetime(2024, 1, 1, tzinfo=timezone(-7 * H)), "PT1H", np.arange(3.0), "offset"))
    add(
        1,
        STS(
            datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
            "PT30M",
            np.arange(3.0),
            "offset_plus",
        ),
    )
    add(
        1,
        STS(
            datetime(2024, 3, 10, tzinfo=ZoneInfo("America/Denver")),
            "PT1H",
            np.arange(6.0),
            "denver",
        ),
    )
    add(1, STS(datetime(2024, 1, 31), "P1M", np.arange(5.0), "zoneless_p1m"))
    add(1, STS(datetime(2024, 2, 29, tzinfo=UTC), "P1Y", np.arange(3.0), "p1y"))
    add(1, STS(datetime(1969, 12, 31, 22, tzinfo=UTC), "PT1H", np.arange(4.0), "pre1970"))
    add(1, STS(T0, "PT1H", np.array([7.0, 8.0]), "unspec"))  # made unspecified below
    add(1, STS(T0, "PT1H", np.array([[7.0, 8.0]]), "unspec_2"))  # likewise
    # Irregular.
    NS = L.NonSequentialTimeSeries
    ts = [T0, T0 + timedelta(minutes=7), T0 + timedelta(hours=5, milliseconds=500)]
    add(1, NS(ts, np.array([1.0, np.nan, -2.0]), "ns"))
    add(1, NS(ts, np.array([[1, 2], [3, 4], [5, 6]], dtype=np.int32), "ns_i32_2"))
    add(1, NS([datetime(1960, 1, 1, tzinfo=UTC), T0], np.array([1.0, 2.0]), "ns_pre1970"))
    add(
        1,
        NS(
            [datetime(2024, 1, 1), datetime(2024, 1, 2)],
            np.array([[1.0, 2, 3]] * 2),
            "ns_zl",
            element_type="tuple(3,f64)",
        ),
    )
    add(1, L.PersistentTimeSeries(ts, np.array([5.0, 6.0, 7.0]), "pers"))
    add(1, L.PersistentTimeSeries(ts, np.array([True, False, True]), "pers_bool"))
    # Forecasts.
    add(1, L.Deterministic(T0, "PT1H", "PT3H", "PT2H", 3, np.arange(9.0).reshape(3, 3), "det"))
    add(1, L.Deterministic(T0, "PT1H", "PT2H", "PT0S", 1, np.arange(2.0).reshape(2, 1), "det_one"))
    add(1, L.Deterministic(T0, "PT1H", "PT2H", "PT2H", 2, np.arange(8.0).reshape(2, 2, 2), "det_2"))
    add(
        1,
        L.Deterministic(
            T0,
            "PT1H",
            "PT2H",
            "PT1H",
            2,
            np.array(
                [[[2, 0, 0, 1, 1], [1, 5, 5, 0, 0]], [[1, 0, 0, 0, 0], [2, 1, 1, 2, 2]]],
                dtype=float,
            ),
            "det_pwl",
            element_type="piecewise_linear",
        ),
    )
    add(
        1,
        L.Deterministic(
            datetime(2024, 1, 31, tzinfo=UTC),
            "P1M",
            "P2M",
            "P1M",
            2,
            np.arange(4.0).reshape(2, 2),
            "det_p1m",
        ),
    )
    add(
        1,
        L.Deterministic(
            datetime(2024, 1, 1, tzinfo=timezone(-7 * H)),
            "PT1H",
            "PT2H",
            "PT1H",
            2,
            np.arange(4, dtype=np.int16).reshape(2, 2),
            "det_off",
        ),
    )
    add(
        1,
        L.Probabilistic(
            T0, "PT1H", "PT2H", "PT1H", 2, [0.1, 0.5, 0.9], np.arange(12.0).reshape(3, 2, 2), "prob"
        ),
    )
    add(
        1,
        L.Probabilistic(
            T0,
            "PT1H",
            "PT2H",
            "PT1H",
            2,
            [0.25, 0.75],
            np.array([[[[1.0, 2.0]] * 2] * 2] * 2),
            "prob_lin",
            element_type="linear_function",
        ),
    )
    add(
        1,
        L.Probabilistic(
            datetime(2024, 1, 31, tzinfo=UTC),
            "P1M",
            "P2M",
            "P1M",
            2,
            [0.5, 0.9],
            np.arange(8.0).reshape(2, 2, 2),
            "prob_m",
        ),
    )
    add(
        1,
        L.Scenarios(
            T0, "PT1H", "PT2H", "PT1H", 3, np.arange(12, dtype=np.int64).reshape(2, 2, 3), "scen"
        ),
    )
    add(
        1,
        L.Scenarios(
            datetime(2024, 1, 1),
            "PT1H",
            "PT2H",
            "P1D",
            2,
            np.arange(12.0).reshape(3, 2, 2),
            "scen_zl",
        ),
    )
    add(
        1,
        L.Scenarios(
            T0,
            "PT1H",
            "PT2H",
            "PT1H",
            2,
            np.array([[[[1, 0, 0, 0, 0]] * 2] * 2] * 2, dtype=float),
            "scen_pwl",
            element_type="piecewise_linear",
        ),
    )
    # Scalar sources of derived series (the only kind the peer exports correctly).
    add(7, STS(T0, "PT15M", np.arange(8.0), "dsts_src"))
    add(8, STS(T0, "PT15M", np.arange(8, dtype=np.int32), "dsts_src_i"))
    return out


def build(L: ModuleType, path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = L.Store.create(path)
        for owner, ot, cat, ts, feats in varied_specs(L):
            store.add_time_series(owner, ot, cat, ts, features=feats)
        store.transform_single_time_series("PT1H", "PT30M", resolution="PT15M")
        store.close()
    # "Unspecified" has no constructor; a catalog NULL is what an OpenAPI import leaves.
    # Our store is a directory holding its catalog; the reference's catalog is beside it.
    cat = sqlite3.connect(path / "catalog.sqlite" if path.is_dir() else str(path) + ".sqlite")
    cat.execute(
        "UPDATE time_series_associations SET time_reference = NULL "
        "WHERE name IN ('unspec', 'unspec_2')"
    )
    recheck_rows(cat, "name IN ('unspec', 'unspec_2')")  # as an earlier release's rows
    cat.commit()
    cat.close()
    return L.Store.open(path)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("interop")
    ref = build(REF, d / "ref.h5")
    ours = build(OURS, d / "ours.h5")
    yield ref, ours, d
    ref.close()
    ours.close()


@pytest.fixture(scope="module")
def exported(stores):
    ref, ours, d = stores
    r = ref.export_sqlite(d / "ref.sqlite")
    o = ours.export_sqlite(d / "ours.sqlite")
    return r, o, d / "ref.sqlite", d / "ours.sqlite"


# ---------------------------------------------------------------------- whole-store exports


def test_same_result_lists(exported) -> None:
    r, o, _, _ = exported
    assert o == r
    kinds = {(d["time_series_type"], d["time_reference"]) for d in o}
    assert ("SingleTimeSeries", "unspecified") in kinds
    assert ("SingleTimeSeries", "-07:00") in kinds
    assert ("SingleTimeSeries", "America/Denver") in kinds
    assert ("SingleTimeSeries", "zoneless") in kinds
    assert len({d["value_type"] for d in o}) >= 20


def test_same_tables_ddl_and_rows(exported) -> None:
    _, _, ref_path, our_path = exported
    padded = compare_databases(ref_path, our_path)
    # Only the composites stored wider than they need are spelled differently.
    assert set(padded) == {
        "SingleTimeSeries_piecewise_linear_utc_values",
        "SingleTimeSeries_piecewise_step_utc_values",
        "Scenarios_piecewise_linear_utc_values",
    }
    assert all(len(ids) == 1 for ids in padded.values())


def test_our_hashes_rederive_from_our_rows(exported) -> None:
    rederive_hashes(exported[3])


def test_same_export_with_derived_series(stores) -> None:
    ref, ours, d = stores
    r = ref.export_sqlite(d / "ref_d.sqlite", include_derived=True)
    o = ours.export_sqlite(d / "ours_d.sqlite", include_derived=True)
    assert o == r
    assert [x["time_series_type"] for x in o].count("DeterministicSingleTimeSeries") == 2
    compare_databases(d / "ref_d.sqlite", d / "ours_d.sqlite")
    rederive_hashes(d / "ours_d.sqlite")


# ---------------------------------------------------------------------- import into the reference


def _without_id(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if k != "id"}


def test_the_reference_imports_our_export(stores, exported, tmp_path: Path) -> None:
    ref, _, _ = stores
    _, _, _, our_path = exported
    fresh = REF.Store.create(tmp_path / "fresh.h5")
    ids = fresh.import_sqlite(our_path)
    originals = {
        (m["owner_id"], m["owner_category"], m["name"], m["time_series_type"]): m
        for m in ref.list_metadata()
        if m["time_series_type"] != "DeterministicSingleTimeSeries"
    }
    assert len(ids) == len(originals)
    imported = {
        (m["owner_id"], m["owner_category"], m["name"], m["time_series_type"]): m
        for m in fresh.list_metadata()
    }
    assert set(imported) == set(originals)
    over_padded = []
    for key, orig in originals.items():
        new = imported[key]
        a = ref.read_by_id(orig["id"])
        b = fresh.read_by_id(new["id"])
        x, y = np.asarray(a.data), np.asarray(b.data)
        meta_a = _without_id(ref.get_metadata_by_id(orig["id"]))
        meta_b = _without_id(fresh.get_metadata_by_id(new["id"]))
        et = parse_element_type(orig["element_type"])
        if et.is_ragged and minimal_width(et, x) < x.shape[-1]:
            # Stored wider than needed: comes back at its minimal width, a new hash.
            over_padded.append(key[2])
            assert x.dtype == y.dtype
            assert shrink(et, x).tobytes() == y.tobytes()
            assert y.shape[-1] == minimal_width(et, x)
            assert meta_b["data_hash"] == data_hash(y).hex()
            for field in ("data_hash", "element_shape"):
                meta_a.pop(field)
                meta_b.pop(field)
        else:
            assert (x.dtype, x.shape) == (y.dtype, y.shape), key
            assert x.tobytes() == y.tobytes(), key  # bit for bit: NaN, -0.0 in JSON, ±inf
        assert meta_a == meta_b, key
        if hasattr(a, "timestamps"):
            assert list(a.timestamps) == list(b.timestamps), key
        else:
            assert a.initial_timestamp == b.initial_timestamp, key
    assert sorted(over_padded) == ["pwl_pad", "pwl_wide", "pws_pad", "scen_pwl"]
    fresh.close()
