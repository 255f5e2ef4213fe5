"""The API spellings of the refusals' "what to do" name functions that exist."""

from __future__ import annotations

import importlib
import re

import pytest

from infrastore_sqlite import errors


def _resolve(dotted: str) -> object:
    """The object a dotted path such as ``infrastore_sqlite.rehash_sqlite`` names."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise LookupError(dotted)


@pytest.mark.parametrize(
    "term",
    [errors.rehash_term("edited.db"), errors.rehash_dir_term("exported")],
    ids=["rehash --db", "rehash --dir"],
)
def test_rehash_terms_name_callable_functions(term: errors.Term) -> None:
    match = re.fullmatch(r"([\w.]+)\((.*)\)", term.api)
    assert match, term.api
    function = _resolve(match.group(1))
    assert callable(function), match.group(1)
    assert match.group(1).split(".")[-1] == function.__name__
