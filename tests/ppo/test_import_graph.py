"""The layers of ``src/ppo``, read with ``ast`` (``tests/import_graph.py``): each package
imports only the layers below it (docs/design.md, section 3). Every import counts, deferred
and type-only ones included. That no import closes a circle is checked for all of ``src``
in ``tests/test_import_graph.py``.
"""

from __future__ import annotations

import pytest

from tests.import_graph import EVERY, MODULES, edges_of

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

PPO_MODULES = sorted(m for m in MODULES if m == ROOT or m.startswith(ROOT + "."))


def _imports(importer: str) -> set[str]:
    """The modules of ppo that ``importer`` imports."""
    return {
        e.imported
        for e in edges_of(importer)
        if e.kind in EVERY and e.imported.split(".")[0] == ROOT
    }


def test_the_walk_sees_the_packages() -> None:
    assert {"ppo.config.ppo_config", "ppo.core.kl", "ppo.run.trainer", "ppo.cli.tokens"} <= set(
        PPO_MODULES
    )
    assert "ppo.core.kl" in _imports("ppo.config.ppo_config")


def _layer(module: str) -> int:
    for index, layer in enumerate(LAYERS):
        if any(module == top or module.startswith(top + ".") for top in layer if top != ROOT):
            return index
    assert module == ROOT, f"{module} is in no layer of LAYERS"
    return len(LAYERS) - 1


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


@pytest.mark.parametrize("importer", PPO_MODULES)
def test_each_package_imports_only_the_layers_below_it(importer: str) -> None:
    upward = sorted(
        target
        for target in _imports(importer)
        if _package(target) != _package(importer) and _layer(target) <= _layer(importer)
    )
    assert upward == [], f"{importer} imports from its own layer or above: {upward}"
