"""table/ imports nothing above it (ruff's TID251 checks the same in lint, from table/ruff.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import paimon_core.table
from paimon_testing.layering import cycles, main, private_import_offenders, private_reaches

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


# --- the import graph of paimon_core -------------------------------------------------------------------

# Modules of table/ that may import the facade (paimon_core.table._table): the package's public face, and
# nothing else. Every operation takes a TableStore (table/_store.py) instead.
FACADE_IMPORTERS = frozenset({"paimon_core.table", "paimon_core.table._table"})

# Import cycles known and not yet broken, each a sorted tuple of module names with the reason. Empty.
ALLOWED_CYCLES: dict[tuple[str, ...], str] = {}


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module under ``root`` (a package directory) by dotted name, with whether it is a package."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same tree it imports anywhere (function bodies and TYPE_CHECKING too).

    ``from package import name`` is an import of ``package.name`` when that is a module, else of the
    package (its ``__init__`` runs).
    """
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                target = node.module or ""
                if node.level:  # relative: resolved against this module's package
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    if full in modules:
                        imported.add(full)
                    elif target in modules:
                        imported.add(target)
        imported.discard(name)
        graph[name] = imported
    return graph


def _package_graph() -> dict[str, set[str]]:
    return import_graph(Path(paimon_core.table.__file__).parent.parent)


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import X\n"
    )
    (package / "b.py").write_text("def f():\n    from pkg.sub import c\n")
    (package / "sub" / "__init__.py").write_text("from . import c\n")
    (package / "sub" / "c.py").write_text("from ..a import Y\nimport pkg.b\n")
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.sub.c"}
    assert graph["pkg.sub"] == {"pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.a", "pkg.b"}
    assert cycles(graph) == [("pkg.a", "pkg.b", "pkg.sub.c")]


def test_table_has_no_import_cycle() -> None:
    graph = _package_graph()
    table = {name: {d for d in deps if d.startswith("paimon_core.table")} for name, deps in graph.items()
             if name == "paimon_core.table" or name.startswith("paimon_core.table.")}  # fmt: skip
    found = [c for c in cycles(table) if c not in ALLOWED_CYCLES]
    assert found == []


def test_paimon_core_has_no_import_cycle() -> None:
    found = [c for c in cycles(_package_graph()) if c not in ALLOWED_CYCLES]
    assert found == []


def test_only_the_facade_imports_the_facade() -> None:
    graph = _package_graph()
    importers = {name for name, deps in graph.items() if "paimon_core.table._table" in deps}
    table_importers = {n for n in importers if n == "paimon_core.table" or n.startswith("paimon_core.table.")}
    assert table_importers <= FACADE_IMPORTERS
    # Above table/, the facade is reached through the package (paimon_core.table), never its module.
    assert importers - FACADE_IMPORTERS == set()


# --- private modules and names across the four packages ------------------------------------------------

SOURCES = Path(__file__).resolve().parents[2]  # packages/
PACKAGE_SOURCES = [SOURCES / name / "src" for name in ("core", "storage", "spark", "testing")]
PLAIN_MODULES = frozenset({"paimon_testing.stateful", "paimon_spark._source"})


def test_the_private_check_sees_sibling_and_foreign_reaches() -> None:
    def reaches(source: str, package: str) -> list[str]:
        return private_reaches(source, package, PLAIN_MODULES)

    assert reaches("from paimon_core.manifest._cache import manifest_cache\n", "paimon_core.table")
    assert reaches("import paimon_core.compact._job\n", "paimon_spark")
    assert reaches("from paimon_testing.stateful import _Actor\n", "paimon_testing")
    assert reaches("from paimon_spark._source import _abort\n", "paimon_spark")
    assert not reaches("from paimon_core.table.mergetree._reader import R\n", "paimon_core.table")
    assert not reaches("from paimon_core.table._store import TableStore\n", "paimon_core.table")


def test_no_module_reaches_into_another_tree_s_private_modules() -> None:
    assert private_import_offenders(PACKAGE_SOURCES) == {}


def test_the_lint_check_fails_on_a_reach_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    for module, text in {
        "owner/__init__.py": "",
        "owner/_hidden.py": "x = 1\n",
        "user/__init__.py": "",
        "user/clean.py": "import owner\n",
    }.items():
        (src / module).parent.mkdir(parents=True, exist_ok=True)
        (src / module).write_text(text)
    assert main([str(src)]) == 0
    (src / "user/reach.py").write_text("from owner._hidden import x\n")
    assert main([str(src)]) == 1
    assert "user.reach imports another tree's private owner._hidden" in capsys.readouterr().err
