"""A newcomer's first steps through README.md and docs/ (issue 24): the quick starts do
not trip over each other, every link and repository path the pages name exists, and
what a newcomer asks about is written where they look."""

from __future__ import annotations

import re

from repo_root import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# A path in backticks that names a file of the repository (a folder, then a file with
# one of these endings).
REPO_PATH = re.compile(r"`((?:[\w.-]+/)+[\w.-]+\.(?:md|txt|json|py))`")


def _section(text: str, title: str) -> str:
    return text.split(title, 1)[1].split("\n## ", 1)[0]


def test_the_two_quick_starts_use_different_stores() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    python = set(
        re.findall(r'Store\.create\("([^"]+)"\)', _section(readme, "## Quick start: Python"))
    )
    cli = set(re.findall(r"--store (\S+)", _section(readme, "## Quick start: command line")))
    cli |= set(
        re.findall(
            r"infrastore-sqlite demo (\S+)", _section(readme, "## Quick start: command line")
        )
    )
    assert python and cli
    assert not python & cli, f"both quick starts create {python & cli} in one folder"


def test_every_link_and_repository_path_exists() -> None:
    missing = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in LINK.findall(text):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                missing.append(f"{page.name}: link {target}")
        for path in REPO_PATH.findall(text):
            # From the repository, the page's folder, or the package (as architecture.md
            # names its modules).
            roots = (REPO_ROOT, page.parent, REPO_ROOT / "infrastore_sqlite")
            if not any((root / path).exists() for root in roots):
                missing.append(f"{page.name}: path {path}")
    assert not missing, missing


def test_the_import_report_says_how_ids_are_numbered() -> None:
    text = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    add = _section(text, "## `infrastore-sqlite add`")
    assert "order of each partition's array" in " ".join(add.split())


def test_the_readme_says_a_store_is_a_directory() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "A store is a directory" in readme and "h5ls" in readme


# A path ending in ``.h5``: a store named like an HDF5 file (issue 24: stores are
# directories, and an ``.h5`` name invites ``h5ls``).
H5_NAME = re.compile(r"[\w./<>…*{}-]*\.h5\b")


def _h5_store_names(text: str) -> list[str]:
    """The ``*.h5`` names in ``text`` that are not the two things truly named so: the
    reference's own store (``ref.h5``, only where the reference opens it) and the HDF5
    segment files inside a store (``…/segments/….h5``). A bare ``.h5`` (the extension
    spoken of) is not a name."""
    hits = []
    for line in text.splitlines():
        for match in H5_NAME.finditer(line):
            name = match.group(0)
            if name == ".h5" or "segments/" in name:
                continue
            if name == "ref.h5" and "infrastore.Store.open('ref.h5'" in line:
                continue
            hits.append(f"{name} in {line.strip()[:100]!r}")
    return hits


def _help_texts() -> dict[str, str]:
    """Every ``--help`` the command line prints: the group's and each command's."""
    from click.testing import CliRunner

    from infrastore_sqlite.cli import PROG, cli

    out = {PROG: CliRunner().invoke(cli, ["--help"], prog_name=PROG).output}
    for name in cli.list_commands(None):  # type: ignore[arg-type]
        result = CliRunner().invoke(cli, [name, "--help"], prog_name=PROG)
        assert result.exit_code == 0, (name, result.output)
        out[f"{PROG} {name}"] = result.output
    return out


def test_the_h5_rule_finds_a_store_named_like_hdf5() -> None:
    # The rule itself: what it lets through is narrow, and a store name is caught.
    assert _h5_store_names("infrastore-sqlite --store demo.h5 info") == [
        "demo.h5 in 'infrastore-sqlite --store demo.h5 info'"
    ]
    assert _h5_store_names('Store.create("grid.h5")')
    assert _h5_store_names("python -c \"Store.open('ref.h5')\"")  # not the reference's open
    assert _h5_store_names("demo-store/segments/3a2b.h5 and `.h5` files") == []


def test_no_user_facing_example_names_a_store_h5() -> None:
    texts = {page.name: page.read_text(encoding="utf-8") for page in PAGES}
    texts.update(_help_texts())
    hits = {where: found for where, text in texts.items() if (found := _h5_store_names(text))}
    assert not hits, f"name stores like directories (demo-store), not *.h5: {hits}"
