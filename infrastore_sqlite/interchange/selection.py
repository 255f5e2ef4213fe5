"""Which series an export takes, as a value checked where it is made: :class:`Selection`
(``list_metadata``'s filters, a time range, the derived series or not). A bad filter or
range is refused before anything is planned or opened; the plan takes the selection
as given (``interchange/plan.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from ..errors import INCLUDE_DERIVED, TRANSFORM, InvalidParameterError
from ..model import TimeSeriesType
from ..store.rows import build_filter, series_ids

__all__ = ["Selection", "check_range"]


def check_range(time_range: Any) -> tuple[datetime, datetime]:
    """``time_range`` as a ``(start, end)`` pair, or the refusal that names what is wrong."""
    try:
        start, end = time_range
    except (TypeError, ValueError):
        raise InvalidParameterError("time_range must be a (start, end) pair of datetimes") from None
    if not isinstance(start, datetime) or not isinstance(end, datetime):
        raise InvalidParameterError("time_range must be a (start, end) pair of datetimes")
    if (start.tzinfo is None) != (end.tzinfo is None):
        raise InvalidParameterError(
            "time_range mixes a naive and an aware bound; spell both the same way"
        )
    if end < start:
        raise InvalidParameterError(f"time_range end < start ({end} < {start})")
    return start, end


@dataclass(frozen=True, kw_only=True, slots=True)
class Selection:
    """Which series an export takes; checked as it is made.

    Parameters
    ----------
    filters
        ``list_metadata``'s keywords (``owner_id``, ``name``, ``time_series_type``, …);
        an unknown name or a bad value is refused here, as ``list_metadata`` refuses it.
        And ``ids``: only these catalog ids among the rows the others select (an id the
        store does not hold is refused when the export is planned).
    time_range
        ``(start, end)``, half-open; each series is clipped as ``read_by_ids_range`` does.
    include_derived
        Also take DeterministicSingleTimeSeries (materialized windows); a filter for that
        type without it is refused.
    """

    filters: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    time_range: tuple[datetime, datetime] | None = None
    include_derived: bool = False

    def __post_init__(self) -> None:
        filters = dict(self.filters)
        ids = filters.pop("ids", None)
        build_filter(filters)  # the names and values, as list_metadata checks them
        if ids is not None:
            # The export's own keyword (not list_metadata's): a tuple, frozen as the rest;
            # the plan hands it to the catalog query as one bound array.
            filters["ids"] = series_ids(ids)
        tst = filters.get("time_series_type")
        if (
            tst is not None
            and TimeSeriesType.coerce(tst) is TimeSeriesType.DeterministicSingleTimeSeries
            and not self.include_derived
        ):
            raise InvalidParameterError(
                "a DeterministicSingleTimeSeries is derived from a stored SingleTimeSeries, so "
                "an export leaves it out unless asked to include derived series "
                "({include_derived}). No import takes one back: import the SingleTimeSeries "
                "and run {transform} instead.",
                terms={"include_derived": INCLUDE_DERIVED, "transform": TRANSFORM},
            )
        if self.time_range is not None:
            object.__setattr__(self, "time_range", check_range(self.time_range))
        # Frozen all the way down: the caller's dict may change, this value does not.
        object.__setattr__(self, "filters", MappingProxyType(filters))

    @classmethod
    def of(
        cls,
        *,
        time_range: tuple[datetime, datetime] | None = None,
        include_derived: bool = False,
        **filters: Any,
    ) -> Selection:
        """The selection of the export keywords (``time_range=``, ``include_derived=``,
        then ``list_metadata``'s)."""
        return cls(filters=filters, time_range=time_range, include_derived=include_derived)
