"""Per-series text files: one series read from CSV, one series written as CSV, JSON or JSON
lines, for a spreadsheet and for the command line (``add --csv``, ``get``,
``export -f csv|json|jsonl``, the demo store).

Not the interchange: a text file holds one series (or, the wide layout, one clock's
scalar columns) in the shape a person reads, not the layout's partitions.

* :mod:`.reading` — CSV in: :class:`CsvSpec`, :func:`read_csv_series`,
  :func:`read_wide_csv`, :func:`read_owner_map`, :func:`parse_feature`;
* :mod:`.writing` — rows, cells and files out: :func:`value_rows`, :func:`series_meta`,
  :func:`write_series`, :func:`export_series_files`, the JSON and CSV spelling of one
  value (:func:`to_json`, :func:`json_row`, :func:`text_cell`).

Imports the store and below; the command line and the demo build on it.
"""

from __future__ import annotations

from .reading import (
    WRITABLE_TYPES,
    CsvSpec,
    describe,
    parse_feature,
    read_csv_series,
    read_owner_map,
    read_wide_csv,
)
from .writing import (
    SERIES_FILE_FORMATS,
    SeriesFile,
    export_series_files,
    file_name,
    json_default,
    json_row,
    series_meta,
    text_cell,
    to_json,
    value_rows,
    write_series,
)

__all__ = [
    "SERIES_FILE_FORMATS",
    "WRITABLE_TYPES",
    "CsvSpec",
    "SeriesFile",
    "describe",
    "export_series_files",
    "file_name",
    "json_default",
    "json_row",
    "parse_feature",
    "read_csv_series",
    "read_owner_map",
    "read_wide_csv",
    "series_meta",
    "text_cell",
    "to_json",
    "value_rows",
    "write_series",
]
