"""Every segment knows whose it is, and every slot's checksum its array (issue 33, Must 4).

A segment records its own name and the store's generation; a read checks both before it
reads, so a file swapped with another, copied over a sibling, renamed or taken from
another store is refused naming the series and the file, never read as someone else's
data. A slot's checksums are bound to its array's key, so a wrong ``slot`` in the
catalog fails the read instead of returning another array's values. A store written by
the release before (``tests/data/release_store``: segments without names, keys or bound
checksums) opens and reads as before.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from damaged_store import T0, build_world, fresh, segment_files

from infrastore_sqlite import SingleTimeSeries, Store, TimeSeriesError
from infrastore_sqlite.errors import DamagedStoreError

RELEASE_STORE = Path(__file__).resolve().parents[1] / "data" / "release_store"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, tuple[bytes, str]]]:
    path = tmp_path_factory.mktemp("identity") / "world.h5"
    return path, build_world(path)


def _ids_in(path: Path, segment: Path) -> list[int]:
    with Store.open(path, read_only=True) as s:
        return [
            r[0]
            for r in s._catalog.execute(
                "SELECT DISTINCT t.id FROM time_series_associations t JOIN arrays a "
                "ON (a.id = t.data_id AND a.kind = 'data') OR (a.id = t.timestamps_id "
                "AND a.kind = 'timestamps') WHERE a.segment = ? ORDER BY t.id",
                (segment.name,),
            )
        ]


def _outcomes(path: Path, expected: dict[int, tuple[bytes, str]]) -> dict[int, object]:
    """Each id: "ok" (read back exact), "wrong" (another value) or the refusal."""
    # (a series whose data or time axis is in a file: the time axes the "events" series
    # share are stored once, in the first segment written)
    out: dict[int, object] = {}
    with Store.open(path, read_only=True) as s:
        for i, (data, _dtype) in expected.items():
            try:
                got = np.asarray(s.read_by_id(i).data).tobytes()
            except TimeSeriesError as exc:
                out[i] = exc
                continue
            out[i] = "ok" if got == data else "wrong"
    return out


def _check_refused(outcomes: dict[int, object], victims: set[int], files: set[Path]) -> None:
    for i, got in outcomes.items():
        if i not in victims:
            assert got == "ok", (i, got)
            continue
        assert isinstance(got, DamagedStoreError), (i, got)
        message = str(got)
        assert f"id {i})" in message and "wrong file" in message and "\n" not in message
        assert any(str(f) in message for f in files), message


def test_a_segment_records_its_name_and_its_store(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    with Store.open(path, read_only=True) as s:
        generation = s._segments.generation
    for seg in segment_files(path):
        with h5py.File(seg, "r") as h5:
            assert h5.attrs["segment_name"] == seg.name
            assert h5.attrs["catalog_generation"] == generation
            assert h5.attrs["sums_bound_to_keys"] == 1
            assert set(h5["keys"]) == set(h5["pools"])


def test_swapped_segments_are_refused_never_read(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    a, b = segment_files(path)[:2]
    victims = set(_ids_in(path, a)) | set(_ids_in(path, b))
    swap = a.with_name("swap")
    a.rename(swap)
    b.rename(a)
    swap.rename(b)
    outcomes = _outcomes(path, world[1])
    _check_refused(outcomes, victims, {a, b})
    with Store.open(path, read_only=True) as s:
        found = s.diagnose()
    assert {x.file: x.problem for x in found.segments} == {
        str(a): "wrong file",
        str(b): "wrong file",
    }
    assert {x.id for x in found.series_lost} == victims


def test_a_segment_copied_over_a_sibling_is_refused(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    a, b = segment_files(path)[:2]
    shutil.copyfile(a, b)
    outcomes = _outcomes(path, world[1])
    _check_refused(outcomes, set(_ids_in(path, b)), {b})


def test_a_renamed_segment_is_refused_under_its_new_name(world, tmp_path: Path) -> None:
    """A segment renamed to the name of another (here: the other moved away) is refused;
    the one the catalog names under the old name is missing, which reads as damage."""
    path = fresh(world, tmp_path)
    a, b = segment_files(path)[:2]
    b.rename(tmp_path / "elsewhere.h5")
    a.rename(b)
    outcomes = _outcomes(path, world[1])
    victims = set(_ids_in(path, a)) | set(_ids_in(path, b))
    for i, got in outcomes.items():
        if i in victims:
            assert isinstance(got, DamagedStoreError), (i, got)
        else:
            assert got == "ok"
    assert "wrong file" in str(outcomes[min(_ids_in(path, b))])


def test_a_segment_of_another_store_is_never_read(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    other = tmp_path / "other.h5"
    build_world(other)  # the same series, another store: its values would even match
    victim = segment_files(path)[1]
    shutil.copyfile(segment_files(other)[1], victim)
    with Store.open(path, read_only=True) as s:
        for i in _ids_in(path, victim):
            with pytest.raises(TimeSeriesError) as err:
                s.read_by_id(i)
            assert str(victim) in str(err.value)


def _flip_slot(path: Path, series_id: int) -> tuple[int, int]:
    """Point a series' data array at the neighbouring slot of its pool (one bit of
    ``slot``), as a damaged catalog row would; returns (old slot, new slot)."""
    with Store.open(path) as s:
        h, slot, pool, segment = s._catalog.execute(
            "SELECT a.hash, a.slot, a.pool, a.segment FROM arrays a JOIN "
            "time_series_associations t ON a.id = t.data_id AND a.kind = 'data' "
            "WHERE t.id = ?",
            (series_id,),
        ).fetchone()
        used = {
            r[0]
            for r in s._catalog.execute(
                "SELECT slot FROM arrays WHERE pool = ? AND segment = ?", (pool, segment)
            )
        }
        new = slot ^ 1
        assert new in used  # another array's slot: its checksums match its own bytes
        s._catalog.execute("UPDATE arrays SET slot = ? WHERE hash = ?", (new, h))
    return slot, new


def test_a_wrong_slot_never_returns_another_arrays_values(world, tmp_path: Path) -> None:
    path = fresh(world, tmp_path)
    expected = world[1]
    # Two series of one pool (the same dtype and shape: the forecasts of two segments are
    # in different files; load0 of one segment shares its pool with nothing of its size,
    # so pick a pool with two arrays).
    with Store.open(path, read_only=True) as s:
        sid = s._catalog.scalar(
            "SELECT t.id FROM time_series_associations t JOIN arrays a ON a.id = "
            "t.data_id AND a.kind = 'data' WHERE (SELECT count(*) FROM arrays b WHERE "
            "b.pool = a.pool AND b.segment = a.segment) > 1 ORDER BY t.id LIMIT 1"
        )
    _flip_slot(path, sid)
    outcomes = _outcomes(path, expected)
    assert isinstance(outcomes[sid], DamagedStoreError), outcomes[sid]
    assert f"id {sid})" in str(outcomes[sid])
    assert all(v == "ok" for i, v in outcomes.items() if i != sid)
    with Store.open(path, read_only=True) as s:
        found = s.diagnose()
        assert [x.id for x in found.series_lost] == [sid]
        assert [x.problem for x in found.segments] == ["hash mismatch"]


def test_checksums_are_bound_to_the_key() -> None:
    from infrastore_sqlite.store.arrays import key_seeds, slot_sums

    rows = np.random.default_rng(3).random((2, 8))
    keys = [(bytes(range(32)), "data"), (bytes(range(1, 33)), "data")]
    bound = slot_sums(rows, np.arange(2)) + key_seeds(keys)
    assert (bound != slot_sums(rows, np.arange(2))).all()
    # the same bytes under another key never match
    assert (slot_sums(rows, np.arange(2)) + key_seeds(keys[::-1]) != bound).any(axis=1).all()


def test_a_store_of_the_release_before_opens_and_reads(tmp_path: Path) -> None:
    """Segments without names, keys or bound checksums read as before (checked by their
    checksums and content hashes), and the store takes new writes beside them."""
    path = tmp_path / "store.h5"
    shutil.copytree(RELEASE_STORE / "store.h5", path)
    expected = {
        int(k): bytes.fromhex(v[0])
        for k, v in json.loads((RELEASE_STORE / "expected.json").read_text()).items()
    }
    for seg in segment_files(path):
        with h5py.File(seg, "r") as h5:
            assert "segment_name" not in h5.attrs and "keys" not in h5
    # Kept at schema revision 2: a read-only open is refused (it cannot migrate), so a
    # writable one migrates it first (steps 0003 and 0004).
    with Store.open(path):
        pass
    with Store.open(path, read_only=True) as s:
        for i, data in expected.items():
            assert np.asarray(s.read_by_id(i).data).tobytes() == data
        assert s.diagnose().ok
    with Store.open(path) as s:
        again = SingleTimeSeries(T0, "PT1H", np.frombuffer(expected[1]) + 1, "again")
        new = s.add_time_series(9, "Gen", "Component", again)
        assert np.asarray(s.read_by_id(new).data).tobytes() == again.data.tobytes()
        assert np.asarray(s.read_by_id(1).data).tobytes() == expected[1]
        assert s.diagnose().ok


def test_repair_finds_an_array_whose_slot_the_catalog_lost(world, tmp_path: Path) -> None:
    """A wrong slot fails the read; repair finds the array again by the keys the segment
    records and points the catalog at it: nothing lost, every value exact."""
    path = fresh(world, tmp_path)
    expected = world[1]
    with Store.open(path, read_only=True) as s:
        sid = s._catalog.scalar(
            "SELECT t.id FROM time_series_associations t JOIN arrays a ON a.id = "
            "t.data_id AND a.kind = 'data' WHERE (SELECT count(*) FROM arrays b WHERE "
            "b.pool = a.pool AND b.segment = a.segment) > 1 ORDER BY t.id LIMIT 1"
        )
    _flip_slot(path, sid)
    with Store.open(path) as s:
        report = s.repair()
        assert not report["ok_before"] and report["series_lost"] == []
        assert s.diagnose().ok
    assert all(v == "ok" for v in _outcomes(path, expected).values())


def test_repair_finds_a_segment_whose_name_the_catalog_lost(world, tmp_path: Path) -> None:
    """One flipped character of a segment's name in the catalog's array rows: its arrays
    read as lost (the rows name a file that is not there); repair finds them by the keys
    the file records and keeps every series. (A flip in the ``segments`` row itself
    leaves the file unnamed: the next write sets it aside, and repair looks there too.)"""
    path = fresh(world, tmp_path)
    victim = segment_files(path)[2]
    wrong = ("0" if victim.name[0] != "0" else "1") + victim.name[1:]
    with Store.open(path) as s:
        s._catalog.execute("UPDATE arrays SET segment = ? WHERE segment = ?", (wrong, victim.name))
    with Store.open(path, read_only=True) as s:
        assert not s.diagnose().ok
    with Store.open(path) as s:
        report = s.repair()
        assert report["series_lost"] == [], report
        assert s.diagnose().ok
    assert victim.exists()
    assert all(v == "ok" for v in _outcomes(path, world[1]).values())
