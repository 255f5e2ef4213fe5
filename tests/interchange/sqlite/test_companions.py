"""What an export writes beside the layout (issue 24): the typed companion views and the
provenance table ``infrastore_exports``; both imports (ours and the reference's) ignore
them. The readers that read the companions are in ``test_file_readers.py``."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_roundtrip_sqlite import T0, assert_same_store, build_varied

import infrastore_sqlite as I
from infrastore_sqlite.errors import InvalidParameterError


def _store(path: Path) -> I.Store:
    store = I.Store.create(path)
    for owner, name in ((1, "load"), (2, "load"), (3, "wind")):
        store.add_time_series(
            owner,
            "PowerLoad",
            "Component",
            I.SingleTimeSeries(T0, "PT1H", np.arange(24.0) * owner, name, units="MW"),
        )
    store.add_time_series(
        4, "Gen", "Component", I.SingleTimeSeries(T0, "PT1H", np.arange(24), "count")
    )
    return store


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_each_export_appends_one_provenance_row(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.h5")
    db = tmp_path / "out.db"
    store.export_sqlite(db)
    window = (datetime(2024, 1, 1, 2, tzinfo=UTC), datetime(2024, 1, 1, 5, tzinfo=UTC))
    store.export_sqlite(db, table_prefix="run2_", name="load", time_range=window)
    rows = _rows(
        db,
        "SELECT tool, tool_version, store, table_prefix, selection, time_range_start, "
        "time_range_end, include_derived, partitions, series, rows, written_at "
        "FROM infrastore_exports ORDER BY id",
    )
    assert len(rows) == 2
    first, second = rows
    # The file is handed out: the store's name, never where it lives.
    assert first[:4] == ("infrastore-sqlite", I.__version__, "s.h5", "")
    assert str(tmp_path) not in db.read_bytes().decode("latin-1")
    assert json.loads(first[4]) == {}
    assert first[5:8] == (None, None, 0)
    assert json.loads(first[8]) == ["SingleTimeSeries_f64_utc", "SingleTimeSeries_i64_utc"]
    assert first[9:11] == (4, 96)
    assert datetime.fromisoformat(first[11]).tzinfo is not None
    assert second[3] == "run2_"
    assert json.loads(second[4]) == {"name": "load"}
    assert second[5:7] == (window[0].isoformat(), window[1].isoformat())
    assert json.loads(second[8]) == ["SingleTimeSeries_f64_utc"]
    assert second[9:11] == (2, 6)


def test_the_full_path_is_recorded_only_when_asked(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from infrastore_sqlite.cli import cli

    store = _store(tmp_path / "s.h5")
    db = tmp_path / "out.db"
    store.export_sqlite(db, provenance="full")
    assert _rows(db, "SELECT store FROM infrastore_exports") == [(str(store.path.resolve()),)]
    with pytest.raises(InvalidParameterError, match='provenance must be "name" or "full"'):
        store.export_sqlite(tmp_path / "x.db", provenance="path")
    store.close()
    run = CliRunner().invoke
    args = ["--store", str(tmp_path / "s.h5"), "export", "-f", "sqlite"]
    assert run(cli, [*args, "--db", str(tmp_path / "c.db")]).exit_code == 0
    assert run(cli, [*args, "--db", str(tmp_path / "f.db"), "--provenance", "full"]).exit_code == 0
    assert _rows(tmp_path / "c.db", "SELECT store FROM infrastore_exports") == [("s.h5",)]
    assert _rows(tmp_path / "f.db", "SELECT store FROM infrastore_exports") == [
        (str((tmp_path / "s.h5").resolve()),)
    ]
    refused = run(cli, ["--store", str(tmp_path / "s.h5"), "export", "-f", "parquet", "--dir",
                        str(tmp_path / "pq"), "--provenance", "full"])  # fmt: skip
    assert refused.exit_code == 2 and "--provenance goes with -f sqlite --db FILE" in refused.output


def test_a_dry_run_writes_no_provenance(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.h5")
    db = tmp_path / "out.db"
    store.export_sqlite(db)
    store.export_sqlite(db, table_prefix="b_", dry_run=True)
    assert _rows(db, "SELECT count(*) FROM infrastore_exports") == [(1,)]


def test_our_import_ignores_the_companions_and_the_log(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.h5")
    db = tmp_path / "out.db"
    store.export_sqlite(db)
    store.export_sqlite(db, table_prefix="run2_", name="load")
    assert {n for (n,) in _rows(db, "SELECT name FROM sqlite_master WHERE type='view'")} >= {
        "all_values_real_static",
        "all_values_integer_static",
        "flat_SingleTimeSeries_f64_utc",
        "run2_all_values_real_static",
        "run2_flat_SingleTimeSeries_f64_utc",
    }
    dst = I.Store.create(tmp_path / "dst.h5")
    assert len(dst.import_sqlite(db)) == 4
    report = dst.import_sqlite(db, table_prefix="run2_", on_conflict="ignore")
    assert [p["skipped"] for p in report.partitions] == [2]
    assert_same_store(store, dst)


def test_companions_span_every_export_under_a_prefix(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.h5")
    db = tmp_path / "out.db"
    store.export_sqlite(db, table_prefix="p_", owner_type="PowerLoad")
    store.export_sqlite(db, table_prefix="p_", name="count")
    assert _rows(db, "SELECT count(*) FROM p_all_values_real_static") == [(72,)]
    assert _rows(db, "SELECT count(*), typeof(value) FROM p_all_values_integer_static") == [
        (24, "integer")
    ]
    flat = _rows(db, "SELECT DISTINCT owner_id, name, units FROM p_flat_SingleTimeSeries_f64_utc")
    assert sorted(flat) == [(1, "load", "MW"), (2, "load", "MW"), (3, "wind", "MW")]


def test_an_export_drops_the_typed_views_of_before_the_split(tmp_path: Path) -> None:
    """A file an earlier version wrote has one typed view per class (``all_values_real``,
    NULL key columns); the next export under its prefix drops ours, so no view is left
    that stopped spanning the partitions, and leaves one that is not ours."""
    from infrastore_sqlite.interchange.sqlite.companions import COMPANION_MARKER

    store = _store(tmp_path / "s.h5")
    db = tmp_path / "out.db"
    store.export_sqlite(db, owner_type="PowerLoad")
    with sqlite3.connect(db) as conn:
        conn.execute(
            f"CREATE VIEW all_values_real AS /* {COMPANION_MARKER} */ "
            "SELECT value FROM SingleTimeSeries_f64_utc_values"
        )
        conn.execute("CREATE VIEW p_all_values_real AS SELECT 1 AS value")
    store.export_sqlite(db, name="count")
    views = {n for (n,) in _rows(db, "SELECT name FROM sqlite_master WHERE type = 'view'")}
    assert "all_values_real" not in views
    assert {"p_all_values_real", "all_values_real_static", "all_values_integer_static"} <= views


@pytest.mark.parametrize(
    ("ddl", "name"),
    [
        ("CREATE TABLE all_values_real_static (x)", "all_values_real_static"),
        ("CREATE VIEW flat_SingleTimeSeries_f64_utc AS SELECT 1", "flat_SingleTimeSeries_f64_utc"),
        ("CREATE TABLE infrastore_exports (x)", "infrastore_exports"),
        ("CREATE VIEW infrastore_days AS SELECT 1 AS day", "infrastore_days"),
        ("CREATE TABLE infrastore_zone_days (day)", "infrastore_zone_days"),
    ],
)
def test_a_name_the_additions_take_is_refused(tmp_path: Path, ddl: str, name: str) -> None:
    store = _store(tmp_path / "s.h5")
    db = tmp_path / "out.db"
    with sqlite3.connect(db) as conn:
        conn.execute(ddl)
    before = _rows(db, "SELECT name FROM sqlite_master ORDER BY name")
    with pytest.raises(InvalidParameterError, match=f"already holds {name}.*nothing was written"):
        store.export_sqlite(db)
    with pytest.raises(InvalidParameterError, match=f"already holds {name}"):
        store.export_sqlite(db, dry_run=True)
    assert _rows(db, "SELECT name FROM sqlite_master ORDER BY name") == before


def test_companions_over_partitions_the_reference_wrote(tmp_path: Path) -> None:
    """Our export into a file the reference wrote: the companions span both exports'
    partitions, the earlier ones typed from their tables."""
    ref = pytest.importorskip("infrastore")
    theirs = ref.Store.create(str(tmp_path / "theirs.h5"))
    theirs.add_time_series(
        7, "Gen", ref.OwnerCategory.Component, ref.SingleTimeSeries(T0, "PT1H", np.arange(5), "n")
    )
    db = tmp_path / "mixed.db"
    theirs.export_sqlite(str(db))
    theirs.close()
    _store(tmp_path / "s.h5").export_sqlite(db, owner_type="PowerLoad")
    assert _rows(db, "SELECT count(*) FROM all_values_integer_static") == [(5,)]
    assert _rows(db, "SELECT DISTINCT owner_id FROM flat_SingleTimeSeries_i64_utc") == [(7,)]
    assert _rows(db, "SELECT count(*) FROM infrastore_exports") == [(1,)]


@pytest.mark.interop
def test_the_reference_imports_a_file_with_the_additions(tmp_path: Path) -> None:
    ref = pytest.importorskip("infrastore")
    ours = I.Store.create(tmp_path / "ours.h5")
    build_varied(I, ours)
    db = tmp_path / "ours.db"
    ours.export_sqlite(db)
    ours.export_sqlite(db, table_prefix="again_")
    assert _rows(db, "SELECT count(*) FROM infrastore_exports") == [(2,)]
    assert (
        _rows(db, "SELECT count(*) FROM sqlite_master WHERE name LIKE '%flat\\_%' ESCAPE '\\'")[0][
            0
        ]
        > 10
    )
    for prefix in ("", "again_"):
        theirs = ref.Store.create(str(tmp_path / f"theirs{prefix}.h5"))
        ids = theirs.import_sqlite(str(db), table_prefix=prefix)
        assert len(ids) == len(ours.list_metadata())
        assert_same_store(ours, theirs)


@pytest.mark.parametrize(
    "reference", ["Europe/London", "America/Denver", "Africa/Casablanca", "Asia/Kolkata", "+05:30"]
)
def test_iso_text_agrees_with_python(reference: str) -> None:
    """The SQL that renders an instant in a zone or offset gives what Python's zoneinfo
    gives, across DST changes (hourly instants over three years, and random ones)."""
    import apsw

    from infrastore_sqlite.core.timeref import ms_to_datetime
    from infrastore_sqlite.interchange.sqlite.companions import iso_sql, write_calendar

    start = int(datetime(2023, 1, 1, tzinfo=UTC).timestamp() * 1000)
    hourly = range(start, start + 3 * 365 * 86_400_000, 3_600_000)
    rng = np.random.default_rng(24)
    scattered = rng.integers(0, 4_000_000_000_000, 2000).tolist()
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE t (timestamp INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?)", [(ms,) for ms in [*hourly, *scattered]])
    ids = write_calendar(conn, [(reference, None)])
    joins, iso = iso_sql("timestamp", reference, "ts", ids.get(reference))
    sql = f"SELECT timestamp, {iso} FROM t{joins}"
    for ms, text in conn.execute(sql):
        # The same instant, at the same offset (datetimes are compared as instants:
        # PEP 495 makes a repeated hour unequal to anything in another tzinfo).
        dt = ms_to_datetime(ms, reference)
        assert round(datetime.fromisoformat(text).timestamp() * 1000) == ms, (ms, text)
        assert text[-6:] == dt.isoformat()[-6:], (ms, text, dt.isoformat())


def _ms(dt: datetime) -> int:
    return round(dt.timestamp() * 1000)


def _check_iso(reference: str, instants: list[int], span: tuple[int, int] | None) -> None:
    """Inside the UTC years of ``span`` (1970–2099 without one) each instant's ISO text
    from the SQL names that instant at the offset zoneinfo gives it; outside, NULL."""
    import apsw

    from infrastore_sqlite.core.timeref import ms_to_datetime
    from infrastore_sqlite.interchange.sqlite.companions import iso_sql, write_calendar

    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE t (timestamp INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?)", [(ms,) for ms in instants])
    ids = write_calendar(conn, [(reference, span)])
    joins, iso = iso_sql("timestamp", reference, "ts", ids.get(reference))
    sql = f"SELECT timestamp, {iso} FROM t{joins}"
    first, last = (span[0], span[1]) if span else (0, _ms(datetime(2100, 1, 1, tzinfo=UTC)) - 1)
    years = range(_utc(first).year, _utc(last).year + 1)
    for ms, text in conn.execute(sql):
        if _utc(ms).year not in years:
            assert text is None, (ms, text)
            continue
        expected = ms_to_datetime(ms, reference).isoformat(timespec="milliseconds")
        assert text == expected, (ms, text, expected)
        assert round(datetime.fromisoformat(text).timestamp() * 1000) == ms, (ms, text)


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


@pytest.mark.parametrize(
    ("reference", "change"),
    [
        ("America/Denver", datetime(2024, 11, 3, 8, tzinfo=UTC)),  # fall back
        ("Australia/Sydney", datetime(2024, 4, 6, 16, tzinfo=UTC)),  # southern autumn
        ("Europe/London", datetime(2025, 3, 30, 1, tzinfo=UTC)),  # spring forward
    ],
)
def test_iso_text_over_a_data_span_across_a_dst_change(reference: str, change: datetime) -> None:
    """The offsets are computed over the data's span only: a span across a DST change,
    one ending exactly at the change, and one starting exactly at it all agree with
    zoneinfo inside, and are NULL a year beyond (outside the span's years)."""
    at = _ms(change)
    hour, year = 3_600_000, 366 * 86_400_000
    across = list(range(at - 48 * hour, at + 48 * hour, hour // 4))
    _check_iso(reference, across, (across[0], across[-1]))
    ending = [at - 3 * hour, at - 1, at]
    _check_iso(reference, [*ending, at + year, at - year], (ending[0], at))
    starting = [at, at + 1, at + 3 * hour]
    _check_iso(reference, [*starting, at - year, at + year], (at, starting[-1]))


_FIRST_1900 = _ms(datetime(1900, 1, 1, tzinfo=UTC))
_LAST_2199 = _ms(datetime(2200, 1, 1, tzinfo=UTC)) - 1


@settings(max_examples=150, deadline=None)
@given(
    instant=st.integers(_FIRST_1900, _LAST_2199),
    reference=st.sampled_from(["utc", "+05:30", "-03:00", "America/Denver", "Europe/London"]),
)
def test_iso_text_matches_python_from_1900_to_2199(instant: int, reference: str) -> None:
    """Any instant of 1900–2199, in a span around it (the instant and the next four
    hours, so a DST change may fall inside), reads in SQLite as Python writes it: ``Z``
    for UTC, the offset for a fixed offset or a zone, milliseconds always."""
    import apsw

    from infrastore_sqlite.core.timeref import ms_to_datetime
    from infrastore_sqlite.interchange.sqlite.companions import iso_sql, write_calendar

    instants = [instant + k * 3_600_000 for k in range(5) if instant + k * 3_600_000 <= _LAST_2199]
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE t (timestamp INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?)", [(ms,) for ms in instants])
    span = (instants[0], instants[-1])
    ids = write_calendar(conn, [(reference, span)])
    joins, iso = iso_sql("timestamp", reference, "ts", ids.get(reference))
    sql = f"SELECT timestamp, {iso} FROM t{joins}"
    for ms, text in conn.execute(sql):
        expected = ms_to_datetime(ms, reference).isoformat(timespec="milliseconds")
        if reference == "utc":
            expected = expected.replace("+00:00", "Z")
        assert text == expected, (ms, text, expected)


def test_zone_offsets_cover_only_the_years_asked() -> None:
    from infrastore_sqlite.interchange.sqlite.companions import zone_offsets

    whole = zone_offsets("America/Denver")
    one = zone_offsets("America/Denver", 2024, 2024)
    in_2024 = [c for c in whole[1:] if _ms(datetime(2024, 1, 1, tzinfo=UTC)) <= c[0]]
    in_2024 = [c for c in in_2024 if c[0] <= _ms(datetime(2025, 1, 1, tzinfo=UTC))]
    assert len(one) == 3 and list(one[1:]) == in_2024  # spring forward, fall back
    assert one[0][1] == -7 * 3600  # the offset before them: MST
    assert len(whole) > 200  # 1970–2099: two changes a year, mostly


def test_an_export_renders_a_zoned_forecast_across_fall_back(tmp_path: Path) -> None:
    """The export's span comes from the series rows (a forecast: issue times, interval,
    horizon); its windows cross Denver's fall-back night, the second issued at its instant."""
    from zoneinfo import ZoneInfo

    from infrastore_sqlite.core.timeref import ms_to_datetime

    denver = ZoneInfo("America/Denver")
    start = datetime(2024, 11, 2, 20, tzinfo=denver)
    store = I.Store.create(tmp_path / "zoned-store")
    data = np.arange(24.0).reshape(12, 2)  # two windows of 12 hours, 6 hours apart
    store.add_time_series(
        1, "Gen", "Component", I.Deterministic(start, "PT1H", "PT12H", "PT6H", 2, data, "f")
    )
    store.export_sqlite(tmp_path / "zoned.db")
    store.close()
    view = "flat_Deterministic_f64_America_Denver"
    rows = _rows(
        tmp_path / "zoned.db",
        f"SELECT timestamp, timestamp_iso, issue_time, issue_time_iso FROM {view}",
    )
    assert len(rows) == 24
    offsets = set()
    for ts, ts_iso, issue, issue_iso in rows:
        for ms, text in ((ts, ts_iso), (issue, issue_iso)):
            assert text == ms_to_datetime(ms, "America/Denver").isoformat(timespec="milliseconds")
            offsets.add(text[-6:])
    assert offsets == {"-06:00", "-07:00"}


def test_flat_views_stay_small_whatever_the_span(tmp_path: Path) -> None:
    """Each flat view's SQL is under 8 KB however many years its partition spans (issue
    38: it grew ~9 KB a year, ~220 KB for 30 years): the calendar is rows of
    ``infrastore_days`` / ``infrastore_zone_days``, not SQL. Here 200 years of months in
    a zone, a fixed offset and UTC, and a forecast (two instants rendered)."""
    from zoneinfo import ZoneInfo

    store = I.Store.create(tmp_path / "s.h5")
    months = np.arange(2400.0)
    for i, start in enumerate(
        [
            datetime(1900, 1, 1, tzinfo=UTC),
            datetime(1900, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        ]
    ):
        store.add_time_series(i, "Gen", "Component", I.SingleTimeSeries(start, "P1M", months, "m"))
    denver = ZoneInfo("America/Denver")
    instants = [datetime(y, m, 1, tzinfo=denver) for y in range(1900, 2100) for m in (1, 7, 12)]
    zoned = I.NonSequentialTimeSeries(instants, np.arange(float(len(instants))), "z")
    store.add_time_series(5, "Gen", "Component", zoned)
    forecast = I.Deterministic(T0, "PT1H", "PT2H", "PT1H", 2, np.arange(4.0).reshape(2, 2), "f")
    store.add_time_series(9, "Gen", "Component", forecast)
    db = tmp_path / "out.db"
    store.export_sqlite(db)
    sizes = dict(_rows(db, "SELECT name, length(sql) FROM sqlite_master WHERE name LIKE 'flat%'"))
    assert len(sizes) == 4 and max(sizes.values()) < 8192, sizes
    last = _rows(
        db,
        "SELECT timestamp_iso FROM flat_NonSequentialTimeSeries_f64_America_Denver "
        "ORDER BY timestamp DESC LIMIT 1",
    )
    assert last == [("2099-12-01T00:00:00.000-07:00",)]
    # The days of every UTC year spanned (a grid's span may reach a little past its end).
    ((first, last),) = _rows(db, "SELECT min(date), max(date) FROM infrastore_days")
    assert first == "1899-12-31" and last >= "2100-01-01"
