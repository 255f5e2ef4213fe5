"""The fixture the drop-in cases share: ``same(case)`` runs a case on both packages.

The machinery is in harness.py; may import it, pytest and the standard library.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from harness import Case, check


@pytest.fixture
def same(tmp_path: Path) -> Callable[[Case], None]:
    """``same(case)``: run ``case`` on the reference and on ours and compare."""
    return lambda case: check(case, tmp_path)
