"""An update's statistics, typed from the loss to the payload, read back once per update.

:class:`MinibatchStats` is one minibatch's measurements: 0-d tensors while training, kept
as a row of a preallocated device table, and floats once :func:`reduce_update` has read
the whole table back with a single ``tolist()``. :class:`RolloutStats` is the same for the
rollout before the update. :func:`reduce_update` applies each field's definition
(docs/design.md, section 4) and returns :class:`UpdateStats`:

- ``approx_kl`` over the minibatches evaluated in the *last epoch* that ran (the number
  Stable-Baselines3 logs; the mean over every epoch would include epoch 0, where the
  policy has barely moved, and read several times lower than the thresholds peers set);
- clip fraction, ratios, entropy and gradient norms over every minibatch *evaluated*
  (gradient norms include the steps the non-finite guard skipped on purpose: those are
  exactly the NaN/inf norms the health rules must see);
- losses over the minibatches *applied*.

A non-finite value propagates into a mean, min or max as NaN/inf rather than being hidden.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from typing import Generic, TypeVar

import torch
from torch import Tensor

from ppo.core.gradients import GradNorms
from ppo.core.losses import LossBreakdown
from ppo.rollout.buffer import Batch

T = TypeVar("T", Tensor, float)


@dataclass(frozen=True)
class MinibatchStats(Generic[T]):
    """One minibatch: tensors in a row of the device table, floats once read back.

    The field order is the table's column order. A measurement that does not apply (no
    dual clip, no separate actor and critic) is NaN in the table and dropped later."""

    approx_kl: T
    clip_fraction: T
    clip_fraction_lower: T
    ratio_mean: T
    ratio_min: T
    ratio_max: T
    ratio_std: T
    entropy: T
    policy_loss: T
    value_loss: T
    kl_penalty: T
    entropy_penalty: T
    ref_kl: T
    ref_kl_loss: T
    total_loss: T
    grad_norm: T
    grad_norm_actor: T
    grad_norm_critic: T
    grad_clip_scale: T
    nonfinite_ratios: T

    @classmethod
    def measure(cls, loss: LossBreakdown, norms: GradNorms) -> MinibatchStats[Tensor]:
        """The measurements of one minibatch's loss and gradients (still on the device)."""
        s = loss.surrogate
        nan = torch.full_like(loss.approx_kl, math.nan)  # on the table's device
        return MinibatchStats(
            approx_kl=loss.approx_kl,
            clip_fraction=s.clip_fraction,
            clip_fraction_lower=nan if s.clip_fraction_lower is None else s.clip_fraction_lower,
            ratio_mean=s.ratio_mean,
            ratio_min=s.ratio_min,
            ratio_max=s.ratio_max,
            ratio_std=s.ratio_std,
            entropy=loss.entropy,
            policy_loss=loss.policy_loss,
            value_loss=loss.value_loss,
            kl_penalty=loss.kl_penalty,
            entropy_penalty=loss.entropy_penalty,
            ref_kl=nan if loss.ref_kl is None else loss.ref_kl,
            ref_kl_loss=loss.ref_kl_loss,
            total_loss=loss.total_loss,
            grad_norm=norms.total,
            grad_norm_actor=norms.groups.get("actor", nan),
            grad_norm_critic=norms.groups.get("critic", nan),
            grad_clip_scale=norms.scale,
            nonfinite_ratios=loss.nonfinite_ratios.to(norms.total.dtype),
        )

    def row(self: MinibatchStats[Tensor]) -> Tensor:
        """The table row of these measurements."""
        return torch.stack([getattr(self, f.name) for f in fields(self)])


WIDTH = len(fields(MinibatchStats))
"""Columns of the device table: one per field of :class:`MinibatchStats`."""
COLUMNS = {f.name: i for i, f in enumerate(fields(MinibatchStats))}
"""Each field's column in the device table."""


@dataclass(frozen=True)
class RolloutStats(Generic[T]):
    """The rollout before the update (advantages before normalisation), in float64: explained
    variance is a ratio of variances."""

    advantage_mean: T
    advantage_std: T
    return_mean: T
    return_std: T
    value_mean: T
    return_var: T
    residual_var: T
    """Var(R - V)."""
    td_error_mean: T
    """Mean one-step TD error (NaN: the batch carries no rollout measures)."""
    reward_penalty_mean: T
    """Mean reference-KL penalty per sample (NaN: none was subtracted)."""

    @classmethod
    def measure(cls, batch: Batch) -> RolloutStats[Tensor]:
        """Measure ``batch`` without leaving the device. Returns and values are reported
        in the environment's reward units: times the return scale when it is on."""
        adv = batch.advantages.double()
        returns, values = batch.returns.double(), batch.values.double()
        measures = batch.measures
        if measures is not None and measures.return_scale is not None:
            returns, values = returns * measures.return_scale, values * measures.return_scale
        std = adv.std() if adv.numel() > 1 else adv.new_zeros(())
        nan = adv.new_tensor(math.nan)
        penalty = None if measures is None else measures.reward_penalty
        return RolloutStats(
            advantage_mean=adv.mean(),
            advantage_std=std,
            return_mean=returns.mean(),
            return_std=returns.std(correction=0),
            value_mean=values.mean(),
            return_var=returns.var(correction=0),
            residual_var=(returns - values).var(correction=0),
            td_error_mean=nan if measures is None else measures.td_errors.double().mean(),
            reward_penalty_mean=nan if penalty is None else penalty.double().mean(),
        )

    @property
    def explained_variance(self: RolloutStats[float]) -> float | None:
        """1 - Var(R - V) / Var(R); None when Var(R) = 0 (undefined, not perfect, not 0)."""
        return None if self.return_var == 0.0 else 1.0 - self.residual_var / self.return_var


@dataclass(frozen=True)
class LossMeans:
    """The loss terms, each a mean over the applied minibatches (None: none was applied)."""

    policy_loss: float | None
    value_loss: float | None
    kl_penalty: float | None
    entropy_penalty: float | None
    ref_kl_loss: float | None
    total_loss: float | None

    @classmethod
    def over(cls, applied: Sequence[MinibatchStats[float]]) -> LossMeans:
        return cls(*(mean(over(applied, f.name)) if applied else None for f in fields(cls)))


@dataclass(frozen=True)
class UpdateStats:
    """One update's statistics by their payload definitions (None: nothing to measure)."""

    approx_kl: float
    approx_kl_max: float
    clip_fraction: float
    clip_fraction_lower: float
    ratio_mean: float
    ratio_min: float
    ratio_max: float
    ratio_std: float
    entropy: float
    ref_kl: float
    """Mean over the evaluated minibatches (NaN: no reference)."""
    losses: LossMeans
    grad_norm: float
    grad_norm_max: float
    grad_norm_actor: float
    grad_norm_critic: float
    grad_clip_scale: float
    nonfinite_ratios: int
    rollout: RolloutStats[float]
    kl_final: float | None


def mean(xs: Sequence[float]) -> float:
    """The mean; exact (fsum) when every value is finite, else NaN or inf as it comes."""
    if all(math.isfinite(x) for x in xs):
        return math.fsum(xs) / len(xs)
    return sum(xs) / len(xs)  # inf stays inf; NaN or inf - inf is NaN (fsum would raise)


def largest(xs: Sequence[float]) -> float:
    return math.nan if any(math.isnan(x) for x in xs) else max(xs)


def smallest(xs: Sequence[float]) -> float:
    return math.nan if any(math.isnan(x) for x in xs) else min(xs)


def _read_host(
    rows: Tensor, rollout: RolloutStats[Tensor], kl_final: Tensor | None
) -> tuple[list[MinibatchStats[float]], RolloutStats[float], float | None]:
    """Every row, the rollout's statistics and the final KL as Python floats, in one host
    read (float32 -> float64 is exact)."""
    n_rows = rows.shape[0]
    tail = [torch.stack(list(astuple(rollout)))]
    if kl_final is not None:
        tail.append(kl_final.reshape(1).double())
    flat = torch.cat([rows.reshape(-1).double(), *tail]).tolist()
    every = [MinibatchStats[float](*flat[i * WIDTH : (i + 1) * WIDTH]) for i in range(n_rows)]
    after = flat[n_rows * WIDTH :]
    host_rollout = RolloutStats[float](*after[: len(fields(RolloutStats))])
    return every, host_rollout, after[-1] if kl_final is not None else None


def over(rows: Sequence[MinibatchStats[float]], name: str) -> list[float]:
    """One statistic's column over ``rows``."""
    return [getattr(row, name) for row in rows]


def reduce_update(
    rows: Tensor,
    applied: Sequence[int],
    last_epoch: Sequence[int],
    rollout: RolloutStats[Tensor],
    kl_final: Tensor | None,
) -> UpdateStats:
    """The update's statistics from the evaluated rows, in one host read. ``applied`` and
    ``last_epoch`` are row indices: the applied minibatches, the last epoch's evaluated ones.
    ``rows`` holds at least one row (an update evaluates at least one minibatch)."""
    every, host_rollout, host_kl_final = _read_host(rows, rollout, kl_final)
    last = [every[i] for i in last_epoch]
    return UpdateStats(
        approx_kl=mean(over(last, "approx_kl")),
        approx_kl_max=largest(over(every, "approx_kl")),
        clip_fraction=mean(over(every, "clip_fraction")),
        clip_fraction_lower=mean(over(every, "clip_fraction_lower")),
        ratio_mean=mean(over(every, "ratio_mean")),
        ratio_min=smallest(over(every, "ratio_min")),
        ratio_max=largest(over(every, "ratio_max")),
        ratio_std=mean(over(every, "ratio_std")),
        entropy=mean(over(every, "entropy")),
        ref_kl=mean(over(every, "ref_kl")),
        losses=LossMeans.over([every[i] for i in applied]),
        grad_norm=mean(over(every, "grad_norm")),
        grad_norm_max=largest(over(every, "grad_norm")),
        grad_norm_actor=mean(over(every, "grad_norm_actor")),
        grad_norm_critic=mean(over(every, "grad_norm_critic")),
        grad_clip_scale=mean(over(every, "grad_clip_scale")),
        nonfinite_ratios=int(math.fsum(over(every, "nonfinite_ratios"))),
        rollout=host_rollout,
        kl_final=host_kl_final,
    )
