"""Per-minibatch statistics rows and their once-per-update reduction into payload fields.

Rows are written into a preallocated device tensor during the update; :func:`reduce_update`
moves everything to the host with a single ``tolist()`` and applies each field's
definition (docs/design.md, the event contract): ``approx_kl`` over the minibatches evaluated
in the *last epoch* that ran (the number Stable-Baselines3 logs, and close to CleanRL's
last-minibatch value: the mean over every epoch would include epoch 0, where the policy
has barely moved, and read several times lower than the number those thresholds were set
for); clip fraction, ratios, entropy and gradient norms over every minibatch *evaluated*;
losses over the minibatches *applied*. Gradient norms include
the steps the non-finite guard skipped on purpose: those are exactly the NaN/inf norms the
health rules must see. A non-finite value propagates into the mean, min and max as NaN/inf
rather than being hidden.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import torch
from torch import Tensor

from ppo.buffer import Batch
from ppo.gradients import GradNorms
from ppo.losses import LossBreakdown

Reducer = Callable[[Sequence[float]], float]


def _mean(xs: Sequence[float]) -> float:
    if all(math.isfinite(x) for x in xs):
        return math.fsum(xs) / len(xs)
    return sum(xs) / len(xs)  # inf stays inf; NaN or inf - inf is NaN (fsum would raise)


def _max(xs: Sequence[float]) -> float:
    return math.nan if any(math.isnan(x) for x in xs) else max(xs)


def _min(xs: Sequence[float]) -> float:
    return math.nan if any(math.isnan(x) for x in xs) else min(xs)


def _count(xs: Sequence[float]) -> int:
    return int(math.fsum(xs))  # per-minibatch counts, carried as floats in the row


@dataclass(frozen=True)
class Column:
    """How one per-minibatch column becomes the payload field of the same name."""

    reduce: Reducer = _mean
    with_max: bool = False
    """Also ``<name>_max``: the largest minibatch value."""
    applied_only: bool = False
    """Over the applied minibatches only (None when none was); else over every evaluated."""
    last_epoch: bool = False
    """The mean over the last epoch's evaluated minibatches (``_max`` still covers all)."""


COLUMNS: Final[dict[str, Column]] = {
    "approx_kl": Column(with_max=True, last_epoch=True),
    "clip_fraction": Column(),
    "clip_fraction_lower": Column(),
    "ratio_mean": Column(),
    "ratio_min": Column(reduce=_min),
    "ratio_max": Column(reduce=_max),
    "entropy": Column(),
    "policy_loss": Column(applied_only=True),
    "value_loss": Column(applied_only=True),
    "kl_penalty": Column(applied_only=True),
    "total_loss": Column(applied_only=True),
    "grad_norm": Column(with_max=True),
    "grad_norm_actor": Column(),
    "grad_norm_critic": Column(),
    "grad_clip_scale": Column(),
    "nonfinite_ratios": Column(reduce=_count),
}
"""Columns of the per-minibatch statistics tensor, in order, with their reduction."""

_NAN = torch.tensor(math.nan)


def row_of(breakdown: LossBreakdown, norms: GradNorms) -> Tensor:
    """One statistics row (on the loss's device), in :data:`COLUMNS` order; a group norm the
    policy does not have (no separate actor and critic) is NaN here and dropped later."""
    s = breakdown.surrogate
    grad_norm = norms.total
    values = {
        "approx_kl": breakdown.approx_kl,
        "clip_fraction": s.clip_fraction,
        "clip_fraction_lower": _NAN if s.clip_fraction_lower is None else s.clip_fraction_lower,
        "ratio_mean": s.ratio_mean,
        "ratio_min": s.ratio_min,
        "ratio_max": s.ratio_max,
        "entropy": breakdown.entropy,
        "policy_loss": breakdown.policy_loss,
        "value_loss": breakdown.value_loss,
        "kl_penalty": breakdown.kl_penalty,
        "total_loss": breakdown.total_loss,
        "grad_norm": grad_norm,
        "grad_norm_actor": norms.groups.get("actor", _NAN),
        "grad_norm_critic": norms.groups.get("critic", _NAN),
        "grad_clip_scale": norms.scale,
        "nonfinite_ratios": breakdown.nonfinite_ratios.to(grad_norm.dtype),
    }
    return torch.stack([values[name] for name in COLUMNS])


@dataclass(frozen=True)
class BatchStats:
    """Rollout statistics taken before the update (before advantage normalisation)."""

    values: Tensor
    """advantage mean, advantage std, return mean, value mean, Var(R), Var(R - V), return std."""

    @classmethod
    def of(cls, batch: Batch) -> BatchStats:
        """Measure ``batch`` without leaving the device."""
        adv = batch.advantages.double()
        returns, values = batch.returns.double(), batch.values.double()
        std = adv.std() if adv.numel() > 1 else torch.zeros((), dtype=adv.dtype)
        return cls(
            torch.stack(
                [
                    adv.mean(),
                    std,
                    returns.mean(),
                    values.mean(),
                    returns.var(correction=0),
                    (returns - values).var(correction=0),
                    returns.std(correction=0),
                ]
            )  # kept in float64 to the payload: explained variance is a ratio of variances
        )


def reduce_update(
    rows: Tensor,
    applied: Sequence[int],
    last_epoch: Sequence[int],
    before: BatchStats,
    kl_final: Tensor | None,
) -> dict[str, Any]:
    """Payload fields from the evaluated rows, in one host read. ``applied`` and
    ``last_epoch`` are row indices: the applied minibatches, the last epoch's evaluated ones."""
    n_rows, n_cols = rows.shape
    extra = [before.values] + ([kl_final.reshape(1).double()] if kl_final is not None else [])
    flat = torch.cat([rows.reshape(-1).double(), *extra]).tolist()  # float32 -> 64 is exact
    table = [flat[i * n_cols : (i + 1) * n_cols] for i in range(n_rows)]
    tail = flat[n_rows * n_cols :]

    out: dict[str, Any] = {}
    for i, (name, column) in enumerate(COLUMNS.items()):
        picked = [table[r] for r in applied] if column.applied_only else table
        values = [row[i] for row in picked]
        if column.last_epoch:
            out[name] = column.reduce([table[r][i] for r in last_epoch]) if values else None
        else:
            out[name] = column.reduce(values) if values else None
        if column.with_max:
            out[f"{name}_max"] = _max(values) if values else None
    adv_mean, adv_std, ret_mean, val_mean, var_r, var_resid, ret_std = tail[:7]
    out.update(
        advantage_mean=adv_mean,
        advantage_std=adv_std,
        return_mean=ret_mean,
        return_std=ret_std,
        value_mean=val_mean,
        explained_variance=None if var_r == 0.0 else 1.0 - var_resid / var_r,
    )
    if kl_final is not None:
        out["kl_final"] = tail[7]
    return out
