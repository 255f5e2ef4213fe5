"""An export's and an import's options as values, shared by both containers and by ``diff``.

* :class:`~.selection.Selection` — which series an export takes, checked where it is
  made (its own module, as the plan takes it too);
* :class:`ExportOptions` — the selection and what both containers' exports take
  (``dry_run``, ``overwrite``, ``progress``);
* :class:`ImportOptions` — what both containers' imports (and their diffs) take
  (``skip_checksum``, ``on_conflict``, ``overrides``, ``dry_run``, ``per_partition``,
  ``diff``, ``progress``, the store's bounds).

Each is a frozen, keyword-only dataclass. The Store's methods, the plain functions and the
command line build them from the same keywords (``of``); a container's own words stay its
function's keywords (SQLite: ``table_prefix``, ``provenance``; Parquet:
``storage_options``, ``jobs``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..errors import InvalidParameterError
from ..store.conflicts import OnConflict, check_on_conflict
from .importing.limits import Limits
from .selection import Selection

__all__ = [
    "ExportOptions",
    "ImportOptions",
    "Progress",
    "Selection",
    "export_options",
    "import_options",
]

Progress = Callable[[int, int], None]


@dataclass(frozen=True, kw_only=True, slots=True)
class ExportOptions:
    """What both containers' exports take.

    Parameters
    ----------
    selection
        The series to export (all stored series but the derived ones by default).
    dry_run
        Plan and check only: return the partitions that would be written, write nothing.
    overwrite
        Replace what is already there (the SQLite file; the Parquet files or objects of
        the same names) instead of adding to it or refusing.
    progress
        Called as ``progress(rows_done, rows_total)`` while values are written.
    """

    selection: Selection = field(default_factory=Selection)
    dry_run: bool = False
    overwrite: bool = False
    progress: Progress | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.selection, Selection):
            raise InvalidParameterError(
                f"selection must be a Selection, not {type(self.selection).__name__}",
                key="selection",
            )

    @classmethod
    def of(
        cls,
        *,
        time_range: tuple[datetime, datetime] | None = None,
        include_derived: bool = False,
        dry_run: bool = False,
        overwrite: bool = False,
        progress: Progress | None = None,
        **filters: Any,
    ) -> ExportOptions:
        """The options of the export keywords, as the Store's methods take them."""
        return cls(
            selection=Selection.of(
                time_range=time_range, include_derived=include_derived, **filters
            ),
            dry_run=bool(dry_run),
            overwrite=bool(overwrite),
            progress=progress,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ImportOptions:
    """What both containers' imports, and their diffs, take.

    Parameters
    ----------
    skip_checksum
        Waive the comparison of each array with its recorded ``data_hash``.
    on_conflict
        ``"error"``, ``"replace"`` or ``"ignore"``: what happens to a series the store
        already holds (``Store.import_sqlite`` says more).
    overrides
        The inline flags (overrides and assertions); the container checks them, as its
        refusals name its own flag.
    dry_run
        Read and check everything, write nothing.
    per_partition
        Commit one transaction per partition.
    diff
        With ``dry_run``: each series entry also says what ``on_conflict="replace"``
        would change.
    progress
        Called as ``progress(done_rows, total_rows)`` while values are read.
    limits
        The store's bounds on what a file may make a reader hold
        (``max_array_bytes``, ``max_cell_bytes``).
    detail
        Whether the report lists every series (an entry each, with its outcome); False:
        each partition's counts only, so memory does not grow with the file's series
        (the command line's ``add``, which prints counts and ids).
    """

    skip_checksum: bool = False
    on_conflict: OnConflict = "error"
    overrides: Mapping[str, Any] | None = None
    dry_run: bool = False
    per_partition: bool = False
    diff: bool = False
    progress: Progress | None = None
    limits: Limits = field(default_factory=Limits)
    detail: bool = True

    def __post_init__(self) -> None:
        check_on_conflict(self.on_conflict)
        if not isinstance(self.limits, Limits):
            raise InvalidParameterError(
                f"limits must be a Limits, not {type(self.limits).__name__}", key="limits"
            )
        if self.overrides is not None and not isinstance(self.overrides, Mapping):
            raise InvalidParameterError(
                f"overrides must be a dict of inline flags, not {type(self.overrides).__name__}"
            )

    def for_diff(self) -> ImportOptions:
        """These options as a diff runs the import: a dry run that compares every series
        with the stored one of the same identity as ``on_conflict="replace"`` would file
        it, the checksum waived (the values are compared with the store's own, so a diff
        works before ``rehash``; each entry's ``hash_stale`` says whether the import
        would refuse the recorded hash)."""
        return replace(
            self,
            skip_checksum=True,
            dry_run=True,
            on_conflict="replace",
            diff=True,
            per_partition=False,
        )

    @classmethod
    def of(
        cls,
        *,
        skip_checksum: bool = False,
        on_conflict: OnConflict = "error",
        overrides: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        per_partition: bool = False,
        diff: bool = False,
        progress: Progress | None = None,
        max_array_bytes: int | None = None,
        max_cell_bytes: int | None = None,
        detail: bool = True,
    ) -> ImportOptions:
        """The options of the import keywords, as the Store's methods take them."""
        return cls(
            detail=bool(detail),
            skip_checksum=bool(skip_checksum),
            on_conflict=on_conflict,
            overrides=overrides,
            dry_run=bool(dry_run),
            per_partition=bool(per_partition),
            diff=bool(diff),
            progress=progress,
            limits=Limits.of(max_array_bytes=max_array_bytes, max_cell_bytes=max_cell_bytes),
        )


#: The keywords whose default is neither None nor False.
_DEFAULTS: dict[str, Any] = {"on_conflict": "error"}


def _given(keywords: Mapping[str, Any]) -> list[str]:
    """The keywords a caller set (other than their defaults: None, False, ``_DEFAULTS``)."""
    return [
        k
        for k, v in keywords.items()
        if v is not None and v is not False and not (k in _DEFAULTS and v == _DEFAULTS[k])
    ]


def export_options(options: ExportOptions | None, **keywords: Any) -> ExportOptions:
    """The export's options: ``options`` when given, else made of the keywords; both at
    once is refused, as it would leave one of them unread."""
    if options is None:
        return ExportOptions.of(**keywords)
    _check_alone(options, ExportOptions, keywords)
    return options


def import_options(options: ImportOptions | None, **keywords: Any) -> ImportOptions:
    """The import's options: ``options`` when given, else made of the keywords."""
    if options is None:
        return ImportOptions.of(**keywords)
    _check_alone(options, ImportOptions, keywords)
    return options


def _check_alone(options: Any, kind: type, keywords: Mapping[str, Any]) -> None:
    if not isinstance(options, kind):
        raise InvalidParameterError(
            f"options must be {kind.__name__}, not {type(options).__name__}", key="options"
        )
    given = _given(keywords)
    if given:
        raise InvalidParameterError(
            f"options= already holds the {kind.__name__}; give "
            f"{', '.join(f'{k}=' for k in given)} inside it, or leave options= out",
            key="options",
        )
