"""The built site as a reader meets it (issue 33): opened from ``site/index.html`` over ``file://`` every
link leads to a page, the API pages show no reST markup, option names never break mid-word.

The ``docs`` nox session builds ``site/`` (``mkdocs build --strict``) before it runs these tests.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "site"
_LINK = re.compile(r"""(?:href|src)="([^"]*)\"""")
_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|exc|data|obj|const):[`<]")


@pytest.fixture(scope="module")
def pages() -> list[Path]:
    if not (SITE / "index.html").is_file():
        pytest.fail("no site/index.html: build the site first (./dev docs, or mkdocs build --site-dir site)")
    return sorted(p for p in SITE.rglob("*.html") if p.name != "404.html")


def _local_targets(page: Path) -> list[tuple[str, Path]]:
    found = []
    for link in _LINK.findall(page.read_text(encoding="utf-8")):
        parts = urlsplit(link)
        if parts.scheme or parts.netloc or not parts.path:  # another site, or an anchor of this page
            continue
        found.append((link, (page.parent / unquote(parts.path)).resolve()))
    return found


def test_every_link_opens_a_file_over_file_urls(pages: list[Path]) -> None:
    # Over file:// a link to a directory shows a file listing, and one to nothing shows an error.
    broken = [
        f"{page.relative_to(SITE)}: {link}"
        for page in pages
        for link, target in _local_targets(page)
        if not target.is_file()
    ]
    assert broken == []


def test_api_pages_show_no_restructuredtext(pages: list[Path]) -> None:
    api = [p for p in pages if p.is_relative_to(SITE / "reference" / "api")]
    assert api, "no API pages under site/reference/api"
    shown = [
        f"{page.relative_to(SITE)}: {match}"
        for page in api
        for match in [
            *_ROLE.findall(page.read_text(encoding="utf-8")),
            *re.findall(r"\S+::</p>", page.read_text(encoding="utf-8")),
        ]
    ]
    assert shown == []


def test_option_names_break_only_where_a_hyphen_allows() -> None:
    options = (SITE / "reference" / "options.html").read_text(encoding="utf-8")
    sheets = [
        SITE / "reference" / href for href in re.findall(r'<link rel="stylesheet" href="([^"]+)"', options)
    ]
    css = "".join(s.read_text(encoding="utf-8") for s in sheets if s.is_file())
    rule = re.search(r"table:not\(\[class\]\) td code\s*\{([^}]*)\}", css)
    assert rule is not None, "no rule for code in table cells in the options page's stylesheets"
    assert "word-break: normal" in rule[1] and "overflow-wrap: normal" in rule[1]
