"""Return normalisation: rewards divided by the running standard deviation of the
discounted return, so value targets have unit scale whatever the reward's units.

This is the "reward scaling" of Engstrom et al. 2020 ("Implementation Matters in Deep RL"),
as Stable-Baselines3's ``VecNormalize(norm_reward=True)`` and Gymnasium's
``NormalizeReward`` implement it: per environment, a discounted return G <- gamma * G + r
(reset to 0 where an episode ended) feeds a running variance, and rewards are divided by
sqrt(var + eps); they are not centred, so the sign of a reward is kept. Here the scale is
updated once per rollout, from every step of it, and applied to the whole rollout.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

EPSILON: Final = 1e-8


class ReturnScaler:
    """Running variance of the discounted return per environment (Chan et al.'s merge)."""

    def __init__(self, num_envs: int, gamma: float) -> None:
        self.gamma = gamma
        self.discounted = np.zeros(num_envs, dtype=np.float64)
        self.count = 0
        self.mean = 0.0
        self.var = 1.0

    @property
    def scale(self) -> float:
        """The divisor in force: sqrt(var + eps) (1 before any data)."""
        return float(np.sqrt(self.var + EPSILON))

    def update(self, rewards: np.ndarray, dones: np.ndarray) -> float:
        """Fold one rollout's (num_steps, num_envs) rewards; returns the new scale."""
        seen = np.empty(rewards.shape, dtype=np.float64)
        for t in range(rewards.shape[0]):
            self.discounted = self.gamma * self.discounted + rewards[t]
            seen[t] = self.discounted
            self.discounted[dones[t]] = 0.0
        self._merge(seen.reshape(-1))
        return self.scale

    def _merge(self, batch: np.ndarray) -> None:
        n, mean, var = batch.size, float(batch.mean()), float(batch.var())
        total = self.count + n
        delta = mean - self.mean
        if self.count == 0:
            self.mean, self.var = mean, var
        else:
            m2 = self.var * self.count + var * n + delta**2 * self.count * n / total
            self.mean, self.var = self.mean + delta * n / total, m2 / total
        self.count = total

    def state_dict(self) -> dict[str, Any]:
        """Builtins and an array: loads with ``torch.load(weights_only=True)``."""
        return {
            "discounted": self.discounted.tolist(),
            "count": self.count,
            "mean": self.mean,
            "var": self.var,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.discounted = np.asarray(state["discounted"], dtype=np.float64)
        self.count, self.mean, self.var = int(state["count"]), state["mean"], state["var"]
