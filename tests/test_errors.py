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


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        ("to the millisecond", "to the millisecond. Truncate it."),
        ("counts whole milliseconds)", "counts whole milliseconds). Truncate it."),
        ("already a sentence.", "already a sentence. Truncate it."),
        ("a list follows:", "a list follows: Truncate it."),
    ],
)
def test_a_hint_follows_its_message_as_the_next_sentence(message: str, shown: str) -> None:
    exc = errors.InvalidParameterError(message, hint="Truncate it.")
    assert str(exc) == exc.render("cli") == shown
    assert exc.message == message and exc.hint == "Truncate it."  # the fields stay as given


def test_a_hint_already_in_the_message_is_not_repeated() -> None:
    exc = errors.InvalidParameterError("bad value; Truncate it.", hint="Truncate it.")
    assert str(exc) == "bad value; Truncate it."


def test_a_term_naming_a_path_with_braces_is_spelled_as_it_is() -> None:
    # The store's path holds the name of another slot: each slot is replaced once, from
    # the template, never inside what a term spelled.
    terms = errors.damage_terms("/data/{repair}/store")
    exc = errors.DamagedStoreError("run {verify}, then {repair}", terms=terms)
    assert exc.render("cli") == (
        "run `infrastore-sqlite --store '/data/{repair}/store' verify`, then "
        "`infrastore-sqlite --store '/data/{repair}/store' repair`"
    )
    assert str(exc) == "run Store.diagnose(), then Store.repair()"
    assert errors.render("{x} {verify", {"x": errors.OVERWRITE}, "cli") == "--overwrite {verify"
