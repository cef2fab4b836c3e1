"""GAE and episodic returns against hand computations (constant critic, known reward)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ppo.core.advantages import Steps, episodic, gae, group_relative, normalize


def column(*xs: float) -> np.ndarray:
    return np.array(xs, dtype=np.float32).reshape(-1, 1)


def flags(n: int, *at: int) -> np.ndarray:
    out = np.zeros((n, 1), dtype=np.bool_)
    out[list(at)] = True
    return out


# Constant critic V = 1, reward 1 per step, gamma = lambda = 0.5: inside an episode
# delta = 1 + 0.5 * 1 - 1 = 0.5 and A_t = delta + 0.25 * A_{t+1}.
V = column(1, 1, 1, 1)
R = column(1, 1, 1, 1)


def test_gae_without_episode_end_by_hand() -> None:
    adv, ret = gae(Steps(R, V, column(1, 1, 1, 1), flags(4), flags(4)), 0.5, 0.5)
    assert adv.ravel().tolist() == [0.6640625, 0.65625, 0.625, 0.5]
    assert ret.ravel().tolist() == [1.6640625, 1.65625, 1.625, 1.5]


def test_gae_terminated_does_not_bootstrap() -> None:
    # Episode terminates at t=1: delta_1 = 1 + 0 - 1 = 0 and the trace stops there.
    adv, _ = gae(Steps(R, V, column(1, 1, 1, 1), flags(4, 1), flags(4)), 0.5, 0.5)
    assert adv.ravel().tolist() == [0.5, 0.0, 0.625, 0.5]


def test_gae_truncated_bootstraps_from_final_observation_value() -> None:
    # Truncated at t=1 whose final observation is worth 4: delta_1 = 1 + 0.5 * 4 - 1 = 2,
    # the trace still stops (A_1 = 2), and A_0 = 0.5 + 0.25 * 2.
    adv, _ = gae(Steps(R, V, column(1, 4, 1, 1), flags(4), flags(4, 1)), 0.5, 0.5)
    assert adv.ravel().tolist() == [1.0, 2.0, 0.625, 0.5]


def test_terminated_and_truncated_together_count_as_terminated() -> None:
    adv, _ = gae(Steps(R, V, column(1, 4, 1, 1), flags(4, 1), flags(4, 1)), 0.5, 0.5)
    assert adv.ravel().tolist() == [0.5, 0.0, 0.625, 0.5]


def plain_loop_gae(rewards, values, next_values, terminated, truncated, gamma, lam):  # type: ignore[no-untyped-def]
    steps, envs = rewards.shape
    out = np.zeros((steps, envs))
    for e in range(envs):
        running = 0.0
        for t in reversed(range(steps)):
            boot = 0.0 if terminated[t, e] else gamma * float(next_values[t, e])
            delta = float(rewards[t, e]) + boot - float(values[t, e])
            done = terminated[t, e] or truncated[t, e]
            running = delta + (0.0 if done else gamma * lam * running)
            out[t, e] = running
    return out


def random_rollout(seed: int, steps: int = 64, envs: int = 3):  # type: ignore[no-untyped-def]
    """Random rewards and values; next_values consistent with values inside episodes."""
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    values = rng.normal(size=(steps, envs)).astype(np.float32)
    terminated = rng.random((steps, envs)) < 0.05
    truncated = rng.random((steps, envs)) < 0.05
    next_values = np.empty_like(values)
    next_values[:-1] = values[1:]
    next_values[-1] = rng.normal(size=envs)
    final = rng.normal(size=(steps, envs)).astype(np.float32)
    next_values[truncated] = final[truncated]  # V(final observation) where cut by a limit
    return rewards, values, next_values, terminated, truncated


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_gae_matches_plain_loop(seed: int) -> None:
    data = random_rollout(seed)
    adv, ret = gae(Steps(*data), 0.99, 0.95)
    np.testing.assert_allclose(adv, plain_loop_gae(*data, 0.99, 0.95), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, adv + data[1], rtol=1e-6)


def test_episodic_returns_by_hand() -> None:
    # reward 1, gamma 0.5, terminated at t=3: R = 1 + 0.5 + 0.25 + 0.125 ... -> A = R - V.
    adv, ret = episodic(Steps(R, V, column(1, 1, 1, 1), flags(4, 3), flags(4)), 0.5)
    assert ret.ravel().tolist() == [1.875, 1.75, 1.5, 1.0]
    assert adv.ravel().tolist() == [0.875, 0.75, 0.5, 0.0]


def test_episodic_bootstraps_truncation_and_rollout_end() -> None:
    # Truncated at t=1 with V(final) = 4; rollout ends at t=3 with V(next) = 2.
    _, ret = episodic(Steps(R, V, column(1, 4, 1, 2), flags(4), flags(4, 1)), 0.5)
    assert ret.ravel().tolist() == [2.5, 3.0, 2.0, 2.0]


@pytest.mark.parametrize("seed", [3, 4])
def test_episodic_equals_gae_with_lambda_one(seed: int) -> None:
    data = random_rollout(seed)
    np.testing.assert_allclose(
        episodic(Steps(*data), 0.9)[0], gae(Steps(*data), 0.9, 1.0)[0], atol=1e-4
    )


def test_normalize_with_std_clamp() -> None:
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    out = normalize(x, 1e-8)
    assert float(out.mean()) == pytest.approx(0.0, abs=1e-7)
    assert float(out.std()) == pytest.approx(1.0)
    flat = normalize(torch.full((8,), 3.0), 1e-8)
    assert flat.tolist() == [0.0] * 8
    tiny = normalize(torch.tensor([0.0, 1e-12]), 1e-3)
    assert bool(torch.isfinite(tiny).all()) and float(tiny.abs().max()) < 1e-8
    assert normalize(torch.tensor([5.0]), 1e-8).tolist() == [0.0]


def test_group_relative_advantages_by_hand() -> None:
    # two groups of three: rewards 1, 0, 0 (mean 1/3, unbiased std 1/sqrt(3)) and 0.5 x 3
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.5, 0.5, 0.5])
    adv, equal = group_relative(rewards, 3, scale=True, eps=0.0)
    std = (((2 / 3) ** 2 + 2 * (1 / 3) ** 2) / 2) ** 0.5
    expected = [(2 / 3) / std, -(1 / 3) / std, -(1 / 3) / std, 0.0, 0.0, 0.0]
    assert adv.tolist() == pytest.approx(expected)
    assert equal.tolist() == [False, True]
    centred, _ = group_relative(rewards, 3, scale=False, eps=1e-6)  # Dr. GRPO: no std
    assert centred.tolist() == pytest.approx([2 / 3, -1 / 3, -1 / 3, 0.0, 0.0, 0.0])
    equal_only, _ = group_relative(torch.full((4,), 0.5), 2, scale=True, eps=1e-6)
    assert equal_only.tolist() == [0.0] * 4  # an equal group: 0, not 0/0
    with pytest.raises(ValueError, match="groups of 4"):
        group_relative(rewards, 4, scale=True, eps=1e-6)
