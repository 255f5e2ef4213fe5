"""Give chosen series of an interchange database their own copy of a shared values group.

The store is content-addressed, so series with equal values share one arrays row and one
group of values rows (a profile used by a thousand loads is one group). An ``UPDATE`` of
that group changes every series that names it. :func:`unshare_sqlite` copies the group
for the selected series rows, so an edit of the copy touches only them.

For each partition and each values group that selected rows share with rows not
selected, it runs (``:old`` the group's ``array_id``, ``:new`` the next free one)::

    INSERT INTO <base>_arrays (id, data_hash, time_axis)
        SELECT :new, 'unshared:' || :new || ':' || data_hash, time_axis
        FROM <base>_arrays WHERE id = :old;
    INSERT INTO <base>_values (array_id, timestamp, ..., value)
        SELECT :new, timestamp, ..., value FROM <base>_values
        WHERE array_id = :old ORDER BY rowid;
    UPDATE <base>_series SET array_id = :new WHERE id IN (<the selected rows>);

The copy's ``data_hash`` is a placeholder (the arrays table holds one row per key, and
the copy's values have the key of the original until they are edited): after editing,
``rehash`` records the real hash, and a copy left unedited merges back into the
original there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw

from ...core.periods import as_period
from ...errors import InvalidParameterError
from ...model import OwnerCategory, TimeSeriesType
from ..layout import validate_prefix
from .database import open_database, write_transaction
from .reader import discover
from .schema import q

#: The selector keywords, as ``list_metadata`` names them, with the series-table column.
SELECTORS: dict[str, str] = {
    "owner_id": "owner_id",
    "owner_type": "owner_type",
    "owner_category": "owner_category",
    "name": "name",
    "name_glob": "name",
    "resolution": "resolution",
    "component_field": "component_field",
}


def unshare_sqlite(
    path: str | Path,
    *,
    table_prefix: str = "",
    ids: Sequence[int] | None = None,
    time_series_type: TimeSeriesType | str | None = None,
    **filters: Any,
) -> list[dict[str, Any]]:
    """Copy each shared values group the selected series rows name, for them alone.

    Parameters
    ----------
    path
        An interchange database (``export_sqlite`` wrote it).
    table_prefix
        The prefix the export used.
    ids
        Series rows by their ``id`` column in the file.
    time_series_type
        Only the partitions of this type.
    **filters
        ``owner_id``, ``owner_type``, ``owner_category``, ``name``, ``name_glob`` (a
        SQLite GLOB), ``resolution``, ``component_field``: the series rows to select.
        At least one selector (or ``ids``) is required.

    Returns
    -------
    list of dict
        One per copy made: ``series_table``, ``values_table``, ``array_id`` (the shared
        group), ``new_array_id`` (the copy, which the selected rows now name),
        ``series`` (their ids in the file) and ``rows`` (values rows copied). Selected
        rows that already have a group of their own are left alone and not listed.

    Raises
    ------
    InvalidParameterError
        No selector, an unknown keyword, or nothing in the file matches.
    """
    validate_prefix(table_prefix)
    unknown = set(filters) - set(SELECTORS)
    if unknown:
        raise InvalidParameterError(
            f"unshare_sqlite() got unknown keyword(s) {', '.join(sorted(unknown))}; accepted: "
            f"ids, time_series_type, {', '.join(SELECTORS)}"
        )
    given = {k: v for k, v in filters.items() if v is not None}
    if not given and not ids and time_series_type is None:
        raise InvalidParameterError(
            "unshare needs a selector (owner_id=, name=, ids=, …): copying every group for "
            "every series would change nothing"
        )
    where, params = _where(given, ids)
    tst = None if time_series_type is None else TimeSeriesType.coerce(time_series_type)
    where_file = str(path)
    conn = open_database(path, read_only=False, through_link=False)
    try:
        with write_transaction(conn, where_file, "unsharing in"):
            copies: list[dict[str, Any]] = []
            matched = 0
            for t in discover(conn, table_prefix, where_file, allow_derived=True):
                # A derived partition is never imported, so editing it would do nothing.
                if t.type is TimeSeriesType.DeterministicSingleTimeSeries:
                    continue
                if tst is not None and t.type is not tst:
                    continue
                n, made = _unshare(conn, t, where, params)
                matched += n
                copies.extend(made)
            if not matched:
                raise InvalidParameterError(
                    f"no series row of {where_file} under the table prefix {table_prefix!r} "
                    "matches the selector; nothing was changed"
                )
    finally:
        with contextlib.suppress(apsw.Error):
            conn.close()
    return copies


def _where(given: dict[str, Any], ids: Sequence[int] | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for key, value in given.items():
        if key == "owner_category":
            value = OwnerCategory.coerce(value).name
        elif key == "resolution":
            value = str(as_period(value, what="resolution"))
        elif key == "owner_id":
            value = int(value)
        clauses.append(f"{SELECTORS[key]} {'GLOB' if key == 'name_glob' else '='} ?")
        params.append(value)
    if ids:
        clauses.append(f"id IN ({', '.join('?' * len(ids))})")
        params.extend(int(i) for i in ids)
    return " AND ".join(clauses) or "1", params


def _unshare(conn: apsw.Connection, t: Any, where: str, params: list[Any]) -> tuple[int, list]:
    """Unshare in one partition; returns (rows matched, copies made)."""
    A, S, V = q(t.arrays), q(t.series), q(t.values)
    chosen: dict[int, list[int]] = {}
    for sid, aid in conn.execute(f"SELECT id, array_id FROM {S} WHERE {where} ORDER BY id", params):
        chosen.setdefault(aid, []).append(sid)
    columns = [c[1] for c in conn.execute(f"PRAGMA table_info({V})") if c[1] != "array_id"]
    made = []
    for aid, sids in chosen.items():
        sharing = conn.execute(f"SELECT count(*) FROM {S} WHERE array_id = ?", (aid,)).fetchone()[0]
        if sharing == len(sids):
            continue  # the selected rows are the only ones naming this group
        new = conn.execute(f"SELECT COALESCE(max(id), 0) + 1 FROM {A}").fetchone()[0]
        conn.execute(
            f"INSERT INTO {A} (id, data_hash, time_axis) SELECT ?1, 'unshared:' || ?1 || ':' || "
            f"data_hash, time_axis FROM {A} WHERE id = ?2",
            (new, aid),
        )
        cols = ", ".join(columns)
        conn.execute(
            f"INSERT INTO {V} (array_id, {cols}) SELECT ?, {cols} FROM {V} WHERE array_id = ? "
            "ORDER BY rowid",
            (new, aid),
        )
        rows = conn.changes()
        conn.execute(
            f"UPDATE {S} SET array_id = ? WHERE id IN ({', '.join('?' * len(sids))})", (new, *sids)
        )
        made.append(
            {
                "series_table": t.series,
                "values_table": t.values,
                "array_id": aid,
                "new_array_id": new,
                "series": sids,
                "rows": rows,
            }
        )
    return sum(len(s) for s in chosen.values()), made


__all__ = ["SELECTORS", "unshare_sqlite"]
