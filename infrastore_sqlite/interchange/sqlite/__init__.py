"""The SQLite container of the interchange layout.

* :mod:`.writer` — :func:`export_sqlite` (plan → rows → tables);
* :mod:`.reader` — :func:`import_sqlite`: finds the partitions, reads their rows and
  values groups for the import core (:mod:`infrastore_sqlite.interchange.importing`); a
  package: ``tables`` (partitions, tables, rows), ``lookup`` (where a group's rows are),
  ``group`` (one group: the in-SQL grid check or the general read), ``source`` (the
  groups in key order, runs of short arrays), ``decoding``;
* :mod:`.schema` — table DDL, the views, the layout as data (``schemas/interchange.json``);
* :mod:`.cells` — encoding values to SQLite cells and back; a package: ``dtypes``,
  ``encode``, ``percell`` (what is accepted), ``fast`` (whole-array decoding);
* :mod:`.database` — opening the file, write transactions, apsw errors wrapped;
* :mod:`.rehash` — :func:`rehash_sqlite`, recomputing the hashes of edited values;
* :mod:`.diff` — :func:`diff_sqlite`, what importing a file would change in a store;
* :mod:`.unshare` — :func:`unshare_sqlite`, a shared values group copied for chosen series.

Layer: imports ``interchange`` and below, no other container (``tests/test_layers.py``).
"""

from .diff import diff_sqlite
from .reader import ImportReport, import_sqlite
from .rehash import rehash_sqlite
from .unshare import unshare_sqlite
from .writer import export_sqlite

__all__ = [
    "ImportReport",
    "diff_sqlite",
    "export_sqlite",
    "import_sqlite",
    "rehash_sqlite",
    "unshare_sqlite",
]
