"""Time references and the conversions between datetimes, milliseconds and text.

Every instant the store keeps is an integer number of milliseconds since the Unix epoch.
A series' *time reference* says how those integers are to be read back:

========================  ===============================================================
``utc``                   UTC instants, rendered in UTC
``zoneless``              wall-clock times with no instant; stored as if they were UTC
``+05:30`` / ``-07:00``   UTC instants, rendered at that fixed offset
IANA name                 UTC instants, rendered in the zone (``America/Denver``, ``UTC``)
``None``                  unspecified (old stores, some imports); read back as aware UTC
========================  ===============================================================

The spellings and the validation rules are the reference implementation's
(``infrastore`` 0.15.1), so series pass between the two without changing partition.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import Any, Final, Literal
from zoneinfo import ZoneInfo

import numpy as np
import numpy.typing as npt

from infrastore_sqlite.core.periods import DAY_MS, Period
from infrastore_sqlite.errors import InvalidParameterError

__all__ = [
    "MAX_MS",
    "MIN_MS",
    "ReferenceKind",
    "Rounding",
    "check_period_for_reference",
    "datetime_to_ms",
    "datetimes_to_ms",
    "infer_time_reference",
    "ms_to_axis_instant",
    "ms_to_datetime",
    "ms_to_datetimes",
    "ms_to_rfc3339",
    "normalize_time_reference",
    "parse_instant",
    "reference_kind",
    "reference_slug",
    "render_instants",
    "render_zone",
    "resolve_time_reference",
    "rfc3339_to_ms",
    "zone_info",
]

ReferenceKind = Literal["unspecified", "utc", "offset", "zone", "zoneless"]
Rounding = Literal["exact", "floor", "ceil"]

_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()
_EPOCH_NAIVE: Final = datetime(1970, 1, 1)
#: First and last millisecond a :class:`datetime.datetime` can hold (0001-01-01 and
#: 9999-12-31T23:59:59.999, as UTC).
MIN_MS: Final = (date(1, 1, 1).toordinal() - _EPOCH_ORDINAL) * DAY_MS
MAX_MS: Final = (date(9999, 12, 31).toordinal() - _EPOCH_ORDINAL + 1) * DAY_MS - 1

# ---------------------------------------------------------------------------------------
# Spelling rules
# ---------------------------------------------------------------------------------------

# '+HH:MM', '+HHMM' or '+HH'. ASCII digits only; \d would take other scripts' digits.
_OFFSET_RE: Final = re.compile(r"([+-])([0-9]{2})(?::?([0-9]{2}))?")
# The canonical stored form, for classifying already-normalised spellings quickly.
_CANONICAL_OFFSET_RE: Final = re.compile(r"[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]")
_ZONE_PART_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_+-]*")
# Limits the reference enforces on top of the documented shape (found by probing it):
# IANA names never exceed them, and a longer "name" is almost surely a mistake.
_ZONE_MAX_LEN: Final = 64
_ZONE_MAX_PARTS: Final = 3

_ZONE_SHAPE: Final = (
    "slash-separated parts of ASCII letters, digits, '_', '+' or '-', each starting "
    f"with a letter, at most {_ZONE_MAX_PARTS} parts and {_ZONE_MAX_LEN} characters"
)
_REFERENCE_HINT: Final = (
    "A time reference is 'utc', 'zoneless', a UTC offset such as '+05:30' or '-0700', "
    "or an IANA zone name such as 'America/Denver'."
)

_WINDOWS_DEVICES: Final = frozenset(
    ["CON", "PRN", "AUX", "NUL"]
    + [f"COM{i}" for i in range(1, 10)]
    + [f"LPT{i}" for i in range(1, 10)]
)


def _format_offset(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{mins:02d}"


def normalize_time_reference(value: str | None) -> str | None:
    """Check an explicit ``time_reference=`` and return its stored spelling.

    Parameters
    ----------
    value
        ``None`` (not given), ``'utc'``, ``'zoneless'`` (exact, lowercase), a UTC
        offset as ``±HH:MM``, ``±HHMM`` or ``±HH`` (hours 00–23, minutes 00–59), or an
        IANA-shaped zone name. The zone's existence is not checked: the instants are
        stored either way, and only rendering needs the tz database.

    Returns
    -------
    str or None
        ``None`` for ``None``; offsets as ``±HH:MM`` with ``-00:00`` → ``+00:00``;
        everything else unchanged. ``'+00:00'`` stays distinct from ``'utc'``, and
        ``'UTC'`` is a zone, not the ``utc`` literal, as in the reference.

    Raises
    ------
    InvalidParameterError
        For an empty string, an out-of-range offset, or a name not shaped like an IANA
        zone (``'1a/b'``, ``'A//B'``, ``'Foo.Bar'``, ``'+25:00'``, ``' utc'``).
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParameterError(
            f"time_reference must be a string or None, not {type(value).__name__}",
            hint=_REFERENCE_HINT,
        )
    normalized = _normalize(value)
    _warn_if_unknown(normalized)
    return normalized


@lru_cache(maxsize=256)
def _unknown_zone(name: str) -> bool:
    return reference_kind(name) == "zone" and zone_info(name) is None


def _warn_if_unknown(name: str | None) -> None:
    # Not an error (the instants are stored either way); the words up to "zone" are the
    # reference's, which callers' warning filters match.
    if name is not None and _unknown_zone(name):
        warnings.warn(
            f'time_reference names the IANA zone "{name}", unknown to the tz database here: '
            f"its instants are stored as given and shown in UTC (pip install tzdata, or update "
            f"it, to show them in the zone)",
            UserWarning,
            stacklevel=4,
        )


@lru_cache(maxsize=1024)  # series share a handful of spellings; checking is regex work
def _normalize(value: str) -> str:
    if value in ("utc", "zoneless"):
        return value
    if value == "":
        raise InvalidParameterError("time reference zone name is empty", hint=_REFERENCE_HINT)
    offset = _OFFSET_RE.fullmatch(value)
    if offset is not None:
        sign, hh, mm = offset.group(1), int(offset.group(2)), int(offset.group(3) or 0)
        if hh > 23 or mm > 59:
            raise InvalidParameterError(
                f"time reference {value!r} looks like a UTC offset, but it is out of range "
                f"(hours 00–23, minutes 00–59)",
                hint=_REFERENCE_HINT,
            )
        minutes = hh * 60 + mm
        return _format_offset(-minutes if sign == "-" else minutes)
    parts = value.split("/")
    if (
        len(value) > _ZONE_MAX_LEN
        or len(parts) > _ZONE_MAX_PARTS
        or not all(_ZONE_PART_RE.fullmatch(part) for part in parts)
    ):
        raise InvalidParameterError(
            f"time reference zone name {value!r} is not shaped like an IANA name "
            f"({_ZONE_SHAPE}), e.g. 'America/Denver'",
            hint=_suggest_reference(value),
        )
    return value


def _suggest_reference(value: str) -> str:
    """A hint for a refused spelling: the likely intended one, else the accepted forms."""
    stripped = value.strip()
    if stripped.lower() in ("utc", "z", "zoneless", "gmt"):
        guess = "zoneless" if stripped.lower() == "zoneless" else "utc"
        return f"Did you mean {guess!r}? {_REFERENCE_HINT}"
    if stripped != value:
        return f"Remove the surrounding whitespace. {_REFERENCE_HINT}"
    return _REFERENCE_HINT


def infer_time_reference(dt: datetime) -> str:
    """The time reference a datetime implies when none is given explicitly.

    Parameters
    ----------
    dt
        Any datetime.

    Returns
    -------
    str
        ``'zoneless'`` for a naive datetime (or one whose tzinfo gives no offset);
        ``'utc'`` for :data:`datetime.timezone.utc` — which is also what
        ``timezone(timedelta(0))`` returns; the key of a :class:`zoneinfo.ZoneInfo`;
        otherwise the offset at ``dt`` as ``±HH:MM``. A *named* zero-offset timezone
        such as ``timezone(timedelta(0), 'Z')`` gives ``'+00:00'``, as in the reference.

    Raises
    ------
    InvalidParameterError
        When the offset is not a whole number of minutes.
    """
    tz = dt.tzinfo
    if tz is None:
        return "zoneless"
    offset = dt.utcoffset()
    if offset is None:  # a tzinfo that declines to answer leaves the datetime naive
        return "zoneless"
    if tz is UTC:
        return "utc"
    if isinstance(tz, ZoneInfo) and tz.key is not None:
        # Keys come from the tz database, so they are IANA-shaped; check anyway, since
        # a ZoneInfo can be built from any key string the local database happens to hold.
        return normalize_time_reference(tz.key)  # type: ignore[return-value]
    total_us = (offset.days * 86_400 + offset.seconds) * 1_000_000 + offset.microseconds
    if total_us % 60_000_000:
        seconds = f"{total_us / 1_000_000:f}".rstrip("0").rstrip(".")
        raise InvalidParameterError(
            f"the timestamp's UTC offset is {seconds} seconds, which is not a whole number "
            f"of minutes; the store records an offset in minutes, so it cannot keep it",
            hint="Convert the datetime to UTC, or give time_reference= explicitly.",
        )
    return _format_offset(total_us // 60_000_000)


def resolve_time_reference(dt: datetime | None, explicit: str | None) -> str | None:
    """The reference a new series gets: the explicit one if given, else the inferred one.

    Parameters
    ----------
    dt
        The series' first datetime, or None when there is none (an empty series).
    explicit
        The ``time_reference=`` argument, or None.

    Returns
    -------
    str or None
        :func:`normalize_time_reference` of ``explicit``; else
        :func:`infer_time_reference` of ``dt``; else None (unspecified).
    """
    if explicit is not None:
        return normalize_time_reference(explicit)
    if dt is not None:
        return infer_time_reference(dt)
    return None


def reference_kind(time_reference: str | None) -> ReferenceKind:
    """Classify a stored spelling: unspecified, utc, offset, zone or zoneless.

    Parameters
    ----------
    time_reference
        A spelling as :func:`normalize_time_reference` returns it, or None.

    Returns
    -------
    str
        ``'unspecified'`` for None, ``'utc'``, ``'zoneless'``, ``'offset'`` for
        ``±HH:MM``, ``'zone'`` for every other (IANA-shaped) name — including
        ``'UTC'``, ``'Z'`` and a zone literally named ``'unspecified'``.
    """
    if time_reference is None:
        return "unspecified"
    if not isinstance(time_reference, str):
        normalize_time_reference(time_reference)  # raises, naming the type
    if time_reference in ("utc", "zoneless"):
        return time_reference  # type: ignore[return-value]
    if _CANONICAL_OFFSET_RE.fullmatch(time_reference):
        return "offset"
    normalized = _normalize(time_reference)
    if normalized != time_reference:  # a non-canonical offset such as '+0530'
        return reference_kind(normalized)
    return "zone"


def reference_slug(time_reference: str | None) -> str:
    """The reference's part of an interchange table name (peer contract §6.1).

    Parameters
    ----------
    time_reference
        A stored spelling, or None.

    Returns
    -------
    str
        ``'unspecified'``, ``'utc'``, ``'zoneless'``; an offset as
        ``offset_plus05_30`` / ``offset_minus07_00``; a zone with every character
        outside ``[A-Za-z0-9]`` replaced by ``_`` (``Etc/GMT+1`` → ``Etc_GMT_1``), and
        ``x_`` put in front when the whole slug is a Windows device name (``CON``,
        ``nul``, ``LPT9``), so the name is safe as a file name too. Case is kept; the
        caller resolves collisions.
    """
    kind = reference_kind(time_reference)
    if kind == "unspecified":
        return "unspecified"
    assert time_reference is not None
    if kind in ("utc", "zoneless"):
        return kind
    if kind == "offset":
        normalized = _normalize(time_reference)
        sign = "plus" if normalized[0] == "+" else "minus"
        return f"offset_{sign}{normalized[1:3]}_{normalized[4:6]}"
    slug = re.sub(r"[^A-Za-z0-9]", "_", time_reference)
    if slug.upper() in _WINDOWS_DEVICES:
        slug = "x_" + slug
    return slug


def check_period_for_reference(period: Period, time_reference: str | None, *, what: str) -> None:
    """Refuse a grid that a zone reference would make misleading.

    With an IANA zone, a resolution or interval of a day or more, or any calendar
    period, is refused: the zone's days are not all 24 hours long (daylight saving
    makes some 23 or 25), so such a grid drifts away from the local clock it seems to
    follow. Offsets, ``utc``, ``zoneless`` and unspecified references allow any period.

    Parameters
    ----------
    period
        The period to check.
    time_reference
        The series' stored reference.
    what
        ``'resolution'`` or ``'interval'``, for the message. (A horizon is not a grid
        step and need not be checked.)

    Raises
    ------
    InvalidParameterError
        When the combination is refused.
    """
    if reference_kind(time_reference) != "zone":
        return
    if period.calendar or abs(period.ms) >= DAY_MS:
        raise InvalidParameterError(
            f"a {period} {what} cannot be combined with the time reference "
            f"{time_reference}: a zone's days are not all 24 hours (daylight saving makes "
            f"some 23 or 25), so a grid of a day or more drifts away from the local clock, "
            f"and a calendar step would follow the UTC calendar, not the zone's",
            hint=(
                "Use a sub-daily period, a fixed offset or 'utc' as the reference, or store "
                "one explicit instant per value in a NonSequentialTimeSeries."
            ),
        )


# ---------------------------------------------------------------------------------------
# Datetimes ↔ milliseconds
# ---------------------------------------------------------------------------------------


def _finer_than_ms(what: str, shown: object) -> InvalidParameterError:
    return InvalidParameterError(
        f"{what} {shown} is finer than a millisecond; the store records instants to the "
        f"millisecond",
        hint="Truncate it to a whole millisecond first.",
    )


def datetime_to_ms(
    dt: datetime | np.datetime64, *, what: str = "initial_timestamp", rounding: Rounding = "exact"
) -> int:
    """Milliseconds since the Unix epoch of one datetime.

    Parameters
    ----------
    dt
        An aware datetime (its UTC instant is taken), a naive one (its wall clock is
        read as if it were UTC), or a :class:`numpy.datetime64` (read as UTC).
    what
        What the value is, for error messages.
    rounding
        What to do with a sub-millisecond part. ``'exact'`` (the default, for every
        instant that is written) refuses it. Query bounds may be finer than the store:
        ``'ceil'`` suits a half-open range ``[start, end)`` (an integer ``t`` satisfies
        ``t >= start`` and ``t < end`` exactly when it satisfies them against the
        ceilings), ``'floor'`` suits "the value in force at".

    Returns
    -------
    int

    Raises
    ------
    InvalidParameterError
        For a sub-millisecond part with ``rounding='exact'`` (refused rather than
        truncated, so no information is lost silently), NaT, a UTC instant outside the years 1..9999,
        or a value of another type.
    """
    if isinstance(dt, datetime):
        offset = dt.utcoffset()
        days = dt.toordinal() - _EPOCH_ORDINAL
        seconds = days * 86_400 + dt.hour * 3_600 + dt.minute * 60 + dt.second
        total_us = seconds * 1_000_000 + dt.microsecond
        if offset is not None:
            total_us -= (offset.days * 86_400 + offset.seconds) * 1_000_000 + offset.microseconds
        if total_us % 1000 and rounding == "exact":
            raise _finer_than_ms(what, dt.isoformat(sep=" "))
        ms = -(-total_us // 1000) if rounding == "ceil" else total_us // 1000
        _check_ms_range(ms, what)
        return ms
    if isinstance(dt, np.datetime64):
        arr = np.asarray(dt).reshape(1)
        ms = int(_datetime64_to_ms(arr, what, indexed=False, rounding=rounding)[0])
        _check_ms_range(ms, what)
        return ms
    # "expected a datetime" are the reference's words, which callers match on.
    raise InvalidParameterError(
        f"{what}: expected a datetime, got {type(dt).__name__} (a datetime.datetime or a "
        f"numpy.datetime64)",
        hint="Build it with datetime(2024, 1, 1, tzinfo=timezone.utc), for example.",
    )


def _item(what: str, i: int) -> str:
    """Item ``i`` of ``what``, as the reference names it: ``timestamp 1`` of ``timestamps``
    (callers match on those words); ``what[i]`` for a name that is no plural word."""
    return f"{what[:-1]} {i}" if what.endswith("s") and len(what) > 3 else f"{what}[{i}]"


def _datetime64_to_ms(
    values: npt.NDArray[Any], what: str, *, indexed: bool = True, rounding: Rounding = "exact"
) -> npt.NDArray[np.int64]:
    """Vectorised conversion of a datetime64 array to int64 milliseconds.

    Errors name the first offending position as ``timestamp i`` for ``timestamps`` (just
    ``what`` when not ``indexed``, for a scalar).
    """

    def at(i: int) -> str:
        return _item(what, i) if indexed else what

    unit, count = np.datetime_data(values.dtype)
    if unit == "generic":
        if values.size == 0:
            return np.empty(values.shape, dtype=np.int64)
        raise InvalidParameterError(f"{what}: a datetime64 without a unit has no instant")
    nat = np.isnat(values)
    if nat.any():
        i = int(np.flatnonzero(nat)[0])
        raise InvalidParameterError(f"{at(i)} is NaT (not a time); every value needs an instant")
    converted = values.astype("datetime64[ms]")  # numpy floors toward -inf
    # Casting is not checked by numpy: a sub-ms unit floors and a coarse one can
    # overflow. Casting back and comparing catches both; which one it is depends on
    # whether the unit is finer than a millisecond (going coarser cannot overflow).
    back = converted.astype(values.dtype)
    bad = back != values
    out = converted.view(np.int64)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        if np.timedelta64(1, (unit, count)) >= np.timedelta64(1, "ms"):
            raise InvalidParameterError(
                f"{at(i)} {values.flat[i]} is outside the range of 64-bit milliseconds"
            )
        if rounding == "exact":
            raise _finer_than_ms(at(i), values.flat[i])
        if rounding == "ceil":
            out = out + bad
    return out


def datetimes_to_ms(
    values: Iterable[datetime | np.datetime64] | npt.NDArray[Any], *, what: str = "timestamps"
) -> npt.NDArray[np.int64]:
    """Milliseconds since the Unix epoch of many datetimes.

    Parameters
    ----------
    values
        A 1-D numpy ``datetime64`` array (converted without a Python loop), or any
        iterable of datetimes / ``datetime64`` scalars, each converted as
        :func:`datetime_to_ms` does.
    what
        What the values are, for error messages (``timestamp 3 … is finer than a
        millisecond``).

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(len(values),)``.
    """
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise InvalidParameterError(
                f"{what} must be one-dimensional, not of shape {values.shape}"
            )
        if values.dtype.kind == "M":
            out = _datetime64_to_ms(values, what)
            if out.size:
                _check_ms_range(int(out.min()), what)
                _check_ms_range(int(out.max()), what)
            return out
    out = [datetime_to_ms(v, what=_item(what, i)) for i, v in enumerate(values)]
    return np.array(out, dtype=np.int64)


@lru_cache(maxsize=256)
def zone_info(name: str) -> ZoneInfo | None:
    """The :class:`zoneinfo.ZoneInfo` for ``name``, or None when the tz database lacks it."""
    try:
        return ZoneInfo(name)
    # ZoneInfoNotFoundError is a KeyError; a directory such as 'America' raises OSError
    # on some platforms, and malformed keys raise ValueError.
    except (KeyError, ValueError, OSError):
        return None


def render_zone(time_reference: str | None) -> tzinfo | None:
    """The tzinfo a reference renders in (its wall clock); None means naive (zoneless).
    A zone the tz database lacks renders in UTC, with a warning (as the reference warns)."""
    _warn_if_unknown(time_reference)
    return _render_zone(time_reference)


@lru_cache(maxsize=1024)
def _render_zone(time_reference: str | None) -> tzinfo | None:
    kind = reference_kind(time_reference)
    if kind in ("unspecified", "utc"):
        return UTC
    if kind == "zoneless":
        return None
    assert time_reference is not None
    if kind == "offset":
        normalized = _normalize(time_reference)
        minutes = int(normalized[1:3]) * 60 + int(normalized[4:6])
        # timezone(timedelta(0)) is timezone.utc itself, as the reference renders +00:00.
        return timezone(timedelta(minutes=-minutes if normalized[0] == "-" else minutes))
    # A zone this interpreter does not know still holds UTC instants: show them in UTC.
    return zone_info(time_reference) or UTC


def _check_ms_range(ms: int, what: str = "instant") -> None:
    if not MIN_MS <= ms <= MAX_MS:
        raise InvalidParameterError(
            f"{what}: {ms} ms since the epoch is outside the years 1..9999 (UTC) that a "
            f"datetime can hold",
            hint="Use an instant between 0001-01-01 and 9999-12-31 UTC.",
        )


def ms_to_datetime(ms: int, time_reference: str | None) -> datetime:
    """The datetime a stored instant reads back as.

    Parameters
    ----------
    ms
        Milliseconds since the Unix epoch.
    time_reference
        The series' reference.

    Returns
    -------
    datetime.datetime
        Naive wall clock for ``zoneless``; aware UTC for ``utc`` and unspecified;
        aware at the fixed offset for an offset; in the zone for an IANA name the tz
        database knows, else aware UTC.

    Raises
    ------
    InvalidParameterError
        When the instant (or its local time) is outside the years 1..9999.
    """
    ms = int(ms)
    _check_ms_range(ms)
    tz = render_zone(time_reference)
    naive = _EPOCH_NAIVE + timedelta(milliseconds=ms)
    if tz is None:
        return naive
    try:
        return naive.replace(tzinfo=UTC).astimezone(tz)
    except OverflowError:
        raise InvalidParameterError(
            f"the instant {ms_to_rfc3339(ms)} in {time_reference} falls outside the years "
            f"1..9999 that a datetime can hold"
        ) from None


def ms_to_datetimes(ms: npt.ArrayLike, time_reference: str | None) -> list[datetime]:
    """Many instants as datetimes; see :func:`ms_to_datetime`.

    Parameters
    ----------
    ms
        Integer milliseconds (1-D array-like).
    time_reference
        The series' reference.

    Returns
    -------
    list of datetime.datetime
    """
    arr = np.asarray(ms, dtype=np.int64).reshape(-1)
    if arr.size == 0:
        return []
    lo, hi = int(arr.min()), int(arr.max())
    _check_ms_range(lo)
    _check_ms_range(hi)
    tz = render_zone(time_reference)
    if isinstance(tz, timezone):
        # Fixed offsets (and UTC): shift the integers, let numpy build the wall clocks.
        shift = int(tz.utcoffset(None).total_seconds()) * 1000
        if lo + shift < MIN_MS or hi + shift > MAX_MS:
            raise InvalidParameterError(
                f"an instant in {time_reference} falls outside the years 1..9999 that a "
                f"datetime can hold"
            )
        walls = (arr + shift).astype("datetime64[ms]").tolist()
        return [w.replace(tzinfo=tz) for w in walls]
    walls = arr.astype("datetime64[ms]").tolist()
    if tz is None:
        return walls
    try:
        return [w.replace(tzinfo=UTC).astimezone(tz) for w in walls]
    except OverflowError:
        raise InvalidParameterError(
            f"an instant in {time_reference} falls outside the years 1..9999 that a "
            f"datetime can hold"
        ) from None


def render_instants(ms: npt.ArrayLike, tr: str | None) -> list[str]:
    """Instants (ms) as ISO-8601 text in the time reference ``tr``, as every command
    prints a series' instants: UTC for utc, the offset or the zone's offset at that
    instant otherwise, a bare wall clock for zoneless (milliseconds when there are any)."""
    out = []
    for value, dt in zip(np.asarray(ms).tolist(), ms_to_datetimes(ms, tr), strict=True):
        out.append(dt.isoformat(timespec="milliseconds" if value % 1000 else "seconds"))
    return out


# ---------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------


def _utc_text(ms: int) -> str:
    _check_ms_range(ms)
    days, rest = divmod(ms, DAY_MS)
    d = date.fromordinal(days + _EPOCH_ORDINAL)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    frac = f".{millis:03d}" if millis else ""
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}{frac}"


def ms_to_rfc3339(ms: int) -> str:
    """Catalog text of an instant: RFC 3339 in UTC with a ``+00:00`` suffix.

    ``2024-01-01T00:00:00+00:00``; three fractional digits only when the millisecond
    part is non-zero (``2024-01-01T00:00:00.500+00:00``).
    """
    return _utc_text(int(ms)) + "+00:00"


def ms_to_axis_instant(ms: int) -> str:
    """An interchange ``time_axis`` anchor: ``2024-01-01T00:00:00Z`` or ``…00.500Z``."""
    return _utc_text(int(ms)) + "Z"


_INSTANT_RE: Final = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"(?:[Tt ](?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]+))?)?)?"
    r"(?P<tz>[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)
_RFC3339_RE: Final = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_INTEGER_RE: Final = re.compile(r"[+-]?[0-9]+")
_INSTANT_FORMS: Final = (
    "RFC 3339 with 'Z' or an offset ('2024-01-01T00:00:00Z', '2024-01-01T00:00:00+05:30'), "
    "a wall-clock time without offset ('2024-01-01T00:00:00', '2024-01-01'), or whole "
    "milliseconds since the Unix epoch ('1704067200000')"
)


def _parse_text(text: str, what: str) -> tuple[int, str | None] | None:
    """(ms, reference) of an instant text, None when it is not shaped like one."""
    m = _INSTANT_RE.fullmatch(text)
    if m is None:
        return None
    try:
        wall = datetime(
            int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"] or 0), int(m["mi"] or 0),
            int(m["s"] or 0),
        )  # fmt: skip
    except ValueError as exc:
        raise InvalidParameterError(
            f"{what} {text!r} is not a real date and time ({exc})",
            hint="Check the month, day and hour fields.",
        ) from None
    frac = m["f"] or ""
    if frac.rstrip("0")[3:]:
        raise _finer_than_ms(what, repr(text))
    millis = int(frac[:3].ljust(3, "0"))
    ms = datetime_to_ms(wall) + millis
    tz = m["tz"]
    if tz is None:
        return ms, "zoneless"
    if tz in ("Z", "z"):
        return ms, "utc"
    offset = _OFFSET_RE.fullmatch(tz)
    assert offset is not None
    hh, mm = int(offset.group(2)), int(offset.group(3) or 0)
    if hh > 23 or mm > 59:
        raise InvalidParameterError(
            f"{what} {text!r} has an out-of-range UTC offset {tz!r} (hours 00–23, minutes 00–59)"
        )
    minutes = hh * 60 + mm
    minutes = -minutes if tz[0] == "-" else minutes
    # A zero offset reads as UTC, like datetime.fromisoformat('…+00:00') would infer.
    return ms - minutes * 60_000, ("utc" if minutes == 0 else _format_offset(minutes))


def rfc3339_to_ms(text: str) -> int:
    """Milliseconds of an RFC 3339 timestamp (inverse of :func:`ms_to_rfc3339`).

    Parameters
    ----------
    text
        ``YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)``; ``t``/``z`` and a space for ``T``
        are accepted, as RFC 3339 allows. Fractions beyond milliseconds must be zeros.

    Returns
    -------
    int
        The UTC instant in ms.

    Raises
    ------
    InvalidParameterError
        When the text is not such a timestamp, is not a real date, is finer than a
        millisecond, or lies outside the years 1..9999 in UTC.
    """
    if not isinstance(text, str) or not _RFC3339_RE.fullmatch(text):
        raise InvalidParameterError(
            f"{text!r} is not an RFC 3339 timestamp",
            hint="Write it as 2024-01-01T00:00:00+00:00 (or with Z, or another offset).",
        )
    parsed = _parse_text(text, "timestamp")
    assert parsed is not None
    _check_ms_range(parsed[0], "timestamp")
    return parsed[0]


def parse_instant(text: str, *, what: str = "timestamp") -> tuple[int, str | None]:
    """Read an instant typed by a user (CLI flag, CSV cell).

    Parameters
    ----------
    text
        One of: RFC 3339 with ``Z`` or an offset (``±HH:MM``, ``±HHMM``, ``±HH``);
        the same without an offset (a wall clock); a date alone (midnight); an
        integer count of milliseconds since the Unix epoch. Seconds may be left out
        (``2024-01-01T00:00``) and ``T`` may be a space.
    what
        What the value is, for error messages.

    Returns
    -------
    tuple of (int, str or None)
        The ms and the reference the text implies: ``'utc'`` for ``Z``, a zero offset
        or epoch milliseconds; ``'±HH:MM'`` for another offset; ``'zoneless'`` for a
        wall clock, whose ms are the wall clock read as UTC.

    Raises
    ------
    InvalidParameterError
        For anything else, naming the accepted spellings; for a sub-millisecond
        fraction; for an instant outside the years 1..9999.
    """
    if not isinstance(text, str):
        raise InvalidParameterError(
            f"{what} must be text, not {type(text).__name__}", hint=f"Give {_INSTANT_FORMS}."
        )
    body = text.strip()
    if _INTEGER_RE.fullmatch(body):
        ms = int(body)
        _check_ms_range(ms, what)
        return ms, "utc"
    parsed = _parse_text(body, what)
    if parsed is None:
        raise InvalidParameterError(
            f"{what} {text!r} is not a recognised instant; give {_INSTANT_FORMS}",
            hint=f"Give {_INSTANT_FORMS}.",
        )
    _check_ms_range(parsed[0], what)
    return parsed
