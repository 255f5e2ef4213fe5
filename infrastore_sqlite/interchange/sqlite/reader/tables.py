"""The SQLite reader's partitions and their tables: which partitions a file holds
(:func:`discover`), and for one partition its tables (:class:`PartitionTables`): their
quoted names and columns, its arrays and series rows as the import core reads them, the
connection's reads, and the wrapping of what fails while reading them.

:class:`PartitionTables` is the first of the reader's objects: the values lookup
(:mod:`.lookup`), the group reader (:mod:`.group`) and the partition source
(:mod:`.source`) are each built from it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import apsw

from infrastore_sqlite.errors import InvalidParameterError, StorageError
from infrastore_sqlite.interchange.importing import (
    TEXT_HINT,
    Place,
    check_columns_present,
    derived_refused,
    missing_sibling,
    no_partitions,
    rows_as_batches,
)
from infrastore_sqlite.interchange.importing.limits import Limits
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
        No partition at all; one of a partition's three tables missing or a view (a
        partition is recognized by any one of them); any DeterministicSingleTimeSeries
        partition (the whole prefix is refused).
    """
    kinds = {
        n: kind
        for n, kind in conn.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"
        )
    }
    tables = [n for n, kind in kinds.items() if kind == "table"]
    lower = {n.lower(): n for n in kinds}
    found: list[Place] = []
    # A partition is named by any of its three tables: one whose values table is missing
    # (or is a view) is refused by name, never skipped.
    bases: dict[str, tuple[str, TimeSeriesType]] = {}  # lower-case base -> (base, type)
    for name in sorted(kinds, key=lambda n: n.encode()):
        for suffix in ("_values", "_series", "_arrays"):
            tst = type_of_table(name, prefix, suffix)
            if tst is not None:
                base = name[len(prefix) : -len(suffix)]
                bases.setdefault(base.lower(), (base, tst))
    # With no values table (nor view) under the prefix at all, the file is no export
    # here: the refusal below says what it holds instead.
    any_values = any(type_of_table(n, prefix, "_values") is not None for n in kinds)
    for base, tst in bases.values() if any_values else ():
        held = {
            suffix: lower.get(f"{prefix}{base}{suffix}".lower())
            for suffix in ("_values", "_series", "_arrays")
        }
        tables_of = {k for k, n in held.items() if n is not None and kinds[n] == "table"}
        # A partition is its values table, or its series and arrays tables (whose values
        # table was dropped or swapped for a view); a lone series or arrays table, or a
        # lone view, is someone else's and left alone.
        if "_values" not in tables_of and not {"_series", "_arrays"} <= tables_of:
            continue
        for suffix, name in held.items():
            if suffix not in tables_of:
                raise _not_a_table(where, lower, tst, prefix, base, suffix, name, kinds)
        values, series, arrays = (held[k] for k in ("_values", "_series", "_arrays"))
        assert values is not None and series is not None and arrays is not None
        found.append(Place(values[len(prefix) : -len("_values")], tst, values, series, arrays))
    found.sort(key=lambda t: t.values.encode())
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


def _not_a_table(
    where: str,
    lower: dict[str, str],
    tst: TimeSeriesType,
    prefix: str,
    base: str,
    suffix: str,
    held: str | None,
    kinds: dict[str, str],
) -> InvalidParameterError:
    """The refusal of a partition one of whose three tables is missing or is a view."""
    present = [
        lower[f"{prefix}{base}{s}".lower()]
        for s in ("_values", "_series", "_arrays")
        if f"{prefix}{base}{s}".lower() in lower
    ]
    name = f"{prefix}{base}{suffix}" if held is None else held
    if held is not None:
        return InvalidParameterError(
            f"{where}: {name} is a {kinds[held]}, not a table, so the {tst.name} partition "
            f"beside it ({', '.join(p for p in present if p != held)}) cannot be read (a "
            f"view is never evaluated: it would run the file's own SQL); {TEXT_HINT}",
            table=name,
        )
    if suffix == "_values":
        return InvalidParameterError(
            f"{where} holds {', '.join(present)} but no {name} beside it: the {tst.name} "
            f"partition has lost its values table, and nothing of it can be taken; "
            f"{TEXT_HINT}",
            table=name,
        )
    return missing_sibling(where, present[0], name)


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


class PartitionTables:
    """One partition's three tables in one open file: their validated, quoted names
    (:attr:`V`, :attr:`S`, :attr:`A`), their columns, the arrays and series rows, reads
    of one column, and the file's errors wrapped (:meth:`reading`).

    Parameters
    ----------
    conn
        The file's connection (read-only, hardened by ``open_database``), in the
        transaction that holds one snapshot of it.
    place
        The partition (as :func:`discover` found it).
    where
        The file as the caller named it, for messages.
    limits
        The store's bounds on what the file may make it read.
    """

    def __init__(
        self, conn: apsw.Connection, place: Place, where: str, limits: Limits | None = None
    ) -> None:
        self.conn = conn
        self.limits = limits or Limits()
        self.place = place
        self.where = where
        self.type: TimeSeriesType = place.type
        # The names come from sqlite_master through discover (validated by the layout's
        # type_of_table), quoted once here.
        self.V = q(place.values)
        self.S = q(place.series)
        self.A = q(place.arrays)
        self._count: int | None = None
        self._checked = False

    def column(self, sql: str, params: Any = ()) -> list:
        """One column of a query as a list, fetched as one object (``Cursor.get``).

        ``get`` gives a lone value for a single row and None both for no rows and for a
        single NULL, so a None is asked again, row by row.
        """
        result = self.conn.execute(sql, params).get
        if type(result) is list:
            return result
        if result is None:
            return [r[0] for r in self.conn.execute(sql, params).fetchall()]
        return [result]

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """The interchange file failing under us (corrupt pages, an odd table definition)
        becomes a StorageError naming the partition. While in it, SQLite hands over no
        cell longer than the store's bound (it refuses before reading the cell from the
        file), so no text or blob of the file costs more."""
        before = self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, self.limits.max_cell_bytes)
        try:
            yield
        except UnicodeDecodeError:
            # apsw decodes TEXT as UTF-8, and SQLite stores whatever bytes it was given.
            raise self._invalid_text() from None
        except apsw.TooBigError:
            raise self._too_long() from None
        except RecursionError:
            raise InvalidParameterError(
                f"{self.where}: a cell of {self.place.values} or its series table nests "
                "deeper than any element or features object can; write it flat and import "
                "again",
                table=self.place.values,
            ) from None
        except apsw.Error as exc:
            raise StorageError(
                f"reading {self.place.values} (and its series and arrays tables) from "
                f"{self.where} failed: {exc}",
                table=self.place.values,
            ) from exc
        finally:
            self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, before)

    def _too_long(self) -> InvalidParameterError:
        """The first cell of the partition's tables longer than the store's bound, as a
        refusal naming its table, row and column (searched under the same bound, so the
        cell is still never read: a column's rows are walked until SQLite refuses one)."""
        conn = self.conn
        for table in (self.place.arrays, self.place.series, self.place.values):
            for col in [r[1] for r in conn.execute(f"PRAGMA table_info({q(table)})")]:
                last = None
                try:
                    for rowid, _cell in conn.execute(
                        f"SELECT rowid, {q(col)} FROM {q(table)} ORDER BY rowid"
                    ):
                        last = rowid
                except apsw.TooBigError:
                    after = "" if last is None else f" WHERE rowid > {int(last)}"
                    rowid = conn.execute(f"SELECT min(rowid) FROM {q(table)}{after}").get
                    return self.limits.too_long(
                        f"{table}, rowid {rowid}, column `{col}`: the cell", None, table=table
                    )
                except apsw.Error:
                    continue  # a table without rowids: named below without its row
        return self.limits.too_long(
            f"a cell of {self.place.values} (or its series or arrays table)",
            None,
            table=self.place.values,
        )

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
        """Refuse a missing column; note a values table without rowids
        (``place.numbered``: its groups are then found by ``array_id`` alone)."""
        if self._checked:
            return
        check_columns_present(self.place, self._columns)
        try:
            self.conn.execute(f"SELECT rowid FROM {self.V} LIMIT 0").fetchall()
        except apsw.SQLError:
            self.place.numbered = False
        self._checked = True

    # -- rows for the core ---------------------------------------------------------------
    def array_rows(self) -> Iterable[Sequence[Any]]:
        return self.conn.execute(f"SELECT id, data_hash, time_axis FROM {self.A}")

    def series_batches(self, columns: Sequence[str]) -> Iterable[Sequence[Sequence[Any]]]:
        # The columns are the layout's (series_columns), never the file's.
        return rows_as_batches(self.conn.execute(f"SELECT {', '.join(columns)} FROM {self.S}"))
