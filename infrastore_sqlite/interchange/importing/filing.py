"""What importing a series would change: the comparison a dry run and ``diff`` make.

An import turns each series of a file into a *prepared item* (``store.prepare.Prepared``:
the catalog row, the arrays, the series object) and files it with the store's one door,
:meth:`~infrastore_sqlite.store.Store.insert_all`, whose conflict policy (what *the same
series* is; ``error`` / ``replace`` / ``ignore``) is the store's (``store/conflicts.py``).
Here: :func:`compare` says what filing one with ``on_conflict="replace"`` would change
(what ``diff`` reports), and the diff entries of a dry-run import's report. Nothing here
knows the container the items came from; a helper module of the import core.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.timeref import render_instants
from ...store.conflicts import changed_columns
from ...store.prepare import Prepared
from ...store.reading import series_from
from ..plan import row_block

if TYPE_CHECKING:
    from ...store import Store


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
            return series_from(row, arr, ts, pad=False)
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
    "DIFF_KEYS",
    "changed_points",
    "compare",
    "diff_entries",
    "has_changes",
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
