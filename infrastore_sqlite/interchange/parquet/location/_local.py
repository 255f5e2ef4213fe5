"""A local directory (or file) as a :class:`~.base.Location`, and its publisher.

:class:`LocalPublisher` writes each file under a temporary name
(``.<name>.<token>.partial``) in the target directory and renames them into place once
every partition succeeded, each partition's values file last; on a failure it removes
what it wrote, and the directory if it created it (only if empty).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ....errors import InvalidParameterError
from ...plan import ExportPlan, PartitionPlan
from ...write_behind import WriteBehind
from ..layout import file_names
from .base import PUBLISH_ORDER, Location, Publisher, refuse_collisions

__all__ = ["LocalLocation", "LocalPublisher"]


class LocalLocation(Location):
    """A path on the local file system."""

    __slots__ = ("path",)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.path)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def parent(self) -> LocalLocation:
        return LocalLocation(self.path.parent)

    def __truediv__(self, name: str) -> LocalLocation:
        return LocalLocation(self.path / name)

    def leaves(self, root: Location) -> str | None:
        if not os.path.islink(self.path):
            return None
        top = os.path.realpath(str(root))
        real = os.path.realpath(self.path)
        return None if os.path.commonpath([top, real]) == top else real

    def link_target(self) -> str | None:
        return os.readlink(self.path) if self.path.is_symlink() else None

    def children(self) -> tuple[list[str], list[str]]:
        files: list[str] = []
        dirs: list[str] = []
        for entry in sorted(self.path.iterdir()):
            # A symlink is followed no further than a plain file: a part is a file.
            if entry.is_dir() and not entry.is_symlink():
                dirs.append(entry.name)
            elif entry.is_file():
                files.append(entry.name)
        return files, dirs

    def listdir(self) -> list[str]:
        return os.listdir(self.path)

    def size(self) -> int | None:
        try:
            return self.path.stat().st_size if self.path.is_file() else None
        except OSError:
            return None

    def is_file(self) -> bool:
        return self.path.is_file()

    def is_dir(self) -> bool:
        return self.path.is_dir()

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()

    def open_input(self) -> Any:
        return self.path

    @property
    def uri(self) -> str:
        return os.fspath(self.path)

    def replace_with(self, data: bytes) -> None:
        tmp = self.path.with_name(f".{self.name}.{uuid.uuid4().hex[:8]}.partial")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    def rewrite(self, writes: list[tuple[str, Callable[[Any], None]]]) -> dict[str, int]:
        """Each file under a temporary name, renamed into place once all are written."""
        token = uuid.uuid4().hex[:8]
        temps: dict[Path, Path] = {}
        sizes: dict[str, int] = {}
        try:
            for name, write in writes:
                final = self.path / name
                tmp = temps[final] = final.with_name(f".{final.name}.{token}.partial")
                write(tmp)
            for final, tmp in temps.items():
                if final.is_dir():
                    os.replace(final, final.with_name(f".{final.name}.{token}.parts"))
                os.replace(tmp, final)
                sizes[final.name] = final.stat().st_size
        finally:
            for tmp in temps.values():
                tmp.unlink(missing_ok=True)
        return sizes

    def publisher(
        self, plan: ExportPlan, *, overwrite: bool, token: str | None = None, worker: bool = False
    ) -> LocalPublisher:
        # (A worker's files wait under the shared temporary names: the same publisher.)
        return LocalPublisher(self, plan, overwrite=overwrite, token=token)


class LocalPublisher(Publisher):
    """A local directory: temporary names, renamed into place at the end."""

    def __init__(
        self, target: LocalLocation, plan: ExportPlan, *, overwrite: bool, token: str | None = None
    ) -> None:
        self.target = target
        #: The directory itself (a publisher of local files works on paths).
        self.dir = d = target.path
        self.plan = plan
        self.overwrite = overwrite
        self.created = False
        #: Names this export's temporary files (a parallel export's workers share it).
        self.token = token = token or uuid.uuid4().hex[:8]
        self.temps: dict[Path, Path] = {}  # final path -> temporary path, in rename order
        self._by_role: dict[tuple[int, str], Path] = {}
        for i, pp in enumerate(plan.partitions):
            names = file_names(pp.partition)
            for role in PUBLISH_ORDER:
                final = d / names[role]
                self.temps[final] = self._by_role[i, role] = d / f".{names[role]}.{token}.partial"
        self._index = {id(pp): i for i, pp in enumerate(plan.partitions)}
        self.renamed: list[Path] = []

    def check(self) -> None:
        """Refuse a target that is a file, has no parent, or holds files the export would
        create (unless ``overwrite``)."""
        target = self.dir
        if target.exists():
            if not target.is_dir():
                raise InvalidParameterError(
                    f"cannot export Parquet files into {target}: it is a file, not a "
                    "directory. Name a directory (it is created if absent)."
                )
        elif not target.parent.is_dir():
            raise InvalidParameterError(
                f"cannot create the directory {target}: its parent {target.parent} does not exist"
            )
        if not self.overwrite:
            refuse_collisions(str(target), self._existing(), self.plan)

    def _existing(self) -> list[str]:
        return os.listdir(self.dir) if self.dir.is_dir() else []

    def begin(self) -> None:
        if not self.dir.exists():
            self.dir.mkdir()
            self.created = True

    def sink(self, pp: PartitionPlan, role: str) -> Path:
        return self._by_role[self._index[id(pp)], role]

    def write_behind(self, pp: PartitionPlan, role: str) -> WriteBehind:
        """The file goes to the disk as it grows, not into the page cache (see
        ``interchange/write_behind.py``)."""
        return WriteBehind(self.sink(pp, role))

    def finished(self, pp: PartitionPlan, role: str) -> None:
        """A file is written (local files wait for :meth:`commit`)."""

    def settle(self) -> None:
        """Nothing: each file waits under its temporary name for :meth:`commit`."""

    def entries(self) -> list[dict[str, Any]]:
        """None: a worker's files are renamed into place by the parent's commit (the
        temporary names it shares, :attr:`token`)."""
        return []

    def adopt(self, handed: Any) -> None:
        """Nothing to take: the parent's commit renames every writer's files (and its
        rollback removes them) by their shared temporary names."""

    def commit(self) -> None:
        # Someone may have created one of the names while we wrote: never replace it.
        if not self.overwrite:
            refuse_collisions(str(self.target), self._existing(), self.plan)
        for final, tmp in self.temps.items():
            os.replace(tmp, final)
            self.renamed.append(final)

    def rollback(self) -> None:
        for path in (*self.temps.values(), *self.renamed):
            path.unlink(missing_ok=True)
        if self.created:
            with contextlib.suppress(OSError):
                self.dir.rmdir()  # only if empty: never anything we did not write
