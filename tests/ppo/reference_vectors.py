"""C-04 reference vectors: fixed inputs -> PPO updates -> KL metrics and step summaries.

Shared by the conformance test and the script that generated the expected file
(``fixtures/make_reference_vectors.py``), so both run exactly the same code path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import torch

from ppo.config import PPOConfig
from ppo.model.policy import ActionSpec, ActorCritic
from ppo.rollout.buffer import Batch
from ppo.update.agent import PPOAgent

FIXTURES = Path(__file__).parent / "fixtures"
INPUTS = FIXTURES / "reference_inputs.json"
EXPECTED = FIXTURES / "reference_expected.json"
TIMING_FIELDS = ("update_seconds",)

SCENARIOS: dict[str, dict[str, Any]] = {
    "minibatch_scope": {"early_stop_scope": "minibatch", "max_kl": 0.004},
    "epoch_scope": {"early_stop_scope": "epoch", "max_kl": 0.002},
    "penalty_adaptive_dual_clip": {
        "kl_penalty_coefficient": 0.5,
        "kl_target": 0.001,
        "clip_ratio_c": 3.0,
        "kl_estimator": "k2",
    },
}


def load_inputs(path: Path = INPUTS) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def build(inputs: dict[str, Any], overrides: dict[str, Any]) -> tuple[PPOAgent, Batch]:
    """Policy with the fixture's weights, the fixture's batch, and an agent for ``overrides``."""
    config = PPOConfig(
        num_envs=4,
        num_steps=8,
        num_minibatches=4,
        update_epochs=3,
        hidden_sizes=(8,),
        learning_rate=0.01,
        seed=7,
        total_steps=32 * 3,
        **overrides,
    )
    policy = ActorCritic(4, ActionSpec(discrete=True, n=3), hidden=(8,))
    state = {k: torch.tensor(v, dtype=torch.float32) for k, v in inputs["weights"].items()}
    policy.load_state_dict(state)
    f32 = torch.float32
    batch = Batch(
        obs=torch.tensor(inputs["obs"], dtype=f32),
        actions=torch.tensor(inputs["actions"], dtype=torch.int64),
        logp=torch.tensor(inputs["logp_old"], dtype=f32),
        values=torch.tensor(inputs["values"], dtype=f32),
        returns=torch.tensor(inputs["returns"], dtype=f32),
        advantages=torch.tensor(inputs["advantages"], dtype=f32),
    )
    return PPOAgent(policy, config), batch


def run(inputs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Three updates on the same batch per scenario; payloads as builtins, timings removed."""
    torch.set_num_threads(1)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, overrides in SCENARIOS.items():
        agent, batch = build(inputs, overrides)
        summaries = []
        for update in range(3):
            summary = agent.update(batch, update=update, global_step=32 * (update + 1))
            record = msgspec.to_builtins(summary.payload)
            for field in TIMING_FIELDS:
                record.pop(field, None)
            record["anomalies"] = [msgspec.to_builtins(a) for a in summary.anomalies]
            summaries.append(record)
        out[name] = summaries
    return out
