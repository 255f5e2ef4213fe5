"""An export of chosen series by catalog id (``ids=``, the command line's ``--id``): the
ids narrow what the other filters select, an id the store does not hold is refused before
anything is written, and the reference's listing calls still refuse the keyword."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from conftest import query

from infrastore_sqlite import SingleTimeSeries, Store
from infrastore_sqlite.errors import NotFoundError, ParameterTypeError
from infrastore_sqlite.textfiles import export_series_files

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def hourly_series(values: np.ndarray, *, name: str) -> SingleTimeSeries:
    return SingleTimeSeries(T0, "PT1H", values, name)


@pytest.fixture
def filled(store: Store) -> tuple[Store, list[int]]:
    ids = [
        store.add_time_series(
            owner, "PowerLoad", "Component", hourly_series(np.arange(24.0) + owner, name=name)
        )
        for owner, name in [(1, "load"), (2, "load"), (3, "wind"), (4, "wind")]
    ]
    return store, ids


def _exported_ids(db: Path) -> list[int]:
    rows = query(db, "SELECT owner_id FROM all_series ORDER BY owner_id")
    return [r[0] for r in rows]


def test_ids_choose_the_series(filled: tuple[Store, list[int]], tmp_path: Path) -> None:
    store, ids = filled
    parts = store.export_sqlite(tmp_path / "a.db", ids=[ids[3], ids[0]])
    assert sum(p["series"] for p in parts) == 2
    assert _exported_ids(tmp_path / "a.db") == [1, 4]
    # With another filter, both apply: owner 4's series is not named "load".
    store.export_sqlite(tmp_path / "b.db", ids=[ids[0], ids[3]], name="load")
    assert _exported_ids(tmp_path / "b.db") == [1]
    # The file's provenance row records the ids with the rest of the selection.
    (selection,) = query(tmp_path / "a.db", "SELECT selection FROM infrastore_exports")[0]
    assert f"[{ids[0]},{ids[3]}]" in selection or f"[{ids[3]},{ids[0]}]" in selection


def test_an_unknown_id_is_refused_and_nothing_is_written(
    filled: tuple[Store, list[int]], tmp_path: Path
) -> None:
    store, ids = filled
    gone = max(ids) + 100
    with pytest.raises(NotFoundError) as info:
        store.export_sqlite(tmp_path / "a.db", ids=[ids[0], gone])
    assert str(gone) in str(info.value)
    assert str(info.value).endswith("; list_metadata shows the ids the store holds")
    assert "infrastore-sqlite list" in info.value.render("cli")
    assert not (tmp_path / "a.db").exists()
    with pytest.raises(NotFoundError):
        store.export_parquet(tmp_path / "pq", ids=[gone])
    assert not (tmp_path / "pq").exists() or not any((tmp_path / "pq").iterdir())
    with pytest.raises(NotFoundError):
        export_series_files(store, tmp_path / "csv", "csv", ids=[gone])
    assert not (tmp_path / "csv").exists()


def test_ids_in_the_parquet_and_text_exports(
    filled: tuple[Store, list[int]], tmp_path: Path
) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    store, ids = filled
    parts = store.export_parquet(tmp_path / "pq", ids=[ids[1], ids[2]])
    owners = sorted(
        o for p in parts for o in pq.read_table(p["series_file"])["owner_id"].to_pylist()
    )
    assert owners == [2, 3]
    files = export_series_files(store, tmp_path / "csv", "csv", ids=[ids[2]])
    assert [f.id for f in files] == [ids[2]]


def test_ids_must_be_integers(filled: tuple[Store, list[int]], tmp_path: Path) -> None:
    store, _ = filled
    for bad in ("12", [1.5], [True], 3):
        with pytest.raises(ParameterTypeError, match="ids must be"):
            store.export_sqlite(tmp_path / "a.db", ids=bad)
    assert not (tmp_path / "a.db").exists()


def test_an_empty_id_list_selects_nothing(filled: tuple[Store, list[int]], tmp_path: Path) -> None:
    store, _ = filled
    assert store.export_sqlite(tmp_path / "a.db", ids=[]) == []
    assert not (tmp_path / "a.db").exists()


def test_the_reference_listing_calls_refuse_ids(filled: tuple[Store, list[int]]) -> None:
    store, ids = filled
    for call in (
        store.list_metadata,
        store.list_names,
        store.list_owner_types,
        store.has_any_time_series,
    ):
        with pytest.raises(TypeError, match="unknown filter keyword"):
            call(ids=ids)
    with pytest.raises(TypeError, match="unknown filter keyword"):
        store.remove_by_filter(ids=ids)
    assert len(store.list_metadata()) == 4  # nothing was removed


def test_many_ids_are_one_statement(store: Store, tmp_path: Path) -> None:
    # More ids than SQLite binds parameters (32,766): one bound array, not one each.
    items = [
        {
            "owner_id": i,
            "owner_type": "PowerLoad",
            "owner_category": "Component",
            "time_series": hourly_series(np.full(2, float(i)), name="x"),
        }
        for i in range(40_000)
    ]
    ids = store.add_time_series_bulk(items)
    chosen = [*ids[::2], ids[-1]]
    assert len(store.select_rows(ids=chosen)) == len(set(chosen))
    parts = store.export_sqlite(tmp_path / "a.db", ids=chosen, dry_run=True)
    assert sum(p["series"] for p in parts) == len(set(chosen))
