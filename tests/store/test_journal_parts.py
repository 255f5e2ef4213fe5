"""A transaction's record held in bounded memory (issue 37, Must 3).

The record of a bulk add keeps ~34 bytes a series (the raw data hashes do not compress)
until its transaction commits: 10 MB for an import of 300,000 series, then a copy of it
joined into one payload. Past ``journal.HELD_PART_BYTES`` its parts go to an unnamed
temporary file and are written into the segment a piece at a time. These tests prove
the record so written is the same record, rebuilds the catalog, and that a failure to
set the parts aside fails the transaction, naming the directory, with the store as it was.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import h5py
import numpy as np
import pytest

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.errors import StorageError
from infrastore_sqlite.store import journal
from infrastore_sqlite.store.journal import Parts, decode, record_rows, records_of

T0 = datetime(2024, 1, 1, tzinfo=UTC)
N = 300


def _items(n: int, seed: int = 7, prefix: str = "s") -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "owner_id": k + 1,
            "owner_type": "Gen",
            "owner_category": "Component",
            "time_series": SingleTimeSeries(T0, "PT1H", rng.random(6), f"{prefix}{k}"),
            "features": {"k": k % 3},
        }
        for k in range(n)
    ]


def _records(path: Path) -> list[dict]:
    docs = []
    for seg in sorted((path / "segments").glob("*.h5")):
        with h5py.File(seg, "r") as h5:
            docs.extend(decode(p) for _s, _p, p in records_of(h5))
    return sorted(docs, key=lambda d: d["seq"])


def _contents(path: Path) -> list[tuple]:
    with Store.open(path, read_only=True) as s:
        return [
            (r.id, r.name, r.features_hash, np.asarray(s.read_by_id(r.id).data).tobytes())
            for r in s.select_rows()
        ]


def test_parts_past_the_limit_go_to_a_file_and_come_back_in_order() -> None:
    parts = Parts(held_bytes=100)
    chunks = [bytes([k]) * (30 + k) for k in range(10)]
    for k, chunk in enumerate(chunks):
        parts.append(chunk)
        assert parts.in_memory == (sum(map(len, chunks[: k + 1])) <= 100)
    assert parts.count == 10 and parts.nbytes == sum(map(len, chunks))
    pieces = list(parts.pieces(size=64))
    assert max(map(len, pieces)) <= 64
    assert b"".join(pieces) == b"".join(chunks)
    with pytest.raises(ValueError, match="pieces"):
        parts.joined()
    parts.close()


def test_a_record_set_aside_in_a_file_is_the_same_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.create(tmp_path / "held.h5") as s:
        s.add_time_series_bulk(_items(N))
    monkeypatch.setattr(journal, "HELD_PART_BYTES", 256)
    spilled: list[Parts] = []
    original = Parts.append

    def watched(self: Parts, part: bytes) -> None:
        original(self, part)
        if not self.in_memory:
            spilled.append(self)

    monkeypatch.setattr(Parts, "append", watched)
    with Store.create(tmp_path / "spilled.h5") as s:
        s.add_time_series_bulk(_items(N))
    assert spilled, "the parts never left memory: the test proves nothing"
    held, written = _records(tmp_path / "held.h5"), _records(tmp_path / "spilled.h5")
    assert len(held) == len(written) == 1
    assert record_rows(held[0]) == record_rows(written[0])
    assert len(record_rows(written[0])) == N


def test_a_catalog_is_rebuilt_from_a_record_set_aside_in_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "HELD_PART_BYTES", 256)
    path = tmp_path / "s.h5"
    with Store.create(path) as s:
        s.add_time_series_bulk(_items(N))
        s.add_time_series_bulk(_items(N // 3, seed=8, prefix="t"))
    before = _contents(path)
    (path / "catalog.sqlite").unlink()
    report = Store.repair_catalog(path)
    assert report["series_kept"] == len(before) == N + N // 3 and not report["series_lost"]
    assert _contents(path) == before


def test_parts_that_cannot_be_set_aside_fail_the_add_and_leave_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.h5"
    with Store.create(path) as s:
        s.add_time_series_bulk(_items(10))
    before = _contents(path)
    missing = tmp_path / "no such directory"
    monkeypatch.setattr(journal, "HELD_PART_BYTES", 256)
    monkeypatch.setattr(tempfile, "tempdir", str(missing))
    with Store.open(path) as s, pytest.raises(StorageError) as err:
        s.add_time_series_bulk(_items(N, seed=9, prefix="t"))
    assert str(missing) in str(err.value) and "TMPDIR" in str(err.value)
    monkeypatch.undo()
    assert _contents(path) == before
    with Store.open(path) as s:
        assert s.diagnose().ok
