"""Where a partition's rows are, and what a container's reader hands the core.

:class:`Place` names a partition's three places (values, series, arrays) in the
container's words and words the messages about a values row; :class:`Group` is one
array's values rows as numpy columns; :class:`PartitionSource` is the protocol a reader
follows. The refusals of what a container finds when it discovers partitions are worded
here too (the reader only says where), with the helpers every message uses
(:func:`fmt_ms`, :func:`key_text`).
"""

from __future__ import annotations

import contextlib
import math
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ...core.timeref import ms_to_axis_instant
from ...errors import EXPORT_SQLITE, TRANSFORM, InvalidParameterError, Term
from ...model import TimeSeriesType
from ..layout import series_columns, values_key_columns

if TYPE_CHECKING:
    from .specs import Spec

TEXT_HINT = "a partition's tables come from one export"


def fmt_ms(ms: int) -> str:
    """``2024-01-01 00:00:00 UTC`` (``.001`` when the milliseconds are not zero)."""
    try:
        return ms_to_axis_instant(int(ms))[:-1].replace("T", " ") + " UTC"
    except (InvalidParameterError, OverflowError, ValueError):
        return f"{int(ms)} ms since the epoch"


def short_hash(data_hash: str) -> str:
    """``abcdef012345…``: the first 12 hex characters of a hash, as a message shows it
    (enough to tell arrays apart; 64 characters would fill a line of their own)."""
    return f"{data_hash[:12]}…" if len(data_hash) > 12 else data_hash


def key_text(key: tuple[str, str]) -> str:
    """``(abcdef012345…, R24/2024-01-01T00:00:00Z/PT1H)``: an array key in a message."""
    return f"({short_hash(key[0])}, {key[1]})"


@dataclass(slots=True)
class Group:
    """One array's values rows as a reader hands them to the core: ``values`` ``[n, *E]``
    and the coordinates as int64/float64 vectors, in the container's row order;
    ``rowids()`` gives the rows' numbers for messages (:attr:`Place.numbered`)."""

    key: tuple[str, str]
    ids: list[int]
    n: int
    values: np.ndarray  # [n, *E]
    timestamp: np.ndarray | None = None
    issue: np.ndarray | None = None
    lane: np.ndarray | None = None
    # Set by a reader that verified the grid itself (the SQLite fast path): the rows are
    # exactly this grid in row order, and the core does not place them again.
    affine: tuple | None = None
    rowids: Callable[[], list[int]] | None = None


@dataclass(slots=True)
class Place:
    """One partition: its type and where its rows are, in the container's words.

    ``values``, ``series`` and ``arrays`` name the three places (SQLite: the tables; a
    file container: the files) in every message, and ``word`` is what one is called. ``numbered`` says whether a values row
    has a number of the container's own, which messages then name as ``row_word`` (SQLite:
    the ``rowid``); without one a row is named by its position in its group.
    """

    base: str
    type: TimeSeriesType
    values: str
    series: str
    arrays: str
    numbered: bool = True
    row_word: str = "rowid"
    #: What the container calls one of the three places ("table"; a file container "file").
    word: str = "table"
    #: The series row whose group is being read, for messages (set by the reader; its
    #: :attr:`label` is spelled out only when a message names it).
    naming: Spec | None = None
    #: The widest per-step shape the series rows declare (``element_shape``), set by the
    #: core before the values are read, so a reader can refuse a value cell bigger than
    #: any element could need without fetching it; None when no row declares one.
    cell_shape: tuple[int, ...] | None = None

    @property
    def label(self) -> str | None:
        """The series whose group is being read, as messages name it (None: none)."""
        return self.naming.label if self.naming is not None else None

    def row_text(
        self, key: tuple[str, str], rowids: list[int], i: int | None, *, series: bool = False
    ) -> str:
        where = f"array {key_text(key)} in {self.values}"
        if series and self.label is not None:
            where = f"series {self.label}, {where}"
        if i is None or i >= len(rowids):
            return where
        if self.numbered:
            return f"{where}, {self.row_word} {rowids[i]}"
        return f"{where}, row {i + 1}"

    def null_error(
        self, col: str, key: tuple[str, str], rowids: Callable, i: int
    ) -> InvalidParameterError:
        return InvalidParameterError(
            f"{self.row_text(key, rowids(), i, series=True)}: `{col}` is NULL; the layout holds NULL only "
            "in `value` (NaN)",
            table=self.values,
        )

    def ints(
        self, cells: list, col: str, key: tuple[str, str], rowids: Callable, *, ms: bool
    ) -> np.ndarray:
        n = len(cells)
        types = set(map(type, cells))
        if types == {int}:
            return np.fromiter(cells, dtype=np.int64, count=n)
        out = np.empty(n, dtype=np.int64)
        for i, v in enumerate(cells):
            t = type(v)
            if t is int:
                out[i] = v
                continue
            if v is None:
                raise self.null_error(col, key, rowids, i)
            if t is float and math.isfinite(v) and v.is_integer() and abs(v) < 2.0**63:
                out[i] = int(v)
                continue
            if t is float:
                what = (
                    f"{v!r}, which is not a whole millisecond; the store records instants to "
                    "the millisecond"
                    if ms
                    else f"{v!r}, which is not a whole number"
                )
            else:
                what = f"{'text' if t is str else 'a blob'} ({v!r:.40}), not an integer"
            raise InvalidParameterError(
                f"{self.row_text(key, rowids(), i, series=True)}: `{col}` holds {what}",
                table=self.values,
            )
        return out

    def floats(self, cells: list, col: str, key: tuple[str, str], rowids: Callable) -> np.ndarray:
        types = set(map(type, cells))
        if types <= {float, int}:
            return np.fromiter(cells, dtype=np.float64, count=len(cells))
        for i, v in enumerate(cells):
            if v is None:
                raise self.null_error(col, key, rowids, i)
            if type(v) not in (float, int):
                raise InvalidParameterError(
                    f"{self.row_text(key, rowids(), i, series=True)}: `{col}` holds {v!r:.40}, not a number",
                    table=self.values,
                )
        raise AssertionError("unreachable")  # pragma: no cover


# ------------------------------------------------------------------------------ containers
# The refusals of what a container finds (or does not) when it discovers partitions, worded
# here like every other; the reader only says where.
def missing_sibling(where: str, name: str, sibling: str) -> InvalidParameterError:
    """A values table (file) without its series or arrays one beside it."""
    return InvalidParameterError(
        f"{where} holds {name} but no {sibling} beside it; {TEXT_HINT}", table=name
    )


def derived_refused(name: str) -> InvalidParameterError:
    """A DeterministicSingleTimeSeries partition, which no import takes."""
    return InvalidParameterError(
        "a DeterministicSingleTimeSeries is derived from a stored SingleTimeSeries rather "
        "than added; import the SingleTimeSeries and run {transform}",
        terms={"transform": TRANSFORM},
        table=name,
    )


def no_partitions(
    where: str,
    prefix: str,
    *,
    word: str = "table",
    others: Mapping[str, int] | None = None,
    holds: Sequence[str] = (),
) -> InvalidParameterError:
    """Nothing to import under ``prefix``, and why, from what the container found.

    Parameters
    ----------
    where
        The container as the caller named it.
    prefix
        The prefix asked for (``""``: none).
    word
        What the container calls one of a partition's places (``"table"``).
    others
        The other prefixes under which partitions were found, with how many each: the
        refusal then suggests passing one. Empty when there are none anywhere.
    holds
        The names the container holds (its tables), of which a few are shown when no
        partition exists under any prefix: the file is then not an export at all.
    """
    under = f'under the {word} prefix "{prefix}"' if prefix else f"without a {word} prefix"
    if others:
        # Most partitions first: the likeliest prefix is the first way out named.
        found = sorted(others.items(), key=lambda item: (-item[1], item[0]))[:4]
        shown = " and ".join(
            f'{n} under the {word} prefix "{p}"' if p else f"{n} without a prefix" for p, n in found
        )
        terms = {
            f"fix{i}": Term(f"pass --table-prefix {shlex.quote(p)}", f"pass table_prefix={p!r}")
            if p
            else Term("leave out --table-prefix", 'pass table_prefix=""')
            for i, (p, _) in enumerate(found)
        }
        fixes = ", or ".join("{" + slot + "}" for slot in terms)
        return InvalidParameterError(
            f"{where} holds no exported partitions {under}, but it holds {shown}: to import "
            f"them, {fixes}",
            terms=terms,
        )
    if not holds:
        return InvalidParameterError(
            f"{where} holds no {word}s at all, so no exported partition; name a file written "
            "by {export}",
            terms={"export": EXPORT_SQLITE},
        )
    more = len(holds) - 5
    listed = ", ".join(sorted(holds)[:5]) + (f", … and {more} more" if more > 0 else "")
    return InvalidParameterError(
        f"{where} is not an export: it holds no exported partitions under any {word} prefix "
        f"(a partition is three {word}s, <Type>_<element type>_<time reference>_values, "
        f"_series and _arrays, under one prefix); the {word}s it holds: {listed}. Name a "
        "file written by {export}",
        terms={"export": EXPORT_SQLITE},
    )


def check_columns_present(place: Place, columns_of: Callable[[str], set[str]]) -> None:
    """Refuse a partition whose values, series or arrays place lacks a column of the
    layout; ``columns_of(name)`` is what the container found there."""
    tname = place.type.name
    need = {
        place.values: [
            "array_id",
            "timestamp",
            *(c for c, _ in values_key_columns(place.type)),
            "value",
        ],
        place.series: ["array_id", "id", *series_columns(place.type)],
        place.arrays: ["id", "data_hash", "time_axis"],
    }
    for name, cols in need.items():
        have = columns_of(name)
        missing = [c for c in cols if c not in have]
        if missing:
            kind = {place.values: "values", place.series: "series", place.arrays: "arrays"}[name]
            raise InvalidParameterError(
                f"{name} is missing column(s) a {tname} {kind} {place.word} carries: "
                f"{', '.join(missing)}",
                table=name,
            )


def stray_values_row(place: Place, aid: Any, row: int | None) -> InvalidParameterError:
    """A values row whose ``array_id`` is NULL (``aid`` None) or names no array; ``row``
    is its number in the container (None when it has none)."""
    where = f"{place.values} {place.row_word} {row}" if row is not None else place.values
    if aid is None:
        return InvalidParameterError(
            f"{where} has NULL in `array_id`; the layout holds NULL only in `value` (NaN)",
            table=place.values,
        )
    return InvalidParameterError(
        f"a values row names `array_id` {aid!r}, which the arrays {place.word} does not "
        f"hold; {TEXT_HINT} ({where})",
        table=place.values,
    )


def bad_value(
    place: Place, key: tuple[str, str], rowids: list[int], i: int | None, exc: InvalidParameterError
) -> InvalidParameterError:
    """A value cell the container could not decode (row ``i`` of the group)."""
    return InvalidParameterError(
        f"{place.row_text(key, rowids, i, series=True)}: {exc.message}", table=place.values
    )


class PartitionSource(Protocol):
    """What a container's reader gives the core for one partition.

    :func:`~.run.import_partition` calls, in this order: :meth:`reading` (around everything;
    turns the container's own errors into :class:`~infrastore_sqlite.errors.StorageError`),
    :meth:`check_columns`, :meth:`array_rows`, :meth:`series_batches`, :meth:`values_count`,
    :meth:`open_values`, then :meth:`groups` once, and :meth:`close_values` at the end
    (also after a failure). :meth:`check_unclaimed` is asked only when the values rows do
    not add up to the arrays' (a row of no array the container did not refuse earlier).
    """

    place: Place
    #: The container as the caller named it (a path), for messages.
    where: str
    #: How to recompute the container's hashes (named by a checksum mismatch).
    rehash: Term
    #: False when the container records no hash to check (a foreign Parquet file).
    checksum: bool

    def reading(self) -> contextlib.AbstractContextManager[None]: ...

    def check_columns(self) -> None: ...

    def array_rows(self) -> Iterable[Sequence[Any]]: ...

    def series_batches(self, columns: Sequence[str]) -> Iterable[Sequence[Sequence[Any]]]:
        """The series rows' ``columns`` (the layout's names), a batch of rows at a time,
        each batch as one sequence of cells per column (:func:`rows_as_batches` makes
        them of rows)."""
        ...

    def values_count(self) -> int: ...

    def open_values(self, arrays: Mapping[int, tuple[str, str]]) -> None: ...

    def groups(
        self, wanted: Sequence[tuple[tuple[str, str], list[int], Spec | None]], dtype: str
    ) -> Iterator[Group | None]:
        """One group (or None: the array has no values rows) per entry of ``wanted``
        ``(key, array ids, the first series row naming it)``, in that order (key order).

        The core clears each entry of ``wanted`` once its group is handed back: a reader
        may look ahead of the entry it is at, never back."""
        ...

    def check_unclaimed(self) -> None: ...

    def close_values(self) -> None: ...
