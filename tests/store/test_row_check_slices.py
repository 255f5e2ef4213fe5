"""The row check's two ways of taking a row's checked fields (``rowcheck.RowChecker``):
as one slice when a select lists :data:`CHECKED_COLUMNS` together in their order (what
a read by ids does), else a pick of each; both give the stored checksum's verdict."""

from __future__ import annotations

import random

import pytest

from infrastore_sqlite.errors import DamagedStoreError
from infrastore_sqlite.store.rowcheck import CHECKED_COLUMNS, RowChecker, row_check


def _row(seed: int) -> dict[str, object]:
    """A series row's checked fields (ints, text, bytes and NULLs, as a catalog holds)."""
    rng = random.Random(seed)
    values: dict[str, object] = {}
    for k, c in enumerate(CHECKED_COLUMNS):
        kind = (k + seed) % 4
        values[c] = (
            rng.randrange(1 << 40)
            if kind == 0
            else f"{c}-{rng.random()}"
            if kind == 1
            else rng.randbytes(32)
            if kind == 2
            else None
        )
    values["id"] = seed + 1
    return values


LAYOUTS = {
    # A read by ids: the checked columns first, in order, then columns of other tables.
    "together": [*CHECKED_COLUMNS, None, None],
    # Something else selected first, then the checked columns in order: still one slice.
    "together later": [None, *CHECKED_COLUMNS],
    # The checked columns reversed, with a foreign column between: a pick of each.
    "scattered": [CHECKED_COLUMNS[-1], None, *reversed(CHECKED_COLUMNS[:-1])],
    # Only some selected: the checker appends the others.
    "some": ["name", None, "id"],
}


def _rows(selected: list[str | None], checker: RowChecker, n: int) -> list[tuple]:
    """``n`` rows as the select of ``selected`` plus ``checker.extra`` returns them."""
    extra = [c.strip().removeprefix("t.") for c in checker.extra.split(",")]
    out = []
    for seed in range(n):
        v = _row(seed)
        check = row_check([v[c] for c in CHECKED_COLUMNS])
        cells = [v[c] if c is not None else f"other {seed}" for c in selected]
        cells += [check if c == "row_check" else v[c] for c in extra]
        out.append(tuple(cells))
    return out


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_matching_rows_pass(layout: str) -> None:
    checker = RowChecker(LAYOUTS[layout])
    rows = _rows(LAYOUTS[layout], checker, 50)
    assert checker.check(rows, "/s") is rows


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("column", ["id", "name", "data_id", "features_hash", "owner_type"])
def test_a_changed_field_is_damage(layout: str, column: str) -> None:
    """One checked field of one row changed after its checksum: the check names that row
    (its id and name as read), whichever way it takes the fields."""
    selected = LAYOUTS[layout]
    checker = RowChecker(selected)
    rows = _rows(selected, checker, 50)
    names = [*selected, *(c.strip().removeprefix("t.") for c in checker.extra.split(","))]
    at = names.index(column)
    victim = list(rows[17])
    old = victim[at]
    victim[at] = (
        old + 1
        if isinstance(old, int)
        else old[:-1] + bytes([old[-1] ^ 1])
        if isinstance(old, bytes)
        else "x"
        if old is None
        else old[:-1] + chr(ord(old[-1]) ^ 1)
    )
    rows[17] = tuple(victim)
    with pytest.raises(DamagedStoreError) as info:
        checker.check(rows, "/s")
    sid = victim[names.index("id")]
    assert f"the row of series id {sid} " in str(info.value)
