"""The SQLite reader's partitions and their tables: which partitions a file holds
(:func:`discover`), and for one partition its tables' columns, its arrays and series rows
as the import core reads them, and the wrapping of what fails while reading them.

:class:`TablesReader` is the base of the reader (``.source._PartitionReader``); it holds
the state every layer above shares (the connection, the place, the quoted table names).

May import: :mod:`infrastore_sqlite.interchange` and below, apsw, :mod:`..schema`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import apsw

from infrastore_sqlite.errors import InvalidParameterError, StorageError, rehash_term
from infrastore_sqlite.interchange.importing import (
    Place,
    check_columns_present,
    derived_refused,
    missing_sibling,
    no_partitions,
    rows_as_batches,
)
from infrastore_sqlite.interchange.layout import TYPE_NAMES, type_of_table, validate_prefix
from infrastore_sqlite.model import TimeSeriesType

from ..schema import q


# ------------------------------------------------------------------------------ database
def discover(
    conn: apsw.Connection, prefix: str, where: str, *, allow_derived: bool = False
) -> list[Place]:
    """The partitions under ``prefix``, in binary order of their values table.

    Raises
    ------
    InvalidParameterError
        No partition at all; a values table without its series or arrays table; any
        DeterministicSingleTimeSeries partition (the whole prefix is refused).
    """
    tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    lower = {n.lower(): n for n in tables}
    found: list[Place] = []
    for name in sorted(tables, key=lambda n: n.encode()):
        tst = type_of_table(name, prefix, "_values")
        if tst is None:
            continue
        base = name[len(prefix) : -len("_values")]
        siblings = []
        for suffix in ("_series", "_arrays"):
            sibling = lower.get(f"{prefix}{base}{suffix}".lower())
            if sibling is None:
                raise missing_sibling(where, name, f"{prefix}{base}{suffix}")
            siblings.append(sibling)
        found.append(Place(base, tst, name, siblings[0], siblings[1]))
    if not allow_derived and any(
        t.type is TimeSeriesType.DeterministicSingleTimeSeries for t in found
    ):
        raise derived_refused(
            next(t.values for t in found if t.type is TimeSeriesType.DeterministicSingleTimeSeries)
        )
    if not found:
        # Say what the file does hold: partitions under another prefix, or none at all.
        others = _prefixes(tables, lower)
        others.pop(prefix, None)
        raise no_partitions(where, prefix, others=others, holds=tables)
    return found


def _prefixes(tables: list[str], lower: dict[str, str]) -> dict[str, int]:
    """Every prefix under which ``tables`` hold a partition (a values table with its
    series and arrays tables), with the number of partitions under it.

    A values table is read under each prefix its name allows (everything before a type
    name), so ``p_SingleTimeSeries_f64_utc_values`` counts under ``p_``. Asked only when
    the prefix given found nothing, to say what to pass instead.
    """
    counts: dict[str, int] = {}
    for name in tables:
        if not name.endswith("_values"):
            continue
        for tname in TYPE_NAMES:
            at = name.find(tname + "_")
            while at != -1:
                prefix = name[:at]
                base = name[at : -len("_values")]
                if (
                    _valid(prefix)
                    and type_of_table(name, prefix, "_values") is not None
                    and f"{prefix}{base}_series".lower() in lower
                    and f"{prefix}{base}_arrays".lower() in lower
                ):
                    counts[prefix] = counts.get(prefix, 0) + 1
                    break
                at = name.find(tname + "_", at + 1)
            else:
                continue
            break
    return counts


def _valid(prefix: str) -> bool:
    """True when the import takes ``prefix`` (a suggestion must be one it takes)."""
    try:
        validate_prefix(prefix)
    except InvalidParameterError:
        return False
    return True


def _column(conn: apsw.Connection, sql: str, params: Any = ()) -> list:
    """One column of a query as a list, fetched as one object (``Cursor.get``).

    ``get`` gives a lone value for a single row and None both for no rows and for a
    single NULL, so a None is asked again, row by row.
    """
    result = conn.execute(sql, params).get
    if type(result) is list:
        return result
    if result is None:
        return [r[0] for r in conn.execute(sql, params).fetchall()]
    return [result]


class TablesReader:
    """One partition's tables: their columns, the arrays and series rows, errors wrapped."""

    def __init__(self, conn: apsw.Connection, place: Place, where: str) -> None:
        self.conn = conn
        self.place = place
        self.where = where
        self.rehash = rehash_term(where)
        self.checksum = True
        self.type = place.type
        self.V = q(place.values)
        self.S = q(place.series)
        self.A = q(place.arrays)
        self._count: int | None = None
        self._checked = False
        self._mode = "range"  # or "index": how a group's rows are found
        self._temp: str | None = None  # temp table standing in for a missing index
        # Each array's rowid span and its first row's (timestamp, issue_time), once found
        # (lookup.ArraySpans, read like these dicts).
        self._spans: Any = {}
        self._heads: Any = {}
        # True when the arrays' rowid spans do not overlap: every row inside a span is
        # then the array's own (check_claimed has refused rows of no array).
        self._tiled = False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """The interchange file failing under us (corrupt pages, an odd table definition)
        becomes a StorageError naming the partition."""
        try:
            yield
        except UnicodeDecodeError:
            # apsw decodes TEXT as UTF-8, and SQLite stores whatever bytes it was given.
            raise self._invalid_text() from None
        except apsw.Error as exc:
            raise StorageError(
                f"reading {self.place.values} (and its series and arrays tables) from "
                f"{self.where} failed: {exc}",
                table=self.place.values,
            ) from exc

    def _invalid_text(self) -> InvalidParameterError:
        """The first TEXT cell of the partition's tables that is not UTF-8, as a refusal
        naming its table, row and column (found by a scan that runs only after a decode
        failed)."""
        conn = self.conn
        for table in (self.place.arrays, self.place.series, self.place.values):
            for col in [r[1] for r in conn.execute(f"PRAGMA table_info({q(table)})")]:
                sql = (
                    f"SELECT rowid, CAST({q(col)} AS BLOB) FROM {q(table)} "
                    f"WHERE typeof({q(col)}) = 'text'"
                )
                for rowid, raw in conn.execute(sql):
                    try:
                        bytes(raw).decode("utf-8")
                    except UnicodeDecodeError as exc:
                        bad = bytes(raw)[exc.start : exc.start + 1].hex()
                        return InvalidParameterError(
                            f"{table}, row with rowid {rowid}, column `{col}`: the text is not "
                            f"valid UTF-8 (byte {exc.start} is 0x{bad}); write that cell again "
                            "as UTF-8 text and import again. Nothing of this partition was added",
                            table=table,
                        )
        return InvalidParameterError(
            f"{self.where} holds text that is not valid UTF-8 in the tables of "
            f"{self.place.values}; write it again as UTF-8 and import again",
            table=self.place.values,
        )

    def values_count(self) -> int:
        if self._count is None:
            self._count = int(self.conn.execute(f"SELECT count(*) FROM {self.V}").get or 0)
        return self._count

    def _columns(self, table: str) -> set[str]:
        return {r[1] for r in self.conn.execute(f"PRAGMA table_info({q(table)})")}

    def check_columns(self) -> None:
        if self._checked:
            return
        check_columns_present(self.place, self._columns)
        try:
            self.conn.execute(f"SELECT rowid FROM {self.V} LIMIT 0").fetchall()
        except apsw.SQLError:
            self.place.numbered = False
            self._mode = "index"
        self._checked = True

    # -- rows for the core ---------------------------------------------------------------
    def array_rows(self) -> Iterable[Sequence[Any]]:
        return self.conn.execute(f"SELECT id, data_hash, time_axis FROM {self.A}")

    def series_batches(self, columns: Sequence[str]) -> Iterable[Sequence[Sequence[Any]]]:
        # The columns are the layout's (series_columns), never the file's.
        return rows_as_batches(self.conn.execute(f"SELECT {', '.join(columns)} FROM {self.S}"))
