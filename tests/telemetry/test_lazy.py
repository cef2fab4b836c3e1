"""``telemetry`` and ``sanctum`` export their public names lazily (:mod:`telemetry.lazy`):
each name resolves to the object its home defines, the type checker's list and the
package's map agree, an unknown name is an AttributeError, and a command importing
``telemetry.text`` or ``telemetry.files`` loads no msgspec."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

import sanctum
import telemetry
from tests.test_layering import _modules_after_import, _roots

PACKAGES = [telemetry, sanctum]
NAMES = [(p, name) for p in PACKAGES for name in sorted(p._HOMES)]


def _type_checking_names(package: ModuleType) -> dict[str, str]:
    tree = ast.parse(Path(package.__file__ or "").read_text())
    guard = next(n for n in tree.body if isinstance(n, ast.If))
    return {
        alias.name: node.module or ""
        for node in guard.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_the_type_checkers_names_are_the_packages(package: ModuleType) -> None:
    assert _type_checking_names(package) == package._HOMES
    assert package.__all__ == sorted(package._HOMES)


@pytest.mark.parametrize(("package", "name"), NAMES, ids=[f"{p.__name__}.{n}" for p, n in NAMES])
def test_each_name_is_its_homes_object(package: ModuleType, name: str) -> None:
    home = importlib.import_module(package._HOMES[name])
    assert getattr(package, name) is getattr(home, name)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_an_unknown_name_is_an_attribute_error(package: ModuleType) -> None:
    with pytest.raises(AttributeError, match=f"module '{package.__name__}' has no attribute"):
        package.Nope  # noqa: B018


@pytest.mark.parametrize("module", ["telemetry.text", "telemetry.files"])
def test_text_and_files_load_no_msgspec(module: str) -> None:
    assert "msgspec" not in _roots(_modules_after_import(module))
