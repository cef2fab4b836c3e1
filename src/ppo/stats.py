"""Per-minibatch statistics rows and their once-per-update reduction into payload fields.

Rows are written into a preallocated device tensor during the update; :func:`reduce_update`
moves everything to the host with a single ``tolist()`` and applies each field's
definition (DESIGN.md section 4): KL, clip fraction, ratios, entropy and gradient norms over
the minibatches *evaluated*; losses over the minibatches *applied*. Gradient norms include
the steps the non-finite guard skipped on purpose: those are exactly the NaN/inf norms the
health rules must see. A non-finite value propagates into the mean, min and max as NaN/inf
rather than being hidden.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import torch
from torch import Tensor

from ppo.buffer import Batch
from ppo.losses import LossBreakdown

COLUMNS: Final = (
    "approx_kl",
    "clip_fraction",
    "clip_fraction_lower",
    "ratio_mean",
    "ratio_min",
    "ratio_max",
    "entropy",
    "policy_loss",
    "value_loss",
    "kl_penalty",
    "total_loss",
    "grad_norm",
    "nonfinite_ratios",
)
"""Columns of the per-minibatch statistics tensor."""

_COL = {name: i for i, name in enumerate(COLUMNS)}
_NAN = torch.tensor(math.nan)


def row_of(breakdown: LossBreakdown, grad_norm: Tensor) -> Tensor:
    """One statistics row (on the loss's device), in :data:`COLUMNS` order."""
    s = breakdown.surrogate
    lower = _NAN if s.clip_fraction_lower is None else s.clip_fraction_lower
    return torch.stack(
        [
            breakdown.approx_kl,
            s.clip_fraction,
            lower,
            s.ratio_mean,
            s.ratio_min,
            s.ratio_max,
            breakdown.entropy,
            breakdown.policy_loss,
            breakdown.value_loss,
            breakdown.kl_penalty,
            breakdown.total_loss,
            grad_norm,
            breakdown.nonfinite_ratios.to(grad_norm.dtype),
        ]
    )


@dataclass(frozen=True)
class BatchStats:
    """Rollout statistics taken before the update (before advantage normalisation)."""

    values: Tensor
    """advantage mean, advantage std, return mean, value mean, Var(R), Var(R - V)."""

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
                ]
            )  # kept in float64 to the payload: explained variance is a ratio of variances
        )


def _mean(xs: Sequence[float]) -> float:
    if all(math.isfinite(x) for x in xs):
        return math.fsum(xs) / len(xs)
    return sum(xs) / len(xs)  # inf stays inf; NaN or inf - inf is NaN (fsum would raise)


def _extreme(xs: Sequence[float], pick: Any) -> float:
    return math.nan if any(math.isnan(x) for x in xs) else float(pick(xs))


def reduce_update(
    rows: Tensor, applied: Sequence[int], before: BatchStats, kl_final: Tensor | None
) -> dict[str, Any]:
    """Payload fields from the evaluated rows, in one host read."""
    n_rows, n_cols = rows.shape
    extra = [before.values] + ([kl_final.reshape(1).double()] if kl_final is not None else [])
    flat = torch.cat([rows.reshape(-1).double(), *extra]).tolist()  # float32 -> 64 is exact
    table = [flat[i * n_cols : (i + 1) * n_cols] for i in range(n_rows)]
    tail = flat[n_rows * n_cols :]

    def col(name: str, which: Sequence[int] | None = None) -> list[float]:
        picked = table if which is None else [table[i] for i in which]
        return [r[_COL[name]] for r in picked]

    out: dict[str, Any] = {
        "approx_kl": _mean(col("approx_kl")),
        "approx_kl_max": _extreme(col("approx_kl"), max),
        "clip_fraction": _mean(col("clip_fraction")),
        "clip_fraction_lower": _mean(col("clip_fraction_lower")),
        "ratio_mean": _mean(col("ratio_mean")),
        "ratio_min": _extreme(col("ratio_min"), min),
        "ratio_max": _extreme(col("ratio_max"), max),
        "entropy": _mean(col("entropy")),
        "nonfinite_ratios": int(sum(col("nonfinite_ratios"))),
    }
    for name in ("policy_loss", "value_loss", "kl_penalty", "total_loss"):
        out[name] = _mean(col(name, applied)) if applied else None
    out["grad_norm"] = _mean(col("grad_norm"))
    out["grad_norm_max"] = _extreme(col("grad_norm"), max)
    adv_mean, adv_std, ret_mean, val_mean, var_r, var_resid = tail[:6]
    out.update(
        advantage_mean=adv_mean,
        advantage_std=adv_std,
        return_mean=ret_mean,
        value_mean=val_mean,
        explained_variance=None if var_r == 0.0 else 1.0 - var_resid / var_r,
    )
    if kl_final is not None:
        out["kl_final"] = tail[6]
    return out
