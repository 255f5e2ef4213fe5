"""The state one open store shares between its rooms: where it is, its catalog, its
segments, whether it may write, and the two checks every operation starts with.

Each room (``transactions``, ``queries``, ``reading``, ``writing``, ``maintenance``) and
each function of ``journal``, ``damage``, ``repair``, ``catalog_copy`` and ``lifecycle``
receives this object, never the ``Store`` facade: the facade builds one
:class:`StoreState` and the rooms around it (``Store.__init__`` is the composition root).
Its fields are public and mutable on purpose: a repair swaps a copied or rebuilt catalog
(and reopened segments) in place, and every room sees the new ones on its next call,
because each reads ``state.catalog`` and ``state.segments`` when it needs them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidParameterError, ReadOnlyStoreError

if TYPE_CHECKING:
    from .catalog import Catalog
    from .segments import Segments


class StoreState:
    """One open store's shared state.

    Parameters
    ----------
    path
        The store directory.
    catalog
        The open catalog (replaced in place by a repair that copies or rebuilds it).
    segments
        The open segment files; ``None`` once the store is closed.
    read_only
        Refuse every write.
    scratch
        The private directory of an ``in_memory`` store (removed on close), else None.
    """

    # __weakref__: an in-memory store's scratch directory is removed when its state goes.
    __slots__ = ("__weakref__", "catalog", "path", "read_only", "scratch", "segments")

    def __init__(
        self,
        path: Path,
        catalog: Catalog,
        segments: Segments | None,
        *,
        read_only: bool,
        scratch: Path | None = None,
    ) -> None:
        self.path = path
        self.catalog = catalog
        self.segments: Segments | None = segments
        self.read_only = read_only
        self.scratch = scratch

    @property
    def closed(self) -> bool:
        """Whether the store has been closed."""
        return self.segments is None

    def open_segments(self) -> Segments:
        """The segments of the open store (InvalidParameterError once it is closed)."""
        if self.segments is None:
            raise InvalidParameterError("the store is closed")
        return self.segments

    def check_open(self) -> None:
        """Refuse any operation on a closed store."""
        if self.segments is None:
            raise InvalidParameterError("the store is closed")

    def check_writable(self) -> None:
        """Refuse a write to a read-only or closed store, naming what to do."""
        if self.read_only:
            raise ReadOnlyStoreError(
                f"the store {self.path} is open read-only; open it with read_only=False to write"
            )
        if self.segments is None:
            raise InvalidParameterError("the store is closed")
