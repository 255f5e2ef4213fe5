"""infrastore-sqlite: a content-addressed time-series store, exchanged as one SQLite file.

Switching from the reference implementation is one import::

    import infrastore_sqlite as infrastore

The interchange functions are ``Store.export_sqlite`` / ``Store.import_sqlite`` (as in the
reference) and, as plain functions taking the store first, ``infrastore_sqlite.export_sqlite``
and ``infrastore_sqlite.import_sqlite``; ``infrastore_sqlite.rehash_sqlite`` recomputes the
hashes of an interchange file whose values were edited, ``infrastore_sqlite.diff_sqlite``
says what importing one would change and ``infrastore_sqlite.unshare_sqlite`` copies a
shared values group for the series about to be edited.

The package is layered; each layer imports only those below it (docs/architecture.md)::

    cli/                      the command line (click lives only here)
    demo/                     the demo store and its data
    interchange/, textfiles/  the interchange (layout, plan, pipeline; interchange/sqlite/ the
                              container) and the per-series text files (CSV in, CSV/JSON out)
    store/                    Store, catalog and migrations, array files, rows
    model/                    the series classes, their Arrow form and slicing
    core/                     periods, timeref, elements, hashing
    errors                    the one exception hierarchy
"""

from __future__ import annotations

from ._version import __version__ as __version__
from .core.elements import decode_element_values, encode_element_values
from .errors import (
    CatalogMigrationRequiredError,
    CatalogTooNewError,
    ConnectionError,
    DuplicateTimeSeriesError,
    IncompatibleFormatError,
    IntegrityError,
    InvalidParameterError,
    IoError,
    MismatchedArtifactError,
    NotFoundError,
    OwnerMismatchError,
    ParameterTypeError,
    ReadOnlyStoreError,
    StorageError,
    StoreBusyError,
    StoreExistsError,
    TimeSeriesError,
)

# Loaded up front (not at the first Store.export_sqlite call) so the first export or import
# does not pay for compiling the container.
from .interchange.sqlite import (
    diff_sqlite,
    export_sqlite,
    import_sqlite,
    rehash_sqlite,
    unshare_sqlite,
)
from .model import (
    Deterministic,
    NonSequentialTimeSeries,
    OwnerCategory,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
    TimeSeriesType,
)
from .store import Store
from .store.api import Transaction
from .store.readers import ForecastReader, StaticReader
from .store.tracing import init_tracing

__all__ = [
    "CatalogMigrationRequiredError",
    "CatalogTooNewError",
    "ConnectionError",
    "Deterministic",
    "DuplicateTimeSeriesError",
    "ForecastReader",
    "IncompatibleFormatError",
    "IntegrityError",
    "InvalidParameterError",
    "IoError",
    "MismatchedArtifactError",
    "NonSequentialTimeSeries",
    "NotFoundError",
    "OwnerCategory",
    "OwnerMismatchError",
    "ParameterTypeError",
    "PersistentTimeSeries",
    "Probabilistic",
    "ReadOnlyStoreError",
    "Scenarios",
    "SingleTimeSeries",
    "StaticReader",
    "StorageError",
    "Store",
    "StoreBusyError",
    "StoreExistsError",
    "TimeSeriesError",
    "TimeSeriesType",
    "Transaction",
    "decode_element_values",
    "diff_sqlite",
    "encode_element_values",
    "export_sqlite",
    "import_sqlite",
    "init_tracing",
    "rehash_sqlite",
    "unshare_sqlite",
]
