"""``query``: SQL over an export's fixed-name views, in DuckDB (the library's
:mod:`infrastore_sqlite.interchange.parquet.query` and
:mod:`infrastore_sqlite.interchange.sqlite.query`); this module parses, calls and renders.
"""

from __future__ import annotations

import click

from .base import PROG, example, global_options, output_format
from .render import command, emit_doc, emit_rows


@command(
    epilog=example(
        f"{PROG} --store demo-store export -f parquet --dir pq",
        f"{PROG} query --parquet pq 'SELECT partition_name, count(*) AS n FROM all_values "
        "GROUP BY 1 ORDER BY 1'",
        f"{PROG} -f csv query --parquet pq 'SELECT owner_id, max(value) AS peak FROM "
        "all_values_real_static JOIN all_series USING (partition_name, array_id) GROUP BY 1 "
        "ORDER BY 1'",
        f"{PROG} query --parquet pq 'SELECT * FROM all_series' --output series.parquet",
        f"{PROG} --store demo-store export -f sqlite --db demo.db",
        f"{PROG} query --db demo.db 'SELECT count(*) AS n FROM all_values'",
    )
)
@click.argument("sql")
@click.option(
    "--parquet",
    # --dir as well: the flag export -f parquet wrote the directory with.
    "--dir",
    "parquet_path",
    metavar="PATH",
    help="An export -f parquet directory (or URI: s3://BUCKET/PREFIX); a partition's file "
    "may be a directory of part files.",
)
@click.option("--db", "sqlite_file", metavar="FILE", help="An export -f sqlite database.")
@click.option(
    "--output",
    metavar="FILE",
    help="Write the result to this Parquet file instead of showing it.",
)
@click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="With --parquet URI: a client option, as Polars' storage_options names it "
    "(aws_region=…, aws_endpoint_url=…); repeatable. Credentials default to the AWS_* "
    "environment.",
)
@global_options(hidden=True)
@click.pass_context
def query(
    ctx: click.Context,
    sql: str,
    parquet_path: str | None,
    sqlite_file: str | None,
    output: str | None,
    storage_options: tuple[str, ...],
) -> None:
    """Run one SQL query in DuckDB over an export's fixed-name views.

    The views are the SQLite form's: all_values, all_series, all_arrays, the typed
    all_values_<real|integer|json>_<static|deterministic|probabilistic|scenarios> and
    one flat_<base> per partition, and for
    --parquet each partition's <base>_values, _series and _arrays, over the files in
    place. Instants are plain timestamps: a zoned partition's at UTC, a zoneless one's
    wall clock. Needs pip install 'infrastore-sqlite[query]'.
    """
    fmt = output_format(ctx)
    if bool(parquet_path) == bool(sqlite_file):
        raise click.UsageError("query needs exactly one of --parquet PATH and --db FILE", ctx)
    from ..interchange.duckdb_session import run_sql

    if parquet_path:
        from ..interchange.parquet.location import parse_storage_options
        from ..interchange.parquet.query import connect_parquet

        options = parse_storage_options(storage_options) or None
        con = connect_parquet(parquet_path, storage_options=options)
    else:
        if storage_options:
            raise click.UsageError("--storage-option goes with --parquet URI", ctx)
        from ..interchange.sqlite.query import connect_sqlite

        con = connect_sqlite(sqlite_file)  # type: ignore[arg-type]
    table = run_sql(con, sql, arrow=True)
    if output:
        import pyarrow.parquet as pq

        pq.write_table(table, output, compression="zstd")
        emit_doc(ctx, {"rows": table.num_rows, "output": output})
        return
    rows = table.to_pylist()
    emit_rows(ctx, rows, columns=table.column_names, fmt=fmt)
