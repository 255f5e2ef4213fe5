"""How the Parquet export's files appear: all of them or none.

Holds the two publishers ``export.py`` writes through. :class:`LocalPublisher` writes
each file under a temporary name (``.<name>.<token>.partial``) in the target directory
and renames them into place once every partition succeeded, each partition's values file
last. :class:`ObjectPublisher` writes each file to its final key as an upload that no
listing shows until it is published (a multipart upload completed, or a file small
enough for one part put whole, create-only unless ``overwrite``: ``storage.Upload``); a
partition's files are published together once its three files are encoded (values
last) only when the whole export commits, as Hadoop's S3A committers do, and a manifest
(``_infrastore_manifest.json``: the partitions, files, sizes, keys) is put last; a
process killed before leaves uploads never completed, which no listing shows. On a
failure either removes what it published and aborts what it had not. Imports
``interchange`` and below, and ``storage.py``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from ..._version import __version__
from ...errors import OVERWRITE, InvalidParameterError, shown
from ..plan import ExportPlan, PartitionPlan
from .layout import file_names
from .storage import MANIFEST, ObjectPath, Upload
from .uploads import abort_before_export

__all__ = ["LocalPublisher", "ObjectPublisher"]

#: The order a partition's files are published in: "the partition exists" means "its
#: values file exists", so the values file comes last.
_ORDER = ("series", "arrays", "values")
#: Uploads completed at once at the commit (each sends what is left of its file, a part
#: at most, then completes).
_COMPLETING = 4


class LocalPublisher:
    """A local directory: temporary names, renamed into place at the end."""

    def __init__(
        self, target: Path, plan: ExportPlan, *, overwrite: bool, token: str | None = None
    ) -> None:
        self.target = target
        self.plan = plan
        self.overwrite = overwrite
        self.created = False
        #: Names this export's temporary files (a parallel export's workers share it).
        self.token = token = token or uuid.uuid4().hex[:8]
        self.temps: dict[Path, Path] = {}  # final path -> temporary path, in rename order
        self._by_role: dict[tuple[int, str], Path] = {}
        for i, pp in enumerate(plan.partitions):
            names = file_names(pp.partition)
            for role in _ORDER:
                final = target / names[role]
                self.temps[final] = self._by_role[i, role] = (
                    target / f".{names[role]}.{token}.partial"
                )
        self._index = {id(pp): i for i, pp in enumerate(plan.partitions)}
        self.renamed: list[Path] = []

    def check(self) -> None:
        """Refuse a target that is a file, has no parent, or holds files the export would
        create (unless ``overwrite``)."""
        target = self.target
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
            _refuse_collisions(str(target), self._existing(), self.plan)

    def _existing(self) -> list[str]:
        return os.listdir(self.target) if self.target.is_dir() else []

    def begin(self) -> None:
        if not self.target.exists():
            self.target.mkdir()
            self.created = True

    def sink(self, pp: PartitionPlan, role: str) -> Path:
        return self._by_role[self._index[id(pp)], role]

    def finished(self, pp: PartitionPlan, role: str) -> None:
        """A file is written (local files wait for :meth:`commit`)."""

    def commit(self) -> None:
        # Someone may have created one of the names while we wrote: never replace it.
        if not self.overwrite:
            _refuse_collisions(str(self.target), self._existing(), self.plan)
        for final, tmp in self.temps.items():
            os.replace(tmp, final)
            self.renamed.append(final)

    def rollback(self) -> None:
        for path in (*self.temps.values(), *self.renamed):
            path.unlink(missing_ok=True)
        if self.created:
            with contextlib.suppress(OSError):
                self.target.rmdir()  # only if empty: never anything we did not write


class ObjectPublisher:
    """A prefix in object storage: multipart uploads completed at the commit, the
    manifest last."""

    def __init__(self, target: ObjectPath, plan: ExportPlan, *, overwrite: bool) -> None:
        self.target = target
        self.plan = plan
        self.overwrite = overwrite
        self.open: dict[tuple[int, str], Upload] = {}
        self.published: list[ObjectPath] = []
        self.files: list[dict[str, Any]] = []
        #: Uploads a dead export had left at this export's keys, aborted by :meth:`begin`.
        self.aborted = 0
        #: The finished partitions' uploads, open (their parts sent, the uploads not
        #: completed) until the commit.
        self._pending: list[tuple[PartitionPlan, list[tuple[str, Upload]]]] = []

    def check(self) -> None:
        """Refuse files the export would create that are there already, and a manifest
        of an earlier export (unless ``overwrite``); a missing bucket or wrong
        credentials fail here, before anything is written."""
        if self.overwrite:
            return
        existing = self.target.listdir()
        if MANIFEST in existing:
            raise InvalidParameterError(
                f"{self.target} already holds an export (its {MANIFEST}); nothing was "
                "written. Export to another prefix, or pass {overwrite} to replace its files",
                table=str(self.target / MANIFEST),
                terms={"overwrite": OVERWRITE},
            )
        _refuse_collisions(str(self.target), existing, self.plan)

    def begin(self) -> None:
        # Uploads a dead export left at the keys this one writes are aborted first: they
        # are invisible, but the bucket keeps them (and bills them) until aborted.
        keys = [
            (self.target / name).key
            for pp in self.plan.partitions
            for name in file_names(pp.partition).values()
        ]
        self.aborted = abort_before_export(
            str(self.target), self.target.bucket.options, [*keys, (self.target / MANIFEST).key]
        )
        if self.overwrite and MANIFEST in self.target.listdir():
            # The old manifest goes first: it no longer describes what is there.
            (self.target / MANIFEST).delete()

    def sink(self, pp: PartitionPlan, role: str) -> Upload:
        # Parts sized for the values file's rows at a generous 64 bytes each.
        expected = 64 * int(pp.rows) if role == "values" else 0
        key = self.target / file_names(pp.partition)[role]
        upload = key.upload(expected, overwrite=self.overwrite)
        self.open[id(pp), role] = upload
        return upload

    def finished(self, pp: PartitionPlan, role: str) -> None:
        """After the partition's last file is encoded, keep its uploads open: nothing of
        the export is completed (so nothing a listing shows) until :meth:`settle`, at the
        commit, as Hadoop's S3A committers do. A process killed before then leaves only
        uploads that were never completed, which no listing shows."""
        if role != "arrays":
            return
        self._pending.append((pp, [(r, self.open.pop((id(pp), r))) for r in _ORDER]))

    def settle(self) -> None:
        """Complete every finished partition's uploads: the series and arrays files of
        all of them, then their values files (each partition's values file last, so "the
        partition exists" means "its values file exists"), a few at a time; the first
        failure is raised after all of them stopped, the rest aborted (a rollback then
        removes what completed)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        batches = [
            [(pp, r, up) for pp, uploads in pending for r, up in uploads if r != "values"],
            [(pp, r, up) for pp, uploads in pending for r, up in uploads if r == "values"],
        ]
        error: BaseException | None = None
        with ThreadPoolExecutor(_COMPLETING, thread_name_prefix="infrastore-sqlite-upload") as pool:
            for batch in batches:
                if error is not None:
                    for _, _, up in batch:
                        up.abort()
                    continue
                futures = [(pp, r, up, pool.submit(up.close)) for pp, r, up in batch]
                for pp, r, up, fut in futures:
                    try:
                        fut.result()
                    except BaseException as exc:
                        error = error or exc
                        continue
                    self._published(pp, r, up)
        if error is not None:
            raise error

    def _published(self, pp: PartitionPlan, r: str, upload: Upload) -> None:
        names = file_names(pp.partition)
        key = self.target / names[r]
        self.published.append(key)
        self.files.append(
            {
                "partition": pp.partition.file_stem,
                "role": r,
                "name": names[r],
                "key": key.key,
                "size": upload.size,
            }
        )

    def commit(self) -> None:
        self.settle()
        # In partition order whatever order the uploads completed in.
        at = {pp.partition.file_stem: k for k, pp in enumerate(self.plan.partitions)}
        rank = {r: k for k, r in enumerate(_ORDER)}
        self.files.sort(key=lambda e: (at.get(e["partition"], -1), rank.get(e["role"], 0)))
        manifest = {
            "format": "infrastore-sqlite export manifest",
            "writer": f"infrastore-sqlite {__version__}",
            "written": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "partitions": sorted({f["partition"] for f in self.files}),
            "files": self.files,
        }
        data = orjson.dumps(manifest, option=orjson.OPT_INDENT_2)
        with (self.target / MANIFEST).upload(overwrite=self.overwrite) as up:
            up.write(data)
        self.target.bucket.forget(self.target.key)

    def rollback(self) -> None:
        for _, uploads in self._pending:
            for _, upload in uploads:
                upload.abort()
        self._pending.clear()
        for upload in self.open.values():
            upload.abort()
        self.open.clear()
        for key in self.published:
            with contextlib.suppress(Exception):
                key.delete()
        self.target.bucket.forget(self.target.key)


def _refuse_collisions(where: str, existing: list[str], plan: ExportPlan) -> None:
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
