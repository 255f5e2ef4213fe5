"""The repository's root, for the tests that read its docs and schemas or run its code.

One definition, so no test counts its own way up from ``__file__``; tests import it like
the other helper modules here (``from repo_root import REPO_ROOT``).
"""

from __future__ import annotations

from pathlib import Path

#: The directory holding ``pyproject.toml``, ``docs/`` and ``infrastore_sqlite/``.
REPO_ROOT = Path(__file__).resolve().parent.parent
