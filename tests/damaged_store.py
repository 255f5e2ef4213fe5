"""A small store of five segments for the damage tests (store and CLI), and helpers to
find where a series lives in it."""

from __future__ import annotations

import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from infrastore_sqlite import Deterministic, NonSequentialTimeSeries, SingleTimeSeries, Store

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
SEGMENTS = 5
PER_SEGMENT = 6


def _series(k: int, rng: np.random.Generator):
    """The k-th series of a segment: four SingleTimeSeries, a NonSequential, a forecast."""
    if k < 4:
        return SingleTimeSeries(T0, "PT1H", rng.random(48 + 8 * k), f"load{k}")
    if k == 4:
        times = [T0 + i * 3 * H for i in range(20)]
        return NonSequentialTimeSeries(times, rng.integers(0, 1000, 20), "events")
    return Deterministic(T0, "PT1H", "PT6H", "PT3H", 4, rng.random((6, 4)), "forecast")


def build_world(path: Path) -> dict[int, tuple[bytes, str]]:
    """A store of ``SEGMENTS`` segments (one transaction each); each id's data bytes and dtype."""
    rng = np.random.default_rng(27)
    expected: dict[int, tuple[bytes, str]] = {}
    with Store.create(path) as s:
        for seg in range(SEGMENTS):
            with s.transaction():
                for k in range(PER_SEGMENT):
                    series = _series(k, rng)
                    i = s.add_time_series(seg * 100 + k, "Gen", "Component", series)
                    expected[i] = (np.asarray(series.data).tobytes(), str(series.data.dtype))
    return expected


#: A world built once by :func:`build_world` and kept (``python tests/damaged_store.py``
#: writes it again): the random campaign (``test_damage.py``) damages bytes at seeded
#: offsets, and a world built afresh holds other bytes there on every run (segment names,
#: generation and records are random or timed), so the same seed hit other damage.
WORLD_DATA = Path(__file__).resolve().parent / "data" / "damage_world"


def world_expected() -> dict[int, tuple[bytes, str]]:
    """What :func:`build_world` returns, without a store: ids 1, 2, … in build order."""
    rng = np.random.default_rng(27)
    series = [_series(k, rng) for _ in range(SEGMENTS) for k in range(PER_SEGMENT)]
    return {i: (np.asarray(s.data).tobytes(), str(s.data.dtype)) for i, s in enumerate(series, 1)}


def fresh(world, tmp_path: Path, name: str = "s.h5") -> Path:
    target = tmp_path / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(world[0], target)
    return target


def segment_files(path: Path) -> list[Path]:
    return sorted((path / "segments").iterdir())


def segment_of(path: Path, series_id: int) -> Path:
    with Store.open(path, read_only=True) as s:
        (name,) = s._catalog.execute(
            "SELECT a.segment FROM arrays a JOIN time_series_associations t "
            "ON a.id = t.data_id AND a.kind = 'data' WHERE t.id = ?",
            (series_id,),
        ).fetchone()
    return path / "segments" / name


if __name__ == "__main__":
    import sys

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else WORLD_DATA
    shutil.rmtree(target, ignore_errors=True)
    assert build_world(target) == world_expected()
    print(f"wrote {target}")


def flipped(value: object, rng: random.Random) -> object:
    """A catalog cell with one low bit of one byte flipped (of an integer such as an
    array id, of the UTF-8 of a text, of a blob's bytes), as a disk or a copy would."""
    if isinstance(value, int):  # an array id (schema step 0004)
        return value ^ (1 << rng.randrange(7))
    raw = bytearray(value.encode() if isinstance(value, str) else value)
    raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(7)
    return raw.decode() if isinstance(value, str) else bytes(raw)
