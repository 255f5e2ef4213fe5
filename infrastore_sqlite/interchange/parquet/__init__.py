"""The Parquet container of the interchange layout (needs the optional pyarrow).

* :mod:`.layout` — file names, Arrow schemas, footer keys, writer settings;
* :mod:`.export` — :func:`export_parquet`;
* :mod:`.reader` — :func:`import_parquet`, over :mod:`.discovery` (the partitions at a
  path, their footers checked), :mod:`.partition` (an exported partition read for the
  import core, :mod:`infrastore_sqlite.interchange.importing`), :mod:`.foreign` (a values
  file alone) and :mod:`.columns` (Arrow columns as numpy);
* :mod:`.rehash` — :func:`rehash_parquet`, recomputing the hashes of edited values;
* :mod:`.diff` — :func:`diff_parquet`, what importing the files would change in a store;
* :mod:`.arrow` — ``to_arrow`` / ``from_arrow``.
"""

from __future__ import annotations

from .diff import diff_parquet
from .export import export_parquet
from .reader import import_parquet
from .rehash import rehash_parquet

__all__ = ["diff_parquet", "export_parquet", "import_parquet", "rehash_parquet"]
