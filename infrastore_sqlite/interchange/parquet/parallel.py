"""The Parquet export in N worker processes (``export_parquet(..., jobs=N)``).

The partitions are dealt to the workers by rows, largest first. Each worker opens the
store read-only, plans the same export (the plan is a pure function of the store and the
selection, so its partitions, ids and keys are the parent's, which it checks), and writes
its partitions exactly as ``jobs=1`` does (``export._write_files``: the same bytes), each
worker's memory bounded as one export's is. What appears, and when, stays the parent's
publisher's: local files are written under the parent's temporary names and renamed by
it at the end; uploads are completed a partition at a time by the workers and recorded
in the parent's manifest, put last. When one worker fails, the others stop at their next
progress step, every worker removes what it wrote, and the parent removes what the
finished ones published: nothing is left. The workers are forked from a fork server that
imported the heavy modules once (:func:`_context`), so their start costs a fork. Imports ``interchange`` and below, and its
siblings ``export``, ``publish`` and ``storage``.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import InvalidParameterError, StorageError
from ..plan import ExportPlan, plan_export
from .layout import require_pyarrow
from .publish import LocalPublisher, ObjectPublisher
from .storage import ObjectPath, locate

if TYPE_CHECKING:
    from ...store import Store

__all__ = ["check_jobs", "write_parallel"]

#: Set by the parent when a worker failed: the others stop at their next progress step.
_abort: Any = None


class _Stopped(Exception):
    """A worker stopped because another one failed."""


def check_jobs(jobs: Any) -> int:
    """``jobs`` as a positive int, or a refusal naming the keyword and the flag. For more
    than one, the workers' fork server is started here, before the export is planned:
    its imports (most of a second) run beside the planning instead of after it."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InvalidParameterError(
            f"jobs={jobs!r} is not a number of worker processes: give 1 or more "
            "(--jobs N on the command line)"
        )
    if jobs > 1 and _context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()  # returns at once; the server imports on its own
    return jobs


def deal(plan: ExportPlan, jobs: int) -> list[list[int]]:
    """The partitions' indices per worker, balanced by rows (largest first), each list in
    partition order; no empty list."""
    loads = [[0, k, []] for k in range(min(jobs, len(plan.partitions)))]
    order = sorted(range(len(plan.partitions)), key=lambda i: -plan.partitions[i].rows)
    for i in order:
        least = min(loads, key=lambda x: (x[0], x[1]))
        least[0] += plan.partitions[i].rows
        least[2].append(i)
    return [sorted(x[2]) for x in loads if x[2]]


def write_parallel(
    store: Store,
    plan: ExportPlan,
    publisher: LocalPublisher | ObjectPublisher,
    jobs: int,
    *,
    time_range: tuple[datetime, datetime] | None,
    include_derived: bool,
    storage_options: Mapping[str, Any] | None,
    progress: Callable[[int, int], None] | None,
    filters: dict[str, Any],
) -> None:
    """Write every partition's files from ``jobs`` workers, through ``publisher`` (whose
    ``commit`` or ``rollback`` the caller runs)."""
    shares = deal(plan, jobs)
    names = [pp.partition.file_stem for pp in plan.partitions]
    ctx = _context()
    abort = ctx.Event()
    if isinstance(publisher, LocalPublisher):
        where: dict[str, Any] = {"local": str(publisher.target), "token": publisher.token}
    else:
        where = {"uri": str(publisher.target), "storage_options": dict(storage_options or {})}
    job = {
        "store": os.fspath(store.path),
        "time_range": time_range,
        "include_derived": include_derived,
        "filters": filters,
        "names": names,
        "where": where,
        "overwrite": publisher.overwrite,
    }
    total, done = plan.total_rows, 0
    results: dict[int, list[dict[str, Any]]] = {}
    with ProcessPoolExecutor(
        len(shares), mp_context=ctx, initializer=_init, initargs=(abort, dict(os.environ))
    ) as pool:
        futures = {pool.submit(_work, job, share): share for share in shares}
        pending = set(futures)
        error: BaseException | None = None
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for f in finished:
                    exc = f.exception()
                    if exc is not None:
                        if error is None or isinstance(error, _Stopped):
                            error = exc
                        abort.set()
                        continue
                    files, rows = f.result()
                    for i, entries in files.items():
                        results[i] = entries
                    done += rows
                    if progress:
                        progress(done, total)
        except BaseException:
            abort.set()
            raise
        finally:
            # What the finished workers published is the parent's to remove on a failure.
            if isinstance(publisher, ObjectPublisher):
                for i in sorted(results):
                    for entry in results[i]:
                        publisher.published.append(publisher.target / entry["name"])
                        publisher.files.append(entry)
        if error is not None:
            raise error


#: What the fork server imports once, before it forks the workers: the modules whose
#: import is most of a spawned worker's start (numpy, h5py, pyarrow: 0.3-0.5 s each time
#: on this machine, paid per worker and per export with ``spawn``).
_PRELOAD = [
    "numpy",
    "h5py",
    "pyarrow.parquet",
    "infrastore_sqlite.store",
    "infrastore_sqlite.interchange.parquet.export",
]


def _context() -> Any:
    """The workers' start method: a fork server (started once per process, with
    :data:`_PRELOAD` imported) where there is one, else ``spawn`` (Windows). Never a
    plain fork of the caller: it has threads and HDF5 files open, which a fork copies in
    whatever state they are."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    # The preload list is the process's one (multiprocessing has one fork server): set
    # before the server starts, it is what the server imports.
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


def _init(abort: Any, environ: dict[str, str]) -> None:
    """A worker's start: the abort flag, and the caller's environment as it is now. A
    worker forked from the fork server has the server's, as it was when the server
    started: credentials and endpoints set since (``AWS_*``) would be missing."""
    global _abort
    _abort = abort
    os.environ.clear()
    os.environ.update(environ)


def _work(job: dict[str, Any], share: list[int]) -> tuple[dict[int, list[dict]], int]:
    """One worker's partitions: ``({partition index: its manifest entries}, rows)``."""
    from ...store import Store
    from .export import _write_files

    pa, pq = require_pyarrow()
    with Store.open(job["store"], read_only=True) as store:
        full = plan_export(
            store,
            time_range=job["time_range"],
            include_derived=job["include_derived"],
            **job["filters"],
        )
        if [pp.partition.file_stem for pp in full.partitions] != job["names"]:
            raise StorageError(
                f"the store {job['store']} changed while it was exported; export again"
            )
        plan = ExportPlan(
            [full.partitions[i] for i in share], full.time_range, full.include_derived
        )
        where = job["where"]
        publisher: LocalPublisher | ObjectPublisher
        if "local" in where:
            publisher = LocalPublisher(
                Path(where["local"]), plan, overwrite=job["overwrite"], token=where["token"]
            )
        else:
            target = locate(where["uri"], where["storage_options"])
            assert isinstance(target, ObjectPath)
            publisher = ObjectPublisher(target, plan, overwrite=job["overwrite"])

        def stop_if_told(done: int, total: int) -> None:
            if _abort is not None and _abort.is_set():
                raise _Stopped("stopped: another worker of the export failed")

        try:
            _write_files(pa, pq, store, plan, publisher, stop_if_told)
            if isinstance(publisher, ObjectPublisher):
                publisher.settle()  # its partitions' uploads complete before it reports them
        except BaseException:
            publisher.rollback()
            raise
    files: dict[int, list[dict]] = {}
    if isinstance(publisher, ObjectPublisher):
        stems = {full.partitions[i].partition.file_stem: i for i in share}
        for entry in publisher.files:
            files.setdefault(stems[entry["partition"]], []).append(entry)
    return files, plan.total_rows
