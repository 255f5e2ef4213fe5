"""ISO-8601 periods (resolution, horizon, interval) and the time grids they span.

A period is one of two kinds that never compare equal to each other:

* **fixed** — a whole number of milliseconds (``PT1H``, ``P1D``, ``PT0.5S``);
* **calendar** — a whole number of months (``P1M``, ``P1Y``), stepped on the UTC calendar.

The grammar accepted by :meth:`Period.parse` and the canonical spelling produced by
``str(period)`` follow the reference implementation (``infrastore`` 0.15.1), so a period
written by either side reads back with the same spelling on the other. All instants are
integer milliseconds since the Unix epoch (UTC); calendar arithmetic is limited to the
years 1..9999, the range of :class:`datetime.datetime`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final

import numpy as np
import numpy.typing as npt

from infrastore_sqlite.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "DAY_MS",
    "Period",
    "as_period",
    "divide",
    "grid",
    "grid_index",
    "step",
]

#: Milliseconds in a 24-hour day.
DAY_MS: Final = 86_400_000
_HOUR_MS: Final = 3_600_000
_MINUTE_MS: Final = 60_000
_SECOND_MS: Final = 1_000

# The reference keeps fixed periods in an i64 of milliseconds and calendar periods in an
# i32 of months; its parser refuses anything that does not fit (magnitude of a fixed
# period at most i64::MAX on either side, months in [i32::MIN, i32::MAX]).
_I64_MAX: Final = 2**63 - 1
_I64_MIN: Final = -(2**63)
_I32_MAX: Final = 2**31 - 1
_I32_MIN: Final = -(2**31)

# Day numbers (days since 1970-01-01) of the first and last day datetime can hold.
_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()
_MIN_DAY: Final = date(1, 1, 1).toordinal() - _EPOCH_ORDINAL
_MAX_DAY: Final = date(9999, 12, 31).toordinal() - _EPOCH_ORDINAL
_MIN_MS: Final = _MIN_DAY * DAY_MS
_MAX_MS: Final = (_MAX_DAY + 1) * DAY_MS - 1

# Month index = year * 12 + (month - 1); calendar arithmetic stays inside these.
_MIN_MONTH_INDEX: Final = 1 * 12
_MAX_MONTH_INDEX: Final = 9999 * 12 + 11

_DAYS_IN_MONTH: Final = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)

# Rust's str::trim strips the Unicode White_Space set; Python's str.strip() also strips
# U+001C..U+001F, which the reference would keep (and then refuse). Match the reference.
_WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

# Structure only; the value checks (fractions on S only, kind mixing, overflow) follow.
# [0-9] rather than \d: \d would accept non-ASCII digits, which the reference refuses.
_PERIOD_RE: Final = re.compile(
    r"(?P<neg>-)?P(?P<date>(?:[0-9]+[YyMmWwDd])*)(?:T(?P<time>(?:[0-9]+(?:\.[0-9]+)?[HhMmSs])*))?"
)
_DATE_TOKEN_RE: Final = re.compile(r"([0-9]+)([YyMmWwDd])")
_TIME_TOKEN_RE: Final = re.compile(r"([0-9]+)(?:\.([0-9]+))?([HhMmSs])")

_GRAMMAR_HINT: Final = (
    "durations are ISO-8601, e.g. PT15M, PT1H, PT0.5S, P1D, P1M or P1Y "
    "(uppercase P and T; only seconds take decimals, at most three)"
)
_TOO_LONG: Final = "it is too long"


def _invalid(
    text: str, reason: str | None = None, suggestion: str | None = None
) -> InvalidParameterError:
    """Build the error for an unparsable period, with the best hint we can give."""
    if suggestion:
        hint = f"did you mean {suggestion}?"
        detail = f"{reason or 'durations are ISO-8601'} — {hint}"
    elif reason:
        hint = _GRAMMAR_HINT[0].upper() + _GRAMMAR_HINT[1:] + "."
        detail = reason
    else:
        hint = _GRAMMAR_HINT
        detail = _GRAMMAR_HINT
    return InvalidParameterError(f"invalid ISO-8601 period {text!r}: {detail}", hint=hint)


@dataclass(frozen=True, slots=True)
class Period:
    """A resolution, horizon or interval: fixed milliseconds or calendar months.

    Parameters
    ----------
    months
        Number of months, for a calendar period (``P1M`` is 1, ``P1Y`` is 12); 0 for a
        fixed period.
    ms
        Length in milliseconds, for a fixed period; 0 for a calendar period.
    calendar
        True for the calendar (months) kind. Implied by a non-zero ``months``; it only
        has to be given for a zero-month period, so that ``P0M`` and ``PT0S`` stay
        distinct values, as they are in the reference.

    Notes
    -----
    Equality is field equality, so a fixed and a calendar period are never equal, even
    when both are zero. No ordering is defined: months and milliseconds do not compare.
    """

    months: int = 0
    ms: int = 0
    calendar: bool = False

    def __post_init__(self) -> None:
        # Normalise the flag first so Period(months=1) means what it says.
        if self.months != 0 and not self.calendar:
            object.__setattr__(self, "calendar", True)
        if self.calendar and self.ms != 0:
            raise InvalidParameterError(
                f"a period is either calendar months or fixed milliseconds, not both "
                f"(got months={self.months}, ms={self.ms})",
                hint="Build two periods, or express the whole span in one unit.",
            )
        if not _I32_MIN <= self.months <= _I32_MAX:
            raise InvalidParameterError(
                f"a calendar period of {self.months} months is out of range; "
                f"months must fit a 32-bit integer"
            )
        if not _I64_MIN < self.ms <= _I64_MAX:
            raise InvalidParameterError(
                f"a fixed period of {self.ms} ms is out of range; "
                f"milliseconds must fit a 64-bit integer"
            )

    # -- construction -------------------------------------------------------------

    @classmethod
    def of_ms(cls, ms: int) -> Period:
        """A fixed period of ``ms`` milliseconds."""
        return cls(ms=int(ms))

    @classmethod
    def of_months(cls, months: int) -> Period:
        """A calendar period of ``months`` months (``P0M`` for zero)."""
        return cls(months=int(months), calendar=True)

    @classmethod
    def parse(cls, text: str) -> Period:
        """Parse an ISO-8601 duration with the reference's strict grammar.

        Parameters
        ----------
        text
            E.g. ``PT1H``, ``P1D``, ``P1DT12H``, ``PT0.5S``, ``P1M``, ``P1Y6M``, ``-PT1H``.
            Surrounding whitespace is ignored. ``P`` and ``T`` must be uppercase; unit
            letters may be either case. Units may repeat (they add) and come in any
            order within the date or time part. Only seconds take a fraction, of one to
            three digits after a ``.``.

        Returns
        -------
        Period

        Raises
        ------
        InvalidParameterError
            When the text is not such a duration, mixes calendar (Y/M) and fixed
            (W/D/H/M/S) units, or does not fit the store's integer ranges. The message
            suggests a correct spelling when one can be guessed (``1h`` → ``PT1H``).
        """
        if not isinstance(text, str):
            raise InvalidParameterError(
                f"a period must be an ISO-8601 duration string, not {type(text).__name__}",
                hint=_GRAMMAR_HINT,
            )
        result = _parse_or_reason(text)
        if isinstance(result, Period):
            return result
        reason, is_mix = result
        if is_mix:
            raise InvalidParameterError(
                f"ISO-8601 period {text!r} mixes calendar (Y/M) and fixed (W/D/H/M/S) units: {reason}",
                hint=reason,
            )
        suggestion = None if reason and reason.startswith(_TOO_LONG) else _suggest(text)
        raise _invalid(text, reason, suggestion)

    @classmethod
    def from_timedelta(cls, td: timedelta, *, exact: bool = False, what: str = "period") -> Period:
        """A fixed period from a :class:`datetime.timedelta`.

        Parameters
        ----------
        td
            Any timedelta. Sub-millisecond parts are dropped, truncating toward zero,
            as the reference does (1500 µs → ``PT0.001S``, −1500 µs → ``-PT0.001S``).
        exact
            Refuse a sub-millisecond part (in the reference's words) instead of dropping
            it: for a period a series is stored on, where a truncated step would misplace
            every value silently. Filters and queries keep the default.
        what
            What the period is (``resolution``, ``horizon``, ``interval``), for the message.

        Returns
        -------
        Period
        """
        if not isinstance(td, timedelta):
            raise InvalidParameterError(
                f"expected a datetime.timedelta, not {type(td).__name__}", hint=_GRAMMAR_HINT
            )
        total_us = (td.days * 86_400 + td.seconds) * 1_000_000 + td.microseconds
        # Truncate toward zero (not floor): the reference converts the magnitude.
        ms = abs(total_us) // 1000
        period = cls(ms=-ms if total_us < 0 else ms)
        if exact and total_us % 1000:
            raise InvalidParameterError(
                f"{what} {period} ({td} given) is not a positive whole number of "
                f"milliseconds; the store cannot represent it",
                hint="Round the timedelta to whole milliseconds first.",
            )
        return period

    # -- rendering ----------------------------------------------------------------

    def __str__(self) -> str:
        """The canonical spelling, identical to the reference's.

        Calendar: ``PnY`` when the months are a non-zero multiple of 12, else ``PnM``
        (``P0M``, ``P18M``). Fixed: days, then ``T`` and hours, minutes, seconds with
        zero parts left out, seconds with up to three decimals, no weeks; zero is
        ``PT0S``. A negative period is its magnitude's spelling prefixed by ``-``.
        """
        if self.calendar:
            sign = "-" if self.months < 0 else ""
            m = abs(self.months)
            if m != 0 and m % 12 == 0:
                return f"{sign}P{m // 12}Y"
            return f"{sign}P{m}M"
        sign = "-" if self.ms < 0 else ""
        rest = abs(self.ms)
        if rest == 0:
            return "PT0S"
        days, rest = divmod(rest, DAY_MS)
        hours, rest = divmod(rest, _HOUR_MS)
        minutes, rest = divmod(rest, _MINUTE_MS)
        seconds, millis = divmod(rest, _SECOND_MS)
        out = [sign, "P"]
        if days:
            out.append(f"{days}D")
        if hours or minutes or seconds or millis:
            out.append("T")
            if hours:
                out.append(f"{hours}H")
            if minutes:
                out.append(f"{minutes}M")
            if millis:
                out.append(f"{seconds}.{millis:03d}".rstrip("0") + "S")
            elif seconds:
                out.append(f"{seconds}S")
        return "".join(out)

    def __repr__(self) -> str:
        return f"Period({str(self)!r})"

    # -- conversion and predicates --------------------------------------------------

    def to_timedelta(self) -> timedelta:
        """The fixed period as a :class:`datetime.timedelta`.

        Raises
        ------
        InvalidParameterError
            For a calendar period (months have no fixed length), or when the period is
            longer than a timedelta can hold (about 2.7 million years).
        """
        if self.calendar:
            raise InvalidParameterError(
                f"the calendar period {self} has no fixed length, so it has no timedelta",
                hint="Step it on a calendar with periods.step() instead.",
            )
        try:
            return timedelta(milliseconds=self.ms)
        except OverflowError:
            raise InvalidParameterError(
                f"the period {self} is too long for a datetime.timedelta"
            ) from None

    @property
    def is_positive(self) -> bool:
        """True when the period moves forward in time (> 0 ms or > 0 months)."""
        return self.months > 0 if self.calendar else self.ms > 0

    @property
    def is_zero(self) -> bool:
        """True for ``PT0S`` and ``P0M``."""
        return self.months == 0 and self.ms == 0


def _parse_or_reason(text: str) -> Period | tuple[str | None, bool]:
    """Parse ``text``; on failure return ``(reason, is_kind_mix)`` instead of raising.

    Kept separate from :meth:`Period.parse` so the suggestion search can try candidate
    spellings without building exceptions.
    """
    body = text.strip(_WHITESPACE)
    match = _PERIOD_RE.fullmatch(body)
    if match is None:
        return None, False
    date_part = match.group("date")
    time_part = match.group("time") or ""
    if not date_part and not time_part:
        # 'P', 'PT' and '-P' name no unit at all ('P1DT' is fine: the date part has one).
        return "it names no unit", False

    months = 0
    ms = 0
    has_calendar = False
    has_fixed = False
    for number, unit in _DATE_TOKEN_RE.findall(date_part):
        n = int(number)
        u = unit.upper()
        if u == "Y":
            months += 12 * n
            has_calendar = True
        elif u == "M":
            months += n
            has_calendar = True
        elif u == "W":
            ms += 7 * DAY_MS * n
            has_fixed = True
        else:
            ms += DAY_MS * n
            has_fixed = True
    for number, fraction, unit in _TIME_TOKEN_RE.findall(time_part):
        u = unit.upper()
        has_fixed = True
        if fraction and u != "S":
            return "only seconds may carry a fraction", False
        if len(fraction) > 3:
            return (
                "seconds take at most three decimals (the store counts whole milliseconds)",
                False,
            )
        n = int(number)
        if u == "H":
            ms += _HOUR_MS * n
        elif u == "M":
            ms += _MINUTE_MS * n
        else:
            ms += _SECOND_MS * n + int(fraction.ljust(3, "0") or "0")
    if has_calendar and has_fixed:
        return (
            "a period is either a count of months (P1M, P1Y) or a fixed span (P1D, PT1H); "
            "give them as separate periods",
            True,
        )

    negative = match.group("neg") is not None
    if has_calendar:
        value = -months if negative else months
        if not _I32_MIN <= value <= _I32_MAX:
            return f"{_TOO_LONG}: months must fit a 32-bit integer", False
        return Period(months=value, calendar=True)
    # The magnitude must fit an i64 on either side, so -PT9223372036854775.808S fails.
    if ms > _I64_MAX:
        return f"{_TOO_LONG}: milliseconds must fit a 64-bit integer", False
    return Period(ms=-ms if negative else ms)


# Human spellings people type for durations, for the "did you mean" hint only.
_HUMAN_RE: Final = re.compile(
    r"\s*(?P<n>[0-9]+(?:[.,][0-9]+)?)\s*(?P<unit>[A-Za-z]+)\s*", flags=re.ASCII
)
_HUMAN_UNITS: Final[dict[str, tuple[str, int]]] = {
    # unit → ("ms", factor) or ("months", factor)
    **dict.fromkeys(["ms", "msec", "millisecond", "milliseconds", "millis"], ("ms", 1)),
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], ("ms", _SECOND_MS)),
    **dict.fromkeys(["m", "min", "mins", "minute", "minutes", "t"], ("ms", _MINUTE_MS)),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], ("ms", _HOUR_MS)),
    **dict.fromkeys(["d", "day", "days"], ("ms", DAY_MS)),
    **dict.fromkeys(["w", "wk", "wks", "week", "weeks"], ("ms", 7 * DAY_MS)),
    **dict.fromkeys(["mo", "mon", "month", "months"], ("months", 1)),
    **dict.fromkeys(["y", "yr", "yrs", "year", "years"], ("months", 12)),
}
_FRACTION_TOKEN_RE: Final = re.compile(r"([0-9]+)[.,]([0-9]+)([YyMmWwDdHhSs])")


def _suggest(text: str) -> str | None:
    """Guess what a user meant, quoted for the message (``"'PT1H'"``), or None."""
    body = text.strip(_WHITESPACE)
    human = _HUMAN_RE.fullmatch(body)
    if human is not None:
        return _suggest_human(human.group("n").replace(",", "."), human.group("unit"))
    upper = body.upper()
    candidates = [
        upper,  # 'pt1h'
        body.replace(",", "."),  # 'PT1,5S'
        upper.replace(",", "."),
    ]
    if not upper.startswith(("P", "-P")):
        candidates += ["P" + upper, "PT" + upper]  # 'T1H', '1H'
    if re.fullmatch(r"-?P[0-9.,]+[HS]", upper):
        candidates.append(upper.replace("P", "PT"))  # 'P1H' → 'PT1H'
    if upper.startswith(("PT", "-PT")):
        candidates.append(upper.replace("PT", "P", 1))  # 'PT1D' → 'P1D'
    for candidate in candidates:
        if candidate == body:
            continue
        parsed = _parse_or_reason(candidate)
        if isinstance(parsed, Period):
            return repr(str(parsed))
    fraction = _suggest_fraction(upper)
    return None if fraction is None else repr(fraction)


def _suggest_human(number: str, unit: str) -> str | None:
    """'1h' → 'PT1H', '15 minutes' → 'PT15M', '1.5 days' → 'P1DT12H', '1m' → both readings."""
    spec = _HUMAN_UNITS.get(unit.lower())
    if spec is None:
        return None
    kind, factor = spec
    whole, _, frac = number.partition(".")
    # Exact decimal arithmetic: numerator / 10**len(frac) units.
    scale = 10 ** len(frac)
    numerator = int(whole + frac) * factor
    if numerator % scale:
        return None  # finer than the unit can express (a sub-ms or fractional month)
    value = numerator // scale
    if kind == "months":
        if value > _I32_MAX:
            return None
        return repr(str(Period(months=value, calendar=True)))
    if value > _I64_MAX:
        return None
    fixed = repr(str(Period(ms=value)))
    if unit in ("m", "M") and not frac and value // _MINUTE_MS <= _I32_MAX:
        # A bare 'm' is minutes to most people but months to some; offer both.
        months = repr(str(Period(months=value // _MINUTE_MS, calendar=True)))
        return f"{fixed} (minutes) or {months} (months)"
    return fixed


def _suggest_fraction(upper: str) -> str | None:
    """'P1.5D' → 'P1DT12H', 'PT1.5H' → 'PT1H30M': rewrite fractional units exactly."""
    if not upper.startswith(("P", "-P")) or not _FRACTION_TOKEN_RE.search(upper):
        return None
    neg = upper.startswith("-")
    body = upper[2:] if neg else upper[1:]
    date_part, _, time_part = body.partition("T")
    total = 0
    for part, units in ((date_part, {"W": 7 * DAY_MS, "D": DAY_MS}), (time_part, None)):
        for number, unit in re.findall(r"([0-9]+(?:[.,][0-9]+)?)([A-Z])", part):
            factor = (
                units.get(unit)
                if units is not None
                else {"H": _HOUR_MS, "M": _MINUTE_MS, "S": _SECOND_MS}.get(unit)
            )
            if factor is None:
                return None  # calendar fractions or stray letters: no exact rewrite
            whole, _, frac = number.replace(",", ".").partition(".")
            scale = 10 ** len(frac)
            numerator = int(whole + frac) * factor
            if numerator % scale:
                return None
            total += numerator // scale
    if total > _I64_MAX:
        return None
    return str(Period(ms=-total if neg else total))


def as_period(
    value: str | timedelta | Period, *, what: str = "resolution", exact: bool = False
) -> Period:
    """Accept a period as a string, a timedelta or a :class:`Period`.

    Parameters
    ----------
    value
        An ISO-8601 duration (parsed with :meth:`Period.parse`), a
        :class:`datetime.timedelta` (truncated to milliseconds) or a Period.
    what
        What the value is (``resolution``, ``horizon``, ``interval``); error messages
        start with it.
    exact
        Refuse a timedelta with a sub-millisecond part rather than truncate it (see
        :meth:`Period.from_timedelta`): for the periods a series is stored on.

    Returns
    -------
    Period

    Raises
    ------
    InvalidParameterError
        For an unparsable string or a value of another type.
    """
    if isinstance(value, Period):
        return value
    if isinstance(value, timedelta):
        return Period.from_timedelta(value, exact=exact, what=what)
    if isinstance(value, str):
        try:
            return Period.parse(value)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{what}: {exc.message}", hint=exc.hint) from None
    raise ParameterTypeError(
        f"{what}: expected an ISO-8601 duration string, a datetime.timedelta or a Period, "
        f"not {type(value).__name__}",
        hint=_GRAMMAR_HINT,
    )


# -- calendar arithmetic ----------------------------------------------------------------


def _split_anchor(anchor_ms: int) -> tuple[int, int, int, int]:
    """(month index, day of month, ms into the day, day number) of a UTC instant."""
    if not _MIN_MS <= anchor_ms <= _MAX_MS:
        raise InvalidParameterError(
            f"the instant {anchor_ms} ms is outside the years 1..9999, "
            f"where calendar periods can be stepped"
        )
    days, tod = divmod(anchor_ms, DAY_MS)  # floor, so pre-1970 instants split right
    d = date.fromordinal(days + _EPOCH_ORDINAL)
    return d.year * 12 + d.month - 1, d.day, tod, days


def _check_month_index(index: int, anchor_ms: int, period: Period, k: int) -> None:
    if not _MIN_MONTH_INDEX <= index <= _MAX_MONTH_INDEX:
        raise InvalidParameterError(
            f"{k} step(s) of {period} from the instant {anchor_ms} ms leave the years 1..9999",
            hint="Shorten the series or move its start.",
        )


def _days_in_month(year: int, month: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return int(_DAYS_IN_MONTH[month - 1])


def step(anchor_ms: int, period: Period, k: int) -> int:
    """The instant ``k`` steps of ``period`` from ``anchor_ms``.

    Parameters
    ----------
    anchor_ms
        The grid's first instant, in ms since the Unix epoch (UTC); may be negative.
    period
        Fixed: the result is ``anchor_ms + k * period.ms``. Calendar: ``k * months``
        are added to the anchor's **UTC** calendar date in one go (never step by
        step), the day is clamped to the end of the target month, and the time of day
        is kept — so Jan 31 steps to Feb 29, Mar 31, Apr 30.
    k
        The step number; any integer, including negative.

    Returns
    -------
    int
        Milliseconds since the Unix epoch.

    Raises
    ------
    InvalidParameterError
        When the result leaves the 64-bit range (fixed) or the years 1..9999 (calendar).
    """
    anchor_ms = int(anchor_ms)
    k = int(k)
    if not period.calendar:
        out = anchor_ms + k * period.ms
        if not _I64_MIN <= out <= _I64_MAX:
            raise InvalidParameterError(
                f"{k} step(s) of {period} from the instant {anchor_ms} ms overflow "
                f"the 64-bit millisecond range"
            )
        return out
    index, day, tod, _ = _split_anchor(anchor_ms)
    target = index + k * period.months
    _check_month_index(target, anchor_ms, period, k)
    year, month0 = divmod(target, 12)
    day = min(day, _days_in_month(year, month0 + 1))
    days = date(year, month0 + 1, day).toordinal() - _EPOCH_ORDINAL
    return days * DAY_MS + tod


def _days_from_civil(
    y: npt.NDArray[np.int64], m: npt.NDArray[np.int64], d: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Vectorised day number (days since 1970-01-01) of proleptic Gregorian dates.

    H. Hinnant's ``days_from_civil``; numpy's ``//`` floors, so it is exact for any year.
    """
    y = y - (m <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = np.where(m > 2, m - 3, m + 9)
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(
    z: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Vectorised inverse of :func:`_days_from_civil`: (year, month 1..12, day)."""
    z = z + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    y = yoe + era * 400 + (m <= 2)
    return y, m, d


def _days_in_months(
    year: npt.NDArray[np.int64], month: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    return _DAYS_IN_MONTH[month - 1] + (leap & (month == 2))


def _calendar_at(month_index: npt.NDArray[np.int64], day: int, tod: int) -> npt.NDArray[np.int64]:
    """Instants at ``day`` (clamped to the month's end) and ``tod`` of each month index."""
    year = month_index // 12
    month = month_index % 12 + 1
    days = np.minimum(np.int64(day), _days_in_months(year, month))
    return _days_from_civil(year, month, days) * DAY_MS + tod


def grid(anchor_ms: int, period: Period, n: int) -> npt.NDArray[np.int64]:
    """The first ``n`` points of the grid ``step(anchor_ms, period, k)``.

    Parameters
    ----------
    anchor_ms
        The first point, in ms since the Unix epoch (UTC).
    period
        The step; see :func:`step` for the calendar rule.
    n
        Number of points, >= 0.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(n,)``.

    Raises
    ------
    InvalidParameterError
        For a negative ``n``, or a grid leaving the representable range.
    """
    anchor_ms = int(anchor_ms)
    n = int(n)
    if n < 0:
        raise InvalidParameterError(f"a grid cannot have {n} points; give a count >= 0")
    if n == 0:
        return np.empty(0, dtype=np.int64)
    # Checking the last point is enough: both kinds of grid are monotonic in k.
    step(anchor_ms, period, n - 1)
    ks = np.arange(n, dtype=np.int64)
    if not period.calendar:
        return anchor_ms + ks * np.int64(period.ms)
    index, day, tod, _ = _split_anchor(anchor_ms)
    return _calendar_at(index + ks * np.int64(period.months), day, tod)


def grid_index(anchor_ms: int, period: Period, t_ms: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """For each instant, its step number on the grid, or -1 when it is not on it.

    Parameters
    ----------
    anchor_ms
        The grid's first point, in ms since the Unix epoch (UTC).
    period
        The grid's step.
    t_ms
        Instants in ms (any integer array-like; any shape).

    Returns
    -------
    numpy.ndarray
        int64 array of ``t_ms``'s shape: the ``k >= 0`` with
        ``step(anchor_ms, period, k) == t``, else -1. Exact for calendar periods too:
        an instant must fall on the clamped day and the anchor's time of day. For a
        zero period only the anchor itself is on the grid (index 0).
    """
    anchor_ms = int(anchor_ms)
    t = np.asarray(t_ms)
    if t.dtype.kind not in "iu" and t.size:
        raise InvalidParameterError(
            f"grid_index needs integer milliseconds, not an array of {t.dtype}"
        )
    if t.dtype.kind == "u" and t.size and t.max() > _I64_MAX:
        raise InvalidParameterError("instants beyond the 64-bit millisecond range")
    t = t.astype(np.int64, copy=False)
    out = np.full(t.shape, -1, dtype=np.int64)
    if period.is_zero:
        out[t == anchor_ms] = 0
        return out

    if not period.calendar:
        # t - anchor can overflow int64 for instants near the ends of the range; such a
        # difference is not a multiple numpy could represent, so those stay -1.
        safe = t >= _I64_MIN + anchor_ms if anchor_ms >= 0 else t <= _I64_MAX + anchor_ms
        diff = t - np.where(safe, np.int64(anchor_ms), t)  # 0 where unsafe
        ms = np.int64(period.ms)
        k = diff // ms
        hit = safe & (diff % ms == 0) & (k >= 0)
        out[hit] = k[hit]
        return out

    index, day, tod, _ = _split_anchor(anchor_ms)
    # The month of t fixes the only k that could reach it (clamping moves the day, never
    # the month), so find that k and then confirm with the exact calendar step.
    valid = (t >= _MIN_MS) & (t <= _MAX_MS)
    tv = np.where(valid, t, np.int64(anchor_ms))
    y, m, _ = _civil_from_days(tv // DAY_MS)
    t_index = y * 12 + m - 1
    months = np.int64(period.months)
    diff = t_index - index
    k = diff // months
    hit = valid & (diff % months == 0) & (k >= 0)
    hit &= _calendar_at(t_index, day, tod) == tv
    out[hit] = k[hit]
    return out


def divide(
    outer: Period, inner: Period, *, what: str = "horizon", inner_what: str = "resolution"
) -> int:
    """How many ``inner`` periods make ``outer`` (e.g. steps per forecast horizon).

    Parameters
    ----------
    outer, inner
        Periods of the same kind, both positive.
    what, inner_what
        Names of the two periods for the error message.

    Returns
    -------
    int
        The exact positive integer ``outer / inner``.

    Raises
    ------
    InvalidParameterError
        When either is not positive, the kinds differ (months against milliseconds),
        or ``outer`` is not a whole multiple of ``inner``.
    """
    if not inner.is_positive:
        raise InvalidParameterError(
            f"{inner_what} {inner} must be strictly positive",
            hint=f"Give a {inner_what} such as PT1H.",
        )
    if not outer.is_positive:
        raise InvalidParameterError(
            f"{what} {outer} must be strictly positive",
            hint=f"Give a {what} that is a whole multiple of the {inner_what} {inner}.",
        )
    if outer.calendar != inner.calendar:
        raise InvalidParameterError(
            f"{what} {outer} and {inner_what} {inner} are different kinds of period "
            f"(calendar months against fixed time), so neither divides the other",
            hint="Use calendar periods (P1M, P1Y) for both, or fixed ones (PT1H, P1D) for both.",
        )
    num, den = (outer.months, inner.months) if outer.calendar else (outer.ms, inner.ms)
    count, rest = divmod(num, den)
    if rest:
        # Offer the nearest whole multiples on either side.
        near = [c * den for c in (count, count + 1) if c > 0]
        spelled = " or ".join(
            str(Period(months=v, calendar=True) if outer.calendar else Period(ms=v)) for v in near
        )
        raise InvalidParameterError(
            f"{what} {outer} is not a whole multiple of {inner_what} {inner}",
            hint=f"Make the {what} a whole number of {inner_what} steps, e.g. {spelled}.",
        )
    return count
