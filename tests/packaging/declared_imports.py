"""Which third-party modules a distribution's code imports, and whether its metadata declares them.

An import that runs when its module is imported must come from a required dependency. An import inside a
function (or guarded by ``except ImportError``) may come from an extra; when the code names the extra in its
install hint (``import_optional(module, purpose, extra)`` in paimon-core, ``require(backend, extra,
*modules)`` in paimon-storage), that very extra must declare it. Imports under ``if TYPE_CHECKING:`` are for
the type checker only and are not counted.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata as md
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


@dataclass(frozen=True)
class Import:
    module: str
    where: str
    eager: bool  # runs when the importing module is imported
    extra: str | None = None  # the extra the code's install hint names


@dataclass
class Declared:
    """A distribution's requirements by canonical name: required ones and each extra's."""

    base: set[str] = field(default_factory=set)
    extras: dict[str, set[str]] = field(default_factory=dict)


class _Finder(ast.NodeVisitor):
    def __init__(self, where: str) -> None:
        self.where = where
        self.found: list[Import] = []
        self._lazy = 0

    def _add(self, module: str, extra: str | None = None, *, lazy: bool = False) -> None:
        eager = self._lazy == 0 and extra is None and not lazy
        self.found.append(Import(module, self.where, eager, extra))

    def _lazily(self, nodes: Sequence[ast.AST]) -> None:
        self._lazy += 1
        for node in nodes:
            self.visit(node)
        self._lazy -= 1

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._lazily(node.body)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._lazily(node.body)

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        guarded = any(
            handler.type is not None and "ImportError" in ast.unparse(handler.type)
            for handler in node.handlers
        )
        if guarded:
            self._lazily(node.body)
            for child in (*node.handlers, *node.orelse, *node.finalbody):
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._add(node.module)

    def visit_Call(self, node: ast.Call) -> None:
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        args = [
            a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in node.args
        ]
        if name == "import_optional" and len(args) == 3 and args[0] and args[2]:
            self._add(args[0], extra=args[2])
        elif name == "require" and len(args) >= 3 and args[1]:
            for module in args[2:]:
                if module:
                    self._add(module, extra=args[1])
        elif name == "import_module" and args and args[0]:
            self._add(args[0], lazy=True)
        self.generic_visit(node)


def imports_in(source: str, where: str) -> list[Import]:
    """Every absolute import of ``source``, with how it runs."""
    finder = _Finder(where)
    finder.visit(ast.parse(source))
    return finder.found


def sources(dist: str) -> Iterator[tuple[str, str]]:
    """(path, text) of every Python file the installed distribution holds."""
    for path in md.files(dist) or []:
        if path.suffix == ".py":
            yield str(path), path.read_text(encoding="utf-8")


def own_modules(dist: str) -> set[str]:
    """The top-level import names the distribution installs."""
    return {str(p).split("/")[0] for p in md.files(dist) or [] if p.suffix == ".py"}


def declared(dist: str) -> Declared:
    """Required and extra requirements, with an extra of the distribution itself (``[all]``) expanded."""
    result = Declared()
    name = canonicalize_name(dist)
    nested: dict[str, set[str]] = {}
    extras = md.metadata(dist).get_all("Provides-Extra") or []
    for text in md.requires(dist) or []:
        requirement = Requirement(text)
        required = canonicalize_name(requirement.name)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            result.base.add(required)
            continue
        for extra in extras:
            if requirement.marker.evaluate({"extra": extra}):
                if required == name:
                    nested.setdefault(extra, set()).update(requirement.extras)
                else:
                    result.extras.setdefault(extra, set()).add(required)
    for extra, others in nested.items():
        for other in others:
            result.extras.setdefault(extra, set()).update(result.extras.get(other, set()))
    return result


@functools.cache
def _packages() -> Mapping[str, list[str]]:
    return md.packages_distributions()


def providers(module: str) -> set[str]:
    """The installed distributions that provide ``module`` (for a namespace such as ``google``, those
    holding the submodule)."""
    candidates = set(_packages().get(module.split(".")[0], []))
    if len(candidates) > 1:
        prefix = module.replace(".", "/")
        holding = {
            d
            for d in candidates
            for f in md.files(d) or []
            if str(f).startswith(prefix + "/") or str(f) == prefix + ".py"
        }
        candidates = holding or candidates
    return {canonicalize_name(d) for d in candidates}


def problems(dist: str) -> list[str]:
    """What the distribution imports without declaring it (empty when everything is declared)."""
    own = own_modules(dist)
    wanted = declared(dist)
    anywhere = wanted.base.union(*wanted.extras.values())
    found: list[str] = []
    for where, text in sources(dist):
        for imp in imports_in(text, where):
            top = imp.module.split(".")[0]
            if top in own or top in sys.stdlib_module_names:
                continue
            by = providers(imp.module)
            if not by:
                found.append(f"{where}: imports {imp.module}, which no installed distribution provides")
            elif imp.eager and not by & wanted.base:
                found.append(
                    f"{where}: imports {imp.module} at import time; {sorted(by)} is not a requirement"
                )
            elif imp.extra is not None and not by & (wanted.base | wanted.extras.get(imp.extra, set())):
                found.append(
                    f"{where}: {imp.module} is hinted as extra [{imp.extra}], which lacks {sorted(by)}"
                )
            elif not by & anywhere:
                found.append(
                    f"{where}: imports {imp.module}; {sorted(by)} is neither required nor in an extra"
                )
    return found
