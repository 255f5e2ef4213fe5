"""``add --csv`` without ``--type`` reads the type from the header, as ``export -f csv``
writes it, so a series goes out as a CSV and comes back as the same series; a header that
does not say (value cells alone) or timestamps off one grid are refused with the flag that
helps, and nothing is added."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_run import demo_store, run

from infrastore_sqlite import Store


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> str:
    return demo_store(tmp_path_factory, "csv-type")


def _rows(store: str) -> list[dict]:
    r = run("--store", store, "-f", "json", "list")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["items"]


@pytest.mark.parametrize(
    "kind", ["SingleTimeSeries", "Deterministic", "Probabilistic", "Scenarios"]
)
def test_a_series_comes_back_as_itself(demo: str, tmp_path: Path, kind: str) -> None:
    row = next(r for r in _rows(demo) if r["time_series_type"] == kind)
    out = run("--store", demo, "export", "-f", "csv", "--id", str(row["id"]))
    assert out.exit_code == 0, out.output
    csv = tmp_path / "one.csv"
    csv.write_text(out.stdout)
    target = str(tmp_path / "target")
    assert run("init", target).exit_code == 0
    r = run("--store", target, "add", "--csv", str(csv), "--owner-id", "7",
            "--owner-type", "X", "--name", row["name"])  # fmt: skip
    assert r.exit_code == 0, r.output
    (back,) = _rows(target)
    for field in ("time_series_type", "resolution", "length", "initial_timestamp",
                  "horizon", "interval", "count", "percentiles", "element_shape"):  # fmt: skip
        assert back[field] == row[field], field
    with Store.open(demo, read_only=True) as a, Store.open(target, read_only=True) as b:
        np.testing.assert_array_equal(b.read_by_id(back["id"]).data, a.read_by_id(row["id"]).data)


def test_timestamps_off_one_grid_need_a_type(demo: str, tmp_path: Path) -> None:
    row = next(r for r in _rows(demo) if r["time_series_type"] == "NonSequentialTimeSeries")
    out = run("--store", demo, "export", "-f", "csv", "--id", str(row["id"]))
    csv = tmp_path / "irregular.csv"
    csv.write_text(out.stdout)
    target = str(tmp_path / "target")
    assert run("init", target).exit_code == 0
    flags = ["--store", target, "add", "--csv", str(csv), "--owner-id", "7",
             "--owner-type", "X", "--name", "n"]  # fmt: skip
    r = run(*flags)
    assert r.exit_code == 1
    assert "is not on the" in r.stderr and "--type non_sequential" in r.stderr
    assert _rows(target) == []
    r = run(*flags, "--type", "non_sequential")
    assert r.exit_code == 0, r.output
    assert [x["time_series_type"] for x in _rows(target)] == ["NonSequentialTimeSeries"]


def test_value_cells_alone_need_a_type(tmp_path: Path) -> None:
    csv = tmp_path / "cells.csv"
    csv.write_text("value\n1\n2\n3\n")
    target = str(tmp_path / "target")
    assert run("init", target).exit_code == 0
    r = run("--store", target, "add", "--csv", str(csv), "--owner-id", "7",
            "--owner-type", "X", "--name", "n")  # fmt: skip
    assert r.exit_code == 1
    assert "does not say which series it holds: pass --type" in r.stderr
    assert "Traceback" not in r.output
    assert _rows(target) == []


def test_the_wide_layout_still_needs_a_type(tmp_path: Path) -> None:
    csv = tmp_path / "wide.csv"
    csv.write_text("timestamp,1,2\n2024-01-01T00:00:00Z,1,2\n2024-01-01T01:00:00Z,3,4\n")
    r = run("--store", str(tmp_path / "s"), "add", "--csv", str(csv), "--layout", "wide",
            "--owner-id-from", "header", "--owner-type", "X", "--name", "n")  # fmt: skip
    assert r.exit_code == 2 and "(missing: --type)" in r.stderr
