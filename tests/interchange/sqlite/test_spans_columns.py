"""The SQLite reader's spans of an export's arrays (ids 1..n) hold no id column: the ids
are a range, and a lookup answers as a search in the column does (issue 37, Must 3)."""

from __future__ import annotations

import numpy as np
import pytest

from infrastore_sqlite.interchange.sqlite.reader.lookup import ArraySpans


def _rows(ids: list[int]) -> list[tuple[int, ...]]:
    # (id, has, lo, hi, ok, timestamp, issue_time); array 3 has no rows.
    return [
        (aid, int(aid != 3), 10 * aid, 10 * aid + 9, int(aid != 3), 1000 + aid, 0) for aid in ids
    ]


@pytest.mark.parametrize(
    ("ids", "dense"), [([1, 2, 3, 4, 5], True), ([1, 2, 3, 4, 6], False), ([5, 1, 2, 4, 3], True)]
)
def test_counted_ids_are_a_range_and_answer_alike(ids: list[int], dense: bool) -> None:
    spans = ArraySpans.collect(_rows(ids), forecast=False)
    assert (type(spans._ids) is range) is dense
    asked = np.array([0, 1, 2, 3, 5, 6, 7, -4], dtype=np.int64)
    found, lo, hi, t0, ok = spans.columns(asked)
    for k, aid in enumerate(asked.tolist()):
        there = aid in ids and aid != 3
        assert bool(found[k]) is there and bool(ok[k]) is there
        assert (int(lo[k]), int(hi[k]), int(t0[k])) == (
            (10 * aid, 10 * aid + 9, 1000 + aid) if there else (0, 0, 0)
        )
        assert spans.get(aid) == ((10 * aid, 10 * aid + 9) if there else None)
    assert spans.tiled()
