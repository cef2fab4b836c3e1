"""Environment faults for the calibration corpus, shared by our trainer's runs and the peers'.

A fault is a Gymnasium wrapper on each environment copy that counts that copy's steps and,
from step ``start`` on, breaks what it returns (or, for ``stall``, blocks once).
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np

_STALLED: set[str] = set()
"""Stall tokens already spent in this process (gym.make deep-copies its kwargs, so the
environments of one run share this set, not a dict in their kwargs)."""


class FaultWrapper(gym.Wrapper[Any, Any, Any, Any]):
    """Counts this environment's steps; from step ``start`` on, applies the fault."""

    def __init__(self, env: gym.Env[Any, Any], fault: str, start: int, **args: Any) -> None:
        super().__init__(env)
        self.fault, self.start, self.args = fault, start, args
        self.steps = 0

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps >= self.start:
            if self.fault == "reward_hack":
                reward = 1.0 if action == 0 else -1.0
            elif self.fault == "nan_obs":
                obs = np.full_like(obs, np.nan)
            elif self.fault == "value_scale":
                reward = reward * self.args["factor"]
            elif self.fault == "stall" and self.args["token"] not in _STALLED:
                _STALLED.add(self.args["token"])  # one environment stalls, once
                time.sleep(self.args["seconds"])
        return obs, reward, terminated, truncated, info


def make_faulty(base: str, fault: str, start: int, **args: Any) -> gym.Env[Any, Any]:
    """``base`` made by Gymnasium and wrapped in the fault (a registered id's entry point)."""
    return FaultWrapper(gym.make(base), fault, start, **args)


ENV_FAULTS = ("nan_obs", "value_scale", "stall", "reward_hack")
"""The faults applied by the environment (``FaultWrapper``); the others by the agent."""
