"""The import core: values groups in numpy columns → checked series → the store.

Container-independent: it knows the interchange layout (partitions of values, series and
arrays rows, the array key ``(data_hash, time_axis)``) but no file format and no SQL. A
container's reader (``interchange/sqlite/reader.py``; a Parquet reader the same way) is a
:class:`PartitionSource` per partition: it names where the rows are (a :class:`Place`),
hands over the arrays and series rows as tuples, and yields each values group as a
:class:`Group` of numpy columns, in key order. This package does the rest, and words
every refusal, with the container's word for the place:

* :mod:`.limits` — the store's bounds on what a file may make a reader hold
  (:class:`~.limits.Limits`: ``max_array_bytes``, ``max_cell_bytes``), which every
  container's reader checks before it reads;
* :mod:`.options` — the inline flags (:class:`Options`) and what an import carries
  across partitions (:class:`Context`);
* :mod:`.places` — :class:`Place`, :class:`Group`, the :class:`PartitionSource`
  protocol, and the refusals of what a container finds when it discovers partitions;
* :mod:`.keys` — a partition's arrays held as columns (:class:`ArrayKeys`);
* :mod:`.specs` — series rows → :class:`Spec` (cells checked, overrides applied,
  assertions compared): :class:`SeriesRows`, :func:`read_rows`;
* :mod:`.building` — a group placed by its coordinates on the grid its series row
  declares, the lane and element checks, the re-encoding into the store's array and the
  checksum: :func:`build_group`;
* :mod:`.batches` — filing the series into the store, batched, or checking them in a dry
  run: :class:`Filing` (the one place where what happens to a series the store already
  holds is decided, with the store's ``insert_all``); :mod:`.filing` — what filing a
  series would change, for a dry run and ``diff`` (:func:`compare`, the diff entries);
* :mod:`.run` and :mod:`.report` — the partition loop and the report:
  :func:`import_partition`, :func:`run_import`, :class:`ImportReport`.

A reader may vouch for what it already checked: a group whose ``affine`` is set has rows
that are exactly that grid in row order (the SQLite reader verifies it inside SQLite), and
the core then skips placing them.

This module only re-exports what the containers and the tests import from the core.
Its modules are the import core's helpers, private to this package as a whole (marked
here, not by underscores on the names they share with each other). The package may import
:mod:`infrastore_sqlite.interchange.layout`, :mod:`infrastore_sqlite.store.conflicts`
and the layers below ``interchange`` (the store only as the type it files into and for
its row helpers); never a container.
"""

from __future__ import annotations

from .batches import Filing
from .batches import Settle as Settle
from .batches import series_object as series_object
from .building import Built, build_grids, build_group, hash_built
from .building import build_one as build_one
from .keys import ArrayKeys
from .options import ASSERTION_KEYS, OVERRIDE_KEYS, REFUSED_KEYS, Context, Options, Progress
from .places import (
    TEXT_HINT,
    Group,
    PartitionSource,
    Place,
    bad_value,
    check_columns_present,
    derived_refused,
    fmt_ms,
    key_text,
    missing_sibling,
    no_partitions,
    stray_values_row,
)
from .report import ImportReport
from .run import import_partition, run_import
from .specs import SeriesRows, Spec, first_specs, read_rows, rows_as_batches

__all__ = [
    "ASSERTION_KEYS",
    "OVERRIDE_KEYS",
    "REFUSED_KEYS",
    "TEXT_HINT",
    "ArrayKeys",
    "Built",
    "Context",
    "Filing",
    "Group",
    "ImportReport",
    "Options",
    "PartitionSource",
    "Place",
    "Progress",
    "SeriesRows",
    "Spec",
    "bad_value",
    "build_grids",
    "build_group",
    "check_columns_present",
    "derived_refused",
    "first_specs",
    "fmt_ms",
    "hash_built",
    "import_partition",
    "key_text",
    "missing_sibling",
    "no_partitions",
    "read_rows",
    "rows_as_batches",
    "run_import",
    "stray_values_row",
]
