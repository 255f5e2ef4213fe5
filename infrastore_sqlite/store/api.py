"""Store members beyond adding, reading and removing: the reference's query and
maintenance API for the time-series part, kept apart from the rooms ``store.py`` delegates to.

``Store`` inherits :class:`StoreApi`; every member here is built on the store's public
members (``select_rows``, ``read_by_id``, ``add_time_series``, ``remove_by_filter``,
``load_arrays``, ``check_open`` …, declared in the class for type checkers), never on
HDF5, the catalog's tables or a room directly, so the rooms can change underneath without
these changing. The members that need the catalog (arrays by hash, owners, attributes,
``persist_to``) are the rooms' and delegated to by ``Store``.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np

from ..core.hashing import features_hash, validate_features
from ..core.periods import as_period
from ..core.timeref import ms_to_rfc3339
from ..errors import (
    IntegrityError,
    InvalidParameterError,
    IoError,
    ParameterTypeError,
    StoreExistsError,
    Term,
)
from ..model import OwnerCategory, TimeSeriesType
from . import readers
from .readers import ForecastReader, StaticReader
from .rows import SeriesRow, check_filter_keys, filter_keywords

if TYPE_CHECKING:
    from .store import Store

#: Attribute keys the store keeps for itself (its catalog generation): never listed.
INTERNAL_PREFIX = "infrastore_sqlite."
_RESERVED_PREFIX = "infrastore."  # the reference's own keys: refused on set and remove


class Transaction:
    """What ``Store.transaction()`` returns: a context manager binding the store.

    ``with store.transaction() as s`` gives ``s is store``; the same object can be entered
    again (also nested inside itself), each entry an all-or-nothing block of its own, as in
    the reference.
    """

    __slots__ = ("_block", "_open", "_store")

    def __init__(self, store: Store, block: Callable[[], AbstractContextManager[None]]) -> None:
        self._store = store
        self._block = block
        self._open: list[AbstractContextManager[None]] = []

    def __enter__(self) -> Store:
        cm = self._block()
        cm.__enter__()
        self._open.append(cm)
        return self._store

    def __exit__(self, *exc: Any) -> bool | None:
        return self._open.pop().__exit__(*exc)

    def __repr__(self) -> str:
        return f"Transaction({self._store!r}, open={len(self._open)})"


class StoreApi:
    """The query and maintenance members ``Store`` inherits (see the module docstring).

    Listing members take the ``list_metadata`` filter keywords (``owner_id``,
    ``owner_category``, ``owner_type``, ``time_series_type``, ``name``, ``name_glob``,
    ``component_field``, ``zoneless``, ``resolution``, ``interval``,
    ``initial_timestamp``, ``length``, ``features``, ``features_exact``).
    """

    # The public members of Store these are built on; declared for type checkers.
    if TYPE_CHECKING:
        path: Path
        read_only: bool
        catalog: str

        @classmethod
        def open(cls, path: str | Path) -> Store: ...
        def check_open(self) -> None: ...
        def check_writable(self) -> None: ...
        def select_rows(self, **filters: Any) -> list[SeriesRow]: ...
        def iter_select_rows(self, **filters: Any) -> Iterable[SeriesRow]: ...
        def rows_by_ids(self, ids: Sequence[int]) -> list[SeriesRow]: ...
        def counts_by_type(self) -> dict[str, int]: ...
        def num_distinct_arrays(self) -> int: ...
        def read_by_id(self, id: int) -> Any: ...
        def add_time_series(
            self,
            owner_id: int,
            owner_type: str,
            owner_category: OwnerCategory | str,
            time_series: Any,
            *,
            features: Mapping[str, int | float | bool | str] | None = None,
        ) -> int: ...
        def remove_by_filter(self, **filters: Any) -> int: ...
        def load_arrays(
            self, keys: Iterable[tuple[bytes, str]], *, part: tuple = ()
        ) -> dict[tuple[bytes, str], np.ndarray]: ...
        def array_locations(
            self, keys: Iterable[tuple[bytes, str]]
        ) -> dict[tuple[bytes, str], tuple]: ...

    # ------------------------------------------------------------------ discovery
    @filter_keywords
    def list_names(self, **filters: Any) -> list[str]:
        """The distinct series names among the matching series, sorted."""
        return sorted({r.name for r in self.iter_select_rows(**check_filter_keys(filters))})

    @filter_keywords
    def list_owner_types(self, **filters: Any) -> list[str]:
        """The distinct owner types among the matching series, sorted."""
        return sorted({r.owner_type for r in self.iter_select_rows(**check_filter_keys(filters))})

    @filter_keywords
    def has_any_time_series(self, **filters: Any) -> bool:
        """Whether any series matches the filters."""
        return next(iter(self.iter_select_rows(**check_filter_keys(filters))), None) is not None

    def has_exact_time_series(
        self,
        *,
        owner_id: int,
        owner_category: OwnerCategory | str,
        name: str,
        time_series_type: TimeSeriesType | str,
        resolution: Any,
        interval: Any,
        features: dict[str, Any],
    ) -> bool:
        """Whether a series with exactly this identity is stored: the features must be
        the whole feature map, and a None resolution or interval must be absent."""
        tst = TimeSeriesType.coerce(time_series_type)
        want = features_hash(validate_features(features or {}))
        res = None if resolution is None else str(as_period(resolution, what="resolution"))
        itv = None if interval is None else str(as_period(interval, what="interval"))
        return any(
            r.type is tst and r.resolution == res and r.interval == itv and r.features_hash == want
            for r in self.iter_select_rows(
                owner_id=owner_id, owner_category=owner_category, name=name
            )
        )

    def get_resolutions(self, time_series_type: TimeSeriesType | str | None = None) -> list[str]:
        """The distinct resolutions of the series of a type (of all series), sorted."""
        rows = self.iter_select_rows(time_series_type=time_series_type)
        return sorted({r.resolution for r in rows if r.resolution is not None})

    def get_intervals(self, time_series_type: TimeSeriesType | str | None = None) -> list[str]:
        """The distinct forecast intervals of the series of a type (of all series), sorted."""
        rows = self.iter_select_rows(time_series_type=time_series_type)
        return sorted({r.interval for r in rows if r.interval is not None})

    def list_owner_ids(
        self,
        owner_category: OwnerCategory | str,
        *,
        time_series_type: TimeSeriesType | str | None = None,
        resolution: Any = None,
    ) -> list[int]:
        """The distinct owner ids of a category holding matching series, sorted."""
        rows = self.iter_select_rows(
            owner_category=owner_category, time_series_type=time_series_type, resolution=resolution
        )
        return sorted({r.owner_id for r in rows})

    def get_forecast_parameters(
        self, *, resolution: Any = None, interval: Any = None
    ) -> dict[str, Any]:
        """Horizon, interval, count, resolution and initial timestamp of the first stored
        forecast (by id) with that resolution and interval; all None when there is none."""
        for r in self.iter_select_rows(resolution=resolution, interval=interval):
            if r.type.is_forecast:
                m = {**r.metadata(), "initial_timestamp": ms_to_rfc3339(r.initial_ms)}
                return {k: m[k] for k in _FORECAST_PARAMETERS}
        return dict.fromkeys(_FORECAST_PARAMETERS)

    # ------------------------------------------------------------------ readers
    @readers.reader_filter_keywords
    def build_static_reader(
        self,
        resolution: Any = None,
        *,
        window_start: datetime | None = None,
        window_length: int | None = None,
        time_series_type: TimeSeriesType | str | None = None,
        **filters: Any,
    ) -> StaticReader:
        """A :class:`StaticReader` over the static series matching the filter.

        Parameters
        ----------
        resolution
            Required for ``SingleTimeSeries`` (the default type): one resolution per
            reader; omitted for ``NonSequentialTimeSeries`` and ``PersistentTimeSeries``.
        window_start, window_length
            ``SingleTimeSeries`` only: sweep the span from ``window_start`` (``window_length``
            steps, or as far as every matched series reaches) instead of one shared grid;
            each series must cover it, starting on one of its own steps.
        time_series_type
            ``SingleTimeSeries`` (default), ``NonSequentialTimeSeries`` (all matched series
            on one timestamp vector) or ``PersistentTimeSeries`` (each column carries its
            values forward on its own breakpoints).
        owner_id, owner_category, owner_type, name, name_glob, component_field, zoneless, initial_timestamp, length, features, features_exact
            The ``list_metadata`` filter.

        Returns
        -------
        StaticReader
            Drive it with :meth:`static_read`; memory follows the number of columns.
        """
        return readers.build_static_reader(
            self,
            resolution,
            window_start=window_start,
            window_length=window_length,
            time_series_type=time_series_type,
            filters=readers.reader_filters(filters, "build_static_reader"),
        )

    def static_read(self, reader: StaticReader, when: datetime) -> None:
        """Fill ``reader``'s buffers with every column's value at ``when`` (a timestamp of
        the reader's timeline; anything else raises). Then read ``reader.group_values(i)``."""
        readers.static_read(self, reader, when)

    @readers.reader_filter_keywords
    def build_forecast_reader(
        self,
        time_series_type: TimeSeriesType | str,
        resolution: Any,
        **filters: Any,
    ) -> ForecastReader:
        """A :class:`ForecastReader` over the forecasts of ``time_series_type`` matching the
        filter, all on one window timeline (a ``Deterministic`` reader also takes the
        ``DeterministicSingleTimeSeries``). Drive it with :meth:`forecast_read`.

        Parameters
        ----------
        time_series_type
            A forecast type.
        resolution
            Required: one resolution per reader.
        owner_id, owner_category, owner_type, name, name_glob, component_field, zoneless, initial_timestamp, length, features, features_exact
            The ``list_metadata`` filter.
        """
        return readers.build_forecast_reader(
            self,
            time_series_type,
            resolution,
            filters=readers.reader_filters(filters, "build_forecast_reader"),
        )

    def forecast_read(self, reader: ForecastReader, when: datetime) -> None:
        """Fill ``reader``'s entries with every forecast's window issued at ``when`` (a
        window start; anything else raises). Then read ``reader.entry_values(i)``."""
        readers.forecast_read(self, reader, when)

    # ------------------------------------------------------------------ counts
    def get_time_series_counts(self) -> dict[str, Any]:
        """Owners holding series, static series and forecasts."""
        owners: set[tuple[int, int]] = set()
        static = forecasts = 0
        for r in self.iter_select_rows():
            owners.add((r.owner_id, int(r.owner_category)))
            forecasts += r.type.is_forecast
            static += not r.type.is_forecast
        return {
            "components_with_time_series": len(owners),
            "static_time_series": static,
            "forecasts": forecasts,
        }

    def time_series_counts_detailed(self) -> dict[str, Any]:
        """Owners per category, and the distinct arrays static series and forecasts hold
        (the reference's counts: series sharing an array count once)."""
        owners: dict[OwnerCategory, set[int]] = {c: set() for c in OwnerCategory}
        static: set[bytes] = set()
        forecasts: set[bytes] = set()
        for r in self.iter_select_rows():
            owners[r.owner_category].add(r.owner_id)
            (forecasts if r.type.is_forecast else static).add(r.data_hash)
        return {
            "components_with_time_series": len(owners[OwnerCategory.Component]),
            "supplemental_attributes_with_time_series": len(
                owners[OwnerCategory.SupplementalAttribute]
            ),
            "static_time_series_count": len(static),
            "forecast_count": len(forecasts),
        }

    def time_series_count_summary(self) -> list[dict[str, Any]]:
        """Series counted per owner type, category, type and complete time axis."""
        return _grouped(self.iter_select_rows(), _summary_key, _SUMMARY_FIELDS, utc_text=False)

    def static_summary(self) -> list[dict[str, Any]]:
        """Static series counted per owner type, category, type, name and grid."""
        rows = (r for r in self.iter_select_rows() if not r.type.is_forecast)
        return _grouped(rows, _static_key, _STATIC_FIELDS)

    def forecast_summary(self) -> list[dict[str, Any]]:
        """Forecasts counted per owner type, category, type, name and window grid."""
        rows = (r for r in self.iter_select_rows() if r.type.is_forecast)
        return _grouped(rows, _forecast_key, _FORECAST_FIELDS)

    def check_static_consistency(self, resolution: Any = None) -> list[dict[str, Any]]:
        """The one grid (resolution, initial timestamp, length) of the regular series at
        each resolution, by resolution text.

        Raises
        ------
        IntegrityError
            When the series at one resolution do not share one (initial timestamp, length)
            pair: a reader over them would need a window (``build_static_reader(...,
            window_start=)``), so the caller must hear it rather than get two rows.
        """
        grids: dict[str, set[tuple[int, int]]] = {}
        for r in self.iter_select_rows(
            time_series_type=TimeSeriesType.SingleTimeSeries, resolution=resolution
        ):
            grids.setdefault(r.resolution, set()).add((int(r.initial_ms), r.length))
        out = []
        for res in sorted(grids):
            pairs = sorted(grids[res])
            if len(pairs) > 1:
                (a, n), (b, m) = pairs[:2]
                raise IntegrityError(
                    f"SingleTimeSeries at resolution {res} have more than one "
                    f"(initial_timestamp, length) pair: ({_wall(a)}, {n}) vs ({_wall(b)}, {m}); "
                    "filter to one grid (initial_timestamp=, length=) or read them through "
                    "build_static_reader(..., window_start=)"
                )
            ((start, length),) = pairs
            out.append(
                {"resolution": res, "initial_timestamp": ms_to_rfc3339(start), "length": length}
            )
        return out

    # ------------------------------------------------------------------ owners
    def copy_time_series(
        self, src: int, dst_owner_id: int, dst_owner_type: str, *, new_name: str | None = None
    ) -> int:
        """Add the series ``src`` again for another owner (same category and features),
        optionally renamed; returns the new id. The array is shared, not copied."""
        (row,) = self.rows_by_ids([src])
        series = self.read_by_id(src)
        if new_name is not None:
            series = _renamed(series, new_name)
        return self.add_time_series(
            dst_owner_id, dst_owner_type, row.owner_category, series, features=row.features
        )

    def clear_time_series(
        self, *, owner_id: int | None = None, owner_category: OwnerCategory | str | None = None
    ) -> int:
        """Remove every series of one owner (give both keywords) or of the whole store
        (give neither); returns the count."""
        _both_or_neither("clear_time_series", owner_id, owner_category)
        return self.remove_by_filter(owner_id=owner_id, owner_category=owner_category)

    def flush(self) -> None:
        """Nothing to do: every commit is durable when it returns (the reference's name)."""
        self.check_open()

    def persist_catalog(self) -> None:
        """Make the catalog beside this store's HDF5 file current. Every commit already
        writes it (the catalog is always attached here), so this is :meth:`flush`.

        Raises
        ------
        InvalidParameterError
            An ``in_memory`` store: it has no file to pair with; use :meth:`persist_to`.
        ReadOnlyStoreError
            The store is open read-only.
        """
        if self.catalog == "memory":
            raise InvalidParameterError(
                "an in-memory store has no HDF5 file for a catalog to pair with; use persist_to"
            )
        self.check_writable()
        self.flush()

    # ------------------------------------------------------------------ files
    def show(self, *, file: Any = None) -> None:
        """Print what the store holds: series per type, distinct arrays, owners.

        ``file`` is what :func:`print` takes (default ``sys.stdout``). Catalog queries
        only; no array is read.
        """
        counts = self.counts_by_type()
        total = sum(counts.values())
        owners = {c: set() for c in OwnerCategory}
        for r in self.iter_select_rows():
            owners[r.owner_category].add(r.owner_id)
        mode = "read-only" if self.read_only else "read-write"
        where = "in-memory" if self.catalog == "memory" else self.path
        lines = [f"Store: {where} ({mode})"]
        if total:
            arrays = self.num_distinct_arrays()
            lines.append(f"Time series: {total} associations over {arrays} distinct arrays")
            width = max(len(n) for n in counts) + 2
            order = sorted(counts, key=lambda n: int(TimeSeriesType[n]))
            lines += [f"  {n:<{width}}{counts[n]}" for n in order]
        else:
            lines.append("Time series: none")
        comp, attr = (len(owners[c]) for c in OwnerCategory)
        lines.append(
            f"Owners with time series: {_plural(comp, 'component')}, "
            f"{_plural(attr, 'supplemental attribute')}"
        )
        # No association API here, so none can exist (the reference prints these too).
        lines += ["Supplemental attribute attachments: 0", "Parent/child edges: 0"]
        print("\n".join(lines), file=file)

    @classmethod
    def open_copy(cls, src: str | Path, dest: str | Path, *, catalog: str = "attached") -> Any:
        """Copy the store at ``src`` to ``dest`` and open the copy read-write; ``src`` is
        never opened for writing.

        Raises
        ------
        StoreExistsError
            ``dest`` (or its catalog) already exists.
        """
        from .segments import catalog_file, legacy_catalog

        if catalog != "attached":
            raise InvalidParameterError(
                f'catalog="{catalog}" is not provided here; only "attached" (the default)'
            )
        src, dest = Path(src), Path(dest)
        kind = check_store_file(src)
        if dest.exists() or legacy_catalog(dest).exists():
            raise StoreExistsError(
                f"{dest} already holds a store; open it with Store.open, or pick another dest"
            )
        if kind == "two files":
            # Copied as it is; the writable open below converts the copy, not src.
            shutil.copyfile(src, dest)
            shutil.copyfile(legacy_catalog(src), legacy_catalog(dest))
            return cls.open(dest)
        source = apsw.Connection(str(catalog_file(src)), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            copy_store(src, source, dest)
        finally:
            source.close()
        return cls.open(dest)


_FORECAST_PARAMETERS = ("horizon", "interval", "count", "resolution", "initial_timestamp")
_SUMMARY_FIELDS = (
    "owner_type",
    "owner_category",
    "time_series_type",
    "initial_timestamp",
    "time_reference",
    "resolution",
    "time_step_count",
    "timestamps_hash",
    "horizon",
    "interval",
    "window_count",
)
# A summary group is who (owner type, category, type, name) and which grid.
_WHO = ("owner_type", "owner_category", "time_series_type", "name", "initial_timestamp")
_STATIC_FIELDS = (*_WHO, "resolution", "time_step_count")
_FORECAST_FIELDS = (*_WHO, "resolution", "horizon", "interval", "window_count")


def _fields(r: SeriesRow, utc_text: bool) -> dict[str, Any]:
    m = r.metadata()
    if utc_text and r.initial_ms is not None:
        # The static and forecast summaries spell it as the reference does: UTC with
        # '+00:00', a zoneless one too (the count summary keeps list_metadata's spelling).
        m["initial_timestamp"] = ms_to_rfc3339(r.initial_ms)
    return {
        **m,
        "time_step_count": r.length,
        "window_count": r.count,
        "timestamps_hash": r.timestamps_hash.hex() if r.timestamps_hash else None,
    }


def _wall(ms: int) -> str:
    """An instant as the reference's messages show it: ``2024-01-01 00:00:00 UTC``."""
    return ms_to_rfc3339(ms)[: -len("+00:00")].replace("T", " ") + " UTC"


def _summary_key(r: SeriesRow) -> tuple:
    return (r.owner_type, int(r.owner_category), r.type.catalog_code)


_static_key = _forecast_key = _summary_key


def _grouped(
    rows: Iterable[SeriesRow],
    order: Callable[[SeriesRow], tuple],
    fields: tuple[str, ...],
    utc_text: bool = True,
) -> list[dict[str, Any]]:
    """Rows counted per the values of ``fields``, groups in ``order`` then first sight."""
    counts: dict[tuple, int] = {}
    first: dict[tuple, tuple] = {}
    for r in rows:
        f = _fields(r, utc_text)
        group = tuple(f[k] for k in fields)
        counts[group] = counts.get(group, 0) + 1
        first.setdefault(group, (*order(r), r.id))
    groups = sorted(counts, key=first.__getitem__)
    return [{**dict(zip(fields, g, strict=True)), "count": counts[g]} for g in groups]


def hash_bytes(data_hash: str) -> bytes:
    if not isinstance(data_hash, str):
        raise TypeError(f"data_hash must be a hex str, not {type(data_hash).__name__}")
    try:
        raw = bytes.fromhex(data_hash)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise InvalidParameterError(
            f"data_hash must be a 64-character hex string, got {data_hash!r}; "
            "list_metadata rows carry it"
        )
    return raw


def _both_or_neither(what: str, owner_id: Any, owner_category: Any) -> None:
    if (owner_id is None) != (owner_category is None):
        raise InvalidParameterError(f"{what} requires both owner_id and owner_category, or neither")


def check_attribute_key(key: Any, writing: bool = False) -> None:
    """Refuse a key the caller may not use; ``writing`` for set and remove.

    Set and remove also refuse, as the reference does, an empty key and one under the
    reference's reserved ``infrastore.`` prefix (a get of those simply finds nothing).
    """
    if not isinstance(key, str):
        raise TypeError(f"a store attribute's key is a str, not {type(key).__name__}")
    if writing and not key:
        raise InvalidParameterError("store attribute key must not be empty; name the attribute")
    if writing and key.startswith(_RESERVED_PREFIX):
        raise InvalidParameterError(
            f"store attribute key {key!r} uses the reserved {_RESERVED_PREFIX!r} prefix; "
            "choose another key"
        )
    if key.startswith(INTERNAL_PREFIX):
        raise InvalidParameterError(
            f"store attribute keys starting with {INTERNAL_PREFIX!r} are the store's own; "
            "choose another key"
        )


def _renamed(series: Any, name: str) -> Any:
    import copy

    from ..model import check_name

    out = copy.copy(series)
    out.name = check_name(name)
    return out


#: The documented way across from a reference store (also in docs/compatibility.md).
REFERENCE_WAY_ACROSS = (
    "python -c \"import infrastore; infrastore.Store.open('{path}', read_only=True)"
    ".export_sqlite('{stem}.db')\" && infrastore-sqlite --store new-store add --sqlite {stem}.db"
)


def _import_term(flag: str, method: str, path: Path) -> Term:
    """How to import the export at ``path`` into a store (``add --sqlite`` or ``add
    --parquet`` on the command line, the Store method in Python)."""
    return Term(
        f"`infrastore-sqlite --store STORE add {flag} {shlex.quote(str(path))}`",
        f"Store.{method}({str(path)!r})",
    )


def check_store_file(path: Path) -> str:
    """What is at ``path``: ``"directory"`` (a store) or ``"two files"`` (a store of the
    earlier layout, ``path`` + ``path.sqlite``, which a writable open converts).

    Anything else is refused with the reference's exception class and a way forward:
    missing (:class:`IoError`), not HDF5 or not a store (:class:`InvalidParameterError`),
    a reference ``infrastore`` store (:class:`IncompatibleFormatError`, with the one-line
    way across), or a store without its catalog (:class:`MismatchedArtifactError`).
    """
    import h5py

    from ..errors import IncompatibleFormatError, MismatchedArtifactError, rebuild_terms
    from .segments import SEGMENT_DIR, catalog_file, legacy_catalog

    if path.is_dir():
        if catalog_file(path).is_file():
            return "directory"
        if not (path / SEGMENT_DIR).is_dir():
            # Not a store that lost its catalog: a directory of something else (an
            # export, most often), named where a store was meant.
            exported = any(path.glob("*.parquet"))
            raise InvalidParameterError(
                f"{path} is not a store: it has neither a catalog ({catalog_file(path).name}) "
                f"nor a {SEGMENT_DIR}/ folder; "
                + (
                    "it holds Parquet files, as an export does: import them into a store "
                    "with {import_parquet}"
                    if exported
                    else "name a store directory (one that init or demo made)"
                ),
                terms={"import_parquet": _import_term("--parquet", "import_parquet", path)},
            )
        raise MismatchedArtifactError(
            f"{path} has no catalog ({catalog_file(path).name} is missing in it); a store "
            "directory holds its catalog and its segments: {rebuild} rebuilds the catalog "
            "from the records the segments keep (or restore the catalog that was written "
            "with them)",
            terms=rebuild_terms(str(path)),
        )
    if not path.is_file():
        raise IoError(
            f"no store at {path}: it does not exist; create one with {{create}}",
            terms={
                "create": Term(
                    f"`infrastore-sqlite --store {shlex.quote(str(path))} init`",
                    f"Store.create({str(path)!r})",
                )
            },
        )
    with open(path, "rb") as f:
        head = f.read(16)
    if head == b"SQLite format 3\x00" or head[:4] == b"PAR1":
        sqlite = head[:4] != b"PAR1"
        raise InvalidParameterError(
            f"{path} is {'an SQLite' if sqlite else 'a Parquet'} file, not a store (a store "
            "is a directory); if it is an export, import it into a store with "
            + ("{import_sqlite}" if sqlite else "{import_parquet}"),
            terms={
                "import_sqlite": _import_term("--sqlite", "import_sqlite", path),
                "import_parquet": _import_term("--parquet", "import_parquet", path),
            },
        )
    try:
        with h5py.File(path, "r", locking=False) as h5:
            groups, backend = set(h5.keys()), h5.attrs.get("storage_backend")
    except OSError as exc:
        raise InvalidParameterError(
            f"{path} could not be opened as an HDF5 file, so it is not a store "
            "(a store is a directory). HDF5 said: " + " ".join(str(exc).split())
        ) from exc
    if "pools" not in groups:
        if backend is not None and "time_series" in groups:
            stem = path.with_suffix("")
            raise IncompatibleFormatError(
                f"{path} is a store of the reference implementation (infrastore), whose "
                "array layout this package does not read. Carry it across in one line: "
                + REFERENCE_WAY_ACROSS.format(path=path, stem=stem)
            )
        raise InvalidParameterError(
            f"{path} is an HDF5 file but not an infrastore-sqlite store (it has no pools "
            "group); a store is a directory"
        )
    if not legacy_catalog(path).is_file():
        raise MismatchedArtifactError(
            f"{path} has no catalog beside it ({legacy_catalog(path)} is missing); a store of "
            "this earlier layout is both files, so restore the catalog that was written with it"
        )
    return "two files"


def series_id(value: Any) -> int:
    """A series id as an int; anything but an integer is a :class:`ParameterTypeError`."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ParameterTypeError(f"a series id is an int, not {type(value).__name__} {value!r}")
    return int(value)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def copy_store(root: Path, catalog_src: apsw.Connection, dest: Path) -> None:
    """The committed state of the store at ``root`` (its catalog read through
    ``catalog_src``) as a new store directory at ``dest``, replacing one there.

    Built under a work name beside ``dest`` and renamed into place; a failure leaves
    ``dest`` as it was and no work directory.
    """
    from .arrays import fsync_path
    from .segments import SEGMENT_DIR, catalog_file, legacy_catalog, remove_tree, work_dir

    if not dest.parent.is_dir():
        raise InvalidParameterError(f"the directory {dest.parent} does not exist; create it first")
    work = work_dir(dest.parent, dest.name, "copying")
    old = work_dir(dest.parent, dest.name, "replaced")
    try:
        (work / SEGMENT_DIR).mkdir(parents=True)
        target = apsw.Connection(str(catalog_file(work)))
        try:
            with target.backup("main", catalog_src, "main") as backup:
                backup.step()
            names = [r[0] for r in target.execute("SELECT name FROM segments")]
        finally:
            target.close()
        for name in names:  # the segments the copied snapshot names, nothing else
            shutil.copyfile(root / SEGMENT_DIR / name, work / SEGMENT_DIR / name)
            fsync_path(work / SEGMENT_DIR / name)
        for p in (catalog_file(work), work / SEGMENT_DIR, work):
            fsync_path(p)
        if dest.exists():
            os.rename(dest, old)
        legacy_catalog(dest).unlink(missing_ok=True)
        os.rename(work, dest)
        fsync_path(dest.parent)
    except (OSError, apsw.Error) as exc:
        if old.exists() and not dest.exists():
            os.rename(old, dest)
        raise IoError(f"could not write the store copy {dest}: {exc}") from exc
    finally:
        remove_tree(work)
        remove_tree(old)
