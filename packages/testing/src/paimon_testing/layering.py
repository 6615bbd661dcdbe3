"""Import-graph checks for layering tests: the import circles of a graph of modules (or of any units).

Both paimon-core's and paimon-spark's layering tests build their graphs from the source and ask
:func:`cycles` for the circles, which a layered package has none of.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set

__all__ = ["cycles"]


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
