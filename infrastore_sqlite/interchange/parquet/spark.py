"""What Spark's own schema in a file's footer says of its timestamp columns.

Spark writes a ``TimestampType`` column (an instant) as INT96 by default (or as INT64
micros with ``spark.sql.parquet.outputTimestampType``), which Parquet readers see as
naive: pyarrow reads INT96 as ``timestamp[ns]`` without a zone. Spark records its own
schema in the footer's key-value metadata (``org.apache.spark.sql.parquet.row.metadata``,
a JSON struct): there ``"timestamp"`` is an instant, stored in UTC whatever the session's
zone, and ``"timestamp_ntz"`` a wall clock. The readers use it to read such a column as
UTC instants; a naive column that nothing declares stays naive.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import orjson

__all__ = ["SPARK_SCHEMA_KEY", "spark_instants"]

#: The footer key Spark keeps its schema in.
SPARK_SCHEMA_KEY = "org.apache.spark.sql.parquet.row.metadata"


def spark_instants(footer: Mapping[str, str]) -> frozenset[str]:
    """The columns Spark's schema in ``footer`` declares ``timestamp`` (instants); empty
    when the file has no such schema (or one that does not parse)."""
    raw = footer.get(SPARK_SCHEMA_KEY)
    return _instants(raw) if raw else frozenset()


@functools.lru_cache(maxsize=64)
def _instants(raw: str) -> frozenset[str]:
    """(Parsed once per schema text: the readers ask for every batch.)"""
    try:
        fields = orjson.loads(raw).get("fields", [])
        return frozenset(
            str(f["name"])
            for f in fields
            if isinstance(f, dict) and f.get("type") == "timestamp" and "name" in f
        )
    except (orjson.JSONDecodeError, AttributeError, TypeError, KeyError):
        return frozenset()
