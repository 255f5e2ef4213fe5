"""Rendering: results as table, JSON, JSON lines or CSV on stdout, notes and progress on
stderr, and errors turned into the contract's messages and exit codes (the command class
and the group class every command runs under).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shlex
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np

from ..errors import TimeSeriesError, shown
from ..store.conflicts import OUTCOMES
from ..textfiles import text_cell, to_json
from .base import DEBUG_ENV, EXPORT_FORMATS, PROG, Ambiguous, globals_of, output_format

# Where the group keeps the arguments it was called with (for messages that show the
# command line, such as a refusal's "`… --zoned` works").
_ARGV = "infrastore_sqlite.argv"


# What a command leaves behind when Ctrl-C stops it (one line; see on_interrupt).
_ON_INTERRUPT = "infrastore_sqlite.on_interrupt"


def on_interrupt(ctx: click.Context, message: str | Callable[[KeyboardInterrupt], str]) -> None:
    """Declare the line Ctrl-C prints while this command runs (instead of ``Aborted.``).

    ``message`` may be a function of the interrupt, for a line that depends on how far
    the command got (an import's report rides on the exception, see
    :func:`partial_report`).
    """
    ctx.meta[_ON_INTERRUPT] = message


def command_line(ctx: click.Context) -> str:
    """The command line the user ran, as they could type it again."""
    return shlex.join([PROG, *ctx.meta.get(_ARGV, [])])


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


def partial_report(exc: BaseException) -> dict[str, Any] | None:
    """What an import committed before it failed (``add --sqlite`` commits per partition)."""
    report = getattr(exc, "report", None)
    if report is None:
        return None
    doc = report.to_dict() if hasattr(report, "to_dict") else dict(report)
    parts = [partition_summary(p) for p in doc.get("partitions", [])]
    committed = [p for p in parts if p["status"] == "committed"]
    return {
        "added": sum(p.get("added") or 0 for p in committed),
        "committed_series": sum(p["series"] or 0 for p in committed),
        "partitions": parts,
    }


def _print_error(ctx: click.Context, message: str, extra: Mapping[str, Any] | None = None) -> None:
    fmt = globals_of(ctx).format or "table"
    if fmt in ("json", "jsonl"):
        doc = {"status": "error", "message": message, **(extra or {})}
        click.echo(dumps(doc, pretty=fmt == "json"), err=True)
        return
    click.echo(f"Error: {message}", err=True)
    if extra and "partitions" in extra:
        done = [p for p in extra["partitions"] if p["status"] == "committed"]
        if done:
            argv = ctx.meta.get(_ARGV, [])
            command = command_line(ctx)
            if "--replace" in argv or "--ignore" in argv:
                # Both rules take series the store holds: the same command resumes.
                again, why = command, "the series already filed are then unchanged or skipped"
            else:
                again = f"{command} --ignore"
                why = "--ignore skips the series already in the store and adds the rest"
            # Committed need not mean changed: a --replace run files its unchanged series.
            changed = sum((p.get("added") or 0) + (p.get("replaced") or 0) for p in done)
            click.echo(
                f"{len(done)} partition(s) before it were committed and stay "
                f"({extra['committed_series']} series): "
                f"{shown([p['values_table'] for p in done])}"
                + ("" if changed else "; they changed nothing in the store")
                + ".\n"
                f"Once the cause is fixed, resume with: {again}\n({why})",
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


def command(*args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], click.Command]:
    """A subcommand of the group; ``cli/__init__.py`` registers it (in ``--help`` order)."""
    return click.command(*args, cls=_Command, **kwargs)


# 128 + SIGPIPE: what the shell reports for a process a closed pipe ended.
SIGPIPE_STATUS = 141


class Group(click.Group):
    """Turns library errors into the contract's messages and exit codes."""

    command_class = _Command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGV] = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            raise _no_such_option(ctx, exc) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # definition order, not alphabetical

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = super().invoke(ctx)
            # A reader that closed the pipe shows at the last flush, not only mid-write.
            sys.stdout.flush()
            return result
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Ambiguous as exc:
            if (globals_of(ctx).format or "table") in ("json", "jsonl"):
                _print_error(ctx, exc.message, {"candidates": exc.candidates})
            else:
                _print_error(ctx, str(exc))
            ctx.exit(1)
        except TimeSeriesError as exc:
            # The library's message names functions and keywords; the CLI's names
            # commands and flags (one message, two renderings).
            _print_error(ctx, exc.render("cli", command=command_line(ctx)), partial_report(exc))
            ctx.exit(1)
        except BrokenPipeError:
            # The reader of stdout stopped reading (``| head -1``): end quietly with the
            # status a process killed by SIGPIPE has in the shell, as ``cat`` does. What
            # is still buffered goes to /dev/null, so the exit's flush says nothing.
            with contextlib.suppress(Exception):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(SIGPIPE_STATUS)
        except OSError as exc:  # the environment (a permission, a full disk), not a bug
            _print_error(ctx, str(exc), partial_report(exc))
            ctx.exit(1)
        except KeyboardInterrupt as exc:
            # One line: what the interrupted command leaves behind, as it declared it.
            line = ctx.meta.get(_ON_INTERRUPT, "Aborted.")
            click.echo(line(exc) if callable(line) else line, err=True)
            ctx.exit(130)
        except MemoryError as exc:
            # What a file made a reader hold outgrew the machine: no bug, the bound is set
            # higher than the memory there is (--max-array-bytes, --max-cell-bytes).
            _print_error(
                ctx,
                "out of memory: what the command read did not fit in this machine's memory; "
                "lower --max-array-bytes / --max-cell-bytes so a file that large is refused "
                "before it is read",
                partial_report(exc),
            )
            ctx.exit(1)
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
            # An import that stopped here still says what it committed and how to resume.
            _print_error(ctx, " ".join(message.split()), partial_report(exc))
            if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                traceback.print_exc(file=sys.stderr)
            ctx.exit(1)


# ============================================================================ rendering


def dumps(obj: Any, *, pretty: bool) -> str:
    return to_json(obj, pretty=pretty)


def _cell(value: Any, *, table: bool) -> str:
    """A value as a table (shortened lists) or CSV cell (whole) shows it."""
    if table and isinstance(value, dict | list | tuple):
        if not value:
            return "" if isinstance(value, dict) else "[]"
        if isinstance(value, list | tuple) and len(value) > 12:
            head = to_json(list(value[:10]))[:-1]
            return f"{head},… ({len(value)} in all)]"
    return text_cell(value)


def _flatten(doc: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys (``by_type.SingleTimeSeries``), for table and csv."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def table_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
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


def emit_doc(ctx: click.Context, doc: Mapping[str, Any]) -> None:
    """A status document: one object."""
    fmt = output_format(ctx, EXPORT_FORMATS)
    if fmt in ("json", "jsonl"):
        click.echo(dumps(doc, pretty=fmt == "json"))
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
        click.echo(table_text(rows, columns))


def _is_rows(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def emit_rows(
    ctx: click.Context,
    rows: Sequence[Mapping[str, Any]],
    *,
    columns: Sequence[str],
    table_columns: Sequence[str] | None = None,
    wrap: bool = True,
    fmt: str | None = None,
) -> None:
    """Rows: a table, ``{"items": [...]}`` (or a bare list), one JSON line each, or CSV."""
    fmt = fmt or output_format(ctx)
    if fmt == "json":
        click.echo(dumps({"items": list(rows)} if wrap else list(rows), pretty=True))
    elif fmt == "jsonl":
        for r in rows:
            click.echo(dumps(r, pretty=False))
    elif fmt == "csv":
        click.echo(_csv_text(rows, columns))
    else:
        click.echo(table_text(rows, table_columns or columns))


def note(ctx: click.Context, message: str) -> None:
    if not globals_of(ctx).quiet:
        click.echo(message, err=True)


# ============================================================================ progress


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """The ``progress(done, total)`` callable the library takes: a tqdm bar on stderr.

    Only when stderr is a terminal and ``-q`` is not given; otherwise it does nothing,
    so a pipe or a log file never sees a bar.
    """

    def __init__(self, ctx: click.Context, desc: str, unit: str = "row") -> None:
        forced = globals_of(ctx).progress
        self.enabled = (
            forced if forced is not None else (not globals_of(ctx).quiet and _stderr_is_terminal())
        )
        self.desc = desc
        self._base = desc
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

    def phase(self, name: str) -> None:
        """The library's step (``writing values``, ``writing series``, ``writing
        views``): the bar's label says it, so a bar at 100 % while the last step runs
        does not read as stalled."""
        if not self.enabled:
            return
        self.desc = f"{self._base} {name}"
        if self.bar is not None:
            self.bar.set_description_str(self.desc)
        else:
            # No bar yet (nothing counted): say the step on its own line.
            click.echo(self.desc, err=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def partition_summary(p: Mapping[str, Any]) -> dict[str, Any]:
    """One partition of an import report, without its per-series detail."""
    series = p.get("series")
    if isinstance(series, list):
        # An import without per-series entries (``ImportOptions.detail``) counts them.
        series = len(series) or sum(p.get(k) or 0 for k in OUTCOMES)
    return {
        "values_table": p.get("values_table"),
        "time_series_type": p.get("time_series_type"),
        "status": p.get("status"),
        "series": series,
        **{k: p[k] for k in OUTCOMES if k in p},
        "arrays": p.get("arrays"),
        "rows": p.get("rows"),
        "error": p.get("error"),
    }
