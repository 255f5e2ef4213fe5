"""A partition's arrays and series rows, checked and turned into :class:`Spec`.

:class:`SeriesRows` checks every cell of the arrays and series rows a reader hands over,
applies the overrides and compares the assertions (:class:`~.options.Options`); a row's
shared part (category, element type, reference, descriptors, features, grid) is worked
out once per distinct combination, and clean batches go a column at a time.
:func:`read_rows` is what a rehash starts from; the import starts from
:func:`read_columns`, which holds the arrays (:class:`~.keys.ArrayKeys`) and the series
rows (:class:`SpecColumns`) as columns and makes each series' Spec when it is filed.
"""

from __future__ import annotations

import itertools
import math
import operator
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from ...core.elements import ElementType, parse_element_type
from ...core.periods import Period, as_period, divide
from ...core.timeref import check_period_for_reference
from ...errors import InvalidParameterError
from ...model import DESCRIPTORS, OwnerCategory, TimeSeriesType
from ..layout import series_columns
from .keys import ArrayKeys, compact_hashes, joined_hashes, spelled_hashes
from .options import IdSet, Options, descriptor_value, parse_features, parse_reference
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
    #: their catalog rows differ only there (see :class:`~.batches.Settle`).
    part: int = 0

    @property
    def label(self) -> str:
        """``'name' (owner 7, id 3 in <series table>)``: the row as the file holds it."""
        return f"'{self.row_name}' (owner {self.row_owner_id}, id {self.file_id} in {self.table})"


#: Array hashes are gathered into a bytes column this many at a time (16,384: ~2 MB of
#: Python bytes and their column in flight; 65,536 held ~12 MB, and the 300 k imports
#: peaked 3 MB higher, SQLite 132 -> 129, Parquet 188 -> 186).
_KEY_CHUNK = 16384


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
        #: Set by :meth:`spec_columns`: a column-checked batch's Specs carry no key.
        self._keyless = False
        #: Set by :meth:`spec_columns`: where a column-checked batch goes, as columns.
        self._packer: SpecColumns | None = None

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

    def array_keys(self, rows: Iterable[Sequence[Any]]) -> Mapping[int, tuple[str, str]]:
        """:meth:`arrays` held as columns (:class:`ArrayKeys`): the import's, which holds
        them for the whole partition. Every cell checked, refused as :meth:`arrays`
        refuses it and in the same order (an id held twice with different keys before a
        later row's bad cell); ids that do not fit 64 bits, or a hash ending in NUL,
        which a column cannot hold, fall back to :meth:`arrays`' dict."""
        ids = array("q")
        axis_codes = array("i")  # a handful of distinct axes: 32-bit numbers
        axes: dict[str, int] = {}
        chunks: list[np.ndarray] = []
        hashes: list[bytes] = []
        it = iter(rows)
        for n, (aid, h, axis) in enumerate(it, start=1):
            if type(aid) is not int or type(h) is not str or type(axis) is not str:
                # The rows before it first: an id held twice is what they refuse.
                self._keys_of(ids, chunks, hashes, axis_codes, axes)
                self._bad_array_row(n, aid, h, axis)
            if h[-1:] == "\0":  # a bytes column drops trailing NULs
                return self._dict_after(ids, chunks, hashes, axis_codes, axes, (aid, h, axis), it)
            try:
                ids.append(aid)
            except OverflowError:
                return self._dict_after(ids, chunks, hashes, axis_codes, axes, (aid, h, axis), it)
            code = axes.get(axis)
            if code is None:
                code = axes[axis] = len(axes)
            axis_codes.append(code)
            hashes.append(h.encode("utf-8", "surrogatepass"))
            if len(hashes) >= _KEY_CHUNK:
                # Compacted a chunk at a time: the whole column is never held as text.
                chunks.append(compact_hashes(np.array(hashes, dtype=np.bytes_)))
                hashes.clear()
        return self._keys_of(ids, chunks, hashes, axis_codes, axes)

    def _keys_of(
        self,
        ids: array,
        chunks: list[np.ndarray],
        hashes: list[bytes],
        axis_codes: array,
        axes: dict[str, int],
    ) -> ArrayKeys:
        """The rows so far as :class:`ArrayKeys`, an id held twice with different keys
        refused."""
        if hashes:
            chunks.append(compact_hashes(np.array(hashes, dtype=np.bytes_)))
            hashes.clear()
        col = joined_hashes(chunks)
        chunks.clear()
        keys = ArrayKeys(
            np.frombuffer(ids, dtype=np.int64) if len(ids) else np.empty(0, np.int64),
            col,
            np.frombuffer(axis_codes, dtype=np.int32) if len(axis_codes) else np.empty(0, np.int32),
            list(axes),
        )
        twice = keys.conflict
        if twice is not None:
            table = self.place.arrays
            raise InvalidParameterError(
                f"{table} holds id {twice} twice with different keys; {TEXT_HINT}", table=table
            )
        return keys

    def _dict_after(
        self,
        ids: array,
        chunks: list[np.ndarray],
        hashes: list[bytes],
        axis_codes: array,
        axes: dict[str, int],
        row: tuple | None,
        rest: Iterator[Sequence[Any]],
    ) -> dict[int, tuple[str, str]]:
        """The rows read so far (and ``row``, then ``rest``) as :meth:`arrays` reads them."""
        texts = list(axes)
        col = [h for c in chunks for h in spelled_hashes(c).tolist()] + hashes
        done = [
            (aid, h.decode("utf-8", "surrogatepass"), texts[a])
            for aid, h, a in zip(ids.tolist(), col, axis_codes.tolist(), strict=True)
        ]
        return self.arrays(itertools.chain(done, [row] if row is not None else [], rest))

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
        arrays: Mapping[int, tuple[str, str]],
        opts: Options,
    ) -> list[Spec]:
        """:meth:`specs` of the series rows given a batch at a time as columns (one
        sequence of cells per name of :attr:`columns`, in that order)."""
        specs: list[Spec] = []
        self._each_batch(batches, arrays, opts, lambda batch, _aids: specs.extend(batch))
        specs.sort(key=lambda s: (s.key, s.file_id))
        return specs

    def spec_columns(
        self,
        batches: Iterable[Sequence[Sequence[Any]]],
        arrays: Mapping[int, tuple[str, str]],
        opts: Options,
    ) -> SpecColumns:
        """:meth:`specs_of_batches` packed into columns a batch at a time (a few bytes per
        series held, not a Spec and its row's cells); sorted by the caller
        (:meth:`SpecColumns.sort`)."""
        packed = SpecColumns(self.place.series, opts)
        self._keyless = True
        self._packer = packed
        self._each_batch(batches, arrays, opts, packed.add)
        packed.parts = {part[-1]: part for part in self._shared.values()}
        packed.fid, packed.owner = _as_range(packed.fid), _as_range(packed.owner)
        return packed

    def _each_batch(
        self,
        batches: Iterable[Sequence[Sequence[Any]]],
        arrays: Mapping[int, tuple[str, str]],
        opts: Options,
        sink: Callable[[list[Spec], Sequence[int]], Any],
    ) -> None:
        """Every series row checked, a batch at a time: ``sink(specs, array_ids)`` gets
        each batch's Specs (in row order) and their rows' array ids."""
        table = self.place.series
        # Each shared part's element type (a part is one element type): compared once
        # at the end, not spelled out per row.
        part_types: dict[int, ElementType] = {}
        shapes: set[Any] = set()
        # Rows repeat a handful of cell-type patterns; a pattern checked once is known good.
        good_types: set[tuple] = set()
        shape_at = self.columns.index("element_shape")
        start = 0
        seen = IdSet()  # the series ids so far, as runs: a repeat is refused at its row
        for batch in batches:
            count = len(batch[0]) if batch else 0
            if count:
                seen.refuse_repeats(batch[1], start, table)
            specs: list[Spec] = []
            if not self._batch_specs(batch, arrays, opts, specs, part_types):
                for n, raw in enumerate(zip(*batch, strict=True), start=start + 1):
                    spec = self._row_spec(n, raw, arrays, opts, good_types)
                    specs.append(spec)
                    part_types[spec.part] = spec.et
            sink(specs, batch[0] if batch else ())
            shapes.update(batch[shape_at])
            start += count
        element_types = {str(et) for et in part_types.values()}
        if len(element_types) > 1:
            raise InvalidParameterError(
                f"{table} mixes time-series or element types; a partition holds one of each "
                f"(element types {', '.join(sorted(element_types))})",
                table=table,
            )
        self.place.cell_shape = _widest_shape(shapes)

    def _batch_specs(
        self,
        batch: Sequence[Sequence[Any]],
        arrays: Mapping[int, tuple[str, str]],
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
        if self._keyless and isinstance(arrays, ArrayKeys):
            # Packed (spec_columns): the Specs' keys go unread, only checked for.
            if not arrays.known(batch[0]):
                return False
            keys: list[Any] = [None] * len(batch[0])
        else:
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
        if self._packer is not None:
            # Packed (spec_columns): the columns go in as they are, no Spec made.
            self._packer.add_columns(
                fids,
                batch[0],
                owner_ids,
                [ov["owner_type"]] * len(fids) if "owner_type" in ov else owner_types,
                names,
                [parts[k][-1] for k in shared_keys],
            )
            return True
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
        arrays: Mapping[int, tuple[str, str]],
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
        arrays: Mapping[int, tuple[str, str]],
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
            tr = parse_reference(r["time_reference"], what)
        descriptors = {
            d: ov[d] if d in ov else descriptor_value(d, r[d], what) for d in DESCRIPTORS
        }
        if "features" in ov:
            features = ov["features"]
        else:
            # Series share a handful of feature maps; parse each text once. The dict is
            # only read from here on, so the series that share it may share the object.
            features = self._features.get(r["features"])
            if features is None:
                features = parse_features(r["features"], what)
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


_FID = operator.attrgetter("file_id")
_ROW_OWNER = operator.attrgetter("row_owner_id")
_OWNER_TYPE = operator.attrgetter("owner_type")
_PART = operator.attrgetter("part")


def _extend(col: array | list, values: Iterable[int]) -> array | list:
    """``col`` extended by ``values``: an int64 column, or a list once a value does not
    fit one (the containers give 64-bit integers; a Python source may not)."""
    values = list(values)
    if type(col) is array:
        try:
            col.extend(values)
            return col
        except OverflowError:
            col = col.tolist()
    col.extend(values)
    return col


def _as_range(col: array | list) -> array | list | range:
    """``col``, or the range it equals when it counts up by one (an export numbers its
    series rows, and often their owners, in row order): then nothing is held per row."""
    if type(col) is not array or not len(col):
        return col
    values = np.frombuffer(col, dtype=np.int64)
    first = int(values[0])
    if int(values[-1]) - first != len(values) - 1 or not bool((np.diff(values) == 1).all()):
        return col
    return range(first, first + len(values))


class SpecColumns:
    """A partition's series rows, checked, held as columns (file id, array id, the row's
    owner id, owner type, name, shared part) instead of a :class:`Spec` each: a
    partition may hold millions of series. :meth:`sort` orders them by ``(key, id)``;
    :meth:`spec` makes the Spec of one, in that order, when the core files it.
    """

    def __init__(self, table: str, opts: Options) -> None:
        self.table = table
        self._ov = opts.overrides
        self.fid: array | list | range = array("q")
        self.aid: array | list = array("q")
        self.owner: array | list | range = array("q")
        # A partition's rows share a handful of parts and owner types: 32-bit numbers.
        self.part = array("i")
        self.otype = array("i")  # the owner type's number in _otypes
        self._otypes: dict[str, int] = {}
        self._otype_list: list[str] = []
        self.names = bytearray()  # the row names, UTF-8, one after the other
        self.ends = array("q")  # where each name ends in ``names``
        #: Spec.part -> the shared part (SeriesRows._shared_part) of its rows.
        self.parts: dict[int, tuple] = {}
        self.order: np.ndarray = np.empty(0, np.int64)

    def __len__(self) -> int:
        return len(self.part)

    def add(self, specs: list[Spec], aids: Sequence[int]) -> None:
        """One batch's Specs (``aids``: their rows' array ids) packed and let go (none:
        the batch went in by :meth:`add_columns`)."""
        if specs:
            self.add_columns(
                list(map(_FID, specs)),
                aids,
                list(map(_ROW_OWNER, specs)),
                list(map(_OWNER_TYPE, specs)),
                [s.row_name for s in specs],
                list(map(_PART, specs)),
            )

    def add_columns(
        self,
        fids: Sequence[int],
        aids: Sequence[int],
        row_owner_ids: Sequence[int],
        owner_types: Sequence[str],
        row_names: Sequence[str],
        parts: Sequence[int],
    ) -> None:
        """One batch of checked series rows, as columns: file ids, array ids, the rows'
        owner ids, the owner types (overrides applied), the rows' names and the shared
        parts' numbers."""
        self.fid = _extend(self.fid, fids)
        self.aid = _extend(self.aid, aids)
        self.owner = _extend(self.owner, row_owner_ids)
        self.part.extend(parts)
        codes = self._otypes
        for t in set(owner_types) - codes.keys():
            codes[t] = len(self._otype_list)
            self._otype_list.append(t)
        self.otype.extend(map(codes.__getitem__, owner_types))
        # surrogatepass: a str the file's decoder let through comes back the same.
        encoded = [name.encode("utf-8", "surrogatepass") for name in row_names]
        ends = itertools.accumulate(map(len, encoded), initial=len(self.names))
        self.ends.extend(itertools.islice(ends, 1, None))
        self.names += b"".join(encoded)

    def sort(self, entry_of: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """Order the series by ``(key, id)``, stable; ``entry_of(array_ids)`` gives each
        array id's key number (keys numbered in key order). Returns each series' key
        number, in that order."""
        aid = np.asarray(self.aid, dtype=np.int64 if type(self.aid) is array else object)
        entries = entry_of(aid)
        # The array ids only order the rows (a Spec takes its key from the entry): let go.
        del aid
        self.aid = array("q")
        fid = np.asarray(self.fid, dtype=np.int64 if type(self.fid) in (array, range) else object)
        self.order = np.lexsort((fid, entries))
        return entries[self.order]

    def spec(self, j: int, key: tuple[str, str]) -> Spec:
        """The Spec of the ``j``-th series in ``(key, id)`` order (``key``: its array's)."""
        return self.specs(j, j + 1, key)[0]

    def specs(self, lo: int, hi: int, key: tuple[str, str]) -> list[Spec]:
        """The Specs of the series ``lo`` to ``hi`` in ``(key, id)`` order, all of the
        array key ``key``."""
        return self._specs_at(self.order[lo:hi].tolist(), itertools.repeat(key))

    def first_specs(self, starts: Sequence[int], keys: Sequence[tuple[str, str]]) -> list[Spec]:
        """The Spec of the series at each of ``starts`` in ``(key, id)`` order, the
        ``k``-th of the array key ``keys[k]``: :meth:`spec` of many at once (one column
        pick, not a call and a slice each)."""
        return self._specs_at(self.order[np.asarray(starts, dtype=np.int64)].tolist(), keys)

    def _specs_at(self, rows: list[int], keys: Iterable[tuple[str, str]]) -> list[Spec]:
        """The Specs of the series rows ``rows`` (positions as packed), each of its key."""
        ov, table, names, ends = self._ov, self.table, self.names, self.ends
        fid, owner, otype, part = self.fid, self.owner, self.otype, self.part
        otypes, parts = self._otype_list, self.parts
        out = []
        for i, key in zip(rows, keys, strict=False):  # keys may repeat one key endlessly
            row_name = names[ends[i - 1] if i else 0 : ends[i]].decode("utf-8", "surrogatepass")
            row_owner = owner[i]
            # Positional, as SeriesRows makes them.
            out.append(Spec(
                fid[i], key, row_name, row_owner, table, ov.get("owner_id", row_owner),
                otypes[otype[i]], ov.get("name", row_name), *parts[part[i]],
            ))  # fmt: skip
        return out


def read_columns(
    source: PartitionSource, opts: Options
) -> tuple[Mapping[int, tuple[str, str]], SpecColumns]:
    """:func:`read_rows` with the series rows packed as columns (what the import holds)."""
    source.check_columns()
    rows = SeriesRows(source.place)
    arrays = rows.array_keys(source.array_rows())
    return arrays, rows.spec_columns(source.series_batches(rows.columns), arrays, opts)


def first_specs(specs: Iterable[Spec]) -> dict[tuple[str, str], Spec]:
    """The first series row naming each array key (the grid a rehash places it by)."""
    first: dict[tuple[str, str], Spec] = {}
    for s in specs:
        first.setdefault(s.key, s)
    return first
