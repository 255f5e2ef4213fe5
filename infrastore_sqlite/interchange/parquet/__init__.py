"""The Parquet container of the interchange layout (needs the optional pyarrow)."""

from __future__ import annotations

from .export import export_parquet

__all__ = ["export_parquet"]
