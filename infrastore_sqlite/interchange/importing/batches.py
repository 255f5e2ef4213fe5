"""Built groups settled and filed in batches: hashed, checked against their recorded
checksum, made catalog rows, and handed to the store (or, in a dry run, only checked
against it).

:class:`Filing` is the one place that decides what happens to a series whose identity the
store (or the file, earlier) already holds (the store's door, ``Store.insert_all``,
does the deciding under ``on_conflict``; :mod:`.filing` compares for a diff); :class:`Settle` gathers a partition's built
groups and settles them a batch at a time, in read order.
"""

from __future__ import annotations

from array import array
from typing import Any

from ...errors import NO_CHECKSUM, DuplicateTimeSeriesError, InvalidParameterError
from ...model import SERIES_CLASSES, AnySeries, TimeSeriesType
from ...store.conflicts import changed_columns, conflict_error, identity
from ...store.prepare import CatalogRow, Prepared, array_values, row_for, row_from_template
from .building import Built, hash_built
from .filing import compare
from .options import Context
from .places import PartitionSource, short_hash
from .report import PartitionResult
from .specs import Spec

# Pending writes are handed to the store in batches of about this many bytes. The store
# writes them in its background thread, so a small batch starts that work early and it
# overlaps the reading of the next groups.
_BATCH_BYTES = 4 * 1024 * 1024

# ... and of at most this many series: each pending one holds its catalog row and series
# object (a few KB), so this bounds what a partition of many short arrays holds at once
# (2,048 rather than 4,096: ~5 MB less peak RSS importing 20,000 small series; the
# speed difference was within the noise of fresh-process runs).
_BATCH_SERIES = 2048

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


class Filing:
    """Where a partition's built series go: into the store in batches, or (a dry run)
    only checked against it.

    The one place that decides what happens to a series whose identity the store (or the
    file, earlier) already holds, under the import's ``on_conflict``
    (``Store.insert_all``: refuse, replace in place, or skip); each
    series' outcome (``added``, ``replaced``, ``unchanged``, ``skipped``) goes to the
    partition's result.
    """

    def __init__(self, ctx: Context, result: PartitionResult, *, write: bool) -> None:
        self.ctx = ctx
        self.result = result
        self.write = write
        #: The catalog ids filed, as an int64 column while the partition is read (a
        #: Python int each would be held beside the partition's columns to its end).
        self.ids = array("q")
        self._pending: list[Prepared] = []
        self._pending_bytes = 0

    def add(self, prepared: Prepared, nbytes: int) -> None:
        """One series, as ``store.prepare.row_for`` prepared it (``nbytes``: its array's size)."""
        if self.write:
            self._pending.append(prepared)
            self._pending_bytes += nbytes
            return
        outcome, detail = _check_new(self.ctx, prepared)
        self.result.count([outcome], listed=True)
        if self.ctx.report and detail:
            self.result.series[-1].update(detail)

    @property
    def pending_bytes(self) -> int:
        """The bytes of the arrays waiting to be handed to the store."""
        return self._pending_bytes

    @property
    def pending_series(self) -> int:
        """How many series wait to be handed to the store."""
        return len(self._pending)

    def group_done(self) -> None:
        """After each group (or batch of groups): hand a full batch to the store."""
        if self.write and (
            self._pending_bytes >= _BATCH_BYTES or len(self._pending) >= _BATCH_SERIES
        ):
            self.flush()

    def flush(self) -> None:
        if self.write and self._pending:
            ctx = self.ctx
            filed = ctx.store.insert_all(
                self._pending, on_conflict=ctx.on_conflict, filed=ctx.filed
            )
            self.result.count(filed.outcomes, listed=ctx.report)
            self.ids.extend(filed.ids)
            self._pending, self._pending_bytes = [], 0


def series_object(tst: TimeSeriesType, spec: Spec, built: Built) -> AnySeries:
    """The series a built group files, restored from parts the import checked (the
    model's trusted constructor: nothing is checked twice)."""
    cls = SERIES_CLASSES[tst]
    if tst.is_irregular:
        return cls.restore(
            name=spec.name,
            data=built.data,
            element_type=spec.et,
            time_reference=spec.tr,
            timestamps_ms=built.timestamps,
            **spec.descriptors,
        )
    if not tst.is_forecast:
        return cls.restore(
            name=spec.name,
            data=built.data,
            element_type=spec.et,
            time_reference=spec.tr,
            initial_ms=built.initial_ms,
            resolution=spec.res,
            **spec.descriptors,
        )
    return cls.restore(
        name=spec.name,
        data=built.data,
        element_type=spec.et,
        time_reference=spec.tr,
        initial_ms=built.initial_ms,
        resolution=spec.res,
        horizon=spec.hor,
        interval=spec.itv,
        count=built.count,
        percentiles=(
            list(built.percentiles or []) if tst is TimeSeriesType.Probabilistic else None
        ),
        **spec.descriptors,
    )


#: Groups built but not yet hashed and filed, at most: enough that hashing them in one
#: call costs about one SHA-256 update per array, few enough to stay a small buffer.
_SETTLE_GROUPS = 256


class Settle:
    """A partition's built groups, hashed and filed in batches (:func:`hash_built`).

    Each group is built as it is read (its refusals come in row order); what follows
    (the hash, the checksum comparison, the catalog row of each series, the filing) runs
    for a batch at a time, in read order. A batch ends where the filing would hand its
    pending series to the store, so that happens after the same group as before.
    """

    def __init__(
        self, ctx: Context, source: PartitionSource, result: PartitionResult, filing: Filing
    ) -> None:
        self.ctx = ctx
        self.source = source
        self.result = result
        self.filing = filing
        self.tst = source.place.type
        self.pending: list[tuple[tuple[str, str], int, list[Spec], dict[Any, Built]]] = []
        self.nbytes = 0  # of the pending arrays, as the filing counts them
        self.series = 0
        self.advanced = 0
        #: Spec.part -> the catalog row of its first series, the others' template.
        self.templates: dict[int, CatalogRow] = {}

    def _prepared(self, spec: Spec, b: Built) -> Prepared:
        """One series as ``store.prepare.row_for`` prepares it.

        The first series of each :attr:`Spec.part` is prepared by ``row_for`` from a
        series object; the others, written, copy its row and put in what differs
        (owner id and type, name, and the fields of their array, which ``array_values``
        gives as ``row_for`` takes them, :func:`row_from_template`): one tuple display
        instead of a series object and ``row_for``. A dry run keeps the object (a diff
        compares it).
        """
        template = self.templates.get(spec.part)
        if template is None or not self.filing.write:
            obj = series_object(self.tst, spec, b)
            prepared = row_for(
                spec.owner_id, spec.owner_type, spec.category, obj, spec.features, b.digest
            )
            if template is None:
                self.templates[spec.part] = prepared.row
            return prepared
        if b.fields is None:
            # Its array's catalog fields (a tuple in ARRAY_FIELDS order) and stored form,
            # made once for the series that share the array.
            b.fields = array_values(
                spec.et, b.data, b.initial_ms, b.count, b.percentiles, b.timestamps, b.digest
            )
        values, stored = b.fields
        row = row_from_template(template, spec.owner_id, spec.owner_type, spec.name, values)
        return Prepared(row, stored, spec.features, b.timestamps)

    def add(self, key: tuple[str, str], n: int, specs: list[Spec], built: dict[Any, Built]) -> None:
        self.pending.append((key, n, specs, built))
        self.series += len(specs)
        for spec in specs:
            self.nbytes += built[spec.grid_key].data.nbytes
        filing = self.filing
        if (
            len(self.pending) >= _SETTLE_GROUPS
            or filing.pending_bytes + self.nbytes >= _BATCH_BYTES
            or filing.pending_series + self.series >= _BATCH_SERIES
        ):
            self.run()

    def run(self) -> None:
        """Settle the pending groups, then let the filing hand a full batch on."""
        if self.pending:
            self.pending_only()
            self.filing.group_done()

    def pending_only(self) -> None:
        """Hash, check and prepare every pending group's series (in read order)."""
        todo, self.pending = self.pending, []
        self.nbytes = self.series = 0
        if not todo:
            return
        hash_built([b for _key, _n, _specs, built in todo for b in built.values()])
        ctx, result, tables = self.ctx, self.result, self.source.place
        filing, prepare = self.filing, self._prepared
        checksum, skip, report, diff = (
            self.source.checksum,
            ctx.skip_checksum,
            ctx.report,
            ctx.diff,
        )
        for key, n, specs, built in todo:
            for spec in specs:
                b = built[spec.grid_key]
                # One comparison serves the checksum refusal and a diff's ``hash_stale``.
                stale = checksum and b.hash_hex != key[0]
                if stale and not skip:
                    # A table can be edited in place; a file is rewritten by the rehash.
                    by_hand = (
                        f"or UPDATE `data_hash` in {tables.arrays}"
                        if tables.word == "table"
                        else f"which rewrites `data_hash` in {tables.arrays}"
                    )
                    raise InvalidParameterError(
                        f"series {spec.label} does not match its recorded data_hash: the file "
                        f"says {short_hash(key[0])} and its rows hash to "
                        f"{short_hash(b.hash_hex)} (time axis {key[1]}). Values edited in a "
                        "query engine need the hash recomputed: run {rehash} ("
                        f"{by_hand}), or pass {{no_checksum}} to waive the comparison.",
                        terms={"rehash": self.source.rehash, "no_checksum": NO_CHECKSUM},
                        table=tables.arrays,
                        key=key,
                        series=spec.label,
                    )
            result.arrays += 1
            result.rows += n
            for spec in specs:
                b = built[spec.grid_key]
                # What store.prepare.prepare checks of a bulk item holds here by construction
                # (the series row was validated, the object is built here), but the range.
                if not _I64_MIN <= spec.owner_id <= _I64_MAX:
                    raise InvalidParameterError(
                        f"owner_id {spec.owner_id} does not fit a signed 64-bit integer"
                    )
                prepared = prepare(spec, b)
                if report:
                    entry = {
                        "file_id": spec.file_id,
                        "owner_id": spec.owner_id,
                        "owner_type": spec.owner_type,
                        "owner_category": spec.category.name,
                        "name": spec.name,
                        "data_hash": b.hash_hex,
                        "time_axis": key[1],
                    }
                    if diff:
                        entry["hash_stale"] = checksum and b.hash_hex != key[0]
                    result.series.append(entry)
                filing.add(prepared, b.data.nbytes)
        ctx.advance(result.rows - self.advanced)
        self.advanced = result.rows


def _check_new(ctx: Context, prepared: Prepared) -> tuple[str, dict[str, Any] | None]:
    """Dry run: what filing ``prepared`` would do (and, for a diff, what it would change).

    Refuses a series the file holds twice, and one the store holds under
    ``on_conflict="error"``.
    """
    row = prepared.row
    ident = identity(row)
    label = prepared.label
    if ident in ctx.identities:
        raise DuplicateTimeSeriesError(
            f"a time series with that key already exists: {label} appears twice in the file "
            f"(as {ctx.identities[ident]})",
            series=label,
        )
    ctx.identities[ident] = label
    held = ctx.store.held_rows([prepared]).get(ident)
    if ctx.diff:
        detail = compare(ctx.store, prepared, held)
        return detail["change"], detail
    if held is None:
        return "added", None
    if ctx.on_conflict == "error":
        raise conflict_error(label, held["id"])
    if ctx.on_conflict == "ignore":
        return "skipped", {"id": held["id"]}
    changed = any(changed_columns(held, row).values())
    return ("replaced" if changed else "unchanged"), {"id": held["id"]}
