"""Rollout storage in preallocated numpy arrays, and its conversion into a training Batch.

Environments speak numpy, so the rollout is stored as numpy (no per-step tensor churn).
When the rollout is complete, :meth:`RolloutBuffer.to_batch` runs the policy once over
every stored observation, the observation after the last step, and the final observations
of truncated episodes, to get V(s), V(s') and log pi_old(a|s) in one pass; then it computes
advantages and hands the agent a flat :class:`Batch` of tensors.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ppo import advantages as adv
from ppo.config import PPOConfig
from ppo.policy import ActionSpec, ActorCritic


@dataclass(frozen=True)
class Batch:
    """One rollout, flattened to (batch,) along steps x envs; the agent's input."""

    obs: Tensor
    actions: Tensor
    logp: Tensor
    values: Tensor
    returns: Tensor
    advantages: Tensor
    masks: Tensor | None = None

    @property
    def size(self) -> int:
        """Number of samples."""
        return int(self.obs.shape[0])

    def select(self, index: Tensor) -> Batch:
        """The samples at ``index`` (a minibatch)."""
        return Batch(
            obs=self.obs[index],
            actions=self.actions[index],
            logp=self.logp[index],
            values=self.values[index],
            returns=self.returns[index],
            advantages=self.advantages[index],
            masks=None if self.masks is None else self.masks[index],
        )

    def slice(self, start: int, stop: int) -> Batch:
        """Samples ``start:stop`` as views (no copy)."""
        return Batch(
            obs=self.obs[start:stop],
            actions=self.actions[start:stop],
            logp=self.logp[start:stop],
            values=self.values[start:stop],
            returns=self.returns[start:stop],
            advantages=self.advantages[start:stop],
            masks=None if self.masks is None else self.masks[start:stop],
        )

    def split(self, parts: int) -> list[Batch]:
        """``parts`` consecutive minibatches whose sizes differ by at most one."""
        base, extra = divmod(self.size, parts)
        bounds = [0]
        for i in range(parts):
            bounds.append(bounds[-1] + base + (1 if i < extra else 0))
        return [self.slice(a, b) for a, b in itertools.pairwise(bounds)]


class RolloutBuffer:
    """(num_steps, num_envs) arrays for one rollout, reused from one rollout to the next."""

    def __init__(
        self, num_steps: int, num_envs: int, obs_dim: int, action: ActionSpec, masked: bool
    ) -> None:
        shape = (num_steps, num_envs)
        self.obs = np.zeros((*shape, obs_dim), dtype=np.float32)
        if action.discrete:
            self.actions = np.zeros(shape, dtype=np.int64)
        else:
            self.actions = np.zeros((*shape, action.n), dtype=np.float32)
        self.rewards = np.zeros(shape, dtype=np.float32)
        self.terminated = np.zeros(shape, dtype=np.bool_)
        self.truncated = np.zeros(shape, dtype=np.bool_)
        self.final_obs = np.zeros((*shape, obs_dim), dtype=np.float32)
        self.masks = np.ones((*shape, action.n), dtype=np.bool_) if masked else None

    @property
    def num_steps(self) -> int:
        """Steps per environment."""
        return int(self.rewards.shape[0])

    def to_batch(
        self,
        policy: ActorCritic,
        last_obs: np.ndarray,
        config: PPOConfig,
    ) -> Batch:
        """Values, old log-probs and advantages for the stored rollout, as one flat batch."""
        flat = self.rewards.size
        obs = torch.from_numpy(self.obs.reshape(flat, -1).copy())
        actions = torch.from_numpy(self.actions.reshape(flat, *self.actions.shape[2:]).copy())
        masks = None
        if self.masks is not None:
            masks = torch.from_numpy(self.masks.reshape(flat, -1).copy())
        with torch.no_grad():
            logp = policy.distribution(obs, masks).log_prob(actions)
        values, next_values = self._values(policy, obs, last_obs)
        advantages, returns = self._advantages(values, next_values, config)
        return Batch(
            obs=obs,
            actions=actions,
            logp=logp,
            values=torch.from_numpy(values.reshape(flat).copy()),
            returns=torch.from_numpy(returns.reshape(flat)),
            advantages=torch.from_numpy(advantages.reshape(flat)),
            masks=masks,
        )

    def _values(
        self, policy: ActorCritic, obs: torch.Tensor, last_obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """V(s_t) and V(s_{t+1}) in one forward over stored, last and final observations."""
        steps, envs = self.rewards.shape
        flat = steps * envs
        extra = np.concatenate([last_obs, self.final_obs[self.truncated]]).astype(np.float32)
        with torch.no_grad():
            all_values = policy.value(torch.cat([obs, torch.from_numpy(extra)])).numpy()
        values = all_values[:flat].reshape(steps, envs)
        next_values = np.empty_like(values)
        next_values[:-1] = values[1:]
        next_values[-1] = all_values[flat : flat + envs]
        next_values[self.truncated] = all_values[flat + envs :]  # V(final obs) where cut
        return values, next_values

    def _advantages(
        self, values: np.ndarray, next_values: np.ndarray, config: PPOConfig
    ) -> tuple[np.ndarray, np.ndarray]:
        ends = (self.terminated, self.truncated)
        if config.advantage_mode == "gae":
            return adv.gae(
                self.rewards, values, next_values, *ends, config.gamma, config.gae_lambda
            )
        return adv.episodic(self.rewards, values, next_values, *ends, config.gamma)
