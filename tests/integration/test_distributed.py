"""Two ranks started by ``ppo train --nproc 2`` (gloo on the CPU; NCCL on two GPUs, where
there are): the same early-stop decision on every rank at every update, the same parameters
at the end, one event log, judged by ``sanctum check``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from ppo.run.ranks import parameter_checksum
from sanctum.cli import main as sanctum_main
from telemetry import PPOUpdate, RunFinished, RunStarted, read_events
from tests import processes
from tests.schema_support import assert_valid_log

STOPPING = [
    "--total-steps", "8192", "--set", "num_steps=64", "--set", "learning_rate=0.003",
    "--set", "max_kl=0.003", "--set", "rank_trace=true",
    "--set", "normalize_obs=true", "--set", "normalize_returns=true",
]  # fmt: skip
"""32 updates of 4 envs x 64 steps whose KL often passes max_kl: early stops on most; with
both normalisations, whose statistics every rank must hold alike."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    command = [sys.executable, "-m", "ppo", "train", "--headless", "--nproc", "2"]
    done = processes.run(
        [*command, *STOPPING, "--run-dir", str(runs), "--run-id", "ddp"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "by 2 processes" in done.stdout
    return runs / "ddp"


def _trace(run: Path, rank: int) -> list[dict[str, object]]:
    lines = (run / "ranks" / f"rank{rank}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _agreed(line: dict[str, object]) -> dict[str, object]:
    """What every rank must agree on (not its rank or pid)."""
    return {k: v for k, v in line.items() if k not in ("rank", "pid")}


def test_every_rank_takes_every_decision_and_ends_with_the_same_weights(run: Path) -> None:
    first, second = _trace(run, 0), _trace(run, 1)
    assert len(first) == len(second) == 32
    assert [_agreed(x) for x in first] == [_agreed(x) for x in second]
    assert all("statistics" in x for x in first)  # normalisation statistics agree too
    stops = [x["early_stop"] for x in first if x["early_stop"] is not None]
    assert len(stops) >= 5, "the config must make early stops happen, or this proves nothing"
    assert first[0]["pid"] != second[0]["pid"]
    saved = torch.load(run / "checkpoints" / "update_000032.pt", weights_only=False)
    assert parameter_checksum(saved["model"]) == first[-1]["checksum"]  # rank 0 saved them
    assert saved["world_size"] == 2
    assert saved["observations"]["count"] == 32 * 4 * 64  # every rank's observations


def test_one_event_log_with_the_whole_job_in_it(run: Path) -> None:
    assert sorted(p.name for p in run.glob("*.jsonl")) == ["events.jsonl"]
    events = read_events(run / "events.jsonl").events
    started = [e for e in events if isinstance(e, RunStarted)]
    assert len(started) == 1 and started[0].payload.world_size == 2
    assert started[0].payload.config["num_envs"] == 4  # the job's, not a rank's share
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    assert [u.update for u in updates] == list(range(32))
    assert updates[-1].global_step == 8192
    stops = [u.early_stop for u in updates if u.early_stop is not None]
    trace_stops = [x["early_stop"] for x in _trace(run, 0) if x["early_stop"] is not None]
    assert [[s.epoch, s.minibatch] for s in stops] == trace_stops
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert finished[-1].payload.status == "completed"


def test_sanctum_check_judges_it(run: Path) -> None:
    assert sanctum_main(["check", str(run)]) == 0


def test_every_line_is_valid_against_the_schema(run: Path) -> None:
    assert_valid_log(run / "events.jsonl")


@pytest.mark.skipif(
    torch.cuda.device_count() < 2,
    reason="no CUDA device" if not torch.cuda.is_available() else "fewer than 2 CUDA devices",
)
def test_two_ranks_on_two_gpus_over_nccl_take_the_same_decisions(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "ppo", "train", "--headless", "--nproc", "2"]
    done = processes.run(
        [*command, *STOPPING, "--set", "device=cuda", "--run-dir", str(tmp_path), "--run-id", "g"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    run = tmp_path / "g"
    first, second = _trace(run, 0), _trace(run, 1)
    assert len(first) == len(second) == 32
    assert [_agreed(x) for x in first] == [_agreed(x) for x in second]
    started = read_events(run / "events.jsonl").events[0]
    assert isinstance(started, RunStarted) and started.payload.config["device_used"] == "cuda"
    assert sanctum_main(["check", str(run)]) == 0
