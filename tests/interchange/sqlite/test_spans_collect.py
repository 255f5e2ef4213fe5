"""The SQLite reader's spans are collected into columns made to the arrays table's count
and filled in place (issue 37, Must 3): a hint too small, too large or missing gives the
same spans, forecast issue times included; and filling in place holds the columns once."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from infrastore_sqlite.interchange.sqlite.reader import lookup
from infrastore_sqlite.interchange.sqlite.reader.lookup import ArraySpans


def _rows(n: int) -> list[tuple[int, ...]]:
    # (id, has, lo, hi, ok, timestamp, issue_time); every seventh array has no rows and
    # every fifth a first row whose coordinates are not integers.
    return [
        (
            aid,
            int(aid % 7 != 0),
            10 * aid,
            10 * aid + 9,
            int(aid % 7 != 0 and aid % 5 != 0),
            1000 + aid,
            -aid,
        )
        for aid in range(1, n + 1)
    ]


@pytest.mark.parametrize("forecast", [False, True])
@pytest.mark.parametrize("hint", [0, 1, 999, 1000, 1001, 5000])
def test_any_hint_gives_the_same_spans(
    hint: int, forecast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lookup, "_SPAN_CHUNK", 64)  # many chunks, growth mid-way
    rows = _rows(1000)
    spans = ArraySpans.collect(rows, forecast=forecast, size_hint=hint)
    for aid, has, lo, hi, ok, t0, i0 in [*rows, (0, 0, 0, 0, 0, 0, 0), (1001, 0, 0, 0, 0, 0, 0)]:
        assert spans.get(aid) == ((lo, hi) if has else None)
        assert spans.head(aid) == ((t0, i0 if forecast else None) if ok else None)
    asked = np.arange(-2, 1004, dtype=np.int64)
    found, lo_col, _hi, _t0, _ok = spans.columns(asked)
    assert found.tolist() == [1 <= a <= 1000 and a % 7 != 0 for a in asked.tolist()]
    assert lo_col.tolist() == [
        10 * a if f else 0 for a, f in zip(asked.tolist(), found.tolist(), strict=True)
    ]


def test_the_columns_are_held_once_while_collected() -> None:
    n = 200_000
    rows = np.zeros((n, 7), dtype=np.int64)
    rows[:, 0] = np.arange(1, n + 1)
    rows[:, 1] = rows[:, 4] = 1
    rows[:, 2] = rows[:, 0] * 10
    rows[:, 3] = rows[:, 2] + 9
    as_tuples = list(map(tuple, rows.tolist()))
    del rows
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        spans = ArraySpans.collect(iter(as_tuples), forecast=False, size_hint=n)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert spans.get(n) == (10 * n, 10 * n + 9)
    # Four int64 columns and two flags (ids included, let go once found a range): 34 B
    # an array, plus one chunk in flight; chunks concatenated held ~112 B an array.
    assert peak / n < 50, f"{peak / n:.0f} bytes an array while collecting"
