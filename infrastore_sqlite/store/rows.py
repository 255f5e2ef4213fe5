"""Catalog rows as typed records, and the filter keywords that select them.

One ``SeriesRow`` is one line of ``time_series_associations`` with its codes decoded.
Reads, exports and listings all start from these, so the SQL that builds them is here
once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import apsw
import numpy as np
import orjson

from ..core.hashing import RESERVED_FEATURE_NAMES, features_hash, validate_features
from ..core.periods import as_period
from ..core.timeref import datetime_to_ms, ms_to_datetimes, ms_to_rfc3339
from ..errors import ParameterTypeError
from ..model import OwnerCategory, TimeSeriesType

SELECT_ROWS = """
SELECT t.id, t.owner_id, t.owner_type, t.owner_category, t.time_series_type, t.name,
       t.initial_ms, t.resolution, t.length, t.horizon, t.interval, t.count,
       ta.hash, t.units, t.quantity_kind, t.unit_system, t.time_reference,
       t.component_field, t.percentiles_json, t.element_type, t.element_shape, t.array_shape,
       t.application_data, da.hash, t.features_hash, f.features_json,
       t.initial_timestamp, t.row_check, t.data_id, t.timestamps_id
FROM time_series_associations t
LEFT JOIN feature_maps f ON f.features_hash = t.features_hash
LEFT JOIN arrays da ON da.id = t.data_id
LEFT JOIN arrays ta ON ta.id = t.timestamps_id
"""

#: The range of a catalog id (SQLite's rowid): an id outside it matches no row.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

FILTER_KEYS = (
    "owner_id",
    "owner_category",
    "owner_type",
    "time_series_type",
    "name",
    "name_glob",
    "component_field",
    "zoneless",
    "resolution",
    "interval",
    "initial_timestamp",
    "length",
    "features",
    "features_exact",
)


_OWNER_CATEGORIES = {c.value: c for c in OwnerCategory}
_SHAPES: dict[str, tuple[int, ...]] = {}
_MAX_SHAPES = 4096


def decode_shape(text: str) -> tuple[int, ...]:
    """A catalog shape text (``"[168]"``) as a tuple, decoded once per distinct text."""
    shape = _SHAPES.get(text)
    if shape is None:
        if len(_SHAPES) >= _MAX_SHAPES:  # many distinct lengths: keep the cache bounded
            _SHAPES.clear()
        shape = _SHAPES[text] = tuple(orjson.loads(text))
    return shape


@dataclass(slots=True)
class SeriesRow:
    """One catalog row, decoded."""

    id: int
    owner_id: int
    owner_type: str
    owner_category: OwnerCategory
    type: TimeSeriesType
    name: str
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
    time_reference: str | None
    component_field: str | None
    percentiles: list[float] | None
    element_type: str
    element_shape: list[int]
    array_shape: tuple[int, ...]
    application_data: str | None
    data_hash: bytes
    features_hash: bytes
    features: dict[str, Any]

    @classmethod
    def from_sql(cls, r: tuple) -> SeriesRow:
        # Positional, with the repeated texts decoded once (reads build one per series).
        return cls(
            r[0],
            r[1],
            r[2],
            _OWNER_CATEGORIES[r[3]],
            TimeSeriesType.from_catalog_code(r[4]),
            r[5],
            r[6],
            r[7],
            r[8],
            r[9],
            r[10],
            r[11],
            r[12],
            r[13],
            r[14],
            r[15],
            r[16],
            r[17],
            orjson.loads(r[18]) if r[18] else None,
            r[19],
            list(decode_shape(r[20])),
            decode_shape(r[21]),
            r[22],
            r[23],
            r[24],
            orjson.loads(r[25]) if r[25] else {},
        )

    @property
    def label(self) -> str:
        """How errors name the series: ``'load' (owner 1)``."""
        return f"'{self.name}' (owner {self.owner_id})"

    def descriptors(self) -> dict[str, str | None]:
        return {
            "units": self.units,
            "quantity_kind": self.quantity_kind,
            "unit_system": self.unit_system,
            "component_field": self.component_field,
            "application_data": self.application_data,
        }

    def metadata(self, timestamps_ms: Any = None) -> dict[str, Any]:
        """The ``list_metadata`` dict, keys in the reference's order.

        Instants are RFC 3339 UTC text; a zoneless series' wall clock has no offset.
        """
        render = _wall_clock_text if self.time_reference == "zoneless" else ms_to_rfc3339
        return {
            "owner_id": self.owner_id,
            "owner_type": self.owner_type,
            "owner_category": self.owner_category.name,
            "time_series_type": self.type.name,
            "name": self.name,
            "data_hash": self.data_hash.hex(),
            "id": self.id,
            "initial_timestamp": None if self.initial_ms is None else render(self.initial_ms),
            "length": self.length,
            "resolution": self.resolution,
            "horizon": self.horizon,
            "interval": self.interval,
            "count": self.count,
            "percentiles": self.percentiles,
            "element_type": self.element_type,
            "element_shape": list(self.element_shape),
            "timestamps": None
            if timestamps_ms is None
            else [render(int(t)) for t in timestamps_ms],
            "features": dict(self.features),
            "units": self.units,
            "quantity_kind": self.quantity_kind,
            "unit_system": self.unit_system,
            "time_reference": self.time_reference,
            "component_field": self.component_field,
            "application_data": self.application_data,
        }

    def timestamps_as_datetimes(self, ms: Any) -> list[datetime]:
        return ms_to_datetimes(ms, self.time_reference)


def instant_text(ms: int, time_reference: str | None) -> str:
    """How listings show a stored instant: RFC 3339 UTC, a zoneless wall clock without offset."""
    return _wall_clock_text(ms) if time_reference == "zoneless" else ms_to_rfc3339(ms)


def _wall_clock_text(ms: int) -> str:
    """RFC 3339 text without the offset: how a zoneless instant is shown."""
    text = ms_to_rfc3339(ms)
    return text[:-6] if text.endswith("+00:00") else text


def _query_features(features: Any) -> dict[str, Any] | None:
    """Check a ``features`` filter; None when no stored map can match it.

    A reserved name, a NaN or a ``-0.0`` can never be stored, so a filter naming one
    matches nothing (as in the reference) rather than raising; other bad input raises.
    """
    if not isinstance(features, Mapping):
        return validate_features(features)
    probe: dict[Any, Any] = {}
    unstorable = False
    for key, value in features.items():
        if isinstance(key, str) and key in RESERVED_FEATURE_NAMES:
            unstorable, key = True, "\0" + key
        if isinstance(value, float) and (
            math.isnan(value) or (value == 0.0 and math.copysign(1.0, value) < 0)
        ):
            unstorable, value = True, 0.0
        probe[key] = value
    checked = validate_features(probe)  # raises for what is wrong besides the above
    return None if unstorable else checked


def check_filter_keys(filters: Mapping[str, Any]) -> Mapping[str, Any]:
    """``filters`` when every name is a ``list_metadata`` keyword; else the TypeError that
    names the others (``ids`` among them: the reference's listing calls do not take it)."""
    unknown = set(filters) - set(FILTER_KEYS)
    if unknown:
        raise TypeError(
            f"unknown filter keyword(s): {', '.join(sorted(unknown))}; "
            f"accepted: {', '.join(FILTER_KEYS)}"
        )
    return filters


def build_filter(
    filters: dict[str, Any], ids: Sequence[int] | None = None
) -> tuple[str, list[Any]]:
    """Turn ``list_metadata`` keywords into a WHERE clause (without the keyword) and params.

    ``ids``, when given, keeps only those series ids among the rows the filters select
    (an export's or a command's ``--id``; not a ``list_metadata`` keyword, which mirrors
    the reference's). Values are always bound; the column names come from this function
    only.
    """
    check_filter_keys(filters)
    clauses: list[str] = []
    params: list[Any] = []

    def eq(column: str, value: Any) -> None:
        clauses.append(f"t.{column} = ?")
        params.append(value)

    f = {k: v for k, v in filters.items() if v is not None}
    if ids is not None:
        # One bound array, not one parameter per id: a selection of 10^5 ids stays one
        # statement (SQLite's parameter limit is 32,766). An id no int64 holds matches no row.
        wanted = [i for i in series_ids(ids) if INT64_MIN <= i <= INT64_MAX]
        if wanted:
            clauses.append("t.id IN carray(?)")
            params.append(apsw.carray(np.array(wanted, dtype=np.int64)))
        else:
            clauses.append("0")
    if "owner_id" in f:
        if isinstance(f["owner_id"], bool) or not isinstance(f["owner_id"], int | np.integer):
            raise ParameterTypeError(f"owner_id must be an integer, got {f['owner_id']!r}")
        eq("owner_id", int(f["owner_id"]))
    if "owner_category" in f:
        eq("owner_category", int(OwnerCategory.coerce(f["owner_category"])))
    if "owner_type" in f:
        eq("owner_type", f["owner_type"])
    if "time_series_type" in f:
        tst = TimeSeriesType.coerce(f["time_series_type"])
        if tst is TimeSeriesType.Deterministic:
            # A query for Deterministic also matches the derived forecasts (codes 2..3).
            clauses.append("t.time_series_type IN (2, 3)")
        else:
            eq("time_series_type", tst.catalog_code)
    if "name" in f:
        eq("name", f["name"])
    if "name_glob" in f:
        clauses.append("t.name GLOB ?")
        params.append(f["name_glob"])
    if "component_field" in f:
        eq("component_field", f["component_field"])
    if "zoneless" in f:
        clauses.append(
            "t.time_reference IS 'zoneless'"
            if f["zoneless"]
            else "t.time_reference IS NOT 'zoneless'"
        )
    if "resolution" in f:
        eq("resolution", str(as_period(f["resolution"], what="resolution")))
    if "interval" in f:
        eq("interval", str(as_period(f["interval"], what="interval")))
    if "initial_timestamp" in f:
        eq("initial_ms", datetime_to_ms(f["initial_timestamp"], what="initial_timestamp"))
    if "length" in f:
        eq("length", int(f["length"]))
    if "features" in f:
        feats = _query_features(f["features"])
        if feats is None:
            clauses.append("0")
        elif f.get("features_exact"):
            eq("features_hash", features_hash(feats))
        else:
            for key, value in feats.items():
                kind, column = _feature_column(value)
                clauses.append(
                    "EXISTS (SELECT 1 FROM feature_sets s WHERE s.features_hash = t.features_hash"
                    f" AND s.key = ? AND s.value_kind = ? AND s.{column} = ?)"
                )
                params.extend([key, kind, value])
    elif f.get("features_exact"):
        eq("features_hash", features_hash({}))
    return (" AND ".join(clauses) or "1"), params


def series_ids(ids: Any) -> tuple[int, ...]:
    """The ``ids`` filter as a tuple of catalog ids, or the refusal that names what is wrong
    (a string, a bool or a float where ids go)."""
    if isinstance(ids, str | bytes) or not hasattr(ids, "__iter__"):
        raise ParameterTypeError(f"ids must be a list of integer series ids, got {ids!r}")
    out = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int | np.integer):
            raise ParameterTypeError(f"ids must be integer series ids, got {i!r} among them")
        out.append(int(i))
    return tuple(out)


def _feature_column(value: Any) -> tuple[str, str]:
    if isinstance(value, bool):
        return "bool", "value_bool"
    if isinstance(value, int):
        return "int", "value_int"
    if isinstance(value, float):
        return "float", "value_float"
    return "str", "value_str"


def feature_rows(fh: bytes, features: dict[str, Any]) -> list[tuple]:
    """``feature_sets`` rows of one map."""
    out = []
    for key, value in features.items():
        kind, _ = _feature_column(value)
        out.append(
            (
                fh,
                key,
                kind,
                value if kind == "int" else None,
                value if kind == "float" else None,
                int(value) if kind == "bool" else None,
                value if kind == "str" else None,
            )
        )
    return out


def filter_signature(sig: Any, keys: Sequence[str] | None = None) -> Any:
    """``sig`` with its ``**filters`` spelled out as the keyword-only filter keywords
    (``keys``, all of them by default)."""
    import inspect

    kept = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    extra = [
        inspect.Parameter(
            k, inspect.Parameter.KEYWORD_ONLY, default=False if k == "features_exact" else None
        )
        for k in (FILTER_KEYS if keys is None else keys)
        if k not in sig.parameters
    ]
    return sig.replace(parameters=[*kept, *extra])


def filter_keywords(fn: Any) -> Any:
    """Show the filter keywords in ``fn``'s signature (``help()``, editors, introspection).

    ``fn`` takes them as ``**filters`` and hands them to :func:`build_filter`, which
    refuses any other name; this spells out, once for every such member, which names
    those are, keyword-only with their defaults.
    """
    import inspect

    fn.__signature__ = filter_signature(inspect.signature(fn))
    return fn
