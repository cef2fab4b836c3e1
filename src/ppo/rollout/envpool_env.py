"""EnvPool behind Gymnasium's same-step autoreset contract (``vector_env = "envpool"``).

EnvPool (C++ environments stepped by a thread pool) resets a finished environment on the
*next* step: the step after an episode end ignores its action and returns the reset
observation with reward 0. The rollout code relies on Gymnasium's ``SAME_STEP`` contract
instead (see :mod:`ppo.rollout.envs`), so this adapter resets the finished environments at once
(``reset(env_id=...)``, which EnvPool supports for a subset) and reports their real last
observations in ``info["final_obs"]``, as ``SyncVectorEnv`` does. The observations and
rewards are otherwise EnvPool's own, step for step (a test compares the two streams).

EnvPool seeds its environments when the pool is made, not on ``reset(seed=...)``, so a
reset with a seed builds a new pool with that seed.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

EXTRA_HINT = "pip install 'sanctum-ppo[envpool]' (or: pip install envpool)"


def _envpool() -> Any:
    try:
        with _quiet_spaces():
            import envpool
    except ImportError as exc:
        raise ImportError(f"vector_env = 'envpool' needs the envpool extra: {EXTRA_HINT}") from exc
    return envpool


@contextlib.contextmanager
def _quiet_spaces() -> Iterator[None]:
    """Without Gymnasium's warning about EnvPool's float64 bounds on float32 Box spaces."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*precision lowered", category=UserWarning)
        yield


def envpool_ids() -> list[str]:
    """Every environment id EnvPool provides."""
    return list(_envpool().list_all_envs())


def make_pool(env_id: str, num_envs: int, seed: int) -> Any:
    """EnvPool's own Gymnasium pool (next-step autoreset)."""
    envpool = _envpool()
    with _quiet_spaces():
        pool = envpool.make_gymnasium(env_id, num_envs=num_envs, seed=seed)
        pool.observation_space, pool.action_space  # noqa: B018 (built and cached on first use)
    return pool


class EnvPoolVectorEnv(VectorEnv[Any, Any, Any]):
    """``num_envs`` EnvPool environments of ``env_id`` that reset within the ending step."""

    def __init__(self, env_id: str, num_envs: int, seed: int = 0) -> None:
        self.env_id = env_id
        self.num_envs = num_envs
        self._pool = make_pool(env_id, num_envs, seed)
        self.single_observation_space = self._pool.observation_space
        self.single_action_space = self._pool.action_space
        self.observation_space = self.single_observation_space
        self.action_space = self.single_action_space
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None:
            self._pool.close()
            self._pool = make_pool(self.env_id, self.num_envs, seed)
        obs, info = self._pool.reset()
        return obs, info

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rewards, terminated, truncated, info = self._pool.step(actions)
        done = np.flatnonzero(np.logical_or(terminated, truncated))
        if done.size:
            final = np.zeros_like(obs)
            final[done] = obs[done]
            obs = obs.copy()
            fresh, fresh_info = self._pool.reset(env_id=done.astype(np.int32))
            obs[np.asarray(fresh_info["env_id"])] = fresh
            info = {**info, "final_obs": final}
        return obs, rewards, terminated, truncated, info

    def close(self, **kwargs: Any) -> None:
        self._pool.close()
