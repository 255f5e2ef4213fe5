"""Comparing two SQLite exports table by table, shared by the export's interop test modules."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import infrastore
import numpy as np
import pytest
from conftest import ADDITIONS

import infrastore_sqlite
from infrastore_sqlite.core.elements import parse_element_type, shrink
from infrastore_sqlite.core.hashing import data_hash

pytestmark = pytest.mark.interop

REF: ModuleType = infrastore
OURS: ModuleType = infrastore_sqlite

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
COMPOSITES = ("linear_function", "quadratic_function", "piecewise_linear", "piecewise_step")


# ---------------------------------------------------------------------- comparing databases


def dump(path: Path) -> tuple[list[tuple], dict[str, list[tuple]]]:
    con = sqlite3.connect(path)
    try:
        entries = con.execute(
            f"SELECT type, name, tbl_name, sql FROM sqlite_master WHERE NOT {ADDITIONS}"
        ).fetchall()
        tables = {
            name: con.execute(f'SELECT * FROM "{name}" ORDER BY rowid').fetchall()
            for kind, name, _, _ in entries
            if kind == "table"
        }
        return entries, tables
    finally:
        con.close()


def element_type_of(series_rows: list[tuple], con_cols: list[str]) -> str:
    ets = {r[con_cols.index("element_type")] for r in series_rows}
    assert len(ets) == 1
    return ets.pop()


def shrunk_cells(rows: list[tuple], et: str) -> tuple[list[tuple], set[int]]:
    """Values rows with every composite array's JSON cells re-spelled at minimal width.

    Returns the rows and the array_ids whose cells changed.
    """
    kind = parse_element_type(et)
    by_array: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_array[r[0]].append(i)
    out = list(rows)
    changed: set[int] = set()
    for array_id, idx in by_array.items():
        cells = np.array([json.loads(rows[i][-1]) for i in idx], dtype=np.float64)
        small = shrink(kind, cells)
        if small.shape != cells.shape:
            changed.add(array_id)
            for i, row in zip(idx, small.tolist(), strict=True):
                text = json.dumps(row, separators=(",", ":"))
                out[i] = (*rows[i][:-1], text)
    return out, changed


def compare_databases(ref_path: Path, our_path: Path) -> dict[str, set[int]]:
    """Assert the two exports agree; returns the composite arrays the peer wrote padded."""
    ref_master, ref_tables = dump(ref_path)
    our_master, our_tables = dump(our_path)
    assert [e[:3] for e in our_master] == [e[:3] for e in ref_master]  # names and order
    for ours, theirs in zip(our_master, ref_master, strict=True):
        assert ours[3] == theirs[3], ours[1]  # DDL text, views included
    padded: dict[str, set[int]] = {}
    for name, ref_rows in ref_tables.items():
        our_rows = our_tables[name]
        if name.endswith("_values"):
            base = name[: -len("_values")]
            con = sqlite3.connect(our_path)
            cols = [c[1] for c in con.execute(f'PRAGMA table_info("{base}_series")')]
            con.close()
            et = element_type_of(our_tables[base + "_series"], cols)
            if et in COMPOSITES:
                _, ours_changed = shrunk_cells(our_rows, et)
                assert not ours_changed, f"{name}: we wrote padded composite rows"
                ref_rows, changed = shrunk_cells(ref_rows, et)
                if changed:
                    padded[name] = changed
        assert sorted(our_rows, key=repr) == sorted(ref_rows, key=repr), name
    return padded


FORECASTS = ("Deterministic", "DeterministicSingleTimeSeries", "Probabilistic", "Scenarios")
LANES = {"Probabilistic": "percentile", "Scenarios": "scenario"}


def partitions(con: sqlite3.Connection) -> list[str]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return [n[: -len("_values")] for n in names if n.endswith("_values")]


def array_of(con: sqlite3.Connection, base: str, array_id: int) -> np.ndarray:
    """The stored-form array one array_id's rows spell, rebuilt from the tables."""
    from infrastore_sqlite.interchange.sqlite.cells import decode_cells

    ((tst, et),) = con.execute(
        f'SELECT DISTINCT time_series_type, element_type FROM "{base}_series"'
    ).fetchall()
    lane = LANES.get(tst)
    forecast = tst in FORECASTS
    order = ("issue_time, " if forecast else "") + "timestamp" + (f", {lane}" if lane else "")
    rows = con.execute(
        f'SELECT value{", issue_time" if forecast else ""} FROM "{base}_values" '
        f"WHERE array_id = ? ORDER BY {order}",
        (array_id,),
    ).fetchall()
    flat = decode_cells([r[0] for r in rows], parse_element_type(et).dtype)
    if not forecast:
        return flat
    count = len({r[1] for r in rows})
    lanes = 1
    if lane:
        lanes = con.execute(
            f'SELECT count(DISTINCT {lane}) FROM "{base}_values" WHERE array_id = ?', (array_id,)
        ).fetchone()[0]
    cube = flat.reshape(count, len(rows) // (count * lanes), lanes, *flat.shape[1:])
    if lane:
        return np.ascontiguousarray(np.transpose(cube, (2, 1, 0, *range(3, cube.ndim))))
    return np.ascontiguousarray(np.swapaxes(cube[:, :, 0], 0, 1))


def rederive_hashes(path: Path) -> None:
    """Every arrays row's data_hash is the hash of what its values rows hold."""
    con = sqlite3.connect(path)
    try:
        for base in partitions(con):
            for array_id, h in con.execute(f'SELECT id, data_hash FROM "{base}_arrays"').fetchall():
                assert data_hash(array_of(con, base, array_id)).hex() == h, (base, array_id)
    finally:
        con.close()
