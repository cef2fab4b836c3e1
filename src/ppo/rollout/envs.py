"""Gymnasium vector environments in same-step autoreset mode, checked for what PPO supports.

Gymnasium 1.x resets a finished sub-environment on the *next* call by default
(``AutoresetMode.NEXT_STEP``), which turns the step after an episode end into a dummy
transition that training code must mask out. We ask for ``SAME_STEP`` instead: the step
that ends an episode returns the reset observation and keeps the real last observation in
``info["final_obs"]``, which is exactly what bootstrapping a truncated episode needs.
``SyncVectorEnv`` is the default: for cheap environments such as CartPole on a couple of
cores, process pipes cost more than the environments themselves. ``AsyncVectorEnv`` (one
subprocess per environment) pays off for heavy environments; EnvPool
(:mod:`ppo.rollout.envpool_env`, adapted to the same contract) steps C++ environments in threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv

from ppo.config import VectorKind
from ppo.model.policy import ActionSpec


class EnvError(ValueError):
    """The environment cannot be created or is not supported; the message says why."""


@dataclass(frozen=True)
class EnvSpec:
    """What the policy needs to know about the environment."""

    obs_dim: int
    action: ActionSpec


def make_vector_env(
    env_id: str, num_envs: int, kind: VectorKind = "sync"
) -> tuple[VectorEnv[Any, Any, Any], EnvSpec]:
    """``num_envs`` copies of ``env_id`` that reset themselves within the ending step."""
    if kind == "envpool":
        envs = _envpool(env_id, num_envs)
    else:
        try:
            gym.spec(env_id)
        except gym.error.Error as exc:
            raise EnvError(f"unknown environment id {env_id!r}: {exc}") from None
        envs = _gymnasium(env_id, num_envs, kind)
    try:
        return envs, _spec_of(env_id, envs)
    except EnvError:
        envs.close()
        raise


def probe(env_id: str, kind: VectorKind = "sync") -> EnvSpec:
    """What ``env_id``'s environments look like, from one made and closed at once (an
    unknown or broken id is an :class:`EnvError` before anything else is built)."""
    envs, spec = make_vector_env(env_id, 1, "envpool" if kind == "envpool" else "sync")
    envs.close()
    return spec


def _gymnasium(env_id: str, num_envs: int, kind: VectorKind) -> VectorEnv[Any, Any, Any]:
    vector = SyncVectorEnv if kind == "sync" else AsyncVectorEnv
    try:
        return vector(
            [lambda: gym.make(env_id) for _ in range(num_envs)],
            autoreset_mode=AutoresetMode.SAME_STEP,
        )
    except Exception as exc:  # a registered id whose code fails: a missing dependency (box2d,
        # mujoco), an entry point that does not import, a constructor that raises
        hint = ""
        if "mujoco" in str(exc).lower():
            hint = " (the mujoco extra: pip install 'sanctum-ppo[mujoco]')"
        raise EnvError(
            f"cannot create environment {env_id!r}: {type(exc).__name__}: {exc}{hint}"
        ) from exc


def _envpool(env_id: str, num_envs: int) -> VectorEnv[Any, Any, Any]:
    from ppo.rollout.envpool_env import EnvPoolVectorEnv, envpool_ids  # the extra is optional

    try:
        known = envpool_ids()
    except ImportError as exc:
        raise EnvError(str(exc)) from None
    if env_id not in known:
        raise EnvError(f"EnvPool has no environment {env_id!r} (vector_env = 'envpool')")
    try:
        return EnvPoolVectorEnv(env_id, num_envs)
    except Exception as exc:  # EnvPool's own errors (a bad num_envs, a missing asset)
        raise EnvError(f"cannot create EnvPool {env_id!r}: {type(exc).__name__}: {exc}") from exc


def _spec_of(env_id: str, envs: VectorEnv[Any, Any, Any]) -> EnvSpec:
    obs_space = envs.single_observation_space
    if not (isinstance(obs_space, spaces.Box) and len(obs_space.shape) == 1):
        raise EnvError(f"{env_id}: observation space {obs_space} is not supported (need a 1-D Box)")
    try:
        action = ActionSpec.from_space(envs.single_action_space)
    except ValueError as exc:
        raise EnvError(f"{env_id}: {exc}") from None
    return EnvSpec(obs_dim=int(obs_space.shape[0]), action=action)


def reset_seed(seed: int, update: int) -> int:
    """Seed for resetting the envs at ``update`` (0: the run's seed; later: for a resume).

    Environment state cannot be checkpointed, so a resumed run starts fresh episodes from
    a seed derived from the run seed and the update, which keeps resumes reproducible.
    """
    if update == 0:
        return seed
    return int(np.random.SeedSequence([seed, update]).generate_state(1)[0])


def action_mask(infos: dict[str, object], num_envs: int, n: int) -> np.ndarray | None:
    """The ``action_mask`` an environment reports in its info, as (num_envs, n) bools."""
    mask = infos.get("action_mask")
    if mask is None:
        return None
    array = np.asarray(mask, dtype=np.bool_)
    if array.shape != (num_envs, n):
        raise EnvError(f"info['action_mask'] has shape {array.shape}, expected {(num_envs, n)}")
    stuck = np.flatnonzero(~array.any(axis=1))
    if stuck.size:  # nothing to sample: every probability would be NaN
        raise EnvError(f"info['action_mask'] allows no action in env(s) {stuck.tolist()}")
    return array
