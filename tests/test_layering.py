"""Layering (DESIGN.md section 3): checked in a fresh interpreter through sys.modules."""

from __future__ import annotations

import json
import sys

import pytest

from tests import processes


def _modules_after_import(module: str) -> set[str]:
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    out = processes.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def _roots(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.mark.parametrize("module", ["telemetry", "sanctum", "sanctum.cli"])
def test_no_torch_and_no_ppo(module: str) -> None:
    roots = _roots(_modules_after_import(module))
    assert "torch" not in roots
    assert "ppo" not in roots


def test_telemetry_loads_neither_textual_nor_sanctum() -> None:
    roots = _roots(_modules_after_import("telemetry"))
    assert {"textual", "sanctum", "rich"}.isdisjoint(roots)


@pytest.mark.parametrize("module", ["telemetry.integrations.sb3", "telemetry.integrations.trl"])
def test_trainer_integrations_import_their_trainer_only_when_used(module: str) -> None:
    roots = _roots(_modules_after_import(module))
    heavy = {"stable_baselines3", "trl", "transformers", "torch", "numpy", "gymnasium"}
    assert heavy.isdisjoint(roots)
    assert "sanctum" not in roots
    assert "msgspec" in roots  # the import really reached telemetry


@pytest.mark.parametrize("module", ["ppo.update.agent", "ppo.run.trainer", "ppo.cli.run"])
def test_ppo_loads_no_textual_and_no_sanctum(module: str) -> None:
    roots = _roots(_modules_after_import(module))
    assert "torch" in roots  # the import really reached the training code
    assert "textual" not in roots
    assert "sanctum" not in roots


@pytest.mark.parametrize(
    "module", ["sanctum.model.aggregator", "sanctum.model.board", "sanctum.health.judge"]
)
def test_sanctum_model_and_health_load_neither_rich_nor_textual(module: str) -> None:
    roots = _roots(_modules_after_import(module))
    assert {"rich", "textual", "torch", "ppo"}.isdisjoint(roots)


@pytest.mark.parametrize(
    "module",
    [
        "sanctum.charts.zoom",
        "sanctum.charts.overlay",
        "sanctum.text.panels",
        "sanctum.text.run_table",
        "sanctum.live.snapshot_feed",
        "sanctum.live.board_feed",
        "sanctum.live.halt",
        "sanctum.web.policy",
        "sanctum.reports.once",
        "sanctum.importers.tensorboard.command",
    ],
)
def test_only_sanctum_tui_loads_textual(module: str) -> None:
    assert "textual" not in _roots(_modules_after_import(module))


@pytest.mark.parametrize(
    "module", ["sanctum.text.panels", "sanctum.text.chart_words", "sanctum.text.run_table"]
)
def test_sanctum_text_loads_no_renderer(module: str) -> None:
    assert {"rich", "textual"}.isdisjoint(_roots(_modules_after_import(module)))
