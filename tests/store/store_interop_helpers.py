"""The pair of stores (the reference's and ours) and the series strategies shared by the
store's interop test modules."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import infrastore
import numpy as np
import pytest
from bitpatterns import values
from hypothesis import HealthCheck, settings
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


NAIVE = datetime(2024, 1, 1)


def store_state(store: Any) -> tuple:
    return [without_id(m) for m in store.list_metadata()], store.num_distinct_arrays()
