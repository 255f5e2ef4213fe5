"""The series tables' rows of a planned partition: ``series_records`` (tuples in the
layout's column order, by id or by array), ``series_values`` (dicts), ``series_labels``,
and ``iter_rows`` (full catalog rows read back a chunk at a time), over the catalog fields
the plan did not keep.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ..model import OwnerCategory, TimeSeriesType
from ..store.rows import SeriesRow, decode_shape

if TYPE_CHECKING:
    from ..store import Store
from .plan_types import ExportSeries, PartitionPlan


def iter_rows(store: Store, ids: Sequence[int], chunk: int = 500) -> Iterator[SeriesRow]:
    """Full catalog rows for ``ids`` in the order given, read back ``chunk`` at a time."""
    for start in range(0, len(ids), chunk):
        yield from store.rows_by_ids(ids[start : start + chunk])


#: The catalog fields of a series-table row (``Store.iter_select_fields``), in this order.
SERIES_FIELDS = (
    "id",
    "owner_type",
    "owner_category",
    "name",
    "resolution",
    "interval",
    "horizon",
    "features_hash",
    "features_json",
    "element_type",
    "element_shape",
    "units",
    "quantity_kind",
    "unit_system",
    "component_field",
    "application_data",
)
OWNER_CATEGORY_NAMES = {c.value: c.name for c in OwnerCategory}


# Series whose catalog fields, or plan columns, are turned into Python values at a time.
_ROWS_CHUNK = 4096
# Series ids one query of ``_series_fields_ascending`` takes.
_ASCENDING_CHUNK = 1 << 16


def series_fields(
    store: Store, ids: Sequence[int] | np.ndarray, chunk: int | None = None
) -> Iterator[tuple]:
    """``SERIES_FIELDS`` of each of ``ids``, in the order given, ``chunk`` at a time
    (``_ROWS_CHUNK`` when not given, read at the call so a test can make it small)."""
    chunk = chunk or _ROWS_CHUNK
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        if isinstance(part, np.ndarray):
            part = part.tolist()
        found = {r[0]: r for r in store.iter_select_fields(SERIES_FIELDS, ids=part)}
        if len(found) < len(set(part)):
            store.rows_by_ids([i for i in part if i not in found])  # raises NotFoundError
        for i in part:
            yield found[i]


def _chunked_rows(
    positions: np.ndarray, *columns: np.ndarray, chunk: int | None = None
) -> Iterator[tuple[int, ...]]:
    """``(columns[0][p], columns[1][p], …)`` as Python ints for each of ``positions``,
    converted ``chunk`` positions at a time (``_ROWS_CHUNK`` when not given)."""
    chunk = chunk or _ROWS_CHUNK
    for start in range(0, len(positions), chunk):
        take = positions[start : start + chunk]
        yield from zip(*(c[take].tolist() for c in columns), strict=True)


def _series_fields_ascending(
    store: Store, ids: np.ndarray, chunk: int | None = None
) -> Iterator[tuple]:
    """``series_fields`` of ascending ``ids``: one query a chunk of ``_ASCENDING_CHUNK``
    ids, its rows in id order, each checked against the id it stands for (no map of
    rows by id). A chunk at a time: the ids as Python ints cost 36 bytes each, twice
    (the list and the query's own), 22 MB at 300,000 series if made whole."""
    chunk = chunk or _ASCENDING_CHUNK
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk].tolist()
        expected = iter(part)
        for r in store.iter_select_fields(SERIES_FIELDS, ids=part):
            if r[0] != next(expected, None):
                break
            yield r
        else:
            if next(expected, None) is None:
                continue
        found = {r[0] for r in store.iter_select_fields(("id",), ids=part)}
        store.rows_by_ids([i for i in part if i not in found])  # raises NotFoundError
        raise AssertionError("unreachable: a series row went missing")


class SeriesText:
    """The series table's texts that many rows share, made once per distinct input."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.features: dict[bytes, str] = {}
        self.shapes: dict[str, str] = {}

    def feature_text(self, features_hash: bytes, features_json: str | None) -> str:
        text = self.features.get(features_hash)
        if text is None:
            features = orjson.loads(features_json) if features_json else {}
            # JSON has no ±inf (the feature JSON holds null there); the typed rows do.
            if features and None in features.values():
                features = self.store.typed_features(features_hash)
            text = orjson.dumps(features, option=orjson.OPT_SORT_KEYS).decode()
            if len(self.features) >= 4096:
                self.features.clear()
            self.features[features_hash] = text
        return text

    def shape_text(self, element_shape: str) -> str:
        text = self.shapes.get(element_shape)
        if text is None:
            text = self.shapes[element_shape] = orjson.dumps(
                list(decode_shape(element_shape))
            ).decode()
        return text


def series_records(
    store: Store, pp: PartitionPlan, *, order: str = "id"
) -> Iterator[tuple[Any, ...]]:
    """Every series-table column of each series, as one tuple per series in the
    layout's column order (``array_id``, ``id``, then ``layout.series_columns``).

    ``order`` is ``"id"`` (catalog order, the SQLite table's) or ``"array"`` (by array id,
    then id: the Parquet file's). The catalog fields stream back a chunk at a time; a
    container may retype a column (Parquet's ``initial_timestamp`` is a timestamp).
    """
    tst = pp.partition.key.type
    if order == "id":
        positions = np.arange(len(pp.ids))
    elif order == "array":
        positions = np.lexsort((pp.ids, pp.aids))
    else:
        raise ValueError(f"order must be 'id' or 'array', not {order!r}")
    reference = pp.partition.key.reference_label
    texts = SeriesText(store)
    type_name = tst.name
    ids = pp.ids[positions]
    fields = _series_fields_ascending(store, ids) if order == "id" else series_fields(store, ids)
    # The plan's columns as Python values a chunk at a time (a list of each whole would
    # hold 36 bytes a series per column).
    columns = zip(
        _chunked_rows(positions, pp.aids, pp.owners, pp.anchors, pp.counts),
        fields,
        strict=True,
    )
    forecast, static = tst.is_forecast, tst is TimeSeriesType.SingleTimeSeries
    categories = OWNER_CATEGORY_NAMES
    feature_text, shape_text = texts.feature_text, texts.shape_text
    # One tuple per series, spelled out per kind of grid (this runs once per series).
    for (aid, owner, anchor, n), f in columns:
        sid, otype, ocat, name, res, itv, hor, fh, fjson, et, eshape, u, qk, us, cf, ad = f
        tail = (
            feature_text(fh, fjson),
            et,
            shape_text(eshape),
            reference,
            "" if u is None else u,
            "" if qk is None else qk,
            "" if us is None else us,
            "" if cf is None else cf,
            "" if ad is None else ad,
        )
        if static:
            yield (aid, sid, owner, otype, categories[ocat], type_name, name, anchor, res, n, *tail)
        elif forecast:
            yield (
                *(aid, sid, owner, otype, categories[ocat], type_name, name),
                *(anchor, res, itv, hor, n),
                *tail,
            )
        else:
            yield (aid, sid, owner, otype, categories[ocat], type_name, name, *tail)


def series_values(
    store: Store, pp: PartitionPlan, ordered: Sequence[ExportSeries]
) -> Iterator[dict[str, Any]]:
    """Every series-table column of each series in ``ordered``, as the layout spells it
    (a container may retype a column: Parquet's ``initial_timestamp`` is a timestamp).
    The catalog fields stream back a chunk at a time. (``series_records`` gives the
    same as tuples without the ``ExportSeries`` list.)"""
    tst = pp.partition.key.type
    reference = pp.partition.key.reference_label
    texts = SeriesText(store)
    for s, f in zip(ordered, series_fields(store, [s.row.id for s in ordered]), strict=True):
        (sid, otype, ocat, name, res, itv, hor, fh, fjson, et, eshape, *descriptors) = f
        yield {
            "array_id": pp.array_ids[s.key],
            "id": sid,
            "owner_id": s.row.owner_id,
            "owner_type": otype,
            "owner_category": OWNER_CATEGORY_NAMES[ocat],
            "time_series_type": tst.name,
            "name": name,
            "initial_timestamp": s.initial_ms,
            "resolution": res,
            "length": s.length,
            "interval": itv,
            "horizon": hor,
            "count": s.count,
            "features": texts.feature_text(fh, fjson),
            "element_type": et,
            "element_shape": texts.shape_text(eshape),
            "time_reference": reference,
            **{
                k: (v if v is not None else "")
                for k, v in zip(_DESCRIPTORS, descriptors, strict=True)
            },
        }


_DESCRIPTORS = ("units", "quantity_kind", "unit_system", "component_field", "application_data")


def series_labels(series: Sequence[ExportSeries]) -> list[str]:
    return [s.row.label for s in series]
