"""What an export plan holds: ``ExportPlan`` (its partitions and the selection's time
range), ``PartitionPlan`` (one partition's series in columns, its distinct array keys and
their ids), ``ExportSeries`` / ``SeriesRef`` (one planned series), ``ExportSummary`` (what
an export reports) and ``SUMMARY_KEYS``. :mod:`.plan` builds them.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import INCLUDE_DERIVED, TRANSFORM, Notice
from .layout import (
    Partition,
)

if TYPE_CHECKING:
    from ..store import Store


@dataclass(slots=True)
class SeriesRef:
    """What a plan keeps of a catalog row: enough to order and name it. The writer reads
    the full row back from the catalog when it needs it (a plan of many series stays small)."""

    id: int
    owner_id: int
    name: str

    @property
    def label(self) -> str:
        return f"'{self.name}' (owner {self.owner_id})"


@dataclass(slots=True)
class ExportSeries:
    """One series as the export writes it (its grid is the exported slice's)."""

    row: SeriesRef
    key: tuple[str, str]  # (data_hash hex, time_axis)
    initial_ms: int | None
    length: int | None
    count: int | None
    rows: int


#: Keys of the per-partition result of an export, in the reference's order.
SUMMARY_KEYS = (
    "values_table",
    "series_table",
    "arrays_table",
    "time_series_type",
    "value_type",
    "time_reference",
    "arrays",
    "series",
    "rows",
)


class PartitionPlan:
    """One partition of a plan, held as compact columns rather than an object per series.

    Series are in catalog (id) order, arrays in array-id order (position ``k`` is array
    id ``k + 1``). A plan holds a few numpy vectors: 40 bytes a series and 44 an array
    (the hashes as one block of bytes, the axes as codes into their distinct texts), so
    its memory does not grow by Python objects per series. Names are not held: the few
    labels a refusal needs are read back from the catalog.

    Attributes
    ----------
    ids, owners, aids, anchors, counts : numpy.ndarray
        Per series (int64): catalog id, owner id, array id, the exported grid's first
        instant (0 for the irregular types, which have none) and its ``length`` or, for
        the forecast types, ``count``.
    hashes, axes : Sequence
        Per array: the ``data_hash`` (raw bytes) and the ``time_axis`` text of its key
        (sequences over columns, :class:`HashColumn` and :class:`AxisColumn`; a list
        does as well).
    array_rows, firsts : numpy.ndarray
        Per array: value rows, and the position (in the series vectors) of the first
        series in catalog order that holds it (the one its values are read through).
    rows
        Value rows of the partition (each distinct array once).
    width
        The widest value row (last axis) of any array, read from the catalog or the
        planned slice: a Parquet file fixes its composite column's width before any row.
    source
        The store planned from (the writers read the full series rows back from it).
    """

    __slots__ = (
        "_array_ids",
        "aids",
        "anchors",
        "array_rows",
        "axes",
        "counts",
        "firsts",
        "hashes",
        "ids",
        "owners",
        "partition",
        "rows",
        "source",
        "width",
    )

    def __init__(
        self,
        partition: Partition,
        *,
        ids: np.ndarray,
        owners: np.ndarray,
        aids: np.ndarray,
        anchors: np.ndarray,
        counts: np.ndarray,
        hashes: Sequence[bytes],
        axes: Sequence[str],
        array_rows: np.ndarray,
        firsts: np.ndarray,
        width: int,
        source: Store | None = None,
    ) -> None:
        self.partition = partition
        self.ids, self.owners, self.aids = ids, owners, aids
        self.anchors, self.counts = anchors, counts
        self.hashes, self.axes = hashes, axes
        self.array_rows, self.firsts = array_rows, firsts
        self.rows = int(array_rows.sum())
        self.width = width
        self.source = source
        self._array_ids: _ArrayIds | None = None

    def __repr__(self) -> str:
        return (
            f"PartitionPlan({self.partition.base!r}, series={len(self.ids)}, "
            f"arrays={len(self.hashes)}, rows={self.rows})"
        )

    def key(self, array_id: int) -> tuple[str, str]:
        """The ``(data_hash hex, time_axis)`` key of an array id."""
        return self.hashes[array_id - 1].hex(), self.axes[array_id - 1]

    def label(self, position: int) -> str:
        """How errors name the series at ``position``: ``'load' (owner 1)``."""
        return self.labels_at(np.array([position], dtype=np.int64))[0]

    def labels_at(self, positions: np.ndarray) -> list[str]:
        """The labels of the series at ``positions``, in that order (their names read
        back from the catalog: a refusal needs a few, the plan holds none)."""
        ids = self.ids[positions].tolist()
        owners = self.owners[positions].tolist()
        if self.source is None:
            raise ValueError("a partition plan without its store cannot name its series")
        names = dict(self.source.iter_select_fields(("id", "name"), ids=ids))
        return [label_of(names[i], o) for i, o in zip(ids, owners, strict=True)]

    def labels_by_array(self) -> Callable[[int], list[str]]:
        """``labels(array_id)``: the labels of every series holding it, catalog order."""
        # The index from arrays to their series is made at the first call: an export
        # asks for labels only to name a refusal, and the index costs 16 bytes a series.
        index: list[np.ndarray] = []

        def labels(array_id: int) -> list[str]:
            if not index:
                order = np.argsort(self.aids, kind="stable")  # catalog order within an array
                bounds = np.searchsorted(self.aids[order], np.arange(1, len(self.hashes) + 2))
                index.extend((order, bounds))
            order, bounds = index
            return self.labels_at(order[bounds[array_id - 1] : bounds[array_id]])

        return labels

    @property
    def array_ids(self) -> Mapping[tuple[str, str], int]:
        """``{key: array id}``, read-only, in id order; it holds nothing of its own (a
        key is found by bisecting the plan's sorted hashes)."""
        if self._array_ids is None:
            self._array_ids = _ArrayIds(self)
        return self._array_ids

    @property
    def series(self) -> list[ExportSeries]:
        """One ``ExportSeries`` per series, catalog order (built anew on every use:
        streaming writers use the columns instead)."""
        forecast = self.partition.key.type.is_forecast
        irregular = self.partition.key.type.is_irregular
        keys = [(h.hex(), axis) for h, axis in zip(self.hashes, self.axes, strict=True)]
        rows = self.array_rows.tolist()
        out = []
        if self.source is None:
            raise ValueError("a partition plan without its store cannot name its series")
        names = dict(self.source.iter_select_fields(("id", "name"), ids=self.ids.tolist()))
        for sid, owner, aid, anchor, n in zip(
            self.ids.tolist(),
            self.owners.tolist(),
            self.aids.tolist(),
            self.anchors.tolist(),
            self.counts.tolist(),
            strict=True,
        ):
            out.append(
                ExportSeries(
                    row=SeriesRef(sid, owner, names[sid]),
                    key=keys[aid - 1],
                    initial_ms=None if irregular else anchor,
                    length=None if forecast else n,
                    count=n if forecast else None,
                    rows=rows[aid - 1],
                )
            )
        return out

    def summary(self) -> dict[str, Any]:
        """The per-partition result dict, keys in the reference's order (``SUMMARY_KEYS``)."""
        p = self.partition
        values = (
            p.values_table,
            p.series_table,
            p.arrays_table,
            p.key.type.name,
            p.key.value_slug,
            p.key.reference_label,
            len(self.hashes),
            len(self.ids),
            self.rows,
        )
        return dict(zip(SUMMARY_KEYS, values, strict=True))


#: Bytes of a ``data_hash`` (SHA-256).
HASH_BYTES = 32
# Rows a column spells out as Python values at a time while it is iterated.
_CHUNK = 4096


class HashColumn(Sequence[bytes]):
    """Equally long byte strings held end to end in one numpy block (``uint8 [n, width]``),
    read as a sequence of ``bytes``: 32 bytes a hash instead of a 65-byte object and its
    pointer. Sorted, it is bisectable like the list it replaces."""

    __slots__ = ("block",)

    def __init__(self, block: np.ndarray) -> None:
        self.block = block

    def __len__(self) -> int:
        return int(self.block.shape[0])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            raw = self.block[i]
            return _split(raw.tobytes(), raw.shape[1]) if raw.size else []
        return self.block[i].tobytes()

    def __iter__(self) -> Iterator[bytes]:
        width = self.block.shape[1]
        for start in range(0, len(self), _CHUNK):
            yield from _split(self.block[start : start + _CHUNK].tobytes(), width)


def _split(raw: bytes, width: int) -> list[bytes]:
    return [raw[i : i + width] for i in range(0, len(raw), width)]


class AxisColumn(Sequence[str]):
    """Texts held as codes (``int64``) into the distinct ones: many arrays share a grid."""

    __slots__ = ("codes", "texts")

    def __init__(self, codes: np.ndarray, texts: Sequence[str]) -> None:
        self.codes, self.texts = codes, texts

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.texts[c] for c in self.codes[i].tolist()]
        return self.texts[self.codes[i]]

    def __iter__(self) -> Iterator[str]:
        texts = self.texts
        for start in range(0, len(self), _CHUNK):
            yield from map(texts.__getitem__, self.codes[start : start + _CHUNK].tolist())


class _ArrayIds(Mapping[tuple[str, str], int]):
    """A partition plan's ``{(data_hash hex, time_axis): array id}`` over its columns.

    The keys are held sorted (ids are their rank), so a lookup bisects the hashes and
    steps over the few axes one hash may have.
    """

    __slots__ = ("_pp",)

    def __init__(self, pp: PartitionPlan) -> None:
        self._pp = pp

    def __getitem__(self, key: tuple[str, str]) -> int:
        try:
            hx, axis = key
            h = bytes.fromhex(hx)
        except (TypeError, ValueError):
            raise KeyError(key) from None
        hashes, axes = self._pp.hashes, self._pp.axes
        i = bisect.bisect_left(hashes, h)
        while i < len(hashes) and hashes[i] == h:
            if axes[i] == axis:
                return i + 1
            i += 1
        raise KeyError(key)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return ((h.hex(), axis) for h, axis in zip(self._pp.hashes, self._pp.axes, strict=True))

    def __len__(self) -> int:
        return len(self._pp.hashes)


def label_of(name: str, owner_id: int) -> str:
    return f"'{name}' (owner {owner_id})"


@dataclass(slots=True)
class ExportPlan:
    partitions: list[PartitionPlan]
    time_range: tuple[datetime, datetime] | None
    include_derived: bool
    #: DeterministicSingleTimeSeries the selection matched and the export leaves out.
    derived_left_out: int = 0

    @property
    def total_rows(self) -> int:
        return sum(p.rows for p in self.partitions)

    def summary(self) -> ExportSummary:
        return ExportSummary(
            (p.summary() for p in self.partitions), derived_left_out=self.derived_left_out
        )


class ExportSummary(list):
    """What an export returns: one dict per partition (a list, as in the reference), and
    what it left out of the selection.

    Attributes
    ----------
    derived_left_out
        How many DeterministicSingleTimeSeries the selection matched and the export did
        not write (they are views of a stored SingleTimeSeries; ``include_derived=True``
        writes them).
    notices
        The same, as sentences for a person (empty when nothing was left out).
    """

    def __init__(self, parts: Any = (), *, derived_left_out: int = 0) -> None:
        super().__init__(parts)
        self.derived_left_out = derived_left_out

    @property
    def notices(self) -> list[str]:
        return [m.render("api") for m in self.messages()]

    def messages(self) -> list[Notice]:
        """The notices as messages that each caller renders in its own words."""
        if not self.derived_left_out:
            return []
        n = self.derived_left_out
        return [
            Notice(
                f"{n} derived series (DeterministicSingleTimeSeries) "
                f"{'was' if n == 1 else 'were'} left out of the export; {{include_derived}} "
                "writes them too (no import takes them back: their SingleTimeSeries and "
                "{transform} rebuild them)",
                terms={"include_derived": INCLUDE_DERIVED, "transform": TRANSFORM},
            )
        ]
