"""The import graph of all of ``src`` (telemetry, torchprobe, ppo, sanctum): no circle,
counting every import (module-level, deferred inside a function, and under ``if
TYPE_CHECKING:``), and the arrows between the packages pointing one way: telemetry imports
none of the others, nor torch (torchprobe, above it, measures a torch trainer), and in
ppo only the command line imports sanctum. Each package's own layers are checked in
``tests/<package>/test_import_graph.py``; the reader is ``tests/import_graph.py``.
"""

from __future__ import annotations

import ast
from typing import Any

from telemetry.files import read_toml
from tests.import_graph import (
    EVERY,
    MODULES,
    SRC,
    Edge,
    components,
    describe,
    edges_of,
    graph,
)


def test_the_reader_sees_every_kind_of_import() -> None:
    assert {"telemetry.events", "ppo.cli", "sanctum.cli", "sanctum.web.server"} <= set(MODULES)
    assert Edge("sanctum.cli", "sanctum.cli.commands", "module") in edges_of("sanctum.cli")
    deferred = Edge("ppo.cli.train", "ppo.cli.run", "deferred")
    assert deferred in edges_of("ppo.cli.train")
    typing = Edge("telemetry.integrations.trl", "telemetry.integrations.trl_callback", "typing")
    assert typing in edges_of("telemetry.integrations.trl")


def test_no_import_circle_in_src() -> None:
    circles = describe(graph(EVERY))
    assert circles == [], "import circles:\n" + "\n".join(circles)


def test_every_circle_is_listed() -> None:
    two = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c", "a"}, "f": {"a"}}
    assert components(two) == [["a", "b"], ["c", "d", "e"]]
    assert components({"a": {"b"}, "b": set()}) == []


def _imports_of(root: str) -> list[Edge]:
    return [e for m in MODULES if m.split(".")[0] == root for e in edges_of(m)]


def test_telemetry_imports_neither_ppo_nor_sanctum() -> None:
    """The contract knows no consumer: sanctum implements its protocols (halting)."""
    wrong = [e for e in _imports_of("telemetry") if e.imported.split(".")[0] != "telemetry"]
    assert wrong == []


def test_no_telemetry_module_imports_torch_or_ours_even_lazily() -> None:
    """The contract's package imports msgspec and the standard library; an integration its
    trainer only when used, and never torch: what measures a PyTorch trainer from outside
    is ``torchprobe``, a package above telemetry."""
    banned = {"torch", "numpy", "torchprobe", "ppo", "sanctum", "textual", "rich"}
    found = []
    for module, path in MODULES.items():
        if module.split(".")[0] != "telemetry":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            found += [f"{module}: {n}" for n in names if n.split(".")[0] in banned]
    assert found == []


def test_in_ppo_only_the_command_line_imports_sanctum() -> None:
    """``ppo.cli`` builds the halt gate and runs the dashboard through sanctum's public
    names; the trainers take a telemetry halter and know nothing of sanctum."""
    wrong = [
        e
        for e in _imports_of("ppo")
        if e.imported.split(".")[0] == "sanctum" and not e.importer.startswith("ppo.cli.")
    ]
    assert wrong == []
    public = {e.imported for e in _imports_of("ppo") if e.imported.split(".")[0] == "sanctum"}
    assert public == {"sanctum"}  # its public names, no module of its insides


def _linter() -> dict[str, Any]:
    """``[tool.importlinter]`` of pyproject.toml."""
    linter: dict[str, Any] = read_toml(SRC.parent / "pyproject.toml", "pyproject")["tool"][
        "importlinter"
    ]
    return linter


def _contract(name_start: str) -> dict[str, Any]:
    (found,) = [c for c in _linter()["contracts"] if c["name"].startswith(name_start)]
    return dict(found)


def _children(root: str) -> set[str]:
    """The modules and packages directly under ``root``."""
    return {".".join(m.split(".")[:2]) for m in MODULES if m.startswith(root + ".")}


def test_the_contracts_that_list_modules_list_them_all() -> None:
    """A contract that names its modules one by one (ppo outside its command line) names
    every one: a module added later is in it."""
    no_sanctum = _contract("ppo imports sanctum only from its command line")["source_modules"]
    assert set(no_sanctum) == _children("ppo") - {"ppo.cli"}


def test_no_contract_has_an_exception() -> None:
    linter = _linter()
    assert linter["exclude_type_checking_imports"] is False
    assert [c["name"] for c in linter["contracts"] if "ignore_imports" in c] == []
