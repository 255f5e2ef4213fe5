"""The interface every place of the Parquet form implements: :class:`Location` (a local
directory or file, an object-storage prefix or object) and the :class:`Publisher` it makes
for an export's files.

Callers hold a :class:`Location` and never ask which kind it is: what differs between
a directory on disk and a prefix in a bucket (how a file is listed, read, written whole,
made visible all at once) is each implementation's (``_local.py``, ``_object.py``), as
zarr-python's stores implement ``abc/store.py``. The conformance suite
(``tests/interchange/parquet/test_location.py``) runs one set of checks against both.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from ....errors import OVERWRITE, InvalidParameterError, shown
from ...plan import ExportPlan, PartitionPlan
from ...write_behind import WriteBehind
from ..layout import file_names

__all__ = [
    "CLOUD_INSTALL",
    "MANIFEST",
    "PUBLISH_ORDER",
    "Location",
    "Publisher",
    "refuse_collisions",
]

#: The install command that brings object storage.
CLOUD_INSTALL = "pip install 'infrastore-sqlite[cloud]'"
#: The export's manifest, written last beside the files (``_``: engines skip it).
MANIFEST = "_infrastore_manifest.json"
#: The order a partition's files are published in: "the partition exists" means "its
#: values file exists", so the values file comes last.
PUBLISH_ORDER = ("series", "arrays", "values")


class Location(ABC):
    """A place of the Parquet form: a directory (prefix) or a file (object) in it.

    ``str(location)`` is the place as the user names it (a path, or a URI), which every
    message uses; two locations are equal when they name the same place.
    """

    __slots__ = ()

    @abstractmethod
    def __str__(self) -> str: ...

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    # ------------------------------------------------------------------ names
    @property
    @abstractmethod
    def name(self) -> str:
        """The last segment of the place's name ('' for a bucket's root)."""

    @property
    @abstractmethod
    def parent(self) -> Location:
        """The directory (prefix) holding this place."""

    @abstractmethod
    def __truediv__(self, name: str) -> Location:
        """The place ``name`` below this one, as it is named (see :meth:`inside`)."""

    def join(self, name: str) -> Location:
        """``self / name``."""
        return self / name

    def inside(self, name: str, *, listed_in: str | None = None) -> Location:
        """``self / name``, refused unless it stays below this place: no absolute name,
        no ``..`` segment, and (on disk) no symbolic link whose target leaves it.

        Parameters
        ----------
        name
            A name found here, or one a manifest lists (``listed_in``: the manifest, for
            the message).

        Raises
        ------
        InvalidParameterError
            The name or its link target leaves this place; the message names the entry.
        """
        by = f"{listed_in} lists {name!r}" if listed_in else f"{self / name}"
        segments = name.replace("\\", "/").split("/")
        if not name or name.startswith("/") or os.path.isabs(name) or ".." in segments:
            raise InvalidParameterError(
                f"{by}, a name that leaves {self} (an absolute name or a '..' segment); an "
                "export's files all lie in its directory: remove that entry (or the manifest) "
                "and import again",
                table=str(self),
            )
        target = self / name
        real = target.leaves(self)
        if real is not None:
            raise InvalidParameterError(
                f"{target} is a symbolic link to {real}, outside {self}; an export's files all "
                "lie in its directory: copy the file itself there (not a link) and try again",
                table=str(target),
            )
        return target

    def leaves(self, root: Location) -> str | None:
        """Where this place really is when that is outside ``root`` (a link's target);
        None when it stays in it (a place with no links always does)."""
        return None

    def link_target(self) -> str | None:
        """What this place links to, when it is a symbolic link; None otherwise."""
        return None

    # ------------------------------------------------------------------ reading
    @abstractmethod
    def children(self) -> tuple[list[str], list[str]]:
        """``(file names, directory names)`` directly below this place (a symbolic link to
        a directory counts as neither)."""

    @abstractmethod
    def listdir(self) -> list[str]:
        """Every name directly below this place (as ``os.listdir``)."""

    @abstractmethod
    def size(self) -> int | None:
        """The file's size in bytes; None when no file is here."""

    def is_file(self) -> bool:
        """Whether a file (object) is here."""
        return self.size() is not None

    @abstractmethod
    def is_dir(self) -> bool:
        """Whether this is a directory (a prefix with something below it)."""

    @abstractmethod
    def read_bytes(self) -> bytes:
        """The whole file (for small files: a manifest)."""

    @abstractmethod
    def open_input(self) -> Any:
        """What pyarrow reads the file from: a path, or a seekable file whose reads are
        ranged requests (never the whole object)."""

    @property
    @abstractmethod
    def uri(self) -> str:
        """The place as another engine (DuckDB) reads it: a path, or an ``s3://`` URI."""

    def client_options(self) -> Mapping[str, Any] | None:
        """The options another engine's client needs to reach this place (its storage
        options); None where no client is needed (a local path)."""
        return None

    # ------------------------------------------------------------------ writing
    @abstractmethod
    def replace_with(self, data: bytes) -> None:
        """Replace the file here whole with ``data``: a reader sees the old bytes or the
        new ones, never a mixture."""

    @abstractmethod
    def rewrite(self, writes: list[tuple[str, Callable[[Any], None]]]) -> dict[str, int]:
        """Write each ``(name, write)`` below this place over what is there, in that
        order, and return ``{name: size}``.

        ``write(sink)`` writes one file to ``sink`` (what ``pyarrow.parquet.write_table``
        takes). A file that is a directory of part files is set aside first, never
        removed (``.<name>.<token>.parts`` beside it, which every reader skips).
        """

    @abstractmethod
    def publisher(
        self, plan: ExportPlan, *, overwrite: bool, token: str | None = None, worker: bool = False
    ) -> Publisher:
        """The publisher of ``plan``'s files in this directory (prefix). ``token`` names
        the temporary files of one export shared by its worker processes; ``worker``:
        this publisher is a worker's, whose files the parent's commit publishes
        (:meth:`Publisher.hand_over`)."""


class Publisher(ABC):
    """How an export's files appear at a :class:`Location`: all of them or none.

    The export calls :meth:`check` (refuse before anything is written), :meth:`begin`,
    then per partition :meth:`sink` and :meth:`finished` for each of its files, then
    :meth:`commit`, or :meth:`rollback` on any failure (nothing it wrote is left
    visible). A parallel export's workers each hold one (``worker=True``) and
    :meth:`hand_over` their partitions; the parent's :meth:`adopt` takes them, to publish
    at its commit (or remove on a rollback).
    """

    target: Location
    plan: ExportPlan
    overwrite: bool
    #: Names this export's temporary files (a parallel export's workers share it).
    token: str

    @abstractmethod
    def check(self) -> None:
        """Refuse a target that cannot take the export, or that holds files it would
        create (unless ``overwrite``); nothing is written."""

    @abstractmethod
    def begin(self) -> None:
        """Prepare the target (a directory created, an old manifest removed)."""

    @abstractmethod
    def sink(self, pp: PartitionPlan, role: str) -> Any:
        """Where the partition's ``role`` file is written (what pyarrow writes to)."""

    def final(self, pp: PartitionPlan, role: str) -> str:
        """The file's name as it appears once published (for messages)."""
        return str(self.target / file_names(pp.partition)[role])

    def write_behind(self, pp: PartitionPlan, role: str) -> WriteBehind | None:
        """A write-behind for the file :meth:`sink` names, or None where the file does
        not go through this machine's page cache (an upload)."""
        return None

    @abstractmethod
    def finished(self, pp: PartitionPlan, role: str) -> None:
        """A file is written (published no earlier than the commit)."""

    @abstractmethod
    def settle(self) -> None:
        """Make this writer's finished files ready for the commit (uploads completed)."""

    @abstractmethod
    def entries(self) -> list[dict[str, Any]]:
        """What this writer published, as manifest entries (a worker's to report)."""

    def workers_defer(self) -> bool:
        """Whether a parallel export's workers can hand their files over unpublished
        (nothing visible before the parent's commit). Where they cannot, the export
        writes with one writer: a failed export must leave nothing visible."""
        return True

    def hand_over(self) -> Any:
        """A worker's finished partitions, as the parent's :meth:`adopt` takes them
        (picklable): by default its files settled, as manifest entries."""
        self.settle()
        return self.entries()

    @abstractmethod
    def adopt(self, handed: Any) -> None:
        """Take what another writer of the export handed over (a worker's
        :meth:`hand_over`): its files are this one's to publish and list, and to remove
        on a rollback."""

    @abstractmethod
    def commit(self) -> None:
        """Make every file visible."""

    @abstractmethod
    def rollback(self) -> None:
        """Leave nothing the export wrote visible."""


def refuse_collisions(where: str, existing: list[str], plan: ExportPlan) -> None:
    """Refuse, naming every one, files the export would create that already exist
    (compared case-insensitively, as Windows and macOS file systems do)."""
    have = {name.lower(): name for name in existing}
    hits = [
        have[name.lower()]
        for pp in plan.partitions
        for name in file_names(pp.partition).values()
        if name.lower() in have
    ]
    if hits:
        raise InvalidParameterError(
            f"{where} already holds {len(hits)} of the files this export would create "
            f"({shown(hits)}); nothing was written. Export into another directory, "
            "remove those files first, or pass {overwrite} to replace them.",
            table=hits[0],
            terms={"overwrite": OVERWRITE},
        )
