"""Drop-in cases for the Store: creating and opening, its repr, the queries and the
maintenance calls over one small mixed store, store attributes, transactions, and the
refusals a caller's code catches (interop: runs the reference)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from harness import Case, Ctx, check, params

pytestmark = pytest.mark.interop

T0 = datetime(2024, 1, 1)
H = timedelta(hours=1)
_STORE = "infrastore_sqlite/store/store.py"
_API = "infrastore_sqlite/store/api.py"


def filled(lib: Any, ctx: Ctx) -> Any:
    """A store holding a bit of everything, added out of owner order (20 before 10).

    Its compression is named, as the reference's default (``deflate``) is not ours
    (``auto``: a documented difference, see test_the_documented_differences_hold).
    """
    s = ctx.store(compression="deflate")
    c = ctx.comp
    s.add_time_series(20, "Gen", c, lib.SingleTimeSeries(T0, "PT1H", np.arange(4.0), "load"))
    s.add_time_series(10, "Gen", c, lib.SingleTimeSeries(T0, "PT1H", np.arange(4.0) + 1, "load"))
    s.add_time_series(
        15,
        "Load",
        c,
        lib.SingleTimeSeries(T0, "PT1H", np.arange(4.0), "load", units="MW"),
        features={"scenario": "high", "year": 2030},
    )
    s.add_time_series(
        10, "Gen", c, lib.Deterministic(T0, "PT1H", "PT2H", "PT1H", 3, np.ones((2, 3)), "fc")
    )
    s.add_time_series(
        10, "Gen", c, lib.NonSequentialTimeSeries([T0, T0 + 3 * H], np.array([1.0, 2.0]), "ev")
    )
    s.add_time_series(
        20, "Gen", c, lib.PersistentTimeSeries([T0, T0 + 5 * H], np.array([5.0, 6.0]), "step")
    )
    s.add_time_series(
        30,
        "Bus",
        lib.OwnerCategory.SupplementalAttribute,
        lib.SingleTimeSeries(datetime(2024, 1, 1, tzinfo=UTC), "PT30M", np.zeros(3), "temp"),
    )
    return s


def _q(call: Any) -> Any:
    return lambda lib, ctx: call(lib, filled(lib, ctx))


QUERIES = {
    "list_metadata": lambda lib, s: s.list_metadata(),
    "list_metadata owner 10": lambda lib, s: s.list_metadata(owner_id=10),
    "list_metadata name": lambda lib, s: s.list_metadata(name="load"),
    "list_metadata glob": lambda lib, s: s.list_metadata(name_glob="l*"),
    "list_metadata type": lambda lib, s: s.list_metadata(time_series_type="Deterministic"),
    "list_metadata features": lambda lib, s: s.list_metadata(features={"scenario": "high"}),
    "list_metadata features exact": lambda lib, s: s.list_metadata(
        features={"scenario": "high"}, features_exact=True
    ),
    "list_metadata resolution": lambda lib, s: s.list_metadata(resolution=timedelta(minutes=30)),
    "list_metadata zoneless": lambda lib, s: s.list_metadata(zoneless=False),
    "list_metadata category": lambda lib, s: s.list_metadata(
        owner_category=lib.OwnerCategory.SupplementalAttribute
    ),
    "list_metadata_by_ids": lambda lib, s: s.list_metadata_by_ids([3, 1, 99]),
    "get_metadata_by_id": lambda lib, s: s.get_metadata_by_id(4),
    "get_metadata_by_id missing": lambda lib, s: s.get_metadata_by_id(99),
    "read_by_id": lambda lib, s: s.read_by_id(1),
    "read_by_id window": lambda lib, s: s.read_by_id(1, start_time=T0 + H, len=2),
    "read_by_id forecast count": lambda lib, s: s.read_by_id(4, count=2),
    "read_by_id missing": lambda lib, s: s.read_by_id(99),
    "read_by_id wrong owner": lambda lib, s: s.read_by_id(1, owner_id=10),
    "read_by_ids": lambda lib, s: s.read_by_ids([2, 1, 5]),
    "read_by_ids_range": lambda lib, s: s.read_by_ids_range([1, 2], (T0 + H, T0 + 3 * H)),
    "read_by_ids_range mixed": lambda lib, s: s.read_by_ids_range([4, 5, 6], (T0 + H, T0 + 6 * H)),
    "read_by_ids_range empty": lambda lib, s: s.read_by_ids_range([1], (T0 + 9 * H, T0 + 12 * H)),
    "read_by_ids_range reversed": lambda lib, s: s.read_by_ids_range([1], (T0 + 3 * H, T0)),
    "read_by_id irregular window": lambda lib, s: s.read_by_id(5, start_time=T0 + H),
    "read_by_id persistent window": lambda lib, s: s.read_by_id(6, start_time=T0 + 2 * H, len=1),
    "read_by_id off grid": lambda lib, s: s.read_by_id(1, start_time=T0 + timedelta(minutes=1)),
    "read_by_id past the end": lambda lib, s: s.read_by_id(1, start_time=T0 + 3 * H, len=5),
    "list_metadata initial_timestamp": lambda lib, s: s.list_metadata(initial_timestamp=T0),
    "list_metadata length": lambda lib, s: s.list_metadata(length=4),
    "list_metadata interval": lambda lib, s: s.list_metadata(interval="PT1H"),
    "list_metadata bad type": lambda lib, s: s.list_metadata(time_series_type="Nope"),
    "list_metadata bad resolution": lambda lib, s: s.list_metadata(resolution="1h"),
    "get_intervals typed": lambda lib, s: s.get_intervals("Deterministic"),
    "list_owner_ids attributes": lambda lib, s: s.list_owner_ids(
        lib.OwnerCategory.SupplementalAttribute
    ),
    "counts_by_type": lambda lib, s: s.counts_by_type(),
    "time_series_count_summary": lambda lib, s: s.time_series_count_summary(),
    "get_time_series_counts": lambda lib, s: s.get_time_series_counts(),
    "time_series_counts_detailed": lambda lib, s: s.time_series_counts_detailed(),
    "list_names": lambda lib, s: s.list_names(),
    "list_owner_ids": lambda lib, s: s.list_owner_ids(lib.OwnerCategory.Component),
    "list_owner_ids typed": lambda lib, s: s.list_owner_ids(
        lib.OwnerCategory.Component, time_series_type="SingleTimeSeries", resolution="PT1H"
    ),
    "list_owner_types": lambda lib, s: s.list_owner_types(),
    "has_any_time_series": lambda lib, s: [
        s.has_any_time_series(owner_id=10),
        s.has_any_time_series(owner_id=11),
    ],
    "has_exact_time_series": lambda lib, s: [
        s.has_exact_time_series(
            owner_id=15,
            owner_category=lib.OwnerCategory.Component,
            name="load",
            time_series_type="SingleTimeSeries",
            resolution="PT1H",
            interval=None,
            features=f,
        )
        for f in ({"scenario": "high", "year": 2030}, {"scenario": "high"}, {})
    ],
    "is_empty": lambda lib, s: s.is_empty(),
    "num_distinct_arrays": lambda lib, s: s.num_distinct_arrays(),
    "count_array_references": lambda lib, s: s.count_array_references(
        s.get_metadata_by_id(1)["data_hash"]
    ),
    "get_array_by_hash": lambda lib, s: s.get_array_by_hash(s.get_metadata_by_id(1)["data_hash"]),
    "get_compression": lambda lib, s: s.get_compression(),
    "get_resolutions": lambda lib, s: s.get_resolutions(),
    "get_resolutions typed": lambda lib, s: s.get_resolutions("Deterministic"),
    "get_intervals": lambda lib, s: s.get_intervals(),
    "get_forecast_parameters": lambda lib, s: s.get_forecast_parameters(),
    "forecast_summary": lambda lib, s: s.forecast_summary(),
    "read_only": lambda lib, s: s.read_only,
    "catalog": lambda lib, s: s.catalog,
    "in_transaction": lambda lib, s: s.in_transaction,
    # The two stores sit in different directories: what follows the path's last '/'.
    "show": lambda lib, s: (lambda f: (s.show(file=f), f.getvalue().rpartition("/")[2])[1])(
        io.StringIO()
    ),
}
_UTC_TEXT = (
    f"{_API}: the reference spells the initial_timestamp of get_forecast_parameters, "
    "forecast_summary, static_summary and check_static_consistency as RFC 3339 in UTC "
    "with '+00:00' ('2024-01-01T00:00:00+00:00'), a zoneless series's too; ours leaves a "
    "zoneless one without the offset: in _fields (static/forecast summaries), "
    "get_forecast_parameters and check_static_consistency take it from r.metadata() (the "
    "list_metadata spelling, right there and to keep); use "
    "core.timeref.ms_to_rfc3339(r.initial_ms) instead. time_series_count_summary keeps the "
    "list_metadata spelling (it agrees today)"
)
QUERY_CASES = [Case(f"query {name}", _q(call)) for name, call in QUERIES.items()]


def _m(call: Any) -> Any:
    """A maintenance call, then what the store lists."""

    def run(lib: Any, ctx: Ctx) -> Any:
        s = filled(lib, ctx)
        got = call(lib, s)
        return got, [(m["id"], m["owner_id"], m["name"]) for m in s.list_metadata()]

    return run


MAINTENANCE = {
    "remove_by_ids": lambda lib, s: s.remove_by_ids([2, 3]),
    "remove_by_ids missing": lambda lib, s: s.remove_by_ids([99]),
    "remove_by_ids owner guard": lambda lib, s: s.remove_by_ids([1], owner_id=10),
    "remove_by_filter": lambda lib, s: s.remove_by_filter(owner_id=10),
    "replace_owner": lambda lib, s: s.replace_owner(10, 11, lib.OwnerCategory.Component),
    "copy_time_series": lambda lib, s: s.copy_time_series(1, 40, "Gen", new_name="copy"),
    "clear_time_series": lambda lib, s: s.clear_time_series(owner_id=20),
    "transform": lambda lib, s: s.transform_single_time_series("PT2H", "PT1H"),
    "transform then read": lambda lib, s: [
        (m, s.read_by_id(m["id"]))
        for m in (
            s.transform_single_time_series("PT2H", "PT1H", resolution="PT1H"),
            s.list_metadata(time_series_type="DeterministicSingleTimeSeries"),
        )[1]
    ],
    "transform too long": lambda lib, s: s.transform_single_time_series("PT9H", "PT1H"),
    "replace_owner onto an owner": lambda lib, s: s.replace_owner(
        20, 10, lib.OwnerCategory.Component
    ),
    "copy onto an existing name": lambda lib, s: s.copy_time_series(1, 10, "Gen"),
    "copy missing": lambda lib, s: s.copy_time_series(99, 10, "Gen"),
    "remove_by_filter features": lambda lib, s: s.remove_by_filter(features={"year": 2030}),
    "remove_by_filter nothing": lambda lib, s: s.remove_by_filter(name="none"),
    "clear category": lambda lib, s: s.clear_time_series(
        owner_category=lib.OwnerCategory.SupplementalAttribute
    ),
    # The counts of slots, datasets and bytes describe each package's own array files
    # (documented different); the keys, their order and the catalog's counts must agree.
    "compact": lambda lib, s: [
        (k, v if "sets" in k else type(v).__name__)
        for k, v in (s.remove_by_ids([1]), s.compact())[1].items()
    ],
    "flush": lambda lib, s: s.flush(),
    "add duplicate": lambda lib, s: s.add_time_series(
        20,
        "Gen",
        lib.OwnerCategory.Component,
        lib.SingleTimeSeries(T0, "PT1H", np.zeros(4), "load"),
    ),
    "add bulk": lambda lib, s: s.add_time_series_bulk(
        [
            {
                "owner_id": 50,
                "owner_type": "Gen",
                "owner_category": lib.OwnerCategory.Component,
                "time_series": lib.SingleTimeSeries(T0, "PT1H", np.ones(2), n),
                "features": {"n": n},
            }
            for n in ("a", "b")
        ]
    ),
    "add bulk tuples": lambda lib, s: s.add_time_series_bulk(
        [
            (
                50,
                "Gen",
                lib.OwnerCategory.Component,
                lib.SingleTimeSeries(T0, "PT1H", np.ones(2), "a"),
            )
        ]
    ),
}
MAINTENANCE_CASES = [Case(f"maintain {name}", _m(call)) for name, call in MAINTENANCE.items()]


def _consistency(shift: timedelta, length: int) -> Any:
    def run(lib: Any, ctx: Ctx) -> Any:
        s = ctx.store()
        s.add_time_series(1, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.zeros(3), "x"))
        s.add_time_series(
            2, "G", ctx.comp, lib.SingleTimeSeries(T0 + shift, "PT1H", np.zeros(length), "y")
        )
        s.add_time_series(2, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT2H", np.zeros(3), "z"))
        return s.check_static_consistency(), s.check_static_consistency("PT2H")

    return run


_CSC = (
    f"{_API} StoreApi.check_static_consistency: the reference raises IntegrityError "
    "('SingleTimeSeries at resolution PT1H have more than one (initial_timestamp, length) "
    "pair: (2024-01-01 00:00:00 UTC, 3) vs (2024-01-01 01:00:00 UTC, 3)') when one "
    "resolution has two grids, and returns one row per resolution"
)
SUMMARIES = [
    Case("check_static_consistency one grid", _consistency(timedelta(0), 3)),
    Case("check_static_consistency divergent start", _consistency(H, 3)),
    Case("check_static_consistency divergent length", _consistency(timedelta(0), 4)),
    Case("static_summary", _q(lambda lib, s: s.static_summary())),
]


# ------------------------------------------------------------------ creating, opening, repr
def _create(**kw: Any) -> Any:
    return lambda lib, ctx: repr(ctx.keep(lib.Store.create(ctx.path("c.h5"), **kw))).count(
        "read_only=False"
    )


def _exists_twice(lib: Any, ctx: Ctx) -> Any:
    path = ctx.path("twice.h5")
    ctx.keep(lib.Store.create(path)).close()
    return lib.Store.create(path)


def _overwrite(lib: Any, ctx: Ctx) -> Any:
    path = ctx.path("over.h5")
    first = ctx.keep(lib.Store.create(path))
    first.add_time_series(1, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x"))
    first.close()
    return ctx.keep(lib.Store.create(path, overwrite=True)).list_metadata()


def _persisted(lib: Any, ctx: Ctx) -> Any:
    src = filled(lib, ctx)
    src.persist_to(ctx.path("copy.h5"))
    copy = ctx.keep(lib.Store.open(ctx.path("copy.h5"), read_only=True))
    return copy.list_metadata(), copy.read_by_ids([1, 4]), copy.get_compression()


def _open_copy(lib: Any, ctx: Ctx) -> Any:
    path = ctx.path("orig.h5")
    src = ctx.keep(lib.Store.create(path))
    src.add_time_series(1, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.ones(3), "x"))
    src.close()
    copy = ctx.keep(lib.Store.open_copy(path, ctx.path("dest.h5")))
    copy.add_time_series(2, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.ones(3), "y"))
    again = ctx.keep(lib.Store.open(path, read_only=True))
    return copy.list_names(), again.list_names()


def _closed(call: Any) -> Any:
    def run(lib: Any, ctx: Ctx) -> Any:
        s = filled(lib, ctx)
        s.close()
        return call(lib, s)

    return run


CREATE = [
    Case("create default", _create()),
    Case("create compression none", _create(compression="none")),
    Case("create compression bogus", _create(compression="zstd")),
    Case("create level out of range", _create(compression_level=11)),
    Case("create catalog bogus", _create(catalog="remote")),
    Case("create in memory", lambda lib, ctx: repr(ctx.keep(lib.Store.create(in_memory=True)))),
    Case("create no path", lambda lib, ctx: lib.Store.create()),
    Case(
        "create in memory overwrite",
        lambda lib, ctx: ctx.keep(lib.Store.create(in_memory=True, overwrite=True)).read_only,
    ),
    Case(
        "create in memory attached",
        lambda lib, ctx: ctx.keep(lib.Store.create(in_memory=True, catalog="attached")).read_only,
    ),
    Case("create where a store is", _exists_twice),
    Case("create overwrite", _overwrite),
    Case("open missing", lambda lib, ctx: lib.Store.open(ctx.path("nowhere.h5"))),
    Case("persist_to then open", _persisted),
    Case("open_copy leaves the source", _open_copy),
    Case(
        "persist_to onto a store",
        lambda lib, ctx: filled(lib, ctx).persist_to(ctx.path("s0.h5")),
    ),
    Case(
        "open read only then add",
        lambda lib, ctx: (
            lambda path: (
                ctx.keep(lib.Store.create(path)).close(),
                ctx.keep(lib.Store.open(path, read_only=True)).add_time_series(
                    1, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x")
                ),
            )
        )(ctx.path("ro.h5")),
    ),
    Case(
        "repr open",
        lambda lib, ctx: repr(filled(lib, ctx)).replace(str(ctx.dir), "DIR").replace("'", ""),
    ),
    Case(
        "repr closed",
        lambda lib, ctx: (
            lambda s: (s.close(), repr(s).replace(str(ctx.dir), "DIR").replace("'", ""))[1]
        )(filled(lib, ctx)),
    ),
    Case("closed list_metadata", _closed(lambda lib, s: s.list_metadata())),
    Case("closed read_by_id", _closed(lambda lib, s: s.read_by_id(1))),
    Case("closed close again", _closed(lambda lib, s: s.close())),
    Case("closed read_only", _closed(lambda lib, s: s.read_only)),
]

# ------------------------------------------------------------------ attributes, integrity


def _attrs(call: Any) -> Any:
    def run(lib: Any, ctx: Ctx) -> Any:
        s = ctx.store()
        got = call(s)
        return got, s.list_store_attributes()

    return run


ATTRIBUTES = [
    Case(
        "attributes set get list remove",
        _attrs(
            lambda s: [
                s.set_store_attribute("b", "2"),
                s.set_store_attribute("a", "1"),
                s.set_store_attribute("a", ""),
                s.get_store_attribute("a"),
                s.get_store_attribute("zz"),
                s.list_store_attributes(),
                s.remove_store_attribute("b"),
                s.remove_store_attribute("b"),
            ]
        ),
    ),
    Case(
        "attribute empty key",
        _attrs(lambda s: s.set_store_attribute("", "v")),
        words=("must not be empty",),
    ),
    Case(
        "attribute reserved key",
        _attrs(lambda s: s.set_store_attribute("infrastore.x", "v")),
        words=("reserved 'infrastore.' prefix",),
    ),
    Case(
        "attribute remove reserved key",
        _attrs(lambda s: s.remove_store_attribute("infrastore.x")),
        words=("reserved 'infrastore.' prefix",),
    ),
    Case(
        "attribute remove empty key",
        _attrs(lambda s: s.remove_store_attribute("")),
        words=("must not be empty",),
    ),
    Case(
        "attribute get odd keys",
        _attrs(lambda s: [s.get_store_attribute(""), s.get_store_attribute("infrastore.x")]),
    ),
    Case("attribute value not a str", _attrs(lambda s: s.set_store_attribute("k", 5))),
    Case("verify_integrity", _q(lambda lib, s: s.verify_integrity())),
]


# ------------------------------------------------------------------ transactions, wrong types
def _tx(lib: Any, ctx: Ctx) -> Any:
    s = filled(lib, ctx)
    seen = [s.in_transaction]
    s.begin_transaction()
    s.add_time_series(60, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.ones(2), "t"))
    seen.append(s.in_transaction)
    s.rollback_transaction()
    with s.transaction():
        s.add_time_series(61, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.ones(2), "t"))
    try:
        with s.transaction():
            s.add_time_series(62, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.ones(2), "t"))
            raise RuntimeError("unwind")
    except RuntimeError:
        pass
    return seen, s.list_owner_ids(ctx.comp)


def _close_open_transaction(lib: Any, ctx: Ctx) -> Any:
    path = ctx.path("tx.h5")
    s = lib.Store.create(path)  # not kept: the case closes it, as a caller would
    s.add_time_series(1, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.ones(2), "kept"))
    s.begin_transaction()
    s.add_time_series(2, "G", ctx.comp, lib.SingleTimeSeries(T0, "PT1H", np.ones(2), "open"))
    s.close()
    return ctx.keep(lib.Store.open(path, read_only=True)).list_names()


def _begin_twice(s: Any) -> Any:
    s.begin_transaction()
    return s.begin_transaction()


def _add(owner_id: Any = 1, owner_type: Any = "G", category: Any = "comp", **kw: Any) -> Any:
    def run(lib: Any, ctx: Ctx) -> Any:
        s = ctx.store()
        cat = ctx.comp if category == "comp" else category
        ts = lib.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x")
        return s.add_time_series(owner_id, owner_type, cat, ts, **kw)

    return run


TRANSACTIONS = [
    Case("transactions", _tx),
    Case("commit without begin", lambda lib, ctx: ctx.store().commit_transaction()),
    Case("rollback without begin", lambda lib, ctx: ctx.store().rollback_transaction()),
    Case("begin twice", lambda lib, ctx: _begin_twice(ctx.store())),
    Case(
        "close with an open transaction",
        _close_open_transaction,
        collect=True,
    ),
    Case("add ok", _add()),
    Case("add owner id str", _add(owner_id="1")),
    Case("add owner id negative", _add(owner_id=-1)),
    Case("add owner type int", _add(owner_type=2)),
    Case("add owner category None", _add(category=None)),
    Case("add features not a dict", _add(features=[1])),
    Case("add features nested", _add(features={"a": {"b": 1}})),
    Case("add features reserved", _add(features={"id": 1})),
    Case("add not a series", lambda lib, ctx: ctx.store().add_time_series(1, "G", ctx.comp, 5)),
]


@pytest.mark.parametrize(
    "case",
    params(QUERY_CASES + MAINTENANCE_CASES + SUMMARIES + CREATE + ATTRIBUTES + TRANSACTIONS),
)
def test_store_calls_agree(tmp_path, case: Case) -> None:
    check(case, tmp_path)


# ------------------------------------------------------------------ documented differences
def test_a_memory_catalog_for_an_on_disk_store_stays_refused(tmp_path) -> None:
    # docs/compatibility.md, Store.create: the reference keeps such a catalog in RAM until
    # persist_catalog/close (a kill loses the commits since); ours refuses it, saying what
    # to pass instead, and leaves nothing behind.
    import infrastore

    import infrastore_sqlite

    ref = infrastore.Store.create(str(tmp_path / "ref.h5"), catalog="memory")
    ref.close()
    with pytest.raises(infrastore_sqlite.InvalidParameterError) as caught:
        infrastore_sqlite.Store.create(tmp_path / "ours.h5", catalog="memory")
    assert 'catalog="memory"' in str(caught.value) and "in_memory=True" in str(caught.value)
    assert not (tmp_path / "ours.h5").exists()


def test_the_documented_differences_hold(tmp_path) -> None:
    # docs/compatibility.md marks these names different (the store is a directory for
    # durability: Store.create, open, persist_to, open_copy, compact; the default
    # compression is auto for speed: Store.create, get_compression): they must stay true.
    import infrastore

    import infrastore_sqlite

    ref = infrastore.Store.create(str(tmp_path / "ref.h5"))
    ours = infrastore_sqlite.Store.create(tmp_path / "ours.h5")
    try:
        assert ref.get_compression()["compression"] == "deflate"
        assert ours.get_compression()["compression"] == "auto"
        assert (tmp_path / "ref.h5").is_file() and (tmp_path / "ref.h5.sqlite").is_file()
        assert (tmp_path / "ours.h5").is_dir()
        ref.persist_to(str(tmp_path / "ref_copy.h5"))
        ours.persist_to(tmp_path / "ours_copy.h5")
        assert (tmp_path / "ref_copy.h5").is_file() and (tmp_path / "ours_copy.h5").is_dir()
        # compact's counts: the same keys (their order aside), this store's own sizes
        assert set(ref.compact()) == set(ours.compact())
    finally:
        ref.close()
        ours.close()
    copy = infrastore_sqlite.Store.open_copy(tmp_path / "ours.h5", tmp_path / "ours_open_copy.h5")
    copy.close()
    assert (tmp_path / "ours_open_copy.h5").is_dir()
