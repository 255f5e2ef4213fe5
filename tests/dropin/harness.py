"""The drop-in harness (issue 25): one call, run on both packages, compared.

The test modules here import it (``from harness import Case, check, params``) and run
each case with ``check(case, tmp_path)``. (No conftest.py here: other test modules import
``conftest`` by name, and a second one would shadow the root's.)

A :class:`Case` is a call written once against a package object ``lib`` (``infrastore``
0.15.1, the reference, or ``infrastore_sqlite``), the way a caller's script written
against the reference would make it after ``import infrastore_sqlite as infrastore``.
:func:`check` runs it on both, each in a fresh directory, and compares what a caller sees:

* a value: :func:`normalize` turns it into plain comparable data (arrays as dtype, shape
  and bytes, so NaNs and signed zeros compare bit for bit; datetimes as text and zone;
  series as what their properties show; Arrow tables as schema, metadata and columns),
  and the two must be equal, order included;
* a refusal: ours must be an instance of the class the reference raised, looked up by
  name in our package (or the builtins), so ``except ThatClass`` catches both; and the
  case's ``words`` (what callers match on) must appear in both messages;
* either way, the classes of the warnings issued, and that ours leaves nothing for the
  garbage collector to fail on (Python prints those as "Exception ignored in …").

The calls are drawn from the reference's published docstrings and its public
``examples/python`` scripts (which calls a caller makes), never from its code or tests.
A case that differs today for a reason another module must fix carries ``xfail`` (the
fix, file and function); :func:`params` marks it ``strict``, so it fails the day it
passes and the mark has to go.

May import: the two packages, numpy, pyarrow, pytest and the standard library.
"""

from __future__ import annotations

import builtins
import contextlib
import enum
import gc
import itertools
import sys
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import infrastore
import numpy as np
import pytest

import infrastore_sqlite

LIBS = (infrastore, infrastore_sqlite)


class Ctx:
    """What one run of a case gets besides ``lib``: a private directory, stores that are
    closed when the run ends, and the names both packages spell alike."""

    def __init__(self, lib: Any, directory: Path) -> None:
        self.lib = lib
        self.dir = directory
        self._stores: list[Any] = []
        self._names = itertools.count()

    @property
    def comp(self) -> Any:
        """``OwnerCategory.Component`` of this package."""
        return self.lib.OwnerCategory.Component

    def path(self, name: str | None = None) -> str:
        """A path inside the run's directory (a fresh name when none is given)."""
        return str(self.dir / (name or f"p{next(self._names)}"))

    def store(self, **kw: Any) -> Any:
        """A new store in the run's directory, closed when the run ends."""
        s = self.lib.Store.create(self.path(f"s{next(self._names)}.h5"), **kw)
        self._stores.append(s)
        return s

    def keep(self, s: Any) -> Any:
        """Close ``s`` (a store the case opened itself) when the run ends."""
        self._stores.append(s)
        return s

    def close(self) -> None:
        for s in self._stores:
            # a case may have closed it, or left it broken on purpose; a transaction it
            # left open is rolled back first, as a caller's `with` block would
            with contextlib.suppress(Exception):
                for _ in range(8):  # nested begin_transaction() calls each need one
                    if not s.in_transaction:
                        break
                    s.rollback_transaction()
            with contextlib.suppress(Exception):
                s.close()
        self._stores.clear()  # dropped here, on this thread (the reference's must be)


@dataclass(frozen=True)
class Case:
    """One call a caller makes, and what must match.

    Parameters
    ----------
    id
        The test id.
    call
        ``call(lib, ctx)``: the value to compare, or it raises.
    words
        Words the refusal's message must hold in both packages (callers match on them).
    xfail
        Why it differs today and where the fix goes; the case then must fail (strict).
    collect
        Run the garbage collector after the run, so that what the call left to it (a
        generator closed by the collector) fails inside this case, not in a later one.
    """

    id: str
    call: Callable[[Any, Ctx], Any]
    words: tuple[str, ...] = ()
    xfail: str | None = None
    collect: bool = False


@dataclass(frozen=True)
class Outcome:
    """What one package gave: a normalized value, or the class and message of the
    exception it raised (not the exception: its frames would keep what the call made
    alive past the stores' closing); and any error Python could only print ("Exception
    ignored in …") while the run's objects were collected."""

    value: Any = None
    error: type[BaseException] | None = None
    message: str = ""
    unraisable: tuple[str, ...] = ()
    warned: tuple[str, ...] = ()


def normalize(x: Any) -> Any:
    """``x`` as plain data that compares the way a caller would compare it."""
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, np.generic):
        return ("scalar", x.dtype.str, x.tobytes())
    if isinstance(x, bool | int | str | bytes | type(None)):
        return x
    if isinstance(x, float):
        return ("float", repr(x))  # repr: NaN equals NaN, -0.0 differs from 0.0
    if isinstance(x, datetime):
        return ("datetime", x.isoformat(), str(x.tzinfo))
    if isinstance(x, date | timedelta):
        return (type(x).__name__, str(x))
    if isinstance(x, dict):
        return ("dict", [(normalize(k), normalize(v)) for k, v in x.items()])
    if isinstance(x, list | tuple):
        return [normalize(v) for v in x]
    if isinstance(x, enum.Enum) or type(x).__name__ in ("OwnerCategory", "TimeSeriesType"):
        return ("enum", repr(x))
    if hasattr(x, "schema") and hasattr(x, "to_pydict"):  # a pyarrow.Table
        meta = x.schema.metadata or {}
        return (
            "table",
            [(f.name, str(f.type)) for f in x.schema],
            sorted(meta.items()),
            normalize(x.to_pydict()),
        )
    if hasattr(x, "data") and hasattr(x, "element_type"):  # a series
        return ("series", type(x).__name__, normalize(series_state(x)))
    raise TypeError(f"the harness cannot compare a {type(x).__name__}; normalize it first")


def series_state(x: Any) -> dict[str, Any]:
    """Everything a series object shows its caller, by property name."""
    out: dict[str, Any] = {"data": x.data, "len": len(x), "decoded": repr(x.decoded_values())}
    for attr in (
        "name",
        "element_type",
        "time_reference",
        "units",
        "quantity_kind",
        "unit_system",
        "component_field",
        "application_data",
        "resolution",
        "horizon",
        "interval",
        "count",
        "percentiles",
        "scenario_count",
        "length",
        "initial_timestamp",
        "timestamps",
    ):
        if hasattr(x, attr):
            out[attr] = getattr(x, attr)
    return out


def run(lib: Any, case: Case, directory: Path) -> Outcome:
    """``case`` on one package, in its own directory."""
    directory.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(lib, directory)
    caught: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = caught.append
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            try:
                outcome = Outcome(value=normalize(case.call(lib, ctx)))
            except TypeError as exc:
                if "the harness cannot compare" in str(exc):
                    raise
                outcome = Outcome(error=type(exc), message=str(exc))
            except Exception as exc:  # the refusal is what is compared
                outcome = Outcome(error=type(exc), message=str(exc))
        ctx.close()
        if case.collect:  # a full collection costs ~50 ms: only where a case asks
            gc.collect()
    finally:
        sys.unraisablehook = previous
    left = tuple(f"{type(u.exc_value).__name__}: {u.exc_value} (in {u.object!r})" for u in caught)
    # The warnings' classes, once each: a caller's filterwarnings names the class.
    classes = tuple(sorted({w.category.__name__ for w in warned}))
    return Outcome(outcome.value, outcome.error, outcome.message, left, classes)


def counterpart(name: str) -> type[BaseException]:
    """Our class for the reference's exception class ``name`` (or the builtin)."""
    ours = getattr(infrastore_sqlite, name, None)
    if isinstance(ours, type) and issubclass(ours, BaseException):
        return ours
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, BaseException):
        return builtin
    raise AssertionError(f"no counterpart for the reference's {name}")


def describe(o: Outcome) -> str:
    warned = f" (warned: {', '.join(o.warned)})" if o.warned else ""
    if o.error is None:
        return f"returned {o.value!r}"[:2000] + warned
    return f"raised {o.error.__name__}: {o.message}{warned}"


def check(case: Case, tmp_path: Path) -> None:
    """Run ``case`` on both packages and assert that a caller could not tell them apart."""
    ref = run(infrastore, case, tmp_path / "ref")
    ours = run(infrastore_sqlite, case, tmp_path / "ours")
    context = f"\nreference: {describe(ref)}\nours:      {describe(ours)}"
    # (The reference's own leftovers are not ours to judge.)
    assert not ours.unraisable, f"ours left errors only the collector saw: {ours.unraisable}"
    assert ours.warned == ref.warned, "the warnings differ" + context
    if ref.error is not None:
        assert ours.error is not None, "the reference refuses; ours does not" + context
        wanted = counterpart(ref.error.__name__)
        assert issubclass(ours.error, wanted), (
            f"`except {wanted.__name__}` would not catch ours" + context
        )
        for word in case.words:
            assert word in ref.message, f"the case's word {word!r} is not the reference's"
            assert word in ours.message, f"our message lacks {word!r}" + context
        return
    assert ours.error is None, "the reference accepts; ours refuses" + context
    assert not case.words, "words are for refusals; the reference accepted"
    assert ours.value == ref.value, "the results differ" + context


def params(cases: Iterable[Case]) -> list[Any]:
    """The cases as pytest params, a known difference marked strict xfail."""
    out = []
    for case in cases:
        marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        out.append(pytest.param(case, id=case.id, marks=marks))
    ids = [p.id for p in out]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    return out
