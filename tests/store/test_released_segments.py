"""Segments read straight from their files let their HDF5 handles go (issue 37, Must 3).

An open HDF5 file costs ~0.7 MB whatever is read from it, and an export visits every
segment of the store in each batch. A segment whose pools read through their chunk maps
keeps only its maps, checksums and descriptor once it falls out of the few most recently
used: the memory no longer grows with the number of segments, and nothing is reopened.
The cap is made small here so that a store of a few segments exceeds it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from segmented_store import ADDS, build_segmented, check_every_series, check_imported

import infrastore_sqlite as I
from infrastore_sqlite.errors import StorageError
from infrastore_sqlite.store import arrays, segments

CAP = 2


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return build_segmented(tmp_path / "s.h5")


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The HDF5 cap lowered to CAP; after each reader asked: (open in HDF5, held)."""
    monkeypatch.setattr(segments, "_MAX_HDF5_OPEN", CAP)
    out: list[tuple[int, int]] = []
    real = segments.Segments.reader

    def reader(self, name):
        f = real(self, name)
        out.append((self.hdf5_open(), len(self._readers)))
        return f

    monkeypatch.setattr(segments.Segments, "reader", reader)
    return out


def _segment_files(path: Path) -> list[Path]:
    return sorted(p for p in (path / segments.SEGMENT_DIR).iterdir() if p.suffix == ".h5")


def test_the_store_has_more_segments_than_the_cap(store_path: Path) -> None:
    assert len(_segment_files(store_path)) == ADDS > CAP


def test_reads_hold_every_segment_but_keep_the_cap_open_in_hdf5(
    store_path: Path, seen: list[tuple[int, int]]
) -> None:
    with I.Store.open(store_path, read_only=True) as store:
        check_every_series(store)
        check_every_series(store)  # again: every segment read through its kept maps
    assert max(o for o, _ in seen) <= CAP + 1  # the one asked for, before it is used
    assert max(h for _, h in seen) == ADDS  # held, released: not closed and reopened


@pytest.mark.parametrize("container", ["sqlite", "parquet"])
def test_exports_keep_at_most_the_cap_open_in_hdf5(
    store_path: Path, tmp_path: Path, seen: list[tuple[int, int]], container: str
) -> None:
    opened: list[str] = []
    real_init = arrays.ArrayFile.__init__

    def counting_init(self, path, mode, **kw):
        opened.append(str(path))
        real_init(self, path, mode, **kw)

    out = tmp_path / f"out.{container}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(arrays.ArrayFile, "__init__", counting_init)
        with I.Store.open(store_path, read_only=True) as store:
            if container == "sqlite":
                store.export_sqlite(out)
            else:
                store.export_parquet(out)
    assert seen and max(o for o, _ in seen) <= CAP + 1
    # Each segment opened once: a released one reads through its descriptor.
    assert len(opened) == len(set(opened)) == ADDS
    check_imported(out, container, tmp_path)


def test_deflated_segments_stay_open_and_read(tmp_path: Path, seen: list[tuple[int, int]]) -> None:
    """A pool read through HDF5 (deflated) needs its handle: such a segment is not released."""
    path = build_segmented(tmp_path / "z.h5", compression="deflate")
    with I.Store.open(path, read_only=True) as store:
        check_every_series(store)
        assert store._segments.hdf5_open() == ADDS


def test_a_released_segment_reopens_for_what_needs_hdf5(store_path: Path) -> None:
    with I.Store.open(store_path, read_only=True) as store:
        check_every_series(store)
        name = _segment_files(store_path)[0].name
        f = store._segments.reader(name)
        pool = next(iter(f._maps))
        assert f.h5 and f.hdf5_open  # open again if it was released already
        assert f.release() and not f.hdf5_open
        (row,) = f.read(pool, [0], (slice(0, 3),))  # a part read goes through HDF5
        assert f.hdf5_open and row.shape == (3,)
        assert list(f.pools()) == [pool]


def test_a_released_segment_refuses_another_file_in_its_place(
    store_path: Path, tmp_path: Path
) -> None:
    with I.Store.open(store_path, read_only=True) as store:
        check_every_series(store)
        first, second = _segment_files(store_path)[:2]
        f = store._segments.reader(first.name)
        assert f.h5 and f.hdf5_open  # open again if it was released already
        assert f.release()
        aside = tmp_path / "aside.h5"
        os.replace(first, aside)
        shutil.copyfile(second, first)  # another segment's file under the name
        with pytest.raises(StorageError, match="another file took its place"):
            f.pools()
        # The reads through the kept descriptor still give the file it checked.
        check_every_series(store)
