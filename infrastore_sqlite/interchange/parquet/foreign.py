"""Foreign Parquet files (``parquet-layout.md`` §8): a values file alone, read as one series
whose series row the inline flags, the file's ``to_arrow`` metadata and its columns make up.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from ...core.elements import dtype_name
from ...errors import InvalidParameterError, Term
from ...model import DESCRIPTORS, TimeSeriesType, infer_resolution
from ..importing import (
    TEXT_HINT,
    Options,
    rows_as_batches,
)
from .columns import is_list, null_mask
from .discovery import Partition, reading_errors
from .layout import (
    ELEMENT_TYPE_KEY,
    REFERENCE_KEY,
    TYPE_KEY,
)
from .partition import PartitionReader
from .parts import open_parquet

__all__ = ["ForeignReader"]

# ------------------------------------------------------------------------------ foreign files
_SPLIT = "export it with its series file, or split it into one file per array_id"
_OWNER = Term("--owner-id and --owner-type", 'overrides={"owner_id": …, "owner_type": …}')
_RESOLUTION = Term("--resolution", 'overrides={"resolution": …}')


class ForeignReader(PartitionReader):
    """A values file with no series file (``parquet-layout.md`` §8): one series, whose
    series row the inline flags, the file's ``to_arrow`` metadata and its columns make up,
    each attribute taken from the first of those that says it."""

    def __init__(
        self, pa: ModuleType, pq: ModuleType, part: Partition, where: str, opts: Options
    ) -> None:
        values = str(part.files["values"])
        with reading_errors(values):
            pf = open_parquet(pq, part.files["values"], part.metadata.get("values"), "values")
        schema = pf.schema_arrow
        meta = part.footers["values"]
        names = schema.names
        missing = [c for c in ("timestamp", "value") if c not in names]
        if missing:
            raise InvalidParameterError(
                f"{values} is a values file without a series file beside it (a foreign "
                f"file), which needs a `timestamp` and a `value` column; it has no "
                f"{' and no '.join(f'`{c}`' for c in missing)} (it has {', '.join(names)})",
                table=values,
            )
        if "issue_time" in names:
            raise InvalidParameterError(
                f"{values} has an `issue_time` column but no series file beside it: a foreign "
                "forecast is not supported, since its grid lives in the series file; export "
                "the forecast and keep all three files",
                table=values,
            )
        aid = None
        if "array_id" in names:
            with reading_errors(values):
                col = pf.read(columns=["array_id"]).column(0)
            distinct = [v for v in col.unique().to_pylist()]
            if len(distinct) > 1:
                raise InvalidParameterError(
                    f"{values} holds {len(distinct)} arrays (array_id "
                    f"{', '.join(map(str, sorted(d for d in distinct if d is not None)[:5]))}"
                    f"{', …' if len(distinct) > 5 else ''}) but no series file, so they would "
                    f"all be one series; {_SPLIT}",
                    table=values,
                )
            aid = distinct[0] if distinct else None
        tst = self._type(opts, meta, values)
        part.type = tst
        super().__init__(pa, pq, part, where)
        self._meta = meta
        self._opts = opts
        self._has_aid = "array_id" in names
        if isinstance(aid, int):
            self._aid = aid
        self._shape = None  # no series row to declare one: the element type decides
        self._key = ("", "")
        self.checksum = False
        self._arrays_file = part.files.get("arrays")
        if self._arrays_file is not None and isinstance(aid, int):
            self.checksum = True
        ov = opts.overrides
        if "owner_id" not in ov:
            raise InvalidParameterError(
                f"{values} is a foreign file (no series file beside it), which names no owner; "
                "pass {owner}",
                table=values,
                terms={"owner": _OWNER},
            )
        self._row_tr = self._reference_text(schema.field("timestamp").type)

    def _type(self, opts: Options, meta: Mapping[str, str], values: str) -> TimeSeriesType:
        if opts.type is not None:
            tst = opts.type
        elif TYPE_KEY in meta:
            try:
                tst = TimeSeriesType[meta[TYPE_KEY]]
            except KeyError:
                raise InvalidParameterError(
                    f'{values}: unknown time_series_type "{meta[TYPE_KEY]}" in its metadata; '
                    "pass --type",
                    table=values,
                ) from None
        elif opts.resolution is not None:
            tst = TimeSeriesType.SingleTimeSeries
        else:
            tst = TimeSeriesType.NonSequentialTimeSeries
        if tst.is_forecast:
            raise InvalidParameterError(
                f"{values} would be a {tst.name}, but a foreign forecast (a values file with "
                "no series file) is not supported; export the forecast and keep all three files",
                table=values,
            )
        return tst

    def _reference_text(self, ts_type: Any) -> str:
        ov = self._opts.overrides
        if "time_reference" in ov:
            return "unspecified" if ov["time_reference"] is None else str(ov["time_reference"])
        if REFERENCE_KEY in self._meta:
            return self._meta[REFERENCE_KEY]
        tz = getattr(ts_type, "tz", None)
        if tz is None:
            return "zoneless"
        return "utc" if tz.upper() in ("UTC", "Z", "+00:00") else tz

    def check_columns(self) -> None:
        values = self._file("values").schema_arrow
        self._check_instant(values.field("timestamp").type, "timestamp", self.files["values"])
        self._check_value_type(values.field("value").type)

    def array_rows(self) -> Iterable[Sequence[Any]]:
        if self.checksum:
            assert self._arrays_file is not None
            self.files["arrays"] = str(self._arrays_file)
            for row in super().array_rows():
                if row[0] == self._aid:
                    yield row
                    return
            raise InvalidParameterError(
                f"{self.files['values']} names array_id {self._aid}, which "
                f"{self._arrays_file} does not hold; {TEXT_HINT}",
                table=self.files["values"],
            )
        yield (self._aid, "", "")

    def series_batches(self, columns: Sequence[str]) -> Iterable[Sequence[Sequence[Any]]]:
        """One series row, from the inline flags and the footer."""
        return rows_as_batches(self._series_row(columns))

    def _series_row(self, columns: Sequence[str]) -> Iterator[tuple]:
        meta, opts = self._meta, self._opts
        ov = opts.overrides
        values = self.files["values"]
        row: dict[str, Any] = {
            "array_id": self._aid,
            "id": 1,
            "owner_id": ov["owner_id"],
            "owner_type": ov.get("owner_type", ""),
            "owner_category": "Component",
            "time_series_type": self.type.name,
            "name": ov.get("name", meta.get("name", "")),
            "features": "{}",
            "element_type": self._element_type(),
            "element_shape": "[]",
            "time_reference": self._row_tr,
            **{d: meta.get(d, "") for d in DESCRIPTORS},
        }
        if self.type is TimeSeriesType.SingleTimeSeries:
            ms = self._timestamps()
            if opts.resolution is not None:
                res = str(opts.resolution)
            elif "resolution" in meta:
                res = meta["resolution"]
            else:
                try:
                    res = str(infer_resolution(ms))
                except InvalidParameterError as exc:
                    raise InvalidParameterError(
                        f"{values}: {exc.message}; or pass {{resolution}} to name the grid",
                        table=values,
                        terms={"resolution": _RESOLUTION},
                    ) from None
            row.update(initial_timestamp=int(ms[0]), resolution=res, length=int(ms.size))
        if not row["name"]:
            row["name"] = ""  # the core refuses it, naming --name
        yield tuple(row[c] for c in columns)

    def _element_type(self) -> str:
        if self._opts.element_type is not None:
            return str(self._opts.element_type)
        recorded = self._meta.get(ELEMENT_TYPE_KEY)
        if recorded is not None:
            return recorded
        t = self._file("values").schema_arrow.field("value").type
        while is_list(self.pa.types, t):
            t = t.value_type
        try:
            return dtype_name(np.dtype(t.to_pandas_dtype()))
        except (InvalidParameterError, NotImplementedError, TypeError) as exc:
            raise InvalidParameterError(
                f"{self.files['values']}: the `value` column's type {t} has no series dtype; "
                "cast it to one of float64, float32, int64, int32, int16, int8, uint64, "
                "uint32, uint16, uint8, bool",
                table=self.files["values"],
            ) from exc

    def _timestamps(self) -> np.ndarray:
        pf = self._file("values")
        col = pf.read(columns=["timestamp"]).column(0).combine_chunks()
        if col.null_count:
            i = int(np.flatnonzero(null_mask(col))[0])
            raise InvalidParameterError(
                f"{self.files['values']} row {i + 1}: `timestamp` is null; the layout holds "
                "no nulls",
                table=self.files["values"],
            )
        ms = self._instants(col, "timestamp", 0)
        if ms.size == 0:
            raise InvalidParameterError(
                f"{self.files['values']} has no rows; a SingleTimeSeries is anchored at its "
                "first timestamp",
                table=self.files["values"],
            )
        return np.sort(ms)
