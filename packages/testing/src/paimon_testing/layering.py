"""Import checks for layering: the import circles of a graph of modules, and imports of private modules.

Both paimon-core's and paimon-spark's layering tests build their graphs from the source and ask
:func:`cycles` for the circles, which a layered package has none of. :func:`private_import_offenders` is the
repository's ban on reaching into another tree's private modules or names: CI's ``lint`` session and the
pre-commit hook run this file as a script over the four packages' ``src`` directories, and paimon-core's
layering test runs it too. Standard library only, so it runs before anything is installed.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Mapping, Sequence, Set
from pathlib import Path

__all__ = ["cycles", "private_import_offenders", "private_reaches"]


def cycles(graph: Mapping[str, Set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one node, each sorted (Tarjan's algorithm, iterative,
    so that deep graphs cannot exhaust the stack). Edges to nodes missing from ``graph`` are ignored."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def successors(node: str) -> Iterator[str]:
        return iter(sorted(n for n in graph[node] if n in graph))

    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, successors(start))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            for successor in pending:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, successors(successor)))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(tuple(sorted(component)))
    return found


def _private_owners(dotted: str) -> list[str]:
    """The package or module owning each private part of ``dotted`` (``a._b._c`` -> ``a``, ``a._b``)."""
    parts = dotted.split(".")
    return [
        ".".join(parts[:i])
        for i, part in enumerate(parts)
        if part.startswith("_") and not part.startswith("__")
    ]


def private_reaches(source: str, package: str, plain_modules: Set[str]) -> list[str]:
    """Private modules or names that code in ``package`` imports from outside its own tree.

    A package may use the private modules of its own subpackages (``table`` reaches into
    ``table.mergetree._reader``), never those of a sibling or of another distribution, nor another module's
    underscore names. ``plain_modules``: the dotted names of the modules (not packages) of the sources.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            for owner in _private_owners(target):
                if owner in plain_modules:
                    found.append(target)  # another module's underscore name
                elif owner != package and not (
                    package.startswith(owner + ".") or owner.startswith(package + ".")
                ):
                    found.append(target)  # a private module of a sibling or of another distribution
    return sorted(set(found))


def private_import_offenders(sources: Sequence[Path]) -> dict[str, list[str]]:
    """Each module under the ``src`` directories ``sources`` that imports another tree's private modules or
    names, with what it imports."""
    plain_modules = frozenset(
        ".".join(path.relative_to(src).with_suffix("").parts)
        for src in sources
        for path in src.rglob("*.py")
        if path.name != "__init__.py"
    )
    offenders: dict[str, list[str]] = {}
    for src in sources:
        for path in sorted(src.rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            package = ".".join(parts[:-1])  # a module's package; a package's __init__ is in the one it names
            found = private_reaches(path.read_text(encoding="utf-8"), package, plain_modules)
            if found:
                offenders[".".join(parts)] = found
    return offenders


def main(argv: Sequence[str]) -> int:
    """``python layering.py SRC...``: print each private reach, exit 1 if there is one."""
    offenders = private_import_offenders([Path(a) for a in argv])
    for module, targets in offenders.items():
        print(f"{module} imports another tree's private {', '.join(targets)}", file=sys.stderr)
    return 1 if offenders else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
