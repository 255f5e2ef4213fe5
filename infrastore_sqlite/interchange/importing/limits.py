"""The store's bounds on what a file from anyone may make a reader hold (issue 34).

An interchange file is written by someone else: a colleague's script, a query engine, or
someone who means harm. Every size a reader allocates from (a Parquet row group's rows,
an array's rows, a cell's bytes, a series row's text, a manifest) is checked against
these bounds *before* it is read, from the footer's metadata where there is one, so a
file of a few hundred KB that decodes to 10⁹ rows is refused at its footer, not after
taking the machine's memory. The bounds come from the caller (the store's settings: the
keywords ``max_array_bytes=`` / ``max_cell_bytes=``, the CLI's ``--max-array-bytes`` /
``--max-cell-bytes``), never from the file (a file's own ``element_shape`` cannot lift
them).

The defaults are sized for the largest real series with room to spare:

* ``max_array_bytes`` = 1 GiB: one array (or one row group read at once), counted as 8
  bytes per row and column read. A century of one-minute data is 5.3·10⁷ rows (420 MB
  of float64); 1 GiB is 1.3·10⁸ rows of one column. An import holds one array at a time,
  so this bounds what a hostile values file can make it hold.
* ``max_cell_bytes`` = 16 MiB: one cell (a value cell's text or blob, a series row's
  text: name, features, descriptors). The layout's widest element cell is a few KB
  and a features object a few hundred bytes; 16 MiB stays far from both and far below
  the memory of a batch of rows.
* :data:`MAX_MANIFEST_BYTES` = 64 MiB: an export's manifest lists one small entry per
  file (~100 bytes), so 64 MiB is 600,000 files, beyond any export.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import InvalidParameterError, Term

__all__ = [
    "DEFAULT_MAX_ARRAY_BYTES",
    "DEFAULT_MAX_CELL_BYTES",
    "MAX_ARRAY_BYTES",
    "MAX_CELL_BYTES",
    "MAX_MANIFEST_BYTES",
    "Limits",
]

DEFAULT_MAX_ARRAY_BYTES = 2**30
DEFAULT_MAX_CELL_BYTES = 16 * 2**20
MAX_MANIFEST_BYTES = 64 * 2**20

#: How a refusal names the bounds, for each caller.
MAX_ARRAY_BYTES = Term("--max-array-bytes N", "max_array_bytes=N")
MAX_CELL_BYTES = Term("--max-cell-bytes N", "max_cell_bytes=N")

# SQLite's length limit is a C int: a bound above it is one SQLite cannot be asked for.
_C_INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds one import, diff or rehash reads a file under.

    Parameters
    ----------
    max_array_bytes
        The most one array (or one Parquet row group read at once) may take, at 8 bytes
        per row and column.
    max_cell_bytes
        The most one cell (text or blob) may take.
    """

    max_array_bytes: int = DEFAULT_MAX_ARRAY_BYTES
    max_cell_bytes: int = DEFAULT_MAX_CELL_BYTES

    @classmethod
    def of(cls, *, max_array_bytes: Any = None, max_cell_bytes: Any = None) -> Limits:
        """The bounds a caller gave (None: the default), checked."""
        array = _positive("max_array_bytes", max_array_bytes, DEFAULT_MAX_ARRAY_BYTES)
        cell = _positive("max_cell_bytes", max_cell_bytes, DEFAULT_MAX_CELL_BYTES)
        if cell > _C_INT_MAX:
            raise InvalidParameterError(
                f"max_cell_bytes {cell} is above {_C_INT_MAX}, the longest cell SQLite reads",
                key="max_cell_bytes",
            )
        return cls(array, cell)

    @property
    def max_rows(self) -> int:
        """The most rows one array (or row group) may have: 8 bytes a row."""
        return max(1, self.max_array_bytes // 8)

    def too_many_rows(
        self,
        what: str,
        rows: int,
        *,
        table: str,
        limit: int | None = None,
        at_least: bool = False,
    ) -> InvalidParameterError:
        """The refusal of ``what`` (an array, a row group) of ``rows`` rows (``limit``:
        the rows the bound allows, :attr:`max_rows` unless given; ``at_least``: the read
        stopped at ``rows``)."""
        limit = self.max_rows if limit is None else limit
        return InvalidParameterError(
            f"{what} holds {'at least ' if at_least else ''}{rows:,} rows, more than the {limit:,} the store reads in one "
            f"array ({self.max_array_bytes:,} bytes at 8 a row and column); nothing of it "
            "was read. A real series that long needs a higher bound: {max_array_bytes}",
            table=table,
            terms={"max_array_bytes": MAX_ARRAY_BYTES},
        )

    def too_long(
        self, what: str, size: int | None, *, table: str, unread: bool = True
    ) -> InvalidParameterError:
        """The refusal of a cell (``what`` names it) longer than :attr:`max_cell_bytes`
        (``unread``: SQLite refused to hand it over)."""
        held = f"holds {size:,} bytes, more than" if size is not None else "is longer than"
        taken = "nothing of it was read" if unread else "it was not taken"
        return InvalidParameterError(
            f"{what} {held} the {self.max_cell_bytes:,} bytes the store reads in one cell; "
            f"{taken}. Write a shorter cell, or raise the bound: "
            "{max_cell_bytes}",
            table=table,
            terms={"max_cell_bytes": MAX_CELL_BYTES},
        )


def _positive(name: str, value: Any, default: int) -> int:
    if value is None:
        return default
    if type(value) is not int or value < 1:
        raise InvalidParameterError(
            f"{name} must be a positive number of bytes, not {value!r}", key=name
        )
    return value
