"""The damage campaign of issue 33: damage a user's disk, backup tool or colleague causes
to a store at rest, beyond a segment's bytes (tests/store/test_damage.py has those).

Each trial damages a copy of the five-segment store of ``damaged_store`` one way, then
runs what a user would, through the command line (``list``, ``info``, ``verify``,
``repair --dry-run``, ``repair``, ``verify``) and the API (every series read, a write
after the repair). Outcomes, asserted over every trial: no wrong value (a read returns
the series' own values or fails), no internal error (no traceback, no "internal error"
in any output, every API failure a ``TimeSeriesError``), no intact file deleted (every
file hashed after the damage is still somewhere in the store directory at the end),
``repair --dry-run`` changes no byte, and ``repair`` loses no series that read back
exactly before it. The table (``pytest -s`` prints it) is quoted in docs/durability.md.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import apsw
import numpy as np
import pytest
from click.testing import CliRunner
from damaged_store import T0, build_world, flipped, fresh, segment_files

from infrastore_sqlite import SingleTimeSeries, Store, TimeSeriesError
from infrastore_sqlite.cli import cli

RELEASE_STORE = Path(__file__).resolve().parents[1] / "data" / "release_store"

# A damage: (seeded randomness, the store's copy, the other store) -> what was done.
Damage = Callable[[random.Random, Path, Path], str]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, Path]:
    """The store, its series' data, and a second store of the same shape (another
    generation) to take foreign segments from."""
    root = tmp_path_factory.mktemp("campaign")
    expected = build_world(root / "world.h5")
    build_world(root / "other.h5")
    return root / "world.h5", expected, root / "other.h5"


# ---------------------------------------------------------------------------- damage


def _series(k: int) -> SingleTimeSeries:
    return SingleTimeSeries(T0, "PT1H", np.random.default_rng(1000 + k).random(30), f"late{k}")


def _add_later(path: Path, n: int) -> None:
    """``n`` more write transactions, one series each (each a new segment)."""
    with Store.open(path) as s:
        for k in range(n):
            s.add_time_series(900 + k, "Gen", "Component", _series(k))


def catalog_emptied(rng: random.Random, path: Path, other: Path) -> str:
    (path / "catalog.sqlite").write_bytes(b"")
    return "catalog.sqlite truncated to 0 B"


def older_catalog_restored(rng: random.Random, path: Path, other: Path) -> str:
    backup = path.parent / "catalog-backup"
    shutil.copy(path / "catalog.sqlite", backup)
    n = rng.randint(1, 3)
    _add_later(path, n)
    for suffix in ("-wal", "-shm"):
        (path / f"catalog.sqlite{suffix}").unlink(missing_ok=True)
    shutil.copy(backup, path / "catalog.sqlite")
    backup.unlink()
    return f"the catalog as it was {n} writes earlier restored"


def wal_lost_after_kill(rng: random.Random, path: Path, other: Path) -> str:
    n = rng.randint(1, 3)
    pid = os.fork()
    if pid == 0:  # the killed writer: commits, then dies without closing the store
        code = 1
        try:
            s = Store.open(path)
            for k in range(n):
                s.add_time_series(900 + k, "Gen", "Component", _series(k))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert (path / "catalog.sqlite-wal").stat().st_size > 0  # the commits live there
    for suffix in ("-wal", "-shm"):
        (path / f"catalog.sqlite{suffix}").unlink()
    return f"{n} committed writes, the writer killed, its -wal deleted"


def segment_name_flipped(rng: random.Random, path: Path, other: Path) -> str:
    target = rng.choice(segment_files(path)).name
    at = rng.randrange(len(target) - 3)  # a bit of the hex name, not of ".h5"
    renamed = target[:at] + chr(ord(target[at]) ^ (1 << rng.randrange(3))) + target[at + 1 :]
    conn = apsw.Connection(str(path / "catalog.sqlite"))
    conn.execute("UPDATE segments SET name = ? WHERE name = ?", (renamed, target))
    conn.close()
    return f"segment name {target} in the catalog's segments row flipped to {renamed}"


def _row_field_flipped(rng: random.Random, path: Path, column: str) -> str:
    """One bit of one series row's field flipped past the store (as a disk would)."""
    conn = apsw.Connection(str(path / "catalog.sqlite"))
    try:
        sid = rng.choice([r[0] for r in conn.execute("SELECT id FROM time_series_associations")])
        (value,) = conn.execute(
            f"SELECT {column} FROM time_series_associations WHERE id = ?", (sid,)
        ).fetchone()
        new = flipped(value, rng)
        conn.execute(f"UPDATE time_series_associations SET {column} = ? WHERE id = ?", (new, sid))
    finally:
        conn.close()
    return f"the {column} of series id {sid} flipped in its catalog row"


def row_name_flipped(rng: random.Random, path: Path, other: Path) -> str:
    return _row_field_flipped(rng, path, "name")


def row_hash_flipped(rng: random.Random, path: Path, other: Path) -> str:
    return _row_field_flipped(rng, path, "data_id")


def _zero_page(rng: random.Random, path: Path, kind: str) -> str:
    cat = path / "catalog.sqlite"
    conn = apsw.Connection(str(cat), flags=apsw.SQLITE_OPEN_READONLY)
    names = {
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%'",
            (kind,),
        )
    }
    pages = [
        (r[0], r[1])
        for r in conn.execute("SELECT name, pageno FROM dbstat ORDER BY pageno")
        if r[0] in names
    ]
    size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    conn.close()
    name, page = rng.choice(pages)
    data = bytearray(cat.read_bytes())
    data[(page - 1) * size : page * size] = bytes(size)
    cat.write_bytes(bytes(data))
    return f"page {page} ({kind} {name}) of the catalog zeroed"


def index_page_zeroed(rng: random.Random, path: Path, other: Path) -> str:
    return _zero_page(rng, path, "index")


def table_page_zeroed(rng: random.Random, path: Path, other: Path) -> str:
    return _zero_page(rng, path, "table")


def garbage_journal(rng: random.Random, path: Path, other: Path) -> str:
    n = rng.choice([512, 4096, 10_000])
    (path / "catalog.sqlite-journal").write_bytes(rng.randbytes(n))
    return f"catalog.sqlite-journal of {n} random bytes"


def segment_made_directory(rng: random.Random, path: Path, other: Path) -> str:
    target = rng.choice(segment_files(path))
    target.unlink()
    target.mkdir()
    (target / "note.txt").write_text("someone's files")
    return f"segment {target.name} replaced by a directory"


def segment_from_another_store(rng: random.Random, path: Path, other: Path) -> str:
    files = segment_files(path)
    target = files[0] if rng.random() < 0.5 else rng.choice(files)  # first sorts first
    shutil.copy(rng.choice(segment_files(other)), target)
    return f"segment {target.name} overwritten by a segment of another store"


KINDS: dict[str, tuple[Damage, int]] = {
    "catalog truncated to 0 B": (catalog_emptied, 2),
    "an older catalog restored": (older_catalog_restored, 3),
    "-wal lost after a kill": (wal_lost_after_kill, 3),
    "a segment's name flipped in its catalog row": (segment_name_flipped, 3),
    "a series name flipped in its catalog row": (row_name_flipped, 3),
    "a data hash flipped in its catalog row": (row_hash_flipped, 3),
    "an index page of the catalog zeroed": (index_page_zeroed, 10),
    "a table page of the catalog zeroed": (table_page_zeroed, 10),
    "a garbage catalog.sqlite-journal": (garbage_journal, 3),
    "a segment replaced by a directory": (segment_made_directory, 3),
    "a segment from another store": (segment_from_another_store, 6),
}


# ---------------------------------------------------------------------------- a trial


def file_hashes(path: Path) -> dict[str, str]:
    """Every regular file under ``path`` but the catalog (which a write rewrites) and
    SQLite's -wal and -shm: relative path -> SHA-256."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file() and not p.name.endswith(("-wal", "-shm")):
            rel = str(p.relative_to(path))
            if rel != "catalog.sqlite":
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


class Trial:
    """One damaged store through what a user runs; the outcomes counted."""

    def __init__(self, path: Path, expected: dict, what: str) -> None:
        self.path = path
        self.expected = expected
        self.what = what
        self.internal: list[str] = []
        self.wrong: list[str] = []
        self.counts: collections.Counter[str] = collections.Counter()

    def cli(self, *args: str):
        r = CliRunner().invoke(cli, ["--store", str(self.path), *args])
        out = r.stdout + r.stderr
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            self.internal.append(f"{args}: {type(r.exception).__name__}: {r.exception}")
        if "internal error" in out or "Traceback" in out:
            self.internal.append(f"{args}: {out.strip()[:300]}")
        if r.exit_code not in (0, 1):
            self.internal.append(f"{args}: exit {r.exit_code}")
        return r

    def reads(self) -> set[int]:
        """The ids that read back exactly (a wrong value is noted, never counted)."""
        good: set[int] = set()
        try:
            s = Store.open(self.path, read_only=True)
        except TimeSeriesError:
            return good
        except Exception as exc:
            self.internal.append(f"open: {type(exc).__name__}: {exc}")
            return good
        with s:
            for i, (data, _dtype) in self.expected.items():
                try:
                    got = np.asarray(s.read_by_id(i).data).tobytes()
                except TimeSeriesError:
                    continue
                except Exception as exc:
                    self.internal.append(f"read id {i}: {type(exc).__name__}: {exc}")
                    continue
                if got == data:
                    good.add(i)
                else:
                    self.wrong.append(f"id {i} read back another series' values")
        return good

    def run(self) -> None:
        intact = file_hashes(self.path)
        before = self.reads()
        listing = self.cli("-f", "json", "list")
        self.counts["refused on read"] += listing.exit_code != 0
        self.cli("info")
        verify = self.cli("-f", "json", "verify")
        self.counts["named by verify"] += verify.exit_code != 0
        dry_before = file_hashes(self.path), _entries(self.path)
        self.cli("-f", "json", "repair", "--dry-run")
        if (file_hashes(self.path), _entries(self.path)) != dry_before:
            self.wrong.append("repair --dry-run changed the store directory")
        untouched = file_hashes(self.path), _entries(self.path), _catalog_bytes(self.path)
        repair = self.cli("-f", "json", "repair")
        if repair.exit_code != 0 and (
            (file_hashes(self.path), _entries(self.path), _catalog_bytes(self.path)) != untouched
        ):
            self.wrong.append("a refused repair changed the store directory")
        if repair.exit_code == 0:
            report = json.loads(repair.stdout)
            self.counts["repaired"] += 1
            after_verify = self.cli("verify")
            self.counts["verify passes after repair"] += after_verify.exit_code == 0
            listed_lost = {x["id"] for x in report["series_lost"]}
            after = self.reads()
            healthy_lost = before - after
            self.counts["healthy series lost by repair"] += len(healthy_lost)
            self.counts["series back after repair"] += len(after)
            self.counts["series lost by repair"] += len(listed_lost)
            unlisted = (before - after) - listed_lost
            if unlisted:
                self.wrong.append(f"repair lost {sorted(unlisted)} without listing them")
            # and the next write works on what repair left, deleting nothing
            try:
                with Store.open(self.path) as s:
                    s.add_time_series(4242, "Gen", "Component", _series(99))
            except TimeSeriesError as exc:
                self.wrong.append(f"a write after repair failed: {exc}")
        else:
            self.counts["repair refused"] += 1
            if '"status": "error"' not in repair.stdout + repair.stderr:
                self.internal.append(f"repair failed without a message: {repair.stderr[:200]}")
        found = set(file_hashes(self.path).values())
        deleted = [rel for rel, h in intact.items() if h not in found]
        self.counts["intact files deleted"] += len(deleted)
        self.counts["files kept (set aside or in place)"] += len(intact) - len(deleted)


def _catalog_bytes(path: Path) -> bytes:
    cat = path / "catalog.sqlite"
    return cat.read_bytes() if cat.is_file() else b""


def _entries(path: Path) -> set[str]:
    return {
        str(p.relative_to(path)) for p in path.rglob("*") if not p.name.endswith(("-wal", "-shm"))
    }


# ---------------------------------------------------------------------------- campaign


def test_damage_campaign(world, tmp_path: Path) -> None:
    path0, expected0, other = world
    rng = random.Random("issue-33")
    table: dict[str, collections.Counter[str]] = {}
    internal: list[str] = []
    wrong: list[str] = []
    for kind, (damage, trials) in KINDS.items():
        counts: collections.Counter[str] = collections.Counter()
        for n in range(trials):
            path = fresh((path0, expected0), tmp_path)
            what = damage(rng, path, other)
            # (the series the older-catalog and lost -wal kinds wrote later are the
            # catalog's no more: their segments must be kept, set aside, not read)
            trial = Trial(path, expected0, what)
            trial.run()
            counts["trials"] += 1
            counts.update(trial.counts)
            internal += [f"{kind} #{n} ({what}): {e}" for e in trial.internal]
            wrong += [f"{kind} #{n} ({what}): {e}" for e in trial.wrong]
        counts["internal errors"] = sum(1 for e in internal if e.startswith(kind))
        counts["wrong values"] = sum(1 for e in wrong if e.startswith(kind))
        table[kind] = counts
    _print_table(table)
    assert not internal, internal[:5]
    assert not wrong, wrong[:5]
    for kind, counts in table.items():
        assert counts["intact files deleted"] == 0, kind
        assert counts["healthy series lost by repair"] == 0, kind
        assert counts["named by verify"] + counts["refused on read"] > 0, kind
        assert counts["verify passes after repair"] == counts["repaired"], kind
    # A flipped byte in a row is damage: `list` refuses it (its checksum), never prints
    # the damaged row as the series' new name or hash; verify names it, repair restores.
    for kind in (
        "a series name flipped in its catalog row",
        "a data hash flipped in its catalog row",
    ):
        counts = table[kind]
        assert counts["refused on read"] == counts["named by verify"] == counts["trials"], kind
        assert counts["series lost by repair"] == 0, kind


COLUMNS = (
    "trials",
    "refused on read",
    "named by verify",
    "repaired",
    "repair refused",
    "series back after repair",
    "series lost by repair",
    "healthy series lost by repair",
    "files kept (set aside or in place)",
    "intact files deleted",
    "wrong values",
    "internal errors",
)


def _print_table(table: dict[str, collections.Counter[str]]) -> None:
    print("\n| kind | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for kind, counts in table.items():
        print(f"| {kind} | " + " | ".join(str(counts[c]) for c in COLUMNS) + " |")
    total = collections.Counter()
    for counts in table.values():
        total.update(counts)
    print("| **all** | " + " | ".join(f"**{total[c]}**" for c in COLUMNS) + " |")


# ---------------------------------------------------------------------------- markers


def test_only_a_file_a_pending_mark_claims_is_deleted(world, tmp_path: Path) -> None:
    """What the next writer does with each kind of file in segments/ the catalog does not
    name: deletes a pending one with its mark, sets every other aside, drops stale marks."""
    path = fresh(world[:2], tmp_path)
    segs = path / "segments"
    named = segment_files(path)[0].name
    (segs / "a1.h5").write_bytes(b"a write that did not commit")
    (segs / "a1.h5.pending").touch()
    (segs / "b2.h5").write_bytes(b"sealed, its commit unknown")
    (segs / "b2.h5.sealed").touch()
    (segs / "c3.h5").write_bytes(b"nobody's")
    (segs / "d4.h5.pending").write_bytes(b"a mark's name, but content")
    (segs / f"{named}.pending").touch()  # a stale mark beside a named segment
    with Store.open(path, read_only=True) as s:
        found = s.diagnose()
        assert sorted(Path(u).name for u in found.unnamed) == ["c3.h5", "d4.h5.pending"]
    with Store.open(path) as s:
        s.add_time_series(777, "Gen", "Component", _series(1))
    left = sorted(p.name for p in segs.iterdir())
    assert "a1.h5" not in left and "a1.h5.pending" not in left
    assert f"{named}.pending" not in left and named in left
    assert not [n for n in left if n.endswith((".pending", ".sealed"))]
    aside = {p.name: p.read_bytes() for p in (path / "segments-aside").iterdir()}
    assert aside == {
        "b2.h5": b"sealed, its commit unknown",
        # its mark moves with it: a transaction not known to have committed is never
        # taken for one a stale catalog lost (journal.unknown_transactions)
        "b2.h5.sealed": b"",
        "c3.h5": b"nobody's",
        "d4.h5.pending": b"a mark's name, but content",
    }
    with Store.open(path, read_only=True) as s:
        found = s.diagnose()
        assert found.ok and len(found.set_aside) == 3


def test_a_rolled_back_compaction_leaves_no_mark(
    world, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compact marks the segments it replaces pending before its commit; when the commit
    does not happen (here its new segment fails to seal) the marks go with the rollback,
    so no older catalog restored later could make those segments look like leftovers."""
    from infrastore_sqlite.errors import StorageError
    from infrastore_sqlite.store.segments import Segments

    path = fresh(world[:2], tmp_path)
    before = [p.name for p in segment_files(path)]
    marked: list[str] = []
    real_mark = Segments.mark_superseded

    def mark(self, names):
        marked.extend(names)
        real_mark(self, names)

    def seal(self):
        raise StorageError("injected: the disk is full")

    monkeypatch.setattr(Segments, "mark_superseded", mark)
    monkeypatch.setattr(Segments, "seal", seal)
    with Store.open(path) as s, pytest.raises(StorageError, match="injected"):
        s.compact()
    assert sorted(marked) == before  # the marks were made, then taken back
    after = [p.name for p in segment_files(path)]
    assert [n for n in after if not n.endswith(".pending")] == before
    assert not [n for n in after if n.endswith((".pending", ".sealed"))]
    monkeypatch.undo()
    with Store.open(path) as s:
        assert s.verify_integrity() == {"ok": True, "errors": []}


def test_a_refused_repair_leaves_no_folder(tmp_path: Path) -> None:
    """A table page of the catalog zeroed in a store whose segments hold no record of its
    history (written by the release before records were kept): no copy of its tables
    and no rebuild from records brings it back, so repair refuses, changing nothing."""
    path = tmp_path / "release.h5"
    shutil.copytree(RELEASE_STORE / "store.h5", path)
    table_page_zeroed(random.Random(3), path, path)
    entries = sorted(p.name for p in path.iterdir())
    r = CliRunner().invoke(cli, ["--store", str(path), "repair"])
    assert r.exit_code == 1 and "nothing was changed" in r.stderr
    assert sorted(p.name for p in path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        n for n in entries if not n.endswith(("-wal", "-shm"))
    ]


@pytest.mark.parametrize("seed", range(4))
def test_catalog_damage_is_one_clean_refusal_in_the_api(world, tmp_path: Path, seed: int) -> None:
    """A table page of the catalog zeroed: list_metadata, read_by_ids and diagnose either
    answer or raise a TimeSeriesError (a DamagedStoreError naming the catalog for rows
    SQLite cannot read), never a raw apsw error."""
    from infrastore_sqlite.errors import DamagedStoreError

    path = fresh(world[:2], tmp_path)
    what = table_page_zeroed(random.Random(seed), path, path)
    try:
        s = Store.open(path, read_only=True)
    except TimeSeriesError as exc:  # the catalog's schema itself does not read
        assert isinstance(exc, DamagedStoreError) and "catalog.sqlite" in str(exc), what
        return
    with s:
        for call in (s.list_metadata, lambda: s.read_by_ids(sorted(world[1]))):
            try:
                call()
            except TimeSeriesError as exc:
                assert "\n" not in str(exc)
                if isinstance(exc, DamagedStoreError) and "SQLite cannot read" in str(exc):
                    assert str(path / "catalog.sqlite") in str(exc)
                    assert "Store.diagnose()" in str(exc), str(exc)
        found = s.diagnose()
        assert not found.ok and not found.catalog["ok"], what
