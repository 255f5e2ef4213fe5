"""A segment whose root attribute ``slot_checksum_version`` this release cannot use: reads
fall back to the content hash (tests/store/test_slot_hashes.py); ``verify`` and
``Store.diagnose`` name the file, the value found and what to do, deciding on the
file's own checksums whether the attribute is damaged or a later release's; ``repair``
copies its arrays into a new segment (each checked by its content hash), sets the file
aside and loses no series; ``repair --dry-run`` changes nothing."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner, Result
from damaged_store import segment_of
from jsonschema import Draft202012Validator
from repo_root import REPO_ROOT

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.cli import cli
from infrastore_sqlite.store.arrays import SUMS_FORMAT, SUMS_FORMAT_ATTR
from infrastore_sqlite.store.damage import SUMS_KIND_DAMAGED, SUMS_KIND_UNKNOWN

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _values(k: int) -> np.ndarray:
    return np.arange(48.0) * (k + 1) + k


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, dict[int, np.ndarray]]:
    """Two segments (two adds), three series each, every array distinct."""
    path = tmp_path / "s"
    held: dict[int, np.ndarray] = {}
    with Store.create(path) as s:
        for batch in range(2):
            with s.transaction():  # one segment each
                for k in range(batch * 3, batch * 3 + 3):
                    ts = SingleTimeSeries(T0, "PT1H", _values(k), "load")
                    held[s.add_time_series(100 + k, "Gen", "Component", ts)] = _values(k)
    return path, held


def _set_kind(seg: Path, value: object) -> None:
    with h5py.File(seg, "r+") as h5:
        h5.attrs[SUMS_FORMAT_ATTR] = value


def _scramble_sums(seg: Path) -> None:
    """Rewrite every slot checksum as a kind this release does not know would (a keyed
    BLAKE2 of the row), as a later release's file would hold them."""
    with h5py.File(seg, "r+") as h5:
        for pool in h5["pools"]:
            rows = h5[f"pools/{pool}"][...]
            new = [
                np.frombuffer(hashlib.blake2b(r.tobytes(), digest_size=16).digest(), "<u8")
                for r in rows
            ]
            h5[f"sums/{pool}"][...] = np.stack(new)


def _snapshot(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != "catalog.sqlite-shm"
    }


def _all_read(path: Path, held: dict[int, np.ndarray]) -> None:
    with Store.open(path, read_only=True) as s:
        for sid, want in held.items():
            np.testing.assert_array_equal(s.read_by_id(sid).data, want)


@pytest.mark.parametrize(
    ("value", "shown", "evidence"),
    [
        (99, "99", f"yet its slot checksums are of kind {SUMS_FORMAT}"),
        (SUMS_FORMAT + 1, str(SUMS_FORMAT + 1), f"of kind {SUMS_FORMAT}"),
        ("two", "'two'", "not a kind of slot checksum"),
        (0, "0", "not a kind of slot checksum"),
        (np.float64(2.0), "2.0", "not a kind of slot checksum"),
    ],
)
def test_a_damaged_kind_is_named_with_its_value_and_repair(store, value, shown, evidence) -> None:
    path, held = store
    seg = segment_of(path, 1)
    _set_kind(seg, value)
    _all_read(path, held)  # the arrays still read, checked by their content hash
    with Store.open(path, read_only=True) as s:
        found = s.diagnose()
        result = s.verify_integrity()
    assert not found.ok and not result["ok"]
    assert [(r.file, r.problem, r.arrays, r.arrays_lost) for r in found.segments] == [
        (str(seg), SUMS_KIND_DAMAGED, 3, 0)
    ]
    assert found.series_lost == []
    (line,) = result["errors"]
    assert str(seg) in line and SUMS_FORMAT_ATTR in line and f" is {shown}, " in line
    assert evidence in line and "the attribute is damaged" in line and "run repair" in line
    assert "upgrade" not in line


def test_a_later_kind_says_upgrade_or_repair(store) -> None:
    path, held = store
    seg = segment_of(path, 4)
    _set_kind(seg, 7)
    _scramble_sums(seg)
    _all_read(path, held)
    with Store.open(path, read_only=True) as s:
        found = s.diagnose()
    assert [(r.file, r.problem, r.arrays_lost) for r in found.segments] == [
        (str(seg), SUMS_KIND_UNKNOWN, 0)
    ]
    (line,) = found.errors
    assert str(seg) in line and f"{SUMS_FORMAT_ATTR} is 7" in line
    assert "later release" in line and "pip install --upgrade infrastore-sqlite" in line
    assert "run repair" in line and "damaged" not in line


def test_a_kind_is_damage_when_even_one_slot_matches_a_known_kind(store) -> None:
    """Arrays damaged themselves do not hide the evidence: one slot whose checksum
    matches a known kind shows it is the attribute that changed."""
    path, _held = store
    seg = segment_of(path, 1)
    _set_kind(seg, 9)
    with h5py.File(seg, "r+") as h5:
        pool = next(iter(h5["pools"]))
        h5[f"sums/{pool}"][0] = h5[f"sums/{pool}"][0] + np.uint64(1)  # slot 0's no longer
    with Store.open(path, read_only=True) as s:
        (report,) = s.diagnose().segments
    assert report.problem == SUMS_KIND_DAMAGED and f"of kind {SUMS_FORMAT}" in report.detail


@pytest.mark.parametrize("later", [False, True])
def test_repair_copies_every_array_and_sets_the_file_aside(store, later: bool) -> None:
    path, held = store
    seg = segment_of(path, 1)
    _set_kind(seg, 5 if later else "x")
    if later:
        _scramble_sums(seg)
    with Store.open(path):
        pass  # what a writable open and close do alone (the catalog's -wal)
    before = _snapshot(path)
    with Store.open(path) as s:
        dry = s.repair(dry_run=True)
    assert _snapshot(path) == before  # the dry run changed no byte
    assert dry["set_aside"] == [str(seg)] and dry["series_lost"] == []
    with Store.open(path) as s:
        done = s.repair()
        assert s.diagnose().ok
    assert done["series_lost"] == [] and done["series_kept"] == len(held)
    assert done["arrays_salvaged"] == 3 and not seg.exists()
    assert (Path(done["folder"]) / seg.name).is_file()  # set aside, never deleted
    _all_read(path, held)
    with Store.open(path, read_only=True) as s:
        names = [r[0] for r in s._catalog.execute("SELECT name FROM segments")]
    for name in names:  # the copies carry a kind this release knows
        with h5py.File(path / "segments" / name, "r") as h5:
            assert h5.attrs[SUMS_FORMAT_ATTR] == SUMS_FORMAT


def test_the_cli_names_it_in_one_line_and_its_json_fits_the_schema(store) -> None:
    path, held = store
    seg = segment_of(path, 4)
    _set_kind(seg, 99)
    r = run("--store", str(path), "verify")
    assert r.exit_code == 1 and "Traceback" not in r.output + r.stderr
    named = [line for line in (r.stdout + r.stderr).splitlines() if str(seg) in line]
    assert len(named) == 1 and "99" in named[0] and "repair" in named[0]
    doc = json.loads(run("--store", str(path), "-f", "json", "verify").stdout)
    schema = json.loads((REPO_ROOT / "schemas/cli/verify.json").read_text(encoding="utf-8"))
    Draft202012Validator(schema).validate(doc)
    assert [s["problem"] for s in doc["segments"]] == [SUMS_KIND_DAMAGED]
    fixed = run("--store", str(path), "-y", "repair")
    assert fixed.exit_code == 0, fixed.output
    assert run("--store", str(path), "verify").exit_code == 0
    _all_read(path, held)
