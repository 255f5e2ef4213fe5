"""Periods and time references compared with the reference implementation (infrastore 0.15.1).

The reference is the oracle: every case is run through both, and the answers must agree —
accepted or refused, and when accepted, the same canonical spelling, grid or reference.
"""

from __future__ import annotations

import sqlite3
import warnings
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import infrastore
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infrastore_sqlite.core.periods import Period, as_period, divide, grid
from infrastore_sqlite.core.timeref import (
    check_period_for_reference,
    datetime_to_ms,
    infer_time_reference,
    ms_to_axis_instant,
    ms_to_datetime,
    ms_to_datetimes,
    ms_to_rfc3339,
    normalize_time_reference,
    reference_slug,
)
from infrastore_sqlite.errors import InvalidParameterError

pytestmark = [
    pytest.mark.interop,
    # both packages warn on a well-formed zone name the tz database lacks ("Utc")
    pytest.mark.filterwarnings("ignore:time_reference names the IANA zone:UserWarning"),
]

T0 = datetime(2024, 1, 1, tzinfo=UTC)
Outcome = tuple[str, Any]


def ref_resolution(resolution: Any) -> Outcome:
    """('ok', canonical) or ('error', None) from the reference's SingleTimeSeries."""
    try:
        return "ok", infrastore.SingleTimeSeries(T0, resolution, np.zeros(2), "x").resolution
    except (infrastore.InvalidParameterError, TypeError):
        return "error", None


def our_resolution(resolution: Any) -> Outcome:
    try:
        return "ok", str(as_period(resolution))
    except InvalidParameterError:
        return "error", None


def ref_reference(value: str | None, when: datetime = T0) -> Outcome:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unknown zones only warn
        try:
            ts = infrastore.SingleTimeSeries(when, "PT1H", np.zeros(2), "x", time_reference=value)
        except infrastore.InvalidParameterError:
            return "error", None
    return "ok", ts.time_reference


def our_reference(value: str | None) -> Outcome:
    try:
        return "ok", normalize_time_reference(value)
    except InvalidParameterError:
        return "error", None


# ---------------------------------------------------------------------------------------
# Periods
# ---------------------------------------------------------------------------------------

PERIOD_TEXTS = [
    "PT60M", "PT3600S", "PT24H", "PT86400S", "P1W", "P2W", "PT90M", "PT36H", "P1DT0H", "P0D",
    "PT1.5S", "PT0.5S", "PT0.001S", "PT0.25S", "-PT1H", "P0Y", "P1Y6M", "P12M", "P1Y2M", "P1M",
    "PT1h", "P1d", "P1y", "P1m", "PT1m", "PT1s", " PT1H ", "\tPT1H\n", "\u00a0PT1H", "\u3000PT1H",
    "PT1H1H", "P1D1D", "P1M1Y", "PT1S1H", "P1D1W", "PT0.5S0.5S", "PT1M60S", "P1DT", "P1YT",
    "P1WT", "PT0S", "PT0H", "P0W", "P00D", "PT00001H", "PT1.000S", "PT1.10S", "-PT0S", "-P0M",
    "-P1M", "-P12M", "P1DT1H1M1.001S", "PT100000H", "P2147483647M", "-P2147483648M",
    "P178956970Y", "PT9223372036854775.807S", "-PT9223372036854775.807S",
    "pt1h", "p1D", "Pt1H", "PT1,5S", "PT0.0005S", "PT1.1234S", "P1.5D", "PT1.5H", "PT1.0H",
    "P0.5Y", "PT1.S", "PT.5S", "P1.0S", "P", "PT", "-P", "-", "", " ", "P1", "PT1", "P1H",
    "PT1D", "P1S", "P-1D", "P+1D", "+PT1H", "--PT1H", "- PT1H", "P 1D", "P1D T1H", "P1DTT1H",
    "P1DT1HT1M", "PT1H-", "P1T1H", "PT1_0H", "PT1e3S", "P１D", "1h", "1 hour", "P1M1D",
    "P1YT1H", "P1YT0S", "P0M0D", "P1M0D", "P1W1M", "P99999999999999999999D", "P9999999999999D",
    "PT9223372036854775807S", "PT9223372036854775.808S", "-PT9223372036854775.808S",
    "P106751991167DT7H12M56S", "P2147483648M", "P178956971Y", "-P178956971Y", "\x1cPT1H",
    "P1YT1.5H", "P1M1.5D", "PT1.5S1M", "P1W1D",
]  # fmt: skip


@pytest.mark.parametrize("text", PERIOD_TEXTS)
def test_period_spelling_matches_reference(text: str) -> None:
    assert our_resolution(text) == ref_resolution(text)


@pytest.mark.parametrize(
    "td",
    [
        timedelta(hours=1),
        timedelta(days=1, hours=1),
        timedelta(seconds=0.25),
        timedelta(microseconds=1500),
        timedelta(microseconds=-1500),
        timedelta(microseconds=-1),
        timedelta(microseconds=999),
        timedelta(days=-1),
        timedelta(0),
        timedelta.max,
        timedelta.min,
        timedelta(days=7),
        timedelta(minutes=90),
    ],
)
def test_timedelta_matches_reference(td: timedelta) -> None:
    assert our_resolution(td) == ref_resolution(td)


@pytest.mark.parametrize("value", [3600, 1.5, None, np.timedelta64(1, "h")])
def test_other_types_are_refused_by_both(value: Any) -> None:
    # The reference raises TypeError; we raise InvalidParameterError. Both refuse.
    assert ref_resolution(value) == ("error", None)
    assert our_resolution(value) == ("error", None)


period_fuzz = st.one_of(
    st.text(alphabet="PTYMWDHSymwdhs0123456789.,- ", max_size=12),
    st.builds(
        lambda sign, date, t, time: sign + "P" + date + t + time,
        st.sampled_from(["", "-", "+", " "]),
        st.text(alphabet="0123456789YMWDymwd.", max_size=6),
        st.sampled_from(["", "T", "t"]),
        st.text(alphabet="0123456789HMShms.", max_size=8),
    ),
)


@given(period_fuzz)
@settings(max_examples=400, deadline=None)
def test_fuzzed_period_texts_match_reference(text: str) -> None:
    assert our_resolution(text) == ref_resolution(text)


@given(
    st.one_of(
        st.integers(-(2**63) + 1, 2**63 - 1).map(Period.of_ms),
        st.integers(-(2**31), 2**31 - 1).map(Period.of_months),
    )
)
@settings(max_examples=200, deadline=None)
def test_canonical_spellings_are_the_references(p: Period) -> None:
    assert ref_resolution(str(p)) == ("ok", str(p))


@pytest.mark.parametrize(
    ("resolution", "horizon", "interval", "steps"),
    [
        ("PT1H", "PT3H", "PT1H", 3),
        ("PT60M", "PT180M", "PT120M", 3),
        ("PT1H", "PT90M", "PT1H", 2),
        ("P1M", "P1Y", "P1M", 12),
        ("P1M", "P18M", "P6M", 18),
        ("PT1H", "P1M", "PT1H", 1),
        ("P1M", "PT1H", "P1M", 1),
        ("PT0S", "PT1H", "PT1H", 1),
        ("PT1H", "PT0S", "PT1H", 1),
        ("PT1H", "-PT1H", "PT1H", 1),
        ("-PT1H", "-PT2H", "PT1H", 2),
        ("PT15M", "P1DT12H", "PT6H", 144),
        ("PT0.5S", "PT1.5S", "PT1S", 3),
    ],
)
def test_forecast_periods_match_reference(
    resolution: str, horizon: str, interval: str, steps: int
) -> None:
    try:
        ref = infrastore.Deterministic(
            T0, resolution, horizon, interval, 2, np.zeros((steps, 2)), "x"
        )
        expected: Outcome = ("ok", (ref.resolution, ref.horizon, ref.interval, steps))
    except infrastore.InvalidParameterError:
        expected = ("error", None)
    try:
        res, hor, itv = (as_period(v) for v in (resolution, horizon, interval))
        ours: Outcome = ("ok", (str(res), str(hor), str(itv), divide(hor, res)))
    except InvalidParameterError:
        ours = ("error", None)
    assert ours == expected


# ---------------------------------------------------------------------------------------
# Grids
# ---------------------------------------------------------------------------------------

GRID_CASES = [
    (datetime(2024, 1, 31, tzinfo=UTC), "P1M", 14),
    (datetime(2024, 2, 29, 12), "P1Y", 6),
    (datetime(2024, 1, 31, tzinfo=timezone(timedelta(hours=5, minutes=30))), "P1M", 5),
    (datetime(2024, 1, 30, 20, tzinfo=timezone(timedelta(hours=-7))), "P1M", 5),
    (datetime(1960, 1, 31, 23, 59, 59, 999000, tzinfo=UTC), "P1M", 5),
    (datetime(1, 1, 31, tzinfo=UTC), "P1M", 5),
    (datetime(9999, 10, 31, tzinfo=UTC), "P1M", 3),
    (datetime(2024, 1, 31, tzinfo=UTC), "-P1M", 5),
    (datetime(2024, 8, 31, 6, 30), "P3M", 8),
    (datetime(2024, 1, 31, tzinfo=UTC), "P0M", 3),
    (datetime(1969, 12, 31, 23, tzinfo=UTC), "PT0.001S", 5),
    (datetime(2024, 3, 9, 7, tzinfo=ZoneInfo("America/Denver")), "PT1H", 48),
    (datetime(2024, 1, 1, tzinfo=UTC), "P1DT1H1M1.001S", 5),
    (datetime(2024, 1, 1, tzinfo=UTC), "-PT1H", 5),
]


@pytest.mark.parametrize(("start", "resolution", "n"), GRID_CASES)
def test_grids_match_reference(start: datetime, resolution: str, n: int) -> None:
    ref = infrastore.SingleTimeSeries(start, resolution, np.zeros(n), "x")
    ours = grid(datetime_to_ms(start), Period.parse(resolution), n)
    assert ours.tolist() == [datetime_to_ms(t) for t in ref.timestamps]
    # and they read back as the same datetimes, with the same zone
    rendered = ms_to_datetimes(ours, ref.time_reference)
    assert rendered == ref.timestamps
    assert [d.utcoffset() for d in rendered] == [d.utcoffset() for d in ref.timestamps]


@given(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9990, 12, 31)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
    ),
    st.sampled_from(["P1M", "P2M", "P1Y", "P5M", "P13M"]),
)
@settings(max_examples=150, deadline=None)
def test_fuzzed_calendar_grids_match_reference(start: datetime, resolution: str) -> None:
    ref = infrastore.SingleTimeSeries(start, resolution, np.zeros(6), "x")
    assert grid(datetime_to_ms(start), Period.parse(resolution), 6).tolist() == [
        datetime_to_ms(t) for t in ref.timestamps
    ]


# ---------------------------------------------------------------------------------------
# Time references
# ---------------------------------------------------------------------------------------

REFERENCE_TEXTS = [
    None, "utc", "UTC", "Utc", "zoneless", "Zoneless", "ZONELESS", "+05:30", "+0530", "+05",
    "-0700", "+07", "-00:00", "+00:00", "-00", "+0000", "+23:59", "-23:59", "+24:00", "+23:60",
    "+25:00", "-7", "+7", "+5:30", "+05:3", "+05:300", "+053", "+05:30:00", "", " ", " utc",
    "utc ", "America/Denver", "1a/b", "A//B", "/A", "A/", "Foo.Bar", "nonsense", "Foo/Bar", "Z",
    "unspecified", "Etc/GMT+7", "a.", "a_b", "a-b", "a+b", "A/1b", "A/b c", "Ä", "a/-b", "_a",
    "America/Argentina/Buenos_Aires", "−05:00", "+０5:00", "GMT+0", "+05:30Z", "UTC+5",
    "x/y/z", "x/y/z/w", "A" * 64, "A" * 65, "A/" + "B" * 62, "A/" + "B" * 63, "A" * 30 + "/" + "B" * 33,
    "A" * 30 + "/" + "B" * 34, "CON", "a_", "a-", "a+",
]  # fmt: skip


@pytest.mark.parametrize("value", REFERENCE_TEXTS)
def test_time_reference_normalization_matches_reference(value: str | None) -> None:
    expected = ref_reference(value)
    if value is None:
        expected = ("ok", None)  # the reference infers from T0 instead; None stays None here
    assert our_reference(value) == expected


@given(st.text(alphabet="AaZz09_+-/:. Ü", max_size=10))
@settings(max_examples=300, deadline=None)
def test_fuzzed_time_references_match_reference(value: str) -> None:
    assert our_reference(value) == ref_reference(value)


class _Two(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=2)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)


class _Zero(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)


class _NoOffset(tzinfo):
    def utcoffset(self, dt: datetime | None) -> None:
        return None

    def dst(self, dt: datetime | None) -> None:
        return None


@pytest.mark.parametrize(
    "zone",
    [
        None,
        UTC,
        timezone(timedelta(0), "Z"),
        timezone(timedelta(0), "UTC"),
        timezone(timedelta(hours=5, minutes=30)),
        timezone(timedelta(hours=-7)),
        timezone(timedelta(hours=-23, minutes=-59)),
        timezone(timedelta(hours=1), "CET"),
        timezone(timedelta(seconds=30)),
        timezone(timedelta(hours=1, seconds=1)),
        timezone(timedelta(microseconds=1)),
        ZoneInfo("UTC"),
        ZoneInfo("Etc/UTC"),
        ZoneInfo("America/Denver"),
        ZoneInfo("Etc/GMT+7"),
        _Two(),
        _Zero(),
        _NoOffset(),
    ],
)
def test_inferred_reference_matches_reference(zone: tzinfo | None) -> None:
    when = datetime(2024, 7, 1, 12, tzinfo=zone)
    try:
        ours: Outcome = ("ok", infer_time_reference(when))
    except InvalidParameterError:
        ours = ("error", None)
    assert ours == ref_reference(None, when)


@pytest.mark.parametrize(
    ("when", "reference"),
    [
        (datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=5))), "zoneless"),
        (datetime(2024, 1, 1, 12), "utc"),
        (datetime(2024, 1, 1, 12), "+05:30"),
        (datetime(2024, 1, 1, 12), "America/Denver"),
        (datetime(2024, 1, 1, 12), "nonsense"),
        (datetime(2024, 1, 1, 12, tzinfo=UTC), "Etc/GMT+7"),
        (datetime(2024, 1, 1, 12, tzinfo=UTC), "+0530"),
        (datetime(2024, 1, 1, 12, tzinfo=UTC), "-00:00"),
        (datetime(2024, 1, 1, 12, tzinfo=UTC), "unspecified"),
        (datetime(2024, 1, 1, 12, tzinfo=UTC), "UTC"),
        (datetime(2024, 1, 1, 12, tzinfo=ZoneInfo("Europe/Paris")), "+00:00"),
        (datetime(1960, 6, 1, 12, 0, 0, 1000, tzinfo=ZoneInfo("Europe/Paris")), None),
        (datetime(1, 1, 1, 12), "zoneless"),
    ],
)
def test_rendering_matches_reference(when: datetime, reference: str | None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference warns again when rendering
        ref = infrastore.SingleTimeSeries(when, "PT1H", np.zeros(1), "x", time_reference=reference)
        expected = ref.initial_timestamp
    ours = ms_to_datetime(datetime_to_ms(when), ref.time_reference)
    assert ours == expected
    assert ours.tzinfo == expected.tzinfo
    assert ours.utcoffset() == expected.utcoffset()


# ---------------------------------------------------------------------------------------
# Through a reference store: refusals at add, catalog text, export names
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ref_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("ref") / "store.h5"
    store = infrastore.Store.create(str(path))
    yield store
    store.close()


_owner = iter(range(1, 10**6))


def ref_add(store: Any, ts: Any) -> bool:
    try:
        store.add_time_series(next(_owner), "Gen", infrastore.OwnerCategory.Component, ts)
    except infrastore.InvalidParameterError:
        return False
    return True


@pytest.mark.parametrize(
    ("resolution", "reference"),
    [
        ("P1D", "America/Denver"),
        ("PT24H", "Europe/Paris"),
        ("P7D", "Asia/Tokyo"),
        ("P1DT1H", "Asia/Tokyo"),
        ("P1M", "America/Denver"),
        ("P1D", "UTC"),
        ("P1D", "Etc/UTC"),
        ("P1D", "Etc/GMT+7"),
        ("P1M", "nonsense"),
        ("PT23H59M59.999S", "America/Denver"),
        ("PT1H", "America/Denver"),
        ("P1D", "utc"),
        ("P1M", "utc"),
        ("P1D", "+05:30"),
        ("P1M", "-07:00"),
        ("PT24H", "zoneless"),
    ],
)
def test_zone_period_restriction_matches_reference(
    ref_store: Any, resolution: str, reference: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = infrastore.SingleTimeSeries(T0, resolution, np.zeros(3), "x", time_reference=reference)
    accepted = ref_add(ref_store, ts)
    try:
        check_period_for_reference(Period.parse(resolution), reference, what="resolution")
        ours = True
    except InvalidParameterError:
        ours = False
    assert ours == accepted


@pytest.mark.parametrize(
    ("interval", "horizon", "reference"),
    [("P1D", "P2D", "Europe/Paris"), ("PT12H", "P2D", "Europe/Paris"), ("P1D", "P2D", "utc")],
)
def test_zone_interval_restriction_matches_reference(
    ref_store: Any, interval: str, horizon: str, reference: str
) -> None:
    steps = divide(Period.parse(horizon), Period.parse("PT1H"))
    ts = infrastore.Deterministic(
        T0, "PT1H", horizon, interval, 2, np.zeros((steps, 2)), "x", time_reference=reference
    )
    accepted = ref_add(ref_store, ts)
    try:
        # the horizon is not a grid step, so only resolution and interval are checked
        check_period_for_reference(Period.parse("PT1H"), reference, what="resolution")
        check_period_for_reference(Period.parse(interval), reference, what="interval")
        ours = True
    except InvalidParameterError:
        ours = False
    assert ours == accepted


@pytest.mark.parametrize(
    "when",
    [
        datetime(2024, 1, 1, 0, 0, 0, 1500, tzinfo=UTC),
        datetime(2024, 1, 1, 0, 0, 0, 1),
        datetime(2024, 1, 1, 0, 0, 0, 2000, tzinfo=UTC),
        datetime(1960, 1, 1, 0, 0, 0, 999_999),
    ],
)
def test_sub_millisecond_refusal_matches_reference(ref_store: Any, when: datetime) -> None:
    accepted = ref_add(ref_store, infrastore.SingleTimeSeries(when, "PT1H", np.zeros(1), "x"))
    try:
        datetime_to_ms(when)
        ours = True
    except InvalidParameterError:
        ours = False
    assert ours == accepted


CATALOG_INSTANTS = [
    datetime(2024, 1, 1, 0, 0, 0, 500_000, tzinfo=UTC),
    datetime(1960, 1, 1, tzinfo=UTC),
    datetime(1, 1, 1),
    datetime(2024, 7, 1, 12, 0, 0, 1000, tzinfo=ZoneInfo("Europe/Paris")),
    datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC),
]


def test_catalog_text_and_time_axis_match_reference(tmp_path: Path) -> None:
    store = infrastore.Store.create(str(tmp_path / "a.h5"))
    for i, when in enumerate(CATALOG_INSTANTS):
        store.add_time_series(
            i + 1,
            "Gen",
            infrastore.OwnerCategory.Component,
            infrastore.SingleTimeSeries(when, "PT1H", np.zeros(2), f"s{i}"),
        )
    exported = store.export_sqlite(str(tmp_path / "e.sqlite"))
    store.close()

    with sqlite3.connect(tmp_path / "a.h5.sqlite") as catalog:
        rows = catalog.execute(
            "SELECT name, initial_timestamp FROM time_series_associations"
        ).fetchall()
    texts = dict(rows)
    with sqlite3.connect(tmp_path / "e.sqlite") as db:
        axes: dict[int, str] = {}
        for part in exported:
            query = (
                f'SELECT s.initial_timestamp, a.time_axis FROM "{part["series_table"]}" s '
                f'JOIN "{part["arrays_table"]}" a ON a.id = s.array_id'
            )
            axes.update(db.execute(query).fetchall())
    for i, when in enumerate(CATALOG_INSTANTS):
        ms = datetime_to_ms(when)
        assert ms_to_rfc3339(ms) == texts[f"s{i}"]
        assert axes[ms] == f"R2/{ms_to_axis_instant(ms)}/PT1H"


SLUG_REFERENCES = [
    "CON", "com0", "COM1", "lpt9", "LPT10", "Etc/GMT+1", "A-b", "unspecified", "Nul/x",
    "Europe/CON", "CONx", "AUX", "prn", "COM9", "x_CON2", "+00:00", "-07:00", "+05:30", "utc",
    "zoneless", "CON_", "America/Argentina/Buenos_Aires",
]  # fmt: skip


def test_slugs_match_reference_table_names(tmp_path: Path) -> None:
    store = infrastore.Store.create(str(tmp_path / "a.h5"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, ref in enumerate(SLUG_REFERENCES):
            ts = infrastore.SingleTimeSeries(T0, "PT1H", np.zeros(2), "x", time_reference=ref)
            store.add_time_series(i + 1, "Gen", infrastore.OwnerCategory.Component, ts)
    exported = store.export_sqlite(str(tmp_path / "e.sqlite"))
    store.close()
    names = {part["time_reference"]: part["values_table"] for part in exported}
    assert len(names) == len(SLUG_REFERENCES)
    for ref in SLUG_REFERENCES:
        assert names[ref] == f"SingleTimeSeries_f64_{reference_slug(ref)}_values"


def test_reference_module_is_the_pinned_version() -> None:
    # The expectations above were taken from this version; a different oracle would
    # make these tests compare against the wrong behaviour.
    assert infrastore.__version__ == "0.15.1"
