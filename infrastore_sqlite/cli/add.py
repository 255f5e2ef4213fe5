"""``add``: series from a CSV file (or stdin), an interchange database (``--sqlite``) or
the Parquet form (``--parquet``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from ..errors import InvalidParameterError, shown
from ..interchange.options import ImportOptions
from ..store.conflicts import OUTCOMES
from ..textfiles import (
    WRITABLE_TYPES,
    CsvSpec,
    describe,
    read_csv_series,
    read_owner_map,
    read_wide_csv,
)
from .base import PROG, example, global_options, open_store, output_format
from .options import (
    CATEGORY,
    DURATION,
    INSTANT,
    TYPE_NAME,
    bound_keywords,
    features_of,
    limit_options,
)
from .render import (
    Progress,
    command,
    command_line,
    emit_doc,
    on_interrupt,
    partial_report,
    partition_summary,
)

# ---------------------------------------------------------------------------- add

_DESCRIPTORS = ("units", "quantity_kind", "unit_system", "component_field", "application_data")
_GRID_FLAGS = (
    ("initial_timestamp", "--initial-timestamp"),
    ("interval", "--interval"),
    ("horizon", "--horizon"),
    ("count", "--count"),
    ("percentiles", "--percentile"),
    ("scenario_count", "--scenario-count"),
)
_LAYOUT_FLAGS = (
    ("layout", "--layout"),
    ("owner_map", "--owner-map"),
    ("owner_id_from", "--owner-id-from"),
)
_OVERRIDES = ("owner_id", "owner_type", "owner_category", "name", "time_reference", *_DESCRIPTORS)
_ASSERTIONS = (
    ("element_type", "element_type"),
    ("element_shape", "element_shape"),
    ("resolution", "resolution"),
    ("type_", "type"),
)


def _given(value: Any) -> bool:
    return value is not None and value != () and value is not False


@command(
    epilog=example(
        f"{PROG} --store demo-store export -f csv --dir wind --owner-id 201 --type single",
        f"{PROG} --store demo-store add --csv wind/4_201_max_active_power.csv --owner-id 204 \\",
        "    --owner-type RenewableDispatch --name max_active_power --type single \\",
        "    --resolution PT1H --units pu --feature model_year=2030",
        f"{PROG} --store demo-store export -f csv --dir fc --id 12",
        f"{PROG} --store demo-store add --csv fc/12_201_max_active_power.csv --owner-id 202 \\",
        "    --owner-type RenewableDispatch --name max_active_power --feature source=nwp",
        f"{PROG} --store demo-store export -f sqlite --db demo.db",
        f"{PROG} --store copy-store init",
        f"{PROG} --store copy-store add --sqlite demo.db --dry-run",
        f"{PROG} --store copy-store add --sqlite demo.db --owner-type Imported",
        f"{PROG} --store demo-store add --sqlite demo.db --replace",
        f"{PROG} --store demo-store export -f parquet --dir out",
        f"{PROG} --store copy2-store init",
        f"{PROG} --store copy2-store add --parquet out",
    )
)
@click.option(
    "--csv",
    "csv_file",
    metavar="FILE",
    help="Read one series (or, with --layout wide, one per column) from FILE ('-' for stdin).",
)
@click.option(
    "--sqlite",
    "sqlite_file",
    metavar="FILE",
    help="Import every partition of an export -f sqlite database.",
)
@click.option(
    "--parquet",
    "parquet_path",
    metavar="PATH",
    help="Import the export -f parquet files at PATH: a directory, a file or a partition stem; "
    "local or in object storage (s3://BUCKET/PREFIX, gs://, az://, abfs://).",
)
@click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="With --parquet URI: a client option, as Polars' storage_options names it "
    "(aws_region=…, aws_endpoint_url=…); repeatable. Credentials default to the AWS_* "
    "(GOOGLE_*, AZURE_*) environment.",
)
@click.option(
    "--owner-id", type=int, help="Owner id (with --sqlite/--parquet: overrides every row)."
)
@click.option("--owner-type", help="Owner type, e.g. PowerLoad.")
@click.option(
    "--owner-category",
    type=CATEGORY,
    metavar="[Component|SupplementalAttribute]",
    help="Component (default) or SupplementalAttribute.",
)
@click.option("--name", help="Series name.")
@click.option(
    "--type",
    "type_",
    type=TYPE_NAME,
    help="single, non_sequential, persistent, deterministic, probabilistic or scenarios "
    "(--csv: read from the header when not given).",
)
@click.option(
    "--element-type",
    help="f64 (default), f32, i64, …, bool, tuple(N,dtype), linear_function, quadratic_function, piecewise_linear, piecewise_step.",
)
@click.option(
    "--element-shape",
    type=click.IntRange(min=0),
    multiple=True,
    metavar="N",
    help="Per-step element dimension (repeatable: --element-shape 2 --element-shape 3).",
)
@click.option(
    "--resolution",
    type=DURATION,
    help="Step (ISO-8601: PT1H, PT15M, P1D, P1M); inferred from the timestamps when left out.",
)
@click.option(
    "--initial-timestamp",
    type=INSTANT,
    help="First instant (RFC 3339 or epoch ms); defaults to the CSV's first timestamp.",
)
@click.option(
    "--feature",
    "features",
    multiple=True,
    callback=features_of,
    metavar="K=V",
    help="Feature (repeatable); V is an int, float, true/false or a string.",
)
@click.option("--units", help="Units, e.g. MW.")
@click.option("--quantity-kind", help="Quantity kind, e.g. power.")
@click.option("--unit-system", help="natural_units or component_base.")
@click.option("--component-field", help="Component field the series feeds.")
@click.option("--application-data", help="Opaque application string.")
@click.option(
    "--time-reference",
    help="utc, zoneless, ±HH:MM or an IANA zone; inferred from the timestamps when left out.",
)
@click.option(
    "--horizon", type=DURATION, help="Forecast window length; inferred from the rows when left out."
)
@click.option(
    "--interval", type=DURATION, help="Time between forecast windows; inferred when left out."
)
@click.option(
    "--count",
    type=click.IntRange(min=0),
    help="Number of forecast windows; inferred when left out.",
)
@click.option(
    "--percentile",
    "percentiles",
    type=float,
    multiple=True,
    metavar="P",
    help="Probabilistic percentile (repeatable); inferred from value[pP] headers.",
)
@click.option(
    "--scenario-count",
    type=click.IntRange(min=1),
    help="Scenarios lanes; inferred from the value columns.",
)
@click.option(
    "--layout",
    type=click.Choice(["long", "wide"]),
    help="long (default): one series per file; wide: one scalar series per column.",
)
@click.option(
    "--owner-map",
    metavar="FILE",
    help="Wide layout: CSV column,owner_id[,owner_type] naming each column's owner.",
)
@click.option(
    "--owner-id-from",
    type=click.Choice(["header"]),
    help="Wide layout: each column header is its owner id.",
)
@click.option(
    "--table-prefix", default=None, metavar="P", help="--sqlite: the table prefix the export used."
)
@click.option(
    "--no-checksum",
    is_flag=True,
    help="--sqlite, --parquet: do not compare each array with its recorded data_hash.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="--sqlite, --parquet: update series the store already holds in place (they keep "
    "their ids).",
)
@click.option(
    "--ignore",
    is_flag=True,
    help="--sqlite, --parquet: leave series the store already holds as they are (resumes an "
    "import).",
)
@click.option("--dry-run", is_flag=True, help="Read and check everything, add nothing.")
@limit_options
@global_options(hidden=True)
@click.pass_context
def add(
    ctx: click.Context,
    csv_file: str | None,
    sqlite_file: str | None,
    parquet_path: str | None,
    **kw: Any,
) -> None:
    """Add series from a CSV file, or import an export -f sqlite database or Parquet files.

    --csv FILE reads a long-layout CSV with a header row: 'timestamp,value…' (one row
    per step; a NonSequential or Persistent series takes its timestamps from it, a
    SingleTimeSeries is checked against its --initial-timestamp/--resolution grid),
    'issue_time,target_time,value…' (a forecast, one row per window step, percentiles
    or scenarios side by side), or value cells alone that fill the series' shape
    row-major. Needs --owner-id, --owner-type and --name. Without --type the header
    says it, as export -f csv writes it: timestamp a SingleTimeSeries (on one grid),
    issue_time,target_time a Deterministic, value[p0.5] columns a Probabilistic,
    value[s0] columns Scenarios; value cells alone need --type.

    --sqlite FILE imports every partition under --table-prefix, committing one
    transaction per partition. --owner-id, --owner-type, --owner-category, --name,
    --feature, --time-reference and the descriptor flags override every imported row;
    --element-type, --element-shape, --resolution and --type assert what the rows must
    be. Flags that describe a grid or a CSV layout are refused.

    --parquet PATH imports the files export -f parquet wrote: a directory (every
    partition in it; a DeterministicSingleTimeSeries partition is set aside), one
    partition's file, or its stem (out/SingleTimeSeries.f64.utc). It takes the flags
    --sqlite takes (--no-checksum, --replace, --ignore, --dry-run, the overrides and
    assertions) but --table-prefix, and commits one transaction per partition too.

    A series the store already holds (same owner, type, name, resolution, interval and
    features) is refused unless --replace (its values, grid and descriptors become the
    file's, it keeps its catalog id; an identical one is reported unchanged) or --ignore
    (it is skipped). Rerunning an interrupted import with --ignore finishes it. The
    report counts the series added, replaced, unchanged and skipped per partition.
    New ids are given partition by partition in the order of each partition's array
    key (data_hash, then time_axis), not in the file's series order (the reference
    numbers them the same way); the report lists each series with its id.
    """
    output_format(ctx)
    if sum(bool(x) for x in (csv_file, sqlite_file, parquet_path)) != 1:
        raise click.UsageError(
            "add needs exactly one source: --csv FILE, --sqlite FILE or --parquet PATH", ctx
        )
    if kw["replace"] and kw["ignore"]:
        raise click.UsageError(
            "--replace and --ignore exclude each other: pick what happens to series the "
            "store already holds",
            ctx,
        )
    if csv_file and bound_keywords(kw):
        raise click.UsageError(
            "--max-array-bytes and --max-cell-bytes go with --sqlite or --parquet", ctx
        )
    _declare_interrupt(ctx, kw, interchange=not csv_file)
    if sqlite_file:
        _add_interchange(ctx, "--sqlite", sqlite_file, kw)
    elif parquet_path:
        _add_interchange(ctx, "--parquet", parquet_path, kw)
    else:
        _add_csv(ctx, csv_file, kw)  # type: ignore[arg-type]


def _add_interchange(ctx: click.Context, source: str, path: str, kw: dict[str, Any]) -> None:
    """``add --sqlite FILE`` or ``add --parquet PATH`` (``source`` names the flag)."""
    refused = [flag for key, flag in _GRID_FLAGS if _given(kw[key])]
    refused_layout = [flag for key, flag in _LAYOUT_FLAGS if _given(kw[key])]
    if refused or refused_layout:
        lines = [
            f"{flag} cannot be used with {source}: the rows imply the grid (a "
            "SingleTimeSeries starts at its first timestamp, a forecast's windows are its "
            "issue_time column)"
            for flag in refused
        ] + [
            f"{flag} cannot be used with {source}: it describes a CSV's columns"
            for flag in refused_layout
        ]
        if source == "--parquet" and _given(kw["table_prefix"]):
            lines.append(
                "--table-prefix cannot be used with --parquet: it names SQLite tables; name "
                "the directory, file or stem instead"
            )
        raise click.UsageError("\n".join(lines), ctx)
    if source != "--parquet" and kw["storage_options"]:
        raise click.UsageError("--storage-option goes with --parquet URI", ctx)
    if source == "--parquet" and _given(kw["table_prefix"]):
        raise click.UsageError(
            "--table-prefix cannot be used with --parquet: it names SQLite tables; name the "
            "directory, file or stem instead",
            ctx,
        )
    overrides: dict[str, Any] = {k: kw[k] for k in _OVERRIDES if kw[k] is not None}
    if kw["features"] is not None:
        overrides["features"] = kw["features"]
    for key, name in _ASSERTIONS:
        value = kw[key]
        if _given(value):
            if key == "type_":
                value = value.name
            elif key == "element_shape":
                value = list(value)
            overrides[name] = value
    common: dict[str, Any] = {
        "skip_checksum": kw["no_checksum"],
        "dry_run": kw["dry_run"],
        "overrides": overrides or None,
        "per_partition": True,
        # Counts and ids are what the command prints: no entry per series kept to the
        # end (+190 MB of peak RSS at 300,000 series, as the API's import holds none).
        "detail": False,
        "on_conflict": "replace" if kw["replace"] else "ignore" if kw["ignore"] else "error",
        **bound_keywords(kw),
    }
    with open_store(ctx, read_only=False) as store, Progress(ctx, "import") as bar:
        options = ImportOptions.of(progress=bar, **common)
        if source == "--parquet":
            from ..interchange.parquet.location import parse_storage_options

            storage_options = parse_storage_options(kw["storage_options"])
            result = store.import_parquet(
                path, storage_options=storage_options or None, options=options
            )
        else:
            result = store.import_sqlite(
                path, table_prefix=kw["table_prefix"] or "", options=options
            )
    emit_doc(ctx, _import_report(result, dry_run=kw["dry_run"], store=store.path, db=path))


def _import_report(result: Any, *, dry_run: bool, store: Path, db: str) -> dict[str, Any]:
    """The status document of ``add --sqlite`` from the library's report (or id list)."""
    if hasattr(result, "to_dict"):
        result = result.to_dict()
    left_out: dict[str, Any] = {}
    if isinstance(result, Mapping):
        parts = [partition_summary(p) for p in result.get("partitions", [])]
        ids = [int(i) for i in result.get("ids", [])]
        left_out = {k: result[k] for k in ("set_aside", "ignored") if result.get(k)}
    else:
        parts, ids = [], [int(i) for i in result]
    counts = {k: sum(p.get(k) or 0 for p in parts) for k in OUTCOMES}
    if dry_run:
        return {
            "dry_run": True,
            "would_add": counts["added"],
            "would_replace": counts["replaced"],
            "unchanged": counts["unchanged"],
            "would_skip": counts["skipped"],
            "source": db,
            "partitions": parts,
            **left_out,
        }
    if not parts:  # a plain id list: every series was added
        counts["added"] = len(ids)
    return {
        **counts,
        "store": str(store),
        "source": db,
        "ids": ids,
        "partitions": parts,
        **left_out,
    }


def _declare_interrupt(ctx: click.Context, kw: dict[str, Any], *, interchange: bool) -> None:
    """The line Ctrl-C prints: what stayed in the store, and the command that resumes."""
    if kw["dry_run"]:
        on_interrupt(ctx, "interrupted: a dry run writes nothing; the store is as it was")
    elif not interchange:
        on_interrupt(
            ctx, "interrupted: nothing was added (the series go in together or not at all)"
        )
    else:
        # --replace is safe to run again as it is; otherwise --ignore skips what is there.
        again = command_line(ctx) + ("" if kw["replace"] or kw["ignore"] else " --ignore")
        first = command_line(ctx)
        on_interrupt(ctx, lambda exc: _interrupted_import(exc, first, again))


def _interrupted_import(exc: KeyboardInterrupt, first: str, again: str) -> str:
    """The Ctrl-C line of ``add --sqlite`` / ``--parquet``: which partitions committed
    (from the report the import hangs on the interrupt) and ``again``, which resumes; or,
    when none did, that ``first`` (the command as given) starts over."""
    report = partial_report(exc)
    if report is None:
        # Stopped before the first partition began (opening the store or the file) or
        # after the last was reported: the report is not there to say which stayed.
        return (
            "interrupted: the partitions committed before Ctrl-C stay in the store (`list` "
            f"shows them), the one in progress was rolled back; resume with `{again}`"
        )
    parts = report["partitions"]
    done = [p["values_table"] for p in parts if p["status"] == "committed"]
    stopped = [p["values_table"] for p in parts if p["status"] == "failed"]
    rolled = f"{stopped[0]} was rolled back" if stopped else "nothing was in progress"
    if not done:
        return (
            f"interrupted: no partition had been committed, so nothing was added ({rolled}); "
            f"run `{first}` to start again"
        )
    return (
        f"interrupted: {len(done)} partition(s) committed before Ctrl-C stay in the store "
        f"({report['committed_series']} series: {shown(done)}), {rolled}; resume with "
        f"`{again}`"
    )


def _add_csv(ctx: click.Context, path: str, kw: dict[str, Any]) -> None:
    for key, flag, sources in (
        ("table_prefix", "--table-prefix", "--sqlite"),
        ("no_checksum", "--no-checksum", "--sqlite and --parquet"),
        ("replace", "--replace", "--sqlite and --parquet"),
        ("ignore", "--ignore", "--sqlite and --parquet"),
    ):
        if _given(kw[key]):
            raise click.UsageError(f"{flag} only applies to {sources}", ctx)
    wide = kw["layout"] == "wide"
    if not wide and (kw["owner_map"] or kw["owner_id_from"]):
        raise click.UsageError("--owner-map and --owner-id-from need --layout wide", ctx)
    if wide and bool(kw["owner_map"]) == bool(kw["owner_id_from"]):
        raise click.UsageError(
            "--layout wide needs exactly one of --owner-map FILE and --owner-id-from header",
            ctx,
        )
    if wide and kw["owner_id"] is not None:
        raise click.UsageError(
            "--owner-id does not combine with --layout wide: each column names its owner", ctx
        )
    # A long-layout CSV's header says its type (as export -f csv writes it); the wide
    # layout's columns do not.
    needed = [("--name", "name"), ("--type", "type_")]
    if not wide:
        needed = [("--owner-id", "owner_id"), ("--owner-type", "owner_type"), ("--name", "name")]
    missing = [flag for flag, key in needed if kw[key] is None]
    if missing:
        raise click.UsageError(
            f"add --csv needs {', '.join(f for f, _ in needed)} (missing: {', '.join(missing)})",
            ctx,
        )
    if kw["type_"] is not None and kw["type_"] not in WRITABLE_TYPES:
        raise click.BadParameter(
            f"{kw['type_'].name} cannot be added: it is derived from a stored "
            "SingleTimeSeries; add that and run `transform`",
            ctx,
            param_hint="--type",
        )
    spec = CsvSpec(
        type=kw["type_"],
        name=kw["name"],
        element_type=kw["element_type"],
        element_shape=tuple(kw["element_shape"]) or None,
        initial_timestamp=kw["initial_timestamp"],
        resolution=kw["resolution"],
        horizon=kw["horizon"],
        interval=kw["interval"],
        count=kw["count"],
        percentiles=tuple(kw["percentiles"]) or None,
        scenario_count=kw["scenario_count"],
        time_reference=kw["time_reference"],
        descriptors={k: kw[k] for k in _DESCRIPTORS},
    )
    category = kw["owner_category"] or "Component"
    features = kw["features"] or {}
    items = []
    if wide:
        columns = read_wide_csv(path, spec)
        owners = read_owner_map(kw["owner_map"]) if kw["owner_map"] else None
        unmapped = []
        for column, series in columns:
            if owners is None:
                if not column.lstrip("+-").isdigit():
                    raise InvalidParameterError(
                        f"column {column!r} of {path} is not an owner id (--owner-id-from header)"
                    )
                owner_id, owner_type = int(column), None
            elif column in owners:
                owner_id, owner_type = owners[column]
            else:
                unmapped.append(column)
                continue
            owner_type = owner_type or kw["owner_type"]
            if not owner_type:
                raise click.UsageError(
                    f"column {column!r} has no owner type: pass --owner-type or give the owner "
                    "map an owner_type column",
                    ctx,
                )
            items.append((owner_id, owner_type, series))
        if unmapped:
            raise InvalidParameterError(
                f"the owner map names no owner for column(s) {', '.join(map(repr, unmapped))} "
                f"of {path}"
            )
    else:
        items.append((kw["owner_id"], kw["owner_type"], read_csv_series(path, spec)))
    if kw["dry_run"]:
        emit_doc(
            ctx,
            {
                "dry_run": True,
                "would_add": len(items),
                "series": [
                    {
                        "owner_id": oid,
                        "owner_type": otype,
                        "owner_category": category,
                        **describe(s),
                        "features": features,
                    }
                    for oid, otype, s in items
                ],
            },
        )
        return
    with open_store(ctx, read_only=False) as store:
        ids = store.add_time_series_bulk(
            [
                {
                    "owner_id": oid,
                    "owner_type": otype,
                    "owner_category": category,
                    "time_series": s,
                    "features": features,
                }
                for oid, otype, s in items
            ]
        )
        emit_doc(ctx, {"added": len(ids), "ids": ids, "store": str(store.path)})
