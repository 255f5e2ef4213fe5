"""The edit-loop commands: ``diff`` (what importing a file would change in the store) and
``unshare`` (give chosen series of a file their own copy of a shared values group).
"""

from __future__ import annotations

from typing import Any

import click

from ..errors import rehash_term
from ..interchange.importing.filing import DIFF_KEYS, has_changes
from ..interchange.options import ImportOptions
from .base import PROG, example, global_options, open_store, output_format
from .options import bound_keywords, limit_options, selector_options
from .render import Progress, command, emit_doc, emit_rows, note

# The table leaves out what the JSON/CSV forms carry for scripts (where the file holds it).
_DIFF_TABLE = tuple(
    k
    for k in DIFF_KEYS
    if k not in ("owner_type", "owner_category", "values_table", "file_id", "hash_stale")
)


@command(
    epilog=example(
        f"{PROG} --store demo-store export -f sqlite --db demo.db",
        "sqlite3 demo.db 'UPDATE SingleTimeSeries_f64_utc_values SET value = value * 1.1 "
        "WHERE array_id = 3 RETURNING value'",
        f"{PROG} --store demo-store diff --sqlite demo.db",
        f"{PROG} --store demo-store export -f parquet --dir pq",
        f"{PROG} --store demo-store diff --parquet pq",
    )
)
@click.option("--sqlite", "sqlite_file", metavar="FILE", help="The interchange database.")
@click.option(
    "--parquet",
    "parquet_path",
    metavar="PATH",
    help="The export -f parquet files: a directory, a file or a partition stem (local or a "
    "URI: s3://BUCKET/PREFIX, gs://, az://).",
)
@click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="With --parquet URI: a client option, as for add --parquet; repeatable.",
)
@click.option(
    "--table-prefix", default="", metavar="P", help="--sqlite: the prefix the export used."
)
@click.option(
    "--exit-code",
    is_flag=True,
    help="Exit 1 when importing the file would change the store (like git diff --exit-code).",
)
@limit_options
@global_options(hidden=True)
@click.pass_context
def diff(
    ctx: click.Context,
    sqlite_file: str | None,
    parquet_path: str | None,
    table_prefix: str,
    exit_code: bool,
    storage_options: tuple[str, ...],
    **bounds: Any,
) -> None:
    """Show what importing a file with add --sqlite/--parquet --replace would do; write nothing.

    One row per series of the file: added (the store has none), replaced (how many value
    rows differ, the first and last changed instant, which descriptors or grid columns
    differ) or unchanged. Values are compared with the store's own, so the file's hashes
    need not be recomputed first (rehash is for the import); hash_stale says which series'
    recorded data_hash no longer matches their rows, and a line on stderr names the rehash
    command the import needs first.
    """
    fmt = output_format(ctx)
    if bool(sqlite_file) == bool(parquet_path):
        raise click.UsageError("diff needs exactly one of --sqlite FILE and --parquet PATH", ctx)
    if parquet_path and table_prefix:
        raise click.UsageError(
            "--table-prefix cannot be used with --parquet: it names SQLite tables", ctx
        )
    with open_store(ctx, read_only=True) as store, Progress(ctx, "diff") as bar:
        options = ImportOptions.of(progress=bar, **bound_keywords(bounds))
        if parquet_path:
            from ..interchange.parquet.diff import diff_parquet_report
            from ..interchange.parquet.location import parse_storage_options

            entries, changed = diff_parquet_report(
                store,
                parquet_path,
                storage_options=parse_storage_options(storage_options) or None,
                options=options,
            )
        else:
            changed = []
            entries = store.diff_sqlite(sqlite_file, table_prefix=table_prefix, options=options)
    emit_rows(ctx, entries, columns=list(DIFF_KEYS), table_columns=_DIFF_TABLE, fmt=fmt)
    counts = {c: sum(e["change"] == c for e in entries) for c in ("added", "replaced", "unchanged")}
    note(ctx, ", ".join(f"{n} {c}" for c, n in counts.items()))
    for path in changed:
        note(ctx, f"{path} changed since the export (not the size its manifest lists)")
    stale = [e for e in entries if e["hash_stale"]]
    if stale:
        line = _stale_line(stale, sqlite_file)
        if storage_options:
            line += " (with the same --storage-option flags)"
        note(ctx, line)
    if exit_code and has_changes(entries):
        ctx.exit(1)


def _stale_line(stale: list[dict[str, Any]], sqlite_file: str | None) -> str:
    """The one line that says an import would refuse ``stale`` until the hashes are redone."""
    if sqlite_file:
        add = "add --sqlite"
        terms = [rehash_term(sqlite_file)]
    else:
        add = "add --parquet"
        from ..interchange.parquet.partition import rehash_of

        terms = list(dict.fromkeys(rehash_of(e["values_table"]) for e in stale))
    run = " and ".join(t.spell("cli") for t in terms)
    return (
        f"{len(stale)} series' recorded data_hash no longer matches their rows (hash_stale), "
        f"so {add} --replace would refuse them: run {run} first"
    )


@command(
    epilog=example(
        f"{PROG} --store demo-store export -f sqlite --db demo.db",
        f"{PROG} unshare --db demo.db --owner-id 101 --type single",
        "sqlite3 demo.db 'SELECT owner_id, array_id FROM SingleTimeSeries_f64_utc_series "
        "WHERE owner_id IN (101, 102)'",
    )
)
@click.option("--db", required=True, metavar="FILE", help="The interchange database to edit.")
@click.option("--table-prefix", default="", metavar="P", help="The prefix the export used.")
@click.option(
    "--id", "ids", type=int, multiple=True, help="Series row by its id in the file (repeatable)."
)
@selector_options(ids=False, exclude=("features", "zoneless"))
@global_options(hidden=True)
@click.pass_context
def unshare(
    ctx: click.Context, db: str, table_prefix: str, ids: tuple[int, ...], type_: Any, **kw: Any
) -> None:
    """Give the selected series rows of a file their own copy of a shared values group.

    Series with equal values share one values group, so an UPDATE of it changes them all.
    unshare copies each group the selected rows share with rows not selected (a new
    arrays row, the values copied under a new array_id) and points the selected rows at
    the copy, so an edit of the copy touches only them. Prints each copy's new array_id.
    Run rehash after editing, as after any edit. docs/interchange.md shows the SQL.
    """
    from ..interchange.sqlite.unshare import unshare_sqlite

    output_format(ctx)
    selector = {k: v for k, v in kw.items() if v is not None}
    if not selector and not ids and type_ is None:
        raise click.UsageError("unshare needs a selector (--id, --owner-id, --name, …)", ctx)
    copies = unshare_sqlite(
        db, table_prefix=table_prefix, ids=list(ids) or None, time_series_type=type_, **selector
    )
    emit_doc(ctx, {"db": db, "table_prefix": table_prefix, "copies": copies})
    if not copies:
        note(
            ctx,
            "the selected series rows already have their values to themselves; nothing was copied",
        )
