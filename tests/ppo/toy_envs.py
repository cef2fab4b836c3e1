"""Tiny registered environments whose episode ends and masks are known exactly."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Counter(gym.Env[np.ndarray, np.int64]):
    """Observation [t]; reward 1; terminates when t reaches ``terminate_at`` (if set)."""

    def __init__(self, terminate_at: int | None = None) -> None:
        self.observation_space = spaces.Box(-1e6, 1e6, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.terminate_at = terminate_at
        self.t = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], dtype=np.float32), {}

    def step(self, action: np.int64) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.t += 1
        terminated = self.terminate_at is not None and self.t >= self.terminate_at
        return np.array([float(self.t)], dtype=np.float32), 1.0, terminated, False, {}


class MaskedChoice(gym.Env[np.ndarray, np.int64]):
    """Five actions; only the ones in the reported mask are legal (a masked one raises)."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(0.0, 1.0, shape=(5,), dtype=np.float32)
        self.action_space = spaces.Discrete(5)
        self.mask = np.ones(5, dtype=np.bool_)
        self.t = 0

    def _new_mask(self) -> np.ndarray:
        mask = self.np_random.random(5) < 0.4
        mask[self.np_random.integers(5)] = True
        self.mask = mask
        return mask

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        mask = self._new_mask()
        return mask.astype(np.float32), {"action_mask": mask.copy()}

    def step(self, action: np.int64) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self.mask[int(action)]:
            raise AssertionError(f"masked action {action} taken with mask {self.mask}")
        self.t += 1
        reward = 1.0 if int(action) == int(np.flatnonzero(self.mask)[-1]) else 0.0
        mask = self._new_mask()
        return mask.astype(np.float32), reward, self.t >= 10, False, {"action_mask": mask.copy()}


def register() -> None:
    """Register the toy envs (idempotent)."""
    if "ToyCounterTrunc-v0" in gym.registry:
        return
    gym.register("ToyCounterTrunc-v0", entry_point=Counter, max_episode_steps=3)
    gym.register(
        "ToyCounterTerm-v0", entry_point=Counter, kwargs={"terminate_at": 2}, max_episode_steps=50
    )
    gym.register("ToyMasked-v0", entry_point=MaskedChoice, max_episode_steps=50)
