"""The token-level trainer's device: refused at once when CUDA is named and absent; on a
CUDA machine a short GRPO run in bf16 records the device it used."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ppo.cli import main as ppo_main
from telemetry import RunStarted, read_events
from tests.cli_runner import run_main

SHORT = [
    "--set", "updates=2", "--set", "rollouts_per_update=16", "--set", "group_size=4",
    "--set", "warm_start_steps=10",
]  # fmt: skip


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_cuda_without_a_device_exits_2_naming_the_setting(tmp_path: Path) -> None:
    argv = ["train", "--config", "examples/token_grpo.toml", "--headless", "--run-dir"]
    done = run_main(ppo_main, *argv, tmp_path, *SHORT, "--set", "device=cuda")
    assert done.returncode == 2
    assert 'device = "cuda" but torch finds no CUDA device' in done.stderr
    assert "Traceback" not in done.stderr and not list(tmp_path.iterdir())


def _device_used(tmp_path: Path, *extra: str) -> str:
    argv = ["train", "--config", "examples/token_grpo.toml", "--headless", "--run-id", "d"]
    assert ppo_main([*argv, "--run-dir", str(tmp_path), *SHORT, *extra]) == 0
    started = read_events(tmp_path / "d" / "events.jsonl").events[0]
    assert isinstance(started, RunStarted)
    return str(started.payload.config["device_used"])


def test_auto_records_the_device_it_used_and_bf16_trains(tmp_path: Path) -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert _device_used(tmp_path, "--set", "precision=bf16") == expected


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_runs_grpo_on_the_device(tmp_path: Path) -> None:
    assert _device_used(tmp_path, "--set", "device=cuda", "--set", "precision=bf16") == "cuda"
