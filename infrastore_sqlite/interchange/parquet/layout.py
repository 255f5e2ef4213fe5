"""The Parquet form of the interchange layout: file names, Arrow schemas, footer keys and
writer settings (``shared/spec/parquet-layout.md``).

Nothing here reads a store or writes a file: the export writes what these functions
describe, and an import checks files against the same description. pyarrow is an
optional dependency, so it is imported only through :func:`require_pyarrow` (the series'
Arrow form's, :mod:`infrastore_sqlite.model.arrow`).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import orjson

from ..._version import __version__
from ...core.elements import NUMPY_DTYPES
from ...model import TimeSeriesType

# The footer's unprefixed keys, the instant columns' zone and pyarrow itself come from the
# series' Arrow form (the model's), on which the Parquet form builds.
from ...model.arrow import (
    ELEMENT_SHAPE,
    ELEMENT_TYPE,
    TIME_REFERENCE,
    TIME_SERIES_TYPE,
    arrow_zone,
)
from ...model.arrow import INSTALL_HINT as INSTALL_HINT
from ...model.arrow import require_pyarrow as require_pyarrow
from ..layout import Partition, PartitionKey, series_columns, values_key_columns

#: The layout this writer produces (``infrastore:format``).
FORMAT = "normalized_v2"

# Footer keys. The unprefixed ones are the names ``to_arrow`` writes into a series'
# schema metadata, so that the reference's ``from_arrow`` reads a values file's footer.
FORMAT_KEY = "infrastore:format"
ROLE_KEY = "infrastore:role"
WRITER_KEY = "infrastore:writer"
TYPE_KEY = TIME_SERIES_TYPE
ELEMENT_TYPE_KEY = ELEMENT_TYPE
ELEMENT_SHAPE_KEY = ELEMENT_SHAPE
REFERENCE_KEY = TIME_REFERENCE

ROLES = ("values", "series", "arrays")

#: Values rows a row group holds at most, unless one array alone is longer.
ROW_GROUP_ROWS = 1_048_576

#: Rows a row group of a series or arrays file holds at most. Each group is built and
#: written as the export streams, then dropped: the export holds one group of these
#: rows, never a whole file, so its memory does not grow with the selection (§5 allows
#: several groups; readers never assume one). The import's reader gains too: the
#: dictionary it reads a text column of distinct values (``data_hash``) with grows over a
#: group's batches. On 100,000 series of 168 values, reading the arrays file grew the
#: resident memory 88 MB in one group, 50 in groups of 32,768 rows, 24 in 16,384 and 18
#: in 8,192 (10,000 series: 17); against one group, 16,384 rows make the arrays file
#: 4.5% larger (35.0 bytes a row, not 33.5) and the series file 1.6% smaller (the whole
#: export 0.12% larger).
TABLE_GROUP_ROWS = 16_384

#: Rows a data page holds at most (pages also close at pyarrow's 1 MiB): a value column's
#: group is then ~8 pages, a key column's, which encodes to a few bytes a row, 8 too.
MAX_ROWS_PER_PAGE = 131_072


def file_names(p: Partition) -> dict[str, str]:
    """``{role: file name}`` of one partition, values first."""
    return {role: f"{p.file_stem}.{role}.parquet" for role in ROLES}


def cell_shape(key: PartitionKey, width: int) -> tuple[int, ...]:
    """The per-step shape of a value cell in this partition's files: E for plain values
    and tuples, ``(W,)`` for composites (``width`` is the partition's widest row)."""
    et = key.et
    if et.kind == "linear_function":
        return (2,)
    if et.kind == "quadratic_function":
        return (3,)
    if et.is_composite:
        return (width,)
    return tuple(key.element_shape)


def footer(key: PartitionKey, width: int, role: str) -> dict[str, str]:
    """The schema metadata of one file, in the spec's key order."""
    return {
        FORMAT_KEY: FORMAT,
        ROLE_KEY: role,
        TYPE_KEY: key.type.name,
        ELEMENT_TYPE_KEY: key.element_type,
        ELEMENT_SHAPE_KEY: orjson.dumps(list(cell_shape(key, width))).decode(),
        REFERENCE_KEY: key.reference_label,
        WRITER_KEY: f"{_DISTRIBUTION} {__version__}",
    }


_DISTRIBUTION = "infrastore-sqlite"


def _field(pa: ModuleType, name: str, type_: Any) -> Any:
    return pa.field(name, type_, nullable=False)


def value_arrow_type(pa: ModuleType, key: PartitionKey, width: int) -> Any:
    """Arrow type of the ``value`` column: the dtype's primitive, wrapped in one
    non-nullable ``fixed_size_list`` per axis of the cell shape (innermost = last)."""
    t = pa.from_numpy_dtype(NUMPY_DTYPES[key.et.dtype])
    for d in reversed(cell_shape(key, width)):
        t = pa.list_(_field(pa, "element", t), d)
    return t


def instant_type(pa: ModuleType, key: PartitionKey) -> Any:
    return pa.timestamp("ms", tz=arrow_zone(key.time_reference))


def values_schema(pa: ModuleType, key: PartitionKey, width: int) -> Any:
    ts = instant_type(pa, key)
    fields = [_field(pa, "array_id", pa.int64()), _field(pa, "timestamp", ts)]
    for column, _ in values_key_columns(key.type):
        fields.append(_field(pa, column, _KEY_TYPES[column](pa) if column in _KEY_TYPES else ts))
    fields.append(_field(pa, "value", value_arrow_type(pa, key, width)))
    return pa.schema(fields, metadata=footer(key, width, "values"))


_KEY_TYPES = {"percentile": lambda pa: pa.float64(), "scenario": lambda pa: pa.int64()}

_INT_SERIES_COLUMNS = {"array_id", "id", "owner_id", "length", "count"}


def series_column_names(tst: TimeSeriesType) -> list[str]:
    return ["array_id", "id", *series_columns(tst)]


def series_schema(pa: ModuleType, key: PartitionKey, width: int) -> Any:
    fields = []
    for column in series_column_names(key.type):
        if column in _INT_SERIES_COLUMNS:
            t = pa.int64()
        elif column == "initial_timestamp":
            t = instant_type(pa, key)
        else:
            t = pa.string()
        fields.append(_field(pa, column, t))
    return pa.schema(fields, metadata=footer(key, width, "series"))


def arrays_schema(pa: ModuleType, key: PartitionKey, width: int) -> Any:
    fields = [
        _field(pa, "id", pa.int64()),
        _field(pa, "data_hash", pa.string()),
        _field(pa, "time_axis", pa.string()),
    ]
    return pa.schema(fields, metadata=footer(key, width, "arrays"))


def _leaf_paths(schema: Any) -> list[tuple[str, Any]]:
    """(Parquet column path, leaf Arrow type) of every leaf, in column order."""
    out = []
    for f in schema:
        path, t = f.name, f.type
        while hasattr(t, "list_size"):  # fixed_size_list: pyarrow names the levels so
            path += ".list.element"
            t = t.value_type
        out.append((path, t))
    return out


def writer_options(pq: ModuleType, pa: ModuleType, schema: Any, role: str) -> dict[str, Any]:
    """``ParquetWriter`` keywords for one file: zstd everywhere, pages of up to
    :data:`MAX_ROWS_PER_PAGE` rows; dictionary on strings,
    ``array_id``, ``percentile``, ``scenario`` and integer values; DELTA_BINARY_PACKED on
    instants; BYTE_STREAM_SPLIT on float values; the sort order declared."""
    types = pa.types
    dictionary, encoding = [], {}
    for path, t in _leaf_paths(schema):
        top = path.split(".", 1)[0]
        if types.is_string(t) or top in ("array_id", "percentile", "scenario"):
            dictionary.append(path)
        elif types.is_timestamp(t):
            encoding[path] = "DELTA_BINARY_PACKED"
        elif top == "value" and types.is_floating(t):
            encoding[path] = "BYTE_STREAM_SPLIT"
        elif top == "value" and types.is_integer(t):
            dictionary.append(path)
    names = [f.name for f in schema]
    order = {
        "values": ["array_id", "issue_time", "timestamp", "percentile", "scenario"],
        "series": ["array_id", "id"],
        "arrays": ["id"],
    }[role]
    sorting = [pq.SortingColumn(names.index(c)) for c in order if c in names]
    return {
        "compression": "zstd",
        # Pages close at 1 MiB (pyarrow's data_page_size) or this many rows. pyarrow's
        # default, 20,000 rows, is for a page index, which these files do not carry; it
        # cut a 1,048,576-row group into ~150 pages, each compressed with a zstd context
        # of its own: this encodes a group in two thirds of the CPU, slightly smaller.
        "max_rows_per_page": MAX_ROWS_PER_PAGE,
        "use_dictionary": dictionary,
        "column_encoding": encoding,
        "write_statistics": True,
        "sorting_columns": sorting,
        "store_schema": True,
    }
