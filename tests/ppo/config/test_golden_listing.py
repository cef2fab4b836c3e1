"""The bytes a config shows the world, held fixed: ``ppo config`` for each algorithm (text
and ``--json``), ``to_dict()`` of each config, and ``run_started.config`` of a short run of
each trainer. A refactor of how the settings are declared must leave every byte as it was.

The expected bytes live in ``golden/``; ``PPO_WRITE_GOLDEN=1`` rewrites them (only ever on
purpose, with the change said in the commit)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ppo.cli import main
from ppo.config import PPOConfig
from ppo.run.trainer import Trainer
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.trainer import TokenTrainer
from telemetry import RunStarted, read_events
from tests.cli_runner import run_main

GOLDEN = Path(__file__).parent / "golden"
WRITE = os.environ.get("PPO_WRITE_GOLDEN") == "1"

LISTINGS = {
    "ppo_config.txt": [],
    "ppo_config.json": ["--json"],
    "token_ppo_config.txt": ["--algorithm", "token_ppo"],
    "token_ppo_config.json": ["--algorithm", "token_ppo", "--json"],
    "grpo_config.txt": ["--algorithm", "grpo"],
    "grpo_config.json": ["--algorithm", "grpo", "--json"],
}


def _same_as_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if WRITE:
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", list(LISTINGS))
def test_ppo_config_lists_the_same_bytes(name: str, tmp_path: Path) -> None:
    ran = run_main(main, "config", *LISTINGS[name], cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    _same_as_golden(name, ran.stdout)


def test_to_dict_holds_the_same_keys_in_the_same_order() -> None:
    dicts = {"ppo": PPOConfig().to_dict(), "token_ppo": TokenPPOConfig().to_dict()}
    _same_as_golden("to_dict.json", json.dumps(dicts, indent=1) + "\n")


def _run_started_config(events: Path) -> str:
    first = read_events(events).events[0]
    assert isinstance(first, RunStarted)
    return json.dumps(first.payload.config, indent=1) + "\n"


def test_the_classic_run_started_config_is_the_same(tmp_path: Path) -> None:
    cfg = PPOConfig(num_envs=2, num_steps=16, total_steps=32, hidden_sizes=(8,), seed=3)
    result = Trainer(cfg, run_dir=tmp_path, run_id="golden").run()
    _same_as_golden("run_started_ppo.json", _run_started_config(result.events_path))


def test_the_token_run_started_config_is_the_same(tmp_path: Path) -> None:
    cfg = TokenPPOConfig(
        updates=1, rollouts_per_update=4, warm_start_steps=0, max_new_tokens=3, device="cpu"
    )
    result = TokenTrainer(cfg, tmp_path, "golden").run()
    _same_as_golden("run_started_token_ppo.json", _run_started_config(result.events_path))
