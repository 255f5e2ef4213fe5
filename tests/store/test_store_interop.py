"""The store against the reference implementation (infrastore 0.15.1).

The same input goes to a reference store and to ours; what each gives back must agree:
data_hash, list_metadata / get_metadata_by_id rows (ids aside), read-back arrays bit for
bit, timestamps and their zones, transform results, filters, read windows and time ranges,
and, for bad input, the refusal (both raise, with the same exception class name, and
neither writes anything).

Composites are generated at their minimal width: our composite data_hash is over the
minimal-width re-packing by design, so an over-padded array legitimately hashes
differently here (test_store / test_roundtrip_store cover over-padding).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import infrastore
import numpy as np
import pytest
from bitpatterns import grid_data, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import infrastore_sqlite
from infrastore_sqlite.core.elements import DTYPE_NAMES
from infrastore_sqlite.core.hashing import RESERVED_FEATURE_NAMES

pytestmark = [
    pytest.mark.interop,
    # both libraries warn when a zone name is well-formed but unknown to the tz database
    pytest.mark.filterwarnings("ignore:time_reference names the IANA zone:UserWarning"),
]

LIBS = (infrastore, infrastore_sqlite)
T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
NAMES = itertools.count()


# =========================================================================== plumbing
@dataclass(frozen=True)
class Spec:
    """A series described independently of the library that builds it."""

    kind: str
    args: tuple
    kwargs: dict

    def build(self, lib: Any) -> Any:
        return getattr(lib, self.kind)(*self.args, **self.kwargs)

    @property
    def name(self) -> str:
        return self.args[-1]


def cat(lib: Any, category: str = "Component") -> Any:
    return getattr(lib.OwnerCategory, category)


class Pair:
    """A reference store and one of ours, fed the same calls."""

    def __init__(self, directory: Path) -> None:
        self.ref = infrastore.Store.create(str(directory / "ref.h5"))
        self.ours = infrastore_sqlite.Store.create(directory / "ours.h5")

    def stores(self) -> Iterator[tuple[Any, Any]]:
        yield infrastore, self.ref
        yield infrastore_sqlite, self.ours

    def add(
        self,
        spec: Spec,
        owner_id: int = 1,
        owner_type: str = "Gen",
        category: str = "Component",
        features: dict | None = None,
    ) -> tuple[int, int]:
        ids = [
            store.add_time_series(
                owner_id, owner_type, cat(lib, category), spec.build(lib), features=features
            )
            for lib, store in self.stores()
        ]
        return ids[0], ids[1]

    def call(self, fn: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
        """``fn(lib, store)`` on both sides: ("ok", result) or ("raised", class name, message)."""
        out = []
        for lib, store in self.stores():
            try:
                out.append(("ok", fn(lib, store)))
            except Exception as exc:  # comparing whatever each side raises
                out.append(("raised", type(exc).__name__, str(exc)))
        return out[0], out[1]

    def close(self) -> None:
        self.ref.close()
        self.ours.close()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    p = Pair(Path(tmp_path_factory.mktemp("interop")))
    yield p
    p.close()


def without_id(meta: dict | None) -> dict | None:
    return None if meta is None else {k: v for k, v in meta.items() if k != "id"}


def when(t: datetime) -> tuple[str, str]:
    return t.isoformat(), repr(t.tzinfo)


def state(x: Any) -> dict[str, Any]:
    """What a read-back series shows its caller, in comparable form."""
    out: dict[str, Any] = {
        "type": type(x).__name__,
        "dtype": str(x.data.dtype),
        "shape": tuple(x.data.shape),
        "bytes": x.data.tobytes(),
        "name": x.name,
        "element_type": x.element_type,
        "time_reference": x.time_reference,
        "decoded": repr(x.decoded_values()),  # repr: NaN == NaN
    }
    for attr in (
        "units",
        "quantity_kind",
        "unit_system",
        "component_field",
        "application_data",
        "resolution",
        "horizon",
        "interval",
        "count",
        "percentiles",
        "scenario_count",
        "length",
    ):
        if hasattr(x, attr):
            out[attr] = getattr(x, attr)
    if hasattr(x, "initial_timestamp"):
        out["initial_timestamp"] = when(x.initial_timestamp)
    if type(x).__name__ in ("SingleTimeSeries", "NonSequentialTimeSeries", "PersistentTimeSeries"):
        out["timestamps"] = [when(t) for t in x.timestamps]
    return out


def assert_same_series(pair: Pair, ids: tuple[int, int]) -> None:
    ref_meta = pair.ref.get_metadata_by_id(ids[0])
    our_meta = pair.ours.get_metadata_by_id(ids[1])
    assert without_id(our_meta) == without_id(ref_meta)
    assert state(pair.ours.read_by_id(ids[1])) == state(pair.ref.read_by_id(ids[0]))


# =========================================================================== strategies
@st.composite
def minimal_ragged(draw: Any, kind: str, lead: tuple[int, ...]) -> np.ndarray:
    cells = int(np.prod(lead, dtype=np.int64))
    counts = draw(st.lists(st.integers(0, 3), min_size=cells, max_size=cells))
    top = max(counts, default=0)
    width = 1 + 2 * top if kind == "piecewise_linear" else max(1, 2 * top)
    rows = np.zeros((cells, width))
    finite = st.floats(allow_nan=False, allow_infinity=False)
    for r, n in enumerate(counts):
        used = 1 + 2 * n if kind == "piecewise_linear" else (2 * n if n else 1)
        rows[r, 0] = n
        rows[r, 1:used] = draw(st.lists(finite, min_size=used - 1, max_size=used - 1))
    return rows.reshape((*lead, width))


@st.composite
def element(draw: Any) -> tuple[str | None, Callable[[tuple[int, ...]], Any]]:
    kind = draw(
        st.sampled_from(
            [
                "scalar",
                "scalar",
                "tuple",
                "linear_function",
                "quadratic_function",
                "piecewise_linear",
                "piecewise_step",
            ]
        )
    )
    if kind == "scalar":
        dtype = draw(st.sampled_from(DTYPE_NAMES))
        e = draw(st.sampled_from([(), (), (2,), (2, 3)]))
        return (dtype if draw(st.booleans()) else None), lambda lead: values(dtype, (*lead, *e))
    if kind == "tuple":
        dtype = draw(st.sampled_from(DTYPE_NAMES))
        n = draw(st.integers(1, 3))
        return f"tuple({n},{dtype})", lambda lead: values(dtype, (*lead, n))
    if kind in ("linear_function", "quadratic_function"):
        w = 2 if kind == "linear_function" else 3
        return kind, lambda lead: values("f64", (*lead, w))
    return kind, lambda lead: minimal_ragged(kind, lead)


REFERENCES = ["utc", "zoneless", "+05:30", "-07:00", "America/Denver", "Etc/GMT+7"]
FIXED_MS = {"PT0.001S": 1, "PT1S": 1000, "PT15M": 900_000, "PT1H": 3_600_000, "PT1H30M": 5_400_000}
CALENDAR = ["P1D", "P7D", "P1M", "P3M", "P1Y"]
INSTANTS = st.integers(-2_208_988_800_000, 4_102_444_800_000)


def at(ms: int, reference: str) -> datetime:
    instant = EPOCH + timedelta(milliseconds=ms)
    if reference == "zoneless":
        return instant.replace(tzinfo=None)
    if reference == "utc":
        return instant
    if reference[0] in "+-":
        sign = 1 if reference[0] == "+" else -1
        return instant.astimezone(
            timezone(sign * timedelta(hours=int(reference[1:3]), minutes=int(reference[4:6])))
        )
    return instant.astimezone(ZoneInfo(reference))


def times(period: str, k: int) -> str:
    if period in FIXED_MS:
        return f"PT{FIXED_MS[period] * k / 1000:.3f}S"
    return f"P{int(period[1:-1]) * k}{period[-1]}"


@st.composite
def grid(draw: Any) -> tuple[datetime, str]:
    reference = draw(st.sampled_from(REFERENCES))
    periods = list(FIXED_MS) + ([] if "/" in reference else CALENDAR)
    return at(draw(INSTANTS), reference), draw(st.sampled_from(periods))


DESCRIPTORS = st.fixed_dictionaries(
    {},
    optional={
        "units": st.text(max_size=5),
        "quantity_kind": st.text(max_size=5),
        "unit_system": st.sampled_from(["natural_units", "component_base"]),
        "component_field": st.text(max_size=5),
        "application_data": st.text(max_size=5),
    },
)


@st.composite
def specs(
    draw: Any,
    kinds: tuple[str, ...] = (
        "SingleTimeSeries",
        "NonSequentialTimeSeries",
        "PersistentTimeSeries",
        "Deterministic",
        "Probabilistic",
        "Scenarios",
    ),
) -> Spec:
    kind = draw(st.sampled_from(kinds))
    element_type, data = draw(element())
    kw = {**draw(DESCRIPTORS)}
    if element_type is not None:
        kw["element_type"] = element_type
    name = f"{draw(st.text(max_size=5))}#{next(NAMES)}"
    if kind == "SingleTimeSeries":
        initial, res = draw(grid())
        arr = draw(data((draw(st.integers(0, 5)),)))
        return Spec(kind, (initial, res, arr, name), kw)
    if kind in ("NonSequentialTimeSeries", "PersistentTimeSeries"):
        reference = draw(st.sampled_from(REFERENCES))
        ms = sorted(draw(st.sets(INSTANTS, min_size=1, max_size=5)))
        arr = draw(data((len(ms),)))
        return Spec(kind, ([at(t, reference) for t in ms], arr, name), kw)
    initial, res = draw(grid())
    h = draw(st.integers(1, 3))
    count = draw(st.integers(0, 3))
    k = draw(st.integers(0 if count <= 1 else 1, 3))
    interval = times(res, k) if k else "PT0S"
    head = (initial, res, times(res, h), interval, count)
    if kind == "Deterministic":
        return Spec(kind, (*head, draw(data((h, count))), name), kw)
    lanes = draw(st.integers(1, 3))
    arr = draw(data((lanes, h, count)))
    if kind == "Scenarios":
        return Spec(kind, (*head, arr, name), kw)
    pct = sorted(draw(st.sets(st.floats(0, 1), min_size=lanes, max_size=lanes)))
    return Spec(kind, (*head, pct, arr, name), kw)


FEATURES = st.dictionaries(
    st.text(max_size=6).filter(lambda k: k not in RESERVED_FEATURE_NAMES),
    st.one_of(
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False).filter(lambda f: not (f == 0 and np.signbit(f))),
        st.booleans(),
        st.text(max_size=6),
    ),
    max_size=3,
)
OWNERS = st.fixed_dictionaries(
    {
        "owner_id": st.integers(-(2**63), 2**63 - 1),
        "owner_type": st.text(min_size=1, max_size=6),
        "category": st.sampled_from(["Component", "SupplementalAttribute"]),
        "features": FEATURES,
    }
)


# =========================================================================== random series
@SETTINGS
@given(spec=specs(), who=OWNERS)
def test_random_series_agree(pair: Pair, spec: Spec, who: dict) -> None:
    ids = pair.add(spec, **who)
    assert_same_series(pair, ids)
    listed = [without_id(m) for m in pair.ours.list_metadata(name=spec.name)]
    assert listed == [without_id(m) for m in pair.ref.list_metadata(name=spec.name)]
    assert pair.ours.num_distinct_arrays() == pair.ref.num_distinct_arrays()


@SETTINGS
@given(batch=st.lists(specs(), min_size=1, max_size=4), who=OWNERS)
def test_bulk_adds_agree(pair: Pair, batch: list[Spec], who: dict) -> None:
    ids = []
    for lib, store in pair.stores():
        items = [
            {
                "owner_id": who["owner_id"],
                "owner_type": who["owner_type"],
                "owner_category": cat(lib, who["category"]),
                "time_series": s.build(lib),
                "features": who["features"],
            }
            for s in batch
        ]
        ids.append(store.add_time_series_bulk(items))
    assert ids[0] == ids[1]
    ref_meta = [without_id(m) for m in pair.ref.list_metadata_by_ids(ids[0])]
    assert [without_id(m) for m in pair.ours.list_metadata_by_ids(ids[1])] == ref_meta
    ref_read = [state(x) for x in pair.ref.read_by_ids(ids[0])]
    assert [state(x) for x in pair.ours.read_by_ids(ids[1])] == ref_read


@settings(SETTINGS, max_examples=15)
@given(data=st.data())
def test_transform_agrees(data: st.DataObject) -> None:
    """A fresh pair per example: transform works on every SingleTimeSeries in the store."""
    with tempfile.TemporaryDirectory() as tmp:
        p = Pair(Path(tmp))
        try:
            initial, res = data.draw(grid())
            n = data.draw(st.integers(1, 6))
            for _ in range(data.draw(st.integers(1, 3))):
                element_type, values_of = data.draw(element())
                kw = {} if element_type is None else {"element_type": element_type}
                arr = data.draw(values_of((n,)))
                spec = Spec("SingleTimeSeries", (initial, res, arr, f"s{next(NAMES)}"), kw)
                p.add(spec, owner_id=data.draw(st.integers(0, 3)), features=data.draw(FEATURES))
            h = data.draw(st.integers(1, n + 1))
            k = data.draw(st.integers(0, h + 1))
            horizon, interval = times(res, h), (times(res, k) if k else "PT0S")
            ref, ours = p.call(lambda lib, s: s.transform_single_time_series(horizon, interval))
            assert ref[:2] == ours[:2]
            if ref[0] == "ok":
                again = p.call(lambda lib, s: s.transform_single_time_series(horizon, interval))
                assert again == (("ok", 0), ("ok", 0))
            ref_rows = [without_id(m) for m in p.ref.list_metadata()]
            our_rows = [without_id(m) for m in p.ours.list_metadata()]
            assert our_rows == ref_rows
            for m_ref, m_ours in zip(p.ref.list_metadata(), p.ours.list_metadata(), strict=True):
                assert state(p.ours.read_by_id(m_ours["id"])) == state(
                    p.ref.read_by_id(m_ref["id"])
                )
        finally:
            p.close()


# =========================================================================== refusals
def sts_spec(
    name: str = "base", data: Any = None, start: datetime = T0, res: str = "PT1H", **kw
) -> Spec:
    return Spec(
        "SingleTimeSeries", (start, res, np.arange(10.0) if data is None else data, name), kw
    )


def det_spec(name: str = "det", **kw) -> Spec:
    return Spec(
        "Deterministic", (T0, "PT1H", "PT2H", "PT3H", 4, np.arange(8.0).reshape(2, 4), name), kw
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """A pair holding one series of each type and a derived view; refusals must not change it."""
    p = Pair(Path(tmp_path_factory.mktemp("base")))
    p.add(sts_spec())
    p.add(sts_spec("other", np.arange(10.0) * 2), owner_id=2)
    p.add(Spec("NonSequentialTimeSeries", ([T0, T0 + 2 * H, T0 + 5 * H], np.arange(3.0), "ns"), {}))
    p.add(Spec("PersistentTimeSeries", ([T0, T0 + 2 * H, T0 + 5 * H], np.arange(3.0), "pe"), {}))
    p.add(det_spec())
    p.add(
        Spec(
            "Probabilistic",
            (T0, "PT1H", "PT2H", "PT3H", 4, [0.1, 0.5], np.arange(16.0).reshape(2, 2, 4), "prob"),
            {},
        )
    )
    p.add(
        Spec(
            "Scenarios", (T0, "PT1H", "PT2H", "PT3H", 4, np.arange(24.0).reshape(3, 2, 4), "sc"), {}
        )
    )
    p.add(Spec("NonSequentialTimeSeries", ([], np.zeros(0), "empty_ns"), {}))
    p.add(Spec("Deterministic", (T0, "PT1H", "PT2H", "PT1H", 0, np.zeros((2, 0)), "det0"), {}))
    for _, store in p.stores():
        assert store.transform_single_time_series("PT3H", "PT2H") == 2
    yield p
    p.close()


def _add(
    spec: Spec | Callable[[Any], Any],
    owner_id: Any = 1,
    owner_type: Any = "Gen",
    category: str = "Component",
    features: Any = None,
) -> Callable[[Any, Any], Any]:
    """Build the series *and* add it: the refusal may come from either step."""

    def run(lib: Any, store: Any) -> Any:
        ts = spec.build(lib) if isinstance(spec, Spec) else spec(lib)
        return store.add_time_series(
            owner_id, owner_type, cat(lib, category), ts, features=features
        )

    return run


NAIVE = datetime(2024, 1, 1)
ODD = timezone(timedelta(seconds=30))
PERIOD_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "wrong forecast shape": _add(
        Spec("Deterministic", (T0, "PT1H", "PT2H", "PT1H", 4, np.zeros((4, 2)), "x"), {})
    ),
    "wrong lane shape": _add(
        Spec("Probabilistic", (T0, "PT1H", "PT2H", "PT1H", 1, [0.5], np.zeros((2, 2, 1)), "x"), {})
    ),
    "bad period spelling": _add(sts_spec("x", res="1h")),
    "zero resolution": _add(sts_spec("x", res="PT0S")),
    "negative resolution": _add(sts_spec("x", res="-PT1H")),
    "fractional days": _add(sts_spec("x", res="P1.5D")),
    "mixed calendar and fixed": _add(sts_spec("x", res="P1MT1H")),
    "horizon not a multiple": _add(
        Spec("Deterministic", (T0, "PT2H", "PT3H", "PT2H", 1, np.zeros((1, 1)), "x"), {})
    ),
    "zero interval, two windows": _add(
        Spec("Deterministic", (T0, "PT1H", "PT2H", "PT0S", 2, np.zeros((2, 2)), "x"), {})
    ),
    "empty percentiles": _add(
        Spec("Probabilistic", (T0, "PT1H", "PT2H", "PT1H", 1, [], np.zeros((0, 2, 1)), "x"), {})
    ),
    "unsorted percentiles": _add(
        Spec(
            "Probabilistic",
            (T0, "PT1H", "PT2H", "PT1H", 1, [0.9, 0.1], np.zeros((2, 2, 1)), "x"),
            {},
        )
    ),
    "sub-millisecond start": _add(sts_spec("x", start=T0 + timedelta(microseconds=5))),
    "sub-millisecond timestamp": _add(
        Spec(
            "NonSequentialTimeSeries",
            ([T0, T0 + timedelta(microseconds=1500)], np.zeros(2), "x"),
            {},
        )
    ),
    "start not a datetime": _add(sts_spec("x", start="2024-01-01T00:00:00Z")),
    "bad zone": _add(sts_spec("x", time_reference="bad zone!")),
    "empty zone": _add(sts_spec("x", time_reference="")),
    "offset out of range": _add(sts_spec("x", time_reference="+25:00")),
    "sub-minute offset": _add(sts_spec("x", start=datetime(2024, 1, 1, tzinfo=ODD))),
    "day resolution in a zone": _add(sts_spec("x", res="P1D", time_reference="America/Denver")),
    "month resolution in a zone": _add(sts_spec("x", res="P1M", time_reference="Europe/Paris")),
    "day interval in a zone": _add(
        Spec(
            "Deterministic",
            (T0, "PT1H", "P2D", "P1D", 2, np.zeros((48, 2)), "x"),
            {"time_reference": "America/Denver"},
        )
    ),
    "non-increasing timestamps": _add(
        Spec("NonSequentialTimeSeries", ([T0, T0], np.zeros(2), "x"), {})
    ),
    "decreasing breakpoints": _add(
        Spec("PersistentTimeSeries", ([T0 + H, T0], np.zeros(2), "x"), {})
    ),
    "timestamp count": _add(Spec("NonSequentialTimeSeries", ([T0, T0 + H], np.zeros(3), "x"), {})),
    "mixed naive and aware": _add(
        Spec("NonSequentialTimeSeries", ([T0, NAIVE + H], np.zeros(2), "x"), {})
    ),
    "mixed zones": _add(
        Spec(
            "PersistentTimeSeries",
            ([T0, (T0 + H).astimezone(timezone(2 * H))], np.zeros(2), "x"),
            {},
        )
    ),
    "utc and UTC zone": _add(
        Spec(
            "NonSequentialTimeSeries",
            ([T0, (T0 + H).astimezone(ZoneInfo("UTC"))], np.zeros(2), "x"),
            {},
        )
    ),
}
ELEMENT_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "element_type disagrees with dtype": _add(sts_spec("x", element_type="i64")),
    "unknown element_type": _add(sts_spec("x", element_type="float64")),
    "capitalized dtype": _add(sts_spec("x", element_type="F64")),
    "tuple of zero": _add(sts_spec("x", np.zeros((3, 0)), element_type="tuple(0,f64)")),
    "tuple width": _add(sts_spec("x", np.zeros((3, 2)), element_type="tuple(3,f64)")),
    "linear of ints": _add(
        sts_spec("x", np.zeros((3, 2), np.int64), element_type="linear_function")
    ),
    "quadratic width": _add(sts_spec("x", np.zeros((3, 2)), element_type="quadratic_function")),
    "even piecewise_linear": _add(sts_spec("x", np.zeros((3, 2)), element_type="piecewise_linear")),
    "odd piecewise_step": _add(sts_spec("x", np.zeros((3, 3)), element_type="piecewise_step")),
    "too many points": _add(
        sts_spec("x", np.array([[3.0, 0, 0]]), element_type="piecewise_linear")
    ),
    "fractional count": _add(
        sts_spec("x", np.array([[0.5, 0, 0]]), element_type="piecewise_linear")
    ),
    "negative count": _add(sts_spec("x", np.array([[-1.0, 0]]), element_type="piecewise_step")),
    "NaN count": _add(sts_spec("x", np.array([[np.nan, 0, 0]]), element_type="piecewise_linear")),
    "complex data": _add(sts_spec("x", np.zeros(3, complex))),
    "float16 data": _add(sts_spec("x", np.zeros(3, np.float16))),
    "string data": _add(sts_spec("x", np.array(["a", "b"]))),
    "0-d data": _add(sts_spec("x", np.float64(3.0))),
    "1-d forecast": _add(
        Spec("Deterministic", (T0, "PT1H", "PT1H", "PT1H", 1, np.zeros(1), "x"), {})
    ),
}
ADD_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "duplicate": _add(sts_spec("base", np.ones(10))),
    "duplicate, other owner_type": _add(sts_spec("base"), owner_type="Other"),
    "duplicate, other start": _add(sts_spec("base", start=T0 + H)),
    "duplicate, other horizon": _add(
        Spec("Deterministic", (T0, "PT1H", "PT3H", "PT3H", 1, np.zeros((3, 1)), "det"), {})
    ),
    "duplicate irregular": _add(Spec("NonSequentialTimeSeries", ([T0 + H], np.ones(1), "ns"), {})),
    "reserved feature name": _add(sts_spec("x"), features={"name": "x"}),
    "reserved id feature": _add(sts_spec("x"), features={"time_reference": "utc"}),
    "NaN feature": _add(sts_spec("x"), features={"a": float("nan")}),
    "negative zero feature": _add(sts_spec("x"), features={"a": -0.0}),
    "None feature": _add(sts_spec("x"), features={"a": None}),
    "list feature": _add(sts_spec("x"), features={"a": [1]}),
    "not a series": lambda lib, s: s.add_time_series(1, "Gen", cat(lib), np.zeros(3)),
    "Deterministic beside a view": _add(
        Spec("Deterministic", (T0, "PT1H", "PT2H", "PT5H", 2, np.zeros((2, 2)), "base"), {})
    ),
    "bulk with a duplicate": lambda lib, s: s.add_time_series_bulk(
        [
            {
                "owner_id": 9,
                "owner_type": "G",
                "owner_category": cat(lib),
                "time_series": sts_spec(n).build(lib),
            }
            for n in ("fresh", "fresh")
        ]
    ),
    "bulk with a misspelled key": lambda lib, s: s.add_time_series_bulk(
        [
            {
                "owner_id": 9,
                "owner_type": "G",
                "owner_category": cat(lib),
                "time_series": sts_spec("fresh").build(lib),
                "feautres": {},
            }
        ]
    ),
}
STORE_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "transform: interval longer than horizon": lambda lib, s: s.transform_single_time_series(
        "PT2H", "PT3H"
    ),
    "transform: horizon longer than series": lambda lib, s: s.transform_single_time_series(
        "PT11H", "PT1H"
    ),
    "transform: horizon not a multiple": lambda lib, s: s.transform_single_time_series(
        "PT90M", "PT1H"
    ),
    "transform: zero interval, short horizon": lambda lib, s: s.transform_single_time_series(
        "PT3H", "PT0S"
    ),
    "transform: negative interval": lambda lib, s: s.transform_single_time_series("PT3H", "-PT1H"),
    "transform: zero horizon": lambda lib, s: s.transform_single_time_series("PT0S", "PT1H"),
    "transform: calendar horizon": lambda lib, s: s.transform_single_time_series("P1M", "P1M"),
    "transform: bad spelling": lambda lib, s: s.transform_single_time_series("3h", "PT1H"),
    "transform: view with another horizon": lambda lib, s: s.transform_single_time_series(
        "PT4H", "PT2H"
    ),
    "remove a view's source": lambda lib, s: s.remove_by_ids([1]),
    "remove a missing id": lambda lib, s: s.remove_by_ids([3, 999]),
    "remove with only owner_id": lambda lib, s: s.remove_by_ids([3], owner_id=1),
    "remove another owner's series": lambda lib, s: s.remove_by_ids(
        [3], owner_id=424242, owner_category=cat(lib)
    ),
    "read a missing id": lambda lib, s: s.read_by_id(999),
    "read missing among many": lambda lib, s: s.read_by_ids([1, 999]),
    "range of a missing id": lambda lib, s: s.read_by_ids_range([999], (T0, T0 + H)),
    "metadata of a missing id": lambda lib, s: s.list_metadata_by_ids([1, 999]),
    "unknown filter keyword": lambda lib, s: s.list_metadata(nme="x"),
    "unknown type name": lambda lib, s: s.list_metadata(time_series_type="weekly"),
    "bad filter period": lambda lib, s: s.list_metadata(resolution="1h"),
    "None feature filter": lambda lib, s: s.list_metadata(features={"a": None}),
}
REFUSALS = {**PERIOD_CASES, **ELEMENT_CASES, **ADD_CASES, **STORE_CASES}


def _store_state(store: Any) -> tuple:
    return [without_id(m) for m in store.list_metadata()], store.num_distinct_arrays()


@pytest.mark.parametrize("case", list(REFUSALS))
def test_same_refusal_and_nothing_written(base: Pair, case: str) -> None:
    before = [_store_state(store) for _, store in base.stores()]
    assert before[0] == before[1]
    ref, ours = base.call(REFUSALS[case])
    assert ref[0] == "raised", f"the reference accepted it: {ref}"
    assert ours[0] == "raised", f"we accepted it: {ours}"
    assert ours[1] == ref[1], f"reference: {ref[1]}: {ref[2]}\nours: {ours[1]}: {ours[2]}"
    assert [_store_state(store) for _, store in base.stores()] == before
    # the next good add works on both sides and reads back the same
    ids = base.add(sts_spec(f"after {case}", np.arange(3.0) + len(case)))
    assert_same_series(base, ids)


@pytest.mark.parametrize(
    "features",
    [{"name": "x"}, {"a": float("nan")}, {"a": -0.0}, {"year": float("inf")}, {"nope": 1}],
)
@pytest.mark.parametrize("exact", [False, True])
def test_unstorable_feature_filters_match_nothing(base: Pair, features: dict, exact: bool) -> None:
    ref, ours = base.call(lambda lib, s: s.list_metadata(features=features, features_exact=exact))
    assert ref == ours == ("ok", [])


# =========================================================================== filters
@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    p = Pair(Path(tmp_path_factory.mktemp("filled")))
    p.add(
        sts_spec("load", component_field="max_active_power"), features={"year": 2030, "scen": "hi"}
    )
    p.add(sts_spec("load"), features={"year": 2030, "scen": "lo"})
    p.add(sts_spec("load"), features={"year": 2030.0})
    p.add(sts_spec("load"), features={"year": True})
    p.add(sts_spec("load"))
    p.add(sts_spec("load", res="PT30M"), owner_id=2, owner_type="Load")
    p.add(
        sts_spec("wall", start=NAIVE),
        owner_id=3,
        owner_type="Attr",
        category="SupplementalAttribute",
    )
    p.add(sts_spec("late", np.arange(5.0), start=T0 + H), owner_id=3, owner_type="Attr")
    p.add(Spec("NonSequentialTimeSeries", ([T0, T0 + 2 * H], np.arange(2.0), "ns"), {}), owner_id=4)
    p.add(
        Spec("PersistentTimeSeries", ([NAIVE, NAIVE + 2 * H], np.arange(2.0), "pe"), {}), owner_id=4
    )
    p.add(det_spec(), features={"year": 2030})
    p.add(Spec("Deterministic", (T0, "PT1H", "PT2H", "PT1H", 4, np.zeros((2, 4)), "det2"), {}))
    p.add(
        Spec(
            "Probabilistic",
            (T0, "PT1H", "PT2H", "PT3H", 4, [0.1, 0.5], np.zeros((2, 2, 4)), "prob"),
            {},
        )
    )
    p.add(
        Spec("Scenarios", (T0, "PT1H", "PT2H", "PT3H", 4, np.zeros((3, 2, 4)), "sc"), {}),
        owner_id=5,
        category="SupplementalAttribute",
    )
    for _, store in p.stores():
        store.transform_single_time_series("PT2H", "PT1H", resolution="PT30M")
    yield p
    p.close()


FILTERS: dict[str, Callable[[Any], dict]] = {
    "none": lambda lib: {},
    "owner_id": lambda lib: {"owner_id": 1},
    "owner_id matching nothing": lambda lib: {"owner_id": 999},
    "owner_category": lambda lib: {"owner_category": lib.OwnerCategory.SupplementalAttribute},
    "owner_category and id": lambda lib: {
        "owner_category": lib.OwnerCategory.Component,
        "owner_id": 3,
    },
    "owner_type": lambda lib: {"owner_type": "Attr"},
    "type Deterministic (matches the views too)": lambda lib: {
        "time_series_type": lib.TimeSeriesType.Deterministic
    },
    "type DeterministicSingleTimeSeries": lambda lib: {
        "time_series_type": lib.TimeSeriesType.DeterministicSingleTimeSeries
    },
    "type SingleTimeSeries": lambda lib: {"time_series_type": lib.TimeSeriesType.SingleTimeSeries},
    "type Persistent": lambda lib: {"time_series_type": lib.TimeSeriesType.PersistentTimeSeries},
    "type by name": lambda lib: {"time_series_type": "Scenarios"},
    "name": lambda lib: {"name": "load"},
    "name_glob": lambda lib: {"name_glob": "*e*"},
    "name_glob is case-sensitive": lambda lib: {"name_glob": "L*"},
    "name and name_glob": lambda lib: {"name": "load", "name_glob": "d*"},
    "component_field": lambda lib: {"component_field": "max_active_power"},
    "zoneless": lambda lib: {"zoneless": True},
    "not zoneless": lambda lib: {"zoneless": False},
    "resolution": lambda lib: {"resolution": "PT1H"},
    "resolution spelled otherwise": lambda lib: {"resolution": "PT60M"},
    "resolution as timedelta": lambda lib: {"resolution": timedelta(minutes=30)},
    "interval": lambda lib: {"interval": "PT3H"},
    "interval as timedelta": lambda lib: {"interval": timedelta(hours=1)},
    "initial_timestamp": lambda lib: {"initial_timestamp": T0 + H},
    "initial_timestamp shared": lambda lib: {"initial_timestamp": T0},
    "initial_timestamp naive": lambda lib: {"initial_timestamp": NAIVE},
    "length": lambda lib: {"length": 10},
    "length 2": lambda lib: {"length": 2},
    "features subset": lambda lib: {"features": {"year": 2030}},
    "features float kind": lambda lib: {"features": {"year": 2030.0}},
    "features bool kind": lambda lib: {"features": {"year": True}},
    "features two keys": lambda lib: {"features": {"year": 2030, "scen": "hi"}},
    "features_exact": lambda lib: {"features": {"year": 2030}, "features_exact": True},
    "features_exact two keys": lambda lib: {
        "features": {"year": 2030, "scen": "lo"},
        "features_exact": True,
    },
    "empty features": lambda lib: {"features": {}},
    "empty features exact": lambda lib: {"features": {}, "features_exact": True},
    "features_exact alone": lambda lib: {"features_exact": True},
    "combined": lambda lib: {
        "owner_id": 1,
        "time_series_type": lib.TimeSeriesType.SingleTimeSeries,
        "resolution": "PT1H",
        "features": {"scen": "hi"},
    },
}


@pytest.mark.parametrize("case", list(FILTERS))
def test_filters_agree(filled: Pair, case: str) -> None:
    ref, ours = filled.call(
        lambda lib, s: [without_id(m) for m in s.list_metadata(**FILTERS[case](lib))]
    )
    assert ref[0] == ours[0] == "ok", (ref, ours)
    assert ours[1] == ref[1]
    if case not in (
        "owner_id matching nothing",
        "name_glob is case-sensitive",
        "name and name_glob",
    ):
        assert ref[1], "a filter case that matches nothing proves little"


def test_removal_by_filter_agrees(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    try:
        for k in range(4):
            p.add(sts_spec(f"s{k}", np.arange(3.0) + k % 2), owner_id=k % 2, features={"k": k})
        p.add(Spec("NonSequentialTimeSeries", ([T0], np.zeros(1), "ns"), {}))
        for filters in ({"features": {"k": 1}}, {"owner_id": 0}, {"name": "none"}, {}):
            ref, ours = p.call(lambda lib, s, f=filters: s.remove_by_filter(**f))
            assert ref == ours
            assert p.call(lambda lib, s: (_store_state(s), s.is_empty())) == (
                ("ok", (_store_state(p.ref), p.ref.is_empty())),
                ("ok", (_store_state(p.ours), p.ours.is_empty())),
            )
            assert _store_state(p.ours) == _store_state(p.ref)
    finally:
        p.close()


# =========================================================================== windows and ranges
def _ids(pair: Pair) -> dict[str, tuple[int, int]]:
    ref = {
        m["name"]
        + ("/view" if m["time_series_type"] == "DeterministicSingleTimeSeries" else ""): m["id"]
        for m in pair.ref.list_metadata()
    }
    ours = {
        m["name"]
        + ("/view" if m["time_series_type"] == "DeterministicSingleTimeSeries" else ""): m["id"]
        for m in pair.ours.list_metadata()
    }
    return {k: (ref[k], ours[k]) for k in ref}


def _compare(pair: Pair, fn: Callable[[Any, int], Any], ids: tuple[int, int]) -> None:
    results = []
    for (_, store), i in zip(pair.stores(), ids, strict=True):
        try:
            results.append(("ok", [state(x) for x in fn(store, i)]))
        except Exception as exc:  # comparing whatever each side raises
            results.append(("raised", type(exc).__name__, str(exc)))
    ref, ours = results
    assert ours[:2] == ref[:2], f"reference: {ref}\nours: {ours}"


def _naive_is_the_wall_clock(pair: Pair, fn: Callable[[Any, int, datetime], Any], ids) -> None:
    """A deliberate difference (issue 11): the reference refuses a naive bound on a zoned
    series; ours reads it on the series' wall clock (UTC for these), so one naive range
    serves a selection that mixes zoneless and zoned series."""
    with pytest.raises(infrastore.InvalidParameterError):
        fn(pair.ref, ids[0], NAIVE)
    results = []
    for t in (NAIVE, NAIVE.replace(tzinfo=UTC)):
        try:
            results.append(("ok", [state(x) for x in fn(pair.ours, ids[1], t)]))
        except infrastore_sqlite.InvalidParameterError as exc:
            results.append(("raised", str(exc)))
    assert results[0] == results[1]


WINDOW_SERIES = ["base", "ns", "pe", "det", "prob", "sc", "base/view", "empty_ns", "det0"]
OFFSETS = [None, -3, 0, 0.5, 1, 2, 3, 5, 6, 9, 10, 12]


@pytest.mark.parametrize("series", WINDOW_SERIES)
def test_read_windows_agree(base: Pair, series: str) -> None:
    ids = _ids(base)[series]
    for offset, length, count in itertools.product(OFFSETS, [None, 0, 1, 2, 20], [None, 0, 1, 3]):
        start = None if offset is None else T0 + offset * H

        def read(s: Any, i: int, start=start, length=length, count=count) -> list:
            return [s.read_by_id(i, start_time=start, len=length, count=count)]

        _compare(base, read, ids)
    _naive_is_the_wall_clock(base, lambda s, i, t: [s.read_by_id(i, start_time=t)], ids)


RANGE_BOUNDS = [-5, -3, -1, 0, 1, 1.5, 2, 3, 4, 5, 6, 7.5, 9, 9.5, 10, 11, 12, 15, 40]


@pytest.mark.parametrize("series", WINDOW_SERIES)
def test_read_ranges_agree(base: Pair, series: str) -> None:
    ids = _ids(base)[series]
    for a, b in itertools.product(RANGE_BOUNDS, RANGE_BOUNDS):
        _compare(base, lambda s, i, r=(T0 + a * H, T0 + b * H): s.read_by_ids_range([i, i], r), ids)
    _naive_is_the_wall_clock(base, lambda s, i, t: s.read_by_ids_range([i], (t, t + H)), ids)


def test_reading_many_ids_agrees(base: Pair) -> None:
    ids = _ids(base)
    names = ["sc", "base", "base/view", "ns", "base", "prob"]
    ref_ids = [ids[n][0] for n in names]
    our_ids = [ids[n][1] for n in names]
    assert [state(x) for x in base.ours.read_by_ids(our_ids)] == [
        state(x) for x in base.ref.read_by_ids(ref_ids)
    ]
    forecasts = ["sc", "det", "prob", "det"]
    ref_f, our_f = [ids[n][0] for n in forecasts], [ids[n][1] for n in forecasts]
    ref = [state(x) for x in base.ref.read_by_ids(ref_f, start_time=T0 + 3 * H, count=1)]
    assert [state(x) for x in base.ours.read_by_ids(our_f, start_time=T0 + 3 * H, count=1)] == ref
    meta_ref = [without_id(m) for m in base.ref.list_metadata_by_ids(ref_ids)]
    assert [without_id(m) for m in base.ours.list_metadata_by_ids(our_ids)] == meta_ref
    for n in ("ns", "pe", "empty_ns", "base"):
        assert without_id(base.ours.get_metadata_by_id(ids[n][1])) == without_id(
            base.ref.get_metadata_by_id(ids[n][0])
        )


# =========================================================================== content addressing
def test_content_addressing_agrees(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    try:
        nan_a = np.array([0x7FF8000000000001, 0x8000000000000000], np.uint64).view(np.float64)
        nan_b = np.array([0x7FF8000000000002, 0x8000000000000000], np.uint64).view(np.float64)
        steps: list[Callable[[], Any]] = [
            lambda: p.add(sts_spec("a", nan_a)),
            lambda: p.add(sts_spec("b", nan_b), owner_id=2),  # same hash, other payload
            lambda: p.add(sts_spec("c", np.array([0.0, -0.0]))),
            lambda: p.add(Spec("NonSequentialTimeSeries", ([T0, T0 + H], nan_b, "d"), {})),
            lambda: p.add(sts_spec("e", np.arange(4.0).reshape(2, 2), element_type="tuple(2,f64)")),
            lambda: p.add(
                sts_spec("f", np.arange(4.0).reshape(2, 2), element_type="linear_function")
            ),
            lambda: p.add(
                Spec(
                    "Probabilistic",
                    (T0, "PT1H", "PT1H", "PT1H", 2, [0.5], np.zeros((1, 1, 2)), "g"),
                    {},
                )
            ),
            lambda: p.add(
                Spec("Scenarios", (T0, "PT1H", "PT1H", "PT1H", 2, np.zeros((1, 1, 2)), "h"), {})
            ),
            lambda: p.call(lambda lib, s: s.remove_by_ids([1])),
            lambda: p.call(lambda lib, s: s.remove_by_ids([2, 4])),
            lambda: p.add(sts_spec("i", nan_b)),  # the hash is free again: stored anew
            lambda: p.call(lambda lib, s: s.remove_by_filter(name="g")),
            lambda: p.call(lambda lib, s: s.remove_by_filter(name="h")),
        ]
        for step in steps:
            out = step()
            if isinstance(out, tuple) and isinstance(out[0], int):
                assert out[0] == out[1]  # same ids: AUTOINCREMENT, never reissued
            assert p.ours.num_distinct_arrays() == p.ref.num_distinct_arrays()
            assert _store_state(p.ours) == _store_state(p.ref)
            for m_ref, m_ours in zip(p.ref.list_metadata(), p.ours.list_metadata(), strict=True):
                assert state(p.ours.read_by_id(m_ours["id"])) == state(
                    p.ref.read_by_id(m_ref["id"])
                )
        assert [m["id"] for m in p.ours.list_metadata()] == [m["id"] for m in p.ref.list_metadata()]
    finally:
        p.close()


def test_transactions_agree(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    try:
        for lib, store in p.stores():
            with pytest.raises(RuntimeError), store.transaction():
                store.add_time_series(1, "G", cat(lib), sts_spec("a").build(lib))
                raise RuntimeError
            store.begin_transaction()
            store.add_time_series(1, "G", cat(lib), sts_spec("b").build(lib))
            assert store.in_transaction is True
            store.rollback_transaction()
            assert store.in_transaction is False
            with store.transaction():
                store.add_time_series(1, "G", cat(lib), sts_spec("c", np.ones(3)).build(lib))
        assert _store_state(p.ours) == _store_state(p.ref)
        assert [m["id"] for m in p.ours.list_metadata()] == [m["id"] for m in p.ref.list_metadata()]
    finally:
        p.close()


# =========================================================================== from_values
FROM_VALUES = [
    (
        "SingleTimeSeries",
        (T0, "PT1H"),
        [{"proportional": 1.0, "constant": 2.0}] * 3,
        "linear_function",
    ),
    (
        "SingleTimeSeries",
        (T0, "PT1H"),
        [{"quadratic": 1.0, "proportional": 2.0, "constant": 3.0}],
        "quadratic_function",
    ),
    (
        "SingleTimeSeries",
        (T0, "PT1H"),
        [[{"x": 0.0, "y": 1.0}, {"x": 2.0, "y": 3.0}], [], [{"x": 5.0, "y": 6.0}]],
        "piecewise_linear",
    ),
    (
        "NonSequentialTimeSeries",
        ([T0, T0 + H],),
        [{"x": [0.0, 1.0, 4.0], "y": [5.0, 6.0]}, {"x": [], "y": []}],
        "piecewise_step",
    ),
    ("SingleTimeSeries", (T0, "PT1H"), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "tuple(3,f64)"),
    ("NonSequentialTimeSeries", ([T0, T0 + H],), [(1.0, -0.0), (np.nan, 2.0)], "tuple(2,f64)"),
    (
        "PersistentTimeSeries",
        ([T0],),
        [{"quadratic": 1.0, "proportional": 2.0, "constant": 3.0}],
        "quadratic_function",
    ),
    (
        "Deterministic",
        (T0, "PT1H", "PT1H", "PT1H", 2),
        [[{"x": 0.0, "y": 1.0}], [{"x": 1.0, "y": 2.0}, {"x": 2.0, "y": 3.0}]],
        "piecewise_linear",
    ),
    (
        "Deterministic",
        (T0, "PT1H", "PT2H", "PT1H", 2),
        [{"proportional": float(k), "constant": 0.0} for k in range(4)],
        "linear_function",
    ),
    (
        "Probabilistic",
        (T0, "PT1H", "PT1H", "PT1H", 2, [0.1, 0.9]),
        [[{"x": float(k), "y": 1.0}] for k in range(4)],
        "piecewise_linear",
    ),
    (
        "Scenarios",
        (T0, "PT1H", "PT1H", "PT1H", 1, 2),
        [{"x": [float(k)], "y": []} for k in range(2)],
        "piecewise_step",
    ),
]


@pytest.mark.parametrize(("kind", "head", "logical", "element_type"), FROM_VALUES)
@pytest.mark.parametrize("declared", [False, True], ids=["inferred", "declared"])
def test_from_values_agrees(
    pair: Pair, kind: str, head: tuple, logical: Any, element_type: str, declared: bool
) -> None:
    name = f"fv#{next(NAMES)}"
    kw = {"element_type": element_type} if declared else {}
    built = [getattr(lib, kind).from_values(*head, logical, name, **kw) for lib in LIBS]
    assert [b.element_type for b in built] == [element_type] * 2
    assert built[1].data.tobytes() == built[0].data.tobytes()
    assert built[1].data.shape == built[0].data.shape
    assert repr(built[1].decoded_values()) == repr(built[0].decoded_values())  # NaN-safe
    ids = tuple(
        store.add_time_series(1, "G", cat(lib), ts)
        for (lib, store), ts in zip(pair.stores(), built, strict=True)
    )
    assert_same_series(pair, ids)


# =========================================================================== time references
DENVER = ZoneInfo("America/Denver")
FALL_BACK = [  # 2024-11-03: 01:30 happens twice in Denver
    datetime(2024, 11, 3, 7, 30, tzinfo=UTC).astimezone(DENVER),
    datetime(2024, 11, 3, 8, 30, tzinfo=UTC).astimezone(DENVER),
    datetime(2024, 11, 3, 9, 30, tzinfo=UTC).astimezone(DENVER),
]
ZONED_CASES = [
    Spec("NonSequentialTimeSeries", (FALL_BACK, np.arange(3.0), "fold"), {}),
    Spec(
        "PersistentTimeSeries",
        (
            [
                datetime(2024, 3, 10, 1, 30, tzinfo=DENVER),
                datetime(2024, 3, 10, 3, 30, tzinfo=DENVER),
            ],
            np.arange(2.0),
            "spring",
        ),
        {},
    ),
    Spec(
        "SingleTimeSeries",
        (datetime(2024, 11, 3, 0, 30, tzinfo=DENVER), "PT30M", np.arange(6.0), "sts-fold"),
        {},
    ),
    Spec("SingleTimeSeries", (datetime(1960, 1, 1, tzinfo=UTC), "PT1H", np.arange(3.0), "old"), {}),
    Spec(
        "SingleTimeSeries",
        (
            datetime(2024, 1, 31, 12, tzinfo=timezone(timedelta(hours=5, minutes=30))),
            "P1M",
            np.arange(4.0),
            "ist-months",
        ),
        {},
    ),
    Spec(
        "SingleTimeSeries",
        (datetime(2024, 1, 1, 0, 0, 0, 500000), "PT0.25S", np.arange(4.0), "zoneless-ms"),
        {},
    ),
    Spec(
        "SingleTimeSeries",
        (T0, "PT1H", np.arange(2.0), "explicit-offset"),
        {"time_reference": "-0700"},
    ),
    Spec(
        "SingleTimeSeries",
        (T0, "PT1H", np.arange(2.0), "explicit-zero"),
        {"time_reference": "+00:00"},
    ),
    Spec("SingleTimeSeries", (T0, "PT1H", np.arange(2.0), "zone-UTC"), {"time_reference": "UTC"}),
    Spec(
        "SingleTimeSeries",
        (T0, "PT1H", np.arange(2.0), "unchecked-zone"),
        {"time_reference": "Foo/Bar"},
    ),
    Spec(
        "SingleTimeSeries",
        (NAIVE, "PT1H", np.arange(2.0), "naive-as-utc"),
        {"time_reference": "utc"},
    ),
    Spec(
        "Deterministic",
        (
            datetime(2024, 1, 1, tzinfo=DENVER),
            "PT1H",
            "P2D",
            "PT12H",
            2,
            np.zeros((48, 2)),
            "denver-det",
        ),
        {},
    ),
    Spec(
        "Deterministic",
        (
            datetime(2024, 1, 31, tzinfo=UTC),
            "P1M",
            "P2M",
            "P1M",
            3,
            np.arange(6.0).reshape(2, 3),
            "month-det",
        ),
        {},
    ),
]


@pytest.mark.parametrize("spec", ZONED_CASES, ids=lambda s: s.name)
def test_time_references_agree(pair: Pair, spec: Spec) -> None:
    ids = pair.add(spec)
    assert_same_series(pair, ids)
    if spec.kind == "SingleTimeSeries":
        start = pair.ref.read_by_id(ids[0]).timestamps[1]
        got = pair.call(
            lambda lib, s: [
                state(
                    s.read_by_id(ids[0] if lib is infrastore else ids[1], start_time=start, len=2)
                )
            ]
        )
        assert got[0][:2] == got[1][:2]


@pytest.fixture(scope="module")
def monthly(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    p = Pair(Path(tmp_path_factory.mktemp("monthly")))
    jan31 = datetime(2024, 1, 31, 12, tzinfo=UTC)
    p.add(sts_spec("clamped", np.arange(6.0), start=jan31, res="P1M"))
    p.add(sts_spec("first", np.arange(6.0), start=datetime(2024, 1, 1, tzinfo=UTC), res="P1M"))
    p.add(
        sts_spec(
            "ist",
            np.arange(6.0),
            start=jan31.astimezone(timezone(timedelta(hours=5, minutes=30))),
            res="P1M",
        )
    )
    p.add(
        Spec(
            "Deterministic",
            (jan31, "P1M", "P2M", "P1M", 5, np.arange(10.0).reshape(2, 5), "det"),
            {},
        )
    )
    p.add(
        Spec(
            "Scenarios",
            (jan31, "PT1H", "PT2H", "P2M", 3, np.arange(12.0).reshape(2, 2, 3), "sc"),
            {},
        )
    )
    yield p
    p.close()


@pytest.mark.parametrize("name", ["clamped", "first", "ist", "det", "sc"])
def test_calendar_slices_agree(monthly: Pair, name: str) -> None:
    """Re-anchoring a clamped calendar grid mid-series is refused by both, elsewhere allowed."""
    from infrastore_sqlite.core.timeref import ms_to_datetimes

    ids = _ids(monthly)[name]
    ours = monthly.ours.read_by_id(ids[1])
    if hasattr(ours, "timestamps"):
        points, extent = list(ours.timestamps), "len"
    else:
        points, extent = ms_to_datetimes(ours.issue_times_ms(), ours.time_reference), "count"
    assert len(points) >= 3
    starts = points + [t + timedelta(days=1) for t in points]
    for start, n in itertools.product(starts, [None, 1, 2, 3]):
        _compare(
            monthly,
            lambda s, i, t=start, kw={extent: n}: [s.read_by_id(i, start_time=t, **kw)],
            ids,
        )
    bounds = [*points, points[-1] + timedelta(days=40), points[0] - timedelta(days=40)]
    for a, b in itertools.product(bounds, bounds):
        _compare(monthly, lambda s, i, r=(a, b): s.read_by_ids_range([i], r), ids)


# =========================================================================== exhaustive grid
GRID_ELEMENTS = [
    *[(d, ()) for d in DTYPE_NAMES],
    ("f64", (2, 3)),
    ("i32", (2,)),
    *[(f"tuple(2,{d})", (2,)) for d in ("f64", "f32", "i8", "u64", "bool")],
    ("linear_function", (2,)),
    ("quadratic_function", (3,)),
    ("piecewise_linear", (5,)),
    ("piecewise_step", (4,)),
]
GRID_TYPES = [
    "SingleTimeSeries",
    "NonSequentialTimeSeries",
    "PersistentTimeSeries",
    "Deterministic",
    "Probabilistic",
    "Scenarios",
]


def _grid_spec(kind: str, element_type: str, e: tuple[int, ...]) -> Spec:
    name = f"grid#{next(NAMES)}"
    start = datetime(2024, 11, 3, 6, tzinfo=UTC).astimezone(ZoneInfo("America/Denver"))
    kw = {"element_type": element_type}
    if kind == "SingleTimeSeries":
        return Spec(kind, (start, "PT30M", grid_data(element_type, e, (5,), 1), name), kw)
    if kind in ("NonSequentialTimeSeries", "PersistentTimeSeries"):
        stamps = [start + timedelta(hours=h) for h in (0, 1, 2, 40, 41)]
        return Spec(kind, (stamps, grid_data(element_type, e, (5,), 2), name), kw)
    head = (start, "PT30M", "PT1H", "PT30M", 3)
    if kind == "Deterministic":
        return Spec(kind, (*head, grid_data(element_type, e, (2, 3), 3), name), kw)
    if kind == "Probabilistic":
        return Spec(kind, (*head, [0.25, 0.75], grid_data(element_type, e, (2, 2, 3), 4), name), kw)
    return Spec(kind, (*head, grid_data(element_type, e, (3, 2, 3), 5), name), kw)


@pytest.mark.parametrize("kind", GRID_TYPES)
@pytest.mark.parametrize(
    ("element_type", "e"), GRID_ELEMENTS, ids=[f"{t}{list(e)}" for t, e in GRID_ELEMENTS]
)
def test_every_element_type_on_every_type_agrees(
    pair: Pair, kind: str, element_type: str, e: tuple
) -> None:
    spec = _grid_spec(kind, element_type, e)
    ids = pair.add(spec, owner_id=77, owner_type="Grid", features={"kind": kind, "w": 0.25})
    assert_same_series(pair, ids)
    window = pair.call(
        lambda lib, s: [
            state(x)
            for x in s.read_by_ids_range(
                [ids[0] if lib is infrastore else ids[1]],
                (datetime(2024, 11, 3, 7, tzinfo=UTC), datetime(2024, 11, 3, 8, 30, tzinfo=UTC)),
            )
        ]
    )
    assert window[0] == window[1]
