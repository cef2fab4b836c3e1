"""The CI gate on real training: headless runs of the examples, judged by ``sanctum check``."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

from telemetry.eventlog import read_events
from telemetry.events import PPOUpdate
from tests.integration.support import EXAMPLES, run
from tests.schema_support import assert_valid_log

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def train(tmp_path: Path, run_id: str, *args: str) -> Path:
    result = run(["-m", "ppo", "train", "--run-dir", str(tmp_path), "--run-id", run_id, *args])
    assert result.returncode == 0, result.stderr
    assert "step " in result.stdout  # plain progress lines: stdout is not a terminal
    assert_valid_log(tmp_path / run_id / "events.jsonl")  # every line, against the schema
    return tmp_path / run_id


@pytest.mark.slow
def test_healthy_example_passes_the_check(tmp_path: Path) -> None:
    folder = train(tmp_path, "healthy", "--headless", "--config", str(EXAMPLES / "healthy.toml"))
    check = run(["-m", "sanctum", "check", str(folder), "--json"])
    assert check.returncode == 0, check.stdout
    assert json.loads(check.stdout)["passed"] is True


@pytest.mark.slow
def test_unstable_example_fails_the_check_on_kl_with_early_stops(tmp_path: Path) -> None:
    # No --headless: without a terminal, ppo train runs headless by itself.
    args = ["--config", str(EXAMPLES / "unstable.toml"), "--total-steps", "30000"]
    folder = train(tmp_path, "unstable", *args)
    check = run(["-m", "sanctum", "check", str(folder)])
    assert check.returncode == 1, check.stdout
    assert "FAIL  KL: KL reached critical" in check.stdout
    assert check.stdout.strip().splitlines()[-1].startswith("FAIL: KL")
    updates = [
        e.payload for e in read_events(folder / "events.jsonl").events if isinstance(e, PPOUpdate)
    ]
    # the clip (range 5) bounds almost nothing: KL per clip fraction past 20 early on
    assert sum(u.approx_kl > 20 * max(u.clip_fraction, 0.01) for u in updates[:10]) >= 3
    stops = [u for u in updates if u.early_stopped]
    assert stops and all(
        u.early_stop_reason and "> max_kl 0.5" in u.early_stop_reason for u in stops
    )


@pytest.mark.slow
def test_the_plain_pytorch_example_records_a_log_sanctum_checks(tmp_path: Path) -> None:
    args = ["--run-dir", str(tmp_path), "--total-steps", "20480"]  # 10 updates
    script = run([str(EXAMPLES / "record_pytorch.py"), *args])
    assert script.returncode == 0, script.stderr
    folder = tmp_path / "pytorch-demo"
    assert_valid_log(folder / "events.jsonl")
    check = run(["-m", "sanctum", "check", str(folder), "--json"])
    assert check.returncode == 0, check.stdout
    summary = json.loads(run(["-m", "sanctum", "summary", str(folder), "--json"]).stdout)
    assert summary["run"]["trainer"] == "record_pytorch example 1"
    assert summary["run"]["updates"] == 10
    assert summary["skipped_malformed"] == summary["skipped_unknown_kind"] == 0


needs_mujoco = pytest.mark.skipif(
    importlib.util.find_spec("mujoco") is None,
    reason="needs the optional 'mujoco' extra (pip install -e '.[mujoco]')",
)


@pytest.mark.parametrize(
    ("preset", "steps"),
    [
        ("pendulum.toml", "8192"),
        pytest.param("halfcheetah.toml", "4096", marks=needs_mujoco),
    ],
)
def test_continuous_control_presets_train_and_pass_the_check(
    tmp_path: Path, preset: str, steps: str
) -> None:
    config = EXAMPLES / preset
    args = ["--headless", "--config", str(config), "--total-steps", steps]
    folder = train(tmp_path, "preset", *args)
    check = run(["-m", "sanctum", "check", str(folder), "--json"])
    assert check.returncode == 0, check.stdout
    saved = sorted((folder / "checkpoints").glob("*.pt"))[-1]
    state = torch.load(saved, weights_only=True)
    normalised = tomllib.loads(config.read_text()).get("normalize_obs", False)
    assert ("observations" in state) == normalised


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None,
    reason="needs the tensorboard extra (CleanRL's script logs to TensorBoard too): "
    "pip install 'sanctum-ppo[tensorboard]'",
)
def test_the_continuous_cleanrl_example_records_what_the_rules_need(tmp_path: Path) -> None:
    args = ["--env-id", "Pendulum-v1", "--total-timesteps", "4096", "--run-dir", str(tmp_path)]
    script = run([str(EXAMPLES / "cleanrl_ppo_continuous.py"), "--no-cuda", *args])
    assert script.returncode == 0, script.stderr
    (events,) = tmp_path.glob("*/events.jsonl")
    assert_valid_log(events)
    updates = [e.payload for e in read_events(events).events if isinstance(e, PPOUpdate)]
    assert [u.update for u in updates] == [0, 1]  # 2 rollouts of 2048 steps
    for u in updates:  # the Grad rule's figure and the EV gate's, recorded beside CleanRL's
        assert u.grad_norm is not None and u.grad_norm > 0 and u.grad_clip_scale is not None
        assert u.return_std is not None and u.return_std > 0
        assert u.entropy_normalized is None  # a Gaussian policy: no normalised entropy
    check = run(["-m", "sanctum", "check", str(events.parent), "--json"])
    assert check.returncode == 0, check.stdout
