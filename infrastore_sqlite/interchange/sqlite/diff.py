"""What importing an interchange database would do to a store, written nowhere.

:func:`diff_sqlite` reads the file exactly as ``import_sqlite(..., dry_run=True)`` does and
compares every series with the stored one of the same identity: ``added`` (the store has
none), ``replaced`` (values, grid or descriptors differ; ``add --sqlite --replace`` would
update it in place) or ``unchanged``. The values are compared with the store's own, so
the file's recorded ``data_hash`` is not needed: a diff works before ``rehash``, and says
per series (``hash_stale``) whether the import would refuse the hash as it stands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..importing.filing import DIFF_KEYS, diff_entries, has_changes
from ..options import ImportOptions, import_options
from .reader import import_sqlite

if TYPE_CHECKING:
    from ...store import Store


def diff_sqlite(
    store: Store,
    path: str | Path,
    *,
    table_prefix: str = "",
    overrides: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    max_array_bytes: int | None = None,
    max_cell_bytes: int | None = None,
    options: ImportOptions | None = None,
) -> list[dict[str, Any]]:
    """Compare every series of an interchange database with the store; write nothing.

    Parameters
    ----------
    store
        The store the file would be imported into (read-only is fine).
    path
        The database (``export_sqlite`` wrote it, possibly edited since).
    table_prefix
        The prefix the export used.
    overrides
        As for ``import_sqlite``: the series are compared as the import would file them.
    progress
        Called as ``progress(done_rows, total_rows)``.
    max_array_bytes, max_cell_bytes
        The store's bounds, as for ``import_sqlite``.
    options
        ``overrides``, ``progress`` and the bounds as one
        :class:`~infrastore_sqlite.interchange.options.ImportOptions` (its other fields are
        the diff's own: :meth:`~.ImportOptions.for_diff`), instead of those keywords.

    Returns
    -------
    list of dict
        One per series row of the file, in import order, keys as ``DIFF_KEYS``:
        ``change`` (``added``, ``replaced``, ``unchanged``), ``id`` (the stored series',
        None when added), the owner, type and name, ``points`` (value rows that differ,
        matched by timestamp, issue time and lane; None when added), ``first_changed`` /
        ``last_changed`` (their earliest and latest timestamp), ``descriptors`` and
        ``grid`` (the names of the catalog columns that differ), ``values_table`` and
        ``file_id`` (where the file holds it), and ``hash_stale`` (True when the rows no
        longer hash to the recorded ``data_hash``: the import refuses them until
        ``rehash_sqlite``).

    Raises
    ------
    InvalidParameterError
        What the import would refuse in the file (the checksum aside).
    """
    given = import_options(
        options,
        overrides=overrides,
        progress=progress,
        max_array_bytes=max_array_bytes,
        max_cell_bytes=max_cell_bytes,
    )
    report = import_sqlite(store, path, table_prefix=table_prefix, options=given.for_diff())
    return diff_entries(report.partitions)


__all__ = ["DIFF_KEYS", "diff_sqlite", "has_changes"]
