"""Tests for infrastore_sqlite.timeref: references, datetime ↔ ms, text forms."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from infrastore_sqlite.core.periods import Period
from infrastore_sqlite.core.timeref import (
    MAX_MS,
    MIN_MS,
    check_period_for_reference,
    datetime_to_ms,
    datetimes_to_ms,
    infer_time_reference,
    ms_to_axis_instant,
    ms_to_datetime,
    ms_to_datetimes,
    ms_to_rfc3339,
    normalize_time_reference,
    parse_instant,
    reference_kind,
    reference_slug,
    resolve_time_reference,
    rfc3339_to_ms,
    zone_info,
)
from infrastore_sqlite.errors import InvalidParameterError

# Zones the tz database lacks warn (test_an_unknown_zone_warns_where_it_is_named_and_rendered);
# elsewhere that is noise.
pytestmark = pytest.mark.filterwarnings("ignore:time_reference names the IANA zone:UserWarning")

JAN1 = 1_704_067_200_000  # 2024-01-01T00:00:00Z
DENVER = ZoneInfo("America/Denver")


def tz(hours: int = 0, minutes: int = 0, name: str | None = None) -> timezone:
    offset = timedelta(hours=hours, minutes=minutes)
    return timezone(offset) if name is None else timezone(offset, name)


# ---------------------------------------------------------------------------------------
# normalize_time_reference
# ---------------------------------------------------------------------------------------

NORMALIZED = [
    (None, None),
    ("utc", "utc"),
    ("zoneless", "zoneless"),
    ("+05:30", "+05:30"),
    ("+0530", "+05:30"),
    ("+05", "+05:00"),
    ("-0700", "-07:00"),
    ("+07", "+07:00"),
    ("-00:00", "+00:00"),
    ("-00", "+00:00"),
    ("+0000", "+00:00"),
    ("+00:00", "+00:00"),  # an offset, distinct from 'utc'
    ("+23:59", "+23:59"),
    ("-23:59", "-23:59"),
    # zones: shape only, existence not checked, case kept
    ("UTC", "UTC"),
    ("Utc", "Utc"),
    ("Z", "Z"),
    ("Zoneless", "Zoneless"),
    ("ZONELESS", "ZONELESS"),
    ("unspecified", "unspecified"),
    ("nonsense", "nonsense"),
    ("Foo/Bar", "Foo/Bar"),
    ("America/Denver", "America/Denver"),
    ("America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires"),
    ("Etc/GMT+7", "Etc/GMT+7"),
    ("GMT+0", "GMT+0"),
    ("UTC+5", "UTC+5"),
    ("a_b", "a_b"),
    ("a-", "a-"),
    ("A/b+1", "A/b+1"),
    ("x/y/z", "x/y/z"),
    ("A" * 64, "A" * 64),
    ("A/" + "B" * 62, "A/" + "B" * 62),
]


@pytest.mark.parametrize(("value", "expected"), NORMALIZED)
def test_normalize(value: str | None, expected: str | None) -> None:
    assert normalize_time_reference(value) == expected


BAD_REFERENCES = [
    "1a/b",
    "A//B",
    "/A",
    "A/",
    "Foo.Bar",
    "a.",
    "-7",
    "+7",
    "+5:30",
    "+05:3",
    "+05:300",
    "+053",
    "+05:30:00",
    "+05:30Z",
    " ",
    " utc",
    "utc ",
    "Ä",
    "A/1b",
    "A/b c",
    "a/-b",
    "_a",
    "−05:00",  # U+2212 minus sign
    "+０5:00",  # full-width digit
    "x/y/z/w",  # more than three parts
    "A" * 65,  # longer than 64
]


@pytest.mark.parametrize("value", BAD_REFERENCES)
def test_normalize_rejects_bad_shapes(value: str) -> None:
    with pytest.raises(InvalidParameterError, match="not shaped like an IANA name"):
        normalize_time_reference(value)


@pytest.mark.parametrize("value", ["+24:00", "+23:60", "+25:00", "-99", "+12:75"])
def test_normalize_rejects_out_of_range_offsets(value: str) -> None:
    with pytest.raises(InvalidParameterError, match="out of range"):
        normalize_time_reference(value)


def test_normalize_empty_and_wrong_type() -> None:
    with pytest.raises(InvalidParameterError, match="zone name is empty"):
        normalize_time_reference("")
    with pytest.raises(InvalidParameterError, match="string or None"):
        normalize_time_reference(5)  # type: ignore[arg-type]


def test_normalize_hints() -> None:
    with pytest.raises(InvalidParameterError) as info:
        normalize_time_reference(" utc")
    assert "Did you mean 'utc'?" in str(info.value)
    with pytest.raises(InvalidParameterError) as info:
        normalize_time_reference("Foo.Bar")
    assert "America/Denver" in str(info.value)


# ---------------------------------------------------------------------------------------
# infer / resolve
# ---------------------------------------------------------------------------------------


class _FixedTwo(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=2)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)


class _NoOffset(tzinfo):
    def utcoffset(self, dt: datetime | None) -> None:
        return None

    def dst(self, dt: datetime | None) -> None:
        return None


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        (None, "zoneless"),
        (UTC, "utc"),
        (tz(0), "utc"),  # timezone(timedelta(0)) is timezone.utc itself
        (tz(0, name="Z"), "+00:00"),  # a named zero offset is an offset (as the reference)
        (tz(5, 30), "+05:30"),
        (tz(-7), "-07:00"),
        (tz(-23, -59), "-23:59"),
        (ZoneInfo("UTC"), "UTC"),
        (ZoneInfo("Etc/UTC"), "Etc/UTC"),
        (DENVER, "America/Denver"),
        (_FixedTwo(), "+02:00"),
        (_NoOffset(), "zoneless"),
    ],
)
def test_infer(zone: tzinfo | None, expected: str) -> None:
    assert infer_time_reference(datetime(2024, 1, 1, tzinfo=zone)) == expected


def test_infer_keyless_zoneinfo_uses_the_offset_at_the_instant() -> None:
    with open(zone_path("Europe/Paris"), "rb") as fh:
        paris = ZoneInfo.from_file(fh)
    assert infer_time_reference(datetime(2024, 1, 1, tzinfo=paris)) == "+01:00"
    assert infer_time_reference(datetime(2024, 7, 1, tzinfo=paris)) == "+02:00"


def zone_path(name: str) -> str:
    import importlib.resources

    return str(importlib.resources.files("tzdata").joinpath("zoneinfo", *name.split("/")))


@pytest.mark.parametrize(
    "offset", [timedelta(seconds=30), timedelta(hours=1, seconds=1), timedelta(microseconds=1)]
)
def test_infer_refuses_sub_minute_offsets(offset: timedelta) -> None:
    with pytest.raises(InvalidParameterError, match="not a whole number of minutes"):
        infer_time_reference(datetime(2024, 1, 1, tzinfo=timezone(offset)))


def test_resolve() -> None:
    aware = datetime(2024, 1, 1, tzinfo=tz(5, 30))
    assert resolve_time_reference(aware, None) == "+05:30"
    assert resolve_time_reference(aware, "-0700") == "-07:00"  # explicit wins
    assert resolve_time_reference(datetime(2024, 1, 1), "utc") == "utc"
    assert resolve_time_reference(None, "America/Denver") == "America/Denver"
    assert resolve_time_reference(None, None) is None
    with pytest.raises(InvalidParameterError):
        resolve_time_reference(aware, "1a/b")


# ---------------------------------------------------------------------------------------
# kind, slug, period checks
# ---------------------------------------------------------------------------------------

KINDS_AND_SLUGS = [
    (None, "unspecified", "unspecified"),
    ("utc", "utc", "utc"),
    ("zoneless", "zoneless", "zoneless"),
    ("-07:00", "offset", "offset_minus07_00"),
    ("+05:30", "offset", "offset_plus05_30"),
    ("+00:00", "offset", "offset_plus00_00"),
    ("+0530", "offset", "offset_plus05_30"),
    ("America/Denver", "zone", "America_Denver"),
    ("Etc/GMT+1", "zone", "Etc_GMT_1"),
    ("Etc/GMT-1", "zone", "Etc_GMT_1"),  # collisions are the caller's to resolve
    ("America/Argentina/Buenos_Aires", "zone", "America_Argentina_Buenos_Aires"),
    ("A-b", "zone", "A_b"),
    ("UTC", "zone", "UTC"),
    ("Utc", "zone", "Utc"),
    ("Z", "zone", "Z"),
    ("unspecified", "zone", "unspecified"),
    ("Zoneless", "zone", "Zoneless"),
    ("CON", "zone", "x_CON"),
    ("Con", "zone", "x_Con"),
    ("nul", "zone", "x_nul"),
    ("AUX", "zone", "x_AUX"),
    ("prn", "zone", "x_prn"),
    ("COM1", "zone", "x_COM1"),
    ("COM9", "zone", "x_COM9"),
    ("lpt9", "zone", "x_lpt9"),
    ("com0", "zone", "com0"),
    ("LPT10", "zone", "LPT10"),
    ("CONx", "zone", "CONx"),
    ("CON_", "zone", "CON_"),
    ("x_CON", "zone", "x_CON"),
    ("Europe/CON", "zone", "Europe_CON"),
    ("Nul/x", "zone", "Nul_x"),
]


@pytest.mark.parametrize(("reference", "kind", "slug"), KINDS_AND_SLUGS)
def test_kind_and_slug(reference: str | None, kind: str, slug: str) -> None:
    assert reference_kind(reference) == kind
    assert reference_slug(reference) == slug


def test_kind_refuses_garbage() -> None:
    with pytest.raises(InvalidParameterError):
        reference_kind("Foo.Bar")


@pytest.mark.parametrize(
    ("period", "reference", "refused"),
    [
        ("P1D", "America/Denver", True),
        ("PT24H", "Europe/Paris", True),
        ("P7D", "Asia/Tokyo", True),
        ("P1DT1H", "Asia/Tokyo", True),
        ("P1M", "America/Denver", True),
        ("P0M", "America/Denver", True),
        ("P1D", "UTC", True),  # 'UTC' is a zone, not the utc literal
        ("P1D", "Etc/GMT+7", True),
        ("P1M", "nonsense", True),  # existence is not what matters
        ("PT23H59M59.999S", "America/Denver", False),
        ("PT1H", "America/Denver", False),
        ("P1D", "utc", False),
        ("P1M", "utc", False),
        ("P1D", "+05:30", False),
        ("P1M", "-07:00", False),
        ("PT24H", "zoneless", False),
        ("P1Y", None, False),
    ],
)
def test_check_period_for_reference(period: str, reference: str | None, refused: bool) -> None:
    p = Period.parse(period)
    if refused:
        with pytest.raises(
            InvalidParameterError, match=f"a {p} resolution cannot be combined"
        ) as info:
            check_period_for_reference(p, reference, what="resolution")
        assert "24 hours" in str(info.value)
        assert "NonSequentialTimeSeries" in str(info.value)
    else:
        check_period_for_reference(p, reference, what="resolution")


def test_check_period_names_what() -> None:
    with pytest.raises(InvalidParameterError, match="a P1D interval cannot"):
        check_period_for_reference(Period.parse("P1D"), "Europe/Paris", what="interval")


# ---------------------------------------------------------------------------------------
# datetime → ms
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dt", "expected"),
    [
        (datetime(2024, 1, 1, tzinfo=UTC), JAN1),
        (datetime(2024, 1, 1), JAN1),  # naive: wall clock read as UTC
        (datetime(2024, 1, 1, 5, 30, tzinfo=tz(5, 30)), JAN1),
        (datetime(2023, 12, 31, 17, tzinfo=DENVER), JAN1),
        (datetime(2024, 1, 1, 0, 0, 0, 500_000), JAN1 + 500),
        (datetime(1960, 1, 1, tzinfo=UTC), -315_619_200_000),
        (datetime(1969, 12, 31, 23, 59, 59, 999_000), -1),
        (datetime(1, 1, 1), MIN_MS),
        (datetime(9999, 12, 31, 23, 59, 59, 999_000), MAX_MS),
        (np.datetime64("2024-01-01T00:00:00", "s"), JAN1),
        (np.datetime64("2024-01-01T00:00:00.500000000", "ns"), JAN1 + 500),
        (np.datetime64("2024-01", "M"), JAN1),
        (np.datetime64("1960-01-01", "D"), -315_619_200_000),
    ],
)
def test_datetime_to_ms(dt: datetime | np.datetime64, expected: int) -> None:
    assert datetime_to_ms(dt) == expected


def test_datetime_to_ms_dst_fold() -> None:
    # 2024-11-03 01:30 happens twice in Denver; fold picks which.
    first = datetime(2024, 11, 3, 1, 30, tzinfo=DENVER)
    second = first.replace(fold=1)
    assert datetime_to_ms(second) - datetime_to_ms(first) == 3_600_000


@pytest.mark.parametrize(
    "dt",
    [
        datetime(2024, 1, 1, 0, 0, 0, 1500, tzinfo=UTC),
        datetime(2024, 1, 1, 0, 0, 0, 1),
        np.datetime64("2024-01-01T00:00:00.000000001", "ns"),
        np.datetime64("2024-01-01T00:00:00.0015", "us"),
    ],
)
def test_datetime_to_ms_refuses_sub_ms(dt: datetime | np.datetime64) -> None:
    with pytest.raises(
        InvalidParameterError,
        match="finer than a millisecond; the store records instants to the millisecond",
    ):
        datetime_to_ms(dt)


def test_datetime_to_ms_names_what_and_refuses_bad_values() -> None:
    with pytest.raises(
        InvalidParameterError, match=r"^initial_timestamp 2024-01-01 00:00:00\.000001"
    ):
        datetime_to_ms(datetime(2024, 1, 1, 0, 0, 0, 1))
    with pytest.raises(InvalidParameterError, match=r"^start "):
        datetime_to_ms(datetime(2024, 1, 1, 0, 0, 0, 1), what="start")
    with pytest.raises(InvalidParameterError, match="expected a datetime, got date"):
        datetime_to_ms(datetime(2024, 1, 1).date())  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="expected a datetime, got int"):
        datetime_to_ms(JAN1)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="NaT"):
        datetime_to_ms(np.datetime64("NaT", "s"))
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        datetime_to_ms(datetime(9999, 12, 31, 23, 59, tzinfo=tz(-5)))  # year 10000 in UTC
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        datetime_to_ms(datetime(1, 1, 1, tzinfo=tz(1)))
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        datetime_to_ms(np.datetime64("10000-01-01", "D"))


def test_datetimes_to_ms() -> None:
    values = [
        datetime(2024, 1, 1),
        datetime(2024, 1, 1, 1, tzinfo=UTC),
        np.datetime64("2024-01-01T02:00", "m"),
    ]
    out = datetimes_to_ms(values)
    assert out.dtype == np.int64
    assert out.tolist() == [JAN1, JAN1 + 3_600_000, JAN1 + 7_200_000]
    assert datetimes_to_ms([]).shape == (0,)
    assert datetimes_to_ms(tuple(values[:1])).tolist() == [JAN1]
    objects = np.array(values[:2], dtype=object)
    assert datetimes_to_ms(objects).tolist() == [JAN1, JAN1 + 3_600_000]


def test_datetimes_to_ms_vectorized_numpy() -> None:
    arr = np.arange(
        np.datetime64("2024-01-01T00:00:00", "ns"),
        np.datetime64("2024-01-02", "ns"),
        np.timedelta64(15, "m"),
    )
    out = datetimes_to_ms(arr)
    assert out.tolist() == [JAN1 + k * 900_000 for k in range(96)]
    assert datetimes_to_ms(np.array([], dtype="datetime64[ns]")).shape == (0,)
    assert datetimes_to_ms(np.array([], dtype="datetime64")).shape == (0,)


@pytest.mark.parametrize("value", ["2024-01-01", 5, None, 1.5])
def test_a_non_datetime_is_refused_in_the_references_words(value: object) -> None:
    # Callers written against the reference match "expected a datetime".
    kind = type(value).__name__
    with pytest.raises(InvalidParameterError, match=f"^start: expected a datetime, got {kind} "):
        datetime_to_ms(value, what="start")  # type: ignore[arg-type]
    with pytest.raises(
        InvalidParameterError, match=f"^timestamp 1: expected a datetime, got {kind}"
    ):
        datetimes_to_ms([datetime(2024, 1, 1), value])  # type: ignore[list-item]


@pytest.mark.filterwarnings("default")
def test_an_unknown_zone_warns_where_it_is_named_and_rendered() -> None:
    # The reference warns too; callers filter on "time_reference names the IANA zone".
    words = 'time_reference names the IANA zone "Mars/Olympus"'
    with pytest.warns(UserWarning, match=words):
        assert normalize_time_reference("Mars/Olympus") == "Mars/Olympus"
    with pytest.warns(UserWarning, match=words):
        assert ms_to_datetime(0, "Mars/Olympus") == datetime(1970, 1, 1, tzinfo=UTC)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a known zone, an offset, utc: silent
        for known in ("America/Denver", "+05:30", "utc", "zoneless", None):
            normalize_time_reference(known)
            ms_to_datetime(0, known)
        assert reference_kind("Mars/Olympus") == "zone"  # classifying is not rendering


def test_datetimes_to_ms_errors_name_the_position() -> None:
    with pytest.raises(InvalidParameterError, match=r"^timestamp 1 .* finer than a millisecond"):
        datetimes_to_ms([datetime(2024, 1, 1), datetime(2024, 1, 1, 0, 0, 0, 1)])
    with pytest.raises(InvalidParameterError, match=r"^timestamp 2 .* finer than a millisecond"):
        datetimes_to_ms(
            np.array(
                ["2024-01-01", "2024-01-01", "2024-01-01T00:00:00.0000001"], dtype="datetime64[ns]"
            )
        )
    with pytest.raises(InvalidParameterError, match=r"^ts\[1\] is NaT"):
        datetimes_to_ms(np.array(["2024-01-01", "NaT"], dtype="datetime64[s]"), what="ts")
    with pytest.raises(InvalidParameterError, match=r"outside the range of 64-bit milliseconds"):
        datetimes_to_ms(np.array([10**17], dtype="datetime64[s]"))
    with pytest.raises(InvalidParameterError, match="one-dimensional"):
        datetimes_to_ms(np.zeros((2, 2), dtype="datetime64[s]"))
    with pytest.raises(InvalidParameterError, match="without a unit"):
        datetimes_to_ms(np.array(["NaT"], dtype="datetime64"))


# ---------------------------------------------------------------------------------------
# ms → datetime
# ---------------------------------------------------------------------------------------


def test_ms_to_datetime_by_kind() -> None:
    assert ms_to_datetime(JAN1, "zoneless") == datetime(2024, 1, 1)
    assert ms_to_datetime(JAN1, "zoneless").tzinfo is None
    for ref in ("utc", None, "nonsense", "unspecified"):
        got = ms_to_datetime(JAN1, ref)
        assert got == datetime(2024, 1, 1, tzinfo=UTC)
        assert got.tzinfo is UTC
    got = ms_to_datetime(JAN1, "+05:30")
    assert got.replace(tzinfo=None) == datetime(2024, 1, 1, 5, 30)
    assert got.utcoffset() == timedelta(hours=5, minutes=30)
    assert ms_to_datetime(JAN1, "+00:00").tzinfo is UTC  # as the reference renders it
    got = ms_to_datetime(JAN1, "America/Denver")
    assert got.tzinfo == DENVER
    assert got.replace(tzinfo=None) == datetime(2023, 12, 31, 17)
    assert ms_to_datetime(JAN1, "-0700").utcoffset() == timedelta(hours=-7)


def test_ms_to_datetime_range() -> None:
    assert ms_to_datetime(MIN_MS, "utc") == datetime(1, 1, 1, tzinfo=UTC)
    assert ms_to_datetime(MAX_MS, "zoneless") == datetime(9999, 12, 31, 23, 59, 59, 999_000)
    assert ms_to_datetime(np.int64(-1), "utc") == datetime(
        1969, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC
    )
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        ms_to_datetime(MAX_MS + 1, "utc")
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        ms_to_datetime(MIN_MS - 1, "zoneless")
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        ms_to_datetime(MAX_MS, "+05:00")
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        ms_to_datetime(MIN_MS, "America/Denver")


@pytest.mark.parametrize(
    "ref",
    [
        None,
        "utc",
        "zoneless",
        "+05:30",
        "-07:00",
        "+00:00",
        "America/Denver",
        "Europe/Paris",
        "nonsense",
    ],
)
def test_ms_to_datetimes_matches_scalar(ref: str | None) -> None:
    values = np.array([JAN1, JAN1 + 1, -315_619_200_000, 1_710_054_000_000, 1_710_061_200_000])
    listed = ms_to_datetimes(values, ref)
    scalars = [ms_to_datetime(int(v), ref) for v in values]
    assert listed == scalars
    assert [d.tzinfo for d in listed] == [d.tzinfo for d in scalars]
    assert [d.utcoffset() for d in listed] == [d.utcoffset() for d in scalars]
    assert ms_to_datetimes(np.array([], dtype=np.int64), ref) == []


def test_ms_to_datetimes_range() -> None:
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        ms_to_datetimes([0, MAX_MS + 1], "utc")
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        ms_to_datetimes([MAX_MS], "+01:00")
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        ms_to_datetimes([MAX_MS], "Asia/Tokyo")


def test_zone_info() -> None:
    assert zone_info("America/Denver") == DENVER
    assert zone_info("nonsense") is None
    assert zone_info("America") is None  # a directory, not a zone


# ---------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "rfc", "axis"),
    [
        (JAN1, "2024-01-01T00:00:00+00:00", "2024-01-01T00:00:00Z"),
        (JAN1 + 500, "2024-01-01T00:00:00.500+00:00", "2024-01-01T00:00:00.500Z"),
        (JAN1 + 1, "2024-01-01T00:00:00.001+00:00", "2024-01-01T00:00:00.001Z"),
        (-315_619_200_000, "1960-01-01T00:00:00+00:00", "1960-01-01T00:00:00Z"),
        (-1, "1969-12-31T23:59:59.999+00:00", "1969-12-31T23:59:59.999Z"),
        (MIN_MS, "0001-01-01T00:00:00+00:00", "0001-01-01T00:00:00Z"),
        (MAX_MS, "9999-12-31T23:59:59.999+00:00", "9999-12-31T23:59:59.999Z"),
    ],
)
def test_text_forms(ms: int, rfc: str, axis: str) -> None:
    assert ms_to_rfc3339(ms) == rfc
    assert ms_to_axis_instant(ms) == axis
    assert rfc3339_to_ms(rfc) == ms
    assert rfc3339_to_ms(axis) == ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2024-01-01T05:30:00+05:30", JAN1),
        ("2023-12-31T17:00:00-07:00", JAN1),
        ("2024-01-01t00:00:00z", JAN1),
        ("2024-01-01 00:00:00Z", JAN1),
        ("2024-01-01T00:00:00.5Z", JAN1 + 500),
        ("2024-01-01T00:00:00.500000000Z", JAN1 + 500),
        ("2024-01-01T00:00:00-00:00", JAN1),
    ],
)
def test_rfc3339_to_ms_general(text: str, ms: int) -> None:
    assert rfc3339_to_ms(text) == ms


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("2024-01-01T00:00:00", "not an RFC 3339 timestamp"),
        ("2024-01-01", "not an RFC 3339 timestamp"),
        ("2024-01-01T00:00:00+0530", "not an RFC 3339 timestamp"),
        ("1704067200000", "not an RFC 3339 timestamp"),
        ("", "not an RFC 3339 timestamp"),
        ("2024-02-30T00:00:00Z", "not a real date"),
        ("2024-01-01T24:00:00Z", "not a real date"),
        ("2024-01-01T23:59:60Z", "not a real date"),
        ("2024-01-01T00:00:00.0001Z", "finer than a millisecond"),
        ("2024-01-01T00:00:00+24:00", "out-of-range UTC offset"),
        ("0001-01-01T00:00:00+01:00", "1..9999"),
    ],
)
def test_rfc3339_to_ms_refusals(text: str, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        rfc3339_to_ms(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-01T00:00:00Z", (JAN1, "utc")),
        ("2024-01-01T00:00:00+00:00", (JAN1, "utc")),
        ("2024-01-01T00:00:00-00:00", (JAN1, "utc")),
        ("2024-01-01T05:30:00+05:30", (JAN1, "+05:30")),
        ("2024-01-01T05:30:00+0530", (JAN1, "+05:30")),
        ("2023-12-31T17:00:00-07", (JAN1, "-07:00")),
        ("2024-01-01T00:00:00", (JAN1, "zoneless")),
        ("2024-01-01T00:00", (JAN1, "zoneless")),
        ("2024-01-01 00:00:00.250", (JAN1 + 250, "zoneless")),
        ("2024-01-01", (JAN1, "zoneless")),
        ("  2024-01-01T00:00:00Z  ", (JAN1, "utc")),
        ("1704067200000", (JAN1, "utc")),
        ("-315619200000", (-315_619_200_000, "utc")),
        ("+0", (0, "utc")),
    ],
)
def test_parse_instant(text: str, expected: tuple[int, str]) -> None:
    assert parse_instant(text) == expected


@pytest.mark.parametrize(
    "text",
    ["yesterday", "", "2024/01/01", "1.5", "2024-01-01T00", "0x10", "2024-01-01T00:00:00 UTC"],
)
def test_parse_instant_garbage_lists_the_accepted_spellings(text: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        parse_instant(text, what="--initial-timestamp")
    message = str(info.value)
    assert message.startswith(f"--initial-timestamp {text!r} is not a recognised instant")
    assert "RFC 3339" in message and "milliseconds since the Unix epoch" in message


def test_parse_instant_other_refusals() -> None:
    with pytest.raises(InvalidParameterError, match="finer than a millisecond"):
        parse_instant("2024-01-01T00:00:00.0001Z")
    with pytest.raises(InvalidParameterError, match="not a real date"):
        parse_instant("2024-13-01T00:00:00Z")
    with pytest.raises(InvalidParameterError, match="out-of-range UTC offset"):
        parse_instant("2024-01-01T00:00:00+25:00")
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        parse_instant(str(MAX_MS + 1))
    with pytest.raises(InvalidParameterError, match="must be text"):
        parse_instant(5)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------

instants = st.integers(MIN_MS, MAX_MS)


@given(instants)
def test_rfc3339_round_trip(ms: int) -> None:
    text = ms_to_rfc3339(ms)
    assert rfc3339_to_ms(text) == ms
    assert parse_instant(text) == (ms, "utc")
    assert parse_instant(ms_to_axis_instant(ms)) == (ms, "utc")
    assert text == datetime_to_iso(ms)


def datetime_to_iso(ms: int) -> str:
    """An independent rendering through datetime.isoformat."""
    dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return dt.isoformat(timespec="milliseconds" if dt.microsecond else "seconds")


@given(
    instants,
    st.sampled_from(
        [
            None,
            "utc",
            "zoneless",
            "+05:30",
            "-07:00",
            "+00:00",
            "America/Denver",
            "Australia/Lord_Howe",
        ]
    ),
)
def test_datetime_round_trip(ms: int, ref: str | None) -> None:
    try:
        dt = ms_to_datetime(ms, ref)
    except InvalidParameterError:
        return  # the local time falls outside the years 1..9999
    assert datetime_to_ms(dt) == ms
    assert datetimes_to_ms(np.array([ms], dtype="datetime64[ms]")).tolist() == [ms]


@given(st.lists(instants, max_size=20))
def test_vectorized_matches_scalar(values: list[int]) -> None:
    arr = np.array(values, dtype="datetime64[ms]")
    assert datetimes_to_ms(arr).tolist() == values
    assert datetimes_to_ms(ms_to_datetimes(values, "utc")).tolist() == values


def test_datetime64_scalar_errors_have_no_index() -> None:
    with pytest.raises(InvalidParameterError, match=r"^initial_timestamp is NaT"):
        datetime_to_ms(np.datetime64("NaT", "ms"))
    with pytest.raises(InvalidParameterError, match=r"^start 2024-01-01T00:00:00\.000000001"):
        datetime_to_ms(np.datetime64("2024-01-01T00:00:00.000000001", "ns"), what="start")


@pytest.mark.parametrize(
    ("value", "floor", "ceil"),
    [
        (datetime(2024, 1, 1, 0, 0, 0, 1500, tzinfo=UTC), JAN1 + 1, JAN1 + 2),
        (datetime(2024, 1, 1, 0, 0, 0, 2000, tzinfo=UTC), JAN1 + 2, JAN1 + 2),
        (datetime(1969, 12, 31, 23, 59, 59, 999_999), -1, 0),
        (np.datetime64("1969-12-31T23:59:59.999999", "us"), -1, 0),
        (np.datetime64("2024-01-01T00:00:00.000000001", "ns"), JAN1, JAN1 + 1),
        (np.datetime64("2024-01-01T00:00:00.001", "ns"), JAN1 + 1, JAN1 + 1),
    ],
)
def test_datetime_to_ms_rounding_for_query_bounds(
    value: datetime | np.datetime64, floor: int, ceil: int
) -> None:
    assert datetime_to_ms(value, rounding="floor") == floor
    assert datetime_to_ms(value, rounding="ceil") == ceil
    if floor != ceil:
        with pytest.raises(InvalidParameterError, match="finer than a millisecond"):
            datetime_to_ms(value)


@pytest.mark.parametrize("value", [5, ["utc"], b"utc"])
def test_non_string_references_are_refused(value: object) -> None:
    with pytest.raises(InvalidParameterError, match="string or None"):
        normalize_time_reference(value)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="string or None"):
        reference_kind(value)  # type: ignore[arg-type]
