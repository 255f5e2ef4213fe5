"""Filing imported series into a store: what happens when one is already there.

An import turns each series of a file into a *prepared item* (``store.prepare.Prepared``:
the catalog row, the arrays, the series object). :func:`file_items` files a batch of them
under one ``on_conflict`` rule, and :func:`compare` says what filing one would change,
which is also what ``diff`` reports. Nothing here knows the container the items came
from.

A series is *the same series* when its identity matches: owner id and category, type,
name, resolution, interval and features (the catalog's ``ts_identity``). Then

- ``"error"`` (the default) refuses, naming the flags and keywords that would file it;
- ``"ignore"`` leaves the stored one as it is (``skipped``);
- ``"replace"`` updates the stored row in place, so it keeps its catalog id
  (``replaced``), or leaves it untouched when the content is already identical
  (``unchanged``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..core.timeref import render_instants
from ..errors import IGNORE, REPLACE, DuplicateTimeSeriesError, InvalidParameterError
from ..model import DESCRIPTORS
from ..store.prepare import CatalogRow, Prepared
from .plan import row_block

if TYPE_CHECKING:
    from ..store import Store

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
_COMPARED = ("data_hash", "array_shape", *DESCRIPTOR_COLUMNS, *GRID_COLUMNS)


def check_on_conflict(value: Any) -> OnConflict:
    """``on_conflict`` as given, or a refusal naming the accepted values."""
    if value not in ON_CONFLICT:
        raise InvalidParameterError(
            f"on_conflict must be one of {', '.join(repr(v) for v in ON_CONFLICT)}, got {value!r}"
        )
    return value  # type: ignore[no-any-return]


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


def stored_rows(store: Store, items: Sequence[Prepared]) -> dict[tuple, dict[str, Any]]:
    """The stored catalog row (``id`` and the compared columns) of every item already held."""
    if not store._holds_series():
        return {}  # an empty store (the usual first import) holds none: nothing to look up
    keys = list(dict.fromkeys(identity(p.row) for p in items))
    return store._rows_by_identity(keys, _COMPARED)


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


@dataclass(slots=True)
class Filed:
    """What :func:`file_items` did, item by item, in the order given."""

    outcomes: list[str] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {o: self.outcomes.count(o) for o in OUTCOMES}


def file_items(
    store: Store,
    items: Sequence[Prepared],
    on_conflict: OnConflict,
    *,
    filed: set[int] | None = None,
) -> Filed:
    """File prepared items into ``store`` (inside the caller's transaction).

    Parameters
    ----------
    store
        A writable store, in a transaction.
    items
        Prepared items (``store.prepare.Prepared``), in the order the report lists them.
    on_conflict
        ``"error"``, ``"replace"`` or ``"ignore"``; see the module docstring.
    filed
        Catalog ids this import already met (added, replaced, left unchanged or
        skipped); a later item with one of those identities is a second row of the file
        for one series, refused whatever ``on_conflict`` says. Updated in place.

    Returns
    -------
    Filed
        Each item's outcome and catalog id.
    """
    filed = set() if filed is None else filed
    within: set[tuple] = set()
    for p in items:
        ident = identity(p.row)
        if ident in within:
            raise _listed_twice(p.label)
        within.add(ident)
    stored = stored_rows(store, items)
    if not stored:
        # The store holds none of them: each is added (two of one identity among them
        # are refused by the catalog's unique index, as one by one).
        out = Filed(["added"] * len(items), store._insert_prepared(list(items)))
        filed.update(out.ids)
        return out
    outcomes: list[str] = []
    ids: list[int | None] = []
    new: list[Prepared] = []
    replacing: list[tuple[int, Prepared]] = []
    for p in items:
        row = p.row
        held = stored.get(identity(row))
        if held is None:
            outcomes.append("added")
            ids.append(None)
            new.append(p)
            continue
        if held["id"] in filed:
            raise _listed_twice(p.label)
        if on_conflict == "error":
            raise conflict_error(p.label, held["id"])
        ids.append(held["id"])
        if on_conflict == "ignore":
            outcomes.append("skipped")
        elif any(changed_columns(held, row).values()):
            outcomes.append("replaced")
            replacing.append((held["id"], p))
        else:
            outcomes.append("unchanged")
    store._replace_rows(replacing)
    added = iter(store._insert_prepared(new))
    out = Filed(outcomes, [i if i is not None else next(added) for i in ids])
    # Whatever happened to each (added, replaced, unchanged, skipped), a later row of the
    # file with its identity is the same series listed twice: taking either is a guess.
    filed.update(out.ids)
    return out


def _listed_twice(label: str) -> DuplicateTimeSeriesError:
    return DuplicateTimeSeriesError(
        f"a time series with that key already exists: {label} appears twice in the file "
        "(two series rows with one owner, type, name, resolution, interval and features), "
        "so neither row can be taken; remove one of them and import again",
        series=label,
    )


# ---------------------------------------------------------------------- diff
def compare(store: Store, p: Prepared, held: dict[str, Any] | None) -> dict[str, Any]:
    """What filing item ``p`` with ``on_conflict="replace"`` would do, in detail.

    Returns a dict: ``change`` (``added``, ``replaced`` or ``unchanged``), ``id`` (the
    stored series', or None), ``points`` (values that differ: a point is one value row
    of the interchange layout, matched by its timestamp, issue time and lane, and a row
    present on one side only counts), ``first_changed`` / ``last_changed`` (the earliest
    and latest timestamp among them, ISO 8601 in the series' time reference), and ``descriptors`` / ``grid`` (the names
    of the columns that differ).
    """
    entry: dict[str, Any] = {
        "change": "added",
        "id": None,
        "points": None,
        "first_changed": None,
        "last_changed": None,
        "descriptors": [],
        "grid": [],
    }
    if held is None:
        return entry
    changed = changed_columns(held, p.row)
    entry.update(id=held["id"], descriptors=changed["descriptors"], grid=changed["grid"])
    if changed["values"] or changed["grid"]:
        points, first, last = changed_points(_stored_series(store, held["id"]), p.series)
        entry.update(points=points, first_changed=first, last_changed=last)
    else:
        entry["points"] = 0
    entry["change"] = "replaced" if any(changed.values()) else "unchanged"
    return entry


def changed_points(old: Any, new: Any) -> tuple[int, str | None, str | None]:
    """How many value rows differ between two series, and the first and last timestamp."""
    a, b = _points(old), _points(new)
    keys = a.keys() | b.keys()
    diff = [k for k in keys if a.get(k) != b.get(k)]
    if not diff:
        return 0, None, None
    times = [k[0] for k in diff]
    # In the series' own time reference, as get prints its rows.
    first, last = render_instants(
        np.asarray([min(times), max(times)], dtype=np.int64), new.time_reference
    )
    return len(diff), first, last


def _stored_series(store: Store, series_id: int) -> Any:
    """A stored series in the form an import builds (composites at their minimal width)."""
    rows = store.rows_by_ids([series_id])
    for batch in store.iter_arrays(rows):
        for row, arr, ts in batch:
            return store._series_from(row, arr, ts, pad=False)
    raise AssertionError("unreachable: rows_by_ids found the row")  # pragma: no cover


def _points(series: Any) -> dict[tuple, bytes]:
    """``(timestamp, issue_time, lane) -> value bytes`` of a series' value rows.

    Bytes, so that NaN equals NaN and -0.0 differs from 0.0, as the store's hash sees them.
    """
    block = row_block(series, ("", ""), 0)
    coords = block.coordinates()
    n = block.n
    columns: list[Iterable[Any]] = [coords["timestamp"].tolist()]
    columns.append(coords["issue_time"].tolist() if "issue_time" in coords else [None] * n)
    lane = coords.get("percentile", coords.get("scenario"))
    columns.append(lane.tolist() if lane is not None else [None] * n)
    values = np.ascontiguousarray(block.values).reshape(n, -1)
    return dict(zip(zip(*columns, strict=True), _row_bytes(values), strict=True))


def _row_bytes(values: np.ndarray) -> Iterator[bytes]:
    raw = values.view(np.uint8).reshape(values.shape[0], -1) if values.size else values
    for r in raw:
        yield r.tobytes()


__all__ = [
    "ON_CONFLICT",
    "OUTCOMES",
    "Filed",
    "OnConflict",
    "changed_columns",
    "changed_points",
    "check_on_conflict",
    "compare",
    "conflict_error",
    "file_items",
    "identity",
    "stored_rows",
]


# ------------------------------------------------------------------------------ diff
#: The keys of one diff entry, in the order the CLI shows them.
DIFF_KEYS = (
    "change",
    "id",
    "owner_id",
    "owner_type",
    "owner_category",
    "time_series_type",
    "name",
    "points",
    "first_changed",
    "last_changed",
    "descriptors",
    "grid",
    "values_table",
    "file_id",
    "hash_stale",
)


def diff_entries(partitions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The diff of a dry-run import report's partitions (``diff=True``): one entry per
    series row, keys as :data:`DIFF_KEYS`."""
    out = []
    for part in partitions:
        for s in part["series"]:
            entry = {
                **s,
                "values_table": part["values_table"],
                "time_series_type": part["time_series_type"],
            }
            out.append({k: entry.get(k) for k in DIFF_KEYS})
    return out


def has_changes(entries: list[dict[str, Any]]) -> bool:
    """Whether importing would change the store (``diff --exit-code``)."""
    return any(e["change"] != "unchanged" for e in entries)
