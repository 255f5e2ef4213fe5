"""Issue 33's damage campaign for files and rows in the wrong place, and for a lost or
stale catalog (Musts 3, 4, 7): each kind of damage done to copies of the damage tests'
store, seeded, several trials each.

After each trial: no internal error (every failure a ``TimeSeriesError``); no wrong value
(each series reads back exact, or fails naming itself); ``repair --dry-run`` changes no
byte; ``repair`` (``Store.repair``, or ``Store.repair_catalog`` for a catalog that does
not open) leaves a store ``diagnose`` passes, in which every series whose array is intact
is back, with its id, values exact. The table is printed (``pytest -s``) and quoted in
docs/durability.md.
"""

from __future__ import annotations

import collections
import contextlib
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from damaged_store import T0, build_world, flipped, segment_files

from infrastore_sqlite import SingleTimeSeries, Store, TimeSeriesError
from infrastore_sqlite.errors import DamagedStoreError
from infrastore_sqlite.store.repair import catalog_unusable

TRIALS_PER_KIND = 4


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("campaign33")
    path = d / "world.h5"
    expected = build_world(path)
    # an older copy of the catalog, from before the last two transactions
    shutil.copyfile(path / "catalog.sqlite", d / "older.sqlite")
    with Store.open(path) as s:  # a removal and a late add: records of every kind
        s.remove_by_ids([2])
        late = SingleTimeSeries(T0, "PT1H", np.arange(30.0), "late")
        sid = s.add_time_series(7, "Gen", "Component", late)
    del expected[2]
    expected[sid] = (late.data.tobytes(), "float64")
    other = d / "other.h5"
    build_world(other)
    return path, expected, other


def _snapshot(path: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _seg_of(path: Path, sid: int) -> str:
    with Store.open(path, read_only=True) as s:
        return s._catalog.scalar(
            "SELECT a.segment FROM arrays a JOIN time_series_associations t ON a.id = "
            "t.data_id AND a.kind = 'data' WHERE t.id = ?",
            (sid,),
        )


# Each kind: damage(rng, path, worlds) -> ids whose arrays the damage destroyed (their
# series may be lost by repair; every other series must come back), or that a lost
# commit removed.
def swap(rng, path, _w):
    a, b = rng.sample(segment_files(path), 2)
    tmp = a.with_name("x")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)
    return set()


def copy_over_sibling(rng, path, _w):
    a, b = rng.sample(segment_files(path), 2)
    lost = _ids_with_data_in(path, b.name)
    shutil.copyfile(a, b)
    return lost


def rename(rng, path, _w):
    a = rng.choice(segment_files(path))
    a.rename(a.with_name("renamed-" + a.name))
    return set()


def from_another_store(rng, path, w):
    victim = rng.choice(segment_files(path))
    lost = _ids_with_data_in(path, victim.name)
    shutil.copyfile(rng.choice(segment_files(w[2])), victim)
    return lost


def slot_flip(rng, path, w):
    with Store.open(path) as s:
        rows = s._catalog.execute(
            "SELECT a.hash, a.slot FROM arrays a WHERE (SELECT count(*) FROM arrays b WHERE "
            "b.pool = a.pool AND b.segment = a.segment) > 1 AND a.pool != ''"
        ).fetchall()
        h, slot = rng.choice(rows)
        s._catalog.execute("UPDATE arrays SET slot = ? WHERE hash = ?", (slot ^ 1, h))
    return set()


def segment_name_flip(rng, path, _w):
    victim = rng.choice(segment_files(path)).name
    at = rng.randrange(len(victim) - 3)
    wrong = victim[:at] + ("0" if victim[at] != "0" else "1") + victim[at + 1 :]
    with Store.open(path) as s:
        s._catalog.execute("UPDATE arrays SET segment = ? WHERE segment = ?", (wrong, victim))
    return set()


def _row_damage(rng, path, column: str) -> None:
    """One bit of one row's field flipped, past the store's write path (as on disk)."""
    with Store.open(path) as s:
        sid = rng.choice(
            [r[0] for r in s._catalog.execute("SELECT id FROM time_series_associations")]
        )
        value = s._catalog.scalar(
            f"SELECT {column} FROM time_series_associations WHERE id = ?", (sid,)
        )
        new = flipped(value, rng)
        s._catalog.conn.execute(
            f"UPDATE time_series_associations SET {column} = ? WHERE id = ?", (new, sid)
        )


def row_name_flip(rng, path, _w):
    _row_damage(rng, path, "name")
    return set()


def row_hash_flip(rng, path, _w):
    _row_damage(rng, path, "data_id")
    return set()


def row_owner_type_flip(rng, path, _w):
    _row_damage(rng, path, "owner_type")
    return set()


def row_features_hash_flip(rng, path, _w):
    _row_damage(rng, path, "features_hash")
    return set()


def row_check_flip(rng, path, _w):
    """One bit of one row's checksum flipped: its fields are intact."""
    with Store.open(path) as s:
        sid = rng.choice(
            [r[0] for r in s._catalog.execute("SELECT id FROM time_series_associations")]
        )
        s._catalog.conn.execute(
            # SQLite has no XOR: (a | b) - (a & b) is one.
            "UPDATE time_series_associations SET row_check = (row_check | ?1) - "
            "(row_check & ?1) WHERE id = ?2",
            (1 << rng.randrange(32), sid),
        )
    return set()


def catalog_deleted(_rng, path, _w):
    (path / "catalog.sqlite").unlink()
    return set()


def catalog_truncated(_rng, path, _w):
    (path / "catalog.sqlite").write_bytes(b"")
    return set()


def older_catalog_restored(_rng, path, w):
    shutil.copyfile(w[0].parent / "older.sqlite", path / "catalog.sqlite")
    for side in ("-wal", "-shm"):
        (path / f"catalog.sqlite{side}").unlink(missing_ok=True)
    return set()


def wal_lost_after_a_kill(rng, path, _w):
    """The last commit only in the -wal, and the -wal lost: the catalog file as it was
    while the writer was open (the writer's removal of one series is what is lost)."""
    keep = path.parent / "main-only.sqlite"
    with Store.open(path) as s:
        s._catalog.execute("PRAGMA wal_autocheckpoint=0")
        gone = rng.choice([1, 3, 4])
        s.remove_by_ids([gone])
        shutil.copyfile(path / "catalog.sqlite", keep)
    shutil.copyfile(keep, path / "catalog.sqlite")
    keep.unlink()
    return {gone}  # removed by the lost commit: repair must bring the removal back


def table_page_zeroed(rng, path, _w):
    with Store.open(path, read_only=True) as s:
        root = s._catalog.scalar(
            "SELECT rootpage FROM sqlite_master WHERE name = 'time_series_associations'"
        )
        page = s._catalog.scalar("PRAGMA page_size")
    cat = path / "catalog.sqlite"
    data = bytearray(cat.read_bytes())
    data[(root - 1) * page : root * page] = bytes(page)
    cat.write_bytes(bytes(data))
    return set()


def _ids_with_data_in(path: Path, segment: str) -> set[int]:
    with Store.open(path, read_only=True) as s:
        return {
            r[0]
            for r in s._catalog.execute(
                "SELECT DISTINCT t.id FROM time_series_associations t JOIN arrays a ON "
                "(a.id = t.data_id AND a.kind = 'data') OR (a.id = t.timestamps_id "
                "AND a.kind = 'timestamps') WHERE a.segment = ?",
                (segment,),
            )
        }


KINDS = [
    swap,
    copy_over_sibling,
    rename,
    from_another_store,
    slot_flip,
    segment_name_flip,
    row_name_flip,
    row_hash_flip,
    row_owner_type_flip,
    row_features_hash_flip,
    row_check_flip,
    catalog_deleted,
    catalog_truncated,
    older_catalog_restored,
    wal_lost_after_a_kill,
    table_page_zeroed,
]


def _identity(row) -> tuple:
    """What a catalog row says a series is: who owns it, its name, kind and hashes."""
    return (
        row.id,
        row.owner_id,
        row.owner_type,
        row.owner_category,
        row.type,
        row.name,
        row.data_hash,
        row.timestamps_hash,
        row.features_hash,
    )


def _truth(path: Path) -> dict[int, tuple]:
    with Store.open(path, read_only=True) as s:
        return {r.id: _identity(r) for r in s.iter_select_rows()}


def _reads(path: Path, expected, truth) -> tuple[int, int, int]:
    """(wrong values, wrong rows, internal errors) of reading every series before
    repair: a wrong row is one a read returned whose identity is not the one written."""
    wrong = wrong_rows = internal = 0
    try:
        s = Store.open(path, read_only=True)
    except TimeSeriesError:
        return 0, 0, 0  # refused on open, in one line: no value read
    except Exception:
        return 0, 0, 1
    with s:
        for sid, (data, _dtype) in expected.items():
            try:
                got = np.asarray(s.read_by_id(sid).data).tobytes()
            except (DamagedStoreError, TimeSeriesError):
                pass
            except Exception:
                internal += 1
            else:
                wrong += got != data
            try:  # the row alone (list_metadata's, export's path), not only with its data
                (row,) = s.rows_by_ids([sid])
            except (DamagedStoreError, TimeSeriesError):
                continue
            except Exception:
                internal += 1
                continue
            wrong_rows += _identity(row) != truth[sid]
    return wrong, wrong_rows, internal


def test_identity_and_rebuild_campaign(worlds, tmp_path: Path) -> None:
    path0, expected, _other = worlds
    truth = _truth(path0)
    assert set(truth) == set(expected)
    rng = random.Random("issue-33")
    table: dict[str, collections.Counter] = {}
    refusals: list[tuple[str, str]] = []
    for kind in KINDS:
        counts = table.setdefault(kind.__name__, collections.Counter())
        for trial in range(TRIALS_PER_KIND):
            path = tmp_path / f"{kind.__name__}-{trial}" / "s.h5"
            shutil.copytree(path0, path)
            destroyed = kind(rng, path, worlds)
            counts["trials"] += 1
            wrong, wrong_rows, internal = _reads(path, expected, truth)
            counts["wrong values"] += wrong
            counts["wrong rows read"] += wrong_rows
            counts["internal errors"] += internal
            if kind.__name__.startswith("row_"):  # verify names the damaged row
                with Store.open(path, read_only=True) as s:
                    found = s.diagnose()
                counts["damaged rows named by verify"] += any(
                    "checksum" in e or "differ from the transaction records" in e
                    for e in found.errors
                )
            before = _snapshot(path)
            try:
                if catalog_unusable(path):
                    Store.repair_catalog(path, dry_run=True)
                else:
                    with Store.open(path, read_only=True) as s:
                        s.repair(dry_run=True)
            except TimeSeriesError:
                pass
            except Exception:
                counts["internal errors"] += 1
            dry_changed = {k: v for k, v in _snapshot(path).items() if before.get(k) != v}
            dry_changed = {k for k in dry_changed if not k.endswith(("-wal", "-shm"))}
            counts["dry runs that changed a byte"] += bool(dry_changed)
            try:
                if catalog_unusable(path):
                    Store.repair_catalog(path)
                else:
                    with Store.open(path) as s:
                        s.repair()
                with Store.open(path, read_only=True) as s:
                    ok = s.diagnose().ok
                    back = {}
                    rows_after = {}
                    for sid in expected:
                        with contextlib.suppress(TimeSeriesError):
                            back[sid] = np.asarray(s.read_by_id(sid).data).tobytes()
                            rows_after[sid] = _identity(s.rows_by_ids([sid])[0])
            except TimeSeriesError as exc:
                counts["repairs refused"] += 1
                refusals.append((kind.__name__, str(exc)))
                continue
            except Exception as exc:
                counts["internal errors"] += 1
                print(f"{kind.__name__} {trial}: {type(exc).__name__}: {exc}")
                continue
            counts["verify passes after repair"] += ok
            for sid, (data, _dtype) in expected.items():
                if sid in back:
                    counts["wrong values"] += back[sid] != data
                    counts["wrong rows read"] += rows_after[sid] != truth[sid]
                    counts["series back"] += 1
                elif sid in destroyed:
                    counts["series destroyed (or removed by a lost commit)"] += 1
                else:
                    counts["intact series lost by repair"] += 1
    print("\nissue 33 campaign (kind: counts):")
    for name, counts in table.items():
        print(f"  {name}: {dict(sorted(counts.items()))}")
    total = sum(table.values(), collections.Counter())
    print("  total:", dict(sorted(total.items())))
    assert total["internal errors"] == 0
    assert total["wrong values"] == 0
    assert total["wrong rows read"] == 0
    row_kinds = [k for k in table if k.startswith("row_")]
    assert sum(table[k]["damaged rows named by verify"] for k in row_kinds) == (
        TRIALS_PER_KIND * len(row_kinds)
    )
    assert total["dry runs that changed a byte"] == 0
    assert total["intact series lost by repair"] == 0
    # A segment of another store is refused on repair in one line naming the file (not
    # yet set aside: that is the other half of issue 33, Must 5); nothing else is.
    assert {k for k, _ in refusals} <= {"from_another_store"}, refusals
    assert all("does not belong to this store" in m and "\n" not in m for _, m in refusals)
    assert total["verify passes after repair"] == total["trials"] - len(refusals)
