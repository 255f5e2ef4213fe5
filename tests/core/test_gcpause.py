"""gc_paused: the collector is off inside the block and as it was afterwards."""

from __future__ import annotations

import gc

import pytest

from infrastore_sqlite.core.gcpause import gc_paused


def test_pauses_and_restores_even_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), gc_paused():
        assert not gc.isenabled()
        _ = 1 / 0
    assert gc.isenabled()


def test_leaves_a_disabled_collector_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
