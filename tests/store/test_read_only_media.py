"""A store on read-only media, and the files a reader leaves on writable media.

Read-only media is a read-only bind mount in a private mount namespace of a forked child
(root alone may make one; a chmod does not stop root). The child runs the CLI on the
store and sends back what each command did.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from infrastore_sqlite import SingleTimeSeries, StorageError, Store

T0 = datetime(2024, 1, 1, tzinfo=UTC)
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18


def _make_store(path: Path) -> None:
    with Store.create(path) as s:
        for k in range(3):
            ts = SingleTimeSeries(T0, "PT1H", np.arange(24.0) * (k + 1), f"load{k}")
            s.add_time_series(k + 1, "Gen", "Component", ts)


def _mount_read_only(folder: Path) -> int:
    """In this (child) process: ``folder`` becomes a read-only mount; 0 or the errno."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]
    where = os.fsencode(folder)
    steps = [
        lambda: libc.unshare(CLONE_NEWNS),
        # private: the mounts below stay in this process's namespace
        lambda: libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None),
        lambda: libc.mount(where, where, None, MS_BIND, None),
        lambda: libc.mount(None, where, None, MS_BIND | MS_REMOUNT | MS_RDONLY, None),
    ]
    for step in steps:
        if step() != 0:
            return ctypes.get_errno()
    return 0


def on_read_only_media(folder: Path, commands: list[list[str]], *, api: Path | None = None):
    """Run each CLI command with ``folder`` mounted read-only; their (code, out, err).

    With ``api``, the child also opens that store with ``read_only=True`` and sends back
    the names it lists (or the error).
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        out: dict = {}
        try:
            os.close(read_fd)
            code = _mount_read_only(folder)
            if code:
                out = {"mount_errno": code}
            else:
                out["cli"] = [_run(args) for args in commands]
                if api is not None:
                    try:
                        with Store.open(api, read_only=True) as s:
                            out["api"] = sorted(m["name"] for m in s.list_metadata())
                            out["values"] = s.read_by_id(2).data.tolist()
                    except StorageError as exc:
                        out["api_error"] = str(exc)
        finally:
            os.write(write_fd, json.dumps(out).encode())
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        got = json.loads(pipe.read().decode() or "{}")
    os.waitpid(pid, 0)
    if got.get("mount_errno") in (errno.EPERM, errno.EACCES):
        pytest.skip("a private read-only mount needs root (CAP_SYS_ADMIN) on this machine")
    assert "mount_errno" not in got, got
    return got


def _run(args: list[str]) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "infrastore_sqlite", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    return done.returncode, done.stdout, done.stderr


def test_a_store_on_read_only_media_opens_for_list_get_and_export(tmp_path: Path) -> None:
    media = tmp_path / "media"
    media.mkdir()
    store = media / "s.h5"
    _make_store(store)
    before = sorted(p.name for p in store.iterdir())
    assert "catalog.sqlite-wal" not in before  # closed cleanly: the WAL was checkpointed
    out = tmp_path / "out"
    out.mkdir()
    s = ["--store", str(store)]
    got = on_read_only_media(
        media,
        [
            [*s, "list", "-f", "json"],
            [*s, "get", "--id", "2", "-f", "json"],
            [*s, "info"],
            [*s, "verify"],
            [*s, "export", "--db", str(out / "e.db")],
            [*s, "remove", "--id", "1", "-y"],
        ],
        api=store,
    )
    (ls, get, info, verify, export, remove) = got["cli"]
    for code, stdout, stderr in (ls, get, info, verify, export):
        assert code == 0 and "Traceback" not in stderr, (stdout, stderr)
    assert sorted(r["name"] for r in json.loads(ls[1])["items"]) == ["load0", "load1", "load2"]
    assert [r["value"] for r in json.loads(get[1])["items"]] == [2.0 * i for i in range(24)]
    assert "true" in verify[1]
    assert got["api"] == ["load0", "load1", "load2"]
    assert got["values"] == [2.0 * i for i in range(24)]
    # the export is a whole interchange file
    with Store.create(tmp_path / "back.h5") as back:
        assert len(back.import_sqlite(out / "e.db")) == 3
    # a write is refused in one line that says why and what reads
    code, _, stderr = remove
    assert code == 1 and "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert "read-only media or not writable" in stderr and "the reading commands" in stderr
    # nothing was created or changed on the media
    assert sorted(p.name for p in store.iterdir()) == before
    with Store.open(store, read_only=True) as s:
        assert len(s.list_metadata()) == 3


def test_a_pending_log_on_read_only_media_is_refused_with_what_to_do(tmp_path: Path) -> None:
    media = tmp_path / "media"
    media.mkdir()
    src = tmp_path / "src.h5"
    _make_store(src)
    with Store.open(src) as writer:
        writer.add_time_series(
            9, "Gen", "Component", SingleTimeSeries(T0, "PT1H", np.arange(5.0), "late")
        )
        # a copy taken while the writer has it open: its last commit is only in the log
        shutil.copytree(src, media / "s.h5")
    (media / "s.h5" / "catalog.sqlite-shm").unlink()
    assert (media / "s.h5" / "catalog.sqlite-wal").stat().st_size > 0
    got = on_read_only_media(media, [["--store", str(media / "s.h5"), "list"]], api=media / "s.h5")
    code, _, stderr = got["cli"][0]
    assert code == 1 and "Traceback" not in stderr
    assert "may hold commits" in stderr and "open the store once where it can be written" in stderr
    assert "may hold commits" in got["api_error"]
    # where it can be written, the log's commit is there
    with Store.open(media / "s.h5", read_only=True) as s:
        assert sorted(m["name"] for m in s.list_metadata()) == ["late", "load0", "load1", "load2"]


def test_a_reader_leaves_only_an_empty_log_and_the_next_writer_removes_it(
    tmp_path: Path,
) -> None:
    store = tmp_path / "s.h5"
    _make_store(store)
    with Store.open(store, read_only=True) as s:
        assert len(s.list_metadata()) == 3
    wal = store / "catalog.sqlite-wal"
    # what docs/durability.md says: the reader's log holds nothing ...
    assert wal.exists() and wal.stat().st_size == 0
    # ... so the catalog file alone is the store's committed state
    copy = tmp_path / "copy.h5"
    shutil.copytree(store, copy, ignore=shutil.ignore_patterns("*-wal", "*-shm"))
    with Store.open(copy, read_only=True) as s:
        assert len(s.list_metadata()) == 3
    with Store.open(store) as s:
        s.remove_by_ids([1])
    assert sorted(p.name for p in store.iterdir()) == ["catalog.sqlite", "segments"]
