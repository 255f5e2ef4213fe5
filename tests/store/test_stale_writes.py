"""A write on a stale catalog (issue 33): an older ``catalog.sqlite`` restored, then
written to, would give the ids the segments' records already gave, and a rebuild could
not tell the two series apart. So the write is refused, naming ``repair``, changing
nothing; after the repair every series is back with its id and the write works."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.errors import DamagedStoreError

T0 = datetime(2024, 1, 1)


def _series(k: int) -> SingleTimeSeries:
    return SingleTimeSeries(T0, "PT1H", np.arange(5.0) + k, f"s{k}")


def _listing(path: Path) -> list[str]:
    return sorted(
        str(p.relative_to(path)) for p in path.rglob("*") if not p.name.endswith(("-wal", "-shm"))
    )


def test_a_write_on_an_older_catalog_restored_is_refused_until_repair(tmp_path: Path) -> None:
    path = tmp_path / "s.h5"
    with Store.create(path) as s:
        for k in range(3):
            s.add_time_series(k, "Gen", "Component", _series(k))
    backup = tmp_path / "backup.sqlite"
    shutil.copy(path / "catalog.sqlite", backup)
    with Store.open(path) as s:
        for k in range(3, 5):
            s.add_time_series(k, "Gen", "Component", _series(k))
        before = {m["id"]: m["name"] for m in s.list_metadata()}
    for suffix in ("-wal", "-shm"):
        (path / f"catalog.sqlite{suffix}").unlink(missing_ok=True)
    shutil.copy(backup, path / "catalog.sqlite")
    listing = _listing(path)
    with Store.open(path) as s:
        with pytest.raises(DamagedStoreError, match=r"stale.*Store\.repair\(\)"):
            s.add_time_series(9, "Gen", "Component", _series(9))
        assert _listing(path) == listing  # nothing written, nothing moved
        report = s.repair()
        assert report["catalog_rebuilt"]["from"] == "segments"
        assert {m["id"]: m["name"] for m in s.list_metadata()} == before
        new = s.add_time_series(9, "Gen", "Component", _series(9))
        assert new not in before
        assert s.verify_integrity() == {"ok": True, "errors": []}
        for i, name in before.items():
            k = int(name[1:])
            assert np.array_equal(np.asarray(s.read_by_id(i).data), _series(k).data)
