"""``ppo`` answers without torch (nor Gymnasium) where it needs none: help, ``ppo config``
in every form, argument and config errors, ``--help-config`` and the hints for a misspelt
name. Training, and reading a checkpoint, load them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.startup import heavy_loaded

HEAVY = ("torch", "gymnasium", "numpy")

NO_TORCH = [
    ["--help"],
    ["train", "--help"],
    ["config", "--help"],
    ["config"],
    ["config", "max_kl", "early_stop_scope"],
    ["config", "--json"],
    ["config", "--algorithm", "token_ppo"],
    ["config", "--algorithm", "grpo", "--json"],
    ["config", "target_kl"],  # another library's name: what to write instead
    ["config", "max_kll"],  # a typo: the nearest field
    ["train", "--help-config"],
    ["trian"],  # argparse's usage error
    ["train", "--totl-steps", "1000"],
    ["train", "--halt-on", "never"],
    ["train", "--set", "max_kll=0.1"],
    ["train", "--set", "max_kl=-1"],
    ["train", "--set", "target_kl=0.02"],
    ["train", "--total-steps", "0"],
    ["train", "--config", "missing.toml"],
    ["train", "--config", "bad.toml"],
    ["train", "--config", "token.toml", "--set", "rollouts_per_update=0"],
    ["train", "--thresholds", "rules.toml"],
]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "bad.toml").write_text("max_kl = [\n")
    (tmp_path / "token.toml").write_text('algorithm = "token_ppo"\n')
    return tmp_path


def test_help_config_and_refused_settings_load_no_torch(work: Path) -> None:
    loaded = heavy_loaded("ppo.cli", NO_TORCH, HEAVY, work)
    assert loaded == {" ".join(argv): [] for argv in NO_TORCH}


def test_the_probe_sees_torch_when_a_command_needs_it(work: Path) -> None:
    """The check above can fail: a run that reaches the environment loads them."""
    runs = [["train", "--headless", "--env", "NoSuchEnv-v0", "--run-dir", "runs"]]
    loaded = heavy_loaded("ppo.cli", runs, HEAVY, work)
    assert loaded == {" ".join(runs[0]): sorted(HEAVY)}
