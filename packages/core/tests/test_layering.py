"""table/ imports nothing above it (ruff's TID251 checks the same in lint, from table/ruff.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

import paimon_core.table

ABOVE = ("paimon_core.compact", "paimon_core.maintenance", "paimon_core.catalog", "paimon_core.cli",
         "paimon_core._standard_hooks")  # fmt: skip


def upward_imports(source: str) -> list[str]:
    """Modules above table/ that ``source`` imports, anywhere (function bodies and TYPE_CHECKING too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        found += [n for n in names if n.startswith(ABOVE)]
    return found


def test_the_check_sees_upward_imports() -> None:
    assert upward_imports("def f():\n    from paimon_core.compact import CompactJob\n")
    assert upward_imports("from paimon_core import maintenance\nimport paimon_core.catalog\n")


def test_table_imports_nothing_above_it() -> None:
    package = Path(paimon_core.table.__file__).parent
    offenders = {p.name: upward_imports(p.read_text()) for p in package.glob("*.py")}
    assert {name: found for name, found in offenders.items() if found} == {}
