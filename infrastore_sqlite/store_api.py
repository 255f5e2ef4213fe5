"""Store members beyond adding, reading and removing: the reference's query and
maintenance API for the time-series part, kept apart from the write path in ``store.py``.

``Store`` inherits :class:`StoreApi`; every member here is built on the store's own
entry points (``select_rows``, ``read_by_ids``, ``add_time_series_bulk``,
``remove_by_ids``, ``transaction``), never on HDF5 or the catalog's tables directly, so
the write path can change underneath without these changing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import Store


class Transaction:
    """What ``Store.transaction()`` returns: a context manager binding the store.

    ``with store.transaction() as s`` gives ``s is store``; the same object can be entered
    again (also nested inside itself), each entry an all-or-nothing block of its own, as in
    the reference.
    """

    __slots__ = ("_block", "_open", "_store")

    def __init__(self, store: Store, block: Callable[[], AbstractContextManager[None]]) -> None:
        self._store = store
        self._block = block
        self._open: list[AbstractContextManager[None]] = []

    def __enter__(self) -> Store:
        cm = self._block()
        cm.__enter__()
        self._open.append(cm)
        return self._store

    def __exit__(self, *exc: Any) -> bool | None:
        return self._open.pop().__exit__(*exc)

    def __repr__(self) -> str:
        return f"Transaction({self._store!r}, open={len(self._open)})"


class StoreApi:
    """The query and maintenance members ``Store`` inherits (see the module docstring)."""
