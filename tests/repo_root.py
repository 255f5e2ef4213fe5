"""The repository's root, for the tests that read its docs and schemas or run its code.

One definition, so no test counts its own way up from ``__file__``; tests import it like
the other helper modules here (``from repo_root import REPO_ROOT``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: The directory holding ``pyproject.toml``, ``docs/`` and ``infrastore_sqlite/``.
REPO_ROOT = Path(__file__).resolve().parent.parent


def run_bench(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``bench/<script> --quick --quiet <args>`` run by this interpreter in ``cwd``, its
    output captured (five minutes at most): the bench tests' one way to run a script."""
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / script), "--quick", "--quiet", *args],
        cwd=str(cwd),
        capture_output=True,
        text=True,
        timeout=300,
    )
