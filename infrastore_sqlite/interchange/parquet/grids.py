"""The grids the Parquet reader vouches for: the fixed grid a values row walks, found for
a whole batch of SingleTimeSeries arrays at once (:func:`sts_grids`) or for one array of
any type (:func:`affine_of`), so the import core need not place those rows again.

Pure numpy on decoded columns; imports ``interchange`` and below (``model``, the core's
``Group`` and ``Spec``), never pyarrow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...model import TimeSeriesType
from ..importing import Group, Spec

__all__ = ["affine_of", "sts_grids"]


def sts_grids(
    ts: np.ndarray, heads: np.ndarray, bounds: list[int], res_ms: Mapping[int, int]
) -> list[tuple | None]:
    """For each array of a batch (``heads[k]`` on rows ``bounds[k]:bounds[k + 1]``), its
    SingleTimeSeries grid ``("sts", first, ms)`` when its rows are exactly the fixed grid
    of resolution ``res_ms[heads[k]]`` (its series row's), in row order, else None: what
    :func:`affine_of` finds one array at a time, in one pass over the batch (short arrays
    cost a few numpy calls each).
    """
    k = len(heads)
    # 0 for an array without a fixed resolution (a fixed one is positive).
    lookup = getattr(res_ms, "lookup", None)  # the import's columns answer at once
    if lookup is not None:
        res = lookup(heads)
        res_list = res.tolist()
    else:
        res_list = [res_ms.get(a, 0) for a in heads.tolist()]
        res = np.asarray(res_list, dtype=np.int64)
    known = res != 0
    if not known.any():
        return [None] * k
    starts = np.asarray(bounds[:-1], dtype=np.int64)
    first = ts[starts]
    # A run walks its grid when each row is one step after the row before (int64 steps
    # wrap as the grid's own arithmetic does). The rows that are not, other than a run's
    # first, put their run off the grid: one pass over the batch, whatever the lengths.
    steps = {r for r in res_list if r}
    if len(steps) == 1:
        step: Any = steps.pop()
    else:
        step = np.repeat(res, np.diff(np.asarray(bounds, dtype=np.int64)))[1:]
    off = np.flatnonzero(np.diff(ts) != step) + 1
    run = np.searchsorted(starts, off, side="right") - 1
    ok = known.copy()
    ok[run[off != starts[run]]] = False
    return [
        ("sts", f, r) if good else None
        for good, f, r in zip(ok.tolist(), first.tolist(), res_list, strict=True)
    ]


def affine_of(tst: TimeSeriesType, group: Group, spec: Spec) -> tuple | None:
    """The grid the rows walk in file order, when they are exactly the one ``spec``
    declares (the core then does not place them again); None to let the core place them.

    A forecast's rows must go window by window, step by step and (Probabilistic,
    Scenarios) lane by lane, as every export writes them; its lanes are the rows of the
    first (window, step). A percentile lane must be a finite, non-zero float and the
    lanes strictly increasing, so that they are the sorted distinct percentiles the core
    would find (and ``-0.0`` is never taken for ``0.0``); scenarios count from 0.
    """
    ts = group.timestamp
    n = group.n
    if ts is None or n == 0 or spec.res is None or spec.res.calendar:
        return None
    r = np.arange(n, dtype=np.int64)
    first = int(ts[0])
    if tst is TimeSeriesType.SingleTimeSeries:
        if np.array_equal(ts, first + r * spec.res.ms):
            return ("sts", first, spec.res.ms)
        return None
    itv, steps, it, lane = spec.itv, spec.steps, group.issue, group.lane
    if not tst.is_forecast or itv is None or itv.calendar or not steps or it is None:
        return None
    lanes = 1
    if lane is not None:
        moved = (ts != ts[0]) | (it != it[0])
        lanes = int(np.argmax(moved)) if moved.any() else n
    block = steps * lanes
    if n % block or (not itv.is_positive and n != block):
        return None
    issue = int(it[0])
    if not (
        np.array_equal(it, issue + (r // block) * itv.ms)
        and np.array_equal(ts - it, (r % block // lanes) * spec.res.ms)
    ):
        return None
    if lane is None:
        return ("det", issue, itv.ms, spec.res.ms, steps, n // steps)
    head = lane[:lanes].copy()
    if tst is TimeSeriesType.Scenarios:
        if not np.array_equal(head, np.arange(lanes)):
            return None
    elif not (np.isfinite(head).all() and (head != 0).all() and (np.diff(head) > 0).all()):
        return None
    if not np.array_equal(lane, np.tile(head, n // lanes)):
        return None
    return ("lanes", issue, itv.ms, spec.res.ms, steps, n // block, lanes, head)
