"""Import the SQLite interchange layout back into a store: the SQLite reader.

A database holds partitions of three tables each (``<prefix><base>_values``, ``_series``
and ``_arrays``); see ``interchange/layout.py`` and the interchange description. This
package finds them and reads them for the import core (``interchange/importing.py``), which
does the checking, building, hashing and filing and words every refusal. The import is a
merge join keyed by the array key ``(data_hash, time_axis)``, never by the local ids or by
row order: the arrays table is read whole and walked in key order, and for each key its
values group is read as one object and handed to the core as numpy columns. Peak memory is
the arrays and series tables plus one group (and a bounded batch of pending writes), never
a partition.

Reading a group goes through the values table's ``array_id`` index to the group's rowid
span, then scans that span: a contiguous group (what every export writes) is one sequential
range, and for the common grids (a SingleTimeSeries or Deterministic on a fixed period) the
coordinates are verified inside SQLite in the same pass that fetches the values, so only
the value column ever crosses into Python and the group reaches the core vouched for
(``Group.affine``). Anything the fast path cannot vouch for (an edited, re-sorted or
damaged group) is read column by column, and the core places it by its coordinates.

What is SQLite's own is checked here, with the core's wording: cells of the wrong storage
class (timestamps that are not whole milliseconds, text where a number belongs), NULLs
outside ``value``, values rows of no array, missing tables and columns.

The reader of one partition is four objects, one module each, each built from the ones
it uses (:meth:`.source.PartitionReader.of` composes them):

* :mod:`.tables` — :func:`discover` (the partitions under a prefix), and
  :class:`PartitionTables`: the partition's quoted table names and columns, its arrays
  and series rows, its errors wrapped (``reading``);
* :mod:`.lookup` — :class:`ValuesLookup` (from the tables): how a group's rows are found
  (the ``array_id`` index, or one built in TEMP; each array's rowid span and first row)
  and the refusal of values rows of no array;
* :mod:`.group` — :class:`GroupReader` (from the tables and the lookup): one values
  group, by the fused read that checks a fixed grid inside SQLite or the general read
  column by column, and the refusal of an oversized cell;
* :mod:`.source` — :class:`PartitionReader` (from all three; the :class:`PartitionSource`
  the core reads): the groups in key order, consecutive short arrays read a run at a
  time by one statement;
* :mod:`.decoding` — one group's value cells to numpy (over :mod:`..cells`).

This module holds the entry point, :func:`import_sqlite`, and re-exports the names the
rest of the container imports from here.

Layer: imports ``interchange`` and below, no other container (``tests/test_layers.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from infrastore_sqlite.errors import StorageError
from infrastore_sqlite.interchange.importing import (
    Context,
    ImportReport,
    Options,
    Progress,
    run_import,
)
from infrastore_sqlite.interchange.layout import validate_prefix
from infrastore_sqlite.interchange.options import ImportOptions, import_options
from infrastore_sqlite.store.conflicts import OnConflict

from ..database import open_database
from .source import PartitionReader
from .tables import discover

if TYPE_CHECKING:
    from infrastore_sqlite.store import Store

__all__ = ["ImportReport", "PartitionReader", "discover", "import_sqlite"]


# ------------------------------------------------------------------------------ entry point
def import_sqlite(
    store: Store,
    path: str | Path,
    *,
    table_prefix: str = "",
    skip_checksum: bool = False,
    dry_run: bool = False,
    overrides: Mapping[str, Any] | None = None,
    per_partition: bool = False,
    on_conflict: OnConflict = "error",
    progress: Progress | None = None,
    diff: bool = False,
    max_array_bytes: int | None = None,
    max_cell_bytes: int | None = None,
    options: ImportOptions | None = None,
) -> ImportReport:
    """Add every series an interchange database holds under ``table_prefix``.

    Parameters
    ----------
    store
        The store to add to.
    path
        The SQLite database (as ``export_sqlite`` wrote it, possibly edited since).
    table_prefix
        The prefix the export used; ``""`` for none.
    skip_checksum
        Waive the comparison of each array with its recorded ``data_hash`` (after values
        were edited in place). The catalog always records the recomputed hash.
    dry_run
        Read and check everything, checksums included, and write nothing; returns an
        :class:`ImportReport` with the series each partition would add.
    overrides
        The CLI's inline flags. Overrides replace a column for every series
        (``owner_id``, ``owner_type``, ``owner_category``, ``name``, ``features`` as a
        dict, ``time_reference``, and the five descriptors, where ``""`` clears one);
        assertions (``element_type``, ``element_shape``, ``resolution``, ``type``) must
        agree with the file.
    per_partition
        Commit one transaction per partition (the CLI) and return an
        :class:`ImportReport`; a failing partition leaves those before it committed, and
        the exception it raises carries the report as ``exc.report`` (any exception,
        KeyboardInterrupt included: the CLI's Ctrl-C line names the committed partitions).
    on_conflict
        What to do with a series whose identity (owner id and category, type, name,
        resolution, interval, features) the store already holds: ``"error"`` (the
        default) refuses; ``"replace"`` updates it in place from the file (it keeps its
        catalog id; an identical one is left untouched and reported ``unchanged``);
        ``"ignore"`` leaves it as it is (``skipped``), which is how an interrupted import
        is resumed.
    progress
        Called as ``progress(done_rows, total_rows)`` while values are read.
    diff
        With ``dry_run``: each series entry also says what importing it with
        ``on_conflict="replace"`` would change (see :func:`diff_sqlite`).
    max_array_bytes
        The most one array may take while it is read (8 bytes a row and column): a
        longer one is refused before it is read (default 1 GiB; see
        :mod:`infrastore_sqlite.interchange.importing.limits`).
    max_cell_bytes
        The most one cell (text or blob) may take: a longer one is refused before it is
        read (default 16 MiB).
    options
        All of the above but ``table_prefix`` as one
        :class:`~infrastore_sqlite.interchange.options.ImportOptions` (what the command
        line passes), instead of those keywords; giving both is refused.

    Returns
    -------
    ImportReport
        Whatever the flags, a list of the ids committed in read order (partitions in
        binary order of their values table, series by ``(data_hash, time_axis, id)``
        within one; empty for ``dry_run``), which is what the reference returns, with the
        report beside it: its partitions count the series ``added``, ``replaced``,
        ``unchanged`` and ``skipped`` (the per-series entries are gathered for
        ``dry_run``, ``per_partition`` or an ``on_conflict`` other than ``"error"``).

    Raises
    ------
    InvalidParameterError
        Anything the file or the arguments get wrong; each message names the table, the
        series or array, and the row. Nothing is added (per partition: nothing of the
        failing partition).
    DuplicateTimeSeriesError
        A series the store already holds, or two rows of the file with one identity.
    ReadOnlyStoreError
        The store is read-only (a dry run is allowed).
    """
    validate_prefix(table_prefix)
    given = import_options(
        options,
        skip_checksum=skip_checksum,
        on_conflict=on_conflict,
        overrides=overrides,
        dry_run=dry_run,
        per_partition=per_partition,
        diff=diff,
        progress=progress,
        max_array_bytes=max_array_bytes,
        max_cell_bytes=max_cell_bytes,
    )
    limits = given.limits
    opts = Options.parse(given.overrides)
    dry_run, progress = given.dry_run, given.progress
    if dry_run:
        store.check_open()
    else:
        store.check_writable()
    where = str(path)
    conn = open_database(path, read_only=True)
    try:
        try:
            conn.execute("BEGIN")  # one consistent snapshot of the file
            parts = discover(conn, table_prefix, where)
            readers = [PartitionReader.of(conn, t, where, limits) for t in parts]
            total = sum(r.values_count() for r in readers)
        except apsw.Error as exc:
            raise StorageError(f"reading {where} failed: {exc}") from exc
        ctx = Context(store, opts, given.skip_checksum, progress, total)
        ctx.on_conflict = given.on_conflict
        ctx.diff = given.diff
        ctx.report = given.detail or given.diff  # per-series entries, or counts only
        report = ImportReport(where, table_prefix, dry_run)
        return run_import(ctx, readers, report, dry_run=dry_run, per_partition=given.per_partition)
    finally:
        with contextlib.suppress(apsw.Error):
            conn.close()
