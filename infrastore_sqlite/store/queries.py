"""Catalog queries: selecting rows, listing metadata, counts.

:class:`Queries` is the store's collaborator for what the catalog alone answers: rows
selected by the ``list_metadata`` filters (streamed or listed), chosen columns as plain
tuples for the export, rows by id, metadata dicts, counts. It reads no array (a metadata
row with an irregular series' time axis is ``reading``'s).
The refusals reads and removals share (a missing id, another owner's series) are here.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import (
    LIST,
    DamagedStoreError,
    InvalidParameterError,
    NotFoundError,
    OwnerMismatchError,
    TimeSeriesError,
    damage_terms,
)
from ..model import OwnerCategory, TimeSeriesType
from .api import INTERNAL_PREFIX, check_attribute_key, hash_bytes, series_id
from .prepare import INSERT_COLUMNS, hash_sql, id_sql
from .rowcheck import (
    CHECK_COLUMN,
    CHECKED_COLUMNS,
    RowChecker,
    mismatch_error,
    row_check,
)
from .rows import SELECT_ROWS, SeriesRow, build_filter

if TYPE_CHECKING:
    from .state import StoreState
    from .store import Store

# Positions in SELECT_ROWS of the text columns (a flipped type bit in a row turns text
# into bytes, which no reader of a series expects) and of the integer ones.
_TEXT_OF = operator.itemgetter(2, 5, 7, 9, 10, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 25)
_INT_OF = operator.itemgetter(0, 1, 3, 4, 6, 8, 11)
# SELECT_ROWS' columns a row's checksum covers, in its order, and the checksum's place.
_SELECTED = [
    c.strip().split(".")[-1] for c in SELECT_ROWS.split("SELECT", 1)[1].split("FROM")[0].split(",")
]
_CHECKED_OF = operator.itemgetter(*(_SELECTED.index(c) for c in CHECKED_COLUMNS))
_CHECK_AT = _SELECTED.index(CHECK_COLUMN)
# The row checks of iter_select_fields, by the fields asked for.
_checkers: dict[tuple[str, ...], RowChecker] = {}
_TEXT_OK = frozenset({str, type(None)})
_INT_OK = frozenset({int, type(None)})


def check_owner(
    rows: list[SeriesRow], owner_id: int, owner_category: Any, outcome: str = "not read"
) -> None:
    """The owner guard: any row of another owner refuses the whole call."""
    cat = OwnerCategory.coerce(owner_category)
    for r in rows:
        if r.owner_id != owner_id or r.owner_category is not cat:
            raise OwnerMismatchError(
                f"series {r.id} belongs to owner {r.owner_id} ({r.owner_category.name}), "
                f"not to the expected owner {owner_id} ({cat.name}); {outcome}",
                series=r.label,
            )


def missing_ids(missing: list[int]) -> NotFoundError:
    """The refusal naming series ids the store does not hold (the first ten)."""
    return NotFoundError(
        f"no series with id {', '.join(map(str, missing[:10]))}"
        + (" …" if len(missing) > 10 else "")
        + "; {list} shows the ids the store holds",
        terms={"list": LIST},
    )


def refuse_unknown_ids(store: Store, ids: Sequence[int]) -> None:
    """Refuse a selection by ``ids`` that names a series the store does not hold: an id
    asked for by number is a typo or a removed series, not a filter that matched nothing
    (the other filters may still leave a held id out)."""
    held = {r[0] for r in store.iter_select_fields(("id",), ids=ids)}
    missing = sorted(set(ids) - held)
    if missing:
        raise missing_ids(missing)


# series row is written with), and the feature map's text.
_FIELD_COLUMNS = {name: hash_sql(name) for name in ("id", *INSERT_COLUMNS)} | {
    "features_json": "f.features_json"
}


class Queries:
    """Answers from the catalog alone (see the module docstring)."""

    __slots__ = ("_state",)

    def __init__(self, state: StoreState) -> None:
        self._state = state

    def select(
        self, where: str = "1", params: Sequence[Any] = (), order: str = "t.id"
    ) -> list[SeriesRow]:
        """Catalog rows ``WHERE where`` in ``order``: SQL the store writes itself (its own or
        ``build_filter``'s), the values bound as ``params``."""
        return list(self.iter_select(where, params, order))

    def iter_select(
        self, where: str = "1", params: Sequence[Any] = (), order: str = "t.id"
    ) -> Iterator[SeriesRow]:
        """:meth:`select` one row at a time (the cursor streams; nothing is held)."""
        self._state.check_open()
        cur = self._state.catalog.execute(f"{SELECT_ROWS} WHERE {where} ORDER BY {order}", params)
        typed: dict[bytes, dict[str, Any]] = {}
        try:
            for r in cur:
                if row_check(_CHECKED_OF(r)) != r[_CHECK_AT]:
                    raise mismatch_error(str(self._state.path), r[0], r[5])
                try:
                    row = SeriesRow.from_sql(r)
                except (KeyError, TypeError, ValueError, TimeSeriesError) as exc:
                    raise self._damaged_row(r[0], str(exc)) from None
                if not _TEXT_OK.issuperset(map(type, _TEXT_OF(r))) or not _INT_OK.issuperset(
                    map(type, _INT_OF(r))
                ):
                    raise self._damaged_row(r[0], "a text or number field holds another type")
                # JSON has no ±inf (the feature JSON holds null there); the typed rows do.
                if row.features and None in row.features.values():
                    if row.features_hash not in typed:
                        typed[row.features_hash] = self._typed_features(row.features_hash)
                    row.features = dict(typed[row.features_hash])
                yield row
        except UnicodeDecodeError as exc:
            raise self._undecodable(exc) from None

    def _damaged_row(self, sid: Any, what: str) -> DamagedStoreError:
        """The refusal of a catalog row whose fields no longer decode (a damaged page
        SQLite's own check does not see: a bit flipped inside a row)."""
        return DamagedStoreError(
            f"the catalog row of series id {sid} is damaged ({what}), so it cannot be read; "
            "run {verify} to name every damaged series, then {repair} to set them aside",
            series=f"id {sid}",
            terms=damage_terms(str(self._state.path)),
        )

    def _undecodable(self, exc: UnicodeDecodeError) -> DamagedStoreError:
        """The refusal for catalog text that is not UTF-8 (SQLite stores what it is
        given; a text cell written by another tool can hold any bytes)."""
        return DamagedStoreError(
            "the store's catalog holds text that is not valid UTF-8 (byte "
            f"{exc.object[exc.start : exc.start + 1]!r} at position {exc.start} of a text "
            "cell), so the series it belongs to cannot be read; run {verify} to name the "
            "damaged series, then {repair} to set them aside",
            terms=damage_terms(str(self._state.path)),
        )

    def _decoded(self, cursor: Iterator[tuple]) -> Iterator[tuple]:
        """``cursor``'s rows, with undecodable catalog text refused as damage."""
        try:
            yield from cursor
        except UnicodeDecodeError as exc:
            raise self._undecodable(exc) from None

    def _typed_features(self, features_hash: bytes) -> dict[str, Any]:
        """A feature map rebuilt from its typed ``feature_sets`` rows."""
        out: dict[str, Any] = {}
        for key, kind, i, f, b, text in self._state.catalog.execute(
            "SELECT key, value_kind, value_int, value_float, value_bool, value_str "
            "FROM feature_sets WHERE features_hash = ? ORDER BY key",
            (features_hash,),
        ):
            out[key] = {"int": i, "float": f, "bool": bool(b), "str": text}[kind]
        return out

    def select_rows(self, ids: Sequence[int] | None = None, /, **filters: Any) -> list[SeriesRow]:
        """Catalog rows matching the ``list_metadata`` filters (and among ``ids``, when
        given), in id order."""
        where, params = build_filter(filters, ids)
        return self.select(where, params)

    def iter_select_rows(
        self, ids: Sequence[int] | None = None, /, **filters: Any
    ) -> Iterator[SeriesRow]:
        """``select_rows`` streamed: one row at a time, in id order."""
        where, params = build_filter(filters, ids)
        return self.iter_select(where, params)

    def iter_select_fields(
        self, fields: Sequence[str], ids: Sequence[int] | None = None, **filters: Any
    ) -> Iterator[tuple]:
        """Chosen catalog columns of the matching rows, in id order, as plain tuples.

        For callers that stream many rows and need a few fields of each (the export's
        plan and series tables): no ``SeriesRow`` is built, nothing is decoded.

        Parameters
        ----------
        fields
            Column names of ``time_series_associations`` (``"id"``, ``"data_hash"`` …),
            or ``"features_json"`` (the feature map's JSON text; ±inf are ``null``
            there, :meth:`typed_features` has them).
        ids
            Only these series ids (any order; missing ones are left out), of the rows
            ``filters`` select.
        **filters
            ``list_metadata``'s keywords.
        """
        bad = [f for f in fields if f not in _FIELD_COLUMNS]
        if bad:
            raise InvalidParameterError(f"not a catalog field: {', '.join(bad)}")
        self._state.check_open()
        where, params = build_filter(filters, ids)
        # Then the columns each row's checksum covers that are not asked for: checked,
        # then cut off (rowcheck.py).
        checker = _checkers.get(tuple(fields))
        if checker is None:
            if len(_checkers) > 64:
                _checkers.clear()
            checker = _checkers[tuple(fields)] = RowChecker(list(fields))
        cols = ", ".join([*(_FIELD_COLUMNS[f] for f in fields), checker.extra])
        # The feature maps are joined only when their text is asked for (the filters
        # never name them): one search fewer per row.
        join = (
            " LEFT JOIN feature_maps f ON f.features_hash = t.features_hash"
            if "features_json" in fields
            else ""
        )
        return checker.cut(
            self._decoded(
                self._state.catalog.execute(
                    f"SELECT {cols} FROM time_series_associations t{join} WHERE {where} "
                    "ORDER BY t.id",
                    params,
                )
            ),
            len(fields),
            str(self._state.path),
        )

    def typed_features(self, features_hash: bytes) -> dict[str, Any]:
        """The feature map of ``features_hash`` with its ±inf values (the JSON has null)."""
        self._state.check_open()
        return self._typed_features(features_hash)

    def list_metadata(self, **filters: Any) -> list[dict[str, Any]]:
        """Metadata dicts of the series matching the filters (the reference's keywords)."""
        return [r.metadata() for r in self.select_rows(**filters)]

    def list_metadata_by_ids(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        """``list_metadata`` dicts for ``ids``, in the order given; NotFoundError if one is missing."""
        return [r.metadata() for r in self.rows_by_ids(ids)]

    def rows_by_ids(self, ids: Sequence[int]) -> list[SeriesRow]:
        """Rows for ``ids`` in the order given; NotFoundError names any missing id."""
        wanted = [series_id(i) for i in ids]
        # One query for all of them (the ids bound as one int64 array; one no int64 holds
        # is no rowid, so it is simply missing).
        found = {r.id: r for r in self.iter_select(*build_filter({}, wanted))}
        missing = [i for i in wanted if i not in found]
        if missing:
            raise missing_ids(missing)
        return [found[i] for i in wanted]

    def count_array_references(self, data_hash: str) -> dict[str, Any]:
        """``Store.count_array_references``: series pointing at a stored array."""
        key = hash_bytes(data_hash)
        counts = Counter(
            r.type is TimeSeriesType.DeterministicSingleTimeSeries
            for r in self.iter_select(f"t.data_id = {id_sql('data_id')}", (key,))
        )
        return {"sts": counts[False], "dst": counts[True]}

    def exists(self, id: int) -> bool:
        """Whether a series with this id is stored."""
        return bool(self.select("t.id = ?", (series_id(id),)))

    def store_attribute(self, key: str) -> str | None:
        """The value recorded for ``key``, or None."""
        check_attribute_key(key)
        self._state.check_open()
        return self._state.catalog.scalar(
            "SELECT value FROM store_attributes WHERE key = ?", (key,)
        )

    def store_attributes(self) -> dict[str, str]:
        """Every recorded attribute, by key (the store's own left out)."""
        self._state.check_open()
        rows = self._state.catalog.execute("SELECT key, value FROM store_attributes ORDER BY key")
        return {k: v for k, v in rows if not k.startswith(INTERNAL_PREFIX)}

    def is_empty(self) -> bool:
        """Whether the store holds no series and no attribute of the user's."""
        self._state.check_open()
        return (
            not self.holds_series()
            and self._state.catalog.scalar(
                "SELECT 1 FROM store_attributes WHERE key NOT LIKE 'infrastore_sqlite.%' LIMIT 1"
            )
            is None
        )

    def holds_series(self) -> bool:
        """Whether the catalog holds any series row (one index probe)."""
        return (
            self._state.catalog.scalar("SELECT 1 FROM time_series_associations LIMIT 1") is not None
        )

    def num_distinct_arrays(self) -> int:
        """How many distinct data arrays the catalog names."""
        self._state.check_open()
        return int(self._state.catalog.scalar("SELECT count(*) FROM arrays WHERE kind = 'data'"))

    def counts_by_type(self) -> dict[str, int]:
        """Series per type name, in catalog code order."""
        self._state.check_open()
        out = {}
        for code, n in self._state.catalog.execute(
            "SELECT time_series_type, count(*) FROM time_series_associations GROUP BY 1 ORDER BY 1"
        ):
            out[TimeSeriesType.from_catalog_code(code).name] = n
        return out

    def series_tally(self) -> dict[str, Any]:
        """How many series, owners and series per time reference the catalog holds.

        Counted by SQLite (one pass, grouped): the store's summary needs the numbers,
        not a row object per series, so its memory does not grow with the store.

        Returns
        -------
        dict
            ``series`` (int), ``owners`` (distinct owner category and id pairs, int) and
            ``time_references`` (``{reference or "unspecified": series}``, sorted by key).
        """
        self._state.check_open()
        catalog = self._state.catalog
        refs: dict[str, int] = {}
        for ref, n in catalog.execute(
            "SELECT time_reference, count(*) FROM time_series_associations GROUP BY 1"
        ):
            key = ref or "unspecified"
            refs[key] = refs.get(key, 0) + n
        owners = catalog.scalar(
            "SELECT count(*) FROM (SELECT DISTINCT owner_category, owner_id "
            "FROM time_series_associations)"
        )
        return {
            "series": sum(refs.values()),
            "owners": int(owners),
            "time_references": dict(sorted(refs.items())),
        }
