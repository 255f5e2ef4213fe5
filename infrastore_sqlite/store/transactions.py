"""Write transactions and the segments they seal, merge and rewrite.

:class:`Transactions` is the store's collaborator for all-or-nothing writes: the block
``Store.transaction()`` enters (the catalog's write lock, one new segment per outermost
block, sealed and fsynced before the catalog commits, discarded on failure), the
``begin_transaction`` / ``commit_transaction`` / ``rollback_transaction`` calls, and what
follows a commit: deleting the segments a merge emptied and merging tiers of small
segments (:meth:`Transactions.rewrite`, which ``compact`` also uses). See
docs/durability.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import DamagedStoreError, InvalidParameterError, TimeSeriesError, damage_terms
from . import journal
from .damage import ArraysDamaged, damage_error, pool_shape, read_group
from .segments import merge_candidates
from .tracing import LOG

if TYPE_CHECKING:
    from .state import StoreState

# Arrays copied per read/write step when segments are merged or compacted.
_REWRITE_STEP = 1024


class _Rollback(Exception):
    """Raised into a transaction context to roll it back on request."""


class Transactions:
    """The store's write transactions and segment merges (see the module docstring)."""

    __slots__ = ("_doomed", "_merging", "_open_tx", "_state")

    def __init__(self, state: StoreState) -> None:
        self._state = state
        self._open_tx: list[Any] = []  # what begin_transaction entered, innermost last
        self._doomed: list[str] = []  # segments to delete once the running commit is durable
        self._merging = False

    @contextlib.contextmanager
    def block(self, *, sweep: bool = True) -> Iterator[None]:
        """The block :meth:`Store.transaction` enters.

        The outermost block holds the catalog's write lock from its start (a second
        writer waits up to the store's timeout). Its new arrays go into one new segment,
        sealed (complete and fsynced) before the catalog commits; if anything fails, the
        catalog rolls back and the segment is deleted (see ``Segments.discard``).

        ``sweep=False`` leaves ``segments/`` as it is at the start (``repair`` decides
        about unnamed files itself, after it has decided everything else).
        """
        self._state.check_writable()
        outer = self._state.catalog.depth == 0
        try:
            with self._state.catalog.transaction():
                if outer:
                    self._doomed = []
                    if sweep:
                        named = self.segment_names()
                        self._refuse_stale(named)
                        # Holding the write lock, no other writer is between marking a
                        # segment pending and committing it: a marked file the committed
                        # catalog does not name is a failed write's; any other unnamed
                        # file is set aside (Segments.sweep), never deleted.
                        self._state.segments.sweep(named)
                    # The record this transaction leaves in its segment (journal.py).
                    journal.begin(self._state)
                yield
                if outer:
                    journal.record(self._state)
                    self._seal()
        except BaseException:
            if outer:
                self._state.segments.discard()
                # Still named by the catalog: their pending marks go at once, so no
                # older catalog restored later could make them look like leftovers.
                self._state.segments.unmark(self._doomed)
                self._doomed = []
            raise
        if outer:
            LOG.info("committed a write to the store %s", self._state.path)
            self._state.segments.committed()
            # Only what this committed transaction superseded (rewrite() fills it):
            # named by the catalog, every live array copied out checked, its row deleted.
            doomed, self._doomed = self._doomed, []
            self._state.segments.drop_superseded(doomed)
            self.merge_small_segments()

    def _refuse_stale(self, named: set[str]) -> None:
        """Refuse a write on a stale catalog (journal.newer_unnamed): it would give ids
        the segments' records already gave, and a rebuild could not tell them apart."""
        newer = journal.newer_unnamed(self._state, named)
        if newer:
            n = len(newer)
            raise DamagedStoreError(
                f"the catalog {self._state.catalog.path} is stale: the segments record "
                f"{n} transaction{'s' * (n != 1)} it does not know (an older copy "
                "restored, or a lost -wal); nothing was written. Run {repair}, which "
                "rebuilds it from them, then write again",
                key=self._state.catalog.path,
                terms=damage_terms(str(self._state.path)),
            )

    def segment_names(self) -> set[str]:
        """The segment files the catalog names."""
        return {r[0] for r in self._state.catalog.execute("SELECT name FROM segments")}

    def _seal(self) -> None:
        """Make this transaction's segment durable and name it in the catalog."""
        sealed = self._state.segments.seal()
        if sealed is not None:
            name, nbytes, slots, pools = sealed
            LOG.debug("sealed segment %s: %d arrays, %d bytes, fsynced", name, slots, nbytes)
            self._state.catalog.execute(
                "INSERT INTO segments (name, bytes, slots, pools) VALUES (?, ?, ?, ?)",
                (name, nbytes, slots, orjson.dumps(pools).decode()),
            )

    def merge_small_segments(self) -> None:
        """Merge a tier of small segments after a commit (see ``segments.merge_candidates``).

        The write it follows is committed already; a merge that fails (disk full) leaves
        the segments as they were, so its error is not the caller's.
        """
        if self._merging:
            return
        self._merging = True
        try:
            for _ in range(4):  # a merge can fill the next tier; bounded, the rest waits
                names = merge_candidates(
                    self._state.catalog.execute("SELECT name, bytes FROM segments").fetchall()
                )
                if not names:
                    return
                try:
                    self.rewrite(names)
                except TimeSeriesError:
                    return
        finally:
            self._merging = False

    def rewrite(self, names: Sequence[str]) -> dict[str, int]:
        """Copy the live arrays of segments ``names`` into one new segment, in one
        transaction; the old files are deleted after its commit."""
        cat = self._state.catalog
        with self.block():
            marks = ", ".join("?" * len(names))
            before = cat.execute(
                f"SELECT COALESCE(sum(slots), 0), COALESCE(sum(bytes), 0) FROM segments "
                f"WHERE name IN ({marks})",
                list(names),
            ).fetchone()
            pools_before = set()
            for (text,) in cat.execute(
                f"SELECT pools FROM segments WHERE name IN ({marks})", list(names)
            ):
                pools_before.update(orjson.loads(text))
            moved = 0
            pools_after: set[str] = set()
            target = None
            for segment in names:
                while True:
                    # Rows leave the old segment as they are moved, so each step reads the
                    # next ones; memory is bounded by the step, not by the store.
                    part = cat.execute(
                        "SELECT hash, kind, dtype, shape, pool, slot FROM arrays "
                        "WHERE segment = ? ORDER BY pool, slot LIMIT ?",
                        (segment, _REWRITE_STEP),
                    ).fetchall()
                    if not part:
                        break
                    by_pool: dict[str, list[tuple]] = {}
                    for r in part:
                        by_pool.setdefault(r[4], []).append(r)
                    updates = []
                    for pool, group in by_pool.items():
                        # Checked like every read: a merge must not copy damaged bytes
                        # into a new segment under fresh checksums (it fails instead,
                        # naming the damage; repair sets it aside).
                        arrays = self._read_checked(segment, pool, group)
                        dtype, shape = group[0][2], pool_shape(group[0][3], arrays)
                        target, first = self._state.segments.write(
                            pool, dtype, shape, arrays, [(bytes(g[0]), g[1]) for g in group]
                        )
                        updates.extend((target, first + i, g[0], g[1]) for i, g in enumerate(group))
                        pools_after.add(pool)
                    cat.executemany(
                        "UPDATE arrays SET segment = ?, slot = ? WHERE hash = ? AND kind = ?",
                        updates,
                    )
                    moved += len(updates)
            journal.carry(self._state, names)  # the records outlive the files
            cat.execute(f"DELETE FROM segments WHERE name IN ({marks})", list(names))
            # Marked before the commit: should a kill come between the commit and their
            # deletion, the next writer deletes them as this store's own leftovers.
            self._state.segments.mark_superseded(names)
            self._doomed.extend(names)
        after = cat.scalar("SELECT bytes FROM segments WHERE name = ?", (target,)) if target else 0
        return {
            "slots_reclaimed": int(before[0]) - moved,
            "datasets_dropped": len(pools_before) - len(pools_after),
            "bytes_reclaimed": max(0, int(before[1]) - int(after or 0)),
        }

    def _read_checked(self, segment: str, pool: str, group: list[tuple]) -> list:
        """The arrays of ``group`` (``arrays`` rows) in ``segment``'s ``pool``, checked."""
        keys = [(bytes(g[0]), g[1]) for g in group]
        try:
            return read_group(self._state.segments, segment, pool, [g[5] for g in group], keys)
        except ArraysDamaged as exc:
            raise damage_error(self._state, exc.found) from None

    def begin(self) -> None:
        """:meth:`Store.begin_transaction`: a block entered, left by :meth:`commit` or
        :meth:`rollback`."""
        cm = self.block()
        cm.__enter__()
        self._open_tx.append(cm)

    def commit(self) -> None:
        """:meth:`Store.commit_transaction`: the innermost begun block, committed."""
        if not self._open_tx:
            raise InvalidParameterError("commit_transaction without begin_transaction")
        self._open_tx.pop().__exit__(None, None, None)

    def rollback(self) -> None:
        """:meth:`Store.rollback_transaction`: the innermost begun block, rolled back."""
        if not self._open_tx:
            raise InvalidParameterError("rollback_transaction without begin_transaction")
        cm = self._open_tx.pop()
        with contextlib.suppress(_Rollback):
            cm.__exit__(_Rollback, _Rollback(), None)

    def abandon(self) -> None:
        """At close: every block begun and not ended, rolled back, innermost first.

        The reference drops such a transaction at close; ending its generator here, while
        the segments are still open, keeps its cleanup out of the garbage collector's hands
        (which would run it after close, on a store with nothing left to clean).
        """
        while self._open_tx:
            self.rollback()
