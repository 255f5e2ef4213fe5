"""A damaged store: named by ``verify``, contained on read, repaired (issue 27).

The campaign (:func:`test_damage_campaign`) damages copies of one small store of five
segments, seeded and deterministic: bit flips, zeroed ranges, random bytes, truncations
and deleted files, over the segment files and the catalog. After each trial: no internal
error anywhere (every failure is a ``TimeSeriesError``); every series either reads back
bit for bit or fails naming itself and its file (never a wrong value), and fails exactly
when ``diagnose`` lists it as lost; ``repair`` leaves a store ``diagnose`` passes, in which
every series it did not list as lost reads back bit for bit. The counts are printed
(``pytest -s``) and quoted in docs/durability.md.
"""

from __future__ import annotations

import collections
import contextlib
import os
import random
import shutil
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from damaged_store import (
    PER_SEGMENT,
    SEGMENTS,
    WORLD_DATA,
    fresh,
    segment_files,
    segment_of,
    world_expected,
)

from infrastore_sqlite import (
    NonSequentialTimeSeries,
    SingleTimeSeries,
    Store,
    TimeSeriesError,
)
from infrastore_sqlite.errors import CatalogDamagedError, DamagedStoreError

TRIALS = 400


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, tuple[bytes, str]]]:
    """The kept world (``tests/data/damage_world``): the same bytes on every run, so each
    seeded trial does the same damage. Checked sound and as built before any trial."""
    path = tmp_path_factory.mktemp("damage") / "world.h5"
    shutil.copytree(WORLD_DATA, path)
    # Kept at schema revision 3: a writable open migrates it (step 0004) before any trial.
    with Store.open(path):
        pass
    expected = world_expected()
    assert len(list((path / "segments").iterdir())) == SEGMENTS
    with Store.open(path, read_only=True) as s:
        assert s.verify_integrity() == {"ok": True, "errors": []}
        assert readback(s, expected) == {i: v[0] for i, v in expected.items()}
    return path, expected


def value_offset(path: Path, series_id: int) -> int:
    """The file offset of the first value byte of a series' array (an unfiltered pool)."""
    import h5py

    with Store.open(path, read_only=True) as s:
        pool, slot = s._catalog.execute(
            "SELECT a.pool, a.slot FROM arrays a JOIN time_series_associations t "
            "ON a.id = t.data_id AND a.kind = 'data' WHERE t.id = ?",
            (series_id,),
        ).fetchone()
    with h5py.File(segment_of(path, series_id), "r") as h5:
        ds = h5["pools"][pool]
        assert not ds.compression  # f64 pools are stored as they are under "auto"
        info = ds.id.get_chunk_info_by_coord((slot // ds.chunks[0] * ds.chunks[0], 0))
        row = int(np.prod(ds.shape[1:])) * ds.dtype.itemsize
        return info.byte_offset + (slot % ds.chunks[0]) * row


def readback(s: Store, ids) -> dict[int, object]:
    """Each id: its data bytes, or the error its read raised."""
    out: dict[int, object] = {}
    for i in ids:
        try:
            out[i] = np.asarray(s.read_by_id(i).data).tobytes()
        except TimeSeriesError as exc:
            out[i] = exc
    return out


# ---------------------------------------------------------------------------- reads


def test_a_flipped_value_fails_the_read_naming_series_and_file(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    victim = 3
    seg = segment_of(path, victim)
    at = value_offset(path, victim)
    data = bytearray(seg.read_bytes())
    data[at + 5] ^= 0x10
    seg.write_bytes(data)
    with Store.open(path, read_only=True) as s:
        with pytest.raises(DamagedStoreError) as err:
            s.read_by_id(victim)
        message = str(err.value)
        assert "'load2' (owner 2, id 3)" in message and str(seg) in message
        assert "hash mismatch" in message and "\n" not in message
        assert err.value.series == ["'load2' (owner 2, id 3)"] and err.value.key == [str(seg)]
        # read_by_ids of a set holding it fails too; without it, works
        others = [i for i in world[1] if i != victim]
        with pytest.raises(DamagedStoreError):
            s.read_by_ids([1, victim])
        got = s.read_by_ids(others)
        assert [np.asarray(o.data).tobytes() for o in got] == [world[1][i][0] for i in others]
        found = s.diagnose()
        assert [(x.file, x.problem, x.arrays_lost) for x in found.segments] == [
            (str(seg), "hash mismatch", 1)
        ]
        assert [x.id for x in found.series_lost] == [victim]


def test_a_changed_time_axis_fails_a_bulk_read_naming_its_series(world, tmp_path: Path) -> None:
    """read_by_ids reads the time axes beside the data arrays: a time axis whose values
    changed under its checksums fails the read naming its series; the rest read back,
    time axes included, as before the damage."""
    import h5py

    path = fresh(world, tmp_path)
    ids = sorted(world[1])
    with Store.open(path, read_only=True) as s:
        before = {o.name + str(i): o for i, o in zip(ids, s.read_by_ids(ids), strict=True)}
        axis, pool, slot, segment = s._catalog.execute(
            "SELECT hash, pool, slot, segment FROM arrays WHERE kind = 'timestamps'"
        ).fetchone()
        # Every "events" series has the same time axis: one array, shared.
        victims = [
            r[0]
            for r in s._catalog.execute(
                "SELECT id FROM time_series_associations WHERE timestamps_id = "
                "(SELECT id FROM arrays WHERE hash = ? AND kind = 'timestamps')",
                (axis,),
            )
        ]
    assert len(victims) == SEGMENTS
    with h5py.File(path / "segments" / segment, "r+") as h5:
        ds = h5["pools"][pool]
        row = ds[slot]
        row[3] += 1  # one timestamp a millisecond later; the checksums left as written
        ds[slot] = row
    with Store.open(path, read_only=True) as s:
        with pytest.raises(DamagedStoreError) as err:
            s.read_by_ids(ids)
        assert err.value.series == [f"'events' (owner {o}, id {i})" for o, i in _owners(victims)]
        others = [i for i in ids if i not in victims]
        got = s.read_by_ids(others[::-1])
        for i, o in zip(others[::-1], got, strict=True):
            want = before[o.name + str(i)]
            assert np.asarray(o.data).tobytes() == world[1][i][0]
            assert not isinstance(o, NonSequentialTimeSeries)  # the damaged axis was theirs
            assert o.name == want.name


def _owners(ids: list[int]) -> list[tuple[int, int]]:
    """``(owner id, id)`` of the "events" series ``ids`` of the world (segment k's
    owners are 100 k + 0..5, its ids 6 k + 1..6; "events" is the fifth)."""
    return [((i - 1) // PER_SEGMENT * 100 + 4, i) for i in ids]


def test_a_missing_first_segment_leaves_the_others_readable(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    first = segment_files(path)[0]
    with Store.open(path, read_only=True) as s:
        # A series loses data with its values or with its time axis (an irregular series'
        # timestamps may sit in another segment than its values).
        in_first = {
            r[0]
            for r in s._catalog.execute(
                "SELECT t.id FROM time_series_associations t JOIN arrays a "
                "ON (a.id = t.data_id AND a.kind = 'data') "
                "OR (a.id = t.timestamps_id AND a.kind = 'timestamps') "
                "WHERE a.segment = ?",
                (first.name,),
            )
        }
    first.unlink()
    with Store.open(path, read_only=True) as s:
        assert len(s.list_metadata()) == SEGMENTS * PER_SEGMENT
        got = readback(s, world[1])
        for i, value in got.items():
            if i in in_first:
                assert isinstance(value, DamagedStoreError) and str(first) in str(value)
                assert "missing" in str(value)
            else:
                assert value == world[1][i][0]
        found = s.diagnose()
        assert not found.ok and {x.id for x in found.series_lost} == in_first
        assert found.segments[0].problem == "missing"


def test_a_catalog_without_any_of_its_segments_is_still_refused(world, tmp_path: Path) -> None:
    from infrastore_sqlite import MismatchedArtifactError

    path = fresh(world, tmp_path)
    for seg in segment_files(path):
        seg.unlink()
    with pytest.raises(MismatchedArtifactError, match="none of them is there"):
        Store.open(path, read_only=True)


def test_a_damaged_catalog_page_is_named(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    cat = path / "catalog.sqlite"
    data = bytearray(cat.read_bytes())
    page = 4096
    # a page of an index in the middle of the file: rows still read, the structure not
    data[3 * page : 4 * page] = random.Random(1).randbytes(page)
    cat.write_bytes(data)
    with Store.open(path, read_only=True) as s:
        found = s.diagnose()
    assert not found.ok and not found.catalog["ok"]
    assert found.catalog["file"] == str(cat) and found.catalog["errors"]
    assert any(e.startswith(f"the catalog {cat} is damaged") for e in found.errors)


def test_verify_never_writes(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    segment_files(path)[1].write_bytes(segment_files(path)[1].read_bytes()[:3000])

    def snapshot() -> dict[str, tuple[int, bytes]]:
        return {
            str(p.relative_to(path)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in [path / "catalog.sqlite", *segment_files(path)]
        }

    before = snapshot()
    with Store.open(path, read_only=True) as s:
        assert not s.diagnose().ok
        assert s.repair(dry_run=True)["series_lost"]
    # a reader's -wal and -shm beside the catalog are SQLite's (docs/durability.md)
    assert snapshot() == before
    assert sorted(os.listdir(path)) == [
        "catalog.sqlite",
        "catalog.sqlite-shm",
        "catalog.sqlite-wal",
        "segments",
    ]
    assert (path / "catalog.sqlite-wal").stat().st_size == 0


# ---------------------------------------------------------------------------- repair


def test_repair_sets_damage_aside_and_keeps_what_reads(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    victim = 8
    seg = segment_of(path, victim)
    at = value_offset(path, victim)
    data = bytearray(seg.read_bytes())
    data[at : at + 16] = bytes(16)
    seg.write_bytes(data)
    with Store.open(path) as s:
        held = s._catalog.scalar("SELECT count(*) FROM arrays WHERE segment = ?", (seg.name,))
        dry = s.repair(dry_run=True)
        assert dry["dry_run"] and dry["folder"] is None
        assert [x["id"] for x in dry["series_lost"]] == [victim]
        report = s.repair()
        assert [x["id"] for x in report["series_lost"]] == [victim]
        assert report["set_aside"] == [str(seg)]
        assert report["arrays_salvaged"] == held - 1  # every array of the file but one
        assert 'on_conflict="replace"' in report["restore"]
        folder = Path(report["folder"])
        assert folder.parent == path and folder.name.startswith("damaged-")
        assert (folder / seg.name).read_bytes() == bytes(data)  # moved, not deleted
        assert not seg.exists()
        assert s.verify_integrity() == {"ok": True, "errors": []}
        assert s.rows_by_ids.__self__ is s  # the store stays open and usable
        survivors = [i for i in world[1] if i != victim]
        assert readback(s, survivors) == {i: world[1][i][0] for i in survivors}
        with pytest.raises(TimeSeriesError):
            s.read_by_id(victim)
        # a second repair has nothing to do
        assert s.repair()["set_aside"] == []


def test_a_kill_during_repair_leaves_a_store_that_opens(world, tmp_path: Path) -> None:
    """SIGKILL at seeded instants of a repair: the store opens, and a repair after it
    (or the killed one, had it committed) leaves every undamaged series intact."""
    rng = random.Random("repair-kill")
    template = fresh(world, tmp_path, "template.h5")
    damaged = segment_files(template)[2]
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    with Store.open(template, read_only=True) as s:
        lost = {x.id for x in s.diagnose().series_lost}
    assert lost

    def run_repair(p: Path) -> None:
        with Store.open(p) as s:
            s.repair()

    start = time.perf_counter()
    status = _forked(run_repair, fresh_from(template, tmp_path))
    duration = time.perf_counter() - start
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    killed = 0
    for _ in range(10):
        p = fresh_from(template, tmp_path)
        began = time.perf_counter()
        status = _forked(run_repair, p, kill_after=rng.uniform(0, duration))
        if os.WIFSIGNALED(status):
            killed += 1
        else:  # the first run was slowed by other load: aim within the fastest seen
            duration = min(duration, time.perf_counter() - began)
        with Store.open(p) as s:
            s.repair()
            assert s.verify_integrity() == {"ok": True, "errors": []}
            keep = [i for i in world[1] if i not in lost]
            assert readback(s, keep) == {i: world[1][i][0] for i in keep}
            assert {m["id"] for m in s.list_metadata()} == set(keep)
    assert killed > 0


def fresh_from(template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "killed.h5"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(template, target)
    return target


def _forked(fn, path: Path, kill_after: float | None = None) -> int:
    pid = os.fork()
    if pid == 0:  # the child: run, leave without running the parent's cleanup
        code = 1
        try:
            fn(path)
            code = 0
        finally:
            os._exit(code)
    if kill_after is not None:
        time.sleep(kill_after)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return status


# ---------------------------------------------------------------------------- campaign

KINDS = ("flip", "zero", "random", "truncate", "delete")


def damage(rng: random.Random, path: Path) -> str:
    """Damage one file of the store at ``path`` (a segment, or one time in five the
    catalog); returns what was done."""
    files = segment_files(path)
    target = path / "catalog.sqlite" if rng.random() < 0.2 else rng.choice(files)
    kind = rng.choice(KINDS)
    data = bytearray(target.read_bytes())
    size = len(data)
    what = f"{kind} {target.relative_to(path)} ({size} bytes)"
    if kind == "delete":
        target.unlink()
        return what
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(size)
            data[at] ^= 1 << rng.randrange(8)
    elif kind in ("zero", "random"):
        length = rng.choice([1, 16, 512, 4096, size // 2])
        at = rng.randrange(max(1, size - length))
        fill = bytes(length) if kind == "zero" else rng.randbytes(length)
        data[at : at + length] = fill[: len(data[at : at + length])]
        what += f" at {at}+{length}"
    else:
        keep = rng.randrange(size)
        data = data[:keep]
        what += f" to {keep}"
    target.write_bytes(bytes(data))
    return what


def test_damage_campaign(world, tmp_path: Path) -> None:
    expected = world[1]
    rng = random.Random("issue-27")
    counts: collections.Counter[str] = collections.Counter()
    internal: list[str] = []
    wrong: list[str] = []
    for trial in range(TRIALS):
        path = fresh(world, tmp_path)
        what = damage(rng, path)
        counts["trials"] += 1
        counts["catalog" if "catalog" in what else "segment"] += 1
        try:
            outcome = _trial(path, expected)
        except TimeSeriesError as exc:  # a clean refusal, where the trial expects none
            internal.append(f"trial {trial} ({what}): unexpected {type(exc).__name__}: {exc}")
            continue
        except Exception as exc:
            internal.append(f"trial {trial} ({what}): {type(exc).__name__}: {exc}")
            continue
        counts.update(outcome["counts"])
        wrong.extend(f"trial {trial} ({what}): {w}" for w in outcome["wrong"])
    counts["internal errors"] = len(internal)
    counts["wrong values"] = len(wrong)
    print("\ndamage campaign:", dict(sorted(counts.items())))
    assert not internal, internal[:5]
    assert not wrong, wrong[:5]
    assert counts["damage found"] > TRIALS // 3  # the campaign does damage stores
    assert counts["repairs verified"] == (
        counts["damage found"] - counts["refused on open"] - counts["catalog repair refused"]
    )


def _trial(path: Path, expected: dict[int, tuple[bytes, str]]) -> dict:
    """One damaged store through open, diagnose, reads, repair and diagnose again."""
    counts: collections.Counter[str] = collections.Counter()
    wrong: list[str] = []
    try:
        s = Store.open(path, read_only=True)
    except TimeSeriesError:  # the catalog's header (or every segment) is gone: refused
        counts["damage found"] += 1
        counts["refused on open"] += 1
        return {"counts": counts, "wrong": wrong}
    with s:
        found = s.diagnose()
        lost = {x.id for x in found.series_lost}
        got = readback(s, expected) if found.catalog["ok"] else {}
    for i, value in got.items():
        if isinstance(value, TimeSeriesError):
            if i not in lost:
                wrong.append(f"id {i} fails to read ({value}) but diagnose does not list it")
            elif not isinstance(value, DamagedStoreError) or f"id {i})" not in str(value):
                wrong.append(f"id {i}: the read's error does not name it: {value}")
        elif value != expected[i][0]:
            wrong.append(f"id {i} read back a wrong value")
        elif i in lost:
            wrong.append(f"id {i} reads back but diagnose lists it as lost")
    if found.ok:
        counts["no effect"] += 1
        return {"counts": counts, "wrong": wrong}
    counts["damage found"] += 1
    counts["catalog damage found" if not found.catalog["ok"] else "segment damage found"] += 1
    counts["series lost"] += len(lost)
    try:
        try:
            w = Store.open(path)
        except CatalogDamagedError as exc:
            # A catalog no writable open reads: the refusal names Store.repair_catalog,
            # which rebuilds it from the records the segments keep.
            assert "Store.repair_catalog(" in str(exc), exc
            report = Store.repair_catalog(path)
            w = Store.open(path)
        else:
            report = w.repair()
        with w:
            after = w.diagnose()
            gone = {x["id"] for x in report["series_lost"]}
            survivors = [i for i in expected if i not in gone]
            back = readback(w, survivors)
    except TimeSeriesError as exc:
        if found.catalog["ok"]:
            raise
        counts["catalog repair refused"] += 1
        assert "beyond what repair rebuilds" in str(exc), exc
        return {"counts": counts, "wrong": wrong}
    if not after.ok:
        wrong.append(f"diagnose after repair: {after.errors[:3]}")
    for i in survivors:
        if back[i] != expected[i][0]:
            wrong.append(f"id {i} lost by repair or read back wrong: {back[i]!r:.200}")
    # With a sound catalog, repair loses exactly what diagnose listed. With a damaged one
    # diagnose's queries may read a damaged index (rows hidden, or values that are not
    # the table's); repair rebuilds the indexes first, so its list is the one that holds.
    if found.catalog["ok"] and gone != lost:
        wrong.append(f"repair lost {sorted(gone)}, diagnose listed {sorted(lost)}")
    counts["repairs verified"] += after.ok
    return {"counts": counts, "wrong": wrong}


# ---------------------------------------------------------------------------- checksums


def test_slot_sums_never_match_zeros_and_see_two_flips_of_one_bit() -> None:
    from infrastore_sqlite.store.arrays import slot_sums

    rows = np.random.default_rng(5).random((3, 16))
    sums = slot_sums(rows, np.arange(3))
    assert (slot_sums(np.zeros_like(rows), np.arange(3)) != 0).all()  # zeroed sums differ
    assert (slot_sums(np.zeros_like(rows), np.arange(3)) != sums).any(axis=1).all()
    assert (slot_sums(rows, np.arange(1, 4)) != sums).any(axis=1).all()  # another slot's
    words = rows.copy().view("<u4")
    words[0, 2] ^= 1 << 31
    words[0, 5] ^= 1 << 31  # the same bit in two words: the plain sum may not see it
    assert (slot_sums(words.view(rows.dtype), np.arange(3)) != sums).any(axis=1).tolist() == [
        True,
        False,
        False,
    ]


@pytest.mark.parametrize("drop", ["sums", "damaged sums"])
def test_reads_without_or_with_damaged_checksums(world, tmp_path: Path, drop: str) -> None:
    """A segment without checksums (written before them) is checked by the content hash;
    a damaged checksum over a sound array does not fail the read (the hash decides)."""
    import h5py

    path = fresh(world, tmp_path)
    victim = 14
    seg = segment_of(path, victim)
    with h5py.File(seg, "r+") as h5:
        if drop == "sums":
            h5.move("sums", "set_aside")  # as a segment written before checksums
        else:
            for ds in h5["sums"].values():
                ds[...] = 0
    with Store.open(path, read_only=True) as s:
        assert s.read_by_id(victim).data.tobytes() == world[1][victim][0]
        assert s.diagnose().ok
    if drop == "sums":  # and a changed value there is still caught
        at = value_offset(path, victim)
        data = bytearray(seg.read_bytes())
        data[at] ^= 0x01
        seg.write_bytes(data)
        with Store.open(path, read_only=True) as s, pytest.raises(DamagedStoreError):
            s.read_by_id(victim)


def test_compact_does_not_copy_a_damaged_array_under_fresh_checksums(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    victim = 20
    seg = segment_of(path, victim)
    at = value_offset(path, victim)
    data = bytearray(seg.read_bytes())
    data[at + 3] ^= 0x04
    seg.write_bytes(data)
    with Store.open(path) as s:
        with pytest.raises(DamagedStoreError, match=f"id {victim}\\)"):
            s.compact()
        assert len(segment_files(path)) == SEGMENTS  # nothing rewritten
        assert [x.id for x in s.diagnose().series_lost] == [victim]
        s.repair()
        s.compact()
        assert s.verify_integrity() == {"ok": True, "errors": []}
        assert len(segment_files(path)) == 1


def test_verify_names_a_series_whose_first_instant_no_read_can_render(tmp_path: Path) -> None:
    """An instant outside the years 1 to 9999 (INT64_MAX ms), as an import before the
    interchange refused them could store: a read of the series is refused, and verify
    names it (it said ok), keeping its values."""
    import apsw

    path = tmp_path / "s"
    with Store.create(path) as s:
        t0 = datetime(2024, 1, 1, tzinfo=UTC)
        ids = [
            s.add_time_series(
                k, "Gen", "Component", SingleTimeSeries(t0, "PT1H", [1.0, 2.0], f"s{k}")
            )
            for k in (1, 2)
        ]
    conn = apsw.Connection(str(path / "catalog.sqlite"))
    conn.execute(
        "UPDATE time_series_associations SET initial_ms = 9223372036854775807 WHERE id = ?",
        (ids[1],),
    )
    conn.close()
    with Store.open(path, read_only=True) as s:
        found = s.verify_integrity()
        assert found["ok"] is False
        (line,) = [e for e in found["errors"] if "outside the years 1 to 9999" in e]
        assert f"series 's2' (owner 2, id {ids[1]})" in line and "9223372036854775807 ms" in line
        assert s.read_by_ids([ids[0]])[0].data.tolist() == [1.0, 2.0]
