"""Export to the SQLite interchange layout and import back: everything survives.

``build_varied`` fills a store with every series type, dtype, element shape and kind, the
time references (UTC, offsets, an IANA zone across DST, zoneless with P1M, unspecified),
shared arrays, features and descriptors. It takes the module as an argument so the
interop tests can build the same store in the reference implementation.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import apsw
import numpy as np
import pytest
from catalog_rows import recheck_rows
from conftest import drop_additions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from varied_store import snapshot

import infrastore_sqlite as I

T0 = datetime(2024, 1, 1, tzinfo=UTC)


# ---------------------------------------------------------------------- the varied store
def build_varied(mod, store, *, unspecified: bool = True) -> None:
    """Every kind of series the layout carries (scalar -0.0 excepted: SQLite cannot hold it)."""
    comp = mod.OwnerCategory.Component
    supp = mod.OwnerCategory.SupplementalAttribute
    rng = np.random.default_rng(7)

    def add(owner, ts, features=None, cat=comp, otype="Generator"):
        store.add_time_series(owner, otype, cat, ts, features=features)

    f64 = rng.standard_normal(24)
    f64[3], f64[5], f64[6] = np.nan, np.inf, -np.inf
    desc = {
        "units": "MW",
        "quantity_kind": "power",
        "unit_system": "natural_units",
        "component_field": "max_active_power",
        "application_data": '{"k": [1, 2]}',
    }
    add(
        1,
        mod.SingleTimeSeries(T0, "PT1H", f64, "load", **desc),
        {"year": 2030, "scale": 0.5, "whole": 2.0, "flag": True, "tag": "x y", "ü": "é"},
    )
    # The same array under two other owners: one values group, three series rows.
    add(2, mod.SingleTimeSeries(T0, "PT1H", f64.copy(), "load"))
    add(3, mod.SingleTimeSeries(T0, "PT1H", f64.copy(), "load", units="kW"), cat=supp)
    f32 = rng.standard_normal(24).astype(np.float32)
    f32[0] = np.float32(np.nan)
    f32[1] = np.float32(0.1)
    add(1, mod.SingleTimeSeries(T0, "PT1H", f32, "f32"))
    for dt in (np.int64, np.int32, np.int16, np.int8, np.uint32, np.uint16, np.uint8, np.uint64):
        info = np.iinfo(dt)
        hi = min(int(info.max), 2**63 - 1)
        vals = np.array([info.min, hi, 0, 1, 2, 3], dtype=dt)
        add(1, mod.SingleTimeSeries(T0, "PT15M", vals, f"int_{np.dtype(dt).name}"))
    add(1, mod.SingleTimeSeries(T0, "PT1H", np.array([True, False, True, True]), "bool"))
    shaped = rng.standard_normal((12, 2))
    shaped[0, 0], shaped[1, 1], shaped[2, 0], shaped[3, 1] = -0.0, np.nan, np.inf, -np.inf
    add(1, mod.SingleTimeSeries(T0, "PT1H", shaped, "shaped_2"))
    add(
        1,
        mod.SingleTimeSeries(
            T0, "PT1H", rng.integers(-99, 99, (6, 2, 3), dtype=np.int32), "i32_2x3"
        ),
    )
    add(1, mod.SingleTimeSeries(T0, "PT1H", np.zeros((4, 2), dtype=bool) | [True, False], "bool_2"))
    tup = rng.standard_normal((8, 3))
    tup[0, 1] = -0.0
    add(1, mod.SingleTimeSeries(T0, "PT1H", tup, "tuple3", element_type="tuple(3,f64)"))
    add(
        1,
        mod.SingleTimeSeries(
            T0,
            "PT1H",
            np.arange(16, dtype=np.int32).reshape(8, 2),
            "tuple2i",
            element_type="tuple(2,i32)",
        ),
    )
    add(
        1,
        mod.SingleTimeSeries(
            T0, "PT1H", rng.standard_normal((5, 2)), "lin", element_type="linear_function"
        ),
    )
    add(
        1,
        mod.SingleTimeSeries(
            T0, "PT1H", rng.standard_normal((5, 3)), "quad", element_type="quadratic_function"
        ),
    )
    pwl = np.array(
        [[2, 0.0, 1.0, 10.0, -0.0], [1, 5.0, 6.0, 0, 0], [0, 0, 0, 0, 0]], dtype=np.float64
    )
    add(1, mod.SingleTimeSeries(T0, "PT1H", pwl, "pwl", element_type="piecewise_linear"))
    pws = np.array([[2, 0.0, 4.0, 1.5], [1, 3.0, 0, 0], [0, 0, 0, 0]], dtype=np.float64)
    add(1, mod.SingleTimeSeries(T0, "PT1H", pws, "pws", element_type="piecewise_step"))
    # Time references.
    denver = datetime(2024, 3, 9, 0, tzinfo=ZoneInfo("America/Denver"))
    add(4, mod.SingleTimeSeries(denver, "PT1H", np.arange(48.0), "dst"))
    minus7 = datetime(2024, 1, 30, 20, tzinfo=timezone(timedelta(hours=-7)))
    add(4, mod.SingleTimeSeries(minus7, "P1M", np.arange(5.0), "month_offset"))
    add(4, mod.SingleTimeSeries(datetime(2024, 1, 31), "P1M", np.arange(6.0), "month_zoneless"))
    add(4, mod.SingleTimeSeries(datetime(2024, 1, 1, 0, 0), "PT15M", np.arange(8.0), "zoneless"))
    plus530 = datetime(2024, 1, 1, 5, 30, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    add(4, mod.SingleTimeSeries(plus530, "P1D", np.arange(3.0), "plus530"))
    # Irregular axes.
    stamps = [
        T0,
        T0 + timedelta(hours=1, milliseconds=1),
        T0 + timedelta(days=40),
        T0 + timedelta(days=400),
    ]
    ns = np.array([1.5, np.nan, np.inf, 4.0])
    add(5, mod.NonSequentialTimeSeries(stamps, ns, "ns"))
    add(6, mod.NonSequentialTimeSeries(stamps, ns.copy(), "ns"))
    add(5, mod.NonSequentialTimeSeries(stamps, rng.standard_normal((4, 2)), "ns_2"))
    add(5, mod.NonSequentialTimeSeries(stamps[:3], np.array([1, 2, 3], dtype=np.int16), "ns_i16"))
    naive = [datetime(2023, 12, 31, 23), datetime(2024, 6, 1)]
    add(5, mod.NonSequentialTimeSeries(naive, np.array([1.0, 2.0]), "ns_zoneless"))
    add(5, mod.PersistentTimeSeries(stamps[:3], np.array([10.0, 20.0, 30.0]), "persist"))
    add(5, mod.PersistentTimeSeries(stamps, np.arange(8.0).reshape(4, 2), "persist_2"))
    # Forecasts.
    add(7, mod.Deterministic(T0, "PT1H", "PT3H", "PT2H", 4, rng.standard_normal((3, 4)), "det"))
    det2 = rng.standard_normal((3, 2, 2))
    det2[0, 0, 0] = -0.0
    add(7, mod.Deterministic(T0, "PT1H", "PT3H", "PT1H", 2, det2, "det_2"))
    add(
        7, mod.Deterministic(T0, "PT1H", "PT4H", "PT0S", 1, np.arange(4.0).reshape(4, 1), "det_one")
    )
    add(
        7,
        mod.Deterministic(
            datetime(2024, 1, 31), "P1M", "P2M", "P1M", 3, np.arange(6.0).reshape(2, 3), "det_month"
        ),
    )
    det_i = np.arange(12, dtype=np.int64).reshape(3, 4)
    add(7, mod.Deterministic(denver, "PT1H", "PT3H", "PT1H", 4, det_i, "det_denver"))
    prob = rng.standard_normal((3, 2, 3))
    prob[1, 0, 0] = np.nan
    add(8, mod.Probabilistic(T0, "PT1H", "PT2H", "PT1H", 3, [0.1, 0.5, 0.9], prob, "prob"))
    add(
        8,
        mod.Probabilistic(
            T0,
            "PT30M",
            "PT1H",
            "PT1H",
            2,
            [5.0, 95.0],
            rng.standard_normal((2, 2, 2, 2)),
            "prob_tuple",
            element_type="tuple(2,f64)",
        ),
    )
    add(8, mod.Scenarios(T0, "PT1H", "PT2H", "PT2H", 3, rng.standard_normal((4, 2, 3)), "scen"))
    add(
        8,
        mod.Scenarios(
            T0, "PT1H", "PT1H", "PT1H", 2, np.arange(6, dtype=np.int32).reshape(3, 1, 2), "scen_i"
        ),
    )
    if unspecified:
        add(9, mod.SingleTimeSeries(T0, "PT1H", np.arange(3.0), "unspec"))
        store._catalog.execute(
            "UPDATE time_series_associations SET time_reference = NULL WHERE name = 'unspec'"
        )
        recheck_rows(store._catalog.conn, "name = 'unspec'")  # as an earlier release's row


def _canonical_nan(x: np.ndarray) -> np.ndarray:
    """A NaN's payload is not kept (SQLite stores NULL); every other bit is."""
    if x.dtype.kind != "f":
        return x
    return np.where(np.isnan(x), np.array(np.nan, dtype=x.dtype), x)


def assert_same_data(a, b, label) -> None:
    x, y = np.asarray(a.data), np.asarray(b.data)
    assert x.dtype == y.dtype, label
    assert x.shape == y.shape, label
    # bit for bit: -0.0, the infinities, the NaN positions
    assert _canonical_nan(x).tobytes() == _canonical_nan(y).tobytes(), label


def assert_same_store(expected, actual, *, skip=()) -> None:
    want, got = snapshot(expected), snapshot(actual)
    assert sorted(want) == sorted(got)
    for key, (meta, series) in want.items():
        if key[3] in skip:
            continue
        meta2, series2 = got[key]
        assert meta == meta2, key
        assert_same_data(series, series2, key)  # (an irregular axis is in the metadata)


def fresh_store(path: Path):
    return I.Store.create(path)


@pytest.fixture(scope="module")
def varied(tmp_path_factory):
    d = tmp_path_factory.mktemp("varied")
    store = I.Store.create(d / "src.h5")
    build_varied(I, store)
    db = d / "export.db"
    store.export_sqlite(db)
    yield store, db
    store.close()


# ---------------------------------------------------------------------- workflow 1
def test_varied_store_round_trips(varied, tmp_path):
    src, db = varied
    dst = fresh_store(tmp_path / "dst.h5")
    ids = dst.import_sqlite(db)
    assert len(ids) == len(src.list_metadata())
    assert sorted(ids) == list(range(1, len(ids) + 1))
    assert_same_store(src, dst)
    assert dst.num_distinct_arrays() == src.num_distinct_arrays()
    unspec = [m for m in dst.list_metadata() if m["name"] == "unspec"]
    assert unspec[0]["time_reference"] is None
    zoneless = [m for m in dst.list_metadata() if m["name"] == "month_zoneless"]
    assert zoneless[0]["time_reference"] == "zoneless"


def test_ids_come_in_read_order(varied, tmp_path):
    _, db = varied
    dst = fresh_store(tmp_path / "dst.h5")
    ids = dst.import_sqlite(db)
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    values = sorted(
        (
            n
            for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            if n.endswith("_values")
        ),
        key=str.encode,
    )
    expected_names = []
    for v in values:
        base = v[: -len("_values")]
        expected_names += [
            (owner, name)
            for owner, name in conn.execute(
                f'SELECT s.owner_id, s.name FROM "{base}_series" s JOIN "{base}_arrays" a ON a.id = s.array_id '
                "ORDER BY a.data_hash, a.time_axis, s.id"
            )
        ]
    conn.close()
    got = [(m["owner_id"], m["name"]) for m in dst.list_metadata_by_ids(ids)]
    assert got == expected_names


def test_over_padded_composite_comes_back_at_minimal_width(tmp_path):
    src = fresh_store(tmp_path / "src.h5")
    wide = np.zeros((3, 9))
    wide[0, :5] = [2, 0.0, 1.0, 10.0, 3.0]
    wide[1, :3] = [1, 5.0, 6.0]
    src.add_time_series(
        1,
        "G",
        "Component",
        I.SingleTimeSeries(T0, "PT1H", wide, "wide", element_type="piecewise_linear"),
    )
    src.export_sqlite(tmp_path / "x.db")
    dst = fresh_store(tmp_path / "dst.h5")
    (sid,) = dst.import_sqlite(tmp_path / "x.db")
    meta = dst.get_metadata_by_id(sid)
    assert meta["element_shape"] == [5]
    assert np.array_equal(dst.read_by_id(sid).data, wide[:, :5])


def test_prefix_round_trip_and_other_prefix_is_not_read(tmp_path):
    src = fresh_store(tmp_path / "src.h5")
    src.add_time_series(1, "G", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(4.0), "a"))
    db = tmp_path / "x.db"
    src.export_sqlite(db, table_prefix="run1_")
    src.export_sqlite(db, table_prefix="run2_")
    dst = fresh_store(tmp_path / "dst.h5")
    with pytest.raises(I.InvalidParameterError, match="without a table prefix"):
        dst.import_sqlite(db)
    assert len(dst.import_sqlite(db, table_prefix="run1_")) == 1
    with pytest.raises(I.DuplicateTimeSeriesError):
        dst.import_sqlite(db, table_prefix="run2_")


def _rebuild(conn, table: str, select: str) -> None:
    """Replace ``table`` by ``select`` over it (shuffled, renumbered, constraint-free)."""
    conn.execute(f'CREATE TABLE "tmp_rebuild" AS {select}')
    conn.execute(f'DROP TABLE "{table}"')
    conn.execute(f'ALTER TABLE "tmp_rebuild" RENAME TO "{table}"')


def test_shuffled_rows_renumbered_ids_and_no_index(varied, tmp_path):
    """Row order and id numbering do not matter, nor does the index: the key is the join."""
    src, db = varied
    edited = tmp_path / "edited.db"
    edited.write_bytes(db.read_bytes())
    drop_additions(edited)  # a hand edit drops every view that reads the tables first
    conn = apsw.Connection(str(edited))
    conn.execute("PRAGMA synchronous=OFF; BEGIN")
    for view in ("all_values", "all_series", "all_arrays"):
        conn.execute(f"DROP VIEW {view}")
    bases = [
        n[: -len("_values")]
        for (n,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE '%\\_values' ESCAPE '\\'"
        )
    ]
    for i, base in enumerate(bases):
        # ids become 1000 - id, and every table comes back in a random order
        conn.execute(f'UPDATE "{base}_arrays" SET id = 1000 - id')
        conn.execute(f'UPDATE "{base}_values" SET array_id = 1000 - array_id')
        conn.execute(f'UPDATE "{base}_series" SET array_id = 1000 - array_id, id = id + 500')
        for suffix in ("_values", "_series", "_arrays"):
            if i % 2 == 0 or suffix != "_values":
                _rebuild(conn, base + suffix, f'SELECT * FROM "{base}{suffix}" ORDER BY random()')
    conn.execute("COMMIT")
    conn.close()
    dst = fresh_store(tmp_path / "dst.h5")
    dst.import_sqlite(edited)
    assert_same_store(src, dst)


def test_progress_is_reported(varied, tmp_path):
    _, db = varied
    seen = []
    dst = fresh_store(tmp_path / "dst.h5")
    dst.import_sqlite(db, progress=lambda done, total: seen.append((done, total)))
    assert seen
    assert seen[-1][0] == seen[-1][1] > 0
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))


# ---------------------------------------------------------------------- hypothesis
_special = st.sampled_from(
    [np.nan, np.inf, -np.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308, 0.1]
)
_floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), _special)


def _as_f32(x: float) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(x))


@st.composite
def _series(draw):
    kind = draw(st.sampled_from(["sts", "det", "prob", "scen", "ns"]))
    shape = draw(st.sampled_from([(), (2,), (2, 3)]))
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int32]))
    n = draw(st.integers(1, 6))
    count = draw(st.integers(1, 3))
    steps = draw(st.integers(1, 3))
    lanes = draw(st.integers(1, 3))
    lead = {
        "sts": (n,),
        "ns": (n,),
        "det": (steps, count),
        "prob": (lanes, steps, count),
        "scen": (lanes, steps, count),
    }[kind]
    if np.dtype(dtype).kind == "f":
        elements = _floats if dtype is np.float64 else _floats.map(_as_f32)
    else:
        elements = st.integers(-(2**31), 2**31 - 1)
    data = draw(hnp.arrays(dtype, lead + shape, elements=elements))
    if not shape and np.dtype(dtype).kind == "f":
        # a scalar -0.0 cannot be exported (a SQLite REAL reads it back as +0.0)
        data = np.where((data == 0) & np.signbit(data), np.zeros_like(data), data)
    return kind, data, steps, count


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_series(), min_size=1, max_size=4))
def test_random_arrays_round_trip_bit_for_bit(specs):
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        src = fresh_store(d / "src.h5")
        for i, (kind, data, steps, count) in enumerate(specs):
            name = f"s{i}"
            if kind == "sts":
                ts = I.SingleTimeSeries(T0, "PT1H", data, name)
            elif kind == "ns":
                stamps = [T0 + timedelta(minutes=7 * k * k + k) for k in range(data.shape[0])]
                ts = I.NonSequentialTimeSeries(stamps, data, name)
            elif kind == "det":
                ts = I.Deterministic(T0, "PT1H", f"PT{steps}H", "PT1H", count, data, name)
            elif kind == "prob":
                pct = [float(p) for p in np.linspace(1, 99, data.shape[0])]
                ts = I.Probabilistic(T0, "PT1H", f"PT{steps}H", "PT2H", count, pct, data, name)
            else:
                ts = I.Scenarios(T0, "PT1H", f"PT{steps}H", "PT1H", count, data, name)
            src.add_time_series(i, "G", "Component", ts)
        src.export_sqlite(d / "x.db")
        dst = fresh_store(d / "dst.h5")
        dst.import_sqlite(d / "x.db")
        assert_same_store(src, dst)
        for s in (src, dst):
            with contextlib.suppress(Exception):
                s.close()


def test_one_row_nan_series(tmp_path):
    """A lone NULL cell: Cursor.get gives None for it, as for no rows at all."""
    src = fresh_store(tmp_path / "src.h5")
    src.add_time_series(
        1, "G", "Component", I.SingleTimeSeries(T0, "PT1H", np.array([np.nan]), "one")
    )
    src.add_time_series(
        1, "G", "Component", I.NonSequentialTimeSeries([T0], np.array([np.nan]), "ns")
    )
    src.add_time_series(
        1,
        "G",
        "Component",
        I.Deterministic(T0, "PT1H", "PT1H", "PT0S", 1, np.array([[np.nan]]), "det"),
    )
    src.export_sqlite(tmp_path / "x.db")
    dst = fresh_store(tmp_path / "dst.h5")
    assert len(dst.import_sqlite(tmp_path / "x.db")) == 3
    assert_same_store(src, dst)


@pytest.mark.parametrize("index", [True, False])
def test_many_arrays_in_random_row_order(tmp_path, index):
    """Interleaved groups: the reader leaves rowid spans for the index (or a temp one)."""
    src = fresh_store(tmp_path / "src.h5")
    for i in range(8):
        src.add_time_series(
            i, "G", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(20.0) * i, "s")
        )
    db = tmp_path / "x.db"
    src.export_sqlite(db)
    drop_additions(db)  # a hand edit drops every view that reads the tables first
    base = "SingleTimeSeries_f64_utc"
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA synchronous=OFF; BEGIN; DROP VIEW all_values")
    _rebuild(conn, f"{base}_values", f'SELECT * FROM "{base}_values" ORDER BY random()')
    if index:
        conn.execute(f'CREATE INDEX k ON "{base}_values" (array_id)')
    conn.execute("COMMIT")
    conn.close()
    dst = fresh_store(tmp_path / "dst.h5")
    assert len(dst.import_sqlite(db)) == 8
    assert_same_store(src, dst)


def test_writes_in_several_batches(varied, tmp_path, monkeypatch):
    module = importlib.import_module("infrastore_sqlite.interchange.importing.batches")
    monkeypatch.setattr(module, "_BATCH_SERIES", 2)
    src, db = varied
    dst = fresh_store(tmp_path / "dst.h5")
    dst.import_sqlite(db)
    assert_same_store(src, dst)
