"""A values group re-encoded into the store array each series' grid makes of it.

The group's values checked against the element type; its rows placed by their
coordinates on the grid the series row declares (a single series' steps, an irregular
series' instants, a forecast's windows, steps and lanes), unless the reader vouched for
them (:attr:`~.places.Group.affine`); composites shrunk to their canonical width; the
content hashes computed for a batch of arrays at once (:func:`hash_built`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.elements import ElementType, check_composite_rows, check_element_shape, shrink
from ...core.hashing import data_hashes
from ...core.periods import grid_index, step
from ...core.timeref import MAX_MS, MIN_MS
from ...errors import InvalidParameterError, counted
from ...model import TimeSeriesType
from .options import Options
from .places import Group, Place, fmt_ms
from .specs import Spec


@dataclass(slots=True)
class Built:
    """One group re-encoded into a store array for one grid."""

    data: np.ndarray
    hash_hex: str
    initial_ms: int | None = None
    timestamps: np.ndarray | None = None
    count: int | None = None
    percentiles: list[float] | None = None
    #: The content hash (``hash_hex`` as bytes), set with it by :func:`hash_built`.
    digest: bytes = b""
    #: Its catalog fields and stored form (``array_values``), once a series row needs them.
    fields: tuple[dict[str, Any], np.ndarray] | None = None


def _check_elements(
    place: Place, group: Group, et: ElementType, spec: Spec, opts: Options
) -> np.ndarray:
    """The group's values checked against the element type (composites shrunk later)."""
    values = group.values
    shape = tuple(values.shape[1:])
    try:
        check_element_shape(et, shape, et.dtype)
    except InvalidParameterError as exc:
        raise InvalidParameterError(
            f"series {spec.label}, {place.row_text(group.key, [], None)}: {exc}",
            table=place.values,
        ) from None
    if et.is_composite and values.size:
        try:
            check_composite_rows(et, values.reshape(-1, values.shape[-1]))
        except InvalidParameterError as exc:
            rows = values.reshape(group.n, -1, values.shape[-1])
            bad = None
            for i in range(group.n):
                try:
                    check_composite_rows(et, rows[i])
                except InvalidParameterError:
                    bad = i
                    break
            assert group.rowids is not None
            raise InvalidParameterError(
                f"series {spec.label}, {place.row_text(group.key, group.rowids(), bad)}: {exc}",
                table=place.values,
            ) from None
    if opts.element_shape is not None and opts.element_shape != shape:
        raise InvalidParameterError(
            f"series {spec.label} has element_shape {list(shape)}, but "
            f"{list(opts.element_shape)} was asserted"
        )
    return values


def _check_instants(place: Place, group: Group, spec: Spec) -> None:
    """Refuse an instant the store cannot read back (outside the years 1 to 9999), naming
    the series and its row, before any arithmetic on the instants can overflow."""
    if group.affine is not None and group.timestamp is None:
        a = group.affine
        first = int(a[1])
        if a[0] == "sts":
            last = first + (group.n - 1) * int(a[2])
        else:  # (kind, first, itv, res, steps, count, ...)
            last = first + (int(a[5]) - 1) * int(a[2]) + (int(a[4]) - 1) * int(a[3])
        if min(first, last) >= MIN_MS and max(first, last) <= MAX_MS:
            return
        _materialize(group)  # the rare refusal names the row
    for col, column in (("timestamp", group.timestamp), ("issue_time", group.issue)):
        if column is None or not column.size:
            continue
        bad = (column < MIN_MS) | (column > MAX_MS)
        if bad.any():
            i = int(np.argmax(bad))
            rowids = group.rowids() if group.rowids else []
            raise InvalidParameterError(
                f"series {spec.label}: {place.row_text(group.key, rowids, i)}, `{col}` "
                f"{int(column[i])} ms is outside the years 1 to 9999, the instants the store "
                "can read back; write an instant in that range and import again",
                table=place.values,
                series=spec.label,
            )


def build_one(place: Place, group: Group, spec: Spec, et: ElementType) -> Built:
    """Re-encode a group into the store array the grid of ``spec`` makes of it."""
    _check_instants(place, group, spec)
    tst = place.type
    values = group.values
    if group.affine is not None and _affine_fits(group.affine, spec):
        kind = group.affine[0]
        if kind == "sts":
            data = values
            return Built(np.ascontiguousarray(data), "", initial_ms=group.affine[1])
        if kind == "lanes":
            _, first, _itv, _res, steps, count, lanes, lane_values = group.affine
            e = values.shape[1:]
            data = values.reshape(count, steps, lanes, *e).transpose(2, 1, 0, *range(3, 3 + len(e)))
            if tst is TimeSeriesType.Scenarios:
                return Built(np.ascontiguousarray(data), "", initial_ms=first, count=count)
            percentiles = [float(p) for p in lane_values]
            return Built(
                np.ascontiguousarray(data),
                "",
                initial_ms=first,
                count=count,
                percentiles=percentiles,
            )
        _, first, _itv, _res, steps, count = group.affine
        data = values.reshape(count, steps, *values.shape[1:]).swapaxes(0, 1)
        return Built(np.ascontiguousarray(data), "", initial_ms=first, count=count)
    _materialize(group)
    assert group.timestamp is not None
    if tst is TimeSeriesType.SingleTimeSeries:
        return _build_static(place, group, spec)
    if tst.is_irregular:
        return _build_irregular(place, group, spec)
    return _build_forecast(place, group, spec)


def _affine_fits(affine: tuple, spec: Spec) -> bool:
    if affine[0] == "sts":
        return spec.res is not None and not spec.res.calendar and spec.res.ms == affine[2]
    return (
        spec.res is not None
        and spec.itv is not None
        and not spec.res.calendar
        and not spec.itv.calendar
        and spec.itv.ms == affine[2]
        and spec.res.ms == affine[3]
        and spec.steps == affine[4]
    )


def _materialize(group: Group) -> None:
    """Spell out the coordinates of a group the fast path verified."""
    if group.timestamp is not None or group.affine is None:
        return
    r = np.arange(group.n, dtype=np.int64)
    if group.affine[0] == "sts":
        _, first, res = group.affine
        group.timestamp = first + r * res
        return
    if group.affine[0] == "lanes":
        _, first, itv, res, steps, _count, lanes, lane_values = group.affine
        group.issue = first + (r // (steps * lanes)) * itv
        group.timestamp = group.issue + ((r // lanes) % steps) * res
        group.lane = lane_values[r % lanes]
        return
    _, first, itv, res, steps, _count = group.affine
    group.issue = first + (r // steps) * itv
    group.timestamp = group.issue + (r % steps) * res


def _grid_error(spec: Spec, anchor: int, detail: str) -> InvalidParameterError:
    return InvalidParameterError(
        f"series {spec.label} does not sit on a {spec.res} grid anchored at {fmt_ms(anchor)}"
        f" ({detail})"
    )


def _build_static(place: Place, group: Group, spec: Spec) -> Built:
    ts = group.timestamp
    assert ts is not None and spec.res is not None
    n = group.n
    anchor = int(ts.min())
    res = spec.res
    if res.calendar:
        k = grid_index(anchor, res, ts)
        off = k < 0
    else:
        d = ts - anchor
        k = d // res.ms
        off = (d % res.ms) != 0
    rowids = group.rowids or (lambda: [])
    if off.any():
        i = int(np.argmax(off))
        raise _grid_error(
            spec,
            anchor,
            f"{place.row_text(group.key, rowids(), i)} is at {fmt_ms(int(ts[i]))}, between "
            "two steps",
        )
    order = np.argsort(k, kind="stable")
    sk = k[order]
    expected = np.arange(n, dtype=np.int64)
    if not np.array_equal(sk, expected):
        j = int(np.argmax(sk != expected))
        if j > 0 and sk[j] == sk[j - 1]:
            i = int(order[j])
            detail = (
                f"{place.row_text(group.key, rowids(), i)} repeats the step at {fmt_ms(int(ts[i]))}"
            )
        else:
            missing = int(step(anchor, res, j))
            detail = f"no row holds the step at {fmt_ms(missing)}, step {j} of {n} rows"
        raise _grid_error(spec, anchor, detail)
    data = group.values if _is_identity(order) else group.values[order]
    return Built(np.ascontiguousarray(data), "", initial_ms=anchor)


def _is_identity(order: np.ndarray) -> bool:
    return bool((np.diff(order) == 1).all()) if order.size > 1 else True


def _build_irregular(place: Place, group: Group, spec: Spec) -> Built:
    ts = group.timestamp
    assert ts is not None
    order = np.argsort(ts, kind="stable")
    sts = ts[order]
    if sts.size > 1:
        same = np.diff(sts) <= 0
        if same.any():
            j = int(np.argmax(same)) + 1
            rowids = group.rowids() if group.rowids else []
            a, b = int(order[j - 1]), int(order[j])
            raise InvalidParameterError(
                f"series {spec.label}: timestamps must be strictly increasing, but "
                f"{place.row_text(group.key, rowids, b)} repeats {fmt_ms(int(sts[j]))}"
                + (f" (as rowid {rowids[a]} does)" if place.numbered and rowids else ""),
                table=place.values,
            )
    identity = _is_identity(order)
    data = group.values if identity else group.values[order]
    return Built(np.ascontiguousarray(data), "", timestamps=np.ascontiguousarray(sts))


def _build_forecast(place: Place, group: Group, spec: Spec) -> Built:
    tst = place.type
    ts, it = group.timestamp, group.issue
    assert ts is not None and it is not None
    assert spec.res is not None and spec.itv is not None and spec.steps is not None
    res, itv, steps = spec.res, spec.itv, spec.steps
    rowids = group.rowids or (lambda: [])
    n = group.n
    anchor = int(it.min())
    windows, w = np.unique(it, return_inverse=True)
    count = int(windows.size)
    expected = np.array([step(anchor, itv, k) for k in range(count)], dtype=np.int64)
    if not np.array_equal(windows, expected):
        k = int(np.argmax(windows != expected))
        i = int(np.argmax(it == windows[k]))
        raise InvalidParameterError(
            f"series {spec.label} has an issue time of {fmt_ms(int(windows[k]))}, which is not "
            f"window {k} of a {itv} grid anchored at {fmt_ms(anchor)} "
            f"({place.row_text(group.key, rowids(), i)})"
        )
    if not itv.is_positive and count > 1:  # pragma: no cover - caught by the window check
        raise InvalidParameterError(f"series {spec.label} has {count} windows at interval PT0S")
    # Step within the window: on the resolution grid that starts at the window's issue.
    if res.calendar:
        h = np.empty(n, dtype=np.int64)
        for k in range(count):
            sel = w == k
            h[sel] = grid_index(int(windows[k]), res, ts[sel])
        off = (h < 0) | (h >= steps)
    else:
        d = ts - it
        h = d // res.ms
        off = ((d % res.ms) != 0) | (h < 0) | (h >= steps)
    if off.any():
        i = int(np.argmax(off))
        raise InvalidParameterError(
            f"series {spec.label} has a target time of {fmt_ms(int(ts[i]))}, which is not on "
            f"the {steps}-step grid starting at {fmt_ms(int(it[i]))} "
            f"({place.row_text(group.key, rowids(), i)})"
        )
    percentiles = None
    if tst is TimeSeriesType.Probabilistic:
        pct = group.lane
        assert pct is not None
        if not np.isfinite(pct).all():
            i = int(np.argmax(~np.isfinite(pct)))
            raise InvalidParameterError(
                f"series {spec.label} has a percentile of {float(pct[i])!r}, which is not finite "
                f"({place.row_text(group.key, rowids(), i)})"
            )
        lanes_v, lane = np.unique(pct, return_inverse=True)
        lanes = int(lanes_v.size)
        percentiles = [float(p) for p in lanes_v]
    elif tst is TimeSeriesType.Scenarios:
        lane = group.lane
        assert lane is not None
        if lane.size and lane.min() < 0:
            i = int(np.argmax(lane < 0))
            raise InvalidParameterError(
                f"series {spec.label} has scenario {int(lane[i])}; scenarios count from 0 "
                f"({place.row_text(group.key, rowids(), i)})"
            )
        lanes = int(lane.max()) + 1 if lane.size else 0
    else:
        lane = np.zeros(n, dtype=np.int64)
        lanes = 1
    cells = lanes * steps * count
    if n != cells:
        raise InvalidParameterError(
            f"series {spec.label} has {n} rows, but its grid holds {cells} values "
            f"({counted(lanes, 'lane')} x {counted(steps, 'step')} x {counted(count, 'window')})"
        )
    slot = (lane.astype(np.int64) * steps + h) * count + w
    seen = np.zeros(cells, dtype=np.int64)
    np.add.at(seen, slot, 1)
    if (seen > 1).any():
        s = int(np.argmax(seen > 1))
        lane_i, rest = divmod(s, steps * count)
        h_i, w_i = divmod(rest, count)
        dup = np.flatnonzero(slot == s)
        rows = rowids()
        where = ", ".join(place.row_text(group.key, rows, int(i)).split(", ")[-1] for i in dup[:2])
        raise InvalidParameterError(
            f"series {spec.label} has two rows for window {w_i}, step {h_i}, lane {lane_i} "
            f"({where} of {place.values})"
        )
    values = group.values
    out = np.empty((cells, *values.shape[1:]), dtype=values.dtype)
    out[slot] = values
    lead = [steps, count] if tst.leading_dims == 2 else [lanes, steps, count]
    data = out.reshape(*lead, *values.shape[1:])
    return Built(data, "", initial_ms=anchor, count=count, percentiles=percentiles)


def _canonical(built: Built, et: ElementType) -> Built:
    """The composite at its canonical (minimal) width, which is what the hash covers."""
    if et.is_ragged:
        built.data = np.ascontiguousarray(shrink(et, built.data))
    return built


def hash_built(builts: Sequence[Built]) -> None:
    """Set the content hash of every array in ``builts`` (already at canonical width).

    One :func:`~infrastore_sqlite.core.hashing.data_hashes` call for the lot: a batch of
    short arrays costs about one SHA-256 update each, rather than the several numpy
    calls per array of hashing them one by one.
    """
    for b, digest in zip(builts, data_hashes([b.data for b in builts]), strict=True):
        b.digest = digest
        b.hash_hex = digest.hex()


def build_grids(
    place: Place, group: Group, specs: Sequence[Spec], opts: Options
) -> dict[Any, Built]:
    """Every distinct grid among ``specs`` turned into its store array, not yet hashed
    (:func:`hash_built`)."""
    et = specs[0].et
    _check_elements(place, group, et, specs[0], opts)
    out: dict[Any, Built] = {}
    for spec in specs:
        if spec.grid_key not in out:
            out[spec.grid_key] = _canonical(build_one(place, group, spec, et), et)
    return out


def build_group(
    place: Place, group: Group, specs: Sequence[Spec], opts: Options
) -> dict[Any, Built]:
    """Every distinct grid among ``specs`` turned into its store array, hashed."""
    out = build_grids(place, group, specs, opts)
    hash_built(list(out.values()))
    return out
