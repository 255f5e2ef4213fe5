"""The embedded store: the :class:`Store`, its catalog and migrations, the array files.

* :mod:`.store` — :class:`Store` (``create`` / ``open`` and everything they offer), a
  facade whose work lives in the rooms below, one collaborator each; its constructor
  composes them around one :class:`~.state.StoreState` (:mod:`.state`: path, catalog,
  segments, read-only flag, the open and writable checks);
* :mod:`.lifecycle` — creating, opening (converting, migrating) and closing a store;
* :mod:`.transactions` — write transactions; sealing, merging, rewriting segments;
* :mod:`.prepare` — a series checked and prepared as a catalog row (no I/O);
* :mod:`.writing` — adds, replacements and removals: catalog rows and new arrays; the
  import's door ``Store.insert_all`` under :mod:`.conflicts` (what *the same series* is,
  ``error`` / ``replace`` / ``ignore``);
* :mod:`.reading` — where arrays are, batched reads, series objects from rows;
* :mod:`.queries` — catalog rows, metadata and counts;
* :mod:`.maintenance` — compact, transform, settings and size;
* :mod:`.damage` / :mod:`.repair` — every read checked against its hash; a damaged
  store diagnosed (``verify``) and repaired (damaged segments set aside);
* :mod:`.catalog` — the SQLite catalog connection and the migrations lookup;
* :mod:`.arrays` / :mod:`.segments` — the HDF5 array files and the segment directory;
  :mod:`.direct` — a finished segment's plain pools read straight from the file;
* :mod:`.api` — the store members built on the ones above (queries, attributes,
  :class:`~.api.Transaction`), a base class of :class:`Store`;
* :mod:`.readers` — :class:`~.readers.StaticReader` / :class:`~.readers.ForecastReader`,
  one timestep (or window) of many series per call;
* :mod:`.rows` — catalog rows (:class:`~.rows.SeriesRow`) and the selection filters.

Layer: imports ``model``, ``core`` and ``errors`` (``tests/test_layers.py`` checks it).
"""

from .store import DEFAULT_TIMEOUT, Store, catalog_path

__all__ = ["DEFAULT_TIMEOUT", "Store", "catalog_path"]
