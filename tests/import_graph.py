"""The import graph of ``src`` (telemetry, torchprobe, ppo, sanctum), read with ``ast``: the
one reader the import-graph tests share.

Every import statement counts, wherever it stands: at module level, inside a function
(it runs later, but a circle through it is still a circle of the design), and under
``if TYPE_CHECKING:`` (the type checker follows it). Each edge says which of the three it
is, so a test can ask for the imports that run (``RUN``) or for all of them. ``from a
import b`` is an edge to ``a.b`` where ``b`` is a module, else to ``a``; ``import a.b``
is an edge to ``a.b``. A package's own ``__init__`` is not counted as imported by every
module below it (Python runs it first, but that is loading, not a dependency).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Final, Literal

SRC: Final = Path(__file__).resolve().parents[1] / "src"
ROOTS: Final = ("telemetry", "torchprobe", "ppo", "sanctum")

Kind = Literal["module", "deferred", "typing"]
"""Where an import stands: at module level, inside a function, under TYPE_CHECKING."""
RUN: Final[frozenset[Kind]] = frozenset({"module", "deferred"})
"""The imports that run (the type checker's left out)."""
EVERY: Final[frozenset[Kind]] = frozenset({"module", "deferred", "typing"})


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: Final[dict[str, Path]] = {
    _module_name(p): p for root in ROOTS for p in sorted((SRC / root).rglob("*.py"))
}
"""Every module of ``src`` -> its file."""


@dataclass(frozen=True, slots=True)
class Edge:
    """One import of one module by another: ``importer`` -> ``imported``."""

    importer: str
    imported: str
    kind: Kind


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _source(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = importer if MODULES[importer].name == "__init__.py" else importer.rpartition(".")[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _known(name: str) -> str | None:
    """``name``, or the nearest module of ``src`` above it (``ppo.core.kl.k3``: ``ppo.core.kl``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(importer: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The modules of ``src`` an import statement names."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        source = _source(importer, node)
        names = [source, *(f"{source}.{alias.name}" for alias in node.names)]
        names = [n for n in names[1:] if n in MODULES] or [source]
        if source != importer and source in MODULES and len(names) < len(node.names):
            names.append(source)  # some names are attributes of the source module itself
    for name in names:
        found = _known(name)
        if found is not None and found != importer:
            yield found


def _walk(importer: str, node: ast.AST, kind: Kind) -> Iterator[Edge]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield from (Edge(importer, t, kind) for t in _targets(importer, child))
            continue
        if isinstance(child, ast.If) and _is_type_checking(child):
            for stmt in child.body:
                yield from _walk(importer, ast.Module(body=[stmt], type_ignores=[]), "typing")
            for stmt in child.orelse:
                yield from _walk(importer, ast.Module(body=[stmt], type_ignores=[]), kind)
            continue
        inner: Kind = kind
        if kind == "module" and isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
        ):
            inner = "deferred"
        yield from _walk(importer, child, inner)


@cache
def edges_of(module: str) -> tuple[Edge, ...]:
    """Every import ``module`` makes of another module of ``src``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return tuple(dict.fromkeys(_walk(module, tree, "module")))


def graph(kinds: frozenset[Kind] = EVERY, within: str = "") -> dict[str, set[str]]:
    """Module -> the modules it imports by an import of ``kinds``; only the modules whose
    name starts with ``within`` when given (a root such as ``"sanctum"``)."""
    mine = {m for m in MODULES if not within or m == within or m.startswith(within + ".")}
    return {
        m: {e.imported for e in edges_of(m) if e.kind in kinds and e.imported in mine}
        for m in sorted(mine)
    }


def components(g: dict[str, set[str]]) -> list[list[str]]:
    """Every circle of ``g``: each strongly connected component of more than one module
    (Tarjan), its modules sorted; the components in order of their first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(g.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(g):
        if node not in index:
            visit(node)
    return sorted(found)


def circle_through(g: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest circle from the component's first module back to it, as a path that
    ends where it starts (``a -> b -> a``)."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(g[node] & members):
            if nxt == start:
                back = [node]
                while back[-1] != start:
                    back.append(came_from[back[-1]])
                return [*reversed(back), start]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise ValueError(f"{component} is not a circle of the graph")


def describe(g: dict[str, set[str]]) -> list[str]:
    """Each circle of ``g``, one line each: ``a -> b -> c -> a`` and the edge kinds."""
    lines = []
    for component in components(g):
        path = circle_through(g, component)
        steps = []
        for a, b in pairwise(path):
            kinds = sorted({e.kind for e in edges_of(a) if e.imported == b})
            steps.append(f"{a} -({'/'.join(kinds)})-> {b}")
        lines.append(" ; ".join(steps) + f"  [{len(component)} modules: {', '.join(component)}]")
    return lines
