"""The layers of ``src/sanctum``, read with ``ast`` (``tests/import_graph.py``): each package
imports only those below it, the top-level modules none, Textual only ``tui``, Rich neither
``model`` nor ``health``. Every import counts, deferred and type-only ones included, as
import-linter counts them (a deferred import of Textual still loads Textual). That no
import closes a circle is checked for all of ``src`` in ``tests/test_import_graph.py``.
"""

from __future__ import annotations

import pytest

from tests.import_graph import EVERY, edges_of
from tests.import_graph import MODULES as SRC_MODULES

PACKAGE = "sanctum"
MODULES = {m: p for m, p in SRC_MODULES.items() if m == PACKAGE or m.startswith(PACKAGE + ".")}
SRC = SRC_MODULES[PACKAGE].parents[1]


def _imports(module: str) -> set[str]:
    """Every module of ``src`` that ``module`` imports."""
    return {e.imported for e in edges_of(module) if e.kind in EVERY}


def _external(module: str) -> set[str]:
    """The top-level names of everything ``module`` imports, ours and others'."""
    import ast

    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def _package_of(module: str) -> str:
    """``model`` for ``sanctum.model.state`` (and for ``sanctum.model``); "" for the
    top-level modules and for ``sanctum`` itself."""
    parts = module.split(".")
    is_package = MODULES[module].name == "__init__.py"
    return parts[1] if len(parts) > 2 or (is_package and len(parts) > 1) else ""


def _in(module: str, *packages: str) -> bool:
    return any(module == f"{PACKAGE}.{p}" or module.startswith(f"{PACKAGE}.{p}.") for p in packages)


def _roots(module: str) -> set[str]:
    return _external(module)


# What each package may import from sanctum besides itself ("" is the top-level modules:
# formatting, metrics, exits, run_files). Read bottom-up; every import counts.
ALLOWED: dict[str, set[str]] = {
    "health": {""},
    "model": {"", "health"},
    "charts": {"", "health", "model"},
    "text": {"", "health", "model", "charts"},
    "reports": {"", "health", "model", "charts", "text"},
    "importers": {"", "health", "model"},
    "live": {"", "health", "model", "text"},
    "tui": {"", "health", "model", "charts", "text", "live"},
    "web": {""},
}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_imports_only_the_layers_below_it(package: str) -> None:
    wrong = {
        f"{module} -> {target}"
        for module in MODULES
        if _in(module, package)
        for target in _imports(module) & MODULES.keys()
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
        for target in _imports(module) & MODULES.keys()
        if _package_of(target) != ""
    }
    assert sorted(wrong) == []


def test_only_the_entry_points_import_the_cli() -> None:
    wrong = {
        module
        for module in MODULES
        if not _in(module, "cli")
        and module not in {PACKAGE, f"{PACKAGE}.__main__"}
        and any(_in(t, "cli") for t in _imports(module))
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
