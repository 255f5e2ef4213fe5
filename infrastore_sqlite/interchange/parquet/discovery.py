"""Finding the Parquet form's partitions at a path (a directory, a file or a stem), and
checking their footers (``parquet-layout.md`` §5, §7): nothing here reads values.

The path may be an object-storage URI (a :class:`~.location.Location`): a prefix is listed once, a
footer read with ranged requests, and an export's manifest, when there is one, checked
against what the listing shows.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...errors import InvalidParameterError, StorageError
from ...model import TimeSeriesType
from ..importing import (
    derived_refused,
    missing_sibling,
)
from ..importing.limits import MAX_MANIFEST_BYTES
from .layout import (
    ELEMENT_SHAPE_KEY,
    ELEMENT_TYPE_KEY,
    FORMAT,
    FORMAT_KEY,
    REFERENCE_KEY,
    ROLE_KEY,
    ROLES,
    TYPE_KEY,
    require_pyarrow,
)
from .location import MANIFEST, Location, locate
from .parts import open_parquet, parts_metadata

__all__ = ["FooterReader", "Found", "Partition", "discover", "read_metadata"]

#: Reads one Parquet file's metadata: an object whose ``metadata`` is the footer's
#: key-value metadata (bytes to bytes), as ``pyarrow.parquet.FileMetaData``'s is.
FooterReader = Callable[[Location], Any]

_SUFFIXES = {role: f".{role}.parquet" for role in ROLES}

#: Footer keys that must agree across a partition's three files.
_AGREEING = (FORMAT_KEY, TYPE_KEY, ELEMENT_TYPE_KEY, ELEMENT_SHAPE_KEY, REFERENCE_KEY)


# ------------------------------------------------------------------------------ discovery
@dataclass(slots=True)
class Partition:
    """One partition's files and what their footers say. A foreign file (a values file
    alone) has ``type`` None until the inline flags and its metadata decide it."""

    stem: str
    files: dict[str, Location]
    type: TimeSeriesType | None
    footers: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Each file's Parquet metadata as discovery read it (the reader opens the file with
    #: it instead of reading and parsing the footer again).
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def foreign(self) -> bool:
        return "series" not in self.files


@dataclass(slots=True)
class Found:
    """What a path holds: partitions to import, and what was left out."""

    where: str
    partitions: list[Partition]
    set_aside: list[dict[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    #: Files an export's manifest lists at another size whose footer reads: edits.
    changed: list[str] = field(default_factory=list)


def _role_of(name: str) -> tuple[str, str] | None:
    for role, suffix in _SUFFIXES.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], role
    return None


def discover(
    path: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    read_footer: FooterReader | None = None,
) -> Found:
    """The partitions at ``path`` (a directory, a file or a stem, local or a URI), by stem.

    ``read_footer`` reads a file's footer (pyarrow's ``read_metadata`` when None): a
    reader that already holds another engine's session (``query``) reads them with it.

    Raises
    ------
    InvalidParameterError
        Nothing there, a sibling missing, a named DeterministicSingleTimeSeries partition,
        a footer that says another format or disagrees with its siblings.
    """
    where = os.fspath(path)
    p = locate(where, storage_options)
    read = _Footers(read_footer)
    if where.lower().startswith("file://"):
        where = str(p)  # a file:// URI as the path it names
    if p.is_dir():
        split = _role_of(p.name)
        names = p.listdir()
        if not any(_role_of(n) for n in names) and (split or p.name.endswith(".parquet")):
            # A partition's file (or a foreign file) written as a directory of part files.
            if split is None:
                return Found(where, [_foreign(p, p.name.removesuffix(".parquet"), None, read)])
            return Found(where, [_partition(p.parent, split[0], where, read, named=True)])
        return _discover_dir(p, where, read)
    if p.is_file():
        split = _role_of(p.name)
        if split is None:
            _refuse_a_part(p, where)
            # Any other .parquet file is a foreign values file.
            return Found(where, [_foreign(p, p.name.removesuffix(".parquet"), None, read)])
        return Found(where, [_partition(p.parent, split[0], where, read, named=True)])
    values = p.parent / (p.name + _SUFFIXES["values"])
    if any(_exists(p.parent / (p.name + s)) for s in _SUFFIXES.values()):
        return Found(where, [_partition(p.parent, p.name, where, read, named=True)])
    raise InvalidParameterError(
        f"{where} is neither a directory, a file nor a partition stem (no "
        f"{values.name} there); name what export -f parquet wrote",
        table=where,
    )


def _exists(path: Location) -> bool:
    """Whether a partition's file is there: a file, or a directory of part files."""
    return path.is_file() or path.is_dir()


def _refuse_a_part(p: Location, where: str) -> None:
    """Refuse a part file named alone: its directory is the partition's file."""
    up = p.parent
    for _ in range(3):  # the part's directory, or a Polars key=value/ directory below it
        if _role_of(up.name) is not None:
            raise InvalidParameterError(
                f"{where} is one part of {up}, a partition's file written as a directory of "
                f"part files; name {up} (or the directory holding it) to import every part",
                table=where,
            )
        if up.parent == up or not up.name:
            return
        up = up.parent


def _discover_dir(d: Location, where: str, read: _Footers) -> Found:
    stems: dict[str, set[str]] = {}
    ignored: list[str] = []
    names = d.listdir()
    changed = _check_manifest(d / MANIFEST, read) if MANIFEST in names else []
    for name in sorted(names, key=lambda n: n.encode()):
        split = _role_of(name)
        if split is None or not _exists(d / name):
            if not name.startswith(".") and name != MANIFEST:
                ignored.append(name)
            continue
        stems.setdefault(split[0], set()).add(split[1])
    found = Found(where, [], ignored=ignored, changed=changed)
    for stem in sorted(stems, key=lambda s: s.encode()):
        roles = stems[stem]
        if "values" in roles and "series" not in roles:
            values = d / f"{stem}{_SUFFIXES['values']}"
            raise InvalidParameterError(
                f"{where} holds {values.name} but no {stem}.series.parquet beside it; a "
                "partition's files come from one export (name the file itself to import it "
                "as a foreign file)",
                table=str(values),
            )
        part = _partition(d, stem, where, read, named=False)
        if part.type is TimeSeriesType.DeterministicSingleTimeSeries:
            found.set_aside.append(
                {
                    "name": stem,
                    "values_table": str(part.files["values"]),
                    "reason": derived_refused(str(part.files["values"])).message,
                }
            )
            continue
        found.partitions.append(part)
    if not found.partitions and not found.set_aside:
        raise InvalidParameterError(
            f"{where} holds no exported partitions (no *.values.parquet with its "
            "*.series.parquet and *.arrays.parquet)",
            table=where,
        )
    return found


def _check_manifest(manifest: Location, read: _Footers) -> list[str]:
    """The files of the directory that differ from what its manifest lists: a file whose
    size differs but whose footer reads was edited since the export (or written again by
    an engine, as a directory of parts) and is read as it is now; a file missing, or cut
    short so that its footer no longer reads, is refused as an incomplete copy. Every name
    it lists must stay in the directory (:meth:`Location.inside`), and the manifest itself is
    bounded (``MAX_MANIFEST_BYTES``)."""
    d = manifest.parent
    d.inside(manifest.name)
    size = manifest.size()
    if size is not None and size > MAX_MANIFEST_BYTES:
        raise InvalidParameterError(
            f"{manifest} holds {size:,} bytes, more than the {MAX_MANIFEST_BYTES:,} an "
            "export's manifest can need (one short entry a file); it was not read. Remove "
            "it to import the files without it",
            table=str(manifest),
        )
    try:
        listed = orjson.loads(manifest.read_bytes())["files"]
        wanted = {str(f["name"]): int(f["size"]) for f in listed}
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"{manifest} is not a manifest this build reads ({exc}); remove it to import "
            "the files without it",
            table=str(manifest),
        ) from None
    except OSError as exc:
        raise StorageError(f"reading {manifest} failed: {exc}", table=str(manifest)) from exc
    for name in wanted:
        d.inside(name, listed_in=str(manifest))
    changed: list[str] = []
    for name, size in wanted.items():
        path = d / name
        have = path.size()
        if have == size:
            continue
        if (have is not None and read.reads(path)) or (have is None and path.is_dir()):
            changed.append(str(path))
            continue
        state = "is missing" if have is None else f"holds {have} bytes and its footer does not read"
        raise InvalidParameterError(
            f"{path} {state}, but the export's manifest {manifest.name} lists "
            f"{size} bytes: the copy is incomplete; export again (or copy the file "
            "again) before importing",
            table=str(path),
        )
    return changed


class _Footers:
    """Reads footers with the given reader (pyarrow's when None); a directory of part
    files as every part's (:class:`PartsMetadata`)."""

    def __init__(self, read_file: FooterReader | None) -> None:
        self.read_file = read_file or read_metadata

    def __call__(self, path: Location) -> Any:
        if not path.is_file() and path.is_dir():
            return parts_metadata(None, path, self.read_file)
        return self.read_file(path)

    def reads(self, path: Location) -> bool:
        """Whether the footer of ``path`` reads."""
        try:
            self(path)
        except StorageError:
            return False
        return True


def _partition(d: Location, stem: str, where: str, read: _Footers, *, named: bool) -> Partition:
    files = {role: d.inside(f"{stem}{suffix}") for role, suffix in _SUFFIXES.items()}
    have = {role for role, f in files.items() if _exists(f)}
    if "values" not in have:
        other = files["series"] if "series" in have else files["arrays"]
        raise missing_sibling(where, str(other), files["values"].name)
    if "series" not in have:
        # A values file alone is a foreign file (a directory refused it already).
        return _foreign(files["values"], stem, files["arrays"] if "arrays" in have else None, read)
    if "arrays" not in have:
        raise missing_sibling(where, str(files["values"]), files["arrays"].name)
    metadata = {role: read(files[role]) for role in ROLES}
    footers = {role: _footer(md) for role, md in metadata.items()}
    _check_footers(stem, files, footers)
    tst = _partition_type(stem, files, footers)
    if named and tst is TimeSeriesType.DeterministicSingleTimeSeries:
        raise derived_refused(str(files["values"]))
    return Partition(stem, files, tst, footers, metadata)


def _foreign(values: Any, stem: str, arrays: Any, read: _Footers) -> Partition:
    files = {"values": values} if arrays is None else {"values": values, "arrays": arrays}
    metadata = {"values": read(values)}
    footers = {"values": _footer(metadata["values"])}
    meta = footers["values"]
    if meta.get(FORMAT_KEY) == "normalized_v1" or meta.get(FORMAT_KEY, FORMAT) != FORMAT:
        _check_footers(stem, files, {**footers, "series": {}, "arrays": {}})
    return Partition(stem, files, None, footers, metadata)


def read_metadata(path: Location) -> Any:
    """A file's Parquet metadata (its footer, parsed; of an object, read by range); of a
    directory of part files, every part's (:class:`PartsMetadata`)."""
    _, pq = require_pyarrow()
    if not path.is_file() and path.is_dir():
        return parts_metadata(pq, path, read_metadata)
    with reading_errors(path):
        return pq.read_metadata(path.open_input())


def _footer(metadata: Any) -> dict[str, str]:
    """The key-value metadata of a file's footer, as text (but the Arrow schema that
    pyarrow keeps there, which is no key of the layout's)."""
    raw = metadata.metadata or {}
    return {
        k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
        for k, v in raw.items()
        if k != b"ARROW:schema"
    }


def _check_footers(
    stem: str, files: dict[str, Location], footers: dict[str, dict[str, str]]
) -> None:
    with_footer = [r for r in ROLES if FORMAT_KEY in footers.get(r, {})]
    for role in with_footer:
        meta = footers[role]
        fmt = meta[FORMAT_KEY]
        if fmt == "normalized_v1":
            raise InvalidParameterError(
                f"{files[role]} is in the normalized_v1 layout, the layout before the arrays "
                "file, which this build does not read; export it again",
                table=str(files[role]),
            )
        if fmt != FORMAT:
            raise InvalidParameterError(
                f'{files[role]} says {FORMAT_KEY} "{fmt}", a format this build does not '
                f"read (it reads {FORMAT}); export it again with this package",
                table=str(files[role]),
            )
        if meta.get(ROLE_KEY, role) != role:
            raise InvalidParameterError(
                f'{files[role]} says {ROLE_KEY} "{meta[ROLE_KEY]}": it is a {meta[ROLE_KEY]} '
                f"file named as the partition {stem}'s {role} file; rename it back",
                table=str(files[role]),
            )
    for key in _AGREEING:
        seen = [(r, footers[r][key]) for r in with_footer if key in footers[r]]
        for r, v in seen[1:]:
            if v != seen[0][1]:
                r0, v0 = seen[0]
                raise InvalidParameterError(
                    f'the footers of partition {stem} disagree on {key}: {files[r0]} says "{v0}" '
                    f'and {files[r]} says "{v}"; a partition\'s files come from one export',
                    table=str(files[r]),
                )


def _partition_type(
    stem: str, files: dict[str, Location], footers: dict[str, dict[str, str]]
) -> TimeSeriesType:
    for role in ROLES:
        name = footers[role].get(TYPE_KEY)
        if name is not None and FORMAT_KEY in footers[role]:
            break
    else:
        # No footer (a query engine rewrote the files): the series rows say it.
        _, pq = require_pyarrow()
        with reading_errors(files["series"]):
            pf = open_parquet(pq, files["series"], read_metadata(files["series"]), "series")
            if "time_series_type" not in pf.schema_arrow.names:
                raise InvalidParameterError(
                    f"{files['series']} is missing column(s) a series file carries: "
                    "time_series_type",
                    table=str(files["series"]),
                )
            # The first row only: a column of many rows of one long text (a dictionary
            # page repeated by its indices) would be spelled out whole by a read.
            first = next(pf.iter_batches(batch_size=1, columns=["time_series_type"]), None)
        values = [v for v in (first.column(0).to_pylist() if first else []) if v is not None]
        if not values:
            raise InvalidParameterError(
                f"{files['series']} has no rows and no footer, so nothing says which type "
                f"partition {stem} is; export it again",
                table=str(files["series"]),
            )
        name = values[0]
    try:
        return TimeSeriesType[name]
    except KeyError:
        raise InvalidParameterError(
            f'{files["series"]}: unknown time_series_type "{name}" (partition {stem})',
            table=str(files["series"]),
        ) from None


@contextlib.contextmanager
def reading_errors(path: Location | str) -> Iterator[None]:
    """pyarrow's and the OS's read errors as a StorageError naming the file."""
    import pyarrow

    try:
        yield
    except (OSError, pyarrow.ArrowException) as exc:
        raise StorageError(
            f"reading {path} failed: {exc}; if the file was cut short or damaged, export it "
            "again (or copy it again from where it was exported)",
            table=str(path),
        ) from exc
