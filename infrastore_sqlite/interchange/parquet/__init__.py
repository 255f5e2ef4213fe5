"""The Parquet container of the interchange layout (needs the optional pyarrow).

* :mod:`.layout` — file names, Arrow schemas, footer keys, writer settings;
* :mod:`.export` — :func:`export_parquet`;
* :mod:`.reader` — :func:`import_parquet`: finds the partitions, reads their files for the
  import core (:mod:`infrastore_sqlite.interchange.importing`);
* :mod:`.arrow` — ``to_arrow`` / ``from_arrow``.
"""

from __future__ import annotations

from .export import export_parquet
from .reader import import_parquet

__all__ = ["export_parquet", "import_parquet"]
