"""The options every command shares: ``--store``, ``-f``, ``-q``, ``--progress``, ``-y``,
``--timeout``, the
store they name,
the output-format check, and the refusals the commands raise (an ambiguous selection, a
declined confirmation).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ..errors import (
    InvalidParameterError,
    TimeSeriesError,
)
from ..store import DEFAULT_TIMEOUT, Store

PROG = "infrastore-sqlite"
STORE_ENV = "INFRASTORE_STORE"
DEBUG_ENV = "INFRASTORE_SQLITE_DEBUG"
TABLE_FORMATS = ("table", "json", "jsonl", "csv")
EXPORT_FORMATS = (*TABLE_FORMATS, "sqlite", "parquet")
_META = "infrastore_sqlite.globals"
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
CANDIDATES_SHOWN = 10


# ============================================================================ globals


@dataclass
class Globals:
    """The options every command accepts, before or after its name."""

    store: str | None = None
    format: str | None = None
    quiet: bool = False
    progress: bool | None = None  # --progress / --no-progress; None: bars on a terminal
    # export's container when -f names it besides a table format (-f json export -f sqlite)
    container: str | None = None
    yes: bool = False
    timeout: float | None = None


def globals_of(ctx: click.Context) -> Globals:
    return ctx.meta.setdefault(_META, Globals())


def _remember(field: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if field == "progress":
            if value is not None:
                globals_of(ctx).progress = value
            return value
        if value is not None and value is not False:
            if field == "format":
                value = value.lower()
                if _second_format(ctx, globals_of(ctx).format, value):
                    return value
            setattr(globals_of(ctx), field, value)
        return value

    return callback


def _second_format(ctx: click.Context, before: str | None, now: str) -> bool:
    """A second ``-f`` (the group's and the command's are one option): honoured when it
    names the other half of an export (``-f json export -f sqlite --db F``: a SQLite file
    whose summary prints as JSON), refused when it contradicts the first; never dropped.
    Returns True when it was taken as the export's container."""
    if before is None or before == now:
        return False
    containers = {"sqlite", "parquet"}
    g = globals_of(ctx)
    if (before in containers) != (now in containers) and g.container is None:
        table, container = (before, now) if now in containers else (now, before)
        g.format, g.container = table, container
        return True
    raise click.UsageError(
        f"-f is given twice (-f {before}, then -f {now}) and the two disagree; give it once",
        ctx,
    )


def global_options(*, hidden: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--store``, ``-f``, ``-q``, ``--progress``, ``-y``, ``--timeout``; the group shows
    them, commands accept them too."""
    options = [
        click.option(
            "--store",
            metavar="PATH",
            expose_value=False,
            hidden=hidden,
            callback=_remember("store"),
            help=f"The store: a directory (catalog and array segments). Default: ${STORE_ENV}.",
        ),
        click.option(
            "-f",
            "--format",
            type=click.Choice(EXPORT_FORMATS, case_sensitive=False),
            expose_value=False,
            hidden=hidden,
            callback=_remember("format"),
            help="Output format. Every command: table (default), json, jsonl or csv. export: "
            "sqlite (--db FILE) or parquet (--dir DIR), or csv, json or jsonl for series "
            "values (one series to stdout, or a file per series with --dir DIR).",
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
            "--progress/--no-progress",
            default=None,
            expose_value=False,
            hidden=hidden,
            callback=_remember("progress"),
            help="Force progress bars on stderr on or off (default: on when stderr is a "
            "terminal and -q is not given).",
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
        click.option(
            "--timeout",
            type=click.FloatRange(min=0),
            metavar="SECONDS",
            expose_value=False,
            hidden=hidden,
            callback=_remember("timeout"),
            help="How long a write waits while another process writes the store, then fails "
            f"as busy (default {DEFAULT_TIMEOUT:g}).",
        ),
    ]

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def output_format(ctx: click.Context, allowed: Sequence[str] = TABLE_FORMATS) -> str:
    container = globals_of(ctx).container
    if container is not None and container not in allowed:
        raise click.UsageError(
            f"-f {container} is not an output format of {ctx.info_name} (it is export's)", ctx
        )
    fmt = globals_of(ctx).format or "table"
    if fmt not in allowed:
        raise click.UsageError(
            f"-f {fmt} is not an output format of {ctx.info_name}; it prints "
            f"{', '.join(allowed)}" + (" (sqlite is export's)" if fmt == "sqlite" else ""),
            ctx,
        )
    return fmt


def store_path(ctx: click.Context, given: str | None = None) -> Path:
    path = given or globals_of(ctx).store or os.environ.get(STORE_ENV)
    if not path:
        raise click.UsageError(
            f"no store given: pass --store PATH or set {STORE_ENV} (create one with "
            f"`{PROG} --store PATH init`, or try `{PROG} demo demo-store`)",
            ctx,
        )
    return Path(path)


def timeout_of(ctx: click.Context) -> float:
    """``--timeout`` (seconds a write waits for another process's), or the default."""
    given = globals_of(ctx).timeout
    return DEFAULT_TIMEOUT if given is None else float(given)


@contextlib.contextmanager
def open_store(ctx: click.Context, *, read_only: bool) -> Iterator[Store]:
    store = Store.open(store_path(ctx), read_only=read_only, timeout=timeout_of(ctx))
    try:
        yield store
    finally:
        store.close()


# ============================================================================ errors


class Ambiguous(InvalidParameterError):
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


class Refused(TimeSeriesError):
    """The command declined to act (no confirmation); exit 1."""


def example(*lines: str) -> str:
    """A help epilog: a worked example, printed verbatim after the options."""
    return "\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)
