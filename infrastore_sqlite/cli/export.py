"""The interchange-file commands: ``export`` (the selection to a database, Parquet
files, or per-series CSV/JSON/JSONL files) and ``rehash`` (recompute the hashes of an
edited database).
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from datetime import datetime
from typing import Any

import click

from ..errors import FileTriggersWarning
from ..interchange.options import ExportOptions
from ..textfiles import (
    SERIES_FILE_FORMATS,
    export_series_files,
    series_meta,
    value_rows,
    write_series,
)
from .base import (
    EXPORT_FORMATS,
    PROG,
    TABLE_FORMATS,
    example,
    global_options,
    globals_of,
    open_store,
    output_format,
)
from .options import (
    TIME_RANGE,
    bound_keywords,
    limit_options,
    selection_of,
    selector_options,
)
from .render import Progress, command, dumps, emit_doc, emit_rows, note, on_interrupt
from .store_commands import one

# ---------------------------------------------------------------------------- rehash


@command(
    epilog=example(
        f"{PROG} --store demo-store export -f sqlite --db demo.db",
        "sqlite3 demo.db 'UPDATE SingleTimeSeries_f64_utc_values SET value = value * 1.1 "
        "WHERE array_id = 1 RETURNING value'",
        f"{PROG} rehash --db demo.db",
        f"{PROG} init copy-store",
        f"{PROG} --store copy-store add --sqlite demo.db",
        f"{PROG} --store demo-store export -f parquet --dir pq",
        f"{PROG} rehash --dir pq",
    )
)
@click.option("--db", metavar="FILE", help="The interchange database to fix.")
@click.option(
    "--dir",
    "directory",
    metavar="DIR",
    help="The export -f parquet directory to fix (its arrays files hold the hashes).",
)
@click.option(
    "--table-prefix", default="", metavar="P", help="--db: only the partitions under this prefix."
)
@click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="With an object-storage --dir: a client option, as Polars' storage_options names it "
    "(aws_region=…, aws_endpoint_url=…); repeatable. Credentials default to the AWS_* "
    "(GOOGLE_*, AZURE_*) environment.",
)
@limit_options
@global_options(hidden=True)
@click.pass_context
def rehash(
    ctx: click.Context,
    db: str | None,
    directory: str | None,
    table_prefix: str,
    storage_options: tuple[str, ...],
    **bounds: Any,
) -> None:
    """Recompute every array's data_hash in an exported database or Parquet directory.

    After values were edited with plain SQL (or rewritten in a query engine), the import's
    checksum refuses them; rehash makes the recorded hashes describe the edited values
    again, so the import can keep its checksum on for everything else. No store is
    needed. With --dir the arrays files are written again; when the new hashes change
    the arrays' order, the partition's ids are given again and its values and series
    files rewritten too.
    """
    output_format(ctx)
    if bool(db) == bool(directory):
        raise click.UsageError("rehash needs exactly one of --db FILE and --dir DIR", ctx)
    if directory:
        from ..interchange.parquet.rehash import rehash_parquet

        if table_prefix:
            raise click.UsageError(
                "--table-prefix cannot be used with --dir: it names SQLite tables", ctx
            )
        from ..interchange.parquet.location import parse_storage_options

        options = parse_storage_options(storage_options) or None
        with Progress(ctx, "rehash", "array") as bar:
            changed = rehash_parquet(
                directory, progress=bar, storage_options=options, **bound_keywords(bounds)
            )
        emit_doc(ctx, {"rehashed": changed, "dir": directory})
        return
    if storage_options:
        raise click.UsageError("--storage-option goes with --dir URI", ctx)
    from ..interchange.sqlite.rehash import rehash_sqlite

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FileTriggersWarning)
        with Progress(ctx, "rehash", "array") as bar:
            changed = rehash_sqlite(
                db,  # type: ignore[arg-type]
                table_prefix,
                progress=bar,
                **bound_keywords(bounds),
            )
    doc: dict[str, Any] = {"rehashed": changed, "db": db, "table_prefix": table_prefix}
    for warned in caught:
        if isinstance(warned.message, FileTriggersWarning):
            note(ctx, f"warning: {warned.message}")
            doc["triggers_not_run"] = warned.message.triggers
        else:
            warnings.showwarning(warned.message, warned.category, warned.filename, warned.lineno)
    emit_doc(ctx, doc)


# ---------------------------------------------------------------------------- export

_EXPORT_TABLE = ("values_table", "series", "arrays", "rows")
SUMMARY_FORMATS = TABLE_FORMATS


@command(
    epilog=example(
        f"{PROG} --store demo-store export -f sqlite --db demo.db",
        f"{PROG} --store demo-store export -f sqlite --db demo.db --overwrite --type single \\",
        "    --time-range 2024-07-02T00:00:00..2024-07-03T00:00:00",
        f"{PROG} --store demo-store -f json export --db run1.db --table-prefix run1_ \\",
        "    --owner-type RenewableDispatch \\",
        "    --time-range 2024-07-01T00:00:00Z..2024-07-02T00:00:00Z",
        "sqlite3 demo.db 'SELECT partition_name, count(*) FROM all_values GROUP BY 1'",
        f"{PROG} --store demo-store export -f parquet --dir parquet --summary json",
        f"{PROG} --store demo-store export -f sqlite --db two.db --id 1 --id 4",
        f"{PROG} --store demo-store export -f csv --owner-id 101 --type single \\",
        "    --name max_active_power",
        f"{PROG} --store demo-store export -f jsonl --dir series --owner-type PowerLoad",
    )
)
@selector_options()
@click.option(
    "--db",
    metavar="FILE",
    help="The SQLite database to write (created if absent; tables are only added).",
)
@click.option(
    "--dir",
    "dir_",
    metavar="DIR",
    help="With -f parquet: the directory for the Parquet files (created if absent; files are "
    "only added unless --overwrite), or an object-storage prefix (s3://BUCKET/PREFIX, gs://, "
    "az://, abfs://); with -f csv, json or jsonl and no --db: one file per series (created if "
    "absent; files are only added).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    metavar="N",
    help="With -f parquet: write partitions from N worker processes (the same files as one; "
    "a worker's failure fails the export and leaves nothing).",
)
@click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="With an object-storage --dir: a client option, as Polars' storage_options names it "
    "(aws_region=…, aws_endpoint_url=…); repeatable. Credentials default to the AWS_* "
    "(GOOGLE_*, AZURE_*) environment.",
)
@click.option(
    "--table-prefix",
    default="",
    metavar="P",
    help="Prefix for every table and view name, e.g. run1_.",
)
@click.option(
    "--time-range",
    type=TIME_RANGE,
    help="Clip every series to half-open START..END (whole forecast windows by issue time); "
    "bounds without an offset are each series' own wall clock.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace an existing --db file (built beside it, swapped in when complete); with "
    "-f parquet, replace the files of the same names in --dir.",
)
@click.option(
    "--include-derived",
    is_flag=True,
    help="Also write DeterministicSingleTimeSeries (materialized windows; no import takes them back).",
)
@click.option("--dry-run", is_flag=True, help="Plan and print the partitions; write nothing.")
@click.option(
    "--provenance",
    type=click.Choice(["name", "full"]),
    default=None,
    help="With --db: what the file's infrastore_exports row says of the store: its name "
    "(the default: the file is handed out) or its full path.",
)
@click.option(
    "--summary",
    type=click.Choice(SUMMARY_FORMATS),
    help="With -f parquet or per-series --dir: how the files written print (default table; "
    "json gives the list). With --db, -f itself names it.",
)
@global_options(hidden=True)
@click.pass_context
def export(
    ctx: click.Context,
    db: str | None,
    dir_: str | None,
    table_prefix: str,
    time_range: tuple[datetime, datetime] | None,
    include_derived: bool,
    overwrite: bool,
    dry_run: bool,
    summary: str | None,
    storage_options: tuple[str, ...],
    jobs: int,
    provenance: str | None,
    **kw: Any,
) -> None:
    """Export the selected series to one SQLite database (-f sqlite --db FILE) or to
    Parquet files (-f parquet --dir DIR).

    One values/series/arrays table triple per (type, value type, time reference)
    partition, plus the views all_values, all_series and all_arrays; each distinct
    array is written once. Prints one row per partition (values table, series,
    arrays, rows). With --db the -f option may instead name how that summary prints
    (json gives the list of partitions). add --sqlite reads the file back.

    -f parquet --dir DIR writes the same partitions as three Parquet files each
    (<stem>.values/series/arrays.parquet) for DuckDB, Polars or pandas; it needs pyarrow
    (pip install 'infrastore-sqlite[parquet]').

    -f csv, json or jsonl without --db writes series for a spreadsheet: the one series
    the selectors match to stdout, or with --dir DIR one file per series
    (<id>_<owner_id>_<name>.csv). Columns as get prints them: timestamp,value (value[0],
    … per element) or, for a forecast, issue_time,target_time,value….

    An existing --db only gains tables, so exporting the same selection into it again
    is refused; --overwrite replaces the file instead. Derived series
    (DeterministicSingleTimeSeries) are left out unless --include-derived: stderr says
    how many. One --time-range serves a store that mixes zoneless and zoned series:
    bounds without an offset are read on each series' own wall clock; bounds with one
    are instants, which zoneless series refuse (--zoned leaves them out).
    """
    fmt = output_format(ctx, EXPORT_FORMATS)
    filters = selection_of(kw)
    container = globals_of(ctx).container
    if container is not None:
        # -f named both: the container, and how its summary prints.
        if container == "parquet":
            if summary is not None and summary != fmt:
                raise click.UsageError(
                    f"-f {fmt} and --summary {summary} both name how the files written print; "
                    "give one",
                    ctx,
                )
            summary, fmt = fmt, "parquet"
        elif db is None:
            raise click.UsageError("export -f sqlite needs --db FILE", ctx)
    if provenance is not None and (fmt == "parquet" or db is None):
        raise click.UsageError(
            "--provenance goes with -f sqlite --db FILE: only the database records where it "
            "came from",
            ctx,
        )
    if fmt == "parquet":
        where = {"overwrite": overwrite, "storage_options": storage_options, "jobs": jobs}
        _export_parquet(ctx, dir_, db, table_prefix, summary, time_range, include_derived,
                        dry_run, filters, where)  # fmt: skip
        return
    if storage_options:
        raise click.UsageError("--storage-option goes with -f parquet --dir URI", ctx)
    if jobs != 1:
        raise click.UsageError(
            "--jobs goes with -f parquet: -f sqlite writes one file, which has one writer", ctx
        )
    if db is None and fmt in SERIES_FILE_FORMATS:
        _export_series(ctx, fmt, dir_, summary, time_range,
                       {"table_prefix": table_prefix, "overwrite": overwrite,
                        "include_derived": include_derived, "dry_run": dry_run},
                       kw)  # fmt: skip
        return
    if summary is not None:
        raise click.UsageError(
            "--summary names how -f parquet or per-series --dir prints its files; with --db, "
            "-f json, jsonl or csv names it",
            ctx,
        )
    if dir_ is not None:
        raise click.UsageError(
            "--dir is for -f parquet or per-series files (-f csv, json or jsonl without "
            "--db); -f sqlite writes one file: --db FILE",
            ctx,
        )
    if db is None:
        if fmt == "sqlite":
            raise click.UsageError("export -f sqlite needs --db FILE", ctx)
        raise click.UsageError(
            "export needs a target: -f sqlite --db FILE, -f parquet --dir DIR, or -f csv, "
            "json or jsonl for series values (one series to stdout, or --dir DIR)",
            ctx,
        )
    on_interrupt(
        ctx,
        f"interrupted: nothing was written to {db} (an export adds its tables in one "
        "transaction, or builds a new file beside the target)",
    )
    shown = "table" if fmt == "sqlite" else fmt
    with open_store(ctx, read_only=True) as store, Progress(ctx, "export") as bar:
        options = ExportOptions.of(
            time_range=time_range,
            include_derived=include_derived,
            dry_run=dry_run,
            overwrite=overwrite,
            progress=bar,
            **filters,
        )
        parts = store.export_sqlite(
            db, table_prefix=table_prefix, provenance=provenance or "name", options=options
        )
    for notice in parts.messages():
        note(ctx, notice.render("cli"))
    columns = list(parts[0]) if parts else _partition_columns()
    _emit_export(ctx, parts, shown, ("db", db), dry_run, columns, _EXPORT_TABLE)


def _emit_export(
    ctx: click.Context,
    parts: list[dict[str, Any]],
    shown: str,
    target: tuple[str, str],
    dry_run: bool,
    columns: list[str],
    table_columns: tuple[str, ...],
) -> None:
    """Print an export's partitions (or, at dry run, the plan) as ``shown`` says."""
    key, where = target
    if dry_run:
        doc = {
            "dry_run": True,
            key: where,
            "partitions": parts,
            "series": sum(p["series"] for p in parts),
            "rows": sum(p["rows"] for p in parts),
        }
        if shown in ("json", "jsonl"):
            click.echo(dumps(doc, pretty=shown == "json"))
        else:
            emit_rows(ctx, parts, columns=columns, table_columns=table_columns, fmt=shown)
            note(ctx, f"dry run: nothing was written to {where}")
        return
    emit_rows(ctx, parts, columns=columns, table_columns=table_columns, wrap=False, fmt=shown)
    if not parts:
        note(ctx, f"the selection matched no series; {where} was not written")


_PARQUET_TABLE = ("values_file", "series", "arrays", "rows")


def _export_parquet(
    ctx: click.Context,
    directory: str | None,
    db: str | None,
    table_prefix: str,
    summary: str | None,
    time_range: tuple[datetime, datetime] | None,
    include_derived: bool,
    dry_run: bool,
    filters: dict[str, Any],
    where: dict[str, Any],
) -> None:
    """``export -f parquet --dir DIR``: the usage errors, then the library, then the rows.
    ``where`` holds ``overwrite``, the ``--storage-option`` texts and ``jobs``."""
    if db is not None:
        raise click.UsageError(
            "--db names a SQLite database, which -f parquet does not write: use -f parquet "
            "--dir DIR for Parquet files, or -f sqlite --db FILE",
            ctx,
        )
    if table_prefix:
        raise click.UsageError(
            "--table-prefix names SQLite tables; -f parquet writes files named by partition "
            "into --dir DIR (export into another directory to keep runs apart)",
            ctx,
        )
    if directory is None:
        raise click.UsageError("export -f parquet needs --dir DIR", ctx)
    from ..interchange.parquet.export import SUMMARY_KEYS
    from ..interchange.parquet.location import parse_storage_options

    on_interrupt(
        ctx,
        f"interrupted: nothing was written to {directory} (the files appear only when every "
        "partition is complete; what was under way is removed)",
    )
    storage_options = parse_storage_options(where["storage_options"])
    with open_store(ctx, read_only=True) as store, Progress(ctx, "export") as bar:
        options = ExportOptions.of(
            time_range=time_range,
            include_derived=include_derived,
            dry_run=dry_run,
            overwrite=where["overwrite"],
            progress=bar,
            **filters,
        )
        parts = store.export_parquet(
            directory,
            storage_options=storage_options or None,
            jobs=where["jobs"],
            options=options,
        )
    shown = summary or "table"
    _emit_export(ctx, parts, shown, ("dir", directory), dry_run, list(SUMMARY_KEYS),
                 _PARQUET_TABLE)  # fmt: skip


def _partition_columns() -> list[str]:
    from ..interchange.plan import SUMMARY_KEYS

    return list(SUMMARY_KEYS)


# ---------------------------------------------------------------------------- per series
_SERIES_FLAGS = {
    "table_prefix": "--table-prefix",
    "overwrite": "--overwrite",
    "include_derived": "--include-derived",
    "dry_run": "--dry-run",
}


def _export_series(
    ctx: click.Context,
    fmt: str,
    directory: str | None,
    summary: str | None,
    time_range: tuple[datetime, datetime] | None,
    flags: dict[str, Any],
    kw: dict[str, Any],
) -> None:
    """``export -f csv|json|jsonl``: one series to stdout, or ``--dir DIR`` a file each."""
    given = [_SERIES_FLAGS[k] for k, v in flags.items() if v]
    if given:
        raise click.UsageError(
            f"{', '.join(given)} applies to -f sqlite or -f parquet exports; -f {fmt} "
            "without --db writes series values and takes the selectors and --time-range",
            ctx,
        )
    if directory is None:
        if summary is not None:
            raise click.UsageError("--summary goes with --dir (the files written)", ctx)
        on_interrupt(ctx, "interrupted: the series was not written in full")
        with open_store(ctx, read_only=True) as store:
            row = one(store, kw, command_name=f"export -f {fmt}")
            series = (
                store.read_by_ids_range([row.id], time_range)[0]
                if time_range is not None
                else store.read_by_id(row.id)
            )
            meta = series_meta(row)
        columns, rows = value_rows(series)
        write_series(sys.stdout, fmt, meta, columns, rows)
        return
    on_interrupt(
        ctx,
        f"interrupted: nothing was written to {directory} (the files this export had "
        "written were removed)",
    )
    with open_store(ctx, read_only=True) as store, Progress(ctx, "export", "series") as bar:
        files = export_series_files(
            store, directory, fmt, time_range=time_range, progress=bar, **selection_of(kw)
        )
    rows_out = [dataclasses.asdict(f) for f in files]
    columns = ["id", "owner_id", "name", "file", "rows"]
    emit_rows(ctx, rows_out, columns=columns, wrap=False, fmt=summary or "table")
    if not files:
        note(ctx, f"the selection matched no series; nothing was written to {directory}")
