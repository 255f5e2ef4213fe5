"""The command line: ``infrastore-sqlite`` (and ``python -m infrastore_sqlite``).

A thin layer: it parses flags, calls the library (:class:`~infrastore_sqlite.store.Store`,
:mod:`~infrastore_sqlite.textfiles`, :mod:`~infrastore_sqlite.demo`) and renders what
comes back. The contract, which scripts may rely on:

* stdout carries only the result; errors, prompts and progress go to stderr.
* Exit 0 on success, 1 on a runtime error (or a negative answer, as from ``verify``),
  2 on a usage error (an unknown flag, a malformed value, flags that do not combine);
  141 (128 + SIGPIPE), quietly, when stdout's reader closed the pipe (``| head -1``).
* ``-f json`` / ``-f jsonl`` turn errors into ``{"status": "error", "message": …}`` on
  stderr as well; usage errors stay prose.
* No traceback for an expected error; an unexpected one prints one line saying where to
  report it (the traceback too when ``INFRASTORE_SQLITE_DEBUG=1``).

The package, by command group: :mod:`.base` (the global options, the store they name),
:mod:`.render` (output formats, progress, errors turned into the contract's messages and
exit codes), :mod:`.options` (flag types and the shared selector options), then the
commands — :mod:`.store_commands` (init, demo, list, get, info, transform, remove,
verify, repair), :mod:`.add`, :mod:`.export` (rehash, export) and :mod:`.edit` (diff, unshare:
the edit loop back into a store). This module makes the group and
registers the commands in ``--help`` order.

Layer: imports the whole library; click is imported only here (``tests/test_layers.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from .._version import __version__
from . import add, edit, export, query, store_commands, uploads
from .base import CONTEXT, PROG, Globals, example, global_options
from .render import Group

# ============================================================================ the group


@click.group(
    cls=Group,
    context_settings=CONTEXT,
    epilog=example(
        f"{PROG} demo demo-store",
        f"{PROG} --store demo-store list --type single",
        f"{PROG} --store demo-store export -f sqlite --db demo.db",
    ),
)
@click.version_option(__version__, "--version", prog_name=PROG)
@global_options(hidden=False)
def cli() -> None:
    """A content-addressed time-series store (HDF5 arrays + SQLite catalog).

    Every command works on the store named by --store (or $INFRASTORE_STORE). The
    global options may come before or after the command. stdout carries only the
    result; errors, prompts and progress go to stderr. Exit status: 0 success, 1
    runtime error, 2 usage error.
    """


# The order of --help (and docs/cli.md): the group lists commands as they are added.
for _command in (
    store_commands.init,
    store_commands.demo,
    add.add,
    store_commands.list_,
    store_commands.get,
    store_commands.info,
    store_commands.transform,
    store_commands.remove,
    store_commands.verify,
    store_commands.repair,
    store_commands.upgrade,
    export.rehash,
    export.export,
    edit.diff,
    edit.unshare,
    query.query,
    uploads.abort_uploads,
):
    cli.add_command(_command)


# ============================================================================ entry point


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``infrastore-sqlite``)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name=PROG)


__all__ = ["Globals", "cli", "main"]
