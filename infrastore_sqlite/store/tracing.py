"""``init_tracing``: the store's operations as Python log records.

The reference logs through Rust's ``tracing`` and switches it on with an ``EnvFilter``
directive string (``"debug"``, ``"warn,infrastore_core=trace"``). Here the operations (a
store created, opened or closed, a write committed, an import or export) are records of the
``logging`` logger ``infrastore_sqlite``, and :func:`init_tracing` reads the same directive
strings to give that logger a level and a stderr handler. Programs that configure
``logging`` themselves need not call it.
"""

from __future__ import annotations

import logging
import re
import sys

__all__ = ["LOG", "TRACE", "init_tracing"]

#: The logger every store operation logs to.
LOG = logging.getLogger("infrastore_sqlite")
#: Below DEBUG, as ``tracing``'s trace level is below its debug.
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

_LEVELS = {
    "off": logging.CRITICAL + 10,
    "error": logging.ERROR,
    "warn": logging.WARNING,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": TRACE,
}
_BY_NUMBER = ["off", "error", "warn", "info", "debug", "trace"]
_TARGET = re.compile(r"[^\s=,\[\]{}]+")
# Targets that name this package: ours, and the reference's crates (``infrastore``,
# ``infrastore_core`` ...) so that a script written for the reference means the same.
_OURS = ("infrastore_sqlite", "infrastore")
_initialized = False


def _level(text: str) -> int:
    word = text.strip().lower()
    if word.isdigit() and int(word) < len(_BY_NUMBER):
        word = _BY_NUMBER[int(word)]
    if word not in _LEVELS:
        raise ValueError(
            'error parsing level filter: expected one of "off", "error", "warn", "info", '
            '"debug", "trace", or a number 0-5'
        )
    return _LEVELS[word]


def _parse(directives: str) -> int | None:
    """The level the directives give this package's logger; None when they name none."""
    default: int | None = None
    targeted: tuple[int, int] | None = None  # (length of the target, level)
    for part in (p.strip() for p in directives.split(",")):
        if not part:
            continue
        if "=" not in part:
            if _TARGET.fullmatch(part) and part.lower() not in _LEVELS and not part.isdigit():
                # a bare target: every level of it, as tracing reads one
                if part.startswith(_OURS):
                    targeted = max(targeted or (0, 0), (len(part), TRACE))
                continue
            default = _level(part)
            continue
        target, _, level = part.partition("=")
        if not target or "=" in level:
            raise ValueError("invalid filter directive")
        value = _level(level) if level.strip() else TRACE
        if target.split("::")[0].startswith(_OURS) and (
            targeted is None or len(target) >= targeted[0]
        ):
            targeted = (len(target), value)
    return targeted[1] if targeted is not None else default


def init_tracing(filter: str) -> None:
    """Log the store's operations to stderr at the level ``filter`` gives.

    Parameters
    ----------
    filter
        A directive string as the reference takes it: a level (``"off"``, ``"error"``,
        ``"warn"``, ``"info"``, ``"debug"``, ``"trace"`` or ``0``-``5``), and/or
        ``target=level`` pairs separated by commas. A target starting with
        ``infrastore`` (``infrastore_sqlite``, or the reference's ``infrastore_core``)
        sets this package's level; other targets are accepted and ignored.

    Raises
    ------
    TypeError
        ``filter`` is not a str.
    ValueError
        A directive that does not parse (an unknown level, ``"=="``).

    Notes
    -----
    As in the reference, only the first successful call acts; later calls do nothing.
    The records go to the ``logging`` logger ``infrastore_sqlite``.
    """
    global _initialized
    if not isinstance(filter, str):
        raise TypeError(f"'{type(filter).__name__}' object is not an instance of 'str'")
    level = _parse(filter)
    if _initialized:
        return
    _initialized = True
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    LOG.addHandler(handler)
    LOG.setLevel(level if level is not None else logging.ERROR)
