"""The import graph of ``src/sanctum``, read with ``ast``: no circle, and its packages layered.

Module-level imports make the graph (an import inside a function runs later, one under
``if TYPE_CHECKING:`` never, so neither can close a circle at import time). The package
rules hold for every import that runs, deferred ones included: a deferred import of Textual
still loads Textual. Imports for the type checker only are left out of them, as
import-linter's ``exclude_type_checking_imports`` leaves them out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "sanctum"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _module_level(block)
            for handler in node.handlers:
                yield from _module_level(handler.body)


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The modules an import statement names (``from a import b`` is ``a.b`` when b is one)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        is_package = MODULES[module].name == "__init__.py"
        base = module.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        source = ".".join([*base, node.module] if node.module else base)
    else:
        source = node.module or ""
    if source != module:  # a package importing its own modules does not import itself
        yield source
    for alias in node.names:
        if f"{source}.{alias.name}" in MODULES:
            yield f"{source}.{alias.name}"


def _run_anywhere(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import in ``node`` that can run: function bodies included, type-only left out."""
    if isinstance(node, ast.If) and _is_type_checking(node):
        yield from (i for n in node.orelse for i in _run_anywhere(n))
        return
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    for child in ast.iter_child_nodes(node):
        yield from _run_anywhere(child)


def _imports(module: str, *, everywhere: bool) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    nodes = _run_anywhere(tree) if everywhere else _module_level(tree.body)
    return {target for node in nodes for target in _targets(module, node)}


def _graph() -> dict[str, set[str]]:
    return {m: _imports(m, everywhere=False) & MODULES.keys() for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), or a self-import."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
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
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_the_package() -> None:
    graph = _graph()
    assert "sanctum.cli" in graph
    assert "sanctum.cli.commands" in graph["sanctum.cli"]
    assert "sanctum.health.levels" in graph["sanctum.model.snapshot"]


def test_no_import_circle_in_sanctum() -> None:
    assert _cycles(_graph()) == []


def test_a_circle_is_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _package_of(module: str) -> str:
    """``model`` for ``sanctum.model.state`` (and for ``sanctum.model``); "" for the
    top-level modules and for ``sanctum`` itself."""
    parts = module.split(".")
    is_package = MODULES[module].name == "__init__.py"
    return parts[1] if len(parts) > 2 or (is_package and len(parts) > 1) else ""


def _in(module: str, *packages: str) -> bool:
    return any(module == f"{PACKAGE}.{p}" or module.startswith(f"{PACKAGE}.{p}.") for p in packages)


def _roots(module: str) -> set[str]:
    return {target.split(".")[0] for target in _imports(module, everywhere=True)}


# What each package may import from sanctum besides itself ("" is the top-level modules:
# formatting, metrics, exits, run_files). Read bottom-up; deferred imports count too.
ALLOWED: dict[str, set[str]] = {
    "health": {""},
    "model": {"", "health"},
    "charts": {"", "health", "model"},
    "text": {"", "health", "model", "charts"},
    "reports": {"", "health", "model", "charts", "text"},
    "importers": {"", "health", "model"},
    "live": {"", "health", "model", "text"},
    "tui": {"", "health", "model", "charts", "text", "live"},
}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_imports_only_the_layers_below_it(package: str) -> None:
    wrong = {
        f"{module} -> {target}"
        for module in MODULES
        if _in(module, package)
        for target in _imports(module, everywhere=True) & MODULES.keys()
        if target != PACKAGE
        and not _in(target, package)
        and _package_of(target) not in ALLOWED[package]
    }
    assert sorted(wrong) == []


def test_the_top_level_modules_import_no_package() -> None:
    top = {m for m in MODULES if m.count(".") == 1 and MODULES[m].name != "__init__.py"}
    top -= {f"{PACKAGE}.__main__"}
    wrong = {
        f"{module} -> {target}"
        for module in top
        for target in _imports(module, everywhere=True) & MODULES.keys()
        if _package_of(target) != ""
    }
    assert sorted(wrong) == []


def test_only_the_entry_points_import_the_cli() -> None:
    wrong = {
        module
        for module in MODULES
        if not _in(module, "cli")
        and module not in {PACKAGE, f"{PACKAGE}.__main__"}
        and any(_in(t, "cli") for t in _imports(module, everywhere=True))
    }
    assert sorted(wrong) == []


@pytest.mark.parametrize("package", ["health", "model"])
def test_model_and_health_import_neither_rich_nor_textual(package: str) -> None:
    wrong = {m for m in MODULES if _in(m, package) and _roots(m) & {"rich", "textual"}}
    assert sorted(wrong) == []


def test_only_tui_imports_textual() -> None:
    wrong = {m for m in MODULES if not _in(m, "tui") and "textual" in _roots(m)}
    assert sorted(wrong) == []


def test_the_top_level_modules_are_few() -> None:
    top = {p.name for p in (SRC / PACKAGE).glob("*.py")} - {"__init__.py", "__main__.py"}
    assert len(top) <= 6, sorted(top)
