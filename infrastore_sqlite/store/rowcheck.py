"""The checksum each series row of the catalog carries over its id and fields.

A bit flipped inside a catalog row (a disk, a backup tool, a hand edit) leaves a row
SQLite reads without complaint: ``load_b`` becomes ``load_f``, a data hash names
another array. Each row of ``time_series_associations`` therefore keeps, in its
``row_check`` column (schema step 0003), the CRC-32 of its id and every
:data:`~.prepare.STORED_COLUMNS` field (its arrays by their integer ids, schema step
0004), packed canonically (:func:`row_check`). Every
read that hands rows to a caller compares it (:class:`RowChecker`); a row that does
not match is damage — refused, named by ``verify``, restored by ``repair`` from the
segments' records — never the new truth.

Where it is written: an add computes it with the row it inserts (:func:`row_checks`,
the one path whose cost grows with a bulk add); every other path that inserts or changes
rows (replacements, owner changes, transforms, repair) gets it from the journal's record
of the transaction, which reads back every row the transaction touched anyway
(``journal.record``); a rebuilt catalog gets it where its rows are inserted.

Why CRC-32 over ``marshal`` (version 0): both are C, together 0.65 µs a row against
1.9 µs for ``repr``; version 0 has no references and no interning, so equal values give
equal bytes whichever objects hold them, and it tells ``1`` from ``"1"`` from ``b"1"``
(a text cell read back as bytes is a mismatch). A value ``marshal`` cannot pack (a NumPy
integer, an ``IntEnum``) is packed as the plain value SQLite stores for it.
"""

from __future__ import annotations

import marshal
import numbers
import operator
import zlib
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice, repeat
from typing import Any

from ..errors import DamagedStoreError, TimeSeriesError, damage_terms
from .prepare import STORED_COLUMNS

#: The column holding a series row's checksum.
CHECK_COLUMN = "row_check"
#: The fields the checksum covers, in the order it packs them.
CHECKED_COLUMNS: tuple[str, ...] = ("id", *STORED_COLUMNS)
#: The SQL function (registered on every catalog connection) computing :func:`row_check`
#: from :data:`CHECKED_COLUMNS`: the schema step that adds the column fills it with it.
SQL_FUNCTION = "infrastore_row_check"
#: :data:`CHECKED_COLUMNS` then the stored checksum, as a select list on ``t``.
SELECT_CHECKED = ", ".join(f"t.{c}" for c in CHECKED_COLUMNS) + f", t.{CHECK_COLUMN}"

_crc32 = zlib.crc32
_dumps = marshal.dumps


def row_check(values: Sequence[Any]) -> int:
    """The checksum of a series row: ``values`` are its :data:`CHECKED_COLUMNS`."""
    try:
        return _crc32(_dumps(tuple(values), 0))
    except ValueError:  # a value of a subclass or a NumPy scalar: pack what SQLite stores
        return _crc32(_dumps(tuple(map(_plain, values)), 0))


def _plain(value: Any) -> Any:
    """``value`` as the plain Python value SQLite stores and returns for it."""
    if value is None or type(value) in (int, str, bytes, float):
        return value
    if isinstance(value, bool | numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return value


def sql_row_check(*values: Any) -> int:
    """:func:`row_check` as the SQL function :data:`SQL_FUNCTION`."""
    return row_check(values)


def row_checks(values: Iterable[tuple]) -> list[int]:
    """:func:`row_check` of each of ``values`` (plain tuples), in one pass of C calls
    (``map`` over ``marshal`` then ``crc32``: no Python frame per row, which cost a read
    or an add as much as the checksum itself)."""
    values = values if isinstance(values, list) else list(values)
    try:
        return list(map(_crc32, map(_dumps, values, repeat(0))))
    except ValueError:  # a value marshal cannot pack: row by row, as row_check does
        return [row_check(v) for v in values]


def mismatch_error(store_path: str, sid: Any, name: Any) -> DamagedStoreError:
    """The refusal of a series row whose checksum does not match its fields."""
    shown = name if isinstance(name, str) else repr(name)
    return DamagedStoreError(
        f"the catalog {store_path}/catalog.sqlite is damaged: the row of series id {sid} "
        f"(named {shown!r} as it reads) does not match its checksum, so a field of it "
        "(its name, owner, hashes or another) is not what the store wrote, and it is not "
        "read; run {verify} to name every damaged row, then {repair} to restore them from "
        "the records the segments keep",
        series=f"{shown} (id {sid})",
        terms=damage_terms(store_path),
    )


_NAME_AT = CHECKED_COLUMNS.index("name")


#: Every series row's checked columns and checksum, then who it is (owner, type, category).
_SELECT_ALL = (
    f"SELECT {SELECT_CHECKED}, t.owner_id, t.owner_type, t.owner_category "
    "FROM time_series_associations t"
)


def mismatched_rows(cat: Any) -> dict[int, tuple]:
    """Series rows whose checksum does not match their fields: ``id -> (owner_id,
    owner_type, owner_category, name)``, as read. A row whose text is not UTF-8 is left
    to ``damage.bad_rows`` (it names it); a catalog that cannot be scanned gives ``{}``
    (``verify`` names that damage)."""
    width = len(CHECKED_COLUMNS)
    out: dict[int, tuple] = {}

    def note(r: Sequence[Any]) -> None:
        if row_check(r[:width]) != r[width]:
            out[int(r[0])] = (*r[width + 1 :], r[_NAME_AT])

    try:
        try:
            for r in cat.execute(_SELECT_ALL):
                note(r)
            return out
        except UnicodeDecodeError:
            pass  # text that is not UTF-8 stops the scan: go again one row at a time
        out = {}
        for (sid,) in cat.execute("SELECT id FROM time_series_associations").fetchall():
            try:
                got = cat.execute(_SELECT_ALL + " WHERE t.id = ?", (sid,)).fetchall()
            except UnicodeDecodeError:
                continue
            for r in got:
                note(r)
    except TimeSeriesError:
        return {}
    return out


class RowChecker:
    """The check of rows that already select some of :data:`CHECKED_COLUMNS`: ``extra``
    is the select list (on ``t``) of the others and the checksum, to append to the
    select, and :meth:`check` checks such rows in place (no column is read twice, no row
    copied: a read's extra cost is the checksum alone).

    Parameters
    ----------
    selected
        The column each position of the row holds before ``extra`` (None: not a column of
        ``time_series_associations``, e.g. a joined table's).
    """

    __slots__ = ("_fields", "_id_at", "_name_at", "_stored", "at", "extra")

    def __init__(self, selected: Sequence[str | None]) -> None:
        missing = [c for c in CHECKED_COLUMNS if c not in selected]
        names = [*selected, *missing, CHECK_COLUMN]
        self.extra = ", ".join(f"t.{c}" for c in (*missing, CHECK_COLUMN))
        self.at = len(names) - 1
        self._stored = operator.itemgetter(self.at)
        at = [names.index(c) for c in CHECKED_COLUMNS]
        if at == list(range(at[0], at[0] + len(at))):
            # Selected together in the order the checksum packs them: one slice of the
            # row (a copy of the pointers) instead of a pick of each (2.5x cheaper).
            self._fields = operator.itemgetter(slice(at[0], at[0] + len(at)))
        else:
            self._fields = operator.itemgetter(*at)
        self._name_at = names.index("name")
        self._id_at = names.index("id")

    def check(self, rows: list[Any], store_path: str) -> list[Any]:
        """``rows``, each checked (:func:`mismatch_error` names the first that fails):
        every row's checksum computed and compared in C-level passes (:func:`row_checks`,
        one list comparison), the rows looked at one by one only when one differs."""
        # One fused pass (pick the fields, pack, checksum) with no list of picked
        # tuples in between: each is freed as soon as it is packed (7 % of the check).
        try:
            sums = list(map(_crc32, map(_dumps, map(self._fields, rows), repeat(0))))
        except ValueError:  # a value marshal cannot pack: row by row, as row_check does
            sums = list(map(row_check, map(self._fields, rows)))
        if sums == list(map(self._stored, rows)):
            return rows
        fields, at = self._fields, self.at
        for r in rows:
            if row_check(fields(r)) != r[at]:
                raise mismatch_error(store_path, r[self._id_at], r[self._name_at])
        return rows

    def cut(self, rows: Iterable[Any], width: int, store_path: str) -> Iterator[Any]:
        """``rows``, checked (:meth:`check`) a block of them at a time as they come (the
        memory of a block, not of every row), each then cut to its first ``width``
        columns (what the caller selected)."""
        it = iter(rows)
        first = operator.itemgetter(slice(0, width))
        while block := list(islice(it, _CUT_BLOCK)):
            self.check(block, store_path)
            yield from map(first, block)


#: Rows :meth:`RowChecker.cut` checks at once.
_CUT_BLOCK = 1024
