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

import json
import re
import sqlite3
import warnings
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any
from zoneinfo import ZoneInfo

import infrastore
import numpy as np
import pytest
from catalog_rows import recheck_rows
from conftest import ADDITIONS

import infrastore_sqlite
from infrastore_sqlite.core.elements import minimal_width, parse_element_type, shrink
from infrastore_sqlite.core.hashing import data_hash

pytestmark = pytest.mark.interop

REF: ModuleType = infrastore
OURS: ModuleType = infrastore_sqlite

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
COMPOSITES = ("linear_function", "quadratic_function", "piecewise_linear", "piecewise_step")


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


# ---------------------------------------------------------------------- comparing databases


def dump(path: Path) -> tuple[list[tuple], dict[str, list[tuple]]]:
    con = sqlite3.connect(path)
    try:
        entries = con.execute(
            f"SELECT type, name, tbl_name, sql FROM sqlite_master WHERE NOT {ADDITIONS}"
        ).fetchall()
        tables = {
            name: con.execute(f'SELECT * FROM "{name}" ORDER BY rowid').fetchall()
            for kind, name, _, _ in entries
            if kind == "table"
        }
        return entries, tables
    finally:
        con.close()


def element_type_of(series_rows: list[tuple], con_cols: list[str]) -> str:
    ets = {r[con_cols.index("element_type")] for r in series_rows}
    assert len(ets) == 1
    return ets.pop()


def shrunk_cells(rows: list[tuple], et: str) -> tuple[list[tuple], set[int]]:
    """Values rows with every composite array's JSON cells re-spelled at minimal width.

    Returns the rows and the array_ids whose cells changed.
    """
    kind = parse_element_type(et)
    by_array: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_array[r[0]].append(i)
    out = list(rows)
    changed: set[int] = set()
    for array_id, idx in by_array.items():
        cells = np.array([json.loads(rows[i][-1]) for i in idx], dtype=np.float64)
        small = shrink(kind, cells)
        if small.shape != cells.shape:
            changed.add(array_id)
            for i, row in zip(idx, small.tolist(), strict=True):
                text = json.dumps(row, separators=(",", ":"))
                out[i] = (*rows[i][:-1], text)
    return out, changed


def compare_databases(ref_path: Path, our_path: Path) -> dict[str, set[int]]:
    """Assert the two exports agree; returns the composite arrays the peer wrote padded."""
    ref_master, ref_tables = dump(ref_path)
    our_master, our_tables = dump(our_path)
    assert [e[:3] for e in our_master] == [e[:3] for e in ref_master]  # names and order
    for ours, theirs in zip(our_master, ref_master, strict=True):
        assert ours[3] == theirs[3], ours[1]  # DDL text, views included
    padded: dict[str, set[int]] = {}
    for name, ref_rows in ref_tables.items():
        our_rows = our_tables[name]
        if name.endswith("_values"):
            base = name[: -len("_values")]
            con = sqlite3.connect(our_path)
            cols = [c[1] for c in con.execute(f'PRAGMA table_info("{base}_series")')]
            con.close()
            et = element_type_of(our_tables[base + "_series"], cols)
            if et in COMPOSITES:
                _, ours_changed = shrunk_cells(our_rows, et)
                assert not ours_changed, f"{name}: we wrote padded composite rows"
                ref_rows, changed = shrunk_cells(ref_rows, et)
                if changed:
                    padded[name] = changed
        assert sorted(our_rows, key=repr) == sorted(ref_rows, key=repr), name
    return padded


FORECASTS = ("Deterministic", "DeterministicSingleTimeSeries", "Probabilistic", "Scenarios")
LANES = {"Probabilistic": "percentile", "Scenarios": "scenario"}


def partitions(con: sqlite3.Connection) -> list[str]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return [n[: -len("_values")] for n in names if n.endswith("_values")]


def array_of(con: sqlite3.Connection, base: str, array_id: int) -> np.ndarray:
    """The stored-form array one array_id's rows spell, rebuilt from the tables."""
    from infrastore_sqlite.interchange.sqlite.cells import decode_cells

    ((tst, et),) = con.execute(
        f'SELECT DISTINCT time_series_type, element_type FROM "{base}_series"'
    ).fetchall()
    lane = LANES.get(tst)
    forecast = tst in FORECASTS
    order = ("issue_time, " if forecast else "") + "timestamp" + (f", {lane}" if lane else "")
    rows = con.execute(
        f'SELECT value{", issue_time" if forecast else ""} FROM "{base}_values" '
        f"WHERE array_id = ? ORDER BY {order}",
        (array_id,),
    ).fetchall()
    flat = decode_cells([r[0] for r in rows], parse_element_type(et).dtype)
    if not forecast:
        return flat
    count = len({r[1] for r in rows})
    lanes = 1
    if lane:
        lanes = con.execute(
            f'SELECT count(DISTINCT {lane}) FROM "{base}_values" WHERE array_id = ?', (array_id,)
        ).fetchone()[0]
    cube = flat.reshape(count, len(rows) // (count * lanes), lanes, *flat.shape[1:])
    if lane:
        return np.ascontiguousarray(np.transpose(cube, (2, 1, 0, *range(3, cube.ndim))))
    return np.ascontiguousarray(np.swapaxes(cube[:, :, 0], 0, 1))


def rederive_hashes(path: Path) -> None:
    """Every arrays row's data_hash is the hash of what its values rows hold."""
    con = sqlite3.connect(path)
    try:
        for base in partitions(con):
            for array_id, h in con.execute(f'SELECT id, data_hash FROM "{base}_arrays"').fetchall():
                assert data_hash(array_of(con, base, array_id)).hex() == h, (base, array_id)
    finally:
        con.close()


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


def range_specs(L: ModuleType) -> list[tuple]:
    """A store whose series all overlap the first hours of 2024 (UTC), for slicing."""
    C = L.OwnerCategory.Component
    STS = L.SingleTimeSeries
    ts = [T0, T0 + timedelta(minutes=90), T0 + 4 * H, T0 + 7 * H]
    pwl = np.array(
        [[2, 0, 0, 1, 1.5], [1, 5, 5, 0, 0], [1, 6, 6, 0, 0], [0, 0, 0, 0, 0]], dtype=float
    )
    series = [
        STS(T0, "PT1H", np.array([1.0, np.nan, np.inf, 4.0, 5.0, 6.0]), "sts"),
        STS(T0, "PT1H", np.arange(6, dtype=np.int32), "sts_i32"),
        STS(T0, "PT1H", np.arange(12.0).reshape(6, 2), "sts_2"),
        STS(T0, "PT1H", pwl, "pwl", element_type="piecewise_linear"),
        STS(
            T0,
            "PT1H",
            np.array([[2, 0, 1, 5], [1, 3, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0]], dtype=float),
            "pws",
            element_type="piecewise_step",
        ),
        STS(T0, "PT30M", np.arange(12.0), "sts_30m"),
        L.NonSequentialTimeSeries(ts, np.array([1.0, 2.0, np.nan, 4.0]), "ns"),
        L.NonSequentialTimeSeries(ts, np.array([[1, 2]] * 4, dtype=np.uint16), "ns_2"),
        L.PersistentTimeSeries(ts, np.array([5.0, 6.0, 7.0, 8.0]), "pers"),
        L.Deterministic(T0, "PT1H", "PT3H", "PT2H", 3, np.arange(9.0).reshape(3, 3), "det"),
        L.Deterministic(
            T0,
            "PT1H",
            "PT2H",
            "PT2H",
            3,
            np.array([[[1, 5, 5, 0, 0]] * 3, [[2, 0, 0, 1, 1]] * 3], dtype=float),
            "det_pwl",
            element_type="piecewise_linear",
        ),
        L.Probabilistic(
            T0, "PT1H", "PT2H", "PT2H", 3, [0.1, 0.9], np.arange(12.0).reshape(2, 2, 3), "prob"
        ),
        L.Scenarios(T0, "PT1H", "PT2H", "PT2H", 3, np.arange(12.0).reshape(2, 2, 3), "scen"),
    ]
    return [(1, "Gen", C, ts_, None) for ts_ in series]


def build_ranged(L: ModuleType, path: Path) -> Any:
    store = L.Store.create(path)
    for owner, ot, cat, ts, feats in range_specs(L):
        store.add_time_series(owner, ot, cat, ts, features=feats)
    store.add_time_series(
        2, "Gen", L.OwnerCategory.Component, L.SingleTimeSeries(T0, "PT15M", np.arange(8.0), "src")
    )
    store.transform_single_time_series("PT1H", "PT30M", resolution="PT15M")
    return store


@pytest.fixture(scope="module")
def ranged(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("ranged")
    ref = build_ranged(REF, d / "ref.h5")
    ours = build_ranged(OURS, d / "ours.h5")
    yield ref, ours
    ref.close()
    ours.close()


RANGES = [
    (T0 + timedelta(minutes=90), T0 + 4 * H),
    (T0 + 2 * H, T0 + 3 * H),
    (T0 + 2 * H, T0 + 4 * H + timedelta(minutes=1)),
    (T0, T0 + 2 * H),
    (T0 + 4 * H, T0 + 8 * H),
]


@pytest.mark.parametrize(("start", "end"), RANGES)
def test_same_time_range_exports(ranged, tmp_path: Path, start, end) -> None:
    ref, ours = ranged
    filters: list[dict] = [
        {"time_series_type": "SingleTimeSeries", "owner_id": 1},
        {"time_series_type": "NonSequentialTimeSeries"},
        {"time_series_type": "PersistentTimeSeries"},
        {"name_glob": "[dps][ecr]*", "owner_id": 1},
        {"include_derived": True, "time_series_type": "DeterministicSingleTimeSeries"},
    ]
    compared = 0
    for i, f in enumerate(filters):
        outcome = []
        for store, tag in ((ref, "r"), (ours, "o")):
            path = tmp_path / f"{tag}{i}.sqlite"
            try:
                outcome.append(store.export_sqlite(path, time_range=(start, end), **f))
            except (REF.InvalidParameterError, OURS.InvalidParameterError):
                outcome.append("refused")
                assert not path.exists()
        assert outcome[1] == outcome[0], f
        if outcome[0] != "refused":
            compared += 1
            compare_databases(tmp_path / f"r{i}.sqlite", tmp_path / f"o{i}.sqlite")
            rederive_hashes(tmp_path / f"o{i}.sqlite")
    assert compared >= 3


@pytest.mark.parametrize(
    ("start", "end", "filters"),
    [
        (T0 + H, T0 + 2 * H, {"name": "det"}),  # not on a window boundary
        (T0 + 9 * H, T0 + 12 * H, {"name": "det"}),  # past the last window
        (T0 - H, T0 + H, {"name": "pers"}),  # before the first breakpoint
        (T0 + 2 * H, T0 + 2 * H, {"name": "det"}),  # empties the series
        (T0 + 100 * H, T0 + 200 * H, {"name": "sts"}),  # empties the series
        (T0 + H, T0, {"name": "sts"}),  # end < start
    ],
)
def test_same_time_range_refusals(ranged, tmp_path: Path, start, end, filters) -> None:
    ref, ours = ranged
    for store, name in ((ref, "r"), (ours, "o")):
        with pytest.raises((REF.InvalidParameterError, OURS.InvalidParameterError)):
            store.export_sqlite(tmp_path / f"{name}.sqlite", time_range=(start, end), **filters)
    assert not (tmp_path / "o.sqlite").exists()


def test_naive_bounds_on_a_utc_series_are_its_wall_clock_where_the_reference_refuses(
    ranged, tmp_path: Path
) -> None:
    # A deliberate difference (issue 11): one naive range serves a mixed selection.
    ref, ours = ranged
    naive = (datetime(2024, 1, 1, 1), datetime(2024, 1, 1, 4))
    with pytest.raises(REF.InvalidParameterError):
        ref.export_sqlite(tmp_path / "r.sqlite", time_range=naive, name="sts")
    aware = tuple(t.replace(tzinfo=UTC) for t in naive)
    assert ours.export_sqlite(tmp_path / "o.sqlite", time_range=naive, name="sts") == (
        ours.export_sqlite(tmp_path / "o2.sqlite", time_range=aware, name="sts")
    )


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


def test_the_reference_imports_our_sliced_export(ranged, tmp_path: Path) -> None:
    ref, ours = ranged
    window = (T0 + 2 * H, T0 + 4 * H + timedelta(minutes=1))
    ours.export_sqlite(tmp_path / "o.sqlite", time_range=window, owner_id=1)
    fresh = REF.Store.create(tmp_path / "fresh.h5")
    ids = fresh.import_sqlite(tmp_path / "o.sqlite")
    originals = ref.read_by_ids_range([m["id"] for m in ref.list_metadata(owner_id=1)], window)
    assert len(ids) == len(originals) == len(range_specs(REF))
    by_name = {m["name"]: m["id"] for m in fresh.list_metadata()}
    for a in originals:
        b = fresh.read_by_id(by_name[a.name])
        et = parse_element_type(a.element_type)
        x = np.asarray(a.data)
        x = shrink(et, x) if et.is_ragged else x
        assert x.tobytes() == np.asarray(b.data).tobytes(), a.name
        if hasattr(a, "timestamps"):
            assert a.timestamps == b.timestamps, a.name
        else:
            assert (a.initial_timestamp, a.count) == (b.initial_timestamp, b.count), a.name
    fresh.close()


# ---------------------------------------------------------------------- names, prefixes, refusals


def small_store(L: ModuleType, path: Path, refs: list[str | None]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = L.Store.create(path)
        for i, tr in enumerate(refs):
            store.add_time_series(
                i + 1,
                "Gen",
                L.OwnerCategory.Component,
                L.SingleTimeSeries(T0, "PT1H", np.arange(2.0), f"s{i}", time_reference=tr),
            )
    return store


@pytest.mark.parametrize(
    "refs",
    [
        ["utc", "UTC", "Utc"],
        ["Etc/GMT+1", "Etc/GMT-1", "Etc/GMT_1", "Etc/GMT_1_2"],
        ["CON", "Con", "x_CON", "nul", "LPT9", "Europe/CON", "Nul/x"],
        ["+05:30", "offset_plus05_30", "-00:30", "+14:00", "-10:00", "+01:00"],
        ["Zoneless", "zoneless", "unspecified", "a/b", "a_b", "America/Argentina/Buenos_Aires"],
    ],
)
def test_same_partition_names(tmp_path: Path, refs: list[str]) -> None:
    results = []
    for L, tag in ((REF, "r"), (OURS, "o")):
        store = small_store(L, tmp_path / f"{tag}.h5", refs)
        results.append(store.export_sqlite(tmp_path / f"{tag}.sqlite"))
        store.close()
    assert results[1] == results[0]
    compare_databases(tmp_path / "r.sqlite", tmp_path / "o.sqlite")


PREFIXES = [
    "",
    "run1_",
    "A_",
    "__",
    "all_",
    "xSingleTimeSeries_",
    "a_singletimeseries_",
    "run1",
    "_a",
    "x_SingleTimeSeries",
    "1a_",
    "9sqlite_",
    "sqlite_x_",
    "Sqlite_a",
    "a-b_",
    "runé",
    "1-a",
    "x_SingleTimeSeries_",
    "a__Scenarios_",
    "DeterministicSingleTimeSeries_",
    "Probabilistic_x_",
]


def test_same_prefix_rules(tmp_path: Path) -> None:
    ref = small_store(REF, tmp_path / "r.h5", ["utc"])
    ours = small_store(OURS, tmp_path / "o.h5", ["utc"])
    for i, prefix in enumerate(PREFIXES):
        outcome = []
        for store, tag, err in (
            (ref, "r", REF.InvalidParameterError),
            (ours, "o", OURS.InvalidParameterError),
        ):
            path = tmp_path / f"{tag}{i}.sqlite"
            try:
                outcome.append(store.export_sqlite(path, table_prefix=prefix))
            except err:
                outcome.append("refused")
                assert not path.exists()
        assert outcome[1] == outcome[0], prefix
    ref.close()
    ours.close()


def _message_list(text: str) -> str:
    """The parenthesized or colon-introduced list of names an error carries."""
    m = re.search(r"\(([^()]*)\); nothing was written", text)
    if m:
        return m.group(1)
    m = re.search(r"\+0\.0\): (.*)\. Nothing was written", text)
    if m:
        return m.group(1)
    m = re.search(r"holds (\w+) but no (\w+) beside it", text)
    assert m, text
    return m.group(0)


def _both(tmp_path: Path, setup: Callable[[ModuleType, Any, Path], None], **kw: Any) -> list[str]:
    """Run one refused export in both implementations; the names they report."""
    messages = []
    for L, tag in ((REF, "r"), (OURS, "o")):
        (tmp_path / tag).mkdir()
        store = small_store(L, tmp_path / tag / "s.h5", [])
        target = tmp_path / tag / "e.sqlite"
        setup(L, store, target)
        before = target.read_bytes() if target.exists() else None
        with pytest.raises(L.InvalidParameterError) as err:
            store.export_sqlite(target, **kw)
        if before is not None:
            assert target.read_bytes() == before
        messages.append(_message_list(str(err.value)))
        store.close()
    return messages


def _add(L: ModuleType, store: Any, owner: int, name: str, data: Any, **kw: Any) -> None:
    store.add_time_series(
        owner,
        "Gen",
        L.OwnerCategory.Component,
        L.SingleTimeSeries(T0, "PT1H", np.asarray(data), name, **kw),
    )


def test_same_negative_zero_report(tmp_path: Path) -> None:
    def setup(L: ModuleType, store: Any, target: Path) -> None:
        _add(L, store, 1, "a", np.array([-0.0], dtype=np.float32))
        store.add_time_series(
            2,
            "Gen",
            L.OwnerCategory.Component,
            L.Deterministic(T0, "PT1H", "PT1H", "PT1H", 1, np.array([[-0.0]]), "b"),
        )
        for i in range(5):
            _add(L, store, 3 + i, f"c{i}", [-0.0, float(i)])
        _add(L, store, 20, "json", [[-0.0, 1.0]])

    ref_msg, our_msg = _both(tmp_path, setup)
    assert our_msg == ref_msg
    assert ref_msg.startswith("'a' (owner 1), 'b' (owner 2), 'c0' (owner 3)")


@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE TABLE SingleTimeSeries_f64_utc_series (x); CREATE TABLE ALL_ARRAYS (x)",
        "CREATE TABLE t (x); CREATE INDEX singletimeseries_f64_utc_values_key ON t (x)",
        "CREATE VIEW all_values AS /* infrastore */ SELECT 1",
        "CREATE TABLE t (x); CREATE TRIGGER all_series AFTER INSERT ON t BEGIN SELECT 1; END",
        "CREATE TABLE Deterministic_x_values (x); CREATE TABLE Deterministic_x_arrays (x)",
        "CREATE TABLE Scenarios_y_values (x); CREATE TABLE Scenarios_y_series (x)",
    ],
)
def test_same_collision_reports(tmp_path: Path, ddl: str) -> None:
    def setup(L: ModuleType, store: Any, target: Path) -> None:
        _add(L, store, 1, "a", [1.0])
        _add(L, store, 2, "b", np.array([1], dtype=np.int32))
        con = sqlite3.connect(target)
        con.executescript(ddl)
        con.close()

    ref_msg, our_msg = _both(tmp_path, setup)
    assert our_msg == ref_msg


def test_same_views_after_successive_exports(tmp_path: Path) -> None:
    selections = [
        {"table_prefix": "p_", "name": "s0"},
        {"table_prefix": "p_", "name": "s1"},
        {"table_prefix": "q_", "name": "s2"},
        {"table_prefix": "p_", "name_glob": "s[34]"},
        {"name": "s5"},
    ]
    refs = ["utc", "-07:00", "utc", "America/Denver", "zoneless", "UTC"]
    for L, tag in ((REF, "r"), (OURS, "o")):
        store = small_store(L, tmp_path / f"{tag}.h5", refs)
        for sel in selections:
            store.export_sqlite(tmp_path / f"{tag}.sqlite", **sel)
        store.close()
    compare_databases(tmp_path / "r.sqlite", tmp_path / "o.sqlite")
    con = sqlite3.connect(tmp_path / "o.sqlite")
    assert con.execute("SELECT count(*) FROM p_all_series").fetchone()[0] == 4
    assert con.execute("SELECT count(*) FROM q_all_series").fetchone()[0] == 1
    assert con.execute("SELECT count(*) FROM all_series").fetchone()[0] == 1
    con.close()
