"""Tests for infrastore_sqlite.periods: grammar, canonical spelling, calendar grids."""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from infrastore_sqlite.core.periods import (
    DAY_MS,
    Period,
    as_period,
    divide,
    grid,
    grid_index,
    step,
)
from infrastore_sqlite.errors import InvalidParameterError

HOUR = 3_600_000
MINUTE = 60_000
I64_MAX = 2**63 - 1
MIN_MS = (
    int((datetime(1, 1, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()) * 1000
)
MAX_MS = (
    int((datetime(9999, 12, 31, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds())
    * 1000
    + DAY_MS
    - 1
)


def ms(dt: datetime) -> int:
    """UTC ms of a naive-as-UTC or aware datetime, computed independently of timeref."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def utc(msec: int) -> datetime:
    return datetime(1970, 1, 1) + timedelta(milliseconds=msec)


def naive_month_step(anchor: int, months: int, k: int) -> int:
    """Independent model of the calendar rule, via datetime and calendar.monthrange."""
    a = utc(anchor)
    index = a.year * 12 + a.month - 1 + k * months
    year, month0 = divmod(index, 12)
    day = min(a.day, calendar.monthrange(year, month0 + 1)[1])
    return ms(a.replace(year=year, month=month0 + 1, day=day))


# ---------------------------------------------------------------------------------------
# Parsing and canonical spelling
# ---------------------------------------------------------------------------------------

CANONICAL = [
    # from reference-model §5 and peer-contract §9
    ("PT60M", "PT1H"),
    ("PT3600S", "PT1H"),
    ("PT24H", "P1D"),
    ("PT86400S", "P1D"),
    ("P1W", "P7D"),
    ("P2W", "P14D"),
    ("PT90M", "PT1H30M"),
    ("PT36H", "P1DT12H"),
    ("P1DT0H", "P1D"),
    ("P0D", "PT0S"),
    ("PT1.5S", "PT1.5S"),
    ("PT0.5S", "PT0.5S"),
    ("PT0.001S", "PT0.001S"),
    ("-PT1H", "-PT1H"),
    ("P0Y", "P0M"),
    ("P1Y6M", "P18M"),
    ("P12M", "P1Y"),
    ("P1Y2M", "P14M"),
    ("P24M", "P2Y"),
    ("P1M", "P1M"),
    ("P1Y", "P1Y"),
    # unit letters are case-insensitive, P and T are not
    ("PT1h", "PT1H"),
    ("P1d", "P1D"),
    ("P1y", "P1Y"),
    ("P1m", "P1M"),
    ("PT1m", "PT1M"),
    ("PT1s", "PT1S"),
    # whitespace, repeats and order
    (" PT1H ", "PT1H"),
    ("\tPT1H\n", "PT1H"),
    ("\u00a0PT1H", "PT1H"),
    ("PT1H1H", "PT2H"),
    ("P1D1D", "P2D"),
    ("P1M1Y", "P13M"),
    ("PT1S1H", "PT1H1S"),
    ("P1D1W", "P8D"),
    ("PT0.5S0.5S", "PT1S"),
    ("PT1M60S", "PT2M"),
    # empty time part after a date part
    ("P1DT", "P1D"),
    ("P1YT", "P1Y"),
    ("P1WT", "P7D"),
    # zeros and leading zeros
    ("PT0S", "PT0S"),
    ("PT0H", "PT0S"),
    ("P0W", "PT0S"),
    ("P00D", "PT0S"),
    ("PT00001H", "PT1H"),
    ("PT1.000S", "PT1S"),
    ("PT1.10S", "PT1.1S"),
    ("-PT0S", "PT0S"),
    ("-P0M", "P0M"),
    ("-P1M", "-P1M"),
    ("-P12M", "-P1Y"),
    ("P1DT1H1M1.001S", "P1DT1H1M1.001S"),
    ("PT100000H", "P4166DT16H"),
    # the edges of the integer ranges
    ("P2147483647M", "P2147483647M"),
    ("-P2147483648M", "-P2147483648M"),
    ("P178956970Y", "P178956970Y"),
    ("PT9223372036854775.807S", "P106751991167DT7H12M55.807S"),
    ("-PT9223372036854775.807S", "-P106751991167DT7H12M55.807S"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_parse_canonical_spelling(text: str, canonical: str) -> None:
    period = Period.parse(text)
    assert str(period) == canonical
    assert Period.parse(canonical) == period


REJECTED = [
    "pt1h",  # lowercase P/T
    "p1D",
    "Pt1H",
    "PT1,5S",  # comma decimal
    "PT0.0005S",  # finer than a millisecond
    "PT1.1234S",
    "P1.5D",  # fractions only on seconds
    "PT1.5H",
    "PT1.0H",
    "P0.5Y",
    "PT1.S",
    "PT.5S",
    "P1.0S",
    "P",
    "PT",
    "-P",
    "-",
    "",
    " ",
    "P1",
    "PT1",
    "P1H",  # time unit in the date part
    "PT1D",  # date unit in the time part
    "P1S",
    "P-1D",
    "P+1D",
    "+PT1H",
    "--PT1H",
    "- PT1H",
    "P 1D",
    "P1D T1H",
    "P1DTT1H",
    "P1DT1HT1M",
    "PT1H-",
    "P1T1H",
    "PT1_0H",
    "PT1e3S",
    "P１D",  # full-width digit
    "1h",
    "1 hour",
    "foo",
    "P99999999999999999999D",  # overflow
    "P9999999999999D",
    "PT9223372036854775807S",
    "PT9223372036854775.808S",
    "-PT9223372036854775.808S",
    "P106751991167DT7H12M56S",
    "P2147483648M",
    "P178956971Y",
    "-P178956971Y",
    "\x1cPT1H",  # Python strips U+001C, Rust's trim does not
]


@pytest.mark.parametrize("text", REJECTED)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(InvalidParameterError, match="invalid ISO-8601 period"):
        Period.parse(text)


@pytest.mark.parametrize("text", ["P1M1D", "P1YT1H", "P1YT0S", "P0M0D", "P0D0M", "P1M0D", "P1W1M"])
def test_parse_rejects_mixed_kinds(text: str) -> None:
    with pytest.raises(InvalidParameterError, match="mixes calendar"):
        Period.parse(text)


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [
        ("1h", "'PT1H'"),
        ("1 hour", "'PT1H'"),
        ("15min", "'PT15M'"),
        ("90 minutes", "'PT1H30M'"),
        ("2 weeks", "'P14D'"),
        ("1.5 days", "'P1DT12H'"),
        ("1mo", "'P1M'"),
        ("1y", "'P1Y'"),
        ("1m", "'PT1M' (minutes) or 'P1M' (months)"),
        ("pt1h", "'PT1H'"),
        ("PT1,5S", "'PT1.5S'"),
        ("P1.5D", "'P1DT12H'"),
        ("PT1.5H", "'PT1H30M'"),
        ("P1H", "'PT1H'"),
        ("PT1D", "'P1D'"),
        ("T1H", "'PT1H'"),
        ("500ms", "'PT0.5S'"),
    ],
)
def test_parse_error_suggests_a_spelling(text: str, suggestion: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        Period.parse(text)
    assert f"did you mean {suggestion}?" in str(info.value)
    assert info.value.hint is not None and suggestion in info.value.hint


@pytest.mark.parametrize("text", ["foo", "P2147483648M", "PT0.0005S", "", "1.0005s"])
def test_parse_error_without_a_good_guess_has_no_suggestion(text: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        Period.parse(text)
    assert "did you mean" not in str(info.value)
    assert "PT1H" in str(info.value)  # the accepted forms are shown instead


def test_parse_error_messages_say_what_is_wrong() -> None:
    with pytest.raises(InvalidParameterError, match="at most three decimals"):
        Period.parse("PT0.0005S")
    with pytest.raises(InvalidParameterError, match="only seconds may carry a fraction"):
        Period.parse("PT1.5H")
    with pytest.raises(InvalidParameterError, match="too long"):
        Period.parse("P2147483648M")


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(InvalidParameterError, match="not int"):
        Period.parse(3600)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# The value type
# ---------------------------------------------------------------------------------------


def test_kinds_are_distinct() -> None:
    assert Period.parse("P0M") != Period.parse("PT0S")
    assert Period.parse("P0M") == Period(calendar=True)
    assert Period.parse("PT0S") == Period()
    assert Period.parse("P1M") == Period(months=1) == Period(months=1, calendar=True)
    assert Period(months=1).calendar is True
    assert Period.of_months(0) == Period(calendar=True)
    assert Period.of_ms(HOUR) == Period.parse("PT1H")
    assert hash(Period.parse("PT60M")) == hash(Period.parse("PT1H"))
    assert len({Period.parse("P0M"), Period.parse("PT0S"), Period.parse("P0Y")}) == 2


def test_invalid_construction() -> None:
    with pytest.raises(InvalidParameterError, match="not both"):
        Period(months=1, ms=1)
    with pytest.raises(InvalidParameterError, match="not both"):
        Period(ms=5, calendar=True)
    with pytest.raises(InvalidParameterError, match="out of range"):
        Period(months=2**31)
    with pytest.raises(InvalidParameterError, match="out of range"):
        Period(ms=2**63)


def test_frozen() -> None:
    p = Period.parse("PT1H")
    with pytest.raises(AttributeError):
        p.ms = 5  # type: ignore[misc]


def test_repr() -> None:
    assert repr(Period.parse("PT90M")) == "Period('PT1H30M')"


@pytest.mark.parametrize(
    ("period", "positive", "zero"),
    [
        ("PT1H", True, False),
        ("PT0.001S", True, False),
        ("P1M", True, False),
        ("PT0S", False, True),
        ("P0M", False, True),
        ("-PT1H", False, False),
        ("-P1M", False, False),
    ],
)
def test_predicates(period: str, positive: bool, zero: bool) -> None:
    p = Period.parse(period)
    assert p.is_positive is positive
    assert p.is_zero is zero


@pytest.mark.parametrize(
    ("td", "canonical"),
    [
        (timedelta(hours=1), "PT1H"),
        (timedelta(days=1, hours=1), "P1DT1H"),
        (timedelta(seconds=0.25), "PT0.25S"),
        (timedelta(microseconds=1500), "PT0.001S"),  # truncated, not rounded
        (timedelta(microseconds=999), "PT0S"),
        (timedelta(microseconds=-1500), "-PT0.001S"),  # toward zero
        (timedelta(microseconds=-1), "PT0S"),
        (timedelta(days=-1), "-P1D"),
        (timedelta(0), "PT0S"),
        (timedelta.max, "P999999999DT23H59M59.999S"),
        (timedelta.min, "-P999999999D"),
    ],
)
def test_from_timedelta(td: timedelta, canonical: str) -> None:
    assert str(Period.from_timedelta(td)) == canonical


@pytest.mark.parametrize(
    ("td", "shown"),
    [
        (timedelta(microseconds=1500), "PT0.001S"),
        (timedelta(microseconds=1), "PT0S"),
        (timedelta(hours=1, microseconds=5), "PT1H"),
        (timedelta(microseconds=-1500), "-PT0.001S"),
    ],
)
def test_an_exact_period_refuses_a_sub_millisecond_part(td: timedelta, shown: str) -> None:
    # A series stored on a truncated step would put every value at the wrong instant.
    message = f"resolution {shown} ({td} given) is not a positive whole number of milliseconds"
    with pytest.raises(InvalidParameterError, match=re.escape(message)):
        as_period(td, what="resolution", exact=True)
    assert str(as_period(td)) == shown  # filters and queries still truncate
    assert str(as_period(timedelta(milliseconds=1500), exact=True)) == "PT1.5S"
    assert as_period("PT0.001S", exact=True) == Period(ms=1)


def test_to_timedelta() -> None:
    assert Period.parse("P1DT1H").to_timedelta() == timedelta(days=1, hours=1)
    assert Period.parse("-PT0.5S").to_timedelta() == timedelta(milliseconds=-500)
    with pytest.raises(InvalidParameterError, match="no fixed length"):
        Period.parse("P1M").to_timedelta()
    with pytest.raises(InvalidParameterError, match="too long"):
        Period(ms=I64_MAX).to_timedelta()


def test_as_period_accepts_three_forms() -> None:
    p = Period.parse("PT1H")
    assert as_period("PT1H") == p
    assert as_period(timedelta(hours=1)) == p
    assert as_period(p) is p


def test_as_period_names_what() -> None:
    with pytest.raises(InvalidParameterError) as info:
        as_period("1 hour")
    assert str(info.value).startswith("resolution: invalid ISO-8601 period '1 hour'")
    assert "did you mean 'PT1H'?" in str(info.value)
    with pytest.raises(InvalidParameterError, match=r"^horizon: ISO-8601 period 'P1M1D' mixes"):
        as_period("P1M1D", what="horizon")
    with pytest.raises(InvalidParameterError, match=r"^interval: expected an ISO-8601 .* not int"):
        as_period(3600, what="interval")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="not NoneType"):
        as_period(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# Stepping
# ---------------------------------------------------------------------------------------


def test_fixed_step_and_grid() -> None:
    p = Period.parse("PT1H")
    a = ms(datetime(2024, 1, 1))
    assert step(a, p, 0) == a
    assert step(a, p, 3) == a + 3 * HOUR
    assert step(a, p, -2) == a - 2 * HOUR
    g = grid(a, p, 4)
    assert g.dtype == np.int64
    assert g.tolist() == [a + k * HOUR for k in range(4)]
    assert grid(a, p, 0).shape == (0,)


def test_month_end_clamping_is_not_cumulative() -> None:
    a = ms(datetime(2024, 1, 31))
    expected = [datetime(2024, 1, 31), datetime(2024, 2, 29), datetime(2024, 3, 31)]
    expected += [datetime(2024, 4, 30), datetime(2024, 5, 31)]
    assert grid(a, Period.parse("P1M"), 5).tolist() == [ms(d) for d in expected]
    assert [step(a, Period.parse("P1M"), k) for k in range(5)] == [ms(d) for d in expected]


def test_feb_29_plus_one_year() -> None:
    a = ms(datetime(2024, 2, 29, 12))
    expected = [datetime(2024, 2, 29, 12), datetime(2025, 2, 28, 12), datetime(2026, 2, 28, 12)]
    expected.append(datetime(2027, 2, 28, 12))
    expected.append(datetime(2028, 2, 29, 12))  # back on the 29th: never cumulative
    assert grid(a, Period.parse("P1Y"), 5).tolist() == [ms(d) for d in expected]


def test_calendar_steps_on_the_utc_calendar_for_offsets() -> None:
    # +05:30 wall 2024-01-31 00:00 is 2024-01-30T18:30Z, which steps to 02-29T18:30Z,
    # i.e. 2024-03-01 00:00 local — the peer's observed behaviour.
    from datetime import timezone

    tz = timezone(timedelta(hours=5, minutes=30))
    a = ms(datetime(2024, 1, 31, tzinfo=tz))
    g = grid(a, Period.parse("P1M"), 3)
    local = [utc(int(v)).replace(tzinfo=UTC).astimezone(tz).replace(tzinfo=None) for v in g]
    assert local == [datetime(2024, 1, 31), datetime(2024, 3, 1), datetime(2024, 3, 31)]
    # -07:00 wall 01-30 20:00 is 01-31T03:00Z, which steps to 02-29T03:00Z
    tz7 = timezone(timedelta(hours=-7))
    b = ms(datetime(2024, 1, 30, 20, tzinfo=tz7))
    assert step(b, Period.parse("P1M"), 1) == ms(datetime(2024, 2, 29, 3))


def test_pre_1970_calendar_steps_keep_the_time_of_day() -> None:
    a = ms(datetime(1960, 1, 31, 23, 59, 59, 999000))
    assert a < 0
    expected = [
        datetime(1960, 1, 31, 23, 59, 59, 999000),
        datetime(1960, 2, 29, 23, 59, 59, 999000),
        datetime(1960, 3, 31, 23, 59, 59, 999000),
    ]
    assert grid(a, Period.parse("P1M"), 3).tolist() == [ms(d) for d in expected]
    assert step(a, Period.parse("P1M"), 2) == ms(expected[2])


def test_negative_and_zero_months() -> None:
    a = ms(datetime(2024, 3, 31))
    assert step(a, Period.parse("-P1M"), 1) == ms(datetime(2024, 2, 29))
    assert step(a, Period.parse("P1M"), -1) == ms(datetime(2024, 2, 29))
    assert step(a, Period.parse("P1M"), -13) == ms(datetime(2023, 2, 28))
    assert grid(a, Period.parse("P0M"), 3).tolist() == [a, a, a]


def test_calendar_range_edges() -> None:
    first = ms(datetime(1, 1, 31))
    assert grid(first, Period.parse("P1M"), 3).tolist() == [
        ms(datetime(1, 1, 31)),
        ms(datetime(1, 2, 28)),
        ms(datetime(1, 3, 31)),
    ]
    last = ms(datetime(9999, 10, 31))
    assert grid(last, Period.parse("P1M"), 3)[-1] == ms(datetime(9999, 12, 31))
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        grid(last, Period.parse("P1M"), 4)
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        step(first, Period.parse("P1M"), -1)
    with pytest.raises(InvalidParameterError, match=r"1\.\.9999"):
        step(MAX_MS + 1, Period.parse("P1M"), 0)


def test_fixed_overflow_and_bad_counts() -> None:
    with pytest.raises(InvalidParameterError, match="64-bit"):
        step(I64_MAX - 10, Period.parse("PT1S"), 1)
    with pytest.raises(InvalidParameterError, match="64-bit"):
        grid(I64_MAX - 10, Period.parse("PT1S"), 2)
    with pytest.raises(InvalidParameterError, match="count >= 0"):
        grid(0, Period.parse("PT1S"), -1)


def test_grid_is_fast_for_long_calendar_series() -> None:
    a = ms(datetime(1, 1, 31, 6))
    g = grid(a, Period.parse("P1M"), 9999 * 12 - 1)
    assert g[-1] == ms(datetime(9999, 11, 30, 6))
    assert np.all(np.diff(g) > 0)


# ---------------------------------------------------------------------------------------
# grid_index
# ---------------------------------------------------------------------------------------


def test_grid_index_fixed() -> None:
    p = Period.parse("PT15M")
    a = ms(datetime(2024, 1, 1))
    t = np.array([a, a + 15 * MINUTE, a + 16 * MINUTE, a - 15 * MINUTE, a + 4 * HOUR])
    assert grid_index(a, p, t).tolist() == [0, 1, -1, -1, 16]


def test_grid_index_shapes_and_dtypes() -> None:
    p = Period.parse("PT1S")
    assert grid_index(0, p, [0, 1000]).tolist() == [0, 1]
    assert grid_index(0, p, np.array([[0, 1000], [500, 2000]], dtype=np.int32)).tolist() == [
        [0, 1],
        [-1, 2],
    ]
    assert grid_index(0, p, np.array([], dtype=np.int64)).shape == (0,)
    with pytest.raises(InvalidParameterError, match="integer milliseconds"):
        grid_index(0, p, np.array([0.5]))


def test_grid_index_calendar_is_exact() -> None:
    p = Period.parse("P1M")
    a = ms(datetime(2024, 1, 31, 6))
    on = grid(a, p, 5)
    assert grid_index(a, p, on).tolist() == [0, 1, 2, 3, 4]
    off = np.array(
        [
            ms(datetime(2024, 2, 28, 6)),  # right month, wrong (unclamped) day
            ms(datetime(2024, 2, 29, 7)),  # right day, wrong time
            ms(datetime(2023, 12, 31, 6)),  # before the anchor
            ms(datetime(2024, 3, 31, 6)) + 1,
            MIN_MS - 1,  # outside the calendar range
            I64_MAX,
            -(2**63),
        ]
    )
    assert grid_index(a, p, off).tolist() == [-1] * len(off)
    yearly = Period.parse("P1Y")
    assert grid_index(
        a, yearly, [ms(datetime(2025, 1, 31, 6)), ms(datetime(2024, 2, 29, 6))]
    ).tolist() == [1, -1]


def test_grid_index_zero_and_negative_periods() -> None:
    a = ms(datetime(2024, 1, 1))
    assert grid_index(a, Period.parse("PT0S"), [a, a + 1]).tolist() == [0, -1]
    assert grid_index(a, Period.parse("P0M"), [a, a + 1]).tolist() == [0, -1]
    assert grid_index(a, Period.parse("-PT1H"), [a - HOUR, a + HOUR]).tolist() == [1, -1]
    back = step(a, Period.parse("-P1M"), 2)
    assert grid_index(a, Period.parse("-P1M"), [back]).tolist() == [2]


def test_grid_index_does_not_overflow() -> None:
    p = Period.parse("PT1S")
    big = np.array([I64_MAX, -(2**63)], dtype=np.int64)
    assert grid_index(-(2**62), p, big).tolist() == [-1, -1]
    assert grid_index(2**62, p, big).tolist() == [-1, -1]


# ---------------------------------------------------------------------------------------
# divide
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outer", "inner", "count"),
    [
        ("PT3H", "PT1H", 3),
        ("P1D", "PT1H", 24),
        ("P1Y", "P1M", 12),
        ("PT1H", "PT1H", 1),
        ("P2D", "PT0.5S", 345600),
    ],
)
def test_divide(outer: str, inner: str, count: int) -> None:
    assert divide(Period.parse(outer), Period.parse(inner)) == count


def test_divide_refusals_name_both() -> None:
    with pytest.raises(
        InvalidParameterError, match=r"^horizon PT1H30M is not a whole multiple of resolution PT1H"
    ) as info:
        divide(Period.parse("PT90M"), Period.parse("PT1H"))
    assert "PT1H or PT2H" in str(info.value)
    with pytest.raises(
        InvalidParameterError, match="interval P1M and resolution PT1H are different kinds"
    ):
        divide(Period.parse("P1M"), Period.parse("PT1H"), what="interval")
    with pytest.raises(InvalidParameterError, match="resolution PT0S must be strictly positive"):
        divide(Period.parse("PT1H"), Period.parse("PT0S"))
    with pytest.raises(InvalidParameterError, match="horizon -PT1H must be strictly positive"):
        divide(Period.parse("-PT1H"), Period.parse("PT1H"))
    with pytest.raises(InvalidParameterError, match="horizon P0M must be strictly positive"):
        divide(Period.parse("P0M"), Period.parse("P1M"))
    with pytest.raises(InvalidParameterError, match="not a whole multiple of step P2M"):
        divide(Period.parse("P3M"), Period.parse("P2M"), inner_what="step")


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------

fixed_periods = st.integers(-I64_MAX, I64_MAX).map(Period.of_ms)
calendar_periods = st.integers(-(2**31), 2**31 - 1).map(Period.of_months)
periods = st.one_of(
    fixed_periods, calendar_periods, st.sampled_from([Period(), Period(calendar=True)])
)


@given(periods)
def test_format_then_parse_is_identity(p: Period) -> None:
    text = str(p)
    assert Period.parse(text) == p
    assert str(Period.parse(text)) == text


@st.composite
def spellings(draw: st.DrawFn) -> tuple[str, Period]:
    """A random valid, usually non-canonical spelling and the period it means."""
    if draw(st.booleans()):
        units = draw(
            st.lists(
                st.tuples(st.integers(0, 500), st.sampled_from("YyMm")), min_size=1, max_size=4
            )
        )
        months = sum(n * (12 if u in "Yy" else 1) for n, u in units)
        body = "P" + "".join(f"{n}{u}" for n, u in units) + draw(st.sampled_from(["", "T"]))
        neg = draw(st.booleans())
        return ("-" if neg else "") + body, Period.of_months(-months if neg else months)
    date_units = draw(
        st.lists(st.tuples(st.integers(0, 1000), st.sampled_from("WwDd")), max_size=3)
    )
    time_units = draw(
        st.lists(
            st.tuples(
                st.integers(0, 10_000),
                st.sampled_from("HhMmSs"),
                st.integers(0, 999),
                st.integers(0, 3),
            ),
            max_size=4,
        )
    )
    assume(date_units or time_units)
    total = sum(n * (7 * DAY_MS if u in "Ww" else DAY_MS) for n, u in date_units)
    parts = []
    for n, u, frac, digits in time_units:
        if u in "Ss" and digits:
            frac_text = f"{frac:03d}"[:digits]
            parts.append(f"{n}.{frac_text}{u}")
            total += n * 1000 + int(frac_text.ljust(3, "0"))
        else:
            parts.append(f"{n}{u}")
            total += n * {"H": HOUR, "M": MINUTE, "S": 1000}[u.upper()]
    body = "P" + "".join(f"{n}{u}" for n, u in date_units)
    if time_units or (draw(st.booleans()) and date_units):
        body += "T" + "".join(parts)
    neg = draw(st.booleans())
    pad = draw(st.sampled_from(["", " ", "\t", "\n "]))
    return pad + ("-" if neg else "") + body + pad, Period.of_ms(-total if neg else total)


@given(spellings())
def test_any_valid_spelling_parses_to_its_value(case: tuple[str, Period]) -> None:
    text, expected = case
    assert Period.parse(text) == expected


@st.composite
def grid_cases(draw: st.DrawFn) -> tuple[int, Period, int]:
    anchor = draw(st.integers(MIN_MS, MAX_MS))
    if draw(st.booleans()):
        p = Period.of_months(draw(st.integers(1, 240)))
    else:
        p = Period.of_ms(draw(st.one_of(st.integers(1, 10**6), st.integers(1, 400 * DAY_MS))))
    n = draw(st.integers(0, 40))
    return anchor, p, n


@given(grid_cases(), st.lists(st.integers(MIN_MS, MAX_MS), max_size=10))
@settings(max_examples=300)
def test_grid_index_inverts_grid(case: tuple[int, Period, int], others: list[int]) -> None:
    anchor, p, n = case
    try:
        g = grid(anchor, p, n)
    except InvalidParameterError:
        assume(False)
        return
    assert [step(anchor, p, k) for k in range(n)] == g.tolist()
    assert grid_index(anchor, p, g).tolist() == list(range(n))
    # any other instant is either on the grid at the index found, or found nowhere
    probes = np.array(others + [int(v) + 1 for v in g], dtype=np.int64)
    for t, k in zip(probes.tolist(), grid_index(anchor, p, probes).tolist(), strict=True):
        if k >= 0:
            assert step(anchor, p, k) == t
        else:
            assert t not in set(g.tolist())


@given(st.integers(MIN_MS, MAX_MS), st.integers(-24, 24), st.integers(-300, 300))
def test_calendar_step_matches_a_naive_model(anchor: int, months: int, k: int) -> None:
    try:
        expected = naive_month_step(anchor, months, k)
    except ValueError:  # the model's datetime left the years 1..9999
        with pytest.raises(InvalidParameterError):
            step(anchor, Period.of_months(months), k)
        return
    assert step(anchor, Period.of_months(months), k) == expected
