"""The shape texts of a prepared row (``element_shape``, ``array_shape``) come from a
cache keyed by the array's shape (``prepare._SHAPE_TEXTS``): each row still gets its own
array's shapes, whatever the cache held before or however often it was emptied."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import orjson
import pytest

from infrastore_sqlite import SingleTimeSeries
from infrastore_sqlite.store import prepare

T0 = datetime(2024, 7, 1, tzinfo=UTC)


def _item(values: np.ndarray) -> dict:
    return {
        "owner_id": 1,
        "owner_type": "PowerLoad",
        "owner_category": "Component",
        "time_series": SingleTimeSeries(T0, "PT1H", values, f"s{values.shape}"),
    }


def _expected(shape: tuple[int, ...]) -> tuple[str, str]:
    return orjson.dumps(list(shape[1:])).decode(), orjson.dumps(list(shape)).decode()


SHAPES = [(24,), (24, 3), (48, 3), (24, 3), (5, 2, 2), (0,), (24,)]


def test_each_row_gets_its_own_arrays_shape_texts() -> None:
    items = [_item(np.zeros(s)) for s in SHAPES]
    rows = [p.row for p in prepare.prepare_bulk(items)]
    got = [(r.element_shape, r.array_shape, r.length) for r in rows]
    assert got == [(*_expected(s), s[0]) for s in SHAPES]
    assert all(type(r.length) is int for r in rows)


def test_the_cache_emptied_when_full_still_gives_each_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(prepare, "_SHAPE_TEXTS", {})
    for n in range(1, 1100):  # past the bound: the cache is emptied on the way
        assert prepare._shape_texts((n, 2)) == _expected((n, 2))
    assert len(prepare._SHAPE_TEXTS) <= 1024
    rows = [p.row for p in prepare.prepare_bulk([_item(np.zeros(s)) for s in SHAPES])]
    assert [(r.element_shape, r.array_shape) for r in rows] == [_expected(s) for s in SHAPES]
