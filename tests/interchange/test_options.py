"""Options as values (issue 35, Must 6): the selection checked where it is made, the export
and import options shared by both containers and by ``diff``, one report type whatever
an import's flags, and the Store's container methods spelled with their true keywords."""

from __future__ import annotations

import dataclasses
import inspect
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from varied_store import add, new_store, sts

from infrastore_sqlite import Store, TimeSeriesType
from infrastore_sqlite.errors import (
    DuplicateTimeSeriesError,
    InvalidParameterError,
    ParameterTypeError,
)
from infrastore_sqlite.interchange.importing import ImportReport
from infrastore_sqlite.interchange.importing.limits import Limits
from infrastore_sqlite.interchange.options import ExportOptions, ImportOptions
from infrastore_sqlite.interchange.selection import Selection

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)


@pytest.fixture
def filled(tmp_path: Path) -> Store:
    store = new_store(tmp_path / "s.h5")
    add(store, sts("a", np.arange(4.0)), owner=1)
    add(store, sts("b", np.arange(3.0)), owner=2)
    yield store
    store.close()


# ---------------------------------------------------------------------- the selection
@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"colour": "red"}, TypeError, "unknown filter keyword"),
        ({"owner_id": "one"}, ParameterTypeError, "owner_id must be an integer"),
        ({"time_range": (T0 + H, T0)}, InvalidParameterError, "end < start"),
        ({"time_range": (T0, datetime(2024, 1, 2))}, InvalidParameterError, "naive"),
        ({"time_range": (T0,)}, InvalidParameterError, "pair"),
        (
            {"time_series_type": "DeterministicSingleTimeSeries"},
            InvalidParameterError,
            "include_derived",
        ),
    ],
)
def test_a_selection_is_checked_where_it_is_made(kwargs: dict, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        Selection.of(**kwargs)


def test_a_selection_is_a_frozen_value(filled: Store) -> None:
    filters = {"owner_id": 1}
    sel = Selection(filters=filters, time_range=[T0, T0 + 2 * H])
    filters["owner_id"] = 2  # the caller's dict changes; the selection does not
    assert dict(sel.filters) == {"owner_id": 1}
    assert sel.time_range == (T0, T0 + 2 * H)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sel.include_derived = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        sel.filters["name"] = "x"  # type: ignore[index]
    assert Selection.of(owner_id=1, time_range=(T0, T0 + 2 * H)) == sel
    derived = Selection.of(
        time_series_type=TimeSeriesType.DeterministicSingleTimeSeries, include_derived=True
    )
    assert derived.include_derived


def test_a_bad_filter_is_refused_before_the_file_is_looked_at(
    filled: Store, tmp_path: Path
) -> None:
    # The parent directory is missing too: the selection is refused first, and nothing
    # is created.
    with pytest.raises(InvalidParameterError, match="end < start"):
        filled.export_sqlite(tmp_path / "missing" / "e.db", time_range=(T0 + H, T0))
    assert not (tmp_path / "missing").exists()


# ---------------------------------------------------------------------- export options
def test_export_options_serve_both_containers(filled: Store, tmp_path: Path) -> None:
    opts = ExportOptions(selection=Selection.of(owner_id=1))
    by_value = filled.export_sqlite(tmp_path / "v.db", options=opts)
    by_keyword = filled.export_sqlite(tmp_path / "k.db", owner_id=1)
    assert by_value == by_keyword
    assert [p["series"] for p in by_value] == [1]
    pytest.importorskip("pyarrow")
    parquet = filled.export_parquet(tmp_path / "pq", options=opts)
    assert [p["series"] for p in parquet] == [1]
    dry = filled.export_parquet(tmp_path / "dry", options=dataclasses.replace(opts, dry_run=True))
    assert [p["series"] for p in dry] == [1] and not (tmp_path / "dry").exists()


def test_export_options_and_their_keywords_at_once_are_refused(
    filled: Store, tmp_path: Path
) -> None:
    opts = ExportOptions.of(owner_id=1)
    with pytest.raises(InvalidParameterError, match=r"give dry_run=, name= inside it"):
        filled.export_sqlite(tmp_path / "e.db", options=opts, dry_run=True, name="a")
    with pytest.raises(InvalidParameterError, match="options must be ExportOptions"):
        filled.export_sqlite(tmp_path / "e.db", options=ImportOptions())  # type: ignore[arg-type]
    assert not (tmp_path / "e.db").exists()


def test_export_options_are_checked_where_made() -> None:
    with pytest.raises(InvalidParameterError, match="selection must be a Selection"):
        ExportOptions(selection={"owner_id": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="end < start"):
        ExportOptions.of(time_range=(T0 + H, T0))


# ---------------------------------------------------------------------- import options
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"on_conflict": "merge"}, "on_conflict must be one of"),
        ({"max_array_bytes": 0}, "max_array_bytes"),
        ({"overrides": ["name"]}, "overrides must be a dict"),
    ],
)
def test_import_options_are_checked_where_made(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        ImportOptions.of(**kwargs)


def test_import_options_serve_both_containers_and_diff(filled: Store, tmp_path: Path) -> None:
    filled.export_sqlite(tmp_path / "e.db")
    dst = new_store(tmp_path / "dst.h5")
    opts = ImportOptions(overrides={"owner_type": "Load"}, limits=Limits.of(max_cell_bytes=1 << 20))
    assert dst.diff_sqlite(tmp_path / "e.db", options=opts) == dst.diff_sqlite(
        tmp_path / "e.db", overrides={"owner_type": "Load"}, max_cell_bytes=1 << 20
    )
    ids = dst.import_sqlite(tmp_path / "e.db", options=opts)
    assert ids == [1, 2]
    assert {m["owner_type"] for m in dst.list_metadata()} == {"Load"}
    diff = dst.diff_sqlite(tmp_path / "e.db", options=opts)
    assert [d["change"] for d in diff] == ["unchanged", "unchanged"]
    with pytest.raises(InvalidParameterError, match="give skip_checksum= inside it"):
        dst.import_sqlite(tmp_path / "e.db", options=opts, skip_checksum=True)
    pytest.importorskip("pyarrow")
    filled.export_parquet(tmp_path / "pq")
    again = dst.import_parquet(
        tmp_path / "pq", options=dataclasses.replace(opts, on_conflict="ignore")
    )
    assert again == [1, 2] and sum(p["skipped"] for p in again.partitions) == 2
    assert [d["change"] for d in dst.diff_parquet(tmp_path / "pq", options=opts)] == [
        "unchanged",
        "unchanged",
    ]
    dst.close()


# ---------------------------------------------------------------------- one report type
@pytest.mark.parametrize(
    ("kwargs", "ids", "status"),
    [
        ({}, [1, 2], "committed"),
        ({"dry_run": True}, [], "would_add"),
        ({"per_partition": True}, [1, 2], "committed"),
        ({"on_conflict": "ignore"}, [1, 2], "committed"),
    ],
)
def test_an_import_reports_one_type_whatever_its_flags(
    filled: Store, tmp_path: Path, kwargs: dict, ids: list[int], status: str
) -> None:
    filled.export_sqlite(tmp_path / "e.db")
    dst = new_store(tmp_path / "dst.h5")
    report = dst.import_sqlite(tmp_path / "e.db", **kwargs)
    assert type(report) is ImportReport
    assert isinstance(report, list) and report == ids and list(report) == report.ids
    assert [p["status"] for p in report.partitions] == [status]
    assert report.partitions[0]["added"] == 2
    assert report.to_dict()["ids"] == ids
    dst.close()


def test_a_failed_per_partition_import_carries_the_committed_ids(
    filled: Store, tmp_path: Path
) -> None:
    add(filled, sts("c", np.arange(3, dtype=np.int32)), owner=3)  # a second partition
    filled.export_sqlite(tmp_path / "e.db")
    dst = new_store(tmp_path / "dst.h5")
    add(dst, sts("c", np.arange(3, dtype=np.int32)), owner=3)  # the i32 one clashes
    with pytest.raises(DuplicateTimeSeriesError) as err:
        dst.import_sqlite(tmp_path / "e.db", per_partition=True)
    report = err.value.report  # type: ignore[attr-defined]
    assert [p["status"] for p in report.partitions] == ["committed", "failed"]
    assert report == report.partitions[0]["ids"] == [2, 3]
    dst.close()


# ---------------------------------------------------------------------- true signatures
@pytest.mark.parametrize(
    ("method", "keywords", "returns"),
    [
        ("export_sqlite", {"table_prefix", "provenance", "options", "owner_id"}, "ExportSummary"),
        ("export_parquet", {"storage_options", "jobs", "options", "name"}, "list[dict[str, Any]]"),
        ("import_sqlite", {"table_prefix", "on_conflict", "options"}, "ImportReport"),
        ("import_parquet", {"storage_options", "per_partition", "options"}, "ImportReport"),
        ("diff_sqlite", {"table_prefix", "overrides", "options"}, "list[dict[str, Any]]"),
        ("diff_parquet", {"storage_options", "max_cell_bytes", "options"}, "list[dict[str, Any]]"),
    ],
)
def test_the_container_methods_spell_their_keywords(
    method: str, keywords: set[str], returns: str
) -> None:
    sig = inspect.signature(getattr(Store, method))
    params = list(sig.parameters.values())
    assert params[0].name == "self" and params[1].kind is params[1].POSITIONAL_OR_KEYWORD
    assert not any(p.kind is p.VAR_KEYWORD for p in params), "no **kwargs left to guess"
    named = {p.name for p in params[2:] if p.kind is p.KEYWORD_ONLY}
    assert keywords <= named
    assert sig.return_annotation == returns
