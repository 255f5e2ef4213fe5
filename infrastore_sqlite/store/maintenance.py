"""Maintenance of a store: compact, transform, and its settings and size.

:class:`Maintenance` is the store's collaborator for the work that is no add, read or
removal (checking and repairing a damaged store is ``damage.py``'s and ``repair.py``'s):
rewriting
the live arrays into one segment (``compact``, through ``transactions.py``), deriving
DeterministicSingleTimeSeries views of stored SingleTimeSeries
(``transform_single_time_series``), the write buffer and compression settings, and the
bytes on disk.
"""

from __future__ import annotations

import contextlib
import operator
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ..core.periods import as_period, divide, grid, step
from ..core.timeref import ms_to_rfc3339
from ..errors import IntegrityError, InvalidParameterError
from ..model import OwnerCategory, TimeSeriesType
from .api import copy_store
from .arrays import parse_compression
from .rows import SeriesRow
from .segments import catalog_file

if TYPE_CHECKING:
    from .queries import Queries
    from .state import StoreState
    from .transactions import Transactions
    from .writing import Writing


def _check_calendar_windows(row: SeriesRow, res, itv, h: int, steps: int, count: int) -> None:
    """A view's window j steps from its own issue time; on a calendar grid whose day of month
    is clamped (anchored on the 29th-31st) that can name other dates than the source's own
    timestamps, so such a view is refused rather than mislabelling values."""
    if not res.calendar:
        return
    source = grid(row.initial_ms, res, row.length)
    for j in range(1, count):
        issue = step(row.initial_ms, itv, j)
        if not np.array_equal(grid(issue, res, h), source[j * steps : j * steps + h]):
            raise InvalidParameterError(
                f"cannot derive a DeterministicSingleTimeSeries of {row.label} at resolution "
                f"{res} with interval {itv}: the source grid starts on day "
                f"{ms_to_rfc3339(row.initial_ms)[8:10]} of its month, which shorter months clamp, "
                f"so window {j} would put the source's values under other dates. Anchor the "
                "series on a day every month has (1-28), or store it as a NonSequentialTimeSeries.",
                series=row.label,
            )


# Store.compact's keys, in the reference's order.
_COMPACT_KEYS = (
    "slots_reclaimed",
    "datasets_dropped",
    "feature_sets_reclaimed",
    "timestamp_sets_reclaimed",
    "bytes_reclaimed",
)


class Maintenance:
    """Compact, transform, settings (see the module docstring)."""

    __slots__ = ("_queries", "_state", "_transactions", "_writing")

    def __init__(
        self,
        state: StoreState,
        queries: Queries,
        transactions: Transactions,
        writing: Writing,
    ) -> None:
        self._state = state
        self._queries = queries
        self._transactions = transactions
        self._writing = writing

    def catalog_kind(self) -> str:
        """``"memory"`` for an ``in_memory`` store, else ``"attached"``."""
        return "memory" if self._state.scratch is not None else "attached"

    def persist_to(self, path: str | Path) -> None:
        """``Store.persist_to``: a complete copy of the last commit at ``path``."""
        self._state.check_open()
        if self._state.catalog.in_transaction:
            raise InvalidParameterError(
                "persist_to inside a transaction would copy uncommitted work; commit first"
            )
        copy_store(Path(self._state.path), self._state.catalog.conn, Path(path))

    def disk_usage(self) -> dict[str, int]:
        """Bytes on disk: ``hdf5_bytes`` (the segments) and ``catalog_bytes`` (with its WAL)."""
        self._state.check_open()
        h5 = 0
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self._state.segments.dir):
                with contextlib.suppress(FileNotFoundError):
                    h5 += entry.stat().st_size
        cat = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                cat += os.path.getsize(str(catalog_file(self._state.path)) + suffix)
        return {"hdf5_bytes": h5, "catalog_bytes": cat}

    def transform(
        self,
        horizon: Any,
        interval: Any,
        *,
        owner_category: OwnerCategory | str | None = None,
        resolution: Any = None,
    ) -> int:
        """Derive DeterministicSingleTimeSeries rows from stored SingleTimeSeries.

        Returns the number of rows created (0 when re-run with the same parameters).
        """
        self._state.check_writable()
        filters: dict[str, Any] = {"time_series_type": TimeSeriesType.SingleTimeSeries}
        if owner_category is not None:
            filters["owner_category"] = owner_category
        if resolution is not None:
            filters["resolution"] = resolution
        rows = self._queries.select_rows(**filters)
        hor = as_period(horizon, what="horizon")
        itv = as_period(interval, what="interval")
        by_res: dict[str, set[tuple[int, int]]] = {}
        for r in rows:
            by_res.setdefault(r.resolution, set()).add((r.initial_ms, r.length))
        for res, pairs in by_res.items():
            if len(pairs) > 1:
                raise IntegrityError(
                    f"the SingleTimeSeries at resolution {res} have more than one "
                    "(initial_timestamp, length) pair; transform needs them to share one grid "
                    "(pass resolution= to transform one group, or align the series)"
                )
        created = 0
        with self._transactions.block():
            for r in rows:
                res = as_period(r.resolution)
                h = divide(hor, res, what="horizon")
                if h > r.length:
                    raise InvalidParameterError(
                        f"horizon {hor} is longer than {r.label} ({r.length} steps of {res})"
                    )
                if itv.is_positive:
                    steps = divide(itv, res, what="interval")
                    if steps > h:
                        raise InvalidParameterError(
                            f"interval {itv} is longer than horizon {hor}, which would leave gaps"
                        )
                    count = (r.length - h) // steps + 1
                    _check_calendar_windows(r, res, itv, h, steps, count)
                else:
                    if h != r.length:
                        raise InvalidParameterError(
                            "interval PT0S is only allowed when the horizon spans the whole series"
                        )
                    count = 1
                existing = self._state.catalog.execute(
                    "SELECT horizon, interval FROM time_series_associations WHERE "
                    "time_series_type = 3 AND owner_id = ? AND owner_category = ? AND name = ? "
                    "AND resolution = ? AND features_hash = ?",
                    (r.owner_id, int(r.owner_category), r.name, r.resolution, r.features_hash),
                ).fetchall()
                if (str(hor), str(itv)) in [tuple(e) for e in existing]:
                    continue
                if any(e[1] == str(itv) for e in existing):
                    raise InvalidParameterError(
                        f"{r.label} already has a DeterministicSingleTimeSeries with interval "
                        f"{itv} and another horizon; remove it first",
                        series=r.label,
                    )
                row = {
                    "owner_id": r.owner_id,
                    "owner_type": r.owner_type,
                    "owner_category": int(r.owner_category),
                    "time_series_type": 3,
                    "name": r.name,
                    "initial_timestamp": ms_to_rfc3339(r.initial_ms),
                    "initial_ms": r.initial_ms,
                    "resolution": r.resolution,
                    "length": r.length,
                    "horizon": str(hor),
                    "interval": str(itv),
                    "count": count,
                    "timestamps_hash": None,
                    **r.descriptors(),
                    "time_reference": r.time_reference,
                    "percentiles_json": None,
                    "element_type": r.element_type,
                    "element_shape": orjson.dumps(r.element_shape).decode(),
                    "array_shape": orjson.dumps(list(r.array_shape)).decode(),
                    "data_hash": r.data_hash,
                    "features_hash": r.features_hash,
                }
                self._writing.insert_row(row, r.label)
                created += 1
        return created

    def write_buffer_bytes(self) -> int:
        """``Store.write_buffer_bytes`` (documented there): the writer's queue bound."""
        self._state.check_open()
        return int(self._state.segments.write_buffer_bytes)

    def set_write_buffer_bytes(self, value: int) -> None:
        """The ``Store.write_buffer_bytes`` setter: checked, then applied to the writer."""
        # The reference's classes for the same refusals (its setter takes a u64).
        n = operator.index(value)
        if n < 0:
            raise OverflowError("write_buffer_bytes cannot be negative")
        if n >= 2**64:
            raise OverflowError("write_buffer_bytes must be less than 2**64")
        if n == 0:
            raise InvalidParameterError("write_buffer_bytes must be greater than zero")
        self._state.check_open()
        self._state.segments.write_buffer_bytes = n
        if self._state.segments.writer is not None:
            self._state.segments.writer.max_pending_bytes = n

    def compression(self) -> str:
        """The HDF5 filter new arrays get: ``none`` or ``deflate:<level>:<shuffle|noshuffle>``."""
        self._state.check_open()
        return self._state.segments.compression

    def get_compression(self) -> dict[str, Any]:
        """The HDF5 filter new arrays get, in the reference's shape:
        ``{"compression": "auto" | "deflate" | "none", "level": int | None, "shuffle": bool}``
        (``auto``: the level and shuffle of the integer and bool arrays; floats are stored
        uncompressed)."""
        kind, level, shuffle = parse_compression(self.compression())
        return {"compression": kind, "level": level, "shuffle": shuffle}

    def compact(self) -> dict[str, int]:
        """Rewrite the live arrays into one segment, reclaiming removed arrays' space.

        Like every write it is one transaction: a failure leaves the store as it was.
        """
        self._state.check_writable()
        if self._state.catalog.in_transaction:
            raise InvalidParameterError("compact() cannot run inside a transaction")
        cat = self._state.catalog
        names = sorted(self._transactions.segment_names())
        live = int(cat.scalar("SELECT count(*) FROM arrays WHERE pool != ''"))
        slots = int(cat.scalar("SELECT COALESCE(sum(slots), 0) FROM segments"))
        if len(names) > 1 or slots != live:
            report = self._transactions.rewrite(names)
        else:
            with self._transactions.block():  # still sweeps what a failed write left behind
                pass
            report = {"slots_reclaimed": 0, "datasets_dropped": 0, "bytes_reclaimed": 0}
        # The reference's keys, in its order (callers print or compare the dict); feature
        # maps and time axes are swept at removal already.
        report = {**report, "feature_sets_reclaimed": 0, "timestamp_sets_reclaimed": 0}
        return {k: report[k] for k in _COMPACT_KEYS}
