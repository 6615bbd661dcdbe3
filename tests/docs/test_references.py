"""References to the docs from code, comments and READMEs point at pages and sections that exist.

Code cites its design and format notes as ``docs/<page>.md`` or ``docs/<page>.md#<section>``; a renamed page
or heading must not leave those behind. The site's own links are checked by ``mkdocs build --strict``.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("packages", "tests", "benchmarks", "examples")
_REFERENCE = re.compile(r"docs/(?P<page>[\w./-]+?\.md)(?:#(?P<anchor>[\w-]+))?")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")


def slug(title: str) -> str:
    """The anchor MkDocs (Python-Markdown's toc) and GitHub give a plain heading."""
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        match = None if in_code else _HEADING.match(line)
        if match:
            found.add(slug(match["title"]))
    return found


def source_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "noxfile.py"]
    for top in SOURCES:
        files += [p for p in (ROOT / top).rglob("*") if p.suffix in (".py", ".md") and ".nox" not in p.parts]
    return sorted(files)


def references() -> list[tuple[str, str, str | None]]:
    found = []
    for path in source_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in _REFERENCE.finditer(line):
                found.append((f"{path.relative_to(ROOT)}:{number}", match["page"], match["anchor"]))
    return found


def test_slug_follows_the_site() -> None:
    assert slug("Records and their order") == "records-and-their-order"
    assert slug("Partition directories") == "partition-directories"
    assert slug("`precommit-compact`") == "precommit-compact"


@pytest.mark.parametrize(("where", "page", "anchor"), references(), ids=[r[0] for r in references()])
def test_reference_resolves(where: str, page: str, anchor: str | None) -> None:
    target = ROOT / "docs" / page
    assert target.is_file(), f"{where}: docs/{page} does not exist"
    if anchor is not None:
        assert anchor in anchors(target), f"{where}: docs/{page} has no section #{anchor}"


def test_no_citations_of_notes_outside_the_repository() -> None:
    """Format notes live in docs/: a "spec §" citation would point at a document the repository lacks."""
    stale = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in source_files()
        if path != Path(__file__).resolve()  # this test names the pattern it looks for
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bspec\b[^\n]{0,30}§|shared/spec/", line, re.IGNORECASE)
    ]
    assert not stale, f"cite docs/*.md instead: {stale}"
