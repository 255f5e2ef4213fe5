"""infrastore-sqlite: a content-addressed time-series store, exchanged as one SQLite file.

Switching from the reference implementation is one import::

    import infrastore_sqlite as infrastore
"""

from __future__ import annotations

# Load the two submodules now: importing a submodule later would rebind the package
# attributes ``export_sqlite`` / ``import_sqlite`` to the modules, hiding the functions below.
from . import export_sqlite as _export_module  # noqa: F401
from . import import_sqlite as _import_module  # noqa: F401
from .elements import decode_element_values, encode_element_values
from .errors import (
    CatalogMigrationRequiredError,
    CatalogTooNewError,
    DuplicateTimeSeriesError,
    IncompatibleFormatError,
    IntegrityError,
    InvalidParameterError,
    MismatchedArtifactError,
    NotFoundError,
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

__version__ = "0.1.0"


def export_sqlite(store: Store, path, **kwargs):
    """Export a store's selection to the SQLite interchange layout (see ``Store.export_sqlite``)."""
    return store.export_sqlite(path, **kwargs)


def import_sqlite(store: Store, path, **kwargs):
    """Import an interchange database into a store (see ``Store.import_sqlite``)."""
    return store.import_sqlite(path, **kwargs)


__all__ = [
    "CatalogMigrationRequiredError",
    "CatalogTooNewError",
    "Deterministic",
    "DuplicateTimeSeriesError",
    "IncompatibleFormatError",
    "IntegrityError",
    "InvalidParameterError",
    "MismatchedArtifactError",
    "NonSequentialTimeSeries",
    "NotFoundError",
    "OwnerCategory",
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
    "decode_element_values",
    "encode_element_values",
    "export_sqlite",
    "import_sqlite",
]
