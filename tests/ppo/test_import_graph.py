"""The import graph of ``src/ppo``, read with ``ast``: no circle between modules, and each
package imports only the layers below it (docs/design.md, section 3).

Every import a module runs as it loads counts, those under ``if TYPE_CHECKING:`` included
(a circle that only the type checker follows is still a circle). An import inside a
function runs later; it may close a circle only where :data:`LAZY_CYCLE_BREAKS` says why.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "ppo"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("ppo.__main__",),
    ("ppo.cli",),
    ("ppo.tokens",),
    ("ppo.run",),
    ("ppo.update",),
    ("ppo.rollout",),
    ("ppo.model",),
    ("ppo.config",),
    ("ppo.core",),
    ("ppo.distributed",),
    ("ppo.exits", "ppo"),
)
"""Highest first: a module may import its own package and the layers below its own."""

LAZY_CYCLE_BREAKS: dict[tuple[str, str], str] = {}
"""``(importer, imported)`` -> why a function-level import closes a circle (none today)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted((SRC / ROOT).rglob("*.py"))}


def _resolve(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = importer if MODULES[importer].name == "__init__.py" else importer.rpartition(".")[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _targets(importer: str, node: ast.stmt) -> Iterator[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        module = _resolve(importer, node)
        names = [
            f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names
        ]
    else:
        return
    for name in names:
        while name and name not in MODULES:  # ``import ppo.core.kl`` or an attribute
            name = name.rpartition(".")[0]
        if name.split(".")[0] == ROOT:
            yield name


def _imports(importer: str) -> tuple[set[str], set[str]]:
    """(imports run as the module loads, imports inside functions)."""
    tree = ast.parse(MODULES[importer].read_text(encoding="utf-8"))
    eager: set[str] = set()
    lazy: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                (lazy if in_function else eager).update(_targets(importer, child))
            func = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, in_function or func)

    visit(tree, False)
    return eager - {importer}, lazy - {importer}


IMPORTS = {name: _imports(name) for name in MODULES}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` as a path that ends where it starts, or None."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def walk(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done and (found := walk(nxt)):
                return found
        on_path.discard(path.pop())
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (found := walk(start)):
            return found
    return None


def test_the_walk_sees_the_packages() -> None:
    assert {"ppo.config.ppo_config", "ppo.core.kl", "ppo.run.trainer", "ppo.tokens.update"} <= set(
        MODULES
    )
    assert "ppo.core.kl" in IMPORTS["ppo.config.ppo_config"][0]


def test_no_circle_among_the_imports_run_at_load() -> None:
    cycle = _cycle({name: eager for name, (eager, _) in IMPORTS.items()})
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_lazy_imports_close_no_undocumented_circle() -> None:
    graph = {
        name: eager | {t for t in lazy if (name, t) not in LAZY_CYCLE_BREAKS}
        for name, (eager, lazy) in IMPORTS.items()
    }
    cycle = _cycle(graph)
    assert cycle is None, "import circle through a function-level import: " + " -> ".join(
        cycle or []
    )


def test_the_circle_finder_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _layer(module: str) -> int:
    for index, layer in enumerate(LAYERS):
        if any(module == top or module.startswith(top + ".") for top in layer if top != ROOT):
            return index
    assert module == ROOT, f"{module} is in no layer of LAYERS"
    return len(LAYERS) - 1


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


@pytest.mark.parametrize("importer", sorted(MODULES))
def test_each_package_imports_only_the_layers_below_it(importer: str) -> None:
    eager, lazy = IMPORTS[importer]
    upward = sorted(
        target
        for target in eager | lazy
        if _package(target) != _package(importer) and _layer(target) <= _layer(importer)
    )
    assert upward == [], f"{importer} imports from its own layer or above: {upward}"
