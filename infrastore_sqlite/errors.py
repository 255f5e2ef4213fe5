"""One exception hierarchy for the whole package.

The class names are the reference implementation's (``infrastore`` 0.15.1), so code
written against it catches the same names here. Every error carries structured fields
(``series``, ``table``, ``key``, ``hint``) besides its message, so a caller (the CLI,
a test) can tell *what* was refused without parsing text.
"""

from __future__ import annotations

from typing import Any


class TimeSeriesError(Exception):
    """Root of every error this package raises on purpose.

    Parameters
    ----------
    message
        What is wrong and, where there is one, what to do about it.
    series
        The series concerned, as a short human label (``'load' (owner 1)``) or a list.
    table
        The SQL table concerned, for interchange errors.
    key
        The array key concerned (``data_hash``, ``time_axis``), for interchange errors.
    hint
        What to do, when not already part of ``message``.
    """

    def __init__(
        self,
        message: str,
        *,
        series: Any = None,
        table: str | None = None,
        key: Any = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.series = series
        self.table = table
        self.key = key
        self.hint = hint

    def __str__(self) -> str:
        if self.hint and self.hint not in self.message:
            return f"{self.message} {self.hint}"
        return self.message


class InvalidParameterError(TimeSeriesError, ValueError):
    """An argument, a value or a file's content is not acceptable."""


class ParameterTypeError(InvalidParameterError, TypeError):
    """An argument of the wrong Python type (a str where an id goes): a ``TypeError``, as
    in the reference, and an ``InvalidParameterError`` for callers that catch those."""


class NotFoundError(TimeSeriesError, KeyError):
    """A series, an array or a file named by the caller does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return TimeSeriesError.__str__(self)


class DuplicateTimeSeriesError(TimeSeriesError):
    """A series with the same identity is already in the store (or twice in one batch)."""


class OwnerMismatchError(InvalidParameterError):
    """A call guarded by an owner named series that belong to another owner."""


class IntegrityError(TimeSeriesError):
    """Stored data disagrees with its recorded hash, or a catalog rule would be broken."""


class StorageError(TimeSeriesError):
    """The HDF5 or SQLite layer failed (I/O, corruption, not a database)."""


class StoreBusyError(StorageError):
    """Another process held the store's write lock for longer than the timeout."""


class MissingDependencyError(TimeSeriesError, ImportError):
    """An optional dependency a feature needs is not installed (the message names the
    ``pip install`` command)."""


class IoError(StorageError):
    """A file the call needs could not be read or written (missing, unreadable)."""


class ConnectionError(StorageError):
    """The catalog database could not be opened or reached."""


class ReadOnlyStoreError(TimeSeriesError):
    """A write was attempted on a store opened with ``read_only=True``."""


class StoreExistsError(TimeSeriesError):
    """``Store.create`` was pointed at a path that already holds a store."""


class IncompatibleFormatError(TimeSeriesError):
    """The store was written in a layout this build does not read."""


class CatalogTooNewError(IncompatibleFormatError):
    """The catalog was migrated by a newer build than this one."""


class CatalogMigrationRequiredError(IncompatibleFormatError):
    """The catalog is older than this build and was opened read-only."""


class MismatchedArtifactError(IncompatibleFormatError):
    """The HDF5 file and the catalog beside it do not belong together."""


__all__ = [
    "CatalogMigrationRequiredError",
    "CatalogTooNewError",
    "ConnectionError",
    "DuplicateTimeSeriesError",
    "IncompatibleFormatError",
    "IntegrityError",
    "InvalidParameterError",
    "IoError",
    "MismatchedArtifactError",
    "MissingDependencyError",
    "NotFoundError",
    "OwnerMismatchError",
    "ParameterTypeError",
    "ReadOnlyStoreError",
    "StorageError",
    "StoreBusyError",
    "StoreExistsError",
    "TimeSeriesError",
]
