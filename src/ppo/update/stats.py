"""An update's minibatch table and its reductions, typed from the loss to the payload.

:class:`MinibatchStats` is one minibatch's measurements: 0-d tensors while training, kept
as a row of a preallocated device table, and floats once :func:`reduce_update` has read
the whole table back with a single ``tolist()``. The classic update and the token-level one
fill the same table. Each column declares, beside it, the figures of the update it is
reduced to (:class:`Figure`: the payload field, the minibatches it is reduced over, and
how), so that each figure's definition (docs/design.md, section 4) is written once:

- ``approx_kl`` over the minibatches evaluated in the *last epoch* that ran (the number
  Stable-Baselines3 logs; the mean over every epoch would include epoch 0, where the
  policy has barely moved, and read several times lower than the thresholds peers set);
- clip fractions, ratios, entropy and gradient norms over every minibatch *evaluated*,
  the one an early stop refused included (gradient norms include the steps the non-finite
  guard skipped on purpose: those are exactly the NaN/inf norms the health rules must see);
- losses over the minibatches *applied* (None when none was).

:class:`RolloutStats` is the classic rollout before the update. A non-finite value
propagates into a mean, min or max as NaN/inf rather than being hidden.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass, fields
from typing import Annotated, Any, Generic, Literal, TypeAlias, TypeVar, get_type_hints

import torch
from torch import Tensor

from ppo.core.gradients import GradNorms
from ppo.core.losses import LossBreakdown
from ppo.rollout.buffer import Batch

T = TypeVar("T", Tensor, float)

Over: TypeAlias = Literal["evaluated", "applied", "last_epoch"]
"""The minibatches a figure is reduced over: every one evaluated (the one an early stop
refused and the skipped ones included), those whose step was applied, or those evaluated
in the last epoch that ran."""


def mean(xs: Sequence[float]) -> float:
    """The mean; exact (fsum) when every value is finite, else NaN or inf as it comes."""
    if all(math.isfinite(x) for x in xs):
        return math.fsum(xs) / len(xs)
    return sum(xs) / len(xs)  # inf stays inf; NaN or inf - inf is NaN (fsum would raise)


def largest(xs: Sequence[float]) -> float:
    return math.nan if any(math.isnan(x) for x in xs) else max(xs)


def smallest(xs: Sequence[float]) -> float:
    return math.nan if any(math.isnan(x) for x in xs) else min(xs)


def count(xs: Sequence[float]) -> int:
    """A count summed over minibatches (each row holds a whole number)."""
    return int(math.fsum(xs))


@dataclass(frozen=True)
class Figure:
    """One figure of an update: over which minibatches its column is reduced, how, and
    the payload field it fills (None: the column's own name)."""

    over: Over
    reduce: Callable[[Sequence[float]], float]
    name: str | None = None


MEAN = Figure("evaluated", mean)
"""The column's mean over every evaluated minibatch."""
APPLIED_MEAN = Figure("applied", mean)
"""A loss term's mean over the applied minibatches."""


@dataclass(frozen=True)
class MinibatchStats(Generic[T]):
    """One minibatch: tensors in a row of the device table, floats once read back.

    The field order is the table's column order; each column's annotation holds the
    figures it is reduced to. A measurement that does not apply (no dual clip, no
    separate actor and critic, no critic) is NaN in the table and the payload leaves it
    absent (:class:`ppo.update.payload.Measured`)."""

    approx_kl: Annotated[
        T, Figure("last_epoch", mean), Figure("evaluated", largest, "approx_kl_max")
    ]
    clip_fraction: Annotated[T, MEAN]
    clip_fraction_lower: Annotated[T, MEAN]
    clip_fraction_low: Annotated[T, MEAN]
    clip_fraction_high: Annotated[T, MEAN]
    ratio_mean: Annotated[T, MEAN]
    ratio_min: Annotated[T, Figure("evaluated", smallest)]
    ratio_max: Annotated[T, Figure("evaluated", largest)]
    ratio_std: Annotated[T, MEAN]
    entropy: Annotated[T, MEAN]
    policy_loss: Annotated[T, APPLIED_MEAN]
    value_loss: Annotated[T, APPLIED_MEAN]
    kl_penalty: Annotated[T, APPLIED_MEAN]
    entropy_penalty: Annotated[T, APPLIED_MEAN]
    ref_kl: Annotated[T, MEAN]
    ref_kl_loss: Annotated[T, APPLIED_MEAN]
    total_loss: Annotated[T, APPLIED_MEAN]
    grad_norm: Annotated[T, MEAN, Figure("evaluated", largest, "grad_norm_max")]
    grad_norm_actor: Annotated[T, MEAN]
    grad_norm_critic: Annotated[T, MEAN]
    grad_clip_scale: Annotated[T, MEAN]
    nonfinite_ratios: Annotated[T, Figure("evaluated", count)]

    @classmethod
    def measure(cls, loss: LossBreakdown, norms: GradNorms) -> MinibatchStats[Tensor]:
        """The measurements of one minibatch's loss and gradients (still on the device)."""
        s = loss.surrogate
        nan = torch.full_like(loss.approx_kl, math.nan)  # on the table's device
        return MinibatchStats(
            approx_kl=loss.approx_kl,
            clip_fraction=s.clip_fraction,
            clip_fraction_lower=nan if s.clip_fraction_lower is None else s.clip_fraction_lower,
            clip_fraction_low=s.clip_fraction_low,
            clip_fraction_high=s.clip_fraction_high,
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
FIGURES: dict[str, tuple[str, Figure]] = {
    figure.name or name: (name, figure)
    for name, hint in get_type_hints(MinibatchStats, include_extras=True).items()
    for figure in hint.__metadata__
}
"""Every figure of an update reduced from the table, by name: the column it reads and its
reduction."""


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
class UpdateStats:
    """One update's figures as :data:`FIGURES` defines them (None: no minibatch applied),
    and what it measured beside the table."""

    approx_kl: float
    approx_kl_max: float
    clip_fraction: float
    clip_fraction_lower: float
    clip_fraction_low: float
    clip_fraction_high: float
    ratio_mean: float
    ratio_min: float
    ratio_max: float
    ratio_std: float
    entropy: float
    policy_loss: float | None
    value_loss: float | None
    kl_penalty: float | None
    entropy_penalty: float | None
    ref_kl: float
    """Mean over the evaluated minibatches (NaN: no reference)."""
    ref_kl_loss: float | None
    total_loss: float | None
    grad_norm: float
    grad_norm_max: float
    grad_norm_actor: float
    grad_norm_critic: float
    grad_clip_scale: float
    nonfinite_ratios: int
    rollout: RolloutStats[float] | None
    """The classic rollout's statistics (None: the update measured its own)."""
    kl_final: float | None


def _read_host(
    rows: Tensor, rollout: RolloutStats[Tensor] | None, kl_final: Tensor | None
) -> tuple[list[MinibatchStats[float]], RolloutStats[float] | None, float | None]:
    """Every row, the rollout's statistics and the final KL as Python floats, in one host
    read (float32 -> float64 is exact)."""
    n_rows = rows.shape[0]
    tail = [] if rollout is None else [torch.stack(list(astuple(rollout)))]
    if kl_final is not None:
        tail.append(kl_final.reshape(1).double())
    flat = torch.cat([rows.reshape(-1).double(), *tail]).tolist()
    every = [MinibatchStats[float](*flat[i * WIDTH : (i + 1) * WIDTH]) for i in range(n_rows)]
    after = flat[n_rows * WIDTH :]
    host_rollout = None if rollout is None else RolloutStats[float](*after[:_ROLLOUT_WIDTH])
    return every, host_rollout, after[-1] if kl_final is not None else None


_ROLLOUT_WIDTH = len(fields(RolloutStats))


def over(rows: Sequence[MinibatchStats[float]], name: str) -> list[float]:
    """One statistic's column over ``rows``."""
    return [getattr(row, name) for row in rows]


def reduce_update(
    rows: Tensor,
    applied: Sequence[int],
    last_epoch: Sequence[int],
    rollout: RolloutStats[Tensor] | None = None,
    kl_final: Tensor | None = None,
) -> UpdateStats:
    """The update's figures from the evaluated rows, in one host read. ``applied`` and
    ``last_epoch`` are row indices: the applied minibatches, the last epoch's evaluated ones.
    ``rows`` holds at least one row (an update evaluates at least one minibatch)."""
    every, host_rollout, host_kl_final = _read_host(rows, rollout, kl_final)
    chosen: dict[Over, list[MinibatchStats[float]]] = {
        "evaluated": every,
        "applied": [every[i] for i in applied],
        "last_epoch": [every[i] for i in last_epoch],
    }
    figures: dict[str, Any] = {}
    for name, (source, figure) in FIGURES.items():
        values = over(chosen[figure.over], source)
        figures[name] = figure.reduce(values) if values else None
    return UpdateStats(**figures, rollout=host_rollout, kl_final=host_kl_final)
