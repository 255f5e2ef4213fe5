"""The conflict policy: what *the same series* means, and what filing one does.

A series is *the same series* as a stored one when its identity matches: owner id and
category, type, name, resolution, interval and features (the catalog's ``ts_identity``
index; :func:`identity`). ``Store.insert_all`` files prepared items under one
``on_conflict`` rule:

- ``"error"`` (the default) refuses, naming the flags and keywords that would file it;
- ``"ignore"`` leaves the stored one as it is (``skipped``);
- ``"replace"`` updates the stored row in place, so it keeps its catalog id
  (``replaced``), or leaves it untouched when the content is already identical
  (``unchanged``).

This module holds the policy's values and words (no catalog access); the ``writing``
room applies it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from ..errors import IGNORE, REPLACE, DuplicateTimeSeriesError, InvalidParameterError
from ..model import DESCRIPTORS
from .prepare import CatalogRow

OnConflict = Literal["error", "replace", "ignore"]
ON_CONFLICT: tuple[str, ...] = ("error", "replace", "ignore")
#: What filing did to one series (``diff`` reports ``added``/``replaced``/``unchanged``).
OUTCOMES: tuple[str, ...] = ("added", "replaced", "unchanged", "skipped")

# Catalog columns compared between a stored series and a file's, grouped by what a
# change means to a reader. ``owner_type`` is not part of the identity.
DESCRIPTOR_COLUMNS = ("owner_type", *DESCRIPTORS, "time_reference")
GRID_COLUMNS = (
    "initial_ms",
    "length",
    "horizon",
    "count",
    "timestamps_hash",
    "percentiles_json",
    "element_type",
    "element_shape",
)
#: The columns ``Store.held_rows`` returns for each held series.
COMPARED_COLUMNS = ("data_hash", "array_shape", *DESCRIPTOR_COLUMNS, *GRID_COLUMNS)


def check_on_conflict(value: Any) -> OnConflict:
    """``on_conflict`` as given, or a refusal naming the accepted values."""
    if value not in ON_CONFLICT:
        raise InvalidParameterError(
            f"on_conflict must be one of {', '.join(repr(v) for v in ON_CONFLICT)}, got {value!r}"
        )
    return cast(OnConflict, value)


def identity(row: CatalogRow) -> tuple:
    """A prepared row's identity, as the catalog's unique index spells it."""
    return (
        row.owner_id,
        row.owner_category,
        row.time_series_type,
        row.name,
        row.resolution or "",
        row.interval or "",
        row.features_hash,
    )


def changed_columns(stored: dict[str, Any], row: CatalogRow) -> dict[str, list[str]]:
    """Which compared columns differ: ``{"values": [...], "grid": [...], "descriptors": [...]}``.

    A composite's padding is not content (its hash is over the minimal width), so
    ``array_shape`` alone never counts.
    """
    out: dict[str, list[str]] = {"values": [], "grid": [], "descriptors": []}
    if stored["data_hash"] != row.data_hash:
        out["values"].append("data_hash")
    out["grid"] = [c for c in GRID_COLUMNS if stored[c] != getattr(row, c)]
    out["descriptors"] = [c for c in DESCRIPTOR_COLUMNS if stored[c] != getattr(row, c)]
    return out


def conflict_error(label: str, held_id: int) -> DuplicateTimeSeriesError:
    """The refusal of a series the store holds, under ``on_conflict="error"``."""
    return DuplicateTimeSeriesError(
        f"a time series with that key already exists: {label} (id {held_id} in the store). "
        "To bring a file's edits back into the store it came from, {replace} updates such "
        "series in place (they keep their ids) and {ignore} leaves them as they are (also "
        "the way to resume an interrupted import).",
        series=label,
        terms={"replace": REPLACE, "ignore": IGNORE},
    )


def listed_twice(label: str) -> DuplicateTimeSeriesError:
    """The refusal of a second item of one identity among those filed together."""
    return DuplicateTimeSeriesError(
        f"a time series with that key already exists: {label} appears twice in the file "
        "(two series rows with one owner, type, name, resolution, interval and features), "
        "so neither row can be taken; remove one of them and import again",
        series=label,
    )


class IdsMet(Protocol):
    """The catalog ids an import already met (a ``set[int]`` will do; the import core
    keeps them as runs, ``importing.options.IdSet``)."""

    def __contains__(self, id: object, /) -> bool: ...
    def update(self, ids: Iterable[int], /) -> None: ...


@dataclass(slots=True)
class Filed:
    """What ``Store.insert_all`` did, item by item, in the order given."""

    outcomes: list[str] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {o: self.outcomes.count(o) for o in OUTCOMES}


__all__ = [
    "COMPARED_COLUMNS",
    "DESCRIPTOR_COLUMNS",
    "GRID_COLUMNS",
    "ON_CONFLICT",
    "OUTCOMES",
    "Filed",
    "IdsMet",
    "OnConflict",
    "changed_columns",
    "check_on_conflict",
    "conflict_error",
    "identity",
    "listed_twice",
]
