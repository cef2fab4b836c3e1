"""Rollout collection: step the vector env with the policy and fill the RolloutBuffer.

The per-step path is kept lean because it runs num_steps times per update: numpy in and
out of the environment, one actor forward in numpy (:class:`~ppo.model.inference.NumpyActor`;
values and old log-probabilities come later in one batched torch pass), no Python objects
per sample. Episode
returns and lengths are tracked here from raw rewards, so they mean the same thing whatever
wrappers an environment has. ``on_step`` lets the trainer send heartbeats mid-rollout.
With observation normalisation the buffer holds what the policy saw (normalised with the
statistics in force for the whole rollout, bootstrap observations included), and the raw
observations are folded into the statistics when the rollout ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

from ppo.core.normalize import ObservationNormalizer
from ppo.distributed.world import SINGLE, World
from ppo.model.inference import NumpyActor
from ppo.model.policy import ActorCritic
from ppo.rollout.buffer import RolloutBuffer
from ppo.rollout.envs import EnvSpec, action_mask
from telemetry import RolloutPayload


@dataclass(frozen=True)
class RolloutResult:
    """Episodes that finished during one rollout (raw returns and lengths)."""

    returns: tuple[float, ...]
    lengths: tuple[int, ...]


class Collector:
    """Owns the current observation of each environment between rollouts."""

    def __init__(
        self,
        envs: VectorEnv[Any, Any, Any],
        spec: EnvSpec,
        policy: ActorCritic,
        num_steps: int,
        rng: np.random.Generator,
        normalizer: ObservationNormalizer | None = None,
        world: World = SINGLE,
    ) -> None:
        self.envs = envs
        self.spec = spec
        self.policy = policy
        self.actor = NumpyActor(policy)
        self.rng = rng
        self.num_envs = int(envs.num_envs)
        self._num_steps = num_steps
        self._buffer: RolloutBuffer | None = None
        self.obs = np.zeros((self.num_envs, spec.obs_dim), dtype=np.float32)
        """The raw observation of each environment."""
        self.last_obs = self.obs
        """After a rollout: the observation after its last step, as the policy sees it."""
        self.normalizer = normalizer
        self.world = world
        self._raw = None if normalizer is None else np.zeros((num_steps, *self.obs.shape))
        self.mask: np.ndarray | None = None
        self._ep_return = np.zeros(self.num_envs, dtype=np.float64)
        self._ep_length = np.zeros(self.num_envs, dtype=np.int64)
        action = spec.action
        self._low = None if action.discrete else action.low
        self._high = None if action.discrete else action.high

    def reset(self, seed: int) -> None:
        """Start fresh episodes in every environment."""
        obs, infos = self.envs.reset(seed=seed)
        self.obs = np.asarray(obs, dtype=np.float32)
        self.mask = action_mask(infos, self.num_envs, self.spec.action.n)
        self._ep_return[:] = 0.0
        self._ep_length[:] = 0
        if self._buffer is None:  # masked storage only for environments that report masks
            self._buffer = RolloutBuffer(
                self._num_steps,
                self.num_envs,
                self.spec.obs_dim,
                self.spec.action,
                masked=self.mask is not None,
            )

    @property
    def buffer(self) -> RolloutBuffer:
        """The rollout storage (created by the first :meth:`reset`)."""
        if self._buffer is None:
            raise RuntimeError("Collector.reset() must be called before collecting")
        return self._buffer

    def collect(self, on_step: Callable[[int], None] | None = None) -> RolloutResult:
        """Fill the buffer with one rollout; ``on_step(t)`` runs after each vector step."""
        buf = self.buffer
        returns: list[float] = []
        lengths: list[int] = []
        for t in range(buf.num_steps):
            seen = self._seen(self.obs)
            buf.obs[t] = seen
            if self._raw is not None:
                self._raw[t] = self.obs
            if buf.masks is not None:
                if self.mask is None:
                    raise ValueError("the environment stopped reporting info['action_mask']")
                buf.masks[t] = self.mask
            act = self.actor.act(seen, self.mask, self.rng)
            buf.actions[t] = act
            if self._low is not None:
                act = np.clip(act, self._low, self._high)
            obs, rewards, terminated, truncated, infos = self.envs.step(act)
            buf.rewards[t] = rewards
            buf.terminated[t] = terminated
            buf.truncated[t] = truncated
            self._ep_return += rewards
            self._ep_length += 1
            done = terminated | truncated
            if done.any():
                self._end_episodes(t, done, truncated, infos, returns, lengths)
            self.obs = np.asarray(obs, dtype=np.float32)
            if buf.masks is not None:
                self.mask = action_mask(infos, self.num_envs, self.spec.action.n)
            if on_step is not None:
                on_step(t)
        self.last_obs = self._seen(self.obs)
        if self.normalizer is not None and self._raw is not None:  # after the whole rollout
            self.normalizer.update(self._raw.reshape(-1, self.spec.obs_dim), self.world)
        return RolloutResult(tuple(returns), tuple(lengths))

    def _seen(self, obs: np.ndarray) -> np.ndarray:
        """``obs`` as the policy sees it (normalised when the run normalises observations)."""
        return obs if self.normalizer is None else self.normalizer(obs)

    def _end_episodes(
        self,
        t: int,
        done: np.ndarray,
        truncated: np.ndarray,
        infos: dict[str, object],
        returns: list[float],
        lengths: list[int],
    ) -> None:
        """Record finished episodes and keep final observations of truncated ones."""
        final_obs = infos.get("final_obs")
        for i in np.flatnonzero(done):
            returns.append(float(self._ep_return[i]))
            lengths.append(int(self._ep_length[i]))
            self._ep_return[i] = 0.0
            self._ep_length[i] = 0
            if truncated[i]:
                if final_obs is None:
                    raise ValueError("vector env did not report final_obs: use SAME_STEP autoreset")
                last = np.asarray(final_obs[i], dtype=np.float32)  # type: ignore[index]
                self.buffer.final_obs[t, i] = self._seen(last)


def rollout_payload(
    update: int, global_step: int, rollout: RolloutResult, sps: float
) -> RolloutPayload:
    """The ``rollout`` event of the episodes that finished in ``rollout``."""
    returns, lengths = rollout.returns, rollout.lengths
    if not returns:
        return RolloutPayload(update=update, global_step=global_step, steps_per_second=sps)
    return RolloutPayload(
        update=update,
        global_step=global_step,
        episodes=len(returns),
        episode_return_mean=sum(returns) / len(returns),
        episode_return_min=min(returns),
        episode_return_max=max(returns),
        episode_length_mean=sum(lengths) / len(lengths),
        steps_per_second=sps,
    )
