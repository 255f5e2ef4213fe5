"""The command line: ``infrastore-sqlite`` (and ``python -m infrastore_sqlite``).

A thin layer: it parses flags, calls the library (:class:`~infrastore_sqlite.store.Store`,
:mod:`~infrastore_sqlite.csvinput`, :mod:`~infrastore_sqlite.demo`) and renders what
comes back. The contract, which scripts may rely on:

* stdout carries only the result; errors, prompts and progress go to stderr.
* Exit 0 on success, 1 on a runtime error (or a negative answer, as from ``verify``),
  2 on a usage error (an unknown flag, a malformed value, flags that do not combine).
* ``-f json`` / ``-f jsonl`` turn errors into ``{"status": "error", "message": …}`` on
  stderr as well; usage errors stay prose.
* No traceback for an expected error; an unexpected one prints one line saying where to
  report it (the traceback too when ``INFRASTORE_SQLITE_DEBUG=1``).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import numpy as np
import orjson

from . import __version__
from .csvinput import (
    WRITABLE_TYPES,
    CsvSpec,
    describe,
    parse_feature,
    read_csv_series,
    read_owner_map,
    read_wide_csv,
)
from .errors import (
    InvalidParameterError,
    NotFoundError,
    StoreExistsError,
    TimeSeriesError,
)
from .model import TimeSeriesType
from .periods import Period, step
from .store import Store, catalog_path
from .timeref import ms_to_datetime, ms_to_datetimes, parse_instant

PROG = "infrastore-sqlite"
STORE_ENV = "INFRASTORE_STORE"
DEBUG_ENV = "INFRASTORE_SQLITE_DEBUG"
TABLE_FORMATS = ("table", "json", "jsonl", "csv")
EXPORT_FORMATS = (*TABLE_FORMATS, "sqlite", "parquet")
_META = "infrastore_sqlite.globals"
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
_CANDIDATES_SHOWN = 10


# ============================================================================ globals


@dataclass
class Globals:
    """The options every command accepts, before or after its name."""

    store: str | None = None
    format: str | None = None
    quiet: bool = False
    yes: bool = False


def _globals(ctx: click.Context) -> Globals:
    return ctx.meta.setdefault(_META, Globals())


def _remember(field: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is not None and value is not False:
            setattr(_globals(ctx), field, value.lower() if field == "format" else value)
        return value

    return callback


def _global_options(*, hidden: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--store``, ``-f``, ``-q``, ``-y``; the group shows them, commands accept them too."""
    options = [
        click.option(
            "--store",
            metavar="PATH",
            expose_value=False,
            hidden=hidden,
            callback=_remember("store"),
            help=f"The store's HDF5 file (its catalog is PATH.sqlite). Default: ${STORE_ENV}.",
        ),
        click.option(
            "-f",
            "--format",
            type=click.Choice(EXPORT_FORMATS, case_sensitive=False),
            expose_value=False,
            hidden=hidden,
            callback=_remember("format"),
            help="Output format: table (default), json, jsonl or csv; export also takes sqlite.",
        ),
        click.option(
            "-q",
            "--quiet",
            is_flag=True,
            expose_value=False,
            hidden=hidden,
            callback=_remember("quiet"),
            help="No progress bars or notes on stderr (errors still print).",
        ),
        click.option(
            "-y",
            "--yes",
            is_flag=True,
            expose_value=False,
            hidden=hidden,
            callback=_remember("yes"),
            help="Answer yes to confirmation prompts (remove).",
        ),
    ]

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def _format(ctx: click.Context, allowed: Sequence[str] = TABLE_FORMATS) -> str:
    fmt = _globals(ctx).format or "table"
    if fmt not in allowed:
        raise click.UsageError(
            f"-f {fmt} is not an output format of {ctx.info_name}; it prints "
            f"{', '.join(allowed)}" + (" (sqlite is export's)" if fmt == "sqlite" else ""),
            ctx,
        )
    return fmt


def _store_path(ctx: click.Context, given: str | None = None) -> Path:
    path = given or _globals(ctx).store or os.environ.get(STORE_ENV)
    if not path:
        raise click.UsageError(
            f"no store given: pass --store PATH or set {STORE_ENV} (create one with "
            f"`{PROG} --store PATH init`, or try `{PROG} demo demo.h5`)",
            ctx,
        )
    return Path(path)


@contextlib.contextmanager
def _open_store(ctx: click.Context, *, read_only: bool) -> Iterator[Store]:
    store = Store.open(_store_path(ctx), read_only=read_only)
    try:
        yield store
    finally:
        store.close()


# ============================================================================ errors


class _Ambiguous(InvalidParameterError):
    """A single-series command matched several; ``candidates`` are shown.

    The prose form lists them as a table after the message; the JSON form carries them
    as ``candidates`` beside the one-line message.
    """

    def __init__(self, message: str, candidates: list[dict[str, Any]], listing: str) -> None:
        super().__init__(message)
        self.candidates = candidates
        self.listing = listing

    def __str__(self) -> str:
        return f"{self.message}:\n{self.listing}"


class _Refused(TimeSeriesError):
    """The command declined to act (no confirmation); exit 1."""


def _issues_hint() -> str:
    """Where to report a bug: the package's declared tracker, if it declares one."""
    try:
        from importlib.metadata import metadata

        for entry in metadata("infrastore-sqlite").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() in ("issues", "bug tracker", "tracker", "source"):
                return f"please report it at {url.strip()}"
    except Exception:
        pass
    return "please report it to the infrastore-sqlite maintainers (the project's issue tracker)"


def _partial_report(exc: BaseException) -> dict[str, Any] | None:
    """What an import committed before it failed (``add --sqlite`` commits per partition)."""
    report = getattr(exc, "report", None)
    if report is None:
        return None
    doc = report.to_dict() if hasattr(report, "to_dict") else dict(report)
    parts = [_partition_summary(p) for p in doc.get("partitions", [])]
    return {"added": len(doc.get("ids", [])), "partitions": parts}


def _print_error(ctx: click.Context, message: str, extra: Mapping[str, Any] | None = None) -> None:
    fmt = _globals(ctx).format or "table"
    if fmt in ("json", "jsonl"):
        doc = {"status": "error", "message": message, **(extra or {})}
        click.echo(_dumps(doc, pretty=fmt == "json"), err=True)
        return
    click.echo(f"Error: {message}", err=True)
    if extra and "partitions" in extra:
        done = [p for p in extra["partitions"] if p["status"] == "committed"]
        if done:
            click.echo(
                f"{len(done)} partition(s) before it were committed and stay "
                f"({extra['added']} series: {', '.join(p['values_table'] for p in done)})",
                err=True,
            )


def _no_such_option(ctx: click.Context, exc: click.NoSuchOption) -> click.UsageError:
    """Click's wording for an unknown flag varies between releases; ours does not."""
    hint = ""
    if exc.possibilities:
        hint = "; did you mean " + " or ".join(repr(p) for p in list(exc.possibilities)[:3]) + "?"
    return click.UsageError(f"no such option {exc.option_name!r}{hint}", ctx)


class _Command(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            raise _no_such_option(ctx, exc) from None


class _Group(click.Group):
    """Turns library errors into the contract's messages and exit codes."""

    command_class = _Command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            raise _no_such_option(ctx, exc) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # definition order, not alphabetical

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except _Ambiguous as exc:
            if (_globals(ctx).format or "table") in ("json", "jsonl"):
                _print_error(ctx, exc.message, {"candidates": exc.candidates})
            else:
                _print_error(ctx, str(exc))
            ctx.exit(1)
        except TimeSeriesError as exc:
            _print_error(ctx, str(exc), _partial_report(exc))
            ctx.exit(1)
        except BrokenPipeError:
            with contextlib.suppress(Exception):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(1)
        except OSError as exc:  # the environment (a permission, a full disk), not a bug
            _print_error(ctx, str(exc))
            ctx.exit(1)
        except KeyboardInterrupt:
            click.echo("Aborted.", err=True)
            ctx.exit(130)
        except Exception as exc:
            where = exc.__traceback__
            while where is not None and where.tb_next is not None:
                where = where.tb_next
            spot = (
                f" at {Path(where.tb_frame.f_code.co_filename).name}:{where.tb_lineno}"
                if where is not None
                else ""
            )
            message = (
                f"internal error ({type(exc).__name__}: {exc}{spot}); this is a bug, "
                f"{_issues_hint()} with the command you ran (set {DEBUG_ENV}=1 to print the "
                "traceback)"
            )
            _print_error(ctx, " ".join(message.split()))
            if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                traceback.print_exc(file=sys.stderr)
            ctx.exit(1)


# ============================================================================ rendering


def _dumps(obj: Any, *, pretty: bool) -> str:
    option = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
    if pretty:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(obj, option=option, default=_json_default).decode()


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot render {type(obj).__name__} as JSON")


def _cell(value: Any, *, table: bool) -> str:
    if value is None:
        return ""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        f = float(value)
        if f != f:
            return "NaN"
        if f in (float("inf"), float("-inf")):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    if isinstance(value, dict | list | tuple):
        if table and not value:
            return "" if isinstance(value, dict) else "[]"
        if table and isinstance(value, list | tuple) and len(value) > 12:
            head = _dumps(list(value[:10]), pretty=False)[:-1]
            return f"{head},… ({len(value)} in all)]"
        return _dumps(value, pretty=False)
    return str(value)


def _flatten(doc: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys (``by_type.SingleTimeSeries``), for table and csv."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    cells = [[_cell(r.get(c), table=True) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    numeric = [
        bool(rows)
        and all(
            isinstance(r.get(c), int | float | np.number) and not isinstance(r.get(c), bool)
            for r in rows
            if r.get(c) is not None
        )
        for c in columns
    ]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(columns), *(line(r) for r in cells)])


def _csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(columns)
    for r in rows:
        out.writerow([_cell(r.get(c), table=False) for c in columns])
    return buf.getvalue().rstrip("\n")


def _emit_doc(ctx: click.Context, doc: Mapping[str, Any]) -> None:
    """A status document: one object."""
    fmt = _format(ctx, EXPORT_FORMATS)
    if fmt in ("json", "jsonl"):
        click.echo(_dumps(doc, pretty=fmt == "json"))
        return
    flat = _flatten(doc)
    if fmt == "csv":
        click.echo(_csv_text([flat], list(flat)))
        return
    tables = {k: v for k, v in flat.items() if _is_rows(v)}
    width = max((len(k) for k in flat if k not in tables), default=0)
    for key, value in flat.items():
        if key not in tables:
            click.echo(f"{key.ljust(width)}  {_cell(value, table=True)}".rstrip())
    for key, rows in tables.items():
        columns = [
            c
            for c in rows[0]
            if not any(_is_rows(r.get(c)) for r in rows) and any(r.get(c) is not None for r in rows)
        ]
        click.echo(f"\n{key}:")
        click.echo(_table(rows, columns))


def _is_rows(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _emit_rows(
    ctx: click.Context,
    rows: Sequence[Mapping[str, Any]],
    *,
    columns: Sequence[str],
    table_columns: Sequence[str] | None = None,
    wrap: bool = True,
    fmt: str | None = None,
) -> None:
    """Rows: a table, ``{"items": [...]}`` (or a bare list), one JSON line each, or CSV."""
    fmt = fmt or _format(ctx)
    if fmt == "json":
        click.echo(_dumps({"items": list(rows)} if wrap else list(rows), pretty=True))
    elif fmt == "jsonl":
        for r in rows:
            click.echo(_dumps(r, pretty=False))
    elif fmt == "csv":
        click.echo(_csv_text(rows, columns))
    else:
        click.echo(_table(rows, table_columns or columns))


def _note(ctx: click.Context, message: str) -> None:
    if not _globals(ctx).quiet:
        click.echo(message, err=True)


# ============================================================================ progress


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


class _Progress:
    """The ``progress(done, total)`` callable the library takes: a tqdm bar on stderr.

    Only when stderr is a terminal and ``-q`` is not given; otherwise it does nothing,
    so a pipe or a log file never sees a bar.
    """

    def __init__(self, ctx: click.Context, desc: str, unit: str = "row") -> None:
        self.enabled = not _globals(ctx).quiet and _stderr_is_terminal()
        self.desc = desc
        self.unit = unit
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total,
                desc=self.desc,
                unit=self.unit,
                unit_scale=True,
                file=sys.stderr,
                leave=False,
                dynamic_ncols=True,
            )
        if total != self.bar.total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


# ============================================================================ param types


class _Duration(click.ParamType):
    name = "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, Period):
            return str(value)
        try:
            return str(Period.parse(str(value)))
        except InvalidParameterError as exc:
            message = exc.message.replace("invalid ISO-8601 period", "invalid duration", 1)
            self.fail(message, param, ctx)


class _Instant(click.ParamType):
    name = "TIMESTAMP"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        try:
            parse_instant(str(value))
        except InvalidParameterError as exc:
            self.fail(str(exc), param, ctx)
        return str(value).strip()


class _TimeRange(click.ParamType):
    """``START..END`` (half-open), each RFC 3339 or epoch ms → a pair of datetimes."""

    name = "START..END"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, tuple):
            return value
        start, sep, end = str(value).partition("..")
        if not sep or not start.strip() or not end.strip() or ".." in end:
            self.fail(
                f"{value!r} is not START..END (e.g. 2024-07-01T00:00:00Z..2024-07-02T00:00:00Z)",
                param,
                ctx,
            )
        bounds = []
        for text in (start, end):
            try:
                ms, ref = parse_instant(text)
            except InvalidParameterError as exc:
                self.fail(str(exc), param, ctx)
            bounds.append((ms, ref))
        if (bounds[0][1] == "zoneless") != (bounds[1][1] == "zoneless"):
            self.fail(
                "one bound has a UTC offset and the other does not; write both the same way "
                "(no offset for a zoneless series)",
                param,
                ctx,
            )
        return tuple(
            ms_to_datetime(ms, "zoneless" if ref == "zoneless" else "utc") for ms, ref in bounds
        )


class _TypeName(click.ParamType):
    name = "TYPE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, TimeSeriesType):
            return value
        try:
            return TimeSeriesType.coerce(str(value))
        except InvalidParameterError as exc:
            self.fail(
                f"{exc.message} (or single, non_sequential, persistent, deterministic, "
                "deterministic_single, probabilistic, scenarios)",
                param,
                ctx,
            )


def _features(
    _ctx: click.Context, param: click.Parameter, values: Sequence[str]
) -> dict[str, Any] | None:
    if not values:
        return None
    out: dict[str, Any] = {}
    for text in values:
        try:
            key, value = parse_feature(text)
        except InvalidParameterError as exc:
            raise click.BadParameter(str(exc), param=param) from None
        out[key] = value
    return out


DURATION = _Duration()
INSTANT = _Instant()
TIME_RANGE = _TimeRange()
TYPE_NAME = _TypeName()
CATEGORY = click.Choice(["Component", "SupplementalAttribute"], case_sensitive=False)


def _selector_options(*, ids: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    options = [
        click.option("--owner-id", type=int, help="Owner id."),
        click.option(
            "--owner-category",
            type=CATEGORY,
            metavar="[Component|SupplementalAttribute]",
            help="Component or SupplementalAttribute.",
        ),
        click.option("--owner-type", help="Owner type, e.g. PowerLoad."),
        click.option("--name", help="Series name (exact)."),
        click.option("--name-glob", metavar="GLOB", help="Series name as a SQLite GLOB: 'max_*'."),
        click.option(
            "--type",
            "type_",
            type=TYPE_NAME,
            help="Series type; case and underscores ignored: single, non_sequential, "
            "persistent, deterministic (also matches derived), probabilistic, scenarios.",
        ),
        click.option("--resolution", type=DURATION, help="Resolution (ISO-8601, e.g. PT1H)."),
        click.option(
            "--feature",
            "features",
            multiple=True,
            callback=_features,
            metavar="K=V",
            help="Feature the series carries (repeatable); V is an int, float, true/false "
            "or a string.",
        ),
        click.option("--component-field", help="Component field the series feeds."),
    ]
    if ids:
        options.insert(
            0,
            click.option("--id", "ids", type=int, multiple=True, help="Catalog id (repeatable)."),
        )

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


_SELECTOR_KEYS = (
    "owner_id",
    "owner_category",
    "owner_type",
    "name",
    "name_glob",
    "type_",
    "resolution",
    "features",
    "component_field",
)


def _filters(kw: Mapping[str, Any]) -> dict[str, Any]:
    """Selector flags → ``list_metadata`` keywords (only those given)."""
    mapping = {"type_": "time_series_type"}
    return {mapping.get(k, k): kw[k] for k in _SELECTOR_KEYS if kw.get(k) is not None}


def _select(store: Store, kw: Mapping[str, Any]) -> list[Any]:
    rows = store.select_rows(**_filters(kw))
    ids = kw.get("ids") or ()
    if ids:
        wanted = set(ids)
        rows = [r for r in rows if r.id in wanted]
    return rows


def _example(*lines: str) -> str:
    """A help epilog: a worked example, printed verbatim after the options."""
    return "\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)


# ============================================================================ the group


@click.group(
    cls=_Group,
    context_settings=_CONTEXT,
    epilog=_example(
        f"{PROG} demo demo.h5",
        f"{PROG} --store demo.h5 list --type single",
        f"{PROG} --store demo.h5 export -f sqlite --db demo.db",
    ),
)
@click.version_option(__version__, "--version", prog_name=PROG)
@_global_options(hidden=False)
def cli() -> None:
    """A content-addressed time-series store (HDF5 arrays + SQLite catalog).

    Every command works on the store named by --store (or $INFRASTORE_STORE). The
    global options may come before or after the command. stdout carries only the
    result; errors, prompts and progress go to stderr. Exit status: 0 success, 1
    runtime error, 2 usage error.
    """


# ---------------------------------------------------------------------------- init


def _compression(text: str) -> tuple[str, int]:
    kind, _, level = text.strip().lower().partition(":")
    if kind == "none" and not level:
        return "none", 0
    if kind == "deflate" and (not level or (level.isdigit() and 0 <= int(level) <= 9)):
        return "deflate", int(level or 3)
    raise click.BadParameter(
        f"{text!r} is not none, deflate or deflate:L with L in 0-9", param_hint="--compression"
    )


@cli.command(
    epilog=_example(
        f"{PROG} --store grid.h5 init --compression deflate:6",
        f"{PROG} --store grid.h5 info",
    )
)
@click.argument("path", required=False, metavar="[PATH]")
@click.option(
    "--compression",
    default="deflate",
    show_default=True,
    metavar="none|deflate|deflate:L",
    help="How arrays are compressed on disk; L is the DEFLATE level 0-9 (default 3).",
)
@click.option("--no-shuffle", is_flag=True, help="Do not byte-shuffle before DEFLATE.")
@_global_options(hidden=True)
@click.pass_context
def init(ctx: click.Context, path: str | None, compression: str, no_shuffle: bool) -> None:
    """Create a new, empty store.

    PATH (or --store) is the HDF5 file; the catalog goes beside it as PATH.sqlite.
    An existing store is never overwritten.
    """
    _format(ctx)
    kind, level = _compression(compression)
    target = _store_path(ctx, path)
    try:
        store = Store.create(
            target, compression=kind, compression_level=level or 3, shuffle=not no_shuffle
        )
    except StoreExistsError:
        raise StoreExistsError(
            f"{target} already holds a store; pick another path, or delete {target} and "
            f"{catalog_path(target)} first"
        ) from None
    store.close()
    spec = (
        "none" if kind == "none" else f"deflate:{level}:{'noshuffle' if no_shuffle else 'shuffle'}"
    )
    _emit_doc(
        ctx,
        {"created": str(target), "catalog": str(catalog_path(target)), "compression": spec},
    )


# ---------------------------------------------------------------------------- demo


@cli.command(
    epilog=_example(
        f"{PROG} demo demo.h5",
        f"{PROG} --store demo.h5 list --owner-id 201",
        f"{PROG} --store demo.h5 get --id 12 --limit 5",
    )
)
@click.argument("path", required=False, metavar="[PATH]")
@_global_options(hidden=True)
@click.pass_context
def demo(ctx: click.Context, path: str | None) -> None:
    """Build an example store from the data shipped with the package.

    A week of a small power system: loads and wind plants sharing profiles (so the
    store holds fewer distinct arrays than series), solar in America/Denver, a zoneless
    reserve requirement with [up, down] values, outage events (NonSequential), reservoir
    limits (Persistent), a piecewise-linear cost curve, and Deterministic,
    Probabilistic and Scenarios forecasts. PATH defaults to --store.
    """
    from .demo import build_demo_store

    _format(ctx)
    target = _store_path(ctx, path)
    try:
        store = build_demo_store(target)
    except StoreExistsError:
        raise StoreExistsError(
            f"{target} already holds a store; pick another path, or delete {target} and "
            f"{catalog_path(target)} first"
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
    _emit_doc(ctx, doc)
    _note(ctx, f"next: {PROG} --store {target} list")


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


@cli.command(
    epilog=_example(
        f"{PROG} --store demo.h5 add --csv wind.csv --owner-id 204 \\",
        "    --owner-type RenewableDispatch --name max_active_power --type single \\",
        "    --resolution PT1H --units pu --feature model_year=2030",
        f"{PROG} --store demo.h5 export -f sqlite --db demo.db",
        f"{PROG} --store copy.h5 init",
        f"{PROG} --store copy.h5 add --sqlite demo.db --dry-run",
        f"{PROG} --store copy.h5 add --sqlite demo.db --owner-type Imported",
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
@click.option("--owner-id", type=int, help="Owner id (with --sqlite: overrides every row).")
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
    help="single, non_sequential, persistent, deterministic, probabilistic or scenarios.",
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
    callback=_features,
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
    help="--sqlite: do not compare each array with its recorded data_hash.",
)
@click.option("--dry-run", is_flag=True, help="Read and check everything, add nothing.")
@_global_options(hidden=True)
@click.pass_context
def add(ctx: click.Context, csv_file: str | None, sqlite_file: str | None, **kw: Any) -> None:
    """Add series from a CSV file, or import an export -f sqlite database.

    --csv FILE reads a long-layout CSV with a header row: 'timestamp,value…' (one row
    per step; a NonSequential or Persistent series takes its timestamps from it, a
    SingleTimeSeries is checked against its --initial-timestamp/--resolution grid),
    'issue_time,target_time,value…' (a forecast, one row per window step, percentiles
    or scenarios side by side), or value cells alone that fill the series' shape
    row-major. Needs --owner-id, --owner-type, --name and --type.

    --sqlite FILE imports every partition under --table-prefix, committing one
    transaction per partition. --owner-id, --owner-type, --owner-category, --name,
    --feature, --time-reference and the descriptor flags override every imported row;
    --element-type, --element-shape, --resolution and --type assert what the rows must
    be. Flags that describe a grid or a CSV layout are refused.
    """
    _format(ctx)
    if bool(csv_file) == bool(sqlite_file):
        raise click.UsageError("add needs exactly one source: --csv FILE or --sqlite FILE", ctx)
    if sqlite_file:
        _add_sqlite(ctx, sqlite_file, kw)
    else:
        _add_csv(ctx, csv_file, kw)  # type: ignore[arg-type]


def _add_sqlite(ctx: click.Context, path: str, kw: dict[str, Any]) -> None:
    refused = [flag for key, flag in _GRID_FLAGS if _given(kw[key])]
    refused_layout = [flag for key, flag in _LAYOUT_FLAGS if _given(kw[key])]
    if refused or refused_layout:
        lines = [
            f"{flag} cannot be used with --sqlite: the rows imply the grid (a "
            "SingleTimeSeries starts at its first timestamp, a forecast's windows are its "
            "issue_time column)"
            for flag in refused
        ] + [
            f"{flag} cannot be used with --sqlite: it describes a CSV's columns"
            for flag in refused_layout
        ]
        raise click.UsageError("\n".join(lines), ctx)
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
    with _open_store(ctx, read_only=False) as store, _Progress(ctx, "import") as bar:
        result = store.import_sqlite(
            path,
            table_prefix=kw["table_prefix"] or "",
            skip_checksum=kw["no_checksum"],
            dry_run=kw["dry_run"],
            overrides=overrides or None,
            per_partition=True,
            progress=bar,
        )
    _emit_doc(ctx, _import_report(result, dry_run=kw["dry_run"], store=store.path, db=path))


def _partition_summary(p: Mapping[str, Any]) -> dict[str, Any]:
    """One partition of an import report, without its per-series detail."""
    series = p.get("series")
    return {
        "values_table": p.get("values_table"),
        "time_series_type": p.get("time_series_type"),
        "status": p.get("status"),
        "series": len(series) if isinstance(series, list) else series,
        "arrays": p.get("arrays"),
        "rows": p.get("rows"),
        "error": p.get("error"),
    }


def _import_report(result: Any, *, dry_run: bool, store: Path, db: str) -> dict[str, Any]:
    """The status document of ``add --sqlite`` from the library's report (or id list)."""
    if hasattr(result, "to_dict"):
        result = result.to_dict()
    if isinstance(result, Mapping):
        parts = [_partition_summary(p) for p in result.get("partitions", [])]
        ids = [int(i) for i in result.get("ids", [])]
    else:
        parts, ids = [], [int(i) for i in result]
    if dry_run:
        would = sum(p["series"] or 0 for p in parts if p["status"] == "would_add")
        return {"dry_run": True, "would_add": would, "source": db, "partitions": parts}
    return {"added": len(ids), "store": str(store), "source": db, "ids": ids, "partitions": parts}


def _add_csv(ctx: click.Context, path: str, kw: dict[str, Any]) -> None:
    for key, flag in (("table_prefix", "--table-prefix"), ("no_checksum", "--no-checksum")):
        if _given(kw[key]):
            raise click.UsageError(f"{flag} only applies to --sqlite", ctx)
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
    needed = [("--name", "name"), ("--type", "type_")]
    if not wide:
        needed = [("--owner-id", "owner_id"), ("--owner-type", "owner_type"), *needed]
    missing = [flag for flag, key in needed if kw[key] is None]
    if missing:
        raise click.UsageError(
            f"add --csv needs {', '.join(f for f, _ in needed)} (missing: {', '.join(missing)})",
            ctx,
        )
    if kw["type_"] not in WRITABLE_TYPES:
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
        _emit_doc(
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
    with _open_store(ctx, read_only=False) as store:
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
        _emit_doc(ctx, {"added": len(ids), "ids": ids, "store": str(store.path)})


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


@cli.command(
    "list",
    epilog=_example(
        f"{PROG} --store demo.h5 list --type single --feature model_year=2030",
        f"{PROG} --store demo.h5 -f json list --owner-id 201",
    ),
)
@_selector_options()
@click.option("--limit", type=click.IntRange(min=0), help="Show at most N rows.")
@click.option("--wide", is_flag=True, help="Table: every metadata column, not the usual few.")
@_global_options(hidden=True)
@click.pass_context
def list_(ctx: click.Context, limit: int | None, wide: bool, **kw: Any) -> None:
    """List series metadata (one row per series), filtered by the selector flags.

    Selector flags combine with AND. -f json prints {"items": [...]} with every
    metadata field; -f jsonl one object per line; -f csv a header and one row each.
    """
    fmt = _format(ctx)
    with _open_store(ctx, read_only=True) as store:
        rows = [r.metadata() for r in _select(store, kw)]
    for r in rows:
        r.pop("timestamps", None)
    if limit is not None:
        rows = rows[:limit]
    columns = list(rows[0]) if rows else _metadata_columns()
    _emit_rows(ctx, rows, columns=columns, table_columns=None if wide else _LIST_TABLE, fmt=fmt)


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


def _one(store: Store, kw: Mapping[str, Any]) -> Any:
    if not kw.get("ids") and not _filters(kw):
        raise click.UsageError("get needs a selector: --id N, or --owner-id, --name, …")
    rows = _select(store, kw)
    if not rows:
        raise NotFoundError("no series matches the selection; `list` with the same flags shows why")
    if len(rows) > 1:
        shown = [_candidate(r) for r in rows[:_CANDIDATES_SHOWN]]
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
        table = "\n".join("  " + line for line in _table(shown, cols).splitlines())
        more = len(rows) - len(shown)
        raise _Ambiguous(
            f"the selection matches {len(rows)} series; narrow it with --id or another "
            "selector flag",
            shown,
            table + (f"\n  … and {more} more" if more else ""),
        )
    return rows[0]


def _value_columns(prefix: str, shape: tuple[int, ...]) -> list[str]:
    if not shape:
        return [prefix]
    return [f"{prefix}[{','.join(map(str, idx))}]" for idx in np.ndindex(*shape)]


def _render_instants(ms: np.ndarray, tr: str | None) -> list[str]:
    out = []
    for value, dt in zip(ms.tolist(), ms_to_datetimes(ms, tr), strict=True):
        out.append(dt.isoformat(timespec="milliseconds" if value % 1000 else "seconds"))
    return out


def _value_rows(series: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """A series as long rows: ``timestamp,value…`` or ``issue_time,target_time,value…``."""
    kind = series.time_series_type
    data = np.asarray(series.data)
    tr = series.time_reference
    if not kind.is_forecast:
        shape = tuple(data.shape[1:])
        vcols = _value_columns("value", shape)
        stamps = _render_instants(np.asarray(series.timestamps_ms), tr)
        flat = data.reshape(data.shape[0], -1).tolist()
        rows = [
            {"timestamp": t, **dict(zip(vcols, v, strict=True))}
            for t, v in zip(stamps, flat, strict=True)
        ]
        return ["timestamp", *vcols], rows
    if kind in (TimeSeriesType.Probabilistic, TimeSeriesType.Scenarios):
        lanes = data.shape[0]
        cube = data  # [L, H, count, *E]
        labels = (
            [f"p{p:g}" for p in series.percentiles]
            if kind is TimeSeriesType.Probabilistic
            else [f"s{i}" for i in range(lanes)]
        )
    else:
        cube = data[None]
        labels = [""]
    steps, count = cube.shape[1], cube.shape[2]
    shape = tuple(cube.shape[3:])
    vcols: list[str] = []
    for label in labels:
        base = f"value[{label}]" if label else "value"
        vcols += _value_columns(base, shape) if shape else [base]
    issues = np.asarray(series.issue_times_ms(), dtype=np.int64)
    res = series.resolution_period
    targets = np.array(
        [step(int(issues[j]), res, h) for j in range(count) for h in range(steps)], dtype=np.int64
    )
    issue_text = _render_instants(issues, tr)
    target_text = _render_instants(targets, tr)
    # window-major rows; lanes side by side
    per_row = np.moveaxis(cube, 0, 2)  # [H, count, L, *E]
    per_row = np.swapaxes(per_row, 0, 1).reshape(count * steps, -1).tolist()
    rows = []
    for r, values in enumerate(per_row):
        rows.append(
            {
                "issue_time": issue_text[r // steps],
                "target_time": target_text[r],
                **dict(zip(vcols, values, strict=True)),
            }
        )
    return ["issue_time", "target_time", *vcols], rows


@cli.command(
    epilog=_example(
        f"{PROG} --store demo.h5 get --owner-id 301 --type single --limit 3",
        f"{PROG} --store demo.h5 -f csv get --id 12 \\",
        "    --time-range 2024-07-02T00:00:00Z..2024-07-03T00:00:00Z",
    )
)
@_selector_options()
@click.option(
    "--time-range",
    type=TIME_RANGE,
    help="Half-open START..END (RFC 3339 or epoch ms; no offset for a zoneless series).",
)
@click.option("--limit", type=click.IntRange(min=0), help="Show at most N rows.")
@_global_options(hidden=True)
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
    fmt = _format(ctx)
    with _open_store(ctx, read_only=True) as store:
        row = _one(store, kw)
        series = (
            store.read_by_ids_range([row.id], time_range)[0]
            if time_range is not None
            else store.read_by_id(row.id)
        )
        meta = row.metadata()
    meta.pop("timestamps", None)
    columns, rows = _value_rows(series)
    if limit is not None:
        rows = rows[:limit]
    if fmt == "json":
        click.echo(_dumps({"series": meta, "columns": columns, "items": rows}, pretty=True))
    else:
        _emit_rows(ctx, rows, columns=columns, fmt=fmt)


# ---------------------------------------------------------------------------- info


@cli.command(
    epilog=_example(f"{PROG} --store demo.h5 info", f"{PROG} --store demo.h5 -f json info")
)
@_global_options(hidden=True)
@click.pass_context
def info(ctx: click.Context) -> None:
    """Summarize the store: series by type, distinct arrays, owners, file sizes."""
    _format(ctx)
    path = _store_path(ctx)
    with _open_store(ctx, read_only=True) as store:
        rows = store.select_rows()
        by_type = store.counts_by_type()
        arrays = store.num_distinct_arrays()
    refs: dict[str, int] = {}
    for r in rows:
        key = r.time_reference or "unspecified"
        refs[key] = refs.get(key, 0) + 1
    h5, cat = path.stat().st_size, catalog_path(path).stat().st_size
    _emit_doc(
        ctx,
        {
            "store": str(path),
            "catalog": str(catalog_path(path)),
            "series": len(rows),
            "distinct_arrays": arrays,
            "owners": len({(r.owner_category, r.owner_id) for r in rows}),
            "by_type": by_type,
            "time_references": dict(sorted(refs.items())),
            "hdf5_bytes": h5,
            "catalog_bytes": cat,
            "total_bytes": h5 + cat,
        },
    )


# ---------------------------------------------------------------------------- transform


@cli.command(
    epilog=_example(
        f"{PROG} --store demo.h5 transform --horizon PT12H --interval PT6H --resolution PT1H",
        f"{PROG} --store demo.h5 list --type deterministic_single",
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
@_global_options(hidden=True)
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
    _format(ctx)
    with _open_store(ctx, read_only=False) as store:
        n = store.transform_single_time_series(
            horizon, interval, owner_category=owner_category, resolution=resolution
        )
    _emit_doc(
        ctx,
        {
            "added": n,
            "time_series_type": "DeterministicSingleTimeSeries",
            "horizon": horizon,
            "interval": interval,
        },
    )


# ---------------------------------------------------------------------------- remove


@cli.command(
    epilog=_example(
        f"{PROG} --store demo.h5 remove --owner-id 203 --dry-run",
        f"{PROG} --store demo.h5 -y remove --owner-id 203",
    )
)
@_selector_options()
@click.option("--all", "all_", is_flag=True, help="Remove every series (no selector needed).")
@click.option("--dry-run", is_flag=True, help="Report what would be removed; change nothing.")
@_global_options(hidden=True)
@click.pass_context
def remove(ctx: click.Context, all_: bool, dry_run: bool, **kw: Any) -> None:
    """Remove the series the selector flags match.

    Asks for confirmation on stderr unless -y is given; without a terminal to ask on
    (stdin piped or redirected) it refuses unless -y is given. A SingleTimeSeries that
    backs a derived forecast is refused until that one is removed too.
    """
    _format(ctx)
    if not all_ and not kw.get("ids") and not _filters(kw):
        raise click.UsageError("remove needs a selector (--id, --owner-id, --name, …) or --all")
    with _open_store(ctx, read_only=dry_run) as store:
        rows = _select(store, kw)
        ids = [r.id for r in rows]
        if dry_run:
            _emit_doc(ctx, {"dry_run": True, "would_remove": len(ids), "ids": ids})
            return
        if ids and not _globals(ctx).yes:
            if not _stdin_is_terminal():
                raise _Refused(
                    f"refusing to remove {len(ids)} series without confirmation: stdin is not "
                    "a terminal to ask on; pass -y (--yes) to confirm"
                )
            if not click.confirm(
                f"Remove {len(ids)} series from {store.path}?", default=False, err=True
            ):
                click.echo("Aborted.", err=True)
                ctx.exit(1)
        removed = store.remove_by_ids(ids) if ids else 0
    _emit_doc(ctx, {"removed": removed, "ids": ids})


# ---------------------------------------------------------------------------- verify


@cli.command(
    epilog=_example(f"{PROG} --store demo.h5 verify", f"{PROG} --store demo.h5 -f json verify")
)
@_global_options(hidden=True)
@click.pass_context
def verify(ctx: click.Context) -> None:
    """Check every catalog row's array exists and re-hashes to its recorded hash.

    Prints the report; the exit status is 1 when anything is wrong.
    """
    _format(ctx)
    with _open_store(ctx, read_only=True) as store, _Progress(ctx, "verify", "array") as bar:
        report = store.verify_integrity(progress=bar)
    doc = {
        "ok": bool(report.get("ok")),
        "checked": report.get("checked"),
        "errors": list(report.get("errors", [])),
    }
    _emit_doc(ctx, {**doc, **{k: v for k, v in report.items() if k not in doc}})
    if not doc["ok"]:
        ctx.exit(1)


# ---------------------------------------------------------------------------- rehash


@cli.command(
    epilog=_example(
        f"{PROG} --store demo.h5 export -f sqlite --db demo.db",
        "sqlite3 demo.db 'UPDATE SingleTimeSeries_f64_utc_values SET value = value * 1.1 "
        "WHERE array_id = 1 RETURNING value'",
        f"{PROG} rehash --db demo.db",
        f"{PROG} init copy.h5",
        f"{PROG} --store copy.h5 add --sqlite demo.db",
    )
)
@click.option("--db", required=True, metavar="FILE", help="The interchange database to fix.")
@click.option(
    "--table-prefix", default="", metavar="P", help="Only the partitions under this prefix."
)
@_global_options(hidden=True)
@click.pass_context
def rehash(ctx: click.Context, db: str, table_prefix: str) -> None:
    """Recompute every array's data_hash in an exported database from its values.

    After values were edited with plain SQL, the import's checksum refuses them; rehash
    makes the recorded hashes describe the edited values again, so the import can keep
    its checksum on for everything else. No store is needed.
    """
    from .rehash import rehash_sqlite

    _format(ctx)
    with _Progress(ctx, "rehash", "array") as bar:
        changed = rehash_sqlite(db, table_prefix, progress=bar)
    _emit_doc(ctx, {"rehashed": changed, "db": db, "table_prefix": table_prefix})


# ---------------------------------------------------------------------------- export

_EXPORT_TABLE = ("values_table", "series", "arrays", "rows")


@cli.command(
    epilog=_example(
        f"{PROG} --store demo.h5 export -f sqlite --db demo.db",
        f"{PROG} --store demo.h5 -f json export --db run1.db --table-prefix run1_ \\",
        "    --owner-type RenewableDispatch \\",
        "    --time-range 2024-07-01T00:00:00Z..2024-07-02T00:00:00Z",
        "sqlite3 demo.db 'SELECT partition_name, count(*) FROM all_values GROUP BY 1'",
    )
)
@_selector_options(ids=False)
@click.option(
    "--db",
    metavar="FILE",
    help="The SQLite database to write (created if absent; tables are only added).",
)
@click.option(
    "--dir", "dir_", metavar="DIR", help="Per-series CSV/JSON/JSONL files (not implemented yet)."
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
    help="Clip every series to half-open START..END (whole forecast windows by issue time).",
)
@click.option(
    "--include-derived",
    is_flag=True,
    help="Also write DeterministicSingleTimeSeries (materialized windows; no import takes them back).",
)
@click.option("--dry-run", is_flag=True, help="Plan and print the partitions; write nothing.")
@_global_options(hidden=True)
@click.pass_context
def export(
    ctx: click.Context,
    db: str | None,
    dir_: str | None,
    table_prefix: str,
    time_range: tuple[datetime, datetime] | None,
    include_derived: bool,
    dry_run: bool,
    **kw: Any,
) -> None:
    """Export the selected series to one SQLite database (-f sqlite --db FILE).

    One values/series/arrays table triple per (type, value type, time reference)
    partition, plus the views all_values, all_series and all_arrays; each distinct
    array is written once. Prints one row per partition (values table, series,
    arrays, rows). With --db the -f option may instead name how that summary prints
    (json gives the list of partitions). add --sqlite reads the file back.
    """
    fmt = _format(ctx, EXPORT_FORMATS)
    if fmt == "parquet":
        raise click.UsageError(
            "export -f parquet is not implemented in this version; use -f sqlite --db FILE", ctx
        )
    if dir_ is not None:
        raise click.UsageError(
            "export --dir (one CSV/JSON/JSONL file per series) is not implemented in this "
            "version; use -f sqlite --db FILE",
            ctx,
        )
    if db is None:
        if fmt == "sqlite":
            raise click.UsageError("export -f sqlite needs --db FILE", ctx)
        raise click.UsageError(
            f"export -f {fmt} (series values as {fmt} on stdout) is not implemented in this "
            "version; use -f sqlite --db FILE",
            ctx,
        )
    shown = "table" if fmt == "sqlite" else fmt
    filters = _filters(kw)
    with _open_store(ctx, read_only=True) as store, _Progress(ctx, "export") as bar:
        parts = store.export_sqlite(
            db,
            table_prefix=table_prefix,
            time_range=time_range,
            include_derived=include_derived,
            dry_run=dry_run,
            progress=bar,
            **filters,
        )
    columns = list(parts[0]) if parts else _partition_columns()
    if dry_run:
        doc = {
            "dry_run": True,
            "db": db,
            "partitions": parts,
            "series": sum(p["series"] for p in parts),
            "rows": sum(p["rows"] for p in parts),
        }
        if shown in ("json", "jsonl"):
            click.echo(_dumps(doc, pretty=shown == "json"))
        else:
            _emit_rows(ctx, parts, columns=columns, table_columns=_EXPORT_TABLE, fmt=shown)
            _note(ctx, f"dry run: nothing was written to {db}")
        return
    _emit_rows(ctx, parts, columns=columns, table_columns=_EXPORT_TABLE, wrap=False, fmt=shown)
    if not parts:
        _note(ctx, f"the selection matched no series; {db} was not written")


def _partition_columns() -> list[str]:
    from .plan import SUMMARY_KEYS

    return list(SUMMARY_KEYS)


# ============================================================================ entry point


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``infrastore-sqlite``)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name=PROG)


__all__ = ["Globals", "cli", "main"]
