"""Flag types (durations, instants, time ranges, type names, features) and the option
bundles several commands share (the series selectors).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click
from click.shell_completion import CompletionItem

from ..core.periods import Period
from ..core.timeref import ms_to_datetime, parse_instant
from ..errors import (
    InvalidParameterError,
)
from ..model import TimeSeriesType
from ..store import Store
from ..textfiles import (
    parse_feature,
)

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


# The short names --type takes, as the shell completes them.
TYPE_WORDS = (
    "single",
    "non_sequential",
    "persistent",
    "deterministic",
    "deterministic_single",
    "probabilistic",
    "scenarios",
)


class _TypeName(click.ParamType):
    name = "TYPE"

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        """The short type names starting with what was typed (case ignored)."""
        start = incomplete.lower()
        return [CompletionItem(w) for w in TYPE_WORDS if w.startswith(start)]

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


def features_of(
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


def selector_options(
    *, ids: bool = True, exclude: Sequence[str] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The series selector flags (``exclude`` names the keywords a command does not take)."""
    options = {
        "owner_id": click.option("--owner-id", type=int, help="Owner id."),
        "owner_category": click.option(
            "--owner-category",
            type=CATEGORY,
            metavar="[Component|SupplementalAttribute]",
            help="Component or SupplementalAttribute.",
        ),
        "owner_type": click.option("--owner-type", help="Owner type, e.g. PowerLoad."),
        "name": click.option("--name", help="Series name (exact)."),
        "name_glob": click.option(
            "--name-glob", metavar="GLOB", help="Series name as a SQLite GLOB: 'max_*'."
        ),
        "type_": click.option(
            "--type",
            "type_",
            type=TYPE_NAME,
            help="Series type; case and underscores ignored: single, non_sequential, "
            "persistent, deterministic (also matches derived), probabilistic, scenarios.",
        ),
        "resolution": click.option(
            "--resolution", type=DURATION, help="Resolution (ISO-8601, e.g. PT1H)."
        ),
        "features": click.option(
            "--feature",
            "features",
            multiple=True,
            callback=features_of,
            metavar="K=V",
            help="Feature the series carries (repeatable); V is an int, float, true/false "
            "or a string.",
        ),
        "component_field": click.option(
            "--component-field", help="Component field the series feeds."
        ),
        "zoneless": click.option(
            "--zoneless/--zoned",
            "zoneless",
            default=None,
            help="Only zoneless series (wall clock, no instants) / only zoned ones.",
        ),
    }
    chosen = [o for k, o in options.items() if k not in exclude]
    if ids:
        chosen.insert(
            0,
            click.option("--id", "ids", type=int, multiple=True, help="Catalog id (repeatable)."),
        )

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(chosen):
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
    "zoneless",
)


def filters_of(kw: Mapping[str, Any]) -> dict[str, Any]:
    """Selector flags → ``list_metadata`` keywords (only those given)."""
    mapping = {"type_": "time_series_type"}
    return {mapping.get(k, k): kw[k] for k in _SELECTOR_KEYS if kw.get(k) is not None}


def selection_of(kw: Mapping[str, Any]) -> dict[str, Any]:
    """Selector flags with ``--id`` → ``list_metadata`` keywords (``ids=`` among them)."""
    filters = filters_of(kw)
    if kw.get("ids"):
        filters["ids"] = tuple(kw["ids"])
    return filters


def select(store: Store, kw: Mapping[str, Any]) -> list[Any]:
    """The catalog rows the selector flags (``--id`` among them) match, in id order."""
    return store.select_rows(**selection_of(kw))


def limit_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--max-array-bytes`` and ``--max-cell-bytes``: the store's bounds on what a file
    may make the command read at once (the library's ``max_array_bytes=`` and
    ``max_cell_bytes=``)."""
    f = click.option(
        "--max-cell-bytes",
        type=click.IntRange(min=1, max=2**31 - 1),
        default=None,
        metavar="N",
        help="--sqlite, --parquet, --db, --dir: the longest cell (text or blob) a file may "
        "hold; a longer one is refused before it is read (default 16 MiB).",
    )(f)
    return click.option(
        "--max-array-bytes",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="--sqlite, --parquet, --db, --dir: the most one array of a file may take (8 "
        "bytes a row and column); a longer one is refused before it is read (default 1 "
        "GiB).",
    )(f)


def bound_keywords(kw: Mapping[str, Any]) -> dict[str, Any]:
    """The bounds given on the command line, as the library's keywords."""
    return {k: kw[k] for k in ("max_array_bytes", "max_cell_bytes") if kw.get(k) is not None}
