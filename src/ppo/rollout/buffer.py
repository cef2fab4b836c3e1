"""Rollout storage in preallocated numpy arrays, and its conversion into a training Batch.

Environments speak numpy, so the rollout is stored as numpy (no per-step tensor churn).
When the rollout is complete, :meth:`RolloutBuffer.to_batch` moves it to the policy's device
(one copy per array) and runs the policy once over every stored observation, the observation
after the last step, and the final observations of truncated episodes, to get V(s), V(s')
and log pi_old(a|s) in one pass (and the reference policy's log pi_ref(a|s) when a
reference KL is on). Then it shapes the rewards (divided by the return scale, minus the
reference-KL penalty) and computes advantages on the host, from the values read back once,
and hands the agent a flat :class:`Batch` of tensors on the policy's device.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ppo.config import PPOConfig
from ppo.core import advantages as adv
from ppo.core.kl import estimate
from ppo.core.losses import LossInputs
from ppo.core.normalize import ReturnScaler
from ppo.model import reference as ref
from ppo.model.policy import ActionSpec, ActorCritic


@dataclass(frozen=True)
class RolloutMeasures:
    """What the rollout as a whole measured, for the payload (minibatches do not need it)."""

    td_errors: Tensor
    """delta_t per sample, in the environment's reward units (not normalised)."""
    reward_penalty: Tensor | None = None
    """The reference-KL penalty subtracted from each sample's reward (None: off)."""
    return_scale: float | None = None
    """The divisor of the rewards (None: returns not normalised)."""


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
    logp_ref: Tensor | None = None
    """log pi_ref(a|s) of the frozen reference policy (None: no reference KL)."""
    measures: RolloutMeasures | None = None
    """The rollout's own measurements (a minibatch has none)."""

    @property
    def size(self) -> int:
        """Number of samples."""
        return int(self.obs.shape[0])

    def select(self, index: Tensor | slice) -> Batch:
        """The samples at ``index`` (a minibatch): a gather, or views for a slice."""

        def pick(x: Tensor | None) -> Tensor | None:
            return None if x is None else x[index]

        return Batch(
            obs=self.obs[index],
            actions=self.actions[index],
            logp=self.logp[index],
            values=self.values[index],
            returns=self.returns[index],
            advantages=self.advantages[index],
            masks=pick(self.masks),
            logp_ref=pick(self.logp_ref),
        )

    def loss_inputs(
        self, logp: Tensor, entropy: Tensor, values: Tensor, advantages: Tensor
    ) -> LossInputs:
        """The loss's inputs: the policy's new outputs on these samples beside what the
        rollout recorded (its log-probabilities and values are the loss's old ones), with
        ``advantages`` as the update uses them (normalised or not)."""
        return LossInputs(
            logp_new=logp,
            logp_old=self.logp,
            entropy=entropy,
            values=values,
            values_old=self.values,
            returns=self.returns,
            advantages=advantages,
            logp_ref=self.logp_ref,
        )

    def slice(self, start: int, stop: int) -> Batch:
        """Samples ``start:stop`` as views (no copy)."""
        return self.select(slice(start, stop))

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
        reference: ActorCritic | None = None,
        reward_kl_coef: float | None = None,
        scaler: ReturnScaler | None = None,
    ) -> Batch:
        """Values, old log-probs and advantages for the stored rollout, as one flat batch.

        ``reference``: the frozen reference policy (its log-probs go into the batch);
        ``reward_kl_coef``: subtract that times the per-sample reference KL from the
        rewards (None: no penalty); ``scaler``: divide rewards by the return scale first."""
        flat = self.rewards.size
        device = next(policy.parameters()).device
        obs, actions, masks = self._flat_samples(device)
        with torch.no_grad():
            logp = policy.distribution(obs, masks).log_prob(actions)
        logp_ref = None if reference is None else ref.log_prob(reference, obs, actions, masks)
        values, next_values = self._values(policy, obs, last_obs, device)
        penalty = None
        if reward_kl_coef is not None and logp_ref is not None:
            per_sample = estimate(
                logp_ref, logp, config.ref_kl_reward_estimator, config.log_ratio_clamp
            )
            penalty = reward_kl_coef * per_sample
        rewards, scale = self._shaped_rewards(penalty, scaler)
        steps = adv.Steps(rewards, values, next_values, self.terminated, self.truncated)
        advantages, returns = self._advantages(steps, config)
        deltas = adv.td_errors(steps, config.gamma)

        def on_device(array: np.ndarray) -> Tensor:
            return torch.from_numpy(array).to(device)

        return Batch(
            obs=obs,
            actions=actions,
            logp=logp,
            values=on_device(values.reshape(flat).copy()),
            returns=on_device(returns.reshape(flat)),
            advantages=on_device(advantages.reshape(flat)),
            masks=masks,
            logp_ref=logp_ref,
            measures=RolloutMeasures(
                td_errors=on_device(deltas.reshape(flat) * np.float32(scale or 1.0)),
                reward_penalty=penalty,
                return_scale=scale,
            ),
        )

    def _flat_samples(self, device: torch.device) -> tuple[Tensor, Tensor, Tensor | None]:
        """Observations, actions and action masks flattened to (batch, ...) tensors on
        ``device``."""
        flat = self.rewards.size
        obs = torch.from_numpy(self.obs.reshape(flat, -1).copy()).to(device)
        shape = (flat, *self.actions.shape[2:])
        actions = torch.from_numpy(self.actions.reshape(shape).copy()).to(device)
        masks = None
        if self.masks is not None:
            masks = torch.from_numpy(self.masks.reshape(flat, -1).copy()).to(device)
        return obs, actions, masks

    def _shaped_rewards(
        self, penalty: Tensor | None, scaler: ReturnScaler | None
    ) -> tuple[np.ndarray, float | None]:
        """The rewards advantages are computed from: divided by the return scale (updated
        with this rollout first) and clipped, minus the per-sample penalty; and the scale
        (None: off)."""
        rewards, scale = self.rewards, None
        if scaler is not None:
            rewards, scale = scaler.scaled(self.rewards, self.dones)
        if penalty is not None:
            rewards = rewards - penalty.cpu().numpy().reshape(rewards.shape)
        return rewards, scale

    @property
    def dones(self) -> np.ndarray:
        """Where an episode ended (terminated or truncated)."""
        return self.terminated | self.truncated

    def _values(
        self, policy: ActorCritic, obs: torch.Tensor, last_obs: np.ndarray, device: torch.device
    ) -> tuple[np.ndarray, np.ndarray]:
        """V(s_t) and V(s_{t+1}) in one forward over stored, last and final observations,
        read back to the host at once."""
        steps, envs = self.rewards.shape
        flat = steps * envs
        extra = np.concatenate([last_obs, self.final_obs[self.truncated]]).astype(np.float32)
        with torch.no_grad():
            every = torch.cat([obs, torch.from_numpy(extra).to(device)])
            all_values = policy.value(every).cpu().numpy()
        values = all_values[:flat].reshape(steps, envs)
        next_values = np.empty_like(values)
        next_values[:-1] = values[1:]
        next_values[-1] = all_values[flat : flat + envs]
        next_values[self.truncated] = all_values[flat + envs :]  # V(final obs) where cut
        return values, next_values

    @staticmethod
    def _advantages(steps: adv.Steps, config: PPOConfig) -> tuple[np.ndarray, np.ndarray]:
        if config.advantage_mode == "gae":
            return adv.gae(steps, config.gamma, config.gae_lambda)
        return adv.episodic(steps, config.gamma)
