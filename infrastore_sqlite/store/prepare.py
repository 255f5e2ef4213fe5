"""A series prepared for the catalog: checks, catalog rows as tuples, array fields.

What an add (or an import) makes of a series before anything is written: the bulk item
checked (:func:`checked`), its catalog row in the catalog's column order
(:func:`row_for`, :data:`INSERT_COLUMNS`), the fields its array decides
(:func:`array_values`, :data:`ARRAY_FIELDS`), its content hashes. Pure: no catalog, no
segment, no store object; the per-series texts many series share are cached here.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np
import orjson

from ..core.elements import shrink
from ..core.hashing import data_hash, data_hashes, features_hash, timestamps_hash, validate_features
from ..core.periods import Period
from ..core.timeref import ms_to_rfc3339
from ..errors import InvalidParameterError, ParameterTypeError
from ..model import (
    SERIES_CLASSES,
    Forecast,
    Irregular,
    OwnerCategory,
    Probabilistic,
    Series,
    SingleTimeSeries,
)

IDENTITY_COLUMNS = frozenset(
    {"owner_id", "owner_category", "time_series_type", "name", "resolution", "interval"}
    | {"features_hash"}
)

_BULK_KEYS = frozenset({"owner_id", "owner_type", "owner_category", "time_series", "features"})
_SERIES_TYPES = frozenset(SERIES_CLASSES.values())


class CatalogRow(NamedTuple):
    """A series' catalog row, in the catalog's column order (:data:`INSERT_COLUMNS`).

    A tuple, so a batch's rows go to ``executemany`` as they are; the fields are read by
    name where one or two are wanted (the filing, the refusals).
    """

    owner_id: int
    owner_type: str
    owner_category: int
    time_series_type: int
    name: str
    initial_timestamp: str | None
    initial_ms: int | None
    resolution: str | None
    length: int
    horizon: str | None
    interval: str | None
    count: int | None
    timestamps_hash: bytes | None
    units: str | None
    quantity_kind: str | None
    unit_system: str | None
    component_field: str | None
    application_data: str | None
    time_reference: str
    percentiles_json: str | None
    element_type: str
    element_shape: str
    array_shape: str
    data_hash: bytes
    features_hash: bytes


#: The fields of a series row, in the catalog's order (a :class:`CatalogRow`'s): what
#: reads, records and refusals see (the arrays by content hash).
INSERT_COLUMNS: tuple[str, ...] = CatalogRow._fields
#: The columns that hold a row's arrays in the catalog (schema step 0004): the integer
#: ids of their ``arrays`` rows, in the place of the hashes the fields name.
ARRAY_ID_COLUMNS = {"data_hash": "data_id", "timestamps_hash": "timestamps_id"}
#: :data:`INSERT_COLUMNS` as the catalog stores them (the hashes' places hold the ids).
STORED_COLUMNS: tuple[str, ...] = tuple(ARRAY_ID_COLUMNS.get(c, c) for c in INSERT_COLUMNS)
#: Where a row's data and timestamps hashes (or ids) sit in :data:`INSERT_COLUMNS`.
DATA_AT = INSERT_COLUMNS.index("data_hash")
TIMESTAMPS_AT = INSERT_COLUMNS.index("timestamps_hash")
#: The array kind each id column names.
_KIND_OF = {"data_id": "data", "timestamps_id": "timestamps"}


def hash_sql(column: str, table: str = "t") -> str:
    """SQL reading the field ``column`` of the series row ``table``: the column itself,
    or for a hash the hash of the ``arrays`` row its id names (a primary-key lookup)."""
    stored = ARRAY_ID_COLUMNS.get(column)
    if stored is None:
        return f"{table}.{column}"
    return f"(SELECT hash FROM arrays WHERE id = {table}.{stored})"


def id_sql(column: str, marker: str = "?") -> str:
    """SQL of the ``arrays`` id of the hash bound at ``marker``, for the id column
    ``column`` (``data_id`` or ``timestamps_id``): one probe of the narrow hash index."""
    return f"(SELECT id FROM arrays WHERE hash = {marker} AND kind = '{_KIND_OF[column]}')"


# A CatalogRow made from a tuple of its values without the generated ``__new__``'s
# Python call (a bulk add makes one per series; this is half the cost).
_new_row = tuple.__new__


class Prepared:
    """A series prepared for the catalog: its :class:`CatalogRow` (``row``), its array as
    stored (``data``), its timestamps (``timestamps``, None unless irregular), its feature
    map (``features``) and, when made from one, its series object (``series``).

    Slotted: an add or an import makes one per series.
    """

    __slots__ = ("data", "features", "row", "series", "timestamps")

    def __init__(
        self,
        row: CatalogRow,
        data: np.ndarray,
        features: dict[str, Any],
        timestamps: np.ndarray | None = None,
        series: Series | None = None,
    ) -> None:
        self.row = row
        self.data = data
        self.features = features
        self.timestamps = timestamps
        self.series = series

    @property
    def label(self) -> str:
        """How a refusal names the series (:func:`series_label`); made only when asked."""
        return series_label(self.row.name, self.row.owner_id)


def prepare_bulk(items: Iterable[Mapping[str, Any]]) -> list[Prepared]:
    """Every bulk item checked and prepared, the plain arrays hashed in one batch
    (per-array hashing is most of what a small series costs); ragged arrays are
    shrunk and hashed by :func:`row_for`."""
    checked = [check_item(i, item) for i, item in enumerate(items)]
    plain = [i for i, c in enumerate(checked) if not c[3].element_type_info.is_ragged]
    hashes: list[bytes | None] = [None] * len(checked)
    stored: list[np.ndarray | None] = [None] * len(checked)
    arrays = [checked[i][3].stored_array for i in plain]
    for i, h, a in zip(plain, data_hashes(arrays), arrays, strict=True):
        hashes[i] = h
        stored[i] = a  # the view hashed, not a second one made by row_for
    return [
        row_for(owner_id, owner_type, category, ts, feats, h, a)
        for (owner_id, owner_type, category, ts, feats), h, a in zip(
            checked, hashes, stored, strict=True
        )
    ]


def prepare(index: int, item: Mapping[str, Any]) -> Prepared:
    """One bulk item, checked and prepared (hashed on its own; see :func:`row_for`)."""
    return row_for(*check_item(index, item))


def check_item(
    index: int, item: Mapping[str, Any]
) -> tuple[int, str, OwnerCategory, Series, dict[str, Any]]:
    """A bulk item's ``(owner_id, owner_type, category, series, features)``, checked."""
    # The exact-type tests first: they are what a plain dict of plain values passes,
    # at a fraction of the cost of the general (ABC) checks behind them.
    if type(item) is not dict and not isinstance(item, Mapping):
        raise ParameterTypeError(
            f"bulk item {index} must be a dict with owner_id, owner_type, owner_category, "
            "time_series and optionally features"
        )
    if not _BULK_KEYS.issuperset(item):
        raise InvalidParameterError(
            f"bulk item {index} has unknown key(s) {sorted(set(item) - _BULK_KEYS)}; "
            f"accepted: {sorted(_BULK_KEYS)}"
        )
    owner_id = item.get("owner_id")
    if type(owner_id) is not int:
        if isinstance(owner_id, bool) or not isinstance(owner_id, int | np.integer):
            raise ParameterTypeError(f"owner_id must be an integer, got {owner_id!r}")
        owner_id = int(owner_id)
    if not -(2**63) <= owner_id < 2**63:
        raise InvalidParameterError(f"owner_id {owner_id} does not fit a signed 64-bit integer")
    owner_type = item.get("owner_type")
    if type(owner_type) is not str and not isinstance(owner_type, str):
        raise ParameterTypeError(f"owner_type must be a str, got {owner_type!r}")
    if not owner_type:
        raise InvalidParameterError(f"owner_type must be a non-empty string, got {owner_type!r}")
    category = item.get("owner_category", OwnerCategory.Component)
    if type(category) is not OwnerCategory:
        category = OwnerCategory.coerce(category)
    ts = item.get("time_series")
    if type(ts) not in _SERIES_TYPES:
        raise InvalidParameterError(
            f"time_series must be a series object (SingleTimeSeries, …), got {type(ts).__name__}"
        )
    features = item.get("features")
    empty = features is None or (type(features) is dict and not features)
    feats = {} if empty else validate_features(features)
    return owner_id, owner_type, category, ts, feats


def row_for(
    owner_id: int,
    owner_type: str,
    category: OwnerCategory,
    ts: Series,
    feats: dict[str, Any],
    known_hash: bytes | None = None,
    known_array: np.ndarray | None = None,
) -> Prepared:
    """A series prepared for the catalog (:class:`Prepared`): its row, its arrays, its
    features and the series itself. The fields of its array are :func:`array_values'`
    (an import fills the rest of a row from a template, see ``importing/batches.py``).
    ``known_hash`` and ``known_array``: the content hash and ``ts.stored_array`` when
    the caller has them already (:func:`prepare_bulk` hashes a batch at once)."""
    et = ts.element_type_info
    code, gridded, forecast, irregular, probabilistic = _class_traits(type(ts))
    timestamps = ts.timestamps_ms if irregular else None
    (
        (instant, initial_ms, length, count, ts_hash, pct_json, e_shape, a_shape, digest),
        stored,
    ) = array_values(
        et,
        ts.stored_array if known_array is None else known_array,
        ts.initial_ms if gridded else None,
        ts.count if forecast else None,
        ts.percentiles if probabilistic else None,
        timestamps,
        known_hash,
    )
    # One tuple display in the catalog's column order (a bulk add builds one per series).
    row = _new_row(
        CatalogRow,
        (
            owner_id,
            owner_type,
            int(category),
            code,
            ts.name,
            instant,
            initial_ms,
            _period_text(ts.resolution_period) if gridded else None,
            length,
            _period_text(ts.horizon_period) if forecast else None,
            _period_text(ts.interval_period) if forecast else None,
            count,
            ts_hash,
            ts.units,
            ts.quantity_kind,
            ts.unit_system,
            ts.component_field,
            ts.application_data,
            ts.time_reference,
            pct_json,
            _element_text(et),
            e_shape,
            a_shape,
            digest,
            _features_hash_of(feats),
        ),
    )
    return Prepared(row, stored, feats, timestamps, ts)


@functools.lru_cache(maxsize=64)
def _class_traits(cls: type) -> tuple[int, bool, bool, bool, bool]:
    """``(catalog code, gridded, forecast, irregular, probabilistic)`` of a series class,
    worked out once (a bulk add asks for every series)."""
    gridded = issubclass(cls, SingleTimeSeries | Forecast)
    return (
        cls.time_series_type.catalog_code,
        gridded,
        gridded and issubclass(cls, Forecast),
        not gridded and issubclass(cls, Irregular),
        issubclass(cls, Probabilistic),
    )


def dtype_of(arr: np.ndarray) -> str:
    return _dtype_text(arr.dtype)


# Catalog text that many series of one batch share (shapes, instants, periods, dtypes,
# the empty feature map) is built once: per-series Python is what a bulk add of many
# small series costs. Each cache is keyed by the exact value its text is made from.
@functools.lru_cache(maxsize=256)
def _dtype_text(dtype: np.dtype) -> str:
    from ..core.elements import dtype_name

    return dtype_name(dtype)


def _element_text(et: Any) -> str:
    # Not cached: hashing the (frozen dataclass) element type costs more than str().
    return str(et)


@functools.lru_cache(maxsize=1024)
def shape_json(shape: tuple[int, ...]) -> str:
    return orjson.dumps([int(d) for d in shape]).decode()


@functools.lru_cache(maxsize=4096)
def _catalog_instant(ms: int) -> str:
    return ms_to_rfc3339(ms)


#: The catalog columns a series' array decides (:func:`array_values`' order).
ARRAY_FIELDS = (
    "initial_timestamp",
    "initial_ms",
    "length",
    "count",
    "timestamps_hash",
    "percentiles_json",
    "element_shape",
    "array_shape",
    "data_hash",
)


def row_from_template(
    template: CatalogRow, owner_id: int, owner_type: str, name: str, values: tuple
) -> CatalogRow:
    """``template`` with another owner, name and array (``values``: :func:`array_values`'
    first result): the row of a series that shares everything else with the template's,
    as :func:`row_for` would make it."""
    t = template
    (instant, initial_ms, length, count, ts_hash, pct_json, e_shape, a_shape, digest) = values
    # One tuple display (an import makes one per series): the positions are
    # INSERT_COLUMNS', the import's rows are checked against row_for's by a test.
    return _new_row(
        CatalogRow,
        (
            owner_id,
            owner_type,
            t[2],
            t[3],
            name,
            instant,
            initial_ms,
            t[7],
            length,
            t[9],
            t[10],
            count,
            ts_hash,
            t[13],
            t[14],
            t[15],
            t[16],
            t[17],
            t[18],
            pct_json,
            t[20],
            e_shape,
            a_shape,
            digest,
            t[24],
        ),
    )


def array_values(
    et: Any,
    data: np.ndarray,
    initial_ms: int | None,
    count: int | None,
    percentiles: list[float] | None,
    timestamps: np.ndarray | None,
    known_hash: bytes | None = None,
) -> tuple[tuple, np.ndarray]:
    """The values of the :data:`ARRAY_FIELDS` of a series' array, and the array as stored
    (a ragged composite at its minimal width): what differs between series that share
    everything else. ``known_hash`` is the stored array's content hash when the caller
    has it. (Positional: a bulk add calls it once per series.)"""
    stored = shrink(et, data) if et.is_ragged else data
    shape = data.shape
    texts = _SHAPE_TEXTS.get(shape)
    if texts is None:
        texts = _shape_texts(shape)
    values = (
        None if initial_ms is None else _catalog_instant(initial_ms),
        initial_ms,
        shape[0],  # a shape's entries are ints already
        count,
        None if timestamps is None else timestamps_hash(timestamps),
        None if percentiles is None else orjson.dumps(percentiles).decode(),
        texts[0],
        texts[1],
        data_hash(stored) if known_hash is None else known_hash,
    )
    return values, stored


#: ``shape -> (element shape text, array shape text)`` of the shapes seen: one lookup a
#: series where two :func:`shape_json` calls and a slice cost it three times as much.
_SHAPE_TEXTS: dict[tuple[int, ...], tuple[str, str]] = {}


def _shape_texts(shape: tuple[int, ...]) -> tuple[str, str]:
    """:data:`_SHAPE_TEXTS`' entry of ``shape``, made (and the cache kept bounded)."""
    if len(_SHAPE_TEXTS) >= 1024:
        _SHAPE_TEXTS.clear()
    texts = _SHAPE_TEXTS[shape] = (shape_json(shape[1:]), shape_json(shape))
    return texts


def series_label(name: str, owner_id: int) -> str:
    """How a refusal names a series being filed: ``'name' (owner 7)``."""
    return f"'{name}' (owner {owner_id})"


_PERIOD_TEXTS: dict[tuple[int, int, bool], str] = {}


def _period_text(period: Period) -> str:
    """``str(period)``, built once per distinct period. Keyed by its fields: every series
    holds its own Period object, and a frozen dataclass's own hash costs several times
    this key's."""
    key = (period.months, period.ms, period.calendar)
    text = _PERIOD_TEXTS.get(key)
    if text is None:
        if len(_PERIOD_TEXTS) >= 1024:  # many distinct periods: keep it bounded
            _PERIOD_TEXTS.clear()
        text = _PERIOD_TEXTS[key] = str(period)
    return text


_EMPTY_FEATURES_HASH = features_hash({})


_FEATURE_HASHES: dict[tuple, bytes] = {}


def _features_hash_of(feats: Mapping[str, Any]) -> bytes:
    """``features_hash``, computed once per distinct feature map (a bulk add's series
    share a few: one SHA-256 and a sort each cost more than the key below)."""
    if not feats:
        return _EMPTY_FEATURES_HASH
    # Keyed by each value's type and exact value: 1, 1.0 and True differ, and a float by
    # its bits (0.0 and -0.0 compare equal; NaNs all hash alike, as features_hash has it).
    # Only plain values are keyed (what validate_features gives); anything else is hashed.
    key = []
    for k, v in feats.items():
        t = type(v)
        if t is float:
            key.append((k, t, v.hex()))
        elif t is int or t is str or t is bool:
            key.append((k, t, v))
        else:
            return features_hash(feats)
    found = _FEATURE_HASHES.get(tuple(key))
    if found is None:
        found = features_hash(feats)
        if len(_FEATURE_HASHES) >= 4096:
            _FEATURE_HASHES.clear()
        _FEATURE_HASHES[tuple(key)] = found
    return found
