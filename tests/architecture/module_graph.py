"""The product's module graph read from its source with `ast`, and the size of its modules.

Rules:
- the product is `domain`, `application`, `adapters`, `entrypoints` and the SDK's
  `runnel_client` (under `sdk/python`); tests, benchmarks and examples are not;
- every import statement counts, wherever it stands: at the top, inside a function, under
  `if TYPE_CHECKING:`; a circle that only type checkers or one code path see is a circle;
- `from package import name` is an edge to the module `package.name` when there is one,
  else to `package`; `import a.b` is an edge to `a.b`;
- importing `a.b.c` runs the `__init__` of `a` and `a.b` first: an edge to each of those
  packages that does not hold the importing module (one that does ran before it);
- a module's size is its number of lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRODUCT_ROOTS = {"domain": "", "application": "", "adapters": "", "entrypoints": "",
                 "runnel_client": "sdk/python"}
"""Each top-level product package, and the folder (relative to the repository) it sits in."""


def product_modules(repo: Path = REPO,
                    roots: Mapping[str, str] = PRODUCT_ROOTS) -> dict[str, Path]:
    """Every module of the `roots` packages by its dotted name (a package by its own name)."""
    modules: dict[str, Path] = {}
    for package, folder in roots.items():
        base = repo / folder
        for path in sorted((base / package).rglob("*.py")):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other product modules."""
    graph = {}
    for name, path in modules.items():
        targets = set()
        for target in _imports(name, path, modules):
            targets.add(target)
            targets.update(package for package in _packages_above(target)
                           if not name.startswith(package + "."))
        graph[name] = targets - {name}
    return graph


def _packages_above(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def _imports(name: str, path: Path, modules: Mapping[str, Path]) -> Iterable[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(alias.name, modules)
                if target is not None:
                    yield target
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                target = _known(f"{base}.{alias.name}", modules) if alias.name != "*" else None
                target = target or _known(base, modules)
                if target is not None:
                    yield target


def _known(dotted: str, modules: Mapping[str, Path]) -> str | None:
    """The longest prefix of `dotted` that is a product module."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One shortest circle through each group of modules that import each other, as
    `[a, b, …, a]`; empty when the graph has none."""
    found = []
    for group in _strongly_connected(graph):
        if len(group) > 1:
            found.append(_shortest_circle(graph, min(group), group))
    return sorted(found)


def describe(graph: Mapping[str, set[str]]) -> str:
    """Each group of modules that import each other: one circle, and all its members."""
    lines = []
    for group in sorted(sorted(group) for group in _strongly_connected(graph) if len(group) > 1):
        lines.append(" -> ".join(_shortest_circle(graph, group[0], set(group))))
        lines.append(f"  (all of: {', '.join(group)})")
    return "\n".join(lines)


def _strongly_connected(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (the graph is deep enough for Python's stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


def _shortest_circle(graph: Mapping[str, set[str]], start: str, group: set[str]) -> list[str]:
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph[node] & group):
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if successor not in came_from:
                    came_from[successor] = node
                    following.append(successor)
        frontier = following
    raise AssertionError(f"{start} is in a group but on no circle")


def oversized(modules: Mapping[str, Path], limit: int, allowed: Iterable[str],
              repo: Path = REPO) -> dict[str, int]:
    """Modules over `limit` lines, by path relative to `repo`, except the `allowed` paths."""
    exempt = set(allowed)
    sizes = {path.relative_to(repo).as_posix(): len(path.read_text().splitlines())
             for path in modules.values()}
    return {path: lines for path, lines in sorted(sizes.items())
            if lines > limit and path not in exempt}
