"""The pre-flight estimate of ``ppo train``: counted from above, against what is built."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from ppo.config import PPOConfig
from ppo.model.policy import ActionSpec, ActorCritic
from ppo.rollout.buffer import RolloutBuffer
from ppo.rollout.envs import EnvSpec
from ppo.run import preflight

SPECS = {
    "discrete": EnvSpec(obs_dim=6, action=ActionSpec(discrete=True, n=3)),
    "box": EnvSpec(
        obs_dim=17,
        action=ActionSpec(discrete=False, n=6, low=np.full(6, -1.0), high=np.full(6, 1.0)),
    ),
}


@pytest.mark.parametrize("kind", SPECS)
@pytest.mark.parametrize("hidden", [(64, 64), (7,), (32, 16, 8)])
def test_the_parameter_count_is_the_built_network_s(kind: str, hidden: tuple[int, ...]) -> None:
    spec = SPECS[kind]
    config = PPOConfig(hidden_sizes=hidden)
    policy = ActorCritic(spec.obs_dim, spec.action, hidden)
    assert preflight.parameter_count(config, spec) == sum(p.numel() for p in policy.parameters())


@pytest.mark.parametrize("kind", SPECS)
def test_the_rollout_estimate_covers_the_rollout_storage_and_its_batch(kind: str) -> None:
    spec = SPECS[kind]
    config = PPOConfig(num_envs=8, num_steps=64, normalize_obs=True)
    buffer = RolloutBuffer(config.num_steps, config.num_envs, spec.obs_dim, spec.action, True)
    stored = sum(
        a.nbytes for a in vars(buffer).values() if isinstance(a, np.ndarray)
    )  # the numpy arrays, flattened copies of obs and actions, the batch's tensors
    policy = ActorCritic(spec.obs_dim, spec.action, config.hidden_sizes)
    batch = buffer.to_batch(policy, np.zeros((8, spec.obs_dim), np.float32), config)
    tensors = sum(t.nbytes for t in vars(batch).values() if isinstance(t, torch.Tensor))
    need = preflight.memory_needed(config, spec)
    assert need.rollout >= stored + tensors
    params = sum(p.numel() for p in policy.parameters())
    assert need.network == 4 * 4 * params  # value, gradient, Adam's two moments; float32


def test_available_memory_is_read_from_meminfo_or_sysconf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  1000 kB\nMemFree:  10 kB\nMemAvailable:  512 kB\n")
    assert preflight._meminfo_available(str(meminfo)) == 512 * 1024
    assert preflight._meminfo_available(str(tmp_path / "none")) is None
    available = preflight.memory_available()
    assert available is not None and available > 0  # Linux: /proc/meminfo, else sysconf
    monkeypatch.setattr(preflight, "_meminfo_available", lambda: None)
    fallback = preflight.memory_available()
    assert fallback is not None and fallback > 0


def test_sizes_read_as_words() -> None:
    assert [preflight.size(n) for n in (999, 1000, 23_800_000_000, 6.9e15, 1e19)] == [
        "999 bytes",
        "1.0 kB",
        "23.8 GB",
        "6.9 PB",
        "10000.0 PB",
    ]
