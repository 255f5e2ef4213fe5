"""The store's bounds applied to a Parquet values file from its footer alone (issue 34).

A file of a few hundred KB can hold 10⁹ rows of one run-length encoded value; its footer
says so (each row group's row count, and the ``array_id`` statistics that tell one array
from many). What the footer proves too long is refused here before a page is read; what
it cannot prove (a row group of many arrays) the values walk bounds as the array grows
(``partition.PartitionReader._runs``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InvalidParameterError
from ...model import TimeSeriesType
from ..importing.limits import MAX_ARRAY_BYTES, Limits
from ..layout import values_key_columns

__all__ = ["check_cells", "check_row_groups", "row_limit", "too_many_rows"]


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
    run_rows = run_from = run_group = 0
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
                run_id, run_rows, run_from, run_group = aid, 0, start, i
            run_rows += rows
            if run_rows > limit:
                groups = (
                    f"row group {i + 1}"
                    if i == run_group
                    else f"row groups {run_group + 1}-{i + 1}"
                )
                named = "" if aid is None else f", all of array_id {aid}"
                return f"{groups} (from row {run_from + 1}{named})", run_rows
        elif rows:
            run_id, run_rows = None, 0
        start += rows
    return None


def _lengths(texts: Any) -> np.ndarray | None:
    """Each cell's length in bytes, from the array's offsets (no compute kernel, no
    copy of the texts); None for a column that holds no texts."""
    import pyarrow as pa

    t = texts.type
    if pa.types.is_string(t) or pa.types.is_binary(t):
        dtype: Any = np.int32
    elif pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        dtype = np.int64
    else:
        return None
    offsets = np.frombuffer(texts.buffers()[1], dtype=dtype)
    return np.diff(offsets[texts.offset : texts.offset + len(texts) + 1])


def check_cells(batch: Any, limits: Limits, start: int, file: str) -> None:
    """Refuse a batch of a series or arrays file (from row ``start`` + 1) with a text or
    binary cell longer than ``limits.max_cell_bytes``, naming the row and column, before
    its cells become Python objects."""
    import pyarrow as pa

    bound = limits.max_cell_bytes
    for name, col in zip(batch.schema.names, batch.columns, strict=True):
        dictionary = pa.types.is_dictionary(col.type)
        lengths = _lengths(col.dictionary if dictionary else col)
        if lengths is None or not lengths.size or int(lengths.max()) <= bound:
            continue
        if dictionary:  # which row uses a long entry, without spelling the rows out
            indices = np.nan_to_num(col.indices.to_numpy(zero_copy_only=False))  # nulls: 0
            lengths = (
                np.where(
                    col.is_null().to_numpy(zero_copy_only=False),
                    0,
                    lengths[indices.astype(np.int64)],
                )
                if col.null_count
                else lengths[indices.astype(np.int64)]
            )
        at = int(np.argmax(lengths > bound))
        if lengths[at] > bound:
            raise limits.too_long(
                f"{file} row {start + at + 1}, column `{name}`: the cell",
                int(lengths[at]),
                table=file,
                unread=False,
            )
