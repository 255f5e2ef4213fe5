"""Generate docs/compatibility.md by introspecting both packages.

    python docs/gen_compatibility.py          # rewrite docs/compatibility.md
    python docs/gen_compatibility.py --check  # exit 1 when docs/compatibility.md is stale

Every public name of the reference (``infrastore`` 0.15.1: its module-level names and the
public members of its classes) gets one row: **same** (present here, same parameters),
**different** (how, and why where the difference is chosen), or **not provided**. Presence
and parameters come from ``inspect``; what a signature cannot show (behaviour) is the
hand-kept :data:`BEHAVIOUR` table below, each entry checked by an interop test.
tests/test_docs_compatibility.py runs the check.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TARGET = HERE / "compatibility.md"

# The two design differences that stay, named at every name they touch (issue 25).
_DIRECTORY = (
    "chosen for durability: the store is a directory of a catalog and immutable segment "
    "files, so a commit survives a crash or a kill whole or not at all (docs/durability.md)"
)
_AUTO = (
    "chosen for speed: the default compression is `auto`, as DEFLATE saves under a fifth of "
    "typical float values' bytes and would cost most of a bulk add's time"
)

_SUB_MS = (
    "chosen: the store holds instants and periods in whole milliseconds, so such a series "
    "could never be stored; refusing it at once keeps an object whose grid the store "
    "cannot represent from being used (sliced, compared, exported to Arrow) first"
)

#: Behaviour a signature cannot show: name -> (how it differs, why).
BEHAVIOUR: dict[str, tuple[str, str]] = {
    "OwnerCategory": (
        "an `enum.IntEnum`; `Store` calls and filters also accept `'Component'` / "
        "`'SupplementalAttribute'` strings",
        "chosen: plain Python enums pickle, compare and print as users expect",
    ),
    "TimeSeriesType": (
        "an `enum.IntEnum` with the reference's integer values; filters also accept the "
        "CamelCase name",
        "chosen, as for OwnerCategory",
    ),
    "Store.add_time_series": (
        "empty `name` / `owner_type` refused; `owner_category` may be a string",
        "chosen: the reference's own import refuses empty names, so such a series could "
        "never travel",
    ),
    "Store.add_time_series_bulk": ("as `add_time_series`", "chosen, as there"),
    "Store.open": (
        "opens this package's stores only (a directory; one of the earlier two-file layout is "
        "converted by a writable open); a reference `.h5` store is refused with the "
        "one-line way across (below); `timeout=` seconds a write waits for another "
        "process's write",
        f"{_DIRECTORY}; the two HDF5 layouts differ, and the SQLite interchange file is the "
        "shared format",
    ),
    "Store.create": (
        "the store is a directory (catalog and immutable segment files); `timeout=` seconds a "
        "write waits for another process's write; "
        "`in_memory=True` keeps the store in a private temporary directory, removed on "
        '`close` (persist_to keeps a copy); `catalog="memory"` only with it (refused for an '
        "on-disk store, where the reference holds the catalog in RAM until "
        "`persist_catalog` or `close`); "
        '`compression="auto"` (the default) DEFLATEs integer and bool arrays and stores '
        'float arrays uncompressed (`"deflate"` compresses every array)',
        f"{_DIRECTORY}; the HDF5 side has no RAM-only mode here, and a scratch directory "
        "gives the same lifetime; a RAM catalog over on-disk segments would lose every "
        "commit since the last persist to a kill, which docs/durability.md promises never "
        f"happens; {_AUTO}",
    ),
    "Store.get_compression": (
        "a store created with the default compression reports `'auto'` (the reference's "
        'default is `\'deflate\'`); one created with `compression="deflate"` or `"none"` '
        "reports it as there",
        _AUTO,
    ),
    "Store.compact": (
        "`slots_reclaimed`, `datasets_dropped` and `bytes_reclaimed` count this store's "
        "segment files rewritten, not the reference's HDF5 pools; the other keys count the "
        "same things",
        _DIRECTORY,
    ),
    "Store.persist_to": (
        "writes a store directory at `path` (not an `.h5` file with a `.sqlite` catalog beside it)",
        _DIRECTORY,
    ),
    "Store.open_copy": ("copies a store directory to `dest`", _DIRECTORY),
    "Store.persist_catalog": (
        "the same as `flush()`: the catalog is always attached here",
        "the reference documents it as `flush()` for an attached catalog",
    ),
    "Store.get_array_by_hash": (
        "a ragged composite comes back at its minimal width",
        "composites are stored (and hashed) minimal-width here",
    ),
    "SingleTimeSeries.from_arrow": (
        "`timestamp[s]` / `timestamp[us]` / `timestamp[ns]` columns are converted to "
        "milliseconds; an `element_type=` the values do not fit is refused at once",
        "the reference reads every unit as milliseconds (a µs hour becomes `PT3.6S`) and "
        "refuses a mismatched element type only on `add_time_series`",
    ),
    "NonSequentialTimeSeries.from_arrow": ("as `SingleTimeSeries.from_arrow`", "as there"),
    "PersistentTimeSeries.from_arrow": ("as `SingleTimeSeries.from_arrow`", "as there"),
    "SingleTimeSeries.from_values": (
        "rows of different kinds, or malformed rows, raise `InvalidParameterError` naming the row",
        "the reference raises `TypeError` / `KeyError` there",
    ),
    "StaticReader.group_values": (
        "before the first `static_read`, or with an index out of range (negative too), "
        "raises `InvalidParameterError` saying what to call or which indexes exist",
        "the reference's message there names an internal buffer, and a negative index raises "
        "`OverflowError`",
    ),
    "ForecastReader.entry_values": (
        "as `StaticReader.group_values` (before the first `forecast_read`)",
        "as there",
    ),
    "Store.write_buffer_bytes": (
        "bounds the array writes queued ahead of the store's background writer thread "
        "(default 16 MiB), not the width of the datasets a run of adds writes",
        "each transaction here writes one new segment file, so there are no per-shape "
        "blocks to size; zero, a negative value and a non-integer are refused as there",
    ),
    "init_tracing": (
        "the store's operations go to the Python `logging` logger `infrastore_sqlite` "
        "(a stderr handler at the level the directives give); `RUST_LOG` is not read",
        "there is no Rust tracing here; the directive strings are read the same way",
    ),
    "SingleTimeSeries": (
        "a sub-millisecond `initial_timestamp`, or a `resolution` that is no positive whole "
        "number of milliseconds (`PT0S`, a timedelta of 1 or 1500 µs), is refused when the "
        "series is built (`InvalidParameterError`, in the words the reference uses at "
        "`add_time_series`), not when it is added",
        _SUB_MS,
    ),
    "NonSequentialTimeSeries": (
        "a sub-millisecond timestamp is refused when the series is built (naming it, as the "
        "reference's `add_time_series` does), not when it is added",
        _SUB_MS,
    ),
    "PersistentTimeSeries": ("as `NonSequentialTimeSeries`", "as there"),
    "Deterministic": (
        "a sub-millisecond `initial_timestamp`, `resolution`, `horizon` or `interval` is "
        "refused when the forecast is built, as for `SingleTimeSeries`",
        _SUB_MS,
    ),
    "Probabilistic": ("as `Deterministic`", "as there"),
    "Scenarios": ("as `Deterministic`", "as there"),
    "SingleTimeSeries.name": (
        "constructors refuse an empty name",
        "chosen, as for `Store.add_time_series`",
    ),
}

#: Why a name is not provided, where there is more to say than "not yet".
ABSENT: dict[str, str] = {}

#: Names of the reference that are no API: status "not an API", with why.
NOT_AN_API: dict[str, str] = {
    "infrastore": "the reference's compiled extension module (`infrastore.infrastore`), "
    "which its package re-exports; scripts use the package's names",
}

#: Groups out of scope for now: every member whose name contains one of these.
NOT_IN_SCOPE = {
    # OpenAPI first: its member names mention associations too.
    # The reference's docstrings: persist_arrays_to ships "arrays plus a document of its
    # own", and open_without_catalog is "the way in to a store shipped as arrays plus an
    # OpenAPI document": the two halves of the OpenAPI round trip.
    "OpenAPI import/export": ("openapi", "persist_arrays_to", "open_without_catalog"),
    "supplemental-attribute and parent/child associations": (
        "association",
        "supplemental_attribute",
        "parent_child",
        "list_children",
        "list_parents",
        "components_with_attributes",
    ),
}


#: Every status a row can have.
STATUSES = ("same", "different", "not provided", "not an API")


def _public(obj: Any) -> list[str]:
    return sorted(n for n in dir(obj) if not n.startswith("_"))


def _names(ref: Any) -> list[str]:
    out = []
    for name in _public(ref):
        out.append(name)
        obj = getattr(ref, name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            out += [f"{name}.{m}" for m in _public(obj)]
    return out


def _resolve(root: Any, dotted: str) -> Any:
    obj = root
    for part in dotted.split("."):
        obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
    return obj


def _callable(obj: Any) -> Any:
    if isinstance(obj, classmethod | staticmethod):
        return obj.__func__
    return obj


def _params(obj: Any) -> list[str] | None:
    """Parameter names with kind and default, or None when there is no signature."""
    obj = _callable(obj)
    if isinstance(obj, property) or not callable(obj) or inspect.isclass(obj):
        return None
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    out = []
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.kind is p.VAR_KEYWORD:
            out.append(f"**{p.name}")
            continue
        text = ("*" if p.kind is p.KEYWORD_ONLY else "") + p.name
        if p.default is not p.empty:
            text += f"={p.default!r}"
        out.append(text)
    return out


def _out_of_scope(name: str) -> str | None:
    lowered = name.lower()
    for group, needles in NOT_IN_SCOPE.items():
        if any(n in lowered for n in needles):
            return group
    return None


def rows() -> list[tuple[str, str, str]]:
    """``(name, status, note)`` for every public name of the reference."""
    import infrastore

    import infrastore_sqlite

    out = []
    for name in _names(infrastore):
        if name in NOT_AN_API:
            out.append((name, "not an API", NOT_AN_API[name]))
            continue
        ref = _resolve(infrastore, name)
        try:
            ours = _resolve(infrastore_sqlite, name)
        except AttributeError:
            group = _out_of_scope(name)
            note = f"out of scope for now ({group})" if group else ABSENT.get(name, "")
            if not note and "." in name:  # a member of a class that is absent as a whole
                note = ABSENT.get(name.split(".")[0], "") and "see its class"
            out.append((name, "not provided", note))
            continue
        notes = []
        theirs_p, ours_p = _params(ref), _params(ours)
        if theirs_p is not None and ours_p is not None and theirs_p != ours_p:
            missing = [p for p in theirs_p if p not in ours_p]
            extra = [p for p in ours_p if p not in theirs_p]
            notes.append(
                "parameters differ: reference has "
                + (", ".join(f"`{p}`" for p in missing) or "nothing more")
                + "; here "
                + (", ".join(f"`{p}`" for p in extra) or "nothing more")
            )
        if name in BEHAVIOUR:
            how, why = BEHAVIOUR[name]
            notes.append(f"{how} ({why})")
        out.append((name, "different" if notes else "same", "; ".join(notes)))
    return out


def render() -> str:
    table = rows()
    counts = {s: sum(1 for _, st, _ in table if st == s) for s in STATUSES}
    lines = [
        "# Compatibility with the reference (`infrastore` 0.15.1)",
        "",
        "<!-- Generated by docs/gen_compatibility.py from both packages; do not edit by hand. -->",
        "",
        "`import infrastore_sqlite as infrastore` runs a script written against the reference's "
        "time-series API wherever the rows below say **same**; **different** rows say how "
        "(and why, where the difference is chosen); **not provided** rows are not here, "
        "and all of them belong to the two groups out of scope for now: "
        + " and ".join(f"the {g}" for g in NOT_IN_SCOPE)
        + ". Every public name of the reference is one row: its module-level names and its "
        "classes' public members.",
        "",
        f"Totals: {counts['same']} same, {counts['different']} different, "
        f"{counts['not provided']} not provided, {counts['not an API']} not an API, "
        f"of {len(table)}.",
        "",
        "## Store files",
        "",
        "The reference's `.h5` stores cannot be opened here, nor ours there (the HDF5 "
        "layouts differ); `Store.open` on a reference store says so. The SQLite interchange "
        "file is the way across, in one line:",
        "",
        "```sh",
        "python -c \"import infrastore; infrastore.Store.open('ref.h5', read_only=True)"
        ".export_sqlite('ref.db')\" && infrastore-sqlite --store new-store add --sqlite ref.db",
        "```",
        "",
        "(`new-store` made first with `infrastore-sqlite --store new-store init`.) Derived "
        "forecast views (`DeterministicSingleTimeSeries`) stay behind, as `export_sqlite`'s "
        "`include_derived=False` does; re-derive them with `transform`.",
        "",
        "## Every public name",
        "",
        "| name | status | how / why |",
        "|---|---|---|",
    ]
    for name, status, note in table:
        cell = note.replace("|", "\\|")
        lines.append(f"| `{name}` | {status} | {cell} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TARGET.is_file() or TARGET.read_text() != text:
            print(f"{TARGET} is stale; run python docs/gen_compatibility.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
