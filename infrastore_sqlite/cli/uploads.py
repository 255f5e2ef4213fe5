"""``abort-uploads``: the uploads a failed export to object storage left, listed and aborted."""

from __future__ import annotations

import click

from .base import PROG, example, global_options, output_format
from .render import command, emit_doc


@command(
    epilog=example(
        f"{PROG} --store demo-store export -f parquet --dir s3://infrastore/abort-demo",
        f"{PROG} abort-uploads s3://infrastore/abort-demo --dry-run",
        f"{PROG} abort-uploads s3://infrastore/abort-demo",
    )
)
@click.argument("uri", metavar="URI")
@click.option("--dry-run", is_flag=True, help="List the uploads, abort none.")
@click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="A client option, as Polars' storage_options names it (aws_region=…, "
    "aws_endpoint_url=…); repeatable. Credentials default to the AWS_* environment.",
)
@global_options(hidden=True)
@click.pass_context
def abort_uploads(
    ctx: click.Context, uri: str, dry_run: bool, storage_options: tuple[str, ...]
) -> None:
    """Abort the uploads a failed export left under an s3:// export directory.

    An export to object storage completes its uploads only when the whole export
    commits, so a killed export or a server that died under it leaves nothing a listing
    shows; the bucket still keeps the uploads' parts until they are aborted. The next
    export to the same directory aborts those of its own files; this command aborts
    every upload of the layout's files (*.parquet, the manifest) under URI. Run it when
    no export to URI is running: an export's uploads are incomplete until it commits.
    """
    output_format(ctx)
    from ..interchange.parquet.location import is_uri, parse_storage_options
    from ..interchange.parquet.location.uploads import abort_uploads as abort

    if not is_uri(uri):
        raise click.UsageError(
            f"abort-uploads takes an object-storage URI (s3://bucket/prefix), not {uri!r}: "
            "a local export leaves no uploads",
            ctx,
        )
    options = parse_storage_options(storage_options)
    uploads = abort(uri, storage_options=options, dry_run=dry_run)
    emit_doc(
        ctx,
        {
            "uri": uri,
            "dry_run": dry_run,
            "aborted": 0 if dry_run else len(uploads),
            "uploads": [u.as_dict() for u in uploads],
        },
    )
