"""paimon_spark's layout, checked on the source text alone (no Spark): its modules share no private names,
no module reaches into another subpackage's private modules, and the subpackages import no circle.

A name that two modules share is public within the package (no leading underscore), in the module that owns
it. A private module (``_write/_sink.py``) is imported only from its own subpackage: the others import what
its ``__init__`` re-exports (``paimon_spark._write``). The root's private modules (``_options``, ``_types``,
``_errors``, ``_tasks``...) are the foundations every subpackage builds on. Imports are read anywhere in a
module: function bodies and ``TYPE_CHECKING`` blocks too.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from paimon_testing.layering import cycles

PACKAGE = "paimon_spark"


@dataclass(frozen=True)
class Imported:
    """One name one module imports from another module of the package (``name`` None: the module itself)."""

    importer: str
    module: str
    name: str | None
    line: int


def _package_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)  # finds the package without running it (nor pyspark)
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def _modules(root: Path) -> dict[str, str]:
    """Every module of the package: dotted name -> source text."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [PACKAGE, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path.read_text(encoding="utf-8")
    return found


def _own_package(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def imports_of(module: str, source: str, *, is_package: bool = False) -> list[Imported]:
    """What ``module`` imports from the package, anywhere in ``source``, relative imports resolved."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Imported(module, a.name, None, node.lineno) for a in node.names if _ours(a.name)]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = _own_package(module, is_package).split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, target] if target else base)
            if _ours(target):
                found += [Imported(module, target, a.name, node.lineno) for a in node.names]
    return found


def _ours(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def violations(imported: Imported, *, is_package: bool = False) -> list[str]:
    """How one import breaks the layout: a private name of another module, or a private module of another
    subpackage (a private path part ``_x`` may be imported only from inside the package holding it)."""
    where = f"{imported.importer}:{imported.line}"
    found = []
    if imported.name is not None and _private(imported.name):
        found.append(f"{where} imports the private name {imported.name} from {imported.module}")
    inside = _own_package(imported.importer, is_package).split(".")
    parts = imported.module.split(".")
    for depth in range(1, len(parts)):
        if _private(parts[depth]) and inside[:depth] != parts[:depth]:
            holder = ".".join(parts[:depth])
            found.append(
                f"{where} imports {imported.module}, a private module of {holder}: import {holder} instead"
            )
            break
    return found


def _unit(module: str) -> str:
    """The root module or subpackage that ``module`` belongs to (the root ``__init__`` is ``paimon_spark``)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import circles among units: one list per strongly connected group of two or more units."""
    return [list(group) for group in cycles(edges)]


def unit_edges(imports: list[Imported], modules: set[str]) -> dict[str, set[str]]:
    """Which units import which (``from paimon_spark import x`` reaches unit ``x`` if it is a module)."""
    edges: dict[str, set[str]] = {}
    for imported in imports:
        target = imported.module
        if target == PACKAGE and imported.name is not None and f"{PACKAGE}.{imported.name}" in modules:
            target = f"{PACKAGE}.{imported.name}"
        source, target = _unit(imported.importer), _unit(target)
        if source != target:
            edges.setdefault(source, set()).add(target)
    return edges


def _all_imports() -> tuple[list[Imported], set[str], set[str]]:
    """Every import of the package, its modules and which of them are packages."""
    root = _package_dir()
    modules = _modules(root)
    packages = {name for name in modules if root.joinpath(*name.split(".")[1:], "__init__.py").exists()}
    found = []
    for name, source in modules.items():
        found += imports_of(name, source, is_package=name in packages)
    return found, set(modules), packages


# --- the checks checked ------------------------------------------------------------------------------------


def test_the_check_sees_private_names_and_modules() -> None:
    def check(importer: str, source: str, is_package: bool = False) -> list[str]:
        return [
            v
            for i in imports_of(importer, source, is_package=is_package)
            for v in violations(i, is_package=is_package)
        ]

    assert check("paimon_spark._write._bucketed", "from paimon_spark._write._sink import _abort\n")
    assert check("paimon_spark._commands._merge", "def f():\n    from paimon_spark._write._sink import x\n")
    assert check("paimon_spark._commands._merge", "import paimon_spark._read._prune\n")
    assert check("paimon_spark._commands._merge", "from paimon_spark._write import _sink\n")
    assert check("paimon_spark._write._task", "from .._read._batch import x\n")
    # A subpackage's own private modules, its public face and the root's foundations are fine:
    assert not check("paimon_spark._write._bucketed", "from paimon_spark._write._sink import commit_tasks\n")
    assert not check("paimon_spark._write", "from paimon_spark._write._sink import a\n", is_package=True)
    assert not check("paimon_spark._commands._merge", "from paimon_spark._write import write_in_place\n")
    assert not check("paimon_spark._read._batch", "from paimon_spark._options import SourceConfig\n")
    assert not check("paimon_spark", "from paimon_spark._version import __version__\n", is_package=True)
    assert not check("paimon_spark._write._task", "from ._prepare import WriteInput\n")


def test_the_check_sees_circles() -> None:
    source = {
        "paimon_spark._procedures._udtf": "from paimon_spark._sql import x\n",
        "paimon_spark._sql._call": "from paimon_spark._procedures import compact\n",
        "paimon_spark._sql._ddl": "def f():\n    from paimon_spark import create_temp_view\n",
        "paimon_spark": "from paimon_spark._sql import sql\n",
        "paimon_spark.cli": "import paimon_spark\n",
    }
    imports = [i for name, text in source.items() for i in imports_of(name, text, is_package=name == PACKAGE)]
    assert circles(unit_edges(imports, set(source))) == [
        ["paimon_spark", "paimon_spark._procedures", "paimon_spark._sql"]
    ]


# --- the package --------------------------------------------------------------------------------------------


def test_no_module_imports_a_private_name_or_another_subpackages_private_module() -> None:
    imports, _, packages = _all_imports()
    assert imports, "no imports found: the check reads the wrong directory"
    found = [v for i in imports for v in violations(i, is_package=i.importer in packages)]
    assert found == []


def test_the_subpackages_import_no_circle() -> None:
    imports, modules, _ = _all_imports()
    assert circles(unit_edges(imports, modules)) == []
