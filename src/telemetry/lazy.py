"""A package's public names loaded with the module that defines them, on first use
(PEP 562), so that importing one light module of a package does not load the rest of it:
``telemetry`` and ``sanctum`` export their names this way.

The names are listed once, as the imports of the package's ``if TYPE_CHECKING:`` block
(``from home import Name as Name``, what the type checker reads); which module each name
comes from is read from that block when a name is first asked for.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def homes_of(init_file: str | Path) -> dict[str, str]:
    """Each name the ``if TYPE_CHECKING:`` block of the module at ``init_file`` imports ->
    the module it imports it from."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    guard = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
        if node.test.id == "TYPE_CHECKING"
    )
    return {
        alias.asname or alias.name: node.module or ""
        for node in guard.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def exports(package: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each public name (see the module's docstring)
    is imported from its module when first asked for, then kept in the package's
    namespace; ``_HOMES`` (name -> module) and ``__all__`` are derived from the block."""
    module = sys.modules[package]
    namespace = vars(module)

    def homes() -> dict[str, str]:
        if "_HOMES" not in namespace:
            namespace["_HOMES"] = homes_of(module.__file__ or "")
        found: dict[str, str] = namespace["_HOMES"]
        return found

    def __getattr__(name: str) -> Any:
        if name == "_HOMES":
            return homes()
        if name == "__all__":
            value: Any = sorted(homes())
        else:
            home = homes().get(name)
            if home is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return __getattr__
