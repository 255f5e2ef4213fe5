"""The Parquet export in N writers (``export_parquet(..., jobs=N)``): this process and
N - 1 worker processes.

The partitions wait in one queue, largest (by rows) first, and each writer takes the
next when it is done with its last, so they finish within a partition of each other.
A worker is handed the parent's plan of its partition, pickled (:func:`_pack`: numpy
columns; planning again cost each worker what it cost the parent), keeps the store open
read-only from one partition to the next, and writes exactly as ``jobs=1`` does
(``export._write_files``: the same bytes), its memory bounded as one export's is. This
process writes too, from the start: the workers come from a fork server that imports
the heavy modules once (:func:`_context`), which takes most of a second. What appears,
and when, stays the parent's publisher's: local files are written under its temporary
names and renamed by it at the end; on ``s3://`` a worker sends its files' parts and
hands the parent the uploads uncompleted, which the parent completes at its commit with
its own, the manifest last (``location/uploads.py``), so a kill of any process before
leaves nothing a listing shows. When one writer fails the others stop at their next
progress step, each removes what it wrote, and the parent aborts (or removes) what the
finished ones handed over: nothing is left. Imports ``interchange`` and below, and its sibling
``location`` (never ``export``, which imports it and hands its writer in).
"""

from __future__ import annotations

import dataclasses
import io
import multiprocessing
import multiprocessing.util
import os
import pickle
from collections.abc import Callable
from concurrent.futures import (
    FIRST_COMPLETED,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from ...errors import InvalidParameterError, StorageError, Term
from ..plan import ExportPlan
from .layout import require_pyarrow
from .location import Publisher

if TYPE_CHECKING:
    from ...store import Store

__all__ = ["check_jobs", "order", "write_parallel"]

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


def order(plan: ExportPlan) -> list[int]:
    """The partitions' indices in the order they are handed out: largest (by rows) first,
    so that the last ones taken, when a writer is left alone, are the short ones."""
    return sorted(range(len(plan.partitions)), key=lambda i: (-plan.partitions[i].rows, i))


def write_parallel(
    store: Store,
    plan: ExportPlan,
    publisher: Publisher,
    jobs: int,
    *,
    write_files: Callable[..., None],
    progress: Callable[[int, int], None] | None,
) -> None:
    """Write every partition's files from ``jobs`` writers, through ``publisher`` (whose
    ``commit`` or ``rollback`` the caller runs); ``plan`` is what they write (the
    selection, time range and derived series are in it already), ``write_files`` how one
    writer writes its partitions (``export._write_files``, handed in by the export, which
    imports this module: each worker gets it by reference, pickled with its job).

    The writers are this process and ``jobs - 1`` workers. Each takes the next partition
    of one queue (:func:`order`) when it is done with its last: this process starts at
    once, while the workers start (from a thread: starting one waits for the fork
    server's imports, 0.5 s, a fifth of an 8-partition export on 2 cores), and the
    writers finish within a partition of each other however fast each one runs.
    """
    pa, pq = require_pyarrow()
    ctx = _context()
    abort = ctx.Event()
    # The target travels pickled (a bucket as its root and options, opened again in the
    # worker); each worker's publisher writes under the parent's temporary names.
    job = {
        "store": os.fspath(store.path),
        "target": publisher.target,
        "token": publisher.token,
        "overwrite": publisher.overwrite,
        "write": write_files,
    }
    queue = order(plan)
    total, done = plan.total_rows, 0
    running: set[Future[Any]] = set()
    error: BaseException | None = None

    def collect(block: bool) -> None:
        """Take the finished workers' results (all of them: ``block``), and hand each
        idle worker the next partition unless the export is failing. Nothing is handed
        out before the workers are up (``starting``): the pool is not touched until then,
        since a submit would wait for them."""
        nonlocal done, error, started
        if not started:
            if not (block or starting.done()):
                return
            started = True
            try:
                starting.result()
            except BaseException as exc:  # the workers could not start
                error = error or exc
                abort.set()
                return
        if running:
            finished, _ = wait(running, timeout=None if block else 0, return_when=FIRST_COMPLETED)
            for f in finished:
                running.discard(f)
                exc = f.exception()
                if exc is not None:
                    if error is None or isinstance(error, _Stopped):
                        error = exc
                    abort.set()
                    continue
                handed, rows = f.result()
                # Taken at once: the parent's to publish at its commit, or to abort.
                publisher.adopt(handed)
                done += rows
        while error is None and queue and len(running) < jobs - 1:
            i = queue.pop(0)
            running.add(pool.submit(_work, job, i, _pack(plan, i)))

    def step(rows: int, _total: int) -> None:
        """This process's progress: the workers' results are taken between its steps."""
        collect(block=False)
        if error is not None:
            raise _Stopped("stopped: a worker of the export failed")
        if progress:
            progress(done + mine + rows, total)

    mine = 0
    started = False
    with (
        ProcessPoolExecutor(
            jobs - 1, mp_context=ctx, initializer=_init, initargs=(abort, dict(os.environ))
        ) as pool,
        ThreadPoolExecutor(1, thread_name_prefix="infrastore-sqlite-start") as starter,
    ):
        # Each submit of a no-op starts a worker (and waits for it): done in a thread, so
        # that this process writes meanwhile.
        starting = starter.submit(lambda: [pool.submit(_ready) for _ in range(jobs - 1)])
        try:
            collect(block=False)  # the workers' first partitions, the largest
            while queue and error is None:
                i = queue.pop(0)
                one = dataclasses.replace(plan, partitions=[plan.partitions[i]])
                write_files(pa, pq, store, one, publisher, step)
                mine += one.total_rows
                collect(block=False)
            while running:
                collect(block=True)
                if progress and error is None:
                    progress(done + mine, total)
        except BaseException as exc:
            if error is None or not isinstance(exc, _Stopped):
                error = exc
            abort.set()
            while running:  # each stops at its next step and removes what it wrote
                collect(block=True)
    if isinstance(error, BrokenProcessPool):
        # A worker died (killed, or out of memory): what it and the others handed over
        # was aborted with the rest.
        raise StorageError(
            f"a worker process of the export to {publisher.target} died before the export "
            "finished (killed, or out of memory); nothing of the export was kept. Run the "
            "export again (with fewer {jobs} if memory ran short)",
            table=str(publisher.target),
            terms={"jobs": Term("--jobs N", "jobs=N")},
        ) from None
    if error is not None:
        raise error


def _ready() -> None:
    """A worker's first call: nothing, once it is up."""


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


class _PlanPickler(pickle.Pickler):
    """Pickles a plan as it is, with its store (the ``source`` a partition plan reads
    labels through) left out as a reference: the worker puts its own in its place."""

    def persistent_id(self, obj: Any) -> str | None:
        from ...store import Store

        return "store" if isinstance(obj, Store) else None


class _PlanUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, store: Store) -> None:
        super().__init__(io.BytesIO(data))
        self._store = store

    def persistent_load(self, pid: Any) -> Any:
        if pid != "store":
            raise pickle.UnpicklingError(f"unknown reference {pid!r} in an export plan")
        return self._store


def _pack(plan: ExportPlan, i: int) -> bytes:
    """The plan of partition ``i``, pickled for a worker (the objects themselves, whatever
    fields they hold, so this follows the plan's types as they change)."""
    mine = dataclasses.replace(plan, partitions=[plan.partitions[i]])
    out = io.BytesIO()
    _PlanPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(mine)
    return out.getvalue()


#: The store a worker opened (read-only), kept for its next partitions: ``(path, Store)``.
_opened: tuple[str, Any] | None = None


def _store(path: str) -> Store:
    """The store at ``path``, opened read-only once per worker and closed as it exits."""
    global _opened
    from ...store import Store

    if _opened is None or _opened[0] != path:
        if _opened is not None:
            _opened[1].close()
        store = Store.open(path, read_only=True)
        _opened = (path, store)
        multiprocessing.util.Finalize(store, store.close, exitpriority=10)
    return _opened[1]


def _work(job: dict[str, Any], i: int, packed: bytes) -> tuple[Any, int]:
    """One worker's partition ``i`` (its plan ``packed``): ``(what its publisher hands
    over, rows)``."""
    pa, pq = require_pyarrow()
    store = _store(job["store"])
    plan: ExportPlan = _PlanUnpickler(packed, store).load()
    publisher = job["target"].publisher(
        plan, overwrite=job["overwrite"], token=job["token"], worker=True
    )

    def stop_if_told(done: int, total: int) -> None:
        if _abort is not None and _abort.is_set():
            raise _Stopped("stopped: another writer of the export failed")

    try:
        job["write"](pa, pq, store, plan, publisher, stop_if_told)
        # Its files as the parent completes them at its commit (uploads left open).
        handed = publisher.hand_over()
    except BaseException:
        publisher.rollback()
        raise
    return handed, plan.total_rows
