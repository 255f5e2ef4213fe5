"""The embedded store: the :class:`Store`, its catalog and migrations, the array files.

* :mod:`.store` — :class:`Store` (``create`` / ``open`` and everything they offer);
* :mod:`.catalog` — the SQLite catalog connection and the migrations lookup;
* :mod:`.arrays` — the HDF5 array files;
* :mod:`.api` — the store members beyond adding, reading and removing (queries,
  attributes, :class:`~.api.Transaction`), a base class of :class:`Store`;
* :mod:`.readers` — :class:`~.readers.StaticReader` / :class:`~.readers.ForecastReader`,
  one timestep (or window) of many series per call;
* :mod:`.rows` — catalog rows (:class:`~.rows.SeriesRow`) and the selection filters.

May import: :mod:`infrastore_sqlite.errors`, :mod:`infrastore_sqlite.core`,
:mod:`infrastore_sqlite.model`. Not the interchange layer, with one exception that is a
call, not an import: ``Store.export_sqlite`` / ``Store.import_sqlite`` /
``Store.export_parquet`` (the reference's API) load their container when they are called,
so nothing in this package depends on it when loaded (see docs/architecture.md).
"""

from .store import DEFAULT_TIMEOUT, Store, catalog_path

__all__ = ["DEFAULT_TIMEOUT", "Store", "catalog_path"]
