"""Import the Parquet form of the interchange layout back into a store: ``import_parquet``.

A partition is three files, ``<stem>.values.parquet``, ``.series.parquet`` and
``.arrays.parquet`` (``shared/spec/parquet-layout.md`` §7); a values file alone is a
foreign file (§8). :mod:`.discovery` finds the partitions at a path and checks their
footers; :mod:`.partition` reads an exported partition for the import core
(``interchange/importing.py``) and :mod:`.foreign` a foreign file; the core checks,
builds, hashes and files every series and words every row-level refusal.

The import is a merge join by ``array_id``: the arrays file is read whole (one row per
distinct array, ids and keys strictly ascending), the series file and the values file a
batch at a time, the values cut at the ``array_id`` boundaries; an array that spans
batches or row groups is stitched. Peak memory is the arrays and series rows plus one
batch (or one array, when it is longer), never a partition.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...store.conflicts import OnConflict
from ..importing import (
    Context,
    ImportReport,
    Options,
    Progress,
    run_import,
)
from .layout import (
    require_pyarrow,
)

if TYPE_CHECKING:
    from ...store import Store

from ..options import ImportOptions, import_options
from .discovery import Found, discover
from .foreign import ForeignReader
from .partition import PartitionReader

__all__ = ["Found", "discover", "import_parquet"]


# ------------------------------------------------------------------------------ entry point
def import_parquet(
    store: Store,
    path: str | os.PathLike[str],
    *,
    skip_checksum: bool = False,
    on_conflict: OnConflict = "error",
    overrides: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    per_partition: bool = False,
    diff: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    max_array_bytes: int | None = None,
    max_cell_bytes: int | None = None,
    options: ImportOptions | None = None,
) -> ImportReport:
    """Add every series of the Parquet files at ``path``.

    Parameters
    ----------
    store
        The store to add to.
    path
        A directory (every ``*.values/series/arrays.parquet`` directly inside, grouped
        by stem; other files are ignored and listed in a dry run's report), a file
        (``<stem>.values.parquet`` and its siblings; a ``.series``/``.arrays`` file names
        its partition) or a partition stem (``out/SingleTimeSeries.f64.utc``); local
        (a path or ``file://``) or in object storage (``s3://bucket/prefix``, ``gs://``,
        ``az://``, ``abfs://``), read with ranged requests, never downloaded whole. A
        directory an export left a manifest in (``_infrastore_manifest.json``) is
        checked against it first (a file missing or truncated is refused).
    skip_checksum
        Waive the comparison of each array with the arrays file's ``data_hash`` (after
        values were edited). The catalog always records the recomputed hash.
    on_conflict
        ``"error"``, ``"replace"`` or ``"ignore"``, as for ``import_sqlite``.
    overrides
        The inline flags, as for ``import_sqlite``: overrides (``owner_id``,
        ``owner_type``, ``owner_category``, ``name``, ``features``, ``time_reference``,
        the five descriptors) and assertions (``element_type``, ``element_shape``,
        ``resolution``, ``type``).
    dry_run
        Read and check everything, checksums included; write nothing and return an
        :class:`ImportReport`.
    progress
        Called as ``progress(done_rows, total_rows)`` while values are read.
    per_partition
        Commit one transaction per partition (the CLI) and return an
        :class:`ImportReport`; the exception of a failing partition carries the report
        as ``exc.report``.
    diff
        With ``dry_run``: each series entry also says what ``on_conflict="replace"``
        would change.
    storage_options
        For a URI: credentials, region, endpoint, … in the names Polars'
        ``storage_options`` takes (``aws_access_key_id``, ``aws_region``,
        ``aws_endpoint_url``, ``aws_allow_http``, ``google_service_account``,
        ``azure_storage_account_name``, …); what is not given comes from the environment
        (``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, …) or an AWS profile's files
        (``AWS_PROFILE`` or ``aws_profile``). Needs
        ``pip install 'infrastore-sqlite[cloud]'``.
    max_array_bytes
        The most one array (or one row group read whole) may take, at 8 bytes a row and
        column: a longer one is refused from the footer, before it is read (default 1
        GiB; see :mod:`infrastore_sqlite.interchange.importing.limits`).
    max_cell_bytes
        The most one cell may take (default 16 MiB).
    options
        All of the above but ``storage_options`` as one
        :class:`~infrastore_sqlite.interchange.options.ImportOptions`, instead of those
        keywords; giving both is refused.

    Returns
    -------
    ImportReport
        Whatever the flags, a list of the ids committed in read order (partitions by
        stem, series by ``(key, id)`` within one; empty for ``dry_run``) with the report
        beside it, as for ``import_sqlite``; it also lists the
        DeterministicSingleTimeSeries partitions set aside (``set_aside``) and the files
        of a directory it ignored (``ignored``).

    Raises
    ------
    MissingDependencyError
        pyarrow is not installed.
    InvalidParameterError
        Anything the files or the arguments get wrong; each message names the file, the
        partition and, where there is one, the array key or series. Nothing is added
        (per partition: nothing of the failing partition).
    DuplicateTimeSeriesError
        A series the store already holds, or two rows with one identity.
    """
    pa, pq = require_pyarrow()
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
    opts = Options.parse(given.overrides, flag="--parquet")
    dry_run, progress = given.dry_run, given.progress
    if dry_run:
        store.check_open()
    else:
        store.check_writable()
    found = discover(path, storage_options)
    readers = [
        ForeignReader(pa, pq, p, found.where, opts)
        if p.foreign
        else PartitionReader(pa, pq, p, found.where)
        for p in found.partitions
    ]
    for reader in readers:
        reader.limits = limits
    for reader, after in itertools.pairwise(readers):
        reader.successor = after
    total = sum(r.values_count() for r in readers)
    ctx = Context(store, opts, given.skip_checksum, progress, total)
    ctx.on_conflict = given.on_conflict
    ctx.diff = given.diff
    ctx.report = given.detail or given.diff  # per-series entries, or counts only
    report = ImportReport(found.where, "", dry_run)
    report.set_aside = found.set_aside
    report.ignored = found.ignored
    report.changed = found.changed
    return run_import(ctx, readers, report, dry_run=dry_run, per_partition=given.per_partition)
