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
    cli |= set(re.findall(r"demo (\S+\.h5)", _section(readme, "## Quick start: command line")))
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
