"""What ``Store.export_sqlite`` writes in the values and series tables: scalar and JSON cells,
ms timestamps, row order, derived series, the series columns."""

from __future__ import annotations

import json
import sqlite3
import warnings
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import export_sqlite_helpers
import numpy as np
from catalog_rows import recheck_rows
from export_sqlite_helpers import (
    H_MS,
    T0_MS,
    connect,
    partitions,
    series_row,
    series_type,
    table_info,
)
from varied_store import FORECASTS, LANES, T0, add, new_store, sts

from infrastore_sqlite import (
    Deterministic,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
    Store,
)

con = export_sqlite_helpers.con
varied = export_sqlite_helpers.varied

# ---------------------------------------------------------------------- values


def values_of(con: sqlite3.Connection, base: str, name: str, owner: int = 1) -> list[tuple]:
    """Every values column but array_id, in rowid order, for one series."""
    cols = [c[0] for c in table_info(con, f"{base}_values")][1:]
    return con.execute(
        f'SELECT {", ".join(cols)} FROM "{base}_values" WHERE array_id = (SELECT array_id FROM '
        f'"{base}_series" WHERE name = ? AND owner_id = ?) ORDER BY rowid',
        (name, owner),
    ).fetchall()


def test_scalar_values(varied, con) -> None:
    t = [T0_MS + k * H_MS for k in range(6)]
    got = values_of(con, "SingleTimeSeries_f64_utc", "f64")
    assert got[0] == (t[0], 1.5)
    assert got[1] == (t[1], None)  # NaN is NULL
    assert got[2] == (t[2], float("inf"))
    assert got[3] == (t[3], float("-inf"))
    assert got[4:] == [(t[4], 1e-7), (t[5], 1e16)]
    assert values_of(con, "SingleTimeSeries_f32_utc", "f32") == [
        (t[0], 1.100000023841858),
        (t[1], None),
        (t[2], float("-inf")),
    ]
    assert [v for _, v in values_of(con, "SingleTimeSeries_i64_utc", "int64")] == [
        -(2**63),
        0,
        2**63 - 1,
    ]
    assert [v for _, v in values_of(con, "SingleTimeSeries_u64_utc", "uint64")] == [
        0,
        0,
        2**63 - 1,
    ]
    assert [v for _, v in values_of(con, "SingleTimeSeries_u8_utc", "uint8")] == [0, 0, 255]
    assert [v for _, v in values_of(con, "SingleTimeSeries_i8_utc", "int8")] == [-128, 0, 127]
    assert [v for _, v in values_of(con, "SingleTimeSeries_bool_utc", "bool")] == [1, 0, 1]


def test_timestamps_are_integer_ms_negative_before_1970(varied, con) -> None:
    assert [r[0] for r in values_of(con, "SingleTimeSeries_f64_utc", "pre1970")] == [
        -7_200_000,
        -3_600_000,
        0,
    ]
    assert [r[0] for r in values_of(con, "NonSequentialTimeSeries_f64_utc", "ns_old")] == [
        -315_619_200_000,
        T0_MS,
    ]
    # Offsets and zones are instants; zoneless wall time reads as if UTC; P1M clamps.
    assert values_of(con, "SingleTimeSeries_f64_offset_minus07_00", "offset")[0][0] == (
        T0_MS + 7 * H_MS
    )
    denver = [r[0] for r in values_of(con, "SingleTimeSeries_f64_America_Denver", "denver")]
    assert np.diff(denver).tolist() == [H_MS] * 3
    months = [r[0] for r in values_of(con, "SingleTimeSeries_f64_zoneless", "p1m")]
    assert [datetime.fromtimestamp(m / 1000, UTC).day for m in months] == [31, 29, 31, 30, 31]
    ns = [r[0] for r in values_of(con, "NonSequentialTimeSeries_f64_utc", "ns")]
    assert ns == [T0_MS, T0_MS + 420_000, T0_MS + 5 * H_MS + 500]


def test_json_cells(varied, con) -> None:
    def cells(base: str, name: str, owner: int = 1) -> list[str]:
        return [r[-1] for r in values_of(con, base, name, owner)]

    assert cells("SingleTimeSeries_f64_2_utc", "f64_2") == [
        "[1.0,-0.0]",
        '[null,"Infinity"]',
        "[0.1,1e+300]",
    ]
    assert cells("SingleTimeSeries_f64_2x3_utc", "f64_2x3") == [
        "[[0.0,0.5,1.0],[1.5,2.0,2.5]]",
        "[[3.0,3.5,4.0],[4.5,5.0,5.5]]",
    ]
    assert cells("SingleTimeSeries_i32_2x3_utc", "i32_2x3") == [
        "[[-6,-5,-4],[-3,-2,-1]]",
        "[[0,1,2],[3,4,5]]",
    ]
    assert cells("SingleTimeSeries_bool_2_utc", "bool_2") == ["[1,0]", "[0,1]"]
    assert cells("SingleTimeSeries_tuple3_f64_utc", "tup") == [
        "[1.0,2.0,-0.0]",
        '[null,"-Infinity",3.5]',
    ]
    assert cells("SingleTimeSeries_linear_function_utc", "lin") == ["[2.5,-1.0]", "[0.0,0.0]"]
    assert cells("SingleTimeSeries_quadratic_function_utc", "quad") == ["[0.5,2.0,3.0]"]
    assert cells("SingleTimeSeries_piecewise_step_utc", "pws") == [
        "[2.0,0.0,1.0,5.0]",
        "[1.0,3.0,0.0,0.0]",
    ]
    assert cells("PersistentTimeSeries_i32_2_utc", "pers") == ["[1,2]", "[3,4]", "[5,6]"]


def test_over_padded_composite_is_shrunk_and_shares_the_array(varied, con) -> None:
    base = "SingleTimeSeries_piecewise_linear_utc"
    rows = con.execute(
        f'SELECT owner_id, array_id, element_shape FROM "{base}_series" ORDER BY id'
    ).fetchall()
    # The series row keeps the catalog's element_shape; both share one array.
    assert rows == [(1, 1, "[5]"), (9, 1, "[9]")]
    assert con.execute(f'SELECT count(*) FROM "{base}_arrays"').fetchone()[0] == 1
    assert [r[-1] for r in values_of(con, base, "pwl", 9)] == [
        "[2.0,0.0,0.0,1.0,1.5]",
        "[1.0,5.0,5.0,0.0,0.0]",
    ]


def test_forecast_rows_are_window_major(varied, con) -> None:
    det = values_of(con, "Deterministic_f64_utc", "det")
    # data[h, j]: window j issued at T0 + j*2h, step h at issue + h*1h.
    assert det == [
        (T0_MS + (2 * j + h) * H_MS, T0_MS + 2 * j * H_MS, float(h * 2 + j))
        for j in range(2)
        for h in range(3)
    ]
    prob = values_of(con, "Probabilistic_f64_utc", "prob")
    data = np.arange(12.0).reshape(3, 2, 2)
    assert prob == [
        (T0_MS + (j + h) * H_MS, T0_MS + j * H_MS, p, float(data[lane, h, j]))
        for j in range(2)
        for h in range(2)
        for lane, p in enumerate([0.1, 0.5, 0.9])
    ]
    scen = values_of(con, "Scenarios_i64_utc", "scen")
    data = np.arange(12).reshape(2, 2, 3)
    assert scen == [
        (T0_MS + (j + h) * H_MS, T0_MS + j * H_MS, s, int(data[s, h, j]))
        for j in range(3)
        for h in range(2)
        for s in range(2)
    ]
    # Calendar forecast: issue times step from the anchor, targets from their issue time,
    # clamped to month end (Feb 29 + P1M is Mar 29, as the reference writes it).
    months = values_of(con, "Scenarios_f64_utc", "scen_m")
    days = [
        (datetime.fromtimestamp(i / 1000, UTC).date(), datetime.fromtimestamp(t / 1000, UTC).date())
        for t, i, _, _ in months
    ]
    assert [d for k, d in enumerate(days) if k % 2 == 0] == [
        (datetime(2024, 1, 31).date(), datetime(2024, 1, 31).date()),
        (datetime(2024, 1, 31).date(), datetime(2024, 2, 29).date()),
        (datetime(2024, 2, 29).date(), datetime(2024, 2, 29).date()),
        (datetime(2024, 2, 29).date(), datetime(2024, 3, 29).date()),
    ]


def test_rows_within_an_array_are_sorted_by_issue_time_timestamp_lane(varied, con) -> None:
    for base in partitions(con):
        tst, _ = series_type(con, f"{base}_series")
        cols = ["array_id"] + (["issue_time"] if tst in FORECASTS else []) + ["timestamp"]
        if tst in LANES:
            cols.append(LANES[tst])
        got = con.execute(
            f'SELECT {", ".join(cols)} FROM "{base}_values" ORDER BY rowid'
        ).fetchall()
        by_array = defaultdict(list)
        for r in got:
            by_array[r[0]].append(r)
        for rows in by_array.values():
            assert rows == sorted(rows), base
            assert len(set(rows)) == len(rows), base
        # Each array's rows are contiguous.
        order = [r[0] for r in got]
        assert len([k for k in range(len(order)) if k == 0 or order[k] != order[k - 1]]) == len(
            by_array
        )


def test_derived_series_write_proper_cells(varied, con) -> None:
    # DSTS of a [2] source: materialized windows, each cell a whole [2] value.
    rows = values_of(con, "DeterministicSingleTimeSeries_f64_2_utc", "src2", owner=7)
    src = np.arange(12.0).reshape(6, 2)
    step = 900_000
    assert rows == [
        (
            T0_MS + (j + h) * step,
            T0_MS + j * step,
            json.dumps(src[j + h].tolist(), separators=(",", ":")),
        )
        for j in range(5)
        for h in range(2)
    ]
    ((shape, count),) = con.execute(
        'SELECT element_shape, count FROM "DeterministicSingleTimeSeries_f64_2_utc_series"'
    ).fetchall()
    assert (shape, count) == ("[2]", 5)


# ---------------------------------------------------------------------- the series table


def test_series_columns(varied, con) -> None:
    store, _, _ = varied
    r = series_row(con, "SingleTimeSeries_f64_utc", "f64")
    assert r["id"] == store.list_metadata(name="f64")[0]["id"]
    assert r["owner_type"] == "Gen"
    assert r["owner_category"] == "Component"
    assert r["time_series_type"] == "SingleTimeSeries"
    assert (r["initial_timestamp"], r["resolution"], r["length"]) == (T0_MS, "PT1H", 6)
    # Keys by byte order, compact, UTF-8 raw, floats keep a fraction.
    assert r["features"] == '{"Z":1.0,"flag":true,"w":0.5,"year":2030,"zone":"north","ü":"é"}'
    assert (r["element_type"], r["element_shape"], r["time_reference"]) == ("f64", "[]", "utc")
    assert [r[k] for k in ("units", "quantity_kind", "unit_system", "component_field")] == [
        "MW",
        "power",
        "natural_units",
        "max_active_power",
    ]
    assert r["application_data"] == '{"a":1}'
    plain = series_row(con, "SingleTimeSeries_f32_utc", "f32")
    assert plain["features"] == "{}"
    assert [
        plain[k]
        for k in ("units", "quantity_kind", "unit_system", "component_field", "application_data")
    ] == [""] * 5
    sa = series_row(con, "SingleTimeSeries_f64_utc", "shared", owner=4)
    assert (sa["owner_type"], sa["owner_category"]) == ("Weather", "SupplementalAttribute")
    assert (
        series_row(con, "SingleTimeSeries_f64_offset_minus07_00", "offset")["time_reference"]
        == "-07:00"
    )
    assert (
        series_row(con, "SingleTimeSeries_f64_America_Denver", "denver")["time_reference"]
        == "America/Denver"
    )
    assert series_row(con, "SingleTimeSeries_tuple3_f64_utc", "tup")["element_type"] == (
        "tuple(3,f64)"
    )
    det = series_row(con, "Deterministic_f64_utc", "det")
    assert [
        det[k] for k in ("initial_timestamp", "resolution", "interval", "horizon", "count")
    ] == [
        T0_MS,
        "PT1H",
        "PT2H",
        "PT3H",
        2,
    ]
    assert det["element_shape"] == "[2]"  # the catalog's: the array shape minus its lead
    prob = series_row(con, "Probabilistic_f64_utc", "prob")
    assert prob["element_shape"] == "[2,2]"
    ns = series_row(con, "NonSequentialTimeSeries_f64_utc", "ns")
    assert "initial_timestamp" not in ns and "length" not in ns


def test_unspecified_reference(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.h5")
    add(store, sts("u", [1.0, 2.0]))
    add(store, sts("v", [1.0, 2.0], time_reference="unspecified"), owner=2)
    store.close()
    cat = sqlite3.connect(tmp_path / "s.h5" / "catalog.sqlite")
    cat.execute("UPDATE time_series_associations SET time_reference = NULL WHERE name = 'u'")
    recheck_rows(cat, "name = 'u'")  # as an earlier release's row, migrated
    cat.commit()
    cat.close()
    store = Store.open(tmp_path / "s.h5")
    out = tmp_path / "e.sqlite"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = store.export_sqlite(out)
    # The catalog NULL and a zone literally named "unspecified" spell one slug: _2.
    assert [(d["values_table"], d["time_reference"]) for d in result] == [
        ("SingleTimeSeries_f64_unspecified_values", "unspecified"),
        ("SingleTimeSeries_f64_unspecified_2_values", "unspecified"),
    ]
    with connect(out) as c:
        assert c.execute(
            'SELECT time_reference FROM "SingleTimeSeries_f64_unspecified_series"'
        ).fetchall() == [("unspecified",)]
    store.close()


def test_short_arrays_of_one_grid_share_a_statement_and_keep_their_rows(tmp_path: Path) -> None:
    # Arrays of one length and anchor are written several to a statement (ids and
    # coordinates from the row number); each must still get exactly its own rows.
    import infrastore_sqlite.interchange.sqlite.writer as export_module

    s = Store.create(tmp_path / "s.h5")
    rng = np.random.default_rng(7)
    n = 5
    sts = [rng.normal(size=24) for _ in range(n)]
    det = [rng.normal(size=(3, 4)) for _ in range(n)]
    prob = [np.sort(rng.normal(size=(3, 2, 4)), axis=0) for _ in range(n)]
    scen = [rng.normal(size=(2, 2, 4)) for _ in range(n)]
    for k in range(n):
        add = lambda ts, k=k: s.add_time_series(k + 1, "Gen", "Component", ts)  # noqa: E731
        add(SingleTimeSeries(T0, "PT1H", sts[k], "sts"))
        add(Deterministic(T0, "PT1H", "PT3H", "PT2H", 4, det[k], "det"))
        add(Probabilistic(T0, "PT1H", "PT2H", "PT2H", 4, [10.0, 50.0, 90.0], prob[k], "prob"))
        add(Scenarios(T0, "PT1H", "PT2H", "PT2H", 4, scen[k], "scen"))
    statements: list[int] = []
    real = export_module._ValueWriter.statement

    def counting(self: Any, p: Any, tst: Any) -> Any:
        insert = real(self, p, tst)

        def wrapped(blocks: list[Any], cells: Any) -> None:
            statements.append(len(blocks))
            insert(blocks, cells)

        return wrapped

    export_module._ValueWriter.statement = counting  # type: ignore[method-assign]
    try:
        s.export_sqlite(tmp_path / "out.db")
    finally:
        export_module._ValueWriter.statement = real  # type: ignore[method-assign]
    assert statements == [n, n, n, n]  # one statement per partition
    con = sqlite3.connect(tmp_path / "out.db")
    for k in range(n):
        owner = k + 1
        assert values_of(con, "SingleTimeSeries_f64_utc", "sts", owner=owner) == [
            (T0_MS + h * H_MS, float(sts[k][h])) for h in range(24)
        ]
        assert values_of(con, "Deterministic_f64_utc", "det", owner=owner) == [
            (T0_MS + (2 * j + h) * H_MS, T0_MS + 2 * j * H_MS, float(det[k][h, j]))
            for j in range(4)
            for h in range(3)
        ]
        assert values_of(con, "Probabilistic_f64_utc", "prob", owner=owner) == [
            (T0_MS + (2 * j + h) * H_MS, T0_MS + 2 * j * H_MS, p, float(prob[k][lane, h, j]))
            for j in range(4)
            for h in range(2)
            for lane, p in enumerate([10.0, 50.0, 90.0])
        ]
        assert values_of(con, "Scenarios_f64_utc", "scen", owner=owner) == [
            (T0_MS + (2 * j + h) * H_MS, T0_MS + 2 * j * H_MS, sc, float(scen[k][sc, h, j]))
            for j in range(4)
            for h in range(2)
            for sc in range(2)
        ]
    con.close()
    s.close()
