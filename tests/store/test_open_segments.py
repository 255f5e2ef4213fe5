"""A store holds at most a few segments open for reading, whatever reads them.

Each open segment costs HDF5 most of a megabyte; an export reads every segment of the
store in each batch, so without a cap the open files (and the memory) grow with the store
(issue 37, Must 3). The cap is made small here so that a store of a few segments exceeds
it: every read must still give back what was stored, with never more files open than
the cap.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from segmented_store import ADDS, build_segmented, check_every_series, check_imported

import infrastore_sqlite as I
from infrastore_sqlite.store import segments

CAP = 2


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return build_segmented(tmp_path / "s.h5")


@pytest.fixture
def most_open(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The cap lowered to CAP; how many segments were open after each reader asked."""
    monkeypatch.setattr(segments, "_MAX_OPEN_READERS", CAP)
    seen: list[int] = []
    real = segments.Segments.reader

    def reader(self, name):
        f = real(self, name)
        seen.append(len(self._readers))
        return f

    monkeypatch.setattr(segments.Segments, "reader", reader)
    return seen


def test_the_store_has_more_segments_than_the_cap(store_path: Path) -> None:
    names = [p for p in (store_path / segments.SEGMENT_DIR).iterdir() if p.suffix == ".h5"]
    assert len(names) == ADDS > CAP


def test_reads_keep_at_most_the_cap_open(store_path: Path, most_open: list[int]) -> None:
    with I.Store.open(store_path, read_only=True) as store:
        check_every_series(store)
        assert store._segments._readers  # something was read through the open files
    assert most_open and max(most_open) == CAP  # the cap was reached, never passed


@pytest.mark.parametrize("container", ["sqlite", "parquet"])
def test_exports_keep_at_most_the_cap_open(
    store_path: Path, tmp_path: Path, most_open: list[int], container: str
) -> None:
    out = tmp_path / f"out.{container}"
    with I.Store.open(store_path, read_only=True) as store:
        if container == "sqlite":
            store.export_sqlite(out)
        else:
            store.export_parquet(out)
    assert most_open and max(most_open) == CAP
    check_imported(out, container, tmp_path)
