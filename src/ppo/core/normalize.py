"""Running statistics for observation normalisation and reward scaling, merged across ranks.

Continuous control often learns little without them (Engstrom et al. 2020,
"Implementation Matters in Deep RL"; SB3's ``VecNormalize``, CleanRL's
``NormalizeObservation`` and ``NormalizeReward`` wrappers):

- observations are centred and divided by their running standard deviation, then clipped
  to +-``obs_clip``;
- rewards are divided by the running standard deviation of the discounted return: per
  environment, G <- gamma * G + r (reset to 0 where an episode ended) feeds a running
  variance; rewards are not centred, so the sign of a reward is kept; then they are
  clipped to +-``reward_clip`` (SB3's ``clip_reward``).

The statistics change once per rollout, not per step: a rollout is normalised with the
statistics in force when it started (so every sample of one batch, the bootstrap
observations included, is on the same scale), then its raw observations are folded in.
Across processes each rank contributes the sums of its own samples to one all-reduce, so
every rank holds the same statistics after every rollout, and rank 0's checkpoint holds
the job's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

import numpy as np
import torch

from ppo.distributed.world import SINGLE, World

EPSILON: Final = 1e-8
"""Added to a variance before its square root."""


class RunningMoments:
    """Count, mean and variance of every sample seen so far, per feature."""

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.count = 0
        self.mean = np.zeros(shape, dtype=np.float64)
        self.var = np.ones(shape, dtype=np.float64)

    @property
    def std(self) -> np.ndarray:
        """sqrt(var + eps)."""
        return np.sqrt(self.var + EPSILON)

    def update(self, samples: np.ndarray, world: World = SINGLE, what: str = "statistics") -> None:
        """Fold (n, *shape) ``samples`` from this rank (and the same call on every other
        rank) in, with Chan et al.'s merge of two sets' moments."""
        flat = np.asarray(samples, dtype=np.float64).reshape(-1, *self.mean.shape)
        shifted = flat - self.mean  # centred on the running mean: no catastrophic cancellation
        sums = [[flat.shape[0]], shifted.sum(0).ravel(), (shifted**2).sum(0).ravel()]
        total = world.reduce(torch.from_numpy(np.concatenate(sums)), "sum", what).numpy()
        n = round(float(total[0]))
        if n == 0:
            return
        size = self.mean.size
        s1 = total[1 : 1 + size].reshape(self.mean.shape) / n
        s2 = total[1 + size :].reshape(self.mean.shape) / n
        batch_mean, batch_var = self.mean + s1, np.maximum(s2 - s1**2, 0.0)
        merged = self.count + n
        delta = batch_mean - self.mean
        if self.count == 0:
            self.mean, self.var = batch_mean, batch_var
        else:
            m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / merged
            self.mean, self.var = self.mean + delta * n / merged, m2 / merged
        self.count = merged

    def state_dict(self) -> dict[str, Any]:
        """Builtins only: loads with ``torch.load(weights_only=True)``."""
        return {"count": self.count, "mean": self.mean.tolist(), "var": self.var.tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore saved moments; a value of the wrong type, shape or range is a
        ValueError or TypeError (a checkpoint is input)."""
        mean = np.asarray(state["mean"], dtype=np.float64)
        var = np.asarray(state["var"], dtype=np.float64)
        for name, array in (("statistics", mean), ("variances", var)):
            if array.shape != self.mean.shape:
                raise ValueError(f"{name} of shape {array.shape}, expected {self.mean.shape}")
        if not (np.isfinite(mean).all() and np.isfinite(var).all() and (var >= 0).all()):
            raise ValueError("statistics that are not finite (or a negative variance)")
        count = state["count"]
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"a count that is not an integer >= 0: {count!r}"[:120])
        self.count, self.mean, self.var = count, mean, var


class ObservationNormalizer:
    """(obs - mean) / std, clipped to +-``clip``; the identity until the first update."""

    def __init__(self, obs_dim: int, clip: float) -> None:
        self.moments = RunningMoments((obs_dim,))
        self.clip = clip
        self._refresh()

    def _refresh(self) -> None:
        self._mean = self.moments.mean.astype(np.float32)
        self._inv_std = (1.0 / self.moments.std).astype(np.float32)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """``obs`` (..., obs_dim) on the normalised scale, as float32."""
        if self.moments.count == 0:
            return np.asarray(obs, dtype=np.float32)
        out: np.ndarray = np.clip((obs - self._mean) * self._inv_std, -self.clip, self.clip)
        return out.astype(np.float32, copy=False)

    def update(self, raw: np.ndarray, world: World = SINGLE) -> None:
        """Fold one rollout's raw observations in (every rank calls this together)."""
        self.moments.update(raw, world, "observation statistics")
        self._refresh()

    def state_dict(self) -> dict[str, Any]:
        return self.moments.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.moments.load_state_dict(state)
        self._refresh()


class ReturnScaler:
    """Running variance of the discounted return, over every environment of every rank."""

    def __init__(
        self, num_envs: int, gamma: float, clip: float | None = None, world: World = SINGLE
    ) -> None:
        self.gamma = gamma
        self.clip = clip
        self.world = world
        self.discounted = np.zeros(num_envs, dtype=np.float64)
        self.moments = RunningMoments()

    @property
    def scale(self) -> float:
        """The divisor in force: sqrt(var + eps) (1 before any data)."""
        return float(self.moments.std)

    def scaled(self, rewards: np.ndarray, dones: np.ndarray) -> tuple[np.ndarray, float]:
        """One rollout's rewards divided by the scale updated with them, then clipped; and
        the scale."""
        scale = self.update(rewards, dones)
        out = rewards / np.float32(scale)
        if self.clip is not None:
            out = np.clip(out, -self.clip, self.clip)
        return out, scale

    def update(self, rewards: np.ndarray, dones: np.ndarray) -> float:
        """Fold one rollout's (num_steps, num_envs) rewards (on every rank together);
        returns the new scale."""
        seen = np.empty(rewards.shape, dtype=np.float64)
        for t in range(rewards.shape[0]):
            self.discounted = self.gamma * self.discounted + rewards[t]
            seen[t] = self.discounted
            self.discounted[dones[t]] = 0.0
        self.moments.update(seen, self.world, "return statistics")
        return self.scale

    def state_dict(self) -> dict[str, Any]:
        """Builtins only: loads with ``torch.load(weights_only=True)``."""
        return {"discounted": self.discounted.tolist(), **self.moments.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        discounted = np.asarray(state["discounted"], dtype=np.float64)
        if discounted.shape != self.discounted.shape or not np.isfinite(discounted).all():
            raise ValueError(
                f"discounted returns of shape {discounted.shape}, expected "
                f"{self.discounted.shape} finite values"
            )
        self.moments.load_state_dict(state)
        self.discounted = discounted


class NormalizationSettings(Protocol):
    """The settings :class:`Normalization` reads; :class:`ppo.config.PPOConfig` has them all."""

    @property
    def normalize_returns(self) -> bool: ...

    @property
    def gamma(self) -> float: ...

    @property
    def reward_clip(self) -> float | None: ...

    @property
    def normalize_obs(self) -> bool: ...

    @property
    def obs_clip(self) -> float: ...


class Normalization:
    """A run's normalisation statistics (either may be off), as checkpoints hold them."""

    def __init__(
        self, config: NormalizationSettings, num_envs: int, obs_dim: int, world: World
    ) -> None:
        self.returns = None
        if config.normalize_returns:
            self.returns = ReturnScaler(num_envs, config.gamma, config.reward_clip, world)
        self.observations = None
        if config.normalize_obs:
            self.observations = ObservationNormalizer(obs_dim, config.obs_clip)

    def _held(self) -> dict[str, ReturnScaler | ObservationNormalizer]:
        held = {"returns": self.returns, "observations": self.observations}
        return {name: x for name, x in held.items() if x is not None}

    def state_dict(self, shared: bool = False) -> dict[str, Any]:
        """Checkpoint entries; ``shared``: only what every rank holds alike (the running
        moments, not a rank's own discounted returns)."""
        state = {name: x.state_dict() for name, x in self._held().items()}
        if shared and self.returns is not None:
            state["returns"] = self.returns.moments.state_dict()
        return state

    @property
    def names(self) -> tuple[str, ...]:
        """The checkpoint entries this run's statistics need."""
        return tuple(self._held())

    def load(self, saved: Mapping[str, Any]) -> None:
        """Load each statistic from ``saved[name]``; a ValueError names the bad one."""
        for name, holder in self._held().items():
            try:
                holder.load_state_dict(saved[name])
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
                raise ValueError(f"unusable {name} statistics: {exc}") from None
