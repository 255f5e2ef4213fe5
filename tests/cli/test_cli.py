"""The command line, command by command (click's CliRunner; see test_cli_contract for the
cross-cutting contract: exit codes, stdout/stderr, schemas, subprocess runs)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import apsw
import h5py
import numpy as np
import pytest
from click.testing import CliRunner, Result

from infrastore_sqlite import Store
from infrastore_sqlite.cli import cli
from infrastore_sqlite.cli import store_commands as cli_module
from infrastore_sqlite.demo import build_demo_store, data_file
from infrastore_sqlite.textfiles import parse_feature


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False)


def ok(*args: str, **kw) -> Result:
    result = run(*args, **kw)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def js(*args: str, **kw):
    return json.loads(ok("-f", "json", *args, **kw).stdout)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.h5"
    build_demo_store(path).close()
    return path


@pytest.fixture
def demo(pristine: Path, tmp_path: Path) -> str:
    """A private copy of the demo store (tests may change it)."""
    target = tmp_path / "demo.h5"
    shutil.copytree(pristine, target)
    return str(target)


@pytest.fixture
def exported(pristine: Path, tmp_path: Path) -> str:
    db = tmp_path / "demo.db"
    ok("--store", str(pristine), "export", "-f", "sqlite", "--db", str(db))
    return str(db)


# ---------------------------------------------------------------------------- init / demo


def test_init_creates_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "s.h5"
    doc = js("--store", str(path), "init", "--compression", "deflate:6", "--no-shuffle")
    assert doc == {
        "created": str(path),
        "catalog": str(path / "catalog.sqlite"),
        "compression": "deflate:6:noshuffle",
    }
    with Store.open(path) as store:
        assert store.list_metadata() == []
    assert js("init", str(tmp_path / "n.h5"), "--compression", "none")["compression"] == "none"
    assert js("init", str(tmp_path / "a.h5"))["compression"] == "auto:3:shuffle"
    assert js("init", str(tmp_path / "z.h5"), "--compression", "deflate:0")["compression"] == (
        "deflate:0:shuffle"
    )
    with Store.open(tmp_path / "z.h5") as store:
        assert store.get_compression() == {"compression": "deflate", "level": 0, "shuffle": True}


def test_init_refuses_an_existing_store_and_a_bad_compression(tmp_path: Path) -> None:
    path = tmp_path / "s.h5"
    ok("init", str(path))
    again = run("init", str(path))
    assert again.exit_code == 1
    assert again.stderr.startswith(f"Error: {path} already holds a store")
    bad = run("init", str(tmp_path / "x.h5"), "--compression", "zstd")
    assert bad.exit_code == 2
    assert "'zstd' is not auto, none, deflate, auto:L or deflate:L" in bad.stderr
    assert not (tmp_path / "x.h5").exists()


def test_demo_reports_what_it_built(tmp_path: Path) -> None:
    doc = js("demo", str(tmp_path / "d.h5"))
    assert doc["series"] == 14
    assert doc["distinct_arrays"] < doc["series"]
    assert set(doc["by_type"]) == {
        "SingleTimeSeries",
        "NonSequentialTimeSeries",
        "PersistentTimeSeries",
        "Deterministic",
        "Probabilistic",
        "Scenarios",
    }
    again = run("demo", str(tmp_path / "d.h5"))
    assert again.exit_code == 1 and "already holds a store" in again.stderr


def test_demo_path_falls_back_to_store(tmp_path: Path) -> None:
    ok("--store", str(tmp_path / "d.h5"), "-q", "demo")
    assert (tmp_path / "d.h5" / "catalog.sqlite").exists()


# ---------------------------------------------------------------------------- add --csv


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_add_csv_single_time_series_round_trips(tmp_path: Path) -> None:
    store = str(tmp_path / "s.h5")
    ok("init", store)
    doc = js(
        "--store", store, "add", "--csv", str(data_file("wind.csv")), "--owner-id", "7",
        "--owner-type", "Wind", "--name", "cf", "--type", "single", "--units", "pu",
        "--feature", "model_year=2030", "--feature", "w=0.5", "--feature", "flag=TRUE",
        "--feature", "scen=hi",
    )  # fmt: skip
    assert doc == {"added": 1, "ids": [1], "store": store}
    meta = js("--store", store, "list")["items"][0]
    assert meta["features"] == {"model_year": 2030, "w": 0.5, "flag": True, "scen": "hi"}
    assert meta["resolution"] == "PT1H" and meta["length"] == 168 and meta["units"] == "pu"
    assert meta["time_reference"] == "utc"
    got = ok("--store", store, "-f", "csv", "get", "--id", "1").stdout
    rows = list(csv.reader(io.StringIO(got)))
    source = list(csv.reader(io.StringIO(data_file("wind.csv").read_text(encoding="utf-8"))))
    assert rows[0] == ["timestamp", "value"]
    assert [float(r[1]) for r in rows[1:]] == [float(r[1]) for r in source[1:]]
    assert rows[1][0] == "2024-07-01T00:00:00+00:00"


@pytest.mark.parametrize(
    ("csv_name", "type_", "extra", "shape"),
    [
        ("wind_forecast.csv", "deterministic", [], [12, 27]),
        ("load_forecast_probabilistic.csv", "Probabilistic", [], [3, 24, 7]),
        ("hydro_inflow_scenarios.csv", "SCENARIOS", [], [3, 24, 7]),
        ("outage_derate.csv", "non_sequential", [], [6]),
        ("storage_limit.csv", "persistent", [], [4]),
        ("thermal_cost_curve.csv", "persistent", ["--element-type", "piecewise_linear"], [3, 7]),
        ("reserve_requirement.csv", "single", [], [168, 2]),
    ],
)
def test_add_csv_dry_run_reads_every_layout(
    tmp_path: Path, csv_name: str, type_: str, extra: list[str], shape: list[int]
) -> None:
    missing = tmp_path / "never.h5"
    doc = js(
        "--store", str(missing), "add", "--csv", str(data_file(csv_name)), "--owner-id", "1",
        "--owner-type", "X", "--name", "n", "--type", type_, "--dry-run", *extra,
    )  # fmt: skip
    assert doc["dry_run"] is True and doc["would_add"] == 1
    assert doc["series"][0]["shape"] == shape
    assert not missing.exists()  # a dry run never opens (or creates) the store


def test_add_csv_forecast_values_land_on_the_right_axes(tmp_path: Path) -> None:
    store = str(tmp_path / "s.h5")
    ok("init", store)
    path = _write(
        tmp_path / "p.csv",
        "issue_time,target_time,value[p0.1],value[p0.9]\n"
        "2024-01-01T00:00:00Z,2024-01-01T00:00:00Z,1,2\n"
        "2024-01-01T00:00:00Z,2024-01-01T01:00:00Z,3,4\n"
        "2024-01-01T02:00:00Z,2024-01-01T02:00:00Z,5,6\n"
        "2024-01-01T02:00:00Z,2024-01-01T03:00:00Z,7,8\n",
    )
    ok("--store", store, "add", "--csv", path, "--owner-id", "1", "--owner-type", "X",
       "--name", "p", "--type", "probabilistic")  # fmt: skip
    with Store.open(store) as s:
        series = s.read_by_id(1)
        assert series.percentiles == [0.1, 0.9]
        assert (series.horizon, series.interval, series.count) == ("PT2H", "PT2H", 2)
        # [P, H, count]: percentile 0.1, step 1, window 1 is the 4th row's first value
        assert series.data[0, 1, 1] == 7 and series.data[1, 0, 1] == 6
    back = ok("--store", store, "-f", "csv", "get", "--id", "1").stdout
    assert back.splitlines()[0] == "issue_time,target_time,value[p0.1],value[p0.9]"
    assert back.splitlines()[4].endswith(",7.0,8.0")


def test_add_csv_reads_stdin_and_flat_files(tmp_path: Path) -> None:
    store = str(tmp_path / "s.h5")
    ok("init", store)
    ok("--store", store, "add", "--csv", "-", "--owner-id", "1", "--owner-type", "X",
       "--name", "flat", "--type", "single", "--initial-timestamp", "2024-01-01T00:00:00Z",
       "--resolution", "PT15M", input="value\n1\n2\n3\n")  # fmt: skip
    with Store.open(store) as s:
        series = s.read_by_id(1)
        assert series.resolution == "PT15M" and list(series.data) == [1.0, 2.0, 3.0]


def test_add_csv_refusals_name_the_line(tmp_path: Path) -> None:
    store = str(tmp_path / "s.h5")
    ok("init", store)
    base = ["--store", store, "add", "--owner-id", "1", "--owner-type", "X", "--name", "n"]
    off_grid = _write(tmp_path / "g.csv", "timestamp,value\n2024-01-01T00:00:00Z,1\n"
                      "2024-01-01T01:00:00Z,2\n2024-01-01T03:00:00Z,3\n")  # fmt: skip
    r = run(*base, "--type", "single", "--resolution", "PT1H", "--csv", off_grid)
    assert r.exit_code == 1
    assert f"{off_grid} line 4, column 'timestamp': 2024-01-01T03:00:00Z is not on the PT1H" in (
        r.stderr
    )
    headless = _write(tmp_path / "h.csv", "2024-01-01T00:00:00Z,1\n2024-01-01T01:00:00Z,2\n")
    r = run(*base, "--type", "single", "--csv", headless)
    assert r.exit_code == 1 and "is data, not a header" in r.stderr
    bad_cell = _write(tmp_path / "b.csv", "timestamp,value\n2024-01-01T00:00:00Z,abc\n")
    r = run(*base, "--type", "non_sequential", "--csv", bad_cell)
    assert r.exit_code == 1 and "line 2, column 'value': 'abc' is not a number" in r.stderr
    r = run(*base, "--type", "single", "--csv", str(tmp_path / "missing.csv"))
    assert r.exit_code == 1 and "does not exist" in r.stderr
    assert "Traceback" not in r.stderr


def test_add_csv_needs_its_identity_flags(tmp_path: Path) -> None:
    r = run("--store", str(tmp_path / "s.h5"), "add", "--csv", "x.csv", "--name", "n")
    assert r.exit_code == 2
    # The header says the type (add --csv without --type), so it is not among them.
    assert "add --csv needs --owner-id, --owner-type, --name (missing: --owner-id, " \
        "--owner-type)" in r.stderr  # fmt: skip
    r = run("add", "--csv", "x.csv", "--sqlite", "y.db")
    assert r.exit_code == 2 and "exactly one source" in r.stderr
    r = run("add", "--csv", "x.csv", "--owner-id", "1", "--owner-type", "X", "--name", "n",
            "--type", "deterministic_single")  # fmt: skip
    assert r.exit_code == 2 and "DeterministicSingleTimeSeries cannot be added" in r.stderr


def test_add_csv_duplicate_is_a_runtime_error(demo: str) -> None:
    args = ["--store", demo, "add", "--csv", str(data_file("wind.csv")), "--owner-id", "201",
            "--owner-type", "RenewableDispatch", "--name", "max_active_power", "--type", "single"]  # fmt: skip
    r = run(*args)
    assert r.exit_code == 1 and "a time series with that key already exists" in r.stderr
    assert r.stdout == ""


def test_add_csv_wide_layout(tmp_path: Path) -> None:
    store = str(tmp_path / "s.h5")
    ok("init", store)
    wide = _write(tmp_path / "w.csv", "timestamp,11,12\n2024-01-01T00:00:00Z,1,10\n"
                  "2024-01-01T01:00:00Z,2,20\n")  # fmt: skip
    doc = js("--store", store, "add", "--csv", wide, "--layout", "wide", "--owner-id-from",
             "header", "--owner-type", "Load", "--name", "p", "--type", "single")  # fmt: skip
    assert doc["added"] == 2
    owners = _write(tmp_path / "o.csv", "column,owner_id,owner_type\n11,21,Gen\n12,22,Gen\n")
    ok("--store", store, "add", "--csv", wide, "--layout", "wide", "--owner-map", owners,
       "--name", "q", "--type", "single")  # fmt: skip
    items = js("--store", store, "list", "--name", "q")["items"]
    assert [(m["owner_id"], m["owner_type"]) for m in items] == [(21, "Gen"), (22, "Gen")]
    r = run("--store", store, "add", "--csv", wide, "--layout", "wide", "--name", "q",
            "--type", "single")  # fmt: skip
    assert r.exit_code == 2 and "exactly one of --owner-map" in r.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=1", 1),
        ("a=-7", -7),
        ("a=0.5", 0.5),
        ("a=1e3", 1000.0),
        ("a=TRUE", True),
        ("a=false", False),
        ("a=hi there", "hi there"),
        ("a=", ""),
        ("a=9223372036854775808", 9.223372036854775808e18),
        ("a=1_000", "1_000"),
        ("a=nan", "nan"),
    ],
)
def test_feature_inference(text: str, expected: object) -> None:
    key, value = parse_feature(text)
    assert key == "a" and value == expected and type(value) is type(expected)


# ---------------------------------------------------------------------------- add --sqlite


def test_add_sqlite_round_trips_the_demo(pristine: Path, exported: str, tmp_path: Path) -> None:
    store = str(tmp_path / "copy.h5")
    ok("init", store)
    dry = js("--store", store, "add", "--sqlite", exported, "--dry-run")
    assert dry["dry_run"] is True and dry["would_add"] == 14
    assert js("--store", store, "list")["items"] == []
    doc = js("--store", store, "add", "--sqlite", exported)
    assert doc["added"] == 14 and len(doc["ids"]) == 14
    assert {p["status"] for p in doc["partitions"]} == {"committed"}

    def key(m: dict) -> tuple:
        return (m["owner_id"], m["time_series_type"], m["name"], m["data_hash"])

    def strip(m: dict) -> dict:
        return {k: v for k, v in m.items() if k != "id"}

    before = sorted(map(strip, js("--store", str(pristine), "list")["items"]), key=key)
    after = sorted(map(strip, js("--store", store, "list")["items"]), key=key)
    assert after == before
    again = run("--store", store, "add", "--sqlite", exported)
    assert again.exit_code == 1 and "already exists" in again.stderr


def test_add_sqlite_overrides_and_assertions(exported: str, tmp_path: Path) -> None:
    store = str(tmp_path / "copy.h5")
    ok("init", store)
    doc = js("--store", store, "add", "--sqlite", exported, "--owner-type", "Imported",
             "--units", "kW", "--feature", "run=2")  # fmt: skip
    assert doc["added"] == 14
    items = js("--store", store, "list")["items"]
    assert {m["owner_type"] for m in items} == {"Imported"}
    assert {m["units"] for m in items} == {"kW"}
    assert all(m["features"].get("run") == 2 for m in items)
    other = str(tmp_path / "other.h5")
    ok("init", other)
    r = run("--store", other, "add", "--sqlite", exported, "--element-type", "i64")
    assert r.exit_code == 1 and r.stdout == ""


def test_add_sqlite_missing_file(tmp_path: Path) -> None:
    store = str(tmp_path / "s.h5")
    ok("init", store)
    r = run("--store", store, "add", "--sqlite", str(tmp_path / "nope.db"))
    assert r.exit_code == 1 and r.stderr.startswith("Error: ") and "Traceback" not in r.stderr


# ---------------------------------------------------------------------------- list / get / info


def test_list_selectors(pristine: Path) -> None:
    s = str(pristine)

    def ids(*flags: str) -> list[int]:
        return [m["id"] for m in js("--store", s, "list", *flags)["items"]]

    assert ids() == list(range(1, 15))
    assert ids("--type", "single") == ids("--type", "SingleTimeSeries") == list(range(1, 9))
    assert ids("--type", "non_sequential") == [9]
    assert ids("--type", "Persistent_Time_Series") == [10, 11]
    assert ids("--feature", "model_year=2030") == [1, 2, 3, 13]
    assert ids("--feature", "model_year=2030", "--type", "probabilistic") == [13]
    assert ids("--owner-category", "supplementalattribute") == [9]
    assert ids("--name-glob", "*limit*") == [10]
    assert ids("--owner-id", "201", "--name", "max_active_power") == [4, 12]
    assert ids("--owner-type", "PowerLoad", "--limit", "2") == [1, 2]
    assert ids("--component-field", "operation_cost") == [11]
    assert ids("--resolution", "PT60M", "--type", "scenarios") == [14]
    assert ids("--id", "3", "--id", "5") == [3, 5]
    assert ids("--name", "nothing") == []


def test_list_formats(pristine: Path) -> None:
    s = str(pristine)
    table = ok("--store", s, "list", "--type", "probabilistic").stdout.splitlines()
    assert table[0].split() == list(cli_module._LIST_TABLE)
    assert len(table) == 2 and '{"model_year":2030}' in table[1]
    lines = ok("--store", s, "-f", "jsonl", "list").stdout.splitlines()
    assert len(lines) == 14 and json.loads(lines[0])["id"] == 1
    rows = list(csv.DictReader(io.StringIO(ok("--store", s, "list", "-f", "csv").stdout)))
    assert rows[10]["element_type"] == "piecewise_linear" and rows[10]["element_shape"] == "[7]"
    empty = ok("--store", s, "list", "--name", "nothing").stdout
    assert empty.split() == list(cli_module._LIST_TABLE)


def test_get_ambiguity_lists_candidates(pristine: Path) -> None:
    r = run("--store", str(pristine), "get", "--type", "single")
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.startswith(
        "Error: the selection matches 8 series; narrow it with --id or another selector flag:"
    )
    assert "max_active_power" in r.stderr and "requirement" in r.stderr
    r = run("--store", str(pristine), "-f", "json", "get", "--owner-id", "201")
    doc = json.loads(r.stderr)
    assert [c["id"] for c in doc["candidates"]] == [4, 12]
    many = run(
        "--store", str(pristine), "-f", "json", "get", "--type", "single", "--name-glob", "*"
    )
    assert len(json.loads(many.stderr)["candidates"]) == 8
    r = run("--store", str(pristine), "get", "--name", "nothing")
    assert r.exit_code == 1 and "no series matches all of these selector flags" in r.stderr
    r = run("--store", str(pristine), "get")
    assert r.exit_code == 2 and "get needs a selector" in r.stderr


def test_get_caps_the_candidate_list_at_ten(tmp_path: Path) -> None:
    store = str(tmp_path / "s.h5")
    ok("init", store)
    for owner in range(12):
        ok("--store", store, "add", "--csv", str(data_file("outage_derate.csv")), "--owner-id",
           str(owner), "--owner-type", "X", "--name", "n", "--type", "non_sequential")  # fmt: skip
    r = run("--store", store, "get", "--name", "n")
    assert "matches 12 series" in r.stderr and "… and 2 more" in r.stderr
    doc = json.loads(run("--store", store, "-f", "json", "get", "--name", "n").stderr)
    assert len(doc["candidates"]) == 10


def test_get_values_and_time_range(pristine: Path) -> None:
    s = str(pristine)
    doc = js("--store", s, "get", "--id", "8", "--limit", "2")
    assert doc["columns"] == ["timestamp", "value[0]", "value[1]"]
    assert doc["items"][0] == {"timestamp": "2024-07-01T00:00:00", "value[0]": 9.92,
                               "value[1]": 4.96}  # fmt: skip
    solar = js("--store", s, "get", "--id", "7", "--time-range",
               "2024-07-01T12:00:00Z..2024-07-01T14:00:00Z")["items"]  # fmt: skip
    assert [r["timestamp"] for r in solar] == ["2024-07-01T06:00:00-06:00",
                                               "2024-07-01T07:00:00-06:00"]  # fmt: skip
    windows = js("--store", s, "get", "--id", "12", "--time-range", "1719792000000..1719813600000")[
        "items"
    ]  # epoch ms, 6 hours: one window
    assert len(windows) == 12 and {r["issue_time"] for r in windows} == {
        "2024-07-01T00:00:00+00:00"
    }
    scen = js("--store", s, "get", "--id", "14", "--limit", "1")
    assert scen["columns"] == ["issue_time", "target_time", "value[s0]", "value[s1]", "value[s2]"]
    assert scen["items"][0]["issue_time"] == "2024-06-30T17:00:00-07:00"
    r = run("--store", s, "get", "--id", "7", "--time-range", "2024-07-01..")
    assert r.exit_code == 2 and "is not START..END" in r.stderr


def test_info(pristine: Path) -> None:
    doc = js("--store", str(pristine), "info")
    assert doc["series"] == 14 and doc["distinct_arrays"] == 11 and doc["owners"] == 11
    assert doc["time_references"] == {"-07:00": 1, "America/Denver": 1, "utc": 10, "zoneless": 2}
    assert doc["total_bytes"] == doc["hdf5_bytes"] + doc["catalog_bytes"] > 0
    table = ok("--store", str(pristine), "info").stdout
    assert "by_type.SingleTimeSeries         8" in table


# ---------------------------------------------------------------------------- write commands


def test_transform_is_idempotent(demo: str) -> None:
    doc = js("--store", demo, "transform", "--horizon", "PT12H", "--interval", "PT6H")
    assert doc == {"added": 8, "time_series_type": "DeterministicSingleTimeSeries",
                   "horizon": "PT12H", "interval": "PT6H"}  # fmt: skip
    assert (
        js("--store", demo, "transform", "--horizon", "PT720M", "--interval", "PT360M")["added"]
        == 0
    )
    assert len(js("--store", demo, "list", "--type", "deterministic_single")["items"]) == 8


def test_remove_confirms_and_reports(demo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    dry = js("--store", demo, "remove", "--owner-id", "203", "--dry-run")
    assert dry == {"dry_run": True, "would_remove": 1, "ids": [6]}
    refused = run("--store", demo, "remove", "--owner-id", "203")
    assert refused.exit_code == 1 and refused.stdout == ""
    assert "stdin is not a terminal to ask on; pass -y (--yes) to confirm" in refused.stderr
    monkeypatch.setattr(cli_module, "_stdin_is_terminal", lambda: True)
    declined = run("--store", demo, "remove", "--owner-id", "203", input="n\n")
    assert declined.exit_code == 1 and "Remove 1 series from" in declined.stderr
    assert declined.stdout == ""
    accepted = run("--store", demo, "-f", "json", "remove", "--owner-id", "203", input="y\n")
    assert accepted.exit_code == 0 and json.loads(accepted.stdout) == {"removed": 1, "ids": [6]}
    assert js("--store", demo, "remove", "--owner-id", "203") == {"removed": 0, "ids": []}
    assert js("--store", demo, "remove", "-y", "--name", "inflow") == {"removed": 1, "ids": [14]}
    assert len(js("--store", demo, "list")["items"]) == 12


def test_remove_needs_a_selector(demo: str) -> None:
    r = run("--store", demo, "remove")
    assert r.exit_code == 2 and "remove needs a selector" in r.stderr
    assert js("--store", demo, "-y", "remove", "--all")["removed"] == 14


def test_verify_ok_and_damaged(demo: str) -> None:
    sound = js("--store", demo, "verify")
    assert (sound["ok"], sound["errors"], sound["segments"], sound["series_lost"]) == (
        True,
        [],
        [],
        [],
    )
    assert (sound["series"], sound["catalog"]["ok"]) == (14, True)
    # every stored array read and re-hashed: 11 distinct value arrays and 3 time axes
    assert sound["checked"] == 14
    (segment,) = (Path(demo) / "segments").iterdir()  # the demo is one bulk add
    with h5py.File(segment, "r+") as h5:
        names: list[str] = []
        h5.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        target = next(n for n in names if h5[n].dtype == np.float64 and h5[n].size > 100)
        data = h5[target][...]
        data.flat[0] += 1.0
        h5[target][...] = data
    r = run("--store", demo, "-f", "json", "verify")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and doc["errors"]
    # a damaged file (not just a changed value) is named, and no traceback reaches the user
    segment.write_bytes(segment.read_bytes()[:2048])
    r = run("--store", demo, "-f", "json", "verify")
    assert r.exit_code == 1 and "Traceback" not in r.stderr + r.stdout
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and all(str(segment) in e for e in doc["errors"])


# ---------------------------------------------------------------------------- export


def test_export_writes_partitions_and_views(pristine: Path, tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    out = ok("--store", str(pristine), "export", "-f", "sqlite", "--db", str(db)).stdout
    lines = out.splitlines()
    assert lines[0].split() == ["values_table", "series", "arrays", "rows"]
    assert lines[1].split() == ["SingleTimeSeries_f64_utc_values", "6", "3", "504"]
    assert len(lines) == 10
    conn = apsw.Connection(str(db))
    views = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='view'")}
    # The three fixed-name views, the typed companions of the demo's value kinds (float
    # scalars, JSON) and a flattened view per partition (issue 24).
    flat = {"flat_" + line.split()[0].removesuffix("_values") for line in lines[1:]}
    assert (
        views
        == {"all_values", "all_series", "all_arrays"}
        | {
            "all_values_real_static",
            "all_values_real_deterministic",
            "all_values_real_probabilistic",
            "all_values_real_scenarios",
            "all_values_json_static",
        }
        | flat
    )
    assert conn.execute("SELECT count(*) FROM all_series").fetchone()[0] == 14


def test_export_json_prefix_filters_and_range(pristine: Path, tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    parts = js("--store", str(pristine), "export", "--db", str(db), "--table-prefix", "run1_",
               "--owner-type", "RenewableDispatch",
               "--time-range", "2024-07-01T00:00:00Z..2024-07-02T00:00:00Z")  # fmt: skip
    assert [p["values_table"] for p in parts] == [
        "run1_SingleTimeSeries_f64_utc_values",
        "run1_SingleTimeSeries_f64_America_Denver_values",
        "run1_Deterministic_f64_utc_values",
    ]
    assert [p["rows"] for p in parts] == [24, 24, 48]
    again = run("--store", str(pristine), "export", "--db", str(db), "--table-prefix", "run1_",
                "--owner-type", "RenewableDispatch")  # fmt: skip
    assert again.exit_code == 1 and "nothing was written" in again.stderr


def test_export_dry_run_and_empty_selection(pristine: Path, tmp_path: Path) -> None:
    db = tmp_path / "dry.db"
    doc = js("--store", str(pristine), "export", "--db", str(db), "--dry-run")
    assert doc["dry_run"] is True and doc["series"] == 14 and len(doc["partitions"]) == 9
    assert not db.exists()
    assert js("--store", str(pristine), "export", "--db", str(db), "--name", "none") == []
    assert not db.exists()
    derived = run("--store", str(pristine), "export", "--db", str(db), "--type", "dst")
    assert derived.exit_code == 1 and "--include-derived" in derived.stderr
    assert "include_derived=True" not in derived.stderr  # the CLI names its flag


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-f", "table"], "export needs a target: -f sqlite --db FILE"),
        (["-f", "csv", "--dir", "out", "--overwrite"], "--overwrite applies to -f sqlite"),
        (["-f", "sqlite", "--dir", "out"], "--dir is for -f parquet or per-series files"),
        (["-f", "sqlite"], "export -f sqlite needs --db FILE"),
        (["-f", "sqlite", "--db", "x.db", "--summary", "json"], "--summary names how -f parquet"),
    ],
)
def test_export_usage_refusals(pristine: Path, args: list[str], message: str) -> None:
    r = run("--store", str(pristine), "export", *args)
    assert r.exit_code == 2 and message in r.stderr and r.stdout == ""


# ---------------------------------------------------------------------------- unexpected errors


def test_unexpected_error_is_one_line(pristine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(Store, "open", boom)
    r = run("--store", str(pristine), "list")
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1
    assert "internal error (RuntimeError: kaboom" in r.stderr and "report" in r.stderr
    assert "INFRASTORE_SQLITE_DEBUG=1" in r.stderr and "Traceback" not in r.stderr
    debug = run("--store", str(pristine), "list", env={"INFRASTORE_SQLITE_DEBUG": "1"})
    assert debug.exit_code == 1 and "Traceback" in debug.stderr


# ---------------------------------------------------------------------------- rehash


def test_sql_edit_is_refused_then_imported_after_rehash(exported: str, tmp_path: Path) -> None:
    """The issue's workflow 2 through the command line: edit, refuse, rehash, import."""
    import apsw

    conn = apsw.Connection(exported)
    table = "SingleTimeSeries_f64_utc_values"
    conn.execute(f'UPDATE "{table}" SET value = value * 1.1 WHERE array_id = 1')
    edited = conn.execute(f'SELECT value FROM "{table}" WHERE array_id = 1 LIMIT 1').fetchone()[0]
    conn.close()
    copy = str(tmp_path / "copy.h5")
    ok("init", copy)
    refused = run("--store", copy, "add", "--sqlite", exported)
    assert refused.exit_code == 1 and refused.stdout == ""
    assert "does not match its recorded data_hash" in refused.stderr
    assert "rehash" in refused.stderr or "--no-checksum" in refused.stderr
    doc = js("rehash", "--db", exported)
    assert doc["rehashed"] == 1
    assert js("rehash", "--db", exported)["rehashed"] == 0  # idempotent
    # The CLI committed the partitions before the refused one; import into a fresh store.
    copy = str(tmp_path / "copy2.h5")
    ok("init", copy)
    added = js("--store", copy, "add", "--sqlite", exported)
    assert added["added"] > 0
    with Store.open(copy, read_only=True) as store:
        values = [store.read_by_id(m["id"]).data[0] for m in store.list_metadata()
                  if m["element_type"] == "f64" and m["time_reference"] == "utc"
                  and m["time_series_type"] == "SingleTimeSeries"]  # fmt: skip
    assert edited in values


def test_rehash_refuses_a_missing_file(tmp_path: Path) -> None:
    result = run("rehash", "--db", str(tmp_path / "nope.db"))
    assert result.exit_code == 1 and result.stdout == ""
    assert "nope.db" in result.stderr
