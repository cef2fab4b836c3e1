"""``telemetry``'s public names load with their modules on first use: each resolves to the
object its home defines, the type checker's list and the package's map agree, and a
command importing ``telemetry.text`` or ``telemetry.files`` loads no msgspec."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import telemetry
from tests.test_layering import _modules_after_import, _roots


def _type_checking_names() -> dict[str, str]:
    tree = ast.parse(Path(telemetry.__file__).read_text())
    guard = next(n for n in tree.body if isinstance(n, ast.If))
    return {
        alias.name: node.module or ""
        for node in guard.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_the_type_checkers_names_are_the_packages() -> None:
    assert _type_checking_names() == telemetry._HOMES
    assert sorted(telemetry.__all__) == sorted(telemetry._HOMES)


@pytest.mark.parametrize("name", sorted(telemetry._HOMES))
def test_each_name_is_its_homes_object(name: str) -> None:
    home = importlib.import_module(telemetry._HOMES[name])
    assert getattr(telemetry, name) is getattr(home, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        telemetry.Nope  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize("module", ["telemetry.text", "telemetry.files"])
def test_text_and_files_load_no_msgspec(module: str) -> None:
    assert "msgspec" not in _roots(_modules_after_import(module))
