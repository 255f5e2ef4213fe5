"""The store's bounds applied to a Parquet values file from its footer alone (issue 34).

A file of a few hundred KB can hold 10⁹ rows of one run-length encoded value; its footer
says so (each row group's row count, and the ``array_id`` statistics that tell one array
from many). What the footer proves too long is refused here before a page is read; what
it cannot prove (a row group of many arrays) the values walk bounds as the array grows
(``partition.PartitionReader._runs``).
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidParameterError
from ...model import TimeSeriesType
from ..importing.limits import MAX_ARRAY_BYTES, Limits
from ..layout import values_key_columns

__all__ = ["check_row_groups", "row_limit", "too_many_rows"]


def row_limit(limits: Limits, tst: TimeSeriesType) -> int:
    """The most rows one array may have: the store's bound at 8 bytes for each column
    read (``array_id``, ``timestamp``, the value and the type's other coordinates)."""
    columns = 3 + len(values_key_columns(tst))
    return max(1, limits.max_array_bytes // (8 * columns))


def too_many_rows(
    limits: Limits, what: str, rows: int, limit: int, *, file: str, stem: str, at_least: bool
) -> InvalidParameterError:
    """The refusal of ``what`` (a row group, an array) of ``rows`` rows of one array."""
    return InvalidParameterError(
        f"{what} holds {'at least ' if at_least else ''}{rows:,} rows of one array, more "
        f"than the {limit:,} the store reads in one array ({limits.max_array_bytes:,} "
        f"bytes); nothing of it was read (partition {stem}). A real series that long needs "
        "a higher bound: {max_array_bytes}",
        table=file,
        terms={"max_array_bytes": MAX_ARRAY_BYTES},
    )


def check_row_groups(meta: Any, at: int, limit: int) -> tuple[str, int] | None:
    """``(what, rows)`` of the first stretch of the values file that the footer proves
    holds more than ``limit`` rows of one array, else None.

    Consecutive row groups whose ``array_id`` statistics name one and the same id are one
    array; a file without ``array_id`` (``at`` < 0) is one array; a row group without
    statistics is read whole by the order check, so its own rows count against the bound
    too.
    """
    start = 0
    run_id: int | None = None
    run_rows = run_from = 0
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        rows = rg.num_rows
        stats = rg.column(at).statistics if at >= 0 else None
        known = stats is not None and stats.has_min_max and isinstance(stats.min, int)
        one = at < 0 or (known and stats.min == stats.max)
        if not known and at >= 0 and rows > limit:
            return f"row group {i + 1} (from row {start + 1}, no array_id statistics)", rows
        if one and rows:
            aid = None if at < 0 else int(stats.min)
            if run_id is None or aid != run_id or run_rows == 0:
                run_id, run_rows, run_from = aid, 0, start
            run_rows += rows
            if run_rows > limit:
                named = "" if aid is None else f", all of array_id {aid}"
                return f"the rows from row {run_from + 1} (row group {i + 1}{named})", run_rows
        elif rows:
            run_id, run_rows = None, 0
        start += rows
    return None
