"""The SQLite form's fixed-name views over the Parquet form, in DuckDB (``query --parquet``).

An interchange database gives every reader the same views: ``all_values``, ``all_series``,
``all_arrays``, the typed companions (``all_values_<class>_<kind>``: ``real``, ``integer``
or ``json`` values of ``static``, ``deterministic``, ``probabilistic`` or ``scenarios``
partitions, ``interchange.layout.KEY_KINDS``) and one ``flat_<base>`` per partition (``interchange/sqlite/companions.py``). A directory of
Parquet files gives only file names, and ``read_parquet(dir)`` over the whole directory
mixes the three roles' columns in one table. :func:`connect_parquet` defines the same
views in a DuckDB session over the partition files in place (a file, or a directory of
part files; local or ``s3://``), each partition's files as ``<base>_values``,
``<base>_series`` and ``<base>_arrays``, ``<base>`` being the SQLite base of its stem.

Instants: the session's zone is UTC, and the union views give ``timestamp``,
``issue_time`` and ``initial_timestamp`` as plain ``TIMESTAMP``: the UTC instant of a
zoned partition, the wall clock of a zoneless one, whatever zone the session is later
set to. ``all_values.value`` is text (a number as DuckDB spells it, a list as JSON), as
one column cannot hold the partitions' different types; the typed companions keep each
type. Every name in the SQL is a validated partition base; the files are handed to
DuckDB as values, never spelled in SQL.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidParameterError, StorageError
from ..duckdb_session import connect, load_extension, run_sql
from ..layout import FLAT_SERIES_COLUMNS, KEY_KINDS, VIEW_COLUMNS
from .discovery import Partition, discover, read_metadata
from .layout import ROLES
from .location import Location, locate
from .parts import PartsMetadata

__all__ = ["connect_parquet", "query_parquet"]

#: The type a union view gives a series column a partition lacks.
_NULL_TYPES = {"initial_timestamp": "TIMESTAMP", "length": "BIGINT", "count": "BIGINT"}
_KEYS = (("issue_time", "TIMESTAMP"), ("percentile", "DOUBLE"), ("scenario", "BIGINT"))
_BASE = re.compile(r"[A-Za-z0-9_]+")
#: A file name relative to the export's directory that may be spelled in DuckDB's SQL.
_PLAIN = re.compile(r"[A-Za-z0-9_.=+-]+(/[A-Za-z0-9_.=+-]+)*")
#: The ENUM type of the union views' ``partition_name``: the export's partition bases.
PARTITION_TYPE = "partition_base"
_INTEGERS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "BOOLEAN")


def query_parquet(
    path: str | os.PathLike[str],
    sql: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    arrow: bool = False,
) -> Any:
    """Run ``sql`` over the views of the Parquet export at ``path``.

    Parameters
    ----------
    path
        A directory ``export -f parquet`` wrote (or a partition's file or stem), local or
        ``s3://``; a partition's file may be a directory of part files.
    sql
        One query, over ``all_values``, ``all_series``, ``all_arrays``,
        ``all_values_<real|integer|json>_<kind>``, ``flat_<base>`` and each
        partition's ``<base>_values`` / ``_series`` / ``_arrays``.
    storage_options
        For an ``s3://`` path, as for ``import_parquet`` (keys, region, endpoint); what
        is not given comes from the ``AWS_*`` environment.
    arrow
        Return a ``pyarrow.Table`` instead of a DuckDB relation.

    Returns
    -------
    duckdb.DuckDBPyRelation or pyarrow.Table

    Raises
    ------
    MissingDependencyError
        DuckDB (``pip install 'infrastore-sqlite[query]'``) or its extension is missing.
    InvalidParameterError
        Nothing exported at ``path``; SQL DuckDB refuses (its message, and the views).
    """
    con = connect_parquet(path, storage_options=storage_options)
    return run_sql(con, sql, arrow=arrow)


def connect_parquet(
    path: str | os.PathLike[str], *, storage_options: Mapping[str, Any] | None = None
) -> Any:
    """A DuckDB connection holding the views over the Parquet export at ``path``."""
    where = locate(os.fspath(path), storage_options)
    root = where if where.is_dir() else where.parent
    if where.client_options() is None and "," not in root.uri:
        # A local export: the footers read by DuckDB in the session the query runs in
        # (pyarrow, 0.02-0.03 s to import, is not needed on this path). DuckDB's
        # file_search_path is a comma-separated list: a directory with a comma in its
        # path is read as elsewhere.
        con = connect(search_path=root.uri)
        found = discover(path, storage_options, read_footer=_DuckFooters(con, root))
    else:
        con = connect()
        found = discover(path, storage_options)
    parts = [p for p in found.partitions if not p.foreign]
    if not parts:
        raise InvalidParameterError(
            f"{found.where} holds no exported partition (a values file alone has no series "
            "rows to join): name what export -f parquet wrote",
            table=found.where,
        )
    values = parts[0].files["values"]
    options = values.client_options()
    if options is not None:  # a place another engine reaches through its client
        _object_storage(con, values, options)
    sources = []
    for p in parts:
        base = p.stem.replace(".", "_")
        if not _BASE.fullmatch(base):
            raise InvalidParameterError(f"{p.stem} is not a partition stem", table=p.stem)
        types = {}
        for role in ROLES:
            rel = con.read_parquet(_files(p, role))
            rel.create_view(f"{base}_{role}")
            types[role] = dict(zip(rel.columns, map(str, rel.types), strict=True))
        sources.append((base, p, types))
    for statement in _views(sources):
        con.execute(statement)
    return con


@dataclass(frozen=True, slots=True)
class _Footer:
    """A file's footer as discovery reads it: its key-value metadata."""

    metadata: dict[bytes, bytes]


class _DuckFooters:
    """Footers read by DuckDB's ``parquet_kv_metadata`` for discovery: each file named
    relative to the session's ``file_search_path`` (``root``), a name spelled in the SQL
    only when it is plain (letters, digits, ``_ . = + -``, no ``..``); any other name's
    footer is read by pyarrow, as discovery reads it elsewhere."""

    def __init__(self, con: Any, root: Location) -> None:
        self.con, self.root = con, root.uri

    def __call__(self, path: Location) -> Any:
        rel = os.path.relpath(path.uri, self.root).replace(os.sep, "/")
        if not _PLAIN.fullmatch(rel) or ".." in rel.split("/"):
            return read_metadata(path)
        import duckdb

        try:
            rows = self.con.sql(
                f"SELECT key, value FROM parquet_kv_metadata('{rel}')"  # (a plain name)
            ).fetchall()
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StorageError(
                f"reading {path} failed: {first}; if the file was cut short or damaged, "
                "export it again (or copy it again from where it was exported)",
                table=str(path),
            ) from exc
        return _Footer({bytes(k): bytes(v) for k, v in rows})


def _files(p: Partition, role: str) -> list[str]:
    """The files DuckDB reads for a role: the file, or every part of its directory."""
    meta = p.metadata.get(role)
    paths = meta.parts if isinstance(meta, PartsMetadata) else [p.files[role]]
    return [x.uri for x in paths]


def _object_storage(con: Any, where: Any, options: Mapping[str, Any]) -> None:
    """httpfs loaded and told the keys, region and endpoint (the options, else the
    ``AWS_*`` environment), each as a bound value."""
    if not str(where).startswith(("s3://", "s3a://")):
        raise InvalidParameterError(
            f"query reads s3:// and local paths; {where} is neither (copy it to a local "
            "directory, or query it with DuckDB's own extension for that store)",
            table=str(where),
        )
    load_extension(con, "httpfs", "duckdb_extension_httpfs")
    opts = {str(k).lower().removeprefix("aws_"): str(v) for k, v in options.items()}
    env = os.environ.get

    def pick(*names: str, var: tuple[str, ...] = ()) -> str | None:
        for n in names:
            if opts.get(n):
                return opts[n]
        return next((env(v) for v in var if env(v)), None)

    settings = {
        "s3_access_key_id": pick("access_key_id", var=("AWS_ACCESS_KEY_ID",)),
        "s3_secret_access_key": pick("secret_access_key", var=("AWS_SECRET_ACCESS_KEY",)),
        "s3_session_token": pick("session_token", "token", var=("AWS_SESSION_TOKEN",)),
        "s3_region": pick("region", var=("AWS_REGION", "AWS_DEFAULT_REGION")),
    }
    endpoint = pick("endpoint_url", "endpoint", var=("AWS_ENDPOINT_URL", "AWS_ENDPOINT"))
    if endpoint:
        plain = endpoint.lower().startswith("http://")
        settings["s3_endpoint"] = re.sub(r"^https?://", "", endpoint).rstrip("/")
        settings["s3_url_style"] = "path"
        settings["s3_use_ssl"] = "false" if plain else "true"
    for name, value in settings.items():
        if value is not None:
            # (names from the fixed list above; the value bound)
            con.execute(f"SET {name} = ?", [value])


def _ts(col: str, typ: str) -> str:
    """An instant column as a plain TIMESTAMP: a zoned one at UTC, a wall clock as is."""
    if "TIME ZONE" in typ:
        return f"timezone('UTC', {col})"
    return f"CAST({col} AS TIMESTAMP)"


def _value_class(typ: str) -> str:
    if typ in ("DOUBLE", "FLOAT"):
        return "real"
    if typ.startswith("U") or typ in _INTEGERS:
        return "integer"
    return "json"


def _views(sources: list[tuple[str, Partition, dict[str, dict[str, str]]]]) -> list[str]:
    out = []
    values, series, arrays = [], [], []
    # The typed companions, as the SQLite file has them: one per value class and kind of
    # key columns, so that every row of one has the same keys (none NULL).
    typed: dict[tuple[str, str], list[str]] = {}
    # The partition names as an ENUM, declared in the order VARCHAR sorts them (ORDER BY
    # and min/max as on text): a join on (partition_name, array_id), as the SQLite form's
    # views are joined, then compares a small integer where it compared a constant text
    # (0.20 s against 0.23 s on 100,000 series; array_id alone 0.15 s). DuckDB keeps the
    # key either way: it proves an equality of constants false, never true.
    names = sorted((base for base, _p, _t in sources), key=str.encode)
    listed = ", ".join(f"'{n}'" for n in names)
    out.append(f"CREATE TYPE {PARTITION_TYPE} AS ENUM ({listed})")
    for base, _p, types in sources:
        vt, st = types["values"], types["series"]
        name = f"'{base}'::{PARTITION_TYPE} AS partition_name"
        head = f"SELECT {name}, array_id, {_ts('timestamp', vt['timestamp'])} AS timestamp"
        keys = [
            _ts(c, vt[c]) + f" AS {c}"
            if c == "issue_time" and c in vt
            else (c if c in vt else f"CAST(NULL AS {t}) AS {c}")
            for c, t in _KEYS
        ]
        cls = _value_class(vt.get("value", ""))
        text = "CAST(to_json(value) AS VARCHAR)" if cls == "json" else "CAST(value AS VARCHAR)"
        values.append(f"{head}, {', '.join(keys)}, {text} AS value FROM {base}_values")
        typed_value = {
            "real": "CAST(value AS DOUBLE)",
            "integer": "CAST(value AS INTEGER)" if vt.get("value") == "BOOLEAN" else "value",
            "json": text,
        }[cls]
        have = tuple(c for c, _ in _KEYS if c in vt)
        kind = KEY_KINDS.get(have)
        if kind is not None:  # (a foreign file's other key columns: all_values only)
            tkeys = [k for (c, _), k in zip(_KEYS, keys, strict=True) if c in have]
            typed.setdefault((cls, kind), []).append(
                f"{head}{''.join(', ' + k for k in tkeys)}, {typed_value} AS value "
                f"FROM {base}_values"
            )
        cols = []
        for c in VIEW_COLUMNS["all_series"]:
            if c not in st:
                cols.append(f"CAST(NULL AS {_NULL_TYPES.get(c, 'VARCHAR')}) AS {c}")
            elif c == "initial_timestamp":
                cols.append(f"{_ts(c, st[c])} AS {c}")
            else:
                cols.append(c)
        series.append(f"SELECT {name}, {', '.join(cols)} FROM {base}_series")
        arrays.append(f"SELECT {name}, id, data_hash, time_axis FROM {base}_arrays")
        flat = [f"s.{c}" if c == a else f"s.{c} AS {a}" for c, a in FLAT_SERIES_COLUMNS]
        flat += ["v.timestamp", *(f"v.{c}" for c, _ in _KEYS if c in vt), "v.value"]
        out.append(
            f"CREATE VIEW flat_{base} AS SELECT {', '.join(flat)} FROM {base}_values AS v "
            f"JOIN {base}_series AS s USING (array_id)"
        )
    out.append("CREATE VIEW all_values AS " + " UNION ALL ".join(values))
    out.append("CREATE VIEW all_series AS " + " UNION ALL ".join(series))
    out.append("CREATE VIEW all_arrays AS " + " UNION ALL ".join(arrays))
    for (cls, kind), selects in sorted(typed.items()):
        out.append(f"CREATE VIEW all_values_{cls}_{kind} AS " + " UNION ALL ".join(selects))
    return out
