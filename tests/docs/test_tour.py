"""The README's tour keeps what ``alter_table`` returns (issue 33): a ``Table`` is opened at one schema, so
code after a schema change that goes on with the old object writes and reads the old columns."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_PYTHON = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def test_every_alter_table_in_the_readme_and_docs_keeps_the_table() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    dropped = [
        f"{page.relative_to(ROOT)}: {line.strip()}"
        for page in pages
        for block in _PYTHON.findall(page.read_text(encoding="utf-8"))
        for line in block.splitlines()
        if re.match(r"\s*\w+\.alter_table\(", line)  # a call whose result nothing keeps
    ]
    assert dropped == []
