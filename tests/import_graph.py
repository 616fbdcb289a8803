"""The service's import graph, read from the source (no module is imported): which module imports
which, and which package imports which; and the cycles in either (tests/unit/test_import_graph.py).

Every import counts, at the top of a file or inside a function (a local import runs too, later),
except those under `if TYPE_CHECKING:`, which never run. Relative imports are resolved.
`from a.b import c` is an import of the module `a.b.c` when that is a module, else of `a.b`.
Importing `a.b.c` also runs the `__init__` of `a.b` and `a`: those count as imports of the
packages the importer is not itself inside.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

ROOT = Path(__file__).parents[1]
TOP_PACKAGES = ("streams", "agents", "topics", "sinks", "benchmarks")
WHOLE_PACKAGES = ("agents", "topics", "sinks", "benchmarks")
"""These count as one package each; under `streams/`, each sub-package is one package."""

Graph = Mapping[str, frozenset[str]]


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the service by dotted name (a package by its `__init__`)."""
    found: dict[str, Path] = {}
    for top in TOP_PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _nodes(tree: ast.AST, type_checking: bool) -> Iterable[ast.AST]:
    """Every node of `tree`; without the bodies of `if TYPE_CHECKING:` (their `else:` does run)
    unless `type_checking`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if not type_checking and isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _absolute(module: str | None, level: int, importer: str, importer_is_package: bool) -> str:
    if not level:
        return module or ""
    base = importer.split(".")
    if not importer_is_package:
        base.pop()
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imported_names(path: Path, importer: str, type_checking: bool = False) -> set[str]:
    """The dotted names `path` imports when it runs (and for the type checker only, with
    `type_checking`), resolved; `from a import b` gives `a.b` and `a` (which of them is a module
    is for the caller to know)."""
    names: set[str] = set()
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8")), type_checking):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, importer, is_package(path))
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names if alias.name != "*"}
    return names


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def module_graph(root: Path = ROOT, type_checking: bool = False) -> dict[str, frozenset[str]]:
    """module → the service modules it imports (its own ancestors' `__init__` excepted); with
    `type_checking`, the imports only the type checker runs count too."""
    files = module_files(root)
    graph: dict[str, frozenset[str]] = {}
    for module, path in files.items():
        own = set(_ancestors(module))
        targets: set[str] = set()
        for name in imported_names(path, module, type_checking):
            if name not in files:
                continue
            targets.add(name)
            targets |= {a for a in _ancestors(name) if a in files and a not in own}
        targets -= own | {module}  # an ancestor's `__init__` has run before `module` does
        graph[module] = frozenset(targets)
    return graph


def package_of(module: str) -> str:
    """`streams.<sub>` for a module under `streams/<sub>/`; `streams` for the root modules
    (`streams/__init__.py`, `streams/errors.py`, `streams/tables.py`); `agents`, `topics`,
    `sinks` and `benchmarks` (the benches, not in the wheel) as wholes."""
    parts = module.split(".")
    if module == "streams.__main__":
        return module  # the CLI's entry point (`python -m streams`), which nothing imports
    if parts[0] in WHOLE_PACKAGES:
        return parts[0]
    if len(parts) >= 2 and (ROOT / parts[0] / parts[1]).is_dir():
        return ".".join(parts[:2])
    return parts[0]


def package_graph(modules: Graph) -> dict[str, frozenset[str]]:
    """package → the other packages its modules import."""
    packages: dict[str, set[str]] = defaultdict(set)
    for module, targets in modules.items():
        source = package_of(module)
        packages[source] |= {package_of(t) for t in targets} - {source}
    return {p: frozenset(t) for p, t in packages.items()}


def strongly_connected(graph: Graph) -> list[list[str]]:
    """The groups of two or more nodes that reach one another (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def shortest_cycle(graph: Graph, start: str, members: set[str]) -> tuple[str, ...]:
    """The shortest way from `start` back to itself through `members` (breadth first)."""
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph.get(node, frozenset()) & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return (start, *reversed(path[:-1]), start)
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return ()


@dataclass(frozen=True)
class Cycle:
    """A strongly connected group of the graph and one cycle through it."""

    members: tuple[str, ...]
    paths: tuple[tuple[str, ...], ...]
    """The shortest cycle through each member (each cycle once)."""

    def __str__(self) -> str:
        lines = [f"{len(self.members)} reach one another: {', '.join(self.members)}"]
        lines += [f"    {' -> '.join(path)}" for path in self.paths]
        return "\n".join(lines)


def cycles(graph: Graph) -> list[Cycle]:
    """Each group of nodes that reach one another, with the shortest cycles through it."""
    found = []
    for group in strongly_connected(graph):
        paths: dict[frozenset[str], tuple[str, ...]] = {}
        for start in group:
            path = shortest_cycle(graph, start, set(group))
            paths.setdefault(frozenset(path), path)
        found.append(Cycle(tuple(group), tuple(sorted(paths.values(), key=lambda p: (len(p), p)))))
    return found
