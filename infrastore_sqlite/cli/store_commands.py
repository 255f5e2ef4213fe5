"""The commands on the store itself: ``init``, ``demo``, ``list``, ``get``, ``info``,
``transform``, ``remove``, ``verify``, ``repair``.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import click

from ..errors import (
    NotFoundError,
    StoreExistsError,
)
from ..store import Store, catalog_path
from ..store.arrays import compression_spec
from ..store.repair import repair_directory, restore_hint
from ..textfiles import json_row, series_meta, value_rows
from .base import (
    CANDIDATES_SHOWN,
    PROG,
    Ambiguous,
    Refused,
    example,
    global_options,
    globals_of,
    open_store,
    output_format,
    store_path,
    timeout_of,
)
from .options import CATEGORY, DURATION, TIME_RANGE, filters_of, select, selector_options
from .render import Progress, command, dumps, emit_doc, emit_rows, note, table_text


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


# ---------------------------------------------------------------------------- init


def _compression(text: str) -> tuple[str, int]:
    kind, _, level = text.strip().lower().partition(":")
    if kind == "none" and not level:
        return "none", 0
    if kind in ("auto", "deflate") and (not level or (level.isdigit() and 0 <= int(level) <= 9)):
        return kind, int(level or 3)
    raise click.BadParameter(
        f"{text!r} is not auto, none, deflate, auto:L or deflate:L with L in 0-9",
        param_hint="--compression",
    )


@command(
    epilog=example(
        f"{PROG} --store grid-store init --compression deflate:6",
        f"{PROG} --store grid-store info",
    )
)
@click.argument("path", required=False, metavar="[PATH]")
@click.option(
    "--compression",
    default="auto",
    show_default=True,
    metavar="auto|none|deflate|auto:L|deflate:L",
    help="How arrays are compressed on disk: auto DEFLATEs integer and bool arrays and "
    "stores float arrays as they are (DEFLATE shrinks measured values by little and "
    "slows every add), deflate compresses every array; L is the DEFLATE level 0-9 "
    "(default 3).",
)
@click.option("--no-shuffle", is_flag=True, help="Do not byte-shuffle before DEFLATE.")
@global_options(hidden=True)
@click.pass_context
def init(ctx: click.Context, path: str | None, compression: str, no_shuffle: bool) -> None:
    """Create a new, empty store.

    PATH (or --store) is the store: a directory created for it, holding the catalog
    (catalog.sqlite) and the array segments (segments/). An existing store is never
    overwritten, and a failed init leaves nothing behind.
    """
    output_format(ctx)
    kind, level = _compression(compression)
    target = store_path(ctx, path)
    try:
        store = Store.create(
            target,
            compression=kind,
            compression_level=level,
            shuffle=not no_shuffle,
            timeout=timeout_of(ctx),
        )
    except StoreExistsError:
        raise StoreExistsError(
            f"{target} already holds a store (or a file of that name); pick another path, "
            f"or delete {target} first"
        ) from None
    store.close()
    spec = compression_spec(kind, level, not no_shuffle)
    emit_doc(
        ctx,
        {"created": str(target), "catalog": str(catalog_path(target)), "compression": spec},
    )


# ---------------------------------------------------------------------------- demo


@command(
    epilog=example(
        f"{PROG} demo demo-store",
        f"{PROG} --store demo-store list --owner-id 201",
        f"{PROG} --store demo-store get --id 12 --limit 5",
    )
)
@click.argument("path", required=False, metavar="[PATH]")
@global_options(hidden=True)
@click.pass_context
def demo(ctx: click.Context, path: str | None) -> None:
    """Build an example store from the data shipped with the package.

    A week of a small power system: loads and wind plants sharing profiles (so the
    store holds fewer distinct arrays than series), solar in America/Denver, a zoneless
    reserve requirement with [up, down] values, outage events (NonSequential), reservoir
    limits (Persistent), a piecewise-linear cost curve, and Deterministic,
    Probabilistic and Scenarios forecasts. PATH defaults to --store.
    """
    from ..demo import build_demo_store

    output_format(ctx)
    target = store_path(ctx, path)
    try:
        store = build_demo_store(target)
    except StoreExistsError:
        raise StoreExistsError(
            f"{target} already holds a store (or a file of that name); pick another path, "
            f"or delete {target} first"
        ) from None
    try:
        by_type = store.counts_by_type()
        doc = {
            "created": str(target),
            "series": sum(by_type.values()),
            "distinct_arrays": store.num_distinct_arrays(),
            "by_type": by_type,
        }
    finally:
        store.close()
    emit_doc(ctx, doc)
    note(ctx, f"next: {PROG} --store {target} list")


# ---------------------------------------------------------------------------- list

_LIST_TABLE = (
    "id",
    "owner_id",
    "owner_type",
    "time_series_type",
    "name",
    "resolution",
    "length",
    "element_type",
    "time_reference",
    "features",
)


@command(epilog=example(f"{PROG} --store demo-store upgrade"))
@global_options(hidden=True)
@click.pass_context
def upgrade(ctx: click.Context) -> None:
    """Migrate a store written by an earlier release to this build's catalog schema.

    The reading commands (list, get, info, export, verify) open a store read-only and so
    refuse one whose catalog is older; this one opens it for writing, which runs the
    missing schema steps in one transaction (a kill at any instant leaves the old catalog
    or the migrated one) and changes nothing else. A current store is left as it is;
    ``migrated_from`` says which revision was found (empty when the store was current).
    """
    from ..store.catalog import schema_version

    output_format(ctx)
    with open_store(ctx, read_only=False) as store:
        found = store.migrated_from  # the open migrated, or found the store current
    emit_doc(
        ctx,
        {
            "store": str(store_path(ctx)),
            "schema_revision": schema_version(),
            "migrated_from": found,
        },
    )


@command(
    "list",
    epilog=example(
        f"{PROG} --store demo-store list --type single --feature model_year=2030",
        f"{PROG} --store demo-store -f json list --owner-id 201",
    ),
)
@selector_options()
@click.option("--limit", type=click.IntRange(min=0), help="Show at most N rows.")
@click.option("--wide", is_flag=True, help="Table: every metadata column, not the usual few.")
@global_options(hidden=True)
@click.pass_context
def list_(ctx: click.Context, limit: int | None, wide: bool, **kw: Any) -> None:
    """List series metadata (one row per series), filtered by the selector flags.

    Selector flags combine with AND. -f json prints {"items": [...]} with every
    metadata field; -f jsonl one object per line; -f csv a header and one row each.
    """
    fmt = output_format(ctx)
    with open_store(ctx, read_only=True) as store:
        # Each series' instants in its own time reference, as get prints its rows.
        rows = [series_meta(r) for r in select(store, kw)]
    if limit is not None:
        rows = rows[:limit]
    columns = list(rows[0]) if rows else _metadata_columns()
    emit_rows(ctx, rows, columns=columns, table_columns=None if wide else _LIST_TABLE, fmt=fmt)


def _metadata_columns() -> list[str]:
    return [
        "owner_id",
        "owner_type",
        "owner_category",
        "time_series_type",
        "name",
        "data_hash",
        "id",
        "initial_timestamp",
        "length",
        "resolution",
        "horizon",
        "interval",
        "count",
        "percentiles",
        "element_type",
        "element_shape",
        "features",
        "units",
        "quantity_kind",
        "unit_system",
        "time_reference",
        "component_field",
        "application_data",
    ]


# ---------------------------------------------------------------------------- get


def _candidate(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "owner_id": row.owner_id,
        "owner_type": row.owner_type,
        "owner_category": row.owner_category.name,
        "time_series_type": row.type.name,
        "name": row.name,
        "resolution": row.resolution,
        "features": dict(row.features),
        "data_hash": row.data_hash.hex()[:12],
    }


def one(store: Store, kw: Mapping[str, Any], *, command_name: str = "get") -> Any:
    """The one series the selector flags match, for ``get`` or ``export -f csv|json|jsonl``
    to stdout; each refusal names the flags that command takes."""
    if command_name == "get":
        needs = "--id N, or --owner-id, --name, …"
        narrow = "--id or another selector flag"
    else:
        needs = "--id N, or --owner-id, --name, --type, … (or --dir DIR for a file per series)"
        narrow = (
            "--id or another selector flag (--owner-id, --name, --type, --resolution, "
            "--feature), or write a file per series with --dir DIR"
        )
    if not kw.get("ids") and not filters_of(kw):
        raise click.UsageError(f"{command_name} needs a selector: {needs}")
    rows = select(store, kw)
    if not rows:
        # `list` with the same flags prints an empty table: name what helps instead.
        ids = list(kw.get("ids") or ())
        if ids and not filters_of(kw):
            which = ", ".join(str(i) for i in ids)
            raise NotFoundError(
                f"the store holds no series with id {which}; `list` shows the ids it holds"
            )
        raise NotFoundError(
            "no series matches all of these selector flags; `list` with fewer of them "
            "shows what the store holds"
        )
    if len(rows) > 1:
        shown = [_candidate(r) for r in rows[:CANDIDATES_SHOWN]]
        cols = [
            "id",
            "owner_id",
            "owner_type",
            "time_series_type",
            "name",
            "resolution",
            "features",
            "data_hash",
        ]
        table = "\n".join("  " + line for line in table_text(shown, cols).splitlines())
        more = len(rows) - len(shown)
        raise Ambiguous(
            f"the selection matches {len(rows)} series; narrow it with {narrow}",
            shown,
            table + (f"\n  … and {more} more" if more else ""),
        )
    return rows[0]


@command(
    epilog=example(
        f"{PROG} --store demo-store get --owner-id 301 --type single --limit 3",
        f"{PROG} --store demo-store -f csv get --id 12 \\",
        "    --time-range 2024-07-02T00:00:00Z..2024-07-03T00:00:00Z",
    )
)
@selector_options()
@click.option(
    "--time-range",
    type=TIME_RANGE,
    help="Half-open START..END (RFC 3339 or epoch ms; no offset for a zoneless series).",
)
@click.option("--limit", type=click.IntRange(min=0), help="Show at most N rows.")
@global_options(hidden=True)
@click.pass_context
def get(
    ctx: click.Context, time_range: tuple[datetime, datetime] | None, limit: int | None, **kw: Any
) -> None:
    """Print one series' values.

    The selector must match exactly one series; when it matches several, the first ten
    are listed (id, owner, type, name) and the exit status is 1. Static series print
    timestamp,value…; forecasts issue_time,target_time,value… with one column per
    percentile (value[p0.5]) or scenario (value[s0]). Shaped values get one column per
    element (value[0], value[1]). Timestamps are shown in the series' time reference.
    """
    fmt = output_format(ctx)
    with open_store(ctx, read_only=True) as store:
        row = one(store, kw)
        series = (
            store.read_by_ids_range([row.id], time_range)[0]
            if time_range is not None
            else store.read_by_id(row.id)
        )
        meta = series_meta(row)
    columns, rows = value_rows(series)
    if limit is not None:
        rows = rows[:limit]
    if fmt in ("json", "jsonl"):
        rows = [json_row(r) for r in rows]  # NaN, +inf, -inf told apart, as export writes
    if fmt == "json":
        click.echo(dumps({"series": meta, "columns": columns, "items": rows}, pretty=True))
    else:
        emit_rows(ctx, rows, columns=columns, fmt=fmt)


# ---------------------------------------------------------------------------- info


@command(
    epilog=example(f"{PROG} --store demo-store info", f"{PROG} --store demo-store -f json info")
)
@global_options(hidden=True)
@click.pass_context
def info(ctx: click.Context) -> None:
    """Summarize the store: series by type, distinct arrays, owners, file sizes."""
    output_format(ctx)
    path = store_path(ctx)
    with open_store(ctx, read_only=True) as store:
        # Counted in the catalog: a row object per series would grow with the store.
        tally = store.series_tally()
        by_type = store.counts_by_type()
        arrays = store.num_distinct_arrays()
        usage = store.disk_usage()
    h5, cat = usage["hdf5_bytes"], usage["catalog_bytes"]
    emit_doc(
        ctx,
        {
            "store": str(path),
            "catalog": str(catalog_path(path)),
            "series": tally["series"],
            "distinct_arrays": arrays,
            "owners": tally["owners"],
            "by_type": by_type,
            "time_references": tally["time_references"],
            "hdf5_bytes": h5,
            "catalog_bytes": cat,
            "total_bytes": h5 + cat,
        },
    )


# ---------------------------------------------------------------------------- transform


@command(
    epilog=example(
        f"{PROG} --store demo-store transform --horizon PT12H --interval PT6H --resolution PT1H",
        f"{PROG} --store demo-store list --type deterministic_single",
    )
)
@click.option("--horizon", type=DURATION, required=True, help="Window length (ISO-8601).")
@click.option("--interval", type=DURATION, required=True, help="Time between windows.")
@click.option(
    "--owner-category",
    type=CATEGORY,
    metavar="[Component|SupplementalAttribute]",
    help="Only this owner category.",
)
@click.option("--resolution", type=DURATION, help="Only SingleTimeSeries at this resolution.")
@global_options(hidden=True)
@click.pass_context
def transform(
    ctx: click.Context,
    horizon: str,
    interval: str,
    owner_category: str | None,
    resolution: str | None,
) -> None:
    """Derive DeterministicSingleTimeSeries forecast views from stored SingleTimeSeries.

    No array is written: each derived row reads its source's values as windows of
    --horizon every --interval. Re-running with the same parameters adds nothing.
    """
    output_format(ctx)
    with open_store(ctx, read_only=False) as store:
        n = store.transform_single_time_series(
            horizon, interval, owner_category=owner_category, resolution=resolution
        )
    emit_doc(
        ctx,
        {
            "added": n,
            "time_series_type": "DeterministicSingleTimeSeries",
            "horizon": horizon,
            "interval": interval,
        },
    )


# ---------------------------------------------------------------------------- remove


@command(
    epilog=example(
        f"{PROG} --store demo-store remove --owner-id 203 --dry-run",
        f"{PROG} --store demo-store -y remove --owner-id 203",
    )
)
@selector_options()
@click.option("--all", "all_", is_flag=True, help="Remove every series (no selector needed).")
@click.option("--dry-run", is_flag=True, help="Report what would be removed; change nothing.")
@global_options(hidden=True)
@click.pass_context
def remove(ctx: click.Context, all_: bool, dry_run: bool, **kw: Any) -> None:
    """Remove the series the selector flags match.

    Asks for confirmation on stderr unless -y is given; without a terminal to ask on
    (stdin piped or redirected) it refuses unless -y is given. A SingleTimeSeries that
    backs a derived forecast is refused until that one is removed too.
    """
    output_format(ctx)
    if not all_ and not kw.get("ids") and not filters_of(kw):
        raise click.UsageError("remove needs a selector (--id, --owner-id, --name, …) or --all")
    with open_store(ctx, read_only=dry_run) as store:
        rows = select(store, kw)
        ids = [r.id for r in rows]
        if dry_run:
            emit_doc(ctx, {"dry_run": True, "would_remove": len(ids), "ids": ids})
            return
        if ids and not globals_of(ctx).yes:
            if not _stdin_is_terminal():
                raise Refused(
                    f"refusing to remove {len(ids)} series without confirmation: stdin is not "
                    "a terminal to ask on; pass -y (--yes) to confirm"
                )
            if not click.confirm(
                f"Remove {len(ids)} series from {store.path}?", default=False, err=True
            ):
                click.echo("Aborted.", err=True)
                ctx.exit(1)
        removed = store.remove_by_ids(ids) if ids else 0
    emit_doc(ctx, {"removed": removed, "ids": ids})


# ---------------------------------------------------------------------------- verify


@command(
    epilog=example(f"{PROG} --store demo-store verify", f"{PROG} --store demo-store -f json verify")
)
@global_options(hidden=True)
@click.pass_context
def verify(ctx: click.Context) -> None:
    """Check every segment file, every stored array against its hash, and the catalog.

    Names each damaged segment file and what is wrong with it (missing, truncated,
    unreadable, a dataset missing, arrays whose bytes no longer hash to their key,
    another store's file or another segment's, a slot_checksum_version damaged or of a
    later release), every series that lost data, files in segments/ the catalog does not
    name, and the catalog's own integrity check. Never writes. The exit status is 1 when
    anything is wrong; `repair` then sets the damage aside.
    """
    output_format(ctx)
    with open_store(ctx, read_only=True) as store, Progress(ctx, "verify", "array") as bar:
        found = store.diagnose(progress=bar)
    doc = found.as_dict()
    if output_format(ctx) not in ("json", "jsonl"):
        doc.pop("errors")  # the tables of segments and series say it, row by row
    emit_doc(ctx, doc)
    if not found.ok:
        note(
            ctx,
            f"the store is damaged; `{PROG} --store {shlex.quote(str(store.path))} repair "
            "--dry-run` shows what a repair keeps and loses",
        )
        ctx.exit(1)


# ---------------------------------------------------------------------------- repair


@command(
    epilog=example(
        f"{PROG} --store demo-store repair --dry-run",
        f"{PROG} --store demo-store repair",
    )
)
@click.option("--dry-run", is_flag=True, help="Report what would be kept and lost; change nothing.")
@global_options(hidden=True)
@click.pass_context
def repair(ctx: click.Context, dry_run: bool) -> None:
    """Set damaged segment files aside and keep every array that still reads.

    One write transaction: every array of a damaged segment that still reads and hashes
    to its key is copied into a new segment; the series whose data is lost are removed
    from the catalog (listed in the report, with how to add them back from an export);
    the damaged files are moved into a damaged-<time> folder inside the store directory.
    A catalog that is missing, emptied, unreadable, stale (an older copy restored, a lost
    -wal) or damaged beyond its indexes is rebuilt, every series with an intact array
    kept with its id, the old one moved aside; a stray catalog.sqlite-journal is set
    aside. Nothing is deleted. `verify` passes afterwards.
    """
    output_format(ctx)
    path = store_path(ctx)
    # One path for every state of the catalog: a stray journal set aside, a catalog no
    # open reads rebuilt from the segments' records, else the store opened and repaired.
    report = repair_directory(
        path,
        dry_run=dry_run,
        open_store=lambda read_only: Store.open(path, read_only=read_only, timeout=timeout_of(ctx)),
        audience="cli",
    )
    if report["restore"]:
        report["restore"] = restore_hint(str(path), "cli")
    emit_doc(ctx, report)
    if report["restore"]:
        note(ctx, report["restore"])
