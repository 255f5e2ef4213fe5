"""StaticReader / ForecastReader: the same calls on both packages give the same reads and
the same refusals (interop), and a read fetches only one row of each array."""

from __future__ import annotations

import datetime as dt

import infrastore as ref
import numpy as np
import pytest

import infrastore_sqlite as ours
from infrastore_sqlite.store.arrays import ArrayFile

T = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
H = dt.timedelta(hours=1)


def _cat(pkg):
    return pkg.OwnerCategory.Component


def _store(pkg, tmp_path, tag):
    if pkg is ours:
        return pkg.Store.create(tmp_path / f"ours-{tag}")
    return pkg.Store.create(str(tmp_path / f"ref-{tag}.h5"))


def _add(pkg, s, owner, series):
    return s.add_time_series(
        owner_id=owner, owner_type="Gen", owner_category=_cat(pkg), time_series=series
    )


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as exc:  # the class is what both packages must agree on
        return ("raised", type(exc).__name__)


def _static_store(pkg, tmp_path):
    s = _store(pkg, tmp_path, "static")
    _add(pkg, s, 1, pkg.SingleTimeSeries(T, "PT1H", np.arange(6.0), "load"))
    _add(pkg, s, 2, pkg.SingleTimeSeries(T, "PT1H", np.arange(6.0) * 10, "load"))
    _add(pkg, s, 2, pkg.SingleTimeSeries(T, "PT1H", np.arange(12.0).reshape(6, 2), "pair"))
    _add(pkg, s, 3, pkg.SingleTimeSeries(T, "PT1H", np.arange(6, dtype=np.int32), "int"))
    _add(pkg, s, 4, pkg.SingleTimeSeries(T, "PT1H", np.arange(6.0), "load"))  # shared array
    _add(pkg, s, 5, pkg.SingleTimeSeries(T + 2 * H, "PT1H", np.arange(8.0) + 100, "late"))
    ts = [T, T + 3 * H, T + 7 * H]
    _add(pkg, s, 6, pkg.NonSequentialTimeSeries(ts, np.array([1.0, 2, 3]), "ns"))
    _add(pkg, s, 7, pkg.NonSequentialTimeSeries(ts, np.array([4.0, 5, 6]), "ns"))
    _add(pkg, s, 8, pkg.PersistentTimeSeries([T, T + 4 * H], np.array([1.0, 2]), "step"))
    _add(pkg, s, 9, pkg.PersistentTimeSeries([T + H, T + 2 * H], np.array([7.0, 8]), "step"))
    return s


def _sweep(s, reader, instants):
    out = []
    for when in instants:
        got = _outcome(lambda w=when: s.static_read(reader, w))
        if got[0] == "ok":
            got = ("ok", [reader.group_values(i).tolist() for i in range(len(reader.groups()))])
        out.append(got)
    return out


def _static_calls(pkg, tmp_path):
    s = _static_store(pkg, tmp_path)
    out = {}
    shared = dict(owner_id=None, name_glob="[lpi]*")
    r = s.build_static_reader("PT1H", name="load")
    out["load"] = (r.grid(), r.groups(), r.timestamps(), _sweep(s, r, [T, T + 5 * H]))
    r = s.build_static_reader("PT1H", initial_timestamp=T, length=6)
    out["grid"] = (r.grid(), r.groups(), _sweep(s, r, [T + 2 * H, T + 6 * H, T + H / 2]))
    out["naive"] = _sweep(s, r, [T.replace(tzinfo=None)])
    out["group index"] = [_outcome(lambda i=i: r.group_values(i)) for i in (3, 4)]
    out["mixed grids"] = _outcome(lambda: s.build_static_reader("PT1H", **shared))
    r = s.build_static_reader("PT1H", window_start=T + 3 * H, **shared)
    out["window"] = (r.grid(), r.timestamps(), _sweep(s, r, [T + 3 * H, T + 5 * H, T + 6 * H]))
    r = s.build_static_reader("PT1H", window_start=T + 2 * H, window_length=2, **shared)
    out["window length"] = (r.grid(), _sweep(s, r, [T + 3 * H, T + 4 * H]))
    for label, kw in {
        "window before a start": dict(window_start=T + H),
        "window too long": dict(window_start=T + 2 * H, window_length=5),
        "window off-step": dict(window_start=T + 2 * H + H / 4),
    }.items():
        out[label] = _outcome(lambda kw=kw: s.build_static_reader("PT1H", **shared, **kw))
    r = s.build_static_reader(time_series_type="NonSequentialTimeSeries")
    out["ns"] = (r.grid(), r.groups(), r.timestamps(), _sweep(s, r, [T + 3 * H, T + H]))
    r = s.build_static_reader(time_series_type="PersistentTimeSeries")
    out["persistent"] = (r.grid(), r.timestamps(), _sweep(s, r, [T + H, T + 3 * H, T + 9 * H, T]))
    for label, call in {
        "no resolution": lambda: s.build_static_reader(),
        "no match": lambda: s.build_static_reader("PT2H"),
        "forecast type": lambda: s.build_static_reader("PT1H", time_series_type="Deterministic"),
        "unknown keyword": lambda: s.build_static_reader("PT1H", interval="PT1H"),
    }.items():
        out[label] = _outcome(call)
    return out


def _forecast_calls(pkg, tmp_path):
    s = _store(pkg, tmp_path, "forecast")
    d = pkg.Deterministic(T, "PT1H", "PT3H", "PT1H", 4, np.arange(12.0).reshape(3, 4), "fc")
    _add(pkg, s, 1, d)
    _add(pkg, s, 2, pkg.SingleTimeSeries(T, "PT1H", np.arange(6.0) * 10, "base"))
    s.transform_single_time_series("PT3H", "PT1H")
    _add(pkg, s, 3, d)  # the same array as owner 1: one slot
    p = pkg.Probabilistic(
        T, "PT1H", "PT3H", "PT1H", 4, [10.0, 90.0], np.arange(24.0).reshape(2, 3, 4), "pr"
    )
    _add(pkg, s, 4, p)
    out = {}
    for kind in ("Deterministic", "DeterministicSingleTimeSeries", "Probabilistic"):
        r = s.build_forecast_reader(kind, "PT1H")
        slots = [r.entry_slot(i) for i in range(len(r.entries()))]
        reads = []
        for when in (T, T + 3 * H, T + 4 * H, T + H / 2):
            got = _outcome(lambda w=when, r=r: s.forecast_read(r, w))
            if got[0] == "ok":
                got = ("ok", [r.entry_values(i).tolist() for i in range(len(r.entries()))])
            reads.append(got)
        out[kind] = (r.timeline(), r.timestamps(), r.num_slots(), slots, reads)
        out[kind + " index"] = _outcome(lambda r=r: r.entry_values(len(r.entries())))
    for label, call in {
        "static type": lambda: s.build_forecast_reader("SingleTimeSeries", "PT1H"),
        "no match": lambda: s.build_forecast_reader("Deterministic", "PT2H"),
    }.items():
        out[label] = _outcome(call)
    return out


@pytest.mark.parametrize("calls", [_static_calls, _forecast_calls], ids=["static", "forecast"])
def test_reader_matches_the_reference(calls, tmp_path):
    theirs = calls(ref, tmp_path)
    mine = calls(ours, tmp_path)
    assert mine.keys() == theirs.keys()
    for key in theirs:
        assert mine[key] == theirs[key], key


def test_a_read_fetches_one_row_of_each_array(tmp_path, monkeypatch):
    """Memory follows the columns, not the series' length: HDF5 is asked for one row.

    The first read of an array checks it whole against its hash, once per open store
    (docs/durability.md: a read never returns a damaged value); later reads take one row."""
    s = ours.Store.create(tmp_path / "s")
    n = 50_000
    for owner in range(3):
        s.add_time_series(
            owner_id=owner,
            owner_type="Gen",
            owner_category="Component",
            time_series=ours.SingleTimeSeries(T, "PT1H", np.arange(n, dtype=float) + owner, "x"),
        )
    r = s.build_static_reader("PT1H")
    seen = []
    real = ArrayFile.read

    def spy(self, name, slots, part=(), **check):
        got = real(self, name, slots, part, **check)
        seen.extend(a.nbytes for a in got)
        return got

    monkeypatch.setattr(ArrayFile, "read", spy)
    s.static_read(r, T + 40_000 * H)
    assert r.group_values(0).tolist() == [40_000.0, 40_001.0, 40_002.0]
    assert sorted(seen) == [8] * 3 + [8 * n] * 3  # each array checked whole once, then a row
    seen.clear()
    s.static_read(r, T + 40_001 * H)
    assert r.group_values(0).tolist() == [40_001.0, 40_002.0, 40_003.0]
    assert seen and max(seen) == 8  # one float64 per array, not the 50,000-step array


def test_group_values_before_a_read_says_what_to_call(tmp_path):
    s = _static_store(ours, tmp_path)
    r = s.build_static_reader("PT1H", name="load")
    with pytest.raises(ours.InvalidParameterError, match="static_read"):
        r.group_values(0)
    with pytest.raises(ours.InvalidParameterError, match="StaticReader"):
        s.static_read(object(), T)
