"""What an import is asked to do and what it carries across partitions.

The inline flags of an import (overrides, assertions, and the flags of other importers it
refuses) parsed into :class:`Options`; the parsers of the cells they override (a time
reference, a descriptor, a features map), which the series rows use too; and
:class:`Context`, what one import carries from partition to partition (the store, the
options, the progress, ``on_conflict``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ...core.distinct import distinct_ints
from ...core.elements import ElementType, parse_element_type
from ...core.hashing import validate_features
from ...core.periods import Period, as_period
from ...core.timeref import normalize_time_reference
from ...errors import InvalidParameterError
from ...model import DESCRIPTORS, UNIT_SYSTEMS, OwnerCategory, TimeSeriesType
from ...store.conflicts import OnConflict

if TYPE_CHECKING:
    from ...store import Store

Progress = Callable[[int, int], None]

#: Inline flags that replace a column for every series.
OVERRIDE_KEYS = (
    "owner_id",
    "owner_type",
    "owner_category",
    "name",
    "features",
    "time_reference",
    "units",
    "quantity_kind",
    "unit_system",
    "component_field",
    "application_data",
)

#: Inline flags that state what the file must say (a contradiction is an error).
ASSERTION_KEYS = ("element_type", "element_shape", "resolution", "type")

#: Flags of the other importers that make no sense here, with the reason.
_GRID = "the values imply the grid"

REFUSED_KEYS: dict[str, str] = {
    "initial_timestamp": _GRID,
    "interval": _GRID,
    "horizon": _GRID,
    "count": _GRID,
    "percentile": _GRID,
    "percentiles": _GRID,
    "scenario_count": _GRID,
    "layout": "it describes a CSV's columns",
    "owner_map": "the series table names every series' owner",
    "owner_id_from": "the series table names every series' owner",
}


@dataclass(slots=True)
class Options:
    overrides: dict[str, Any] = field(default_factory=dict)
    element_type: ElementType | None = None
    element_shape: tuple[int, ...] | None = None
    resolution: Period | None = None
    type: TimeSeriesType | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None, *, flag: str = "--sqlite") -> Options:
        """The inline flags of an import; ``flag`` is the container's own (``--sqlite``,
        ``--parquet``), which a refused flag's message names."""
        opts = cls()
        if not raw:
            return opts
        if not isinstance(raw, Mapping):
            raise InvalidParameterError(
                f"overrides must be a dict of inline flags, not {type(raw).__name__}"
            )
        for key, value in raw.items():
            if key not in OVERRIDE_KEYS and key not in ASSERTION_KEYS and key not in REFUSED_KEYS:
                raise InvalidParameterError(
                    f"unknown import flag {key!r}; overrides are {', '.join(OVERRIDE_KEYS)} "
                    f"and assertions are {', '.join(ASSERTION_KEYS)}"
                )
            if value is None:
                continue  # a flag not given
            if key in REFUSED_KEYS:
                refused = "--" + key.replace("_", "-")
                raise InvalidParameterError(
                    f"{refused} cannot be used with {flag}: {REFUSED_KEYS[key]}"
                )
            if key == "element_type":
                opts.element_type = parse_element_type(value)
            elif key == "element_shape":
                opts.element_shape = _parse_shape(value)
            elif key == "resolution":
                opts.resolution = as_period(value, what="resolution")
            elif key == "type":
                opts.type = TimeSeriesType.coerce(value)
            else:
                opts.overrides[key] = _check_override(key, value)
        return opts


def _parse_shape(value: Any) -> tuple[int, ...]:
    if isinstance(value, str):
        try:
            value = orjson.loads(value) if value.strip().startswith("[") else value.split(",")
        except orjson.JSONDecodeError as exc:
            raise InvalidParameterError(f"element_shape {value!r} is not a JSON list") from exc
        if isinstance(value, list) and value == [""]:
            value = []
    try:
        shape = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"element_shape must be a list of non-negative integers, got {value!r}"
        ) from None
    if any(d < 0 for d in shape):
        raise InvalidParameterError(f"element_shape must not hold negative sizes, got {shape}")
    return shape


def _check_override(key: str, value: Any) -> Any:
    if key == "owner_id":
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise InvalidParameterError(f"owner_id must be an integer, got {value!r}")
        return int(value)
    if key == "owner_category":
        return OwnerCategory.coerce(value)
    if key == "features":
        if not isinstance(value, Mapping):
            raise InvalidParameterError(
                f"features must be a dict of name to int, float, bool or str, got {value!r}"
            )
        return validate_features(value)
    if not isinstance(value, str):
        raise InvalidParameterError(f"{key} must be a string, got {value!r}")
    if key in ("owner_type", "name") and not value:
        raise InvalidParameterError(f"{key} must not be empty")
    if key == "time_reference":
        return parse_reference(value, "the time_reference override")
    if key in DESCRIPTORS:
        return descriptor_value(key, value, "the override")
    return value


def parse_reference(text: str, what: str) -> str | None:
    if text == "unspecified":
        return None
    if text == "":
        return "zoneless"
    try:
        return normalize_time_reference(text)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f'time_reference "{text}" ({what}): {exc}') from None


def descriptor_value(name: str, value: str, what: str) -> str | None:
    if value == "":
        return None
    if name == "unit_system" and value not in UNIT_SYSTEMS:
        raise InvalidParameterError(
            f'unknown unit_system "{value}" ({what}); expected natural_units, component_base '
            "or an empty string"
        )
    return value


def parse_features(text: str, what: str) -> dict[str, Any]:
    if text == "":
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InvalidParameterError(f"{what}: features is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidParameterError(f"{what}: features must be a JSON object, not {text[:40]}")
    for k, v in value.items():
        if v is None or isinstance(v, list | dict):
            shown = "null" if v is None else type(v).__name__
            raise InvalidParameterError(
                f'{what}: feature "{k}" is {shown}, but a feature value must be an int, float, '
                "bool, or string"
            )
    try:
        return validate_features(value)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{what}: {exc}") from None


class IdSet:
    """The catalog ids an import met (added, replaced, left or skipped), as sorted, disjoint runs of int64
    ``lo..hi`` (what :meth:`~infrastore_sqlite.store.Store.insert_all` is given
    as ``filed``: ``update`` and ``in``). A bulk insert hands out consecutive ids, so a
    run stands for a batch: a set of Python ints would hold ~70 bytes per series for
    the whole import.
    """

    __slots__ = ("_hi", "_lo")

    def __init__(self) -> None:
        self._lo = np.empty(0, dtype=np.int64)
        self._hi = np.empty(0, dtype=np.int64)

    def update(self, ids: Iterable[int] | np.ndarray) -> None:
        new = distinct_ints(
            ids.astype(np.int64) if isinstance(ids, np.ndarray) else np.fromiter(ids, np.int64)
        )
        if not len(new):
            return
        # The new ids' own runs, then every run merged with those it touches or abuts.
        starts = np.flatnonzero(np.diff(new, prepend=new[0] - 2) != 1)
        lo = np.concatenate([self._lo, new[starts]])
        hi = np.concatenate([self._hi, new[np.r_[starts[1:], len(new)] - 1]])
        order = np.argsort(lo, kind="stable")
        lo, hi = lo[order], np.maximum.accumulate(hi[order])
        begins = np.flatnonzero(np.r_[True, lo[1:] > hi[:-1] + 1])
        self._lo = lo[begins]
        self._hi = hi[np.r_[begins[1:], len(lo)] - 1]

    def first_held(self, ids: np.ndarray) -> int:
        """The index of the first of ``ids`` the set holds, or -1."""
        if not len(self._lo) or not len(ids):
            return -1
        at = np.searchsorted(self._lo, ids, side="right") - 1
        held = (at >= 0) & (ids <= self._hi[np.maximum(at, 0)])
        return int(np.argmax(held)) if held.any() else -1

    def refuse_repeats(self, ids: Sequence[Any], start: int, table: str) -> None:
        """Refuse a batch of series rows (from row ``start`` + 1) that repeats an id of
        its own or of the set's, then add its ids: a series row's id is its own, and a
        file of 10⁸ copies of one row is refused at its second row, not after all of
        them were read. Ids that are not integers are left to the row checks."""
        if not all(type(i) is int for i in ids):
            return
        try:
            arr = np.asarray(ids, dtype=np.int64)
        except OverflowError:
            return  # an id beyond int64: the row checks refuse it
        held = self.first_held(arr)
        order = np.argsort(arr, kind="stable")
        same = np.flatnonzero(arr[order][1:] == arr[order][:-1])
        inside = int(order[same + 1].min()) if same.size else -1
        # The earlier of the two repeats: one of an id before, or one within the batch.
        found = [i for i in (held, inside) if i >= 0]
        if found:
            at = min(found)
            raise InvalidParameterError(
                f"{table} holds series id {int(arr[at])} twice (again at row "
                f"{start + at + 1}); a series row's id is its own: remove the repeated row "
                "and import again",
                table=table,
            )
        self.update(arr)

    def __contains__(self, aid: object) -> bool:
        if type(aid) is not int:
            return False
        at = int(np.searchsorted(self._lo, aid, side="right")) - 1
        return at >= 0 and aid <= int(self._hi[at])

    def __len__(self) -> int:
        return int((self._hi - self._lo + 1).sum())


class Context:
    """What one import carries across partitions."""

    def __init__(
        self,
        store: Store,
        opts: Options,
        skip_checksum: bool,
        progress: Progress | None,
        total: int,
    ) -> None:
        self.store = store
        self.opts = opts
        self.skip_checksum = skip_checksum
        self.progress = progress
        self.total = total
        self.done = 0
        self.identities: dict[tuple, str] = {}  # dry run: identities seen in the file
        self.on_conflict: OnConflict = "error"
        self.diff = False
        self.filed = IdSet()  # ids this import met: a second row of one is refused
        self.report = True  # whether the caller gets a report (its per-series entries)

    def advance(self, rows: int) -> None:
        self.done += rows
        if self.progress is not None:
            self.progress(self.done, self.total)

    def finish(self) -> None:
        if self.progress is not None and self.done != self.total:
            self.done = self.total
            self.progress(self.done, self.total)
