"""What importing Parquet files would do to a store, written nowhere.

:func:`diff_parquet` reads the files exactly as ``import_parquet(..., dry_run=True)`` does
and compares every series with the stored one of the same identity, as
:func:`~infrastore_sqlite.interchange.sqlite.diff.diff_sqlite` does for a database (the
entries are the same, :data:`~infrastore_sqlite.interchange.importing.filing.DIFF_KEYS`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..importing.filing import diff_entries
from ..options import ImportOptions, import_options
from .reader import import_parquet

if TYPE_CHECKING:
    from ...store import Store

__all__ = ["diff_parquet", "diff_parquet_report"]


def diff_parquet(
    store: Store,
    path: str | os.PathLike[str],
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    max_array_bytes: int | None = None,
    max_cell_bytes: int | None = None,
    options: ImportOptions | None = None,
) -> list[dict[str, Any]]:
    """Compare every series of the Parquet files at ``path`` with the store; write nothing.

    Parameters
    ----------
    store
        The store the files would be imported into (read-only is fine).
    path
        A directory, a file or a partition stem, local or a URI, as for ``import_parquet``.
    overrides
        As for ``import_parquet``: the series are compared as the import would file them.
    progress
        Called as ``progress(done_rows, total_rows)``.
    storage_options
        As for ``import_parquet``, when ``path`` is an object-storage URI.
    max_array_bytes, max_cell_bytes
        The store's bounds, as for ``import_parquet``.
    options
        ``overrides``, ``progress`` and the bounds as one
        :class:`~infrastore_sqlite.interchange.options.ImportOptions`, as for
        ``diff_sqlite``, instead of those keywords.

    Returns
    -------
    list of dict
        One per series row, in import order, as ``diff_sqlite`` gives them
        (``values_table`` holds the values file; ``hash_stale`` means ``rehash_parquet``
        of its directory is needed before the import).

    Raises
    ------
    InvalidParameterError
        What the import would refuse in the files (the checksum aside).
    """
    return diff_parquet_report(
        store,
        path,
        overrides=overrides,
        progress=progress,
        storage_options=storage_options,
        max_array_bytes=max_array_bytes,
        max_cell_bytes=max_cell_bytes,
        options=options,
    )[0]


def diff_parquet_report(
    store: Store,
    path: str | os.PathLike[str],
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    max_array_bytes: int | None = None,
    max_cell_bytes: int | None = None,
    options: ImportOptions | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """:func:`diff_parquet`'s entries, and the files changed since the export: those whose
    size is not the one the export's manifest lists but whose footer reads (edits)."""
    given = import_options(
        options,
        overrides=overrides,
        progress=progress,
        max_array_bytes=max_array_bytes,
        max_cell_bytes=max_cell_bytes,
    )
    report = import_parquet(store, path, storage_options=storage_options, options=given.for_diff())
    return diff_entries(report.partitions), list(report.changed)
