"""The ISO text of a zone whose offsets fall on whole UTC hours, read from one row per
hour of the data (``infrastore_zone_hours``; issue 38 Must 9: the day rows' choice
between two offsets and four dates read 1.17x slower than the CASE tree they replaced).
A zone that does not (India's +05:30, a local mean time) keeps the day rows."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import apsw
import numpy as np
import pytest

import infrastore_sqlite as I
from infrastore_sqlite.core.timeref import ms_to_datetime
from infrastore_sqlite.interchange.sqlite.companions import (
    hour_aligned,
    iso_sql,
    write_calendar,
    write_zone_hours,
)


def _ms(dt: datetime) -> int:
    return round(dt.timestamp() * 1000)


_SHIFT = 719_468 * 86_400_000  # the views count hours from 0000-03-01


@pytest.mark.parametrize(
    ("reference", "change"),
    [
        ("America/Denver", datetime(2024, 11, 3, 8, tzinfo=UTC)),  # fall back
        ("America/Denver", datetime(2024, 3, 10, 9, tzinfo=UTC)),  # spring forward
        ("Australia/Sydney", datetime(2024, 4, 6, 16, tzinfo=UTC)),  # southern autumn
        ("Europe/London", datetime(2025, 3, 30, 1, tzinfo=UTC)),  # spring forward
    ],
)
def test_hourly_text_agrees_with_python_across_a_change(reference: str, change: datetime) -> None:
    """Instants every 7 min 13.5 s over two days around a change, and the milliseconds
    either side of it and of local midnights, read as zoneinfo writes them; an instant
    whose hour has no row reads NULL."""
    at = _ms(change)
    step = 7 * 60_000 + 13_500
    instants = [*range(at - 24 * 3_600_000, at + 24 * 3_600_000, step), at - 1, at, at + 1]
    span = (min(instants), max(instants))
    assert hour_aligned(reference, span)
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE t (timestamp INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?)", [(ms,) for ms in instants])
    ids = write_calendar(conn, [(reference, span)], hourly=[True])
    hours = sorted({(ms + _SHIFT) // 3_600_000 for ms in instants})
    write_zone_hours(conn, reference, ids[reference], hours, span)
    joins, iso = iso_sql("timestamp", reference, "ts", ids[reference], hourly=True)
    got = dict(conn.execute(f"SELECT timestamp, {iso} FROM t{joins}"))
    for ms in instants:
        assert got[ms] == ms_to_datetime(ms, reference).isoformat(timespec="milliseconds"), ms
    # Rows for the data's hours only: an instant a day later has none, and reads NULL.
    assert conn.execute("SELECT count(*) FROM infrastore_zone_hours").fetchone()[0] == len(hours)
    later = at + 30 * 3_600_000
    conn.execute("INSERT INTO t VALUES (?)", (later,))
    (text,) = conn.execute(f"SELECT {iso} FROM t{joins} WHERE timestamp = ?", (later,)).fetchone()
    assert text is None


@pytest.mark.parametrize(
    ("reference", "years", "aligned"),
    [
        ("America/Denver", (1900, 2099), True),
        ("Europe/London", (1970, 2030), True),
        ("Asia/Kolkata", (2000, 2030), False),  # +05:30
        ("Australia/Adelaide", (2000, 2030), False),  # +09:30 / +10:30
        ("Europe/Amsterdam", (1930, 1931), False),  # +00:19:32, Amsterdam time
        ("Africa/Monrovia", (1970, 1971), False),  # -00:44:30 until 1972
        ("+05:00", (2000, 2030), False),  # a fixed offset has no zone rows
        ("utc", (2000, 2030), False),
    ],
)
def test_which_zones_read_by_the_hour(
    reference: str, years: tuple[int, int], aligned: bool
) -> None:
    span = (
        _ms(datetime(years[0], 1, 1, tzinfo=UTC)),
        _ms(datetime(years[1], 12, 31, tzinfo=UTC)),
    )
    assert hour_aligned(reference, span) is aligned


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture(scope="module")
def zoned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export of a Denver grid across fall back, a Denver forecast, three Denver
    instants a century apart, and a Kolkata grid (+05:30: day rows)."""
    d = tmp_path_factory.mktemp("zoned_hours")
    store = I.Store.create(d / "s.h5")
    denver, kolkata = ZoneInfo("America/Denver"), ZoneInfo("Asia/Kolkata")
    try:
        start = datetime(2024, 11, 2, 20, tzinfo=denver)
        store.add_time_series(
            1, "Gen", "Component", I.SingleTimeSeries(start, "PT15M", np.arange(200.0), "grid")
        )
        data = np.arange(24.0).reshape(12, 2)
        store.add_time_series(
            2, "Gen", "Component", I.Deterministic(start, "PT1H", "PT12H", "PT6H", 2, data, "f")
        )
        far = [datetime(y, 7, 1, 12, 30, 15, 250000, tzinfo=denver) for y in (1905, 2005, 2099)]
        store.add_time_series(
            3, "Gen", "Component", I.NonSequentialTimeSeries(far, np.arange(3.0), "far")
        )
        start_in = datetime(2024, 3, 1, 22, tzinfo=kolkata)
        store.add_time_series(
            4, "Gen", "Component", I.SingleTimeSeries(start_in, "PT10M", np.arange(50.0), "in")
        )
        store.export_sqlite(d / "zoned.db")
    finally:
        store.close()
    return d / "zoned.db"


FLATS = {
    "flat_SingleTimeSeries_f64_America_Denver": "America/Denver",
    "flat_Deterministic_f64_America_Denver": "America/Denver",
    "flat_NonSequentialTimeSeries_f64_America_Denver": "America/Denver",
    "flat_SingleTimeSeries_f64_Asia_Kolkata": "Asia/Kolkata",
}


def test_an_export_reads_whole_hour_zones_by_the_hour(zoned: Path) -> None:
    """Denver's views read the hour rows (never more than the data has rows, whatever
    the span: three instants a century apart are three rows), Kolkata's the day rows;
    every instant's text is what zoneinfo writes."""
    sql = dict(_rows(zoned, "SELECT name, sql FROM sqlite_master WHERE name LIKE 'flat_%'"))
    for view, reference in FLATS.items():
        by_hour = "infrastore_zone_hours" in sql[view]
        assert by_hour == (reference == "America/Denver"), view
        assert ("infrastore_zone_days" in sql[view]) != by_hour, view
        assert len(sql[view]) < 8192
        forecast = "Deterministic" in view
        cols = "timestamp, timestamp_iso" + (", issue_time, issue_time_iso" if forecast else "")
        rows = _rows(zoned, f"SELECT {cols} FROM {view}")
        assert rows
        for row in rows:
            for ms, text in zip(row[::2], row[1::2], strict=True):
                assert text == ms_to_datetime(ms, reference).isoformat(timespec="milliseconds")
    hours = set()
    for view in (v for v, r in FLATS.items() if r == "America/Denver"):
        for column in ("timestamp", "issue_time") if "Deterministic" in view else ("timestamp",):
            hours |= {
                h
                for (h,) in _rows(
                    zoned, f"SELECT DISTINCT ({column} + {_SHIFT}) / 3600000 FROM {view}"
                )
            }
    zone_id = dict(_rows(zoned, "SELECT reference, id FROM infrastore_zones"))["America/Denver"]
    keys = {k - zone_id * 10**8 for (k,) in _rows(zoned, "SELECT key FROM infrastore_zone_hours")}
    # Every hour of the data has its row; no more rows than the partitions have values
    # (a grid's span's hours; the three far instants' own three).
    assert hours <= keys
    (rows,) = _rows(
        zoned,
        "SELECT (SELECT count(*) FROM SingleTimeSeries_f64_America_Denver_values) + "
        "(SELECT count(*) FROM Deterministic_f64_America_Denver_values) + "
        "(SELECT count(*) FROM NonSequentialTimeSeries_f64_America_Denver_values)",
    )[0]
    assert len(keys) <= rows and len(keys) < 100
    # Denver has no day rows; Kolkata has those of its span's years.
    zones = dict(_rows(zoned, "SELECT reference, id FROM infrastore_zones"))
    per_zone = dict(
        _rows(zoned, "SELECT key / 10000000, count(*) FROM infrastore_zone_days GROUP BY 1")
    )
    assert zones["America/Denver"] not in per_zone and per_zone[zones["Asia/Kolkata"]] == 366


def test_duckdb_gives_the_hourly_text_sqlite_gives(zoned: Path) -> None:
    """DuckDB binds the hourly views in its own SQL and computes the same text."""
    duckdb = pytest.importorskip("duckdb")
    wheel = pytest.importorskip("duckdb_extension_sqlite_scanner")
    found = sorted(Path(wheel.__file__).parent.glob("extensions/*/sqlite_scanner.duckdb_extension"))
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    con.load_extension(str(found[-1]))
    con.execute(f"ATTACH '{zoned}' AS f (TYPE sqlite, READ_ONLY)")
    for view in FLATS:
        forecast = "Deterministic" in view
        cols = "timestamp, timestamp_iso" + (", issue_time, issue_time_iso" if forecast else "")
        query = f"SELECT {cols} FROM {{}}{view} ORDER BY 1" + (", 3" if forecast else "")
        theirs = con.execute(query.format("f.")).fetchall()
        ours = _rows(zoned, query.format(""))
        assert theirs == ours and ours, view


def test_a_second_export_adds_the_hours_it_needs(tmp_path: Path) -> None:
    """An export into a file that holds a zone's hours adds the new partition's hours and
    keeps the others (the rows are the same for the same hour)."""
    denver = ZoneInfo("America/Denver")
    store = I.Store.create(tmp_path / "s.h5")
    try:
        a = I.SingleTimeSeries(datetime(2024, 1, 1, tzinfo=denver), "PT1H", np.arange(5.0), "a")
        store.add_time_series(1, "Gen", "Component", a)
        db = tmp_path / "out.db"
        store.export_sqlite(db, name="a")
        b_start = datetime(2024, 1, 1, tzinfo=denver) + timedelta(hours=3)
        b = I.NonSequentialTimeSeries([b_start, b_start + timedelta(days=400)], [1.0, 2.0], "b")
        store.add_time_series(2, "Gen", "Component", b)
        store.export_sqlite(db, name="b", table_prefix="more_")
    finally:
        store.close()
    (count,) = _rows(db, "SELECT count(*) FROM infrastore_zone_hours")[0]
    assert count == 5 + 1  # b's first instant shares a's fourth hour
    for view in (
        "flat_SingleTimeSeries_f64_America_Denver",
        "more_flat_NonSequentialTimeSeries_f64_America_Denver",
    ):
        for ms, text in _rows(db, f"SELECT timestamp, timestamp_iso FROM {view}"):
            assert text == ms_to_datetime(ms, "America/Denver").isoformat(timespec="milliseconds")


@pytest.mark.parametrize("hourly", [False, True])
def test_a_change_before_1970_falls_on_its_second(hourly: bool) -> None:
    """Denver's fall back of 1918 (08:00 UTC): the instants of its first second read at
    the new offset (the change was found a second late before 1970, where int()
    rounded a negative timestamp up), by the day rows and by the hour rows."""
    at = _ms(datetime(1918, 10, 27, 8, tzinfo=UTC))
    instants = [at - 1, at, at + 500, at + 999, at + 1000]
    span = (instants[0], instants[-1])
    reference = "America/Denver"
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE t (timestamp INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?)", [(ms,) for ms in instants])
    ids = write_calendar(conn, [(reference, span)], hourly=[hourly])
    if hourly:
        hours = sorted({(ms + _SHIFT) // 3_600_000 for ms in instants})
        write_zone_hours(conn, reference, ids[reference], hours, span)
    joins, iso = iso_sql("timestamp", reference, "ts", ids[reference], hourly=hourly)
    got = dict(conn.execute(f"SELECT timestamp, {iso} FROM t{joins}"))
    assert got[at - 1] == "1918-10-27T01:59:59.999-06:00"
    for ms in instants:
        assert got[ms] == ms_to_datetime(ms, reference).isoformat(timespec="milliseconds"), ms
