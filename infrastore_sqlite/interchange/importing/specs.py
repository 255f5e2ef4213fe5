"""A partition's arrays and series rows, checked and turned into :class:`Spec`.

:class:`SeriesRows` checks every cell of the arrays and series rows a reader hands over,
applies the overrides and compares the assertions (:class:`~.options.Options`); a row's
shared part (category, element type, reference, descriptors, features, grid) is worked
out once per distinct combination, and clean batches go a column at a time.
:func:`read_rows` is what the import and a rehash both start from.

May import: :mod:`.options`, :mod:`.places`, :mod:`infrastore_sqlite.interchange.layout`
and the layers below ``interchange``.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ...core.elements import ElementType, parse_element_type
from ...core.periods import Period, as_period, divide
from ...core.timeref import check_period_for_reference
from ...errors import InvalidParameterError
from ...model import DESCRIPTORS, OwnerCategory, TimeSeriesType
from ..layout import series_columns
from .options import Options, _descriptor, _parse_features, _parse_reference
from .places import TEXT_HINT, PartitionSource, Place


@dataclass(slots=True)
class Spec:
    """One validated series row (overrides applied).

    :attr:`label`, how messages name the series, is spelled out only when asked for: a
    partition holds a Spec per series for the whole import, and most are never named.
    """

    file_id: int
    key: tuple[str, str]
    #: The row's own name and owner id (before any override) and its table, for the label.
    row_name: str
    row_owner_id: int
    table: str
    owner_id: int
    owner_type: str
    name: str
    # From here on, the row's shared part (SeriesRows._shared_part, in this order).
    category: OwnerCategory
    et: ElementType
    tr: str | None
    descriptors: dict[str, str | None]
    features: dict[str, Any]
    res: Period | None = None
    itv: Period | None = None
    hor: Period | None = None
    steps: int | None = None
    # Equal for equal ``(res, itv, hor)`` among the rows of one partition (a small int,
    # cheaper to hash than the periods); only compared within one partition.
    grid_key: Any = None
    #: Equal for rows of one partition that agree on everything but owner id, owner type,
    #: name and array (category, element type, reference, descriptors, features, grid):
    #: their catalog rows differ only there (see :class:`~.batches._Settle`).
    part: int = 0

    @property
    def label(self) -> str:
        """``'name' (owner 7, id 3 in <series table>)``: the row as the file holds it."""
        return f"'{self.row_name}' (owner {self.row_owner_id}, id {self.file_id} in {self.table})"


#: Series rows a reader gives as rows are checked this many at a time, as columns.
_SPEC_BATCH = 4096


def rows_as_batches(rows: Iterable[Sequence[Any]]) -> Iterator[list[tuple]]:
    """``rows`` a batch at a time, each batch as its columns (what
    :meth:`PartitionSource.series_batches` gives)."""
    it = iter(rows)
    while chunk := list(itertools.islice(it, _SPEC_BATCH)):
        yield list(zip(*chunk, strict=True))


def _widest_shape(cells: Iterable[Any]) -> tuple[int, ...] | None:
    """The ``element_shape`` cell with the most leaves, or None if none is a shape.

    The import otherwise reads an element's shape from its values (a composite's row
    width varies per series), so the column only bounds how big a value cell may be.
    A cell that is not a short JSON list of sizes bounds nothing.
    """
    widest: tuple[int, ...] | None = None
    for cell in cells:
        if type(cell) is not str or len(cell) > 200:
            continue
        try:
            shape = orjson.loads(cell)
        except orjson.JSONDecodeError:
            continue
        if type(shape) is not list or not all(type(d) is int and d >= 0 for d in shape):
            continue
        if widest is None or math.prod(shape) > math.prod(widest):
            widest = tuple(shape)
    return widest


class SeriesRows:
    """A partition's arrays and series rows checked and turned into :class:`Spec`.

    Rows repeat a handful of shared parts (category, element type, reference,
    descriptors, features, grid); each distinct one is worked out once.
    """

    def __init__(self, place: Place) -> None:
        self.place = place
        #: The series row's cells, in the order :meth:`specs` takes them.
        self.columns = ["array_id", "id", *series_columns(place.type)]
        self._features: dict[str, dict[str, Any]] = {}
        self._periods: dict[tuple[str, str], Period] = {}
        self._shared: dict[tuple, tuple] = {}  # the shared part of series rows, by its cells
        self._shared_cols: Callable[[tuple], tuple] | None = None
        self._grids: dict[tuple, int] = {}  # (res, itv, hor) -> grid_key
        self._col_index: tuple[list[str], dict[str, int]] | None = None

    def arrays(self, rows: Iterable[Sequence[Any]]) -> dict[int, tuple[str, str]]:
        """``id -> (data_hash, time_axis)`` from the arrays rows ``(id, data_hash,
        time_axis)`` in the container's order; every cell checked."""
        out: dict[int, tuple[str, str]] = {}
        # Many arrays share a grid: each distinct axis text is held once, not per array
        # (the keys live as long as the partition's import).
        axes: dict[str, str] = {}
        table = self.place.arrays
        for n, (aid, h, axis) in enumerate(rows, start=1):
            if type(aid) is not int or type(h) is not str or type(axis) is not str:
                self._bad_array_row(n, aid, h, axis)
            key = (h, axes.setdefault(axis, axis))
            if out.setdefault(aid, key) != key:
                raise InvalidParameterError(
                    f"{table} holds id {aid} twice with different keys; {TEXT_HINT}", table=table
                )
        return out

    def _bad_array_row(self, n: int, aid: Any, h: Any, axis: Any) -> None:
        """Refuse arrays row ``n``, whose cells are not an integer and two texts."""
        table = self.place.arrays
        for col, v in (("id", aid), ("data_hash", h), ("time_axis", axis)):
            if v is None:
                raise InvalidParameterError(
                    f"{table} row {n} has NULL in `{col}`; the layout holds NULL only in "
                    "a values table's `value`",
                    table=table,
                )
        if type(aid) is not int:
            raise InvalidParameterError(
                f"{table} row {n} has id {aid!r}, which is not an integer", table=table
            )
        col = "data_hash" if type(h) is not str else "time_axis"
        raise InvalidParameterError(
            f"{table} row {n} (id {aid}) holds a {type(h if col == 'data_hash' else axis).__name__} "
            f"in `{col}`, which is text in the layout",
            table=table,
        )

    def specs(
        self, rows: Iterable[Sequence[Any]], arrays: dict[int, tuple[str, str]], opts: Options
    ) -> list[Spec]:
        """Every series row (cells in the order of :attr:`columns`), validated, overrides
        applied, in ``(key, id)`` order."""
        return self.specs_of_batches(rows_as_batches(rows), arrays, opts)

    def specs_of_batches(
        self,
        batches: Iterable[Sequence[Sequence[Any]]],
        arrays: dict[int, tuple[str, str]],
        opts: Options,
    ) -> list[Spec]:
        """:meth:`specs` of the series rows given a batch at a time as columns (one
        sequence of cells per name of :attr:`columns`, in that order)."""
        table = self.place.series
        specs: list[Spec] = []
        # Each shared part's element type (a part is one element type): compared once
        # at the end, not spelled out per row.
        part_types: dict[int, ElementType] = {}
        shapes: set[Any] = set()
        # Rows repeat a handful of cell-type patterns; a pattern checked once is known good.
        good_types: set[tuple] = set()
        shape_at = self.columns.index("element_shape")
        start = 0
        for batch in batches:
            count = len(batch[0]) if batch else 0
            if not self._batch_specs(batch, arrays, opts, specs, part_types):
                for n, raw in enumerate(zip(*batch, strict=True), start=start + 1):
                    spec = self._row_spec(n, raw, arrays, opts, good_types)
                    specs.append(spec)
                    part_types[spec.part] = spec.et
            shapes.update(batch[shape_at])
            start += count
        element_types = {str(et) for et in part_types.values()}
        if len(element_types) > 1:
            raise InvalidParameterError(
                f"{table} mixes time-series or element types; a partition holds one of each "
                f"(element types {', '.join(sorted(element_types))})",
                table=table,
            )
        specs.sort(key=lambda s: (s.key, s.file_id))
        self.place.cell_shape = _widest_shape(shapes)
        return specs

    def _batch_specs(
        self,
        batch: Sequence[Sequence[Any]],
        arrays: dict[int, tuple[str, str]],
        opts: Options,
        specs: list[Spec],
        part_types: dict[int, ElementType],
    ) -> bool:
        """A batch's Specs appended to ``specs`` a column at a time, when every check the
        rows would pass one by one holds for whole columns (a cell type per column, one
        type name, every array known, names and owner types given). False, appending
        nothing, when one does not: the batch then goes row by row (:meth:`_row_spec`),
        which refuses the first row at fault with the row's own message."""
        cols = self.columns
        if not batch or len(batch) != len(cols):
            return False
        at = {c: i for i, c in enumerate(cols)}
        for c, cells in zip(cols, batch, strict=True):
            types = set(map(type, cells))
            if c in ("array_id", "id", "owner_id"):
                ok = types == {int}
            elif c in ("initial_timestamp", "length", "count"):
                ok = type(None) not in types
            else:
                ok = types == {str}
            if not ok:
                return False
        if set(batch[at["time_series_type"]]) != {self.place.type.name}:
            return False
        keys = list(map(arrays.get, batch[0]))
        if None in keys:
            return False
        ov = opts.overrides
        names = batch[at["name"]]
        owner_types = batch[at["owner_type"]]
        if not (ov["name"] if "name" in ov else all(names)):
            return False
        if not (ov["owner_type"] if "owner_type" in ov else all(owner_types)):
            return False
        shared_keys = list(zip(*(batch[i] for i in self._shared_indices(at)), strict=True))
        parts = self._shared
        for k, shared_key in enumerate(shared_keys):
            if shared_key not in parts:
                try:
                    self._shared_of(shared_key, tuple(c[k] for c in batch), opts)
                except InvalidParameterError:
                    return False  # refused again, in its row's turn, row by row
        fids, owner_ids, table = batch[1], batch[at["owner_id"]], self.place.series
        for shared_key in set(shared_keys):
            part = parts[shared_key]
            part_types[part[-1]] = part[1]  # its number -> its element type
        # Positional: a Spec per series, and keywords cost it three times as much.
        specs.extend(
            Spec(
                fid, key, row_name, owner_id, table, ov.get("owner_id", owner_id),
                ov.get("owner_type", owner_type), ov.get("name", row_name), *parts[shared_key],
            )
            for fid, key, row_name, owner_id, owner_type, shared_key in zip(
                fids, keys, names, owner_ids, owner_types, shared_keys, strict=True
            )
        )  # fmt: skip
        return True

    def _row_spec(
        self,
        n: int,
        raw: Sequence[Any],
        arrays: dict[int, tuple[str, str]],
        opts: Options,
        good_types: set[tuple],
    ) -> Spec:
        """Row ``n`` (1-based) checked and turned into its Spec."""
        cols = self.columns
        tst = self.place.type
        table = self.place.series
        types = tuple(map(type, raw))
        if types not in good_types:
            self._check_cells(n, dict(zip(cols, raw, strict=True)), cols)
            good_types.add(types)
        if raw[cols.index("time_series_type")] != tst.name:
            r = dict(zip(cols, raw, strict=True))
            if r["time_series_type"] in {t.name for t in TimeSeriesType}:
                raise InvalidParameterError(
                    f"{table} mixes time-series or element types; a partition holds one of "
                    f"each (id {r['id']} is a {r['time_series_type']} in a {tst.name} table)",
                    table=table,
                )
            raise InvalidParameterError(
                f'{table} id {r["id"]}: unknown time_series_type "{r["time_series_type"]}"',
                table=table,
            )
        return self._spec(raw, cols, arrays, opts)

    def _check_cells(self, n: int, r: dict[str, Any], cols: list[str]) -> None:
        """NULLs and cell types of one series row."""
        table = self.place.series
        for c in cols:
            if r[c] is None:
                shown = f"id {r['id']}" if r["id"] is not None else f"row {n}"
                raise InvalidParameterError(
                    f"{table} {shown} has NULL in `{c}`; the layout holds NULL only in a "
                    "values table's `value`",
                    table=table,
                )
        for c in ("array_id", "id", "owner_id"):
            if type(r[c]) is not int:
                raise InvalidParameterError(
                    f"{table} row {n}: `{c}` holds {r[c]!r}, which is not an integer",
                    table=table,
                )
        for c in cols[3:]:
            if c not in ("initial_timestamp", "length", "count") and type(r[c]) is not str:
                raise InvalidParameterError(
                    f"{table} id {r['id']}: `{c}` holds {r[c]!r}, which is not text",
                    table=table,
                )

    def _spec(
        self,
        raw: tuple,
        cols: list[str],
        arrays: dict[int, tuple[str, str]],
        opts: Options,
    ) -> Spec:
        table = self.place.series
        ov = opts.overrides
        idx = self._col_index
        if idx is None or idx[0] is not cols:
            idx = self._col_index = (cols, {c: i for i, c in enumerate(cols)})
        at = idx[1]
        aid, fid, owner_id, row_name, row_owner_type = (
            raw[0],
            raw[1],
            raw[at["owner_id"]],
            raw[at["name"]],
            raw[at["owner_type"]],
        )
        key = arrays.get(aid)
        if key is None:
            raise InvalidParameterError(
                f"a series row names `array_id` {aid}, which the arrays {self.place.word} "
                f"does not hold; {TEXT_HINT} ({table} id {fid})",
                table=table,
            )
        name = ov.get("name", row_name)
        if not name:
            raise InvalidParameterError(
                f"the file records no series name and none was given ({table} id {fid}); "
                "pass --name"
            )
        owner_type = ov.get("owner_type", row_owner_type)
        if not owner_type:
            raise InvalidParameterError(
                f"series '{row_name}' (owner {owner_id}, id {fid} in {table}) has no "
                "owner_type: an export carries one, a foreign file does not, so pass "
                "--owner-type"
            )
        # Everything else a row says is shared by many rows: worked out (and checked) once
        # per distinct combination, the first row that has it naming it in any message.
        shared_key = self._shared_at(at)(raw)
        shared = self._shared.get(shared_key)
        if shared is None:
            shared = self._shared_of(shared_key, raw, opts)
        # Positional: a Spec per series, and keywords cost it three times as much.
        return Spec(
            fid, key, row_name, owner_id, table, ov.get("owner_id", owner_id), owner_type, name,
            *shared,
        )  # fmt: skip

    def _shared_indices(self, at: dict[str, int]) -> list[int]:
        """Where the cells a row's shared part is worked out from are, in its columns."""
        names = ["owner_category", "element_type", "time_reference", *DESCRIPTORS, "features"]
        names += [c for c in ("resolution", "interval", "horizon") if c in at]
        return [at[c] for c in names]

    def _shared_at(self, at: dict[str, int]) -> Callable[[tuple], tuple]:
        """The cells of a row its shared part is worked out from, as one tuple (in C)."""
        if self._shared_cols is None:
            self._shared_cols = operator.itemgetter(*self._shared_indices(at))
        return self._shared_cols

    def _shared_of(self, shared_key: tuple, raw: Sequence[Any], opts: Options) -> tuple:
        """The shared part of the first row that has ``shared_key``, worked out (the row
        named in any refusal) and kept for the rows after it."""
        cols = self.columns
        r = dict(zip(cols, raw, strict=True))
        label = f"'{r['name']}' (owner {r['owner_id']}, id {r['id']} in {self.place.series})"
        shared = self._shared_part(r, f"series {label}", opts)
        self._shared[shared_key] = shared
        return shared

    def _shared_part(self, r: dict[str, Any], what: str, opts: Options) -> tuple:
        tst = self.place.type
        ov = opts.overrides
        if "owner_category" in ov:
            category = ov["owner_category"]
        else:
            try:
                category = OwnerCategory[r["owner_category"]]
            except KeyError:
                raise InvalidParameterError(
                    f'{what}: unknown owner_category "{r["owner_category"]}"; expected '
                    "Component or SupplementalAttribute"
                ) from None
        try:
            et = parse_element_type(r["element_type"])
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{what}: {exc}") from None
        if opts.element_type is not None and opts.element_type != et:
            raise InvalidParameterError(
                f"{what} has element_type {et}, but {opts.element_type} was asserted"
            )
        if opts.type is not None and opts.type is not tst:
            raise InvalidParameterError(
                f"{what} is a {tst.name}, but the type {opts.type.name} was asserted"
            )
        if "time_reference" in ov:
            tr = ov["time_reference"]
        else:
            tr = _parse_reference(r["time_reference"], what)
        descriptors = {d: ov[d] if d in ov else _descriptor(d, r[d], what) for d in DESCRIPTORS}
        if "features" in ov:
            features = ov["features"]
        else:
            # Series share a handful of feature maps; parse each text once. The dict is
            # only read from here on, so the series that share it may share the object.
            features = self._features.get(r["features"])
            if features is None:
                features = _parse_features(r["features"], what)
                self._features[r["features"]] = features
        res = itv = hor = None
        steps = None
        if tst is TimeSeriesType.SingleTimeSeries or tst.is_forecast:
            res = self._period(r["resolution"], "resolution", what)
            if not res.is_positive:
                raise InvalidParameterError(f"{what}: resolution must be positive, got {res}")
            if opts.resolution is not None and opts.resolution != res:
                raise InvalidParameterError(
                    f"{what} has resolution {res}, but {opts.resolution} was asserted"
                )
            try:
                check_period_for_reference(res, tr, what="resolution")
            except InvalidParameterError as exc:
                raise InvalidParameterError(f"{what}: {exc}") from None
        elif opts.resolution is not None:
            raise InvalidParameterError(
                f"{what} is a {tst.name}, which has no resolution, but resolution "
                f"{opts.resolution} was asserted"
            )
        if tst.is_forecast:
            assert res is not None
            hor = self._period(r["horizon"], "horizon", what)
            itv = self._period(r["interval"], "interval", what)
            try:
                steps = divide(hor, res, what="horizon")
                if itv.is_positive:
                    check_period_for_reference(itv, tr, what="interval")
                elif str(itv) != "PT0S":
                    raise InvalidParameterError(
                        f"interval must be positive (PT0S only for a single window), got {itv}"
                    )
            except InvalidParameterError as exc:
                raise InvalidParameterError(f"{what}: {exc}") from None
        grid = self._grids.setdefault((res, itv, hor), len(self._grids))
        part = len(self._shared)  # this part's number: it is stored under it next
        return (category, et, tr, descriptors, features, res, itv, hor, steps, grid, part)

    def _period(self, text: str, what: str, series: str) -> Period:
        found = self._periods.get((text, what))
        if found is not None:
            return found
        try:
            period = as_period(text, what=what)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{series}: {exc}") from None
        self._periods[(text, what)] = period
        return period


def read_rows(
    source: PartitionSource, opts: Options
) -> tuple[dict[int, tuple[str, str]], list[Spec]]:
    """A partition's columns checked, then its arrays rows (``id -> key``) and its series
    rows as :class:`Spec` in ``(key, id)`` order: what the import and a rehash both
    start from."""
    source.check_columns()
    rows = SeriesRows(source.place)
    arrays = rows.arrays(source.array_rows())
    return arrays, rows.specs_of_batches(source.series_batches(rows.columns), arrays, opts)


def first_specs(specs: Iterable[Spec]) -> dict[tuple[str, str], Spec]:
    """The first series row naming each array key (the grid a rehash places it by)."""
    first: dict[tuple[str, str], Spec] = {}
    for s in specs:
        first.setdefault(s.key, s)
    return first
