"""One exception hierarchy for the whole package.

The class names are the reference implementation's (``infrastore`` 0.15.1), so code
written against it catches the same names here. Every error carries structured fields
(``series``, ``table``, ``key``, ``hint``) besides its message, so a caller (the CLI,
a test) can tell *what* was refused without parsing text.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Audience = Literal["api", "cli"]


@dataclass(frozen=True, slots=True)
class Term:
    """One thing a message names, spelled for each caller.

    A message is written once, with ``{slot}`` where a command, flag, function or keyword
    goes; the error keeps the slots' terms and renders the message for the Python API
    (``str(exc)``) or for the command line (``exc.render("cli")``).

    ``cli`` may contain ``{command}``: the CLI fills in the command line the user ran, so a
    refusal can show the exact command that works (``{command} --zoned``).
    """

    cli: str
    api: str

    def spell(self, audience: Audience) -> str:
        return self.cli if audience == "cli" else self.api


# The vocabulary both renderings share. A new refusal that names a way out adds its term
# here rather than spelling a flag or a function in its text.
NO_CHECKSUM = Term("--no-checksum", "skip_checksum=True")
INCLUDE_DERIVED = Term("--include-derived", "include_derived=True")
TRANSFORM = Term("`infrastore-sqlite transform`", "Store.transform_single_time_series")
REPLACE = Term("--replace", 'on_conflict="replace"')
IGNORE = Term("--ignore", 'on_conflict="ignore"')
REMOVE = Term("`infrastore-sqlite remove`", "Store.remove_by_ids")
ZONED = Term("--zoned", "zoneless=False")
ZONELESS = Term("--zoneless", "zoneless=True")
# The CLI shows the user's own command with the flag added.
ZONED_RETRY = Term("`{command} --zoned`", "pass zoneless=False")
OVERWRITE = Term("--overwrite", "overwrite=True")
STORAGE_OPTION = Term("--storage-option KEY=VALUE", "storage_options={...}")
OTHER_PREFIX = Term("--table-prefix P", 'table_prefix="P"')
EXPORT_SQLITE = Term("`infrastore-sqlite export -f sqlite --db FILE`", "Store.export_sqlite")
DIFF = Term("`infrastore-sqlite diff --sqlite FILE`", "Store.diff_sqlite")
LIST = Term("`infrastore-sqlite list`", "list_metadata")
READ_ONLY_OPEN = Term(
    "the reading commands (list, get, info, export, verify)", "Store.open(path, read_only=True)"
)


def rehash_term(db: str) -> Term:
    """How to recompute the hashes of the interchange file ``db``."""
    return Term(
        f"`infrastore-sqlite rehash --db {shlex.quote(db)}`",
        f"infrastore_sqlite.rehash_sqlite({db!r})",
    )


def rehash_dir_term(directory: str) -> Term:
    """How to recompute the hashes of the Parquet files in ``directory``."""
    return Term(
        f"`infrastore-sqlite rehash --dir {shlex.quote(directory)}`",
        f"infrastore_sqlite.interchange.parquet.rehash_parquet({directory!r})",
    )


def damage_terms(store: str) -> dict[str, Term]:
    """How to diagnose (``verify``) and repair (``repair``) the damaged store at ``store``."""
    quoted = shlex.quote(store)
    return {
        "verify": Term(f"`infrastore-sqlite --store {quoted} verify`", "Store.diagnose()"),
        "repair": Term(f"`infrastore-sqlite --store {quoted} repair`", "Store.repair()"),
    }


def rebuild_terms(store: str) -> dict[str, Term]:
    """How to repair the store at ``store`` when its catalog cannot be opened (``repair``
    on the command line, ``Store.repair_catalog`` in Python)."""
    quoted = shlex.quote(store)
    return {
        "rebuild": Term(
            f"`infrastore-sqlite --store {quoted} repair`", f"Store.repair_catalog({store!r})"
        )
    }


def render(
    template: str, terms: Mapping[str, Term], audience: Audience, command: str | None = None
) -> str:
    """``template`` with every ``{slot}`` of ``terms`` spelled for ``audience``.

    Only the named slots are replaced, so braces in data (a JSON feature map) stay, and
    in one pass, so a term's own text (a store path such as ``/data/{repair}``) is never
    taken for a slot of another. For the CLI, ``{command}`` in a term becomes the command
    line the user ran.
    """
    if not terms:
        return template

    def spell(found: re.Match[str]) -> str:
        spelled = terms[found.group(1)].spell(audience)
        if audience == "cli":
            spelled = spelled.replace("{command}", command or "infrastore-sqlite …")
        return spelled

    slots = "|".join(re.escape(slot) for slot in terms)
    return re.sub(r"\{(" + slots + r")\}", spell, template)


def shown(names: Sequence[str], limit: int = 8) -> str:
    """``a, b, c`` — the first ``limit`` of ``names`` and how many more (``, … and 3
    more``): every list a message prints is shortened this way."""
    more = len(names) - limit
    return ", ".join(names[:limit]) + (f", … and {more} more" if more > 0 else "")


def counted(n: int, word: str) -> str:
    """``n`` and ``word``, singular for one: "1 lane", "6 steps"."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _sentence(message: str) -> str:
    """``message`` closed as a sentence, so a hint appended after it reads as the next one
    ("… to the millisecond. Truncate it …", not "… to the millisecond Truncate it …")."""
    text = message.rstrip()
    return text if not text or text[-1] in ".!?:;" else f"{text}."


class TimeSeriesError(Exception):
    """Root of every error this package raises on purpose.

    Parameters
    ----------
    message
        What is wrong and, where there is one, what to do about it.
    series
        The series concerned, as a short human label (``'load' (owner 1)``) or a list.
    table
        The SQL table concerned, for interchange errors.
    key
        The array key concerned (``data_hash``, ``time_axis``), for interchange errors.
    hint
        What to do, when not already part of ``message``.
    """

    def __init__(
        self,
        message: str,
        *,
        series: Any = None,
        table: str | None = None,
        key: Any = None,
        hint: str | None = None,
        terms: Mapping[str, Term] | None = None,
    ) -> None:
        self.terms = dict(terms or {})
        self.template = message
        self.hint_template = hint
        self.message = render(message, self.terms, "api")
        super().__init__(self.message)
        self.series = series
        self.table = table
        self.key = key
        self.hint = None if hint is None else render(hint, self.terms, "api")

    def render(self, audience: Audience = "api", *, command: str | None = None) -> str:
        """The full message for ``audience``: ``"api"`` (what ``str()`` gives) or ``"cli"``.

        Parameters
        ----------
        audience
            Who reads it: the Python API names functions and keywords, the CLI names
            commands and flags.
        command
            The command line the user ran, for terms that show it (CLI only).
        """
        message = render(self.template, self.terms, audience, command)
        hint = self.hint_template and render(self.hint_template, self.terms, audience, command)
        if hint and hint not in message:
            return f"{_sentence(message)} {hint}"
        return message

    def __str__(self) -> str:
        return self.render("api")


class Notice:
    """Something a caller should hear that is not an error (what an export left out).

    Written once like an error's message, with ``{slot}`` terms; ``render`` spells it for
    the Python API or the CLI.
    """

    def __init__(self, message: str, *, terms: Mapping[str, Term] | None = None) -> None:
        self.template = message
        self.terms = dict(terms or {})

    def render(self, audience: Audience = "api", *, command: str | None = None) -> str:
        return render(self.template, self.terms, audience, command)

    def __str__(self) -> str:
        return self.render("api")

    def __repr__(self) -> str:
        return f"Notice({self.render('api')!r})"


class InvalidParameterError(TimeSeriesError, ValueError):
    """An argument, a value or a file's content is not acceptable."""


class ParameterTypeError(InvalidParameterError, TypeError):
    """An argument of the wrong Python type (a str where an id goes): a ``TypeError``, as
    in the reference, and an ``InvalidParameterError`` for callers that catch those."""


class NotFoundError(TimeSeriesError, KeyError):
    """A series, an array or a file named by the caller does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return TimeSeriesError.__str__(self)


class DuplicateTimeSeriesError(TimeSeriesError):
    """A series with the same identity is already in the store (or twice in one batch)."""


class OwnerMismatchError(InvalidParameterError):
    """A call guarded by an owner named series that belong to another owner."""


class IntegrityError(TimeSeriesError):
    """Stored data disagrees with its recorded hash, or a catalog rule would be broken."""


class DamagedStoreError(IntegrityError):
    """A read met an array whose segment file is damaged or missing, or whose bytes no
    longer hash to its key: ``series`` lists the series concerned (their labels), ``key``
    the damaged files. The store's other series stay readable."""


class CatalogDamagedError(DamagedStoreError):
    """The store's catalog cannot be read as a catalog: empty, without an SQLite header,
    without the store's tables, or rows that SQLite cannot read. ``key`` is the catalog
    file, ``problem`` what is wrong (``empty``, ``no header``, ``no tables``,
    ``unreadable``, ``journal``). Only ``Store.create`` makes a catalog: nothing
    opens such a file as a new one."""

    def __init__(self, message: str, *, problem: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.problem = problem


class StorageError(TimeSeriesError):
    """The HDF5 or SQLite layer failed (I/O, corruption, not a database)."""


class StoreBusyError(StorageError):
    """Another process held the store's write lock for longer than the timeout."""


class MissingDependencyError(TimeSeriesError, ImportError):
    """An optional dependency a feature needs is not installed (the message names the
    ``pip install`` command)."""


class IoError(StorageError):
    """A file the call needs could not be read or written (missing, unreadable)."""


class ConnectionError(StorageError):
    """The catalog database could not be opened or reached."""


class ReadOnlyStoreError(TimeSeriesError):
    """A write was attempted on a store opened with ``read_only=True``."""


class StoreExistsError(TimeSeriesError):
    """``Store.create`` was pointed at a path that already holds a store."""


class IncompatibleFormatError(TimeSeriesError):
    """The store was written in a layout this build does not read."""


class CatalogTooNewError(IncompatibleFormatError):
    """The catalog was migrated by a newer build than this one."""


class CatalogMigrationRequiredError(IncompatibleFormatError):
    """The catalog is older than this build and was opened read-only."""


class MismatchedArtifactError(IncompatibleFormatError):
    """The HDF5 file and the catalog beside it do not belong together."""


class FileTriggersWarning(UserWarning):
    """An interchange file holds triggers; they were not run (``rehash`` writes to such a
    file with its triggers disabled, so an edit a trigger would have made never happens).

    Parameters
    ----------
    where
        The file.
    triggers
        The triggers' names.
    """

    def __init__(self, where: str, triggers: Sequence[str]) -> None:
        self.where = where
        self.triggers = list(triggers)
        super().__init__(
            f"{where} holds {len(self.triggers)} trigger(s) ({shown(self.triggers)}); none of "
            "them was run. An interchange file needs none: check who put them there"
        )


__all__ = [
    "CatalogDamagedError",
    "CatalogMigrationRequiredError",
    "CatalogTooNewError",
    "ConnectionError",
    "DamagedStoreError",
    "DuplicateTimeSeriesError",
    "FileTriggersWarning",
    "IncompatibleFormatError",
    "IntegrityError",
    "InvalidParameterError",
    "IoError",
    "MismatchedArtifactError",
    "MissingDependencyError",
    "NotFoundError",
    "Notice",
    "OwnerMismatchError",
    "ParameterTypeError",
    "ReadOnlyStoreError",
    "StorageError",
    "StoreBusyError",
    "StoreExistsError",
    "Term",
    "TimeSeriesError",
    "counted",
]
