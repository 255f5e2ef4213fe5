"""The worker-thread prefetch that export and import use to overlap their two halves."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator

import pytest

from infrastore_sqlite.interchange.pipeline import Prefetch


class Boom(RuntimeError):
    pass


def test_items_arrive_in_order_and_are_made_in_the_worker() -> None:
    threads: list[str] = []

    def source() -> Iterator[int]:
        for i in range(1000):
            threads.append(threading.current_thread().name)
            yield i

    with Prefetch(source(), depth=3) as items:
        assert list(items) == list(range(1000))
    assert set(threads) == {"infrastore-sqlite-prefetch"}


def test_an_error_in_the_source_is_raised_where_its_item_would_come() -> None:
    def source() -> Iterator[int]:
        yield 1
        yield 2
        raise Boom("third item")

    got: list[int] = []
    with pytest.raises(Boom, match="third item"), Prefetch(source()) as items:
        for x in items:
            got.append(x)
    assert got == [1, 2]


def test_the_worker_stays_at_most_depth_ahead() -> None:
    made: list[int] = []

    def source() -> Iterator[int]:
        for i in range(100):
            made.append(i)
            yield i

    with Prefetch(source(), depth=2) as items:
        it = iter(items)
        assert next(it) == 0
        time.sleep(0.2)  # time enough for an unbounded worker to make all 100
        # one handed over, two queued, one made and waiting for room
        assert len(made) <= 4


def test_leaving_early_stops_the_worker_and_closes_the_source() -> None:
    closed = threading.Event()

    def source() -> Iterator[int]:
        try:
            i = 0
            while True:
                yield i
                i += 1
        finally:
            closed.set()

    with pytest.raises(Boom), Prefetch(source(), depth=2) as items:
        for x in items:
            if x == 5:
                raise Boom("consumer fails")
    assert closed.is_set()
    assert not any(t.name == "infrastore-sqlite-prefetch" for t in threading.enumerate())


def test_the_switch_interval_is_restored() -> None:
    before = sys.getswitchinterval()
    with Prefetch(iter(range(3))) as items:
        assert sys.getswitchinterval() <= before
        assert list(items) == [0, 1, 2]
    assert sys.getswitchinterval() == before


def test_overlapping_prefetches_restore_the_interval_after_the_last() -> None:
    before = sys.getswitchinterval()
    a = Prefetch(iter(range(3)))
    b = Prefetch(iter(range(3)))
    a.__enter__()
    b.__enter__()
    a.close()  # b still runs: the interval stays short
    assert sys.getswitchinterval() < before
    b.close()
    assert sys.getswitchinterval() == before


def test_the_collector_is_paused_while_a_worker_runs() -> None:
    import gc

    assert gc.isenabled()
    a = Prefetch(iter(range(3)))
    b = Prefetch(iter(range(3)))
    with a as items:
        assert not gc.isenabled()
        b.__enter__()
        assert list(items) == [0, 1, 2]
    assert not gc.isenabled()  # b still runs
    b.close()
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    import gc

    gc.disable()
    try:
        with Prefetch(iter(range(3))) as items:
            assert list(items) == [0, 1, 2]
        assert not gc.isenabled()
    finally:
        gc.enable()
