"""One conformance suite for :class:`PartitionSource`, the protocol the import core reads
a partition through: the same checks against the SQLite reader and the Parquet reader,
each reading one store exported to its container.

Every check drives a reader as the core does (``reading``, ``check_columns``, the arrays
and series rows, ``values_count``, ``open_values``, ``groups`` once, ``close_values``) and
asks what the protocol promises: every partition listed, every group handed back in key
order with its rows (rebuilt, each array hashes to its key), the counts, the refusal of a
partition that lost a table or holds a values row of no array, and the store's bounds.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
    Store,
)
from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.importing import (
    Options,
    PartitionSource,
    Place,
    build_group,
    first_specs,
    read_rows,
)
from infrastore_sqlite.interchange.importing.limits import Limits
from infrastore_sqlite.interchange.parquet import discovery as parquet_discovery
from infrastore_sqlite.interchange.parquet.partition import PartitionReader as ParquetReader
from infrastore_sqlite.interchange.sqlite.database import open_database
from infrastore_sqlite.interchange.sqlite.reader import PartitionReader as SqliteReader
from infrastore_sqlite.interchange.sqlite.reader import discover as sqlite_discover

T0 = datetime(2024, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)


def _build(store: Store) -> None:
    """Every partition kind the import reads, several arrays in most, one array named by
    two series (the values are held once, the series rows twice), and consecutive arrays
    of one length (the SQLite reader's run read)."""
    rng = np.random.default_rng(35)
    shared = rng.random(24)
    items: list[tuple[int, Any]] = [
        (1, SingleTimeSeries(T0, "PT1H", shared, "load")),
        (2, SingleTimeSeries(T0, "PT1H", shared, "load")),  # the same array
        (3, SingleTimeSeries(T0 + 5 * H, "PT1H", rng.random(48), "load")),
        # Arrays of one length and resolution, which the SQLite reader reads as a run.
        *((k, SingleTimeSeries(T0 + k * H, "PT1H", rng.random(24), "run")) for k in range(6, 9)),
        (4, SingleTimeSeries(T0, "PT15M", rng.random(7), "wind")),
        (5, SingleTimeSeries(T0, "P1M", rng.random(5), "monthly")),  # a calendar grid
        (1, NonSequentialTimeSeries([T0, T0 + 3 * H, T0 + 4 * H], rng.random(3), "events")),
        (2, NonSequentialTimeSeries([T0, T0 + 30 * H], rng.random(2), "events")),
        (1, Deterministic(T0, "PT1H", "PT3H", "PT2H", 2, rng.random((3, 2)), "det")),
        (2, Deterministic(T0, "PT1H", "PT4H", "PT1H", 3, rng.random((4, 3)), "det")),
        (
            1,
            Probabilistic(
                T0, "PT1H", "PT2H", "PT1H", 2, [0.1, 0.5, 0.9], rng.random((3, 2, 2)), "p"
            ),
        ),
        (1, Scenarios(T0, "PT1H", "PT2H", "PT1H", 3, rng.random((2, 2, 3)), "scen")),
    ]
    for owner, ts in items:
        store.add_time_series(owner, "Gen", "Component", ts)


class Container:
    """One container's side of the suite: how its export is written and read, and how
    a partition is damaged there."""

    name: str

    def export(self, store: Store, dest: Path) -> Path:
        raise NotImplementedError

    @contextlib.contextmanager
    def sources(self, path: Path, limits: Limits | None = None) -> Iterator[list[PartitionSource]]:
        """The readers of every partition of the export at ``path`` (in the container's
        own partition order)."""
        raise NotImplementedError
        yield []

    def drop_arrays(self, path: Path, place: Place) -> str:
        """Remove the arrays table (file) of the partition ``place``; returns its name."""
        raise NotImplementedError

    def stray_row(self, path: Path, place: Place) -> None:
        """Add a values row to the partition ``place`` that names an array the arrays
        table (file) does not hold (after the others, with the highest ``array_id``: the
        rows stay in order, and no array loses a row)."""
        raise NotImplementedError


class SqliteContainer(Container):
    name = "sqlite"

    def export(self, store: Store, dest: Path) -> Path:
        db = dest / "export.db"
        store.export_sqlite(db)
        return db

    @contextlib.contextmanager
    def sources(self, path: Path, limits: Limits | None = None) -> Iterator[list[PartitionSource]]:
        conn = open_database(path, read_only=True)
        try:
            conn.execute("BEGIN")  # one snapshot, as the import reads
            where = str(path)
            yield [
                SqliteReader.of(conn, p, where, limits) for p in sqlite_discover(conn, "", where)
            ]
        finally:
            conn.close()

    def _edit(self, path: Path, sql: str) -> None:
        conn = apsw.Connection(str(path))
        try:
            conn.execute(sql)
        finally:
            conn.close()

    def drop_arrays(self, path: Path, place: Place) -> str:
        self._edit(path, f'DROP TABLE "{place.arrays}"')
        return place.arrays

    def stray_row(self, path: Path, place: Place) -> None:
        values = place.values
        # A copy of the last row, naming no array (appended: it takes the next rowid).
        self._edit(
            path,
            f'INSERT INTO "{values}" SELECT * FROM "{values}" '
            f'WHERE rowid = (SELECT max(rowid) FROM "{values}"); '
            f'UPDATE "{values}" SET array_id = 1000000 '
            f'WHERE rowid = (SELECT max(rowid) FROM "{values}")',
        )


class ParquetContainer(Container):
    name = "parquet"

    def export(self, store: Store, dest: Path) -> Path:
        out = dest / "export"
        store.export_parquet(out)
        return out

    @contextlib.contextmanager
    def sources(self, path: Path, limits: Limits | None = None) -> Iterator[list[PartitionSource]]:
        found = parquet_discovery.discover(path)
        readers = [ParquetReader(pa, pq, p, found.where) for p in found.partitions]
        for reader in readers:
            if limits is not None:
                reader.limits = limits
        yield readers

    def drop_arrays(self, path: Path, place: Place) -> str:
        Path(place.arrays).unlink()
        return Path(place.arrays).name

    def stray_row(self, path: Path, place: Place) -> None:
        file = Path(place.values)
        table = pq.read_table(file)
        # A copy of the last row, naming no array, appended (the file stays sorted).
        table = pa.concat_tables([table, table.slice(table.num_rows - 1)])
        aid = table.column("array_id").to_numpy().copy()
        aid[-1] = 1_000_000
        at = table.schema.get_field_index("array_id")
        field = table.schema.field(at)
        table = table.set_column(at, field, pa.array(aid, field.type))
        pq.write_table(table, file)


CONTAINERS: dict[str, Container] = {c.name: c for c in (SqliteContainer(), ParquetContainer())}


@pytest.fixture(scope="module")
def store_snapshot(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The store every container exports, and what it holds per partition kind: the
    series' names and its arrays' content hashes."""
    d = tmp_path_factory.mktemp("partition-source")
    store = Store.create(d / "src.h5")
    try:
        _build(store)
        names: dict[str, list[str]] = {}
        hashes: dict[str, set[str]] = {}
        for meta in store.list_metadata():
            names.setdefault(meta["time_series_type"], []).append(meta["name"])
            hashes.setdefault(meta["time_series_type"], set()).add(meta["data_hash"])
        exports = {}
        for name, container in CONTAINERS.items():
            (d / name).mkdir()
            exports[name] = container.export(store, d / name)
    finally:
        store.close()
    return {
        "names": {k: sorted(v) for k, v in names.items()},
        "hashes": hashes,
        "exports": exports,
    }


@pytest.fixture(params=sorted(CONTAINERS))
def container(request: pytest.FixtureRequest) -> Container:
    return CONTAINERS[request.param]


@pytest.fixture
def export(store_snapshot: dict[str, Any], container: Container) -> Path:
    return store_snapshot["exports"][container.name]


@pytest.fixture
def private_export(export: Path, tmp_path: Path) -> Path:
    """A copy of the container's export one test may damage."""
    target = tmp_path / export.name
    if export.is_dir():
        shutil.copytree(export, target)
    else:
        shutil.copy(export, target)
    return target


class AheadOnly(Sequence[tuple[tuple[str, str], list[int], Any]]):
    """What a reader is asked for, as the core gives it: entries handed back are gone
    (a reader may look ahead of the entry it is at, never back)."""

    def __init__(self, entries: list[tuple[tuple[str, str], list[int], Any]]) -> None:
        self._entries = entries
        self.done = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            start = range(len(self._entries))[at][:1]
            assert not start or start[0] >= self.done, f"read back to entry {start[0]}"
            return self._entries[at]
        if at < 0:
            at += len(self._entries)
        assert at >= self.done, f"read back to entry {at} after {self.done} were handed back"
        return self._entries[at]


def read_partition(source: PartitionSource) -> dict[str, Any]:
    """Drive ``source`` as the import core does, and what it gave: the series rows, the
    values count, and per group ``(key, ids, rows, rebuilt array)`` in the order given."""
    opts = Options()
    with source.reading():
        arrays, specs = read_rows(source, opts)
        count = source.values_count()
        first = first_specs(specs)
        ids_by_key: dict[tuple[str, str], list[int]] = {}
        for aid, key in arrays.items():
            ids_by_key.setdefault(key, []).append(aid)
        wanted = AheadOnly(
            [(k, sorted(ids), first.get(k)) for k, ids in sorted(ids_by_key.items())]
        )
        groups = []
        source.open_values(arrays)
        try:
            for at, group in enumerate(source.groups(wanted, specs[0].et.dtype)):
                key, ids, spec = wanted[at]
                wanted.done = at + 1
                assert group is not None, f"no rows for {key}"
                built = build_group(source.place, group, [spec], opts)[spec.grid_key]
                groups.append((key, list(group.ids), group.n, ids, built))
            if sum(g[2] for g in groups) != count:
                source.check_unclaimed()  # as the core asks, when the rows do not add up
        finally:
            source.close_values()
    return {"specs": specs, "count": count, "groups": groups, "wanted": len(wanted)}


def test_every_partition_is_listed(export: Path, container: Container, store_snapshot) -> None:
    with container.sources(export) as sources:
        kinds = [s.place.type.name for s in sources]
        assert sorted(kinds) == sorted(store_snapshot["names"])  # one per kind, none twice
        for source in sources:
            assert str(export) in source.where or source.where in str(export)
            assert source.checksum is True  # an export records every array's hash
            assert source.rehash is not None


def test_groups_come_in_key_order_with_their_rows(
    export: Path, container: Container, store_snapshot
) -> None:
    with container.sources(export) as sources:
        for source in sources:
            got = read_partition(source)
            kind = source.place.type.name
            assert sorted(s.name for s in got["specs"]) == store_snapshot["names"][kind]
            keys = [g[0] for g in got["groups"]]
            assert len(keys) == got["wanted"]  # one group per entry asked for, none more
            assert keys == sorted(keys)  # key order
            # Every array the store holds, each once.
            assert sorted(k[0] for k in keys) == sorted(store_snapshot["hashes"][kind])
            for key, group_ids, _n, ids, built in got["groups"]:
                assert group_ids == ids
                # The rows, placed by the core, are the array the key names.
                assert built.hash_hex == key[0], (kind, key)


def test_counts_add_up(export: Path, container: Container, store_snapshot) -> None:
    with container.sources(export) as sources:
        for source in sources:
            got = read_partition(source)
            assert got["count"] == sum(n for _k, _i, n, _w, _b in got["groups"])
            assert got["count"] > 0
    # Two series name one SingleTimeSeries array: its rows are there once.
    with container.sources(export) as sources:
        (sts,) = [s for s in sources if s.place.type.name == "SingleTimeSeries"]
        got = read_partition(sts)
        assert len(got["specs"]) == 8
        assert len(got["groups"]) == 7
        assert got["count"] == 4 * 24 + 48 + 7 + 5


def test_both_containers_give_the_same_groups(store_snapshot) -> None:
    """Conformance across the two: per partition kind, the same keys, row counts and
    rebuilt arrays."""
    seen: dict[str, dict[str, list]] = {}
    for name, container in CONTAINERS.items():
        with container.sources(store_snapshot["exports"][name]) as sources:
            for source in sources:
                got = read_partition(source)
                seen.setdefault(source.place.type.name, {})[name] = [
                    (key, n, built.data.tobytes()) for key, _i, n, _w, built in got["groups"]
                ]
    assert sorted(seen) == sorted(store_snapshot["names"])
    for kind, by_container in seen.items():
        assert by_container["sqlite"] == by_container["parquet"], kind


def _of_kind(sources: list[PartitionSource], kind: str) -> PartitionSource:
    (source,) = [s for s in sources if s.place.type.name == kind]
    return source


@pytest.mark.parametrize("kind", ["SingleTimeSeries", "Deterministic"])
def test_a_missing_arrays_table_is_refused_by_name(
    private_export: Path, container: Container, kind: str
) -> None:
    with container.sources(private_export) as sources:
        place = _of_kind(sources, kind).place
    gone = container.drop_arrays(private_export, place)
    # Refused when the partitions are listed (both containers do), by the name of what
    # is missing; never a partition read without its arrays.
    with pytest.raises(InvalidParameterError) as info, container.sources(private_export) as sources:
        for source in sources:
            read_partition(source)
    assert gone in str(info.value)


@pytest.mark.parametrize("kind", ["SingleTimeSeries", "Probabilistic"])
def test_a_values_row_of_no_array_is_refused(
    private_export: Path, container: Container, kind: str
) -> None:
    with container.sources(private_export) as sources:
        place = _of_kind(sources, kind).place
    container.stray_row(private_export, place)
    with container.sources(private_export) as sources:
        source = _of_kind(sources, kind)
        with pytest.raises(InvalidParameterError) as info:
            read_partition(source)
        assert info.value.table == source.place.values
        assert "1000000" in str(info.value)  # the array_id no array holds
        for other in sources:
            if other is not source:
                read_partition(other)  # the other partitions read as ever


def test_an_array_over_the_bound_is_refused(export: Path, container: Container) -> None:
    # The longest SingleTimeSeries array holds 48 rows: a bound of 40 rows refuses it
    # (and only it: the others are shorter).
    limits = Limits.of(max_array_bytes=40 * 8 * 3)
    with container.sources(export, limits) as sources:
        source = _of_kind(sources, "SingleTimeSeries")
        with pytest.raises(InvalidParameterError) as info:
            read_partition(source)
    assert info.value.table == source.place.values
    assert "48" in str(info.value)
    with container.sources(export, Limits.of(max_array_bytes=48 * 8 * 3)) as sources:
        read_partition(_of_kind(sources, "SingleTimeSeries"))  # 48 rows fit 48
