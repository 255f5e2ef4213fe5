"""Names, prefixes and reports of the SQLite export against the reference implementation
(infrastore 0.15.1): partition names, prefix rules, negative-zero and collision reports,
views after successive exports."""

from __future__ import annotations

import re
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from export_interop_helpers import (
    OURS,
    REF,
    T0,
    compare_databases,
)

# ---------------------------------------------------------------------- names, prefixes, refusals


def small_store(L: ModuleType, path: Path, refs: list[str | None]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = L.Store.create(path)
        for i, tr in enumerate(refs):
            store.add_time_series(
                i + 1,
                "Gen",
                L.OwnerCategory.Component,
                L.SingleTimeSeries(T0, "PT1H", np.arange(2.0), f"s{i}", time_reference=tr),
            )
    return store


@pytest.mark.parametrize(
    "refs",
    [
        ["utc", "UTC", "Utc"],
        ["Etc/GMT+1", "Etc/GMT-1", "Etc/GMT_1", "Etc/GMT_1_2"],
        ["CON", "Con", "x_CON", "nul", "LPT9", "Europe/CON", "Nul/x"],
        ["+05:30", "offset_plus05_30", "-00:30", "+14:00", "-10:00", "+01:00"],
        ["Zoneless", "zoneless", "unspecified", "a/b", "a_b", "America/Argentina/Buenos_Aires"],
    ],
)
def test_same_partition_names(tmp_path: Path, refs: list[str]) -> None:
    results = []
    for L, tag in ((REF, "r"), (OURS, "o")):
        store = small_store(L, tmp_path / f"{tag}.h5", refs)
        results.append(store.export_sqlite(tmp_path / f"{tag}.sqlite"))
        store.close()
    assert results[1] == results[0]
    compare_databases(tmp_path / "r.sqlite", tmp_path / "o.sqlite")


PREFIXES = [
    "",
    "run1_",
    "A_",
    "__",
    "all_",
    "xSingleTimeSeries_",
    "a_singletimeseries_",
    "run1",
    "_a",
    "x_SingleTimeSeries",
    "1a_",
    "9sqlite_",
    "sqlite_x_",
    "Sqlite_a",
    "a-b_",
    "runé",
    "1-a",
    "x_SingleTimeSeries_",
    "a__Scenarios_",
    "DeterministicSingleTimeSeries_",
    "Probabilistic_x_",
]


def test_same_prefix_rules(tmp_path: Path) -> None:
    ref = small_store(REF, tmp_path / "r.h5", ["utc"])
    ours = small_store(OURS, tmp_path / "o.h5", ["utc"])
    for i, prefix in enumerate(PREFIXES):
        outcome = []
        for store, tag, err in (
            (ref, "r", REF.InvalidParameterError),
            (ours, "o", OURS.InvalidParameterError),
        ):
            path = tmp_path / f"{tag}{i}.sqlite"
            try:
                outcome.append(store.export_sqlite(path, table_prefix=prefix))
            except err:
                outcome.append("refused")
                assert not path.exists()
        assert outcome[1] == outcome[0], prefix
    ref.close()
    ours.close()


def _message_list(text: str) -> str:
    """The parenthesized or colon-introduced list of names an error carries."""
    m = re.search(r"\(([^()]*)\); nothing was written", text)
    if m:
        return m.group(1)
    m = re.search(r"\+0\.0\): (.*)\. Nothing was written", text)
    if m:
        return m.group(1)
    m = re.search(r"holds (\w+) but no (\w+) beside it", text)
    assert m, text
    return m.group(0)


def _both(tmp_path: Path, setup: Callable[[ModuleType, Any, Path], None], **kw: Any) -> list[str]:
    """Run one refused export in both implementations; the names they report."""
    messages = []
    for L, tag in ((REF, "r"), (OURS, "o")):
        (tmp_path / tag).mkdir()
        store = small_store(L, tmp_path / tag / "s.h5", [])
        target = tmp_path / tag / "e.sqlite"
        setup(L, store, target)
        before = target.read_bytes() if target.exists() else None
        with pytest.raises(L.InvalidParameterError) as err:
            store.export_sqlite(target, **kw)
        if before is not None:
            assert target.read_bytes() == before
        messages.append(_message_list(str(err.value)))
        store.close()
    return messages


def _add(L: ModuleType, store: Any, owner: int, name: str, data: Any, **kw: Any) -> None:
    store.add_time_series(
        owner,
        "Gen",
        L.OwnerCategory.Component,
        L.SingleTimeSeries(T0, "PT1H", np.asarray(data), name, **kw),
    )


def test_same_negative_zero_report(tmp_path: Path) -> None:
    def setup(L: ModuleType, store: Any, target: Path) -> None:
        _add(L, store, 1, "a", np.array([-0.0], dtype=np.float32))
        store.add_time_series(
            2,
            "Gen",
            L.OwnerCategory.Component,
            L.Deterministic(T0, "PT1H", "PT1H", "PT1H", 1, np.array([[-0.0]]), "b"),
        )
        for i in range(5):
            _add(L, store, 3 + i, f"c{i}", [-0.0, float(i)])
        _add(L, store, 20, "json", [[-0.0, 1.0]])

    ref_msg, our_msg = _both(tmp_path, setup)
    assert our_msg == ref_msg
    assert ref_msg.startswith("'a' (owner 1), 'b' (owner 2), 'c0' (owner 3)")


@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE TABLE SingleTimeSeries_f64_utc_series (x); CREATE TABLE ALL_ARRAYS (x)",
        "CREATE TABLE t (x); CREATE INDEX singletimeseries_f64_utc_values_key ON t (x)",
        "CREATE VIEW all_values AS /* infrastore */ SELECT 1",
        "CREATE TABLE t (x); CREATE TRIGGER all_series AFTER INSERT ON t BEGIN SELECT 1; END",
        "CREATE TABLE Deterministic_x_values (x); CREATE TABLE Deterministic_x_arrays (x)",
        "CREATE TABLE Scenarios_y_values (x); CREATE TABLE Scenarios_y_series (x)",
    ],
)
def test_same_collision_reports(tmp_path: Path, ddl: str) -> None:
    def setup(L: ModuleType, store: Any, target: Path) -> None:
        _add(L, store, 1, "a", [1.0])
        _add(L, store, 2, "b", np.array([1], dtype=np.int32))
        con = sqlite3.connect(target)
        con.executescript(ddl)
        con.close()

    ref_msg, our_msg = _both(tmp_path, setup)
    assert our_msg == ref_msg


def test_same_views_after_successive_exports(tmp_path: Path) -> None:
    selections = [
        {"table_prefix": "p_", "name": "s0"},
        {"table_prefix": "p_", "name": "s1"},
        {"table_prefix": "q_", "name": "s2"},
        {"table_prefix": "p_", "name_glob": "s[34]"},
        {"name": "s5"},
    ]
    refs = ["utc", "-07:00", "utc", "America/Denver", "zoneless", "UTC"]
    for L, tag in ((REF, "r"), (OURS, "o")):
        store = small_store(L, tmp_path / f"{tag}.h5", refs)
        for sel in selections:
            store.export_sqlite(tmp_path / f"{tag}.sqlite", **sel)
        store.close()
    compare_databases(tmp_path / "r.sqlite", tmp_path / "o.sqlite")
    con = sqlite3.connect(tmp_path / "o.sqlite")
    assert con.execute("SELECT count(*) FROM p_all_series").fetchone()[0] == 4
    assert con.execute("SELECT count(*) FROM q_all_series").fetchone()[0] == 1
    assert con.execute("SELECT count(*) FROM all_series").fetchone()[0] == 1
    con.close()
