"""The Store's query and maintenance members side by side with the reference: the same
store built in both packages answers every call the same (or both refuse alike)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import infrastore
import numpy as np
import pytest
from test_api_interop import LIBS, both

import infrastore_sqlite

pytestmark = pytest.mark.interop

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)


def _fill(lib, store) -> dict[str, int]:
    C, SA = lib.OwnerCategory.Component, lib.OwnerCategory.SupplementalAttribute
    S = lib.SingleTimeSeries
    add = store.add_time_series
    ids = {
        "a": add(1, "Gen", C, S(T0, "PT1H", np.zeros(3), "load"), features={"s": 1}),
        "b": add(2, "Bus", C, S(T0, "PT15M", np.zeros(3), "load")),
        "c": add(
            1, "Gen", C, lib.Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, np.zeros((2, 3)), "fc")
        ),
        "e": add(7, "Attr", SA, lib.NonSequentialTimeSeries([T0], np.zeros(1), "ns")),
        "f": add(3, "Gen", C, S(T0, "PT1H", np.arange(3.0), "load")),
        "g": add(3, "Gen", C, S(T0 + H, "P1D", np.arange(4.0), "wind"), features={"y": "x"}),
        "h": add(4, "Load", C, S(T0, "PT1H", np.ones(3), "load")),
        "p": add(
            4,
            "Load",
            C,
            lib.Probabilistic(T0, "PT1H", "PT1H", "P1D", 2, [0.5], np.zeros((1, 1, 2)), "pf"),
        ),
    }
    store.transform_single_time_series("PT2H", "PT1H", resolution="PT1H")
    return ids


@pytest.fixture
def pair(tmp_path) -> Iterator[list]:
    stores = []
    for lib in LIBS:
        # "deflate" is the reference's default (ours is "auto"): the same choice on both,
        # so get_compression must report it alike.
        s = lib.Store.create(str(tmp_path / f"{lib.__name__}.h5"), compression="deflate")
        stores.append((lib, s, _fill(lib, s)))
    yield stores
    for _, s, _ in stores:
        s.close()


def _same(pair, call) -> None:
    got = []
    for lib, store, ids in pair:
        try:
            got.append(call(lib, store, ids))
        except Exception as exc:
            got.append(type(exc).__name__)
    assert got[1] == got[0]


def _exact(lib, s, name: str, kind: str, interval, features) -> bool:
    return s.has_exact_time_series(
        owner_id=1,
        owner_category=lib.OwnerCategory.Component,
        name=name,
        time_series_type=getattr(lib.TimeSeriesType, kind),
        resolution="PT1H",
        interval=interval,
        features=features,
    )


QUERIES = {
    "list_names": lambda lib, s, i: s.list_names(),
    "list_names_owner": lambda lib, s, i: s.list_names(
        owner_id=1, owner_category=lib.OwnerCategory.Component
    ),
    "list_owner_types": lambda lib, s, i: s.list_owner_types(),
    "list_owner_types_name": lambda lib, s, i: s.list_owner_types(name="load"),
    "has_any_none": lambda lib, s, i: s.has_any_time_series(
        owner_id=9, owner_category=lib.OwnerCategory.Component
    ),
    "has_any_name": lambda lib, s, i: s.has_any_time_series(name="load"),
    "has_any_type": lambda lib, s, i: s.has_any_time_series(
        time_series_type=lib.TimeSeriesType.Scenarios
    ),
    "get_resolutions": lambda lib, s, i: s.get_resolutions(),
    "get_resolutions_det": lambda lib, s, i: s.get_resolutions(lib.TimeSeriesType.Deterministic),
    "get_intervals": lambda lib, s, i: s.get_intervals(),
    "list_owner_ids": lambda lib, s, i: s.list_owner_ids(lib.OwnerCategory.Component),
    "list_owner_ids_res": lambda lib, s, i: s.list_owner_ids(
        lib.OwnerCategory.Component, resolution="PT1H"
    ),
    "list_owner_ids_sa": lambda lib, s, i: s.list_owner_ids(
        lib.OwnerCategory.SupplementalAttribute
    ),
    "forecast_params": lambda lib, s, i: s.get_forecast_parameters(),
    "forecast_params_res": lambda lib, s, i: s.get_forecast_parameters(resolution="PT15M"),
    "forecast_params_itv": lambda lib, s, i: s.get_forecast_parameters(interval="P1D"),
    "counts": lambda lib, s, i: s.get_time_series_counts(),
    "count_summary": lambda lib, s, i: s.time_series_count_summary(),
    "counts_detailed": lambda lib, s, i: s.time_series_counts_detailed(),
    "static_summary": lambda lib, s, i: s.static_summary(),
    "forecast_summary": lambda lib, s, i: s.forecast_summary(),
    "consistency": lambda lib, s, i: s.check_static_consistency(),
    "consistency_res": lambda lib, s, i: s.check_static_consistency("PT1H"),
    "array_refs": lambda lib, s, i: s.count_array_references(
        s.get_metadata_by_id(i["a"])["data_hash"]
    ),
    "array_refs_f": lambda lib, s, i: s.count_array_references(
        s.get_metadata_by_id(i["f"])["data_hash"]
    ),
    "array_by_hash": lambda lib, s, i: s.get_array_by_hash(
        s.get_metadata_by_id(i["f"])["data_hash"]
    ).tolist(),
    "array_by_hash_missing": lambda lib, s, i: s.get_array_by_hash("00" * 32),
    "array_by_hash_bad": lambda lib, s, i: s.get_array_by_hash("zz"),
    "exists": lambda lib, s, i: (s.association_exists(i["a"]), s.association_exists(999)),
    "compression": lambda lib, s, i: s.get_compression(),
    "has_exact": lambda lib, s, i: _exact(lib, s, "load", "SingleTimeSeries", None, {"s": 1}),
    "has_exact_features": lambda lib, s, i: _exact(lib, s, "load", "SingleTimeSeries", None, {}),
    "has_exact_forecast": lambda lib, s, i: _exact(lib, s, "fc", "Deterministic", "PT1H", {}),
    "read_guard_ok": lambda lib, s, i: (
        s.read_by_id(i["a"], owner_id=1, owner_category=lib.OwnerCategory.Component).name
    ),
    "read_guard_other": lambda lib, s, i: s.read_by_id(
        i["a"], owner_id=2, owner_category=lib.OwnerCategory.Component
    ),
    "read_guard_half": lambda lib, s, i: s.read_by_id(i["a"], owner_id=1),
}


@pytest.mark.parametrize("query", list(QUERIES))
def test_queries_agree(pair, query: str) -> None:
    _same(pair, QUERIES[query])


def _attributes(lib, s, i):
    out = [s.set_store_attribute("k", "v"), s.get_store_attribute("k"), s.get_store_attribute("zz")]
    out += [s.list_store_attributes(), s.remove_store_attribute("k"), s.remove_store_attribute("k")]
    return out, s.list_store_attributes()


def _copy(lib, s, i):
    new = s.copy_time_series(i["a"], 5, "Load")
    renamed = s.copy_time_series(i["c"], 6, "X", new_name="fc2")
    meta = [s.get_metadata_by_id(k) for k in (new, renamed)]
    for m in meta:
        m.pop("id")
    return meta, s.list_owner_ids(lib.OwnerCategory.Component)


def _replace(lib, s, i):
    C = lib.OwnerCategory.Component
    return [s.replace_owner(1, 11, C), s.replace_owner(99, 12, C), s.list_owner_ids(C)]


def _clear(lib, s, i):
    C = lib.OwnerCategory.Component
    return [
        s.clear_time_series(owner_id=3, owner_category=C),
        s.list_owner_ids(C),
        s.clear_time_series(),
        s.is_empty(),
    ]


@pytest.mark.parametrize(
    "call",
    [
        _attributes,
        _copy,
        _replace,
        _clear,
        lambda lib, s, i: s.copy_time_series(i["a"], 1, "Gen"),  # duplicate identity
        lambda lib, s, i: s.copy_time_series(999, 1, "Gen"),
        lambda lib, s, i: s.replace_owner(3, 1, lib.OwnerCategory.Component),  # clashes with 'load'
        lambda lib, s, i: (s.replace_owner(3, 1, lib.OwnerCategory.Component), 0)[1],
        lambda lib, s, i: s.clear_time_series(owner_id=3),
        lambda lib, s, i: s.set_store_attribute("k", 1),
        lambda lib, s, i: s.flush(),
    ],
)
def test_maintenance_agrees(pair, call) -> None:
    _same(pair, call)
    # and both stores still hold the same series afterwards
    _same(
        pair,
        lambda lib, s, i: [
            (m["owner_id"], m["name"], m["time_series_type"]) for m in s.list_metadata()
        ],
    )


def _open_cases(tmp_path) -> dict[str, object]:
    import h5py

    (tmp_path / "junk.h5").write_text("not hdf5")
    h5py.File(tmp_path / "bare.h5", "w").close()
    return {
        "missing": str(tmp_path / "missing.h5"),
        "junk": str(tmp_path / "junk.h5"),
        "bare": str(tmp_path / "bare.h5"),
        "not_a_path": 123,
    }


@pytest.mark.parametrize("case", ["missing", "junk", "bare", "not_a_path"])
def test_open_refuses_with_the_reference_class(tmp_path, case: str) -> None:
    path = _open_cases(tmp_path)[case]
    assert both(lambda lib: lib.Store.open(path)) == [both(lambda lib: lib.Store.open(path))[0]] * 2


def test_open_of_an_array_file_without_its_catalog(tmp_path) -> None:
    def run(lib):
        p = tmp_path / f"{lib.__name__}.h5"
        lib.Store.create(str(p)).close()
        # ours keeps the catalog inside the store directory, the reference's is beside it
        cat = p / "catalog.sqlite" if p.is_dir() else tmp_path / f"{lib.__name__}.h5.sqlite"
        cat.rename(tmp_path / f"{lib.__name__}.aside")
        lib.Store.open(str(p))

    assert both(run) == ["MismatchedArtifactError"] * 2


def test_a_reference_store_says_what_it_is_and_the_way_across_works(tmp_path, monkeypatch) -> None:
    import shlex

    from click.testing import CliRunner

    from infrastore_sqlite.cli import cli

    ref_path = tmp_path / "ref.h5"
    with infrastore.Store.create(str(ref_path)) as ref:
        _fill(infrastore, ref)
    with pytest.raises(infrastore_sqlite.IncompatibleFormatError) as refused:
        infrastore_sqlite.Store.open(ref_path)
    message = str(refused.value)
    assert "reference implementation (infrastore)" in message
    # the message's command, run as written (python -c …, then our CLI)
    line = message.split("in one line: ", 1)[1]
    export, add = (shlex.split(part) for part in line.split(" && "))
    assert export[:2] == ["python", "-c"] and add[0] == "infrastore-sqlite"
    monkeypatch.chdir(tmp_path)
    exec(export[2], {})  # the reference's export_sqlite, in this interpreter
    add[add.index("new-store")] = str(tmp_path / "new-store")
    assert CliRunner().invoke(cli, ["--store", str(tmp_path / "new-store"), "init"]).exit_code == 0
    result = CliRunner().invoke(cli, add[1:])
    assert result.exit_code == 0, result.output
    with infrastore.Store.open(str(ref_path), read_only=True) as ref:
        # derived forecast views stay behind (export_sqlite's include_derived=False)
        rows = [
            m
            for m in ref.list_metadata()
            if m["time_series_type"] != "DeterministicSingleTimeSeries"
        ]
        want = sorted((m["owner_id"], m["name"], m["data_hash"]) for m in rows)
    with infrastore_sqlite.Store.open(tmp_path / "new-store", read_only=True) as ours:
        got = sorted((m["owner_id"], m["name"], m["data_hash"]) for m in ours.list_metadata())
    assert got == want


def test_show_prints_the_same_summary(pair) -> None:
    import io

    def shown(lib, s, i):
        out = io.StringIO()
        s.show(file=out)
        return out.getvalue().split("\n", 1)[1]  # the first line names each file

    _same(pair, shown)


def test_persist_to_and_open_copy_agree(pair, tmp_path) -> None:
    def copies(lib, s, i):
        here = tmp_path / lib.__name__
        here.mkdir()
        s.persist_to(str(here / "p.h5"))
        s.persist_to(str(here / "p.h5"))  # replaces the earlier copy
        with lib.Store.open(str(here / "p.h5")) as p:
            persisted = [(m["owner_id"], m["name"], m["data_hash"]) for m in p.list_metadata()]
        with lib.Store.open_copy(str(here / "p.h5"), str(here / "c.h5")) as c:
            copied = len(c.list_metadata()), c.read_only, c.catalog
            c.clear_time_series()
        with lib.Store.open(str(here / "p.h5")) as p:
            untouched = len(p.list_metadata())
        # the stores there (the reference's catalogs sit beside them, ours inside)
        stores = sorted(f.name for f in here.iterdir() if not f.name.endswith(".sqlite"))
        return persisted, copied, untouched, stores

    _same(pair, copies)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, d: lib.Store.open_copy(str(d / "missing.h5"), str(d / "c.h5")),
        lambda lib, d: lib.Store.create(str(d / "x.h5"), catalog="bogus"),
        lambda lib, d: lib.Store.create(),
        lambda lib, d: repr(lib.Store.create(in_memory=True)),
        lambda lib, d: lib.Store.create(in_memory=True).catalog,
        lambda lib, d: lib.Store.create(str(d / "m.h5"), in_memory=True).list_metadata(),
    ],
)
def test_create_and_copy_options_agree(tmp_path, call) -> None:
    ref, ours = both(lambda lib: call(lib, tmp_path))
    assert ours == ref
    assert not (tmp_path / "m.h5").exists()


def test_an_in_memory_store_works_and_leaves_nothing(tmp_path) -> None:
    def run(lib):
        s = lib.Store.create(in_memory=True)
        ts = lib.SingleTimeSeries(T0, "PT1H", np.arange(3.0), "x")
        sid = s.add_time_series(1, "G", lib.OwnerCategory.Component, ts)
        s.persist_to(str(tmp_path / f"{lib.__name__}.h5"))
        s.close()
        with lib.Store.open(str(tmp_path / f"{lib.__name__}.h5")) as back:
            return back.read_by_id(sid).data.tolist()

    assert both(run) == [[0.0, 1.0, 2.0]] * 2


def test_persist_catalog_agrees(tmp_path) -> None:
    def run(lib):
        out = []
        mem = lib.Store.create(in_memory=True)
        try:
            mem.persist_catalog()
        except Exception as exc:
            out.append(type(exc).__name__)
        path = str(tmp_path / f"{lib.__name__}.h5")
        with lib.Store.create(path) as s:
            s.add_time_series(
                1,
                "G",
                lib.OwnerCategory.Component,
                lib.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x"),
            )
            out.append(s.persist_catalog())
        with lib.Store.open(path, read_only=True) as s:
            out.append(len(s.list_metadata()))
            try:
                s.persist_catalog()
            except Exception as exc:
                out.append(type(exc).__name__)
        return out

    assert both(run) == [["InvalidParameterError", None, 1, "ReadOnlyStoreError"]] * 2
