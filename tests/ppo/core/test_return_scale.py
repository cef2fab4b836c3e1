"""Return normalisation: the running scale of the discounted return, reported unnormalised."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ppo.core.normalize import EPSILON, ReturnScaler
from ppo.model.policy import ActorCritic
from ppo.rollout.collector import Collector
from ppo.rollout.envs import make_vector_env
from ppo.update.agent import PPOAgent
from tests.ppo.helpers import config


def discounted_by_hand(rewards: np.ndarray, dones: np.ndarray, gamma: float) -> np.ndarray:
    g = np.zeros(rewards.shape[1])
    seen = []
    for t in range(rewards.shape[0]):
        g = gamma * g + rewards[t]
        seen.append(g.copy())
        g[dones[t]] = 0.0
    return np.array(seen)


def test_the_scale_is_the_std_of_every_discounted_return_seen_so_far() -> None:
    rng = np.random.default_rng(0)
    scaler = ReturnScaler(num_envs=3, gamma=0.9)
    assert scaler.scale == pytest.approx(1.0)
    rollouts = [
        (rng.normal(1.0, 2.0, (16, 3)).astype(np.float32), rng.random((16, 3)) < 0.1)
        for _ in range(3)
    ]
    seen = []
    carried = np.zeros((0, 3))
    for rewards, dones in rollouts:
        scale = scaler.update(rewards, dones)
        # the discounted return carries over from one rollout to the next
        joined_r = np.concatenate([r for r, _ in rollouts[: len(seen) + 1]])
        joined_d = np.concatenate([d for _, d in rollouts[: len(seen) + 1]])
        carried = discounted_by_hand(joined_r, joined_d, 0.9)
        seen.append(scale)
        assert scale == pytest.approx(np.sqrt(carried.var() + EPSILON), rel=1e-9)
    assert len(carried) == 48


def test_a_restored_scaler_goes_on_where_the_saved_one_stopped() -> None:
    rng = np.random.default_rng(1)
    a, b = ReturnScaler(2, 0.99), ReturnScaler(2, 0.99)
    first = rng.normal(size=(8, 2)).astype(np.float32), np.zeros((8, 2), dtype=bool)
    second = rng.normal(size=(8, 2)).astype(np.float32), np.zeros((8, 2), dtype=bool)
    a.update(*first)
    b.load_state_dict(a.state_dict())
    assert a.update(*second) == b.update(*second)


def test_normalised_training_reports_returns_and_values_unnormalised() -> None:
    cfg = config(normalize_returns=True)
    envs, spec = make_vector_env("CartPole-v1", cfg.num_envs)
    torch.manual_seed(0)
    policy = ActorCritic(spec.obs_dim, spec.action, hidden=(8,))
    collector = Collector(envs, spec, policy, cfg.num_steps, np.random.default_rng(0))
    collector.reset(seed=0)
    collector.collect()
    scaler = ReturnScaler(cfg.num_envs, cfg.gamma)
    batch = collector.buffer.to_batch(policy, collector.obs, cfg, scaler=scaler)
    assert batch.measures is not None and batch.measures.return_scale == scaler.scale
    scale = scaler.scale
    assert scale > 2.0  # CartPole's discounted returns are far from unit scale
    p = PPOAgent(policy, cfg).update(batch).payload
    assert p.return_scale == scale
    assert p.return_mean == pytest.approx(float(batch.returns.double().mean()) * scale, rel=1e-9)
    assert p.value_mean == pytest.approx(float(batch.values.double().mean()) * scale, rel=1e-9)
    # the advantages are in the scaled units the critic learns in; the raw rollout's are not
    raw = collector.buffer.to_batch(policy, collector.obs, config())
    assert raw.measures is not None and raw.measures.return_scale is None
    assert p.advantage_std == pytest.approx(float(batch.advantages.double().std()), rel=1e-9)
    assert float(raw.advantages.std()) > 2.0 * float(batch.advantages.std())
    envs.close()
