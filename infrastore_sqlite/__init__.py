"""infrastore-sqlite: a content-addressed time-series store, exchanged as one SQLite file.

Switching from the reference implementation is one import::

    import infrastore_sqlite as infrastore

The interchange functions are ``Store.export_sqlite`` / ``Store.import_sqlite`` (as in the
reference) and, as plain functions taking the store first,
``infrastore_sqlite.export_sqlite.export_sqlite`` and
``infrastore_sqlite.import_sqlite.import_sqlite``.
"""

from __future__ import annotations

# Loaded up front so the first export or import does not pay for compiling them.
from . import export_sqlite, import_sqlite  # noqa: F401
from .elements import decode_element_values, encode_element_values
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
    ReadOnlyStoreError,
    StorageError,
    StoreExistsError,
    TimeSeriesError,
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
from .store_api import Transaction

__version__ = "0.1.0"


__all__ = [
    "CatalogMigrationRequiredError",
    "CatalogTooNewError",
    "ConnectionError",
    "Deterministic",
    "DuplicateTimeSeriesError",
    "IncompatibleFormatError",
    "IntegrityError",
    "InvalidParameterError",
    "IoError",
    "MismatchedArtifactError",
    "NonSequentialTimeSeries",
    "NotFoundError",
    "OwnerCategory",
    "OwnerMismatchError",
    "PersistentTimeSeries",
    "Probabilistic",
    "ReadOnlyStoreError",
    "Scenarios",
    "SingleTimeSeries",
    "StorageError",
    "Store",
    "StoreExistsError",
    "TimeSeriesError",
    "TimeSeriesType",
    "Transaction",
    "decode_element_values",
    "encode_element_values",
]
