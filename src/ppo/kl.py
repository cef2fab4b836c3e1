"""Per-sample estimators of KL(pi_old || pi_new) from log-probabilities of old samples.

PPO samples actions from pi_old, so with r = pi_new(a|s) / pi_old(a|s) every estimator
below is a function of log r alone. Peers disagree on which one "approx_kl" means; here the
config names it and the run_started event records it. The log-ratio is guarded before any
exp(): non-finite entries are replaced (and counted by the caller) and the rest clamped,
so one wild sample cannot turn the whole statistic into inf.
"""

from __future__ import annotations

from typing import Final, get_args

import torch
from torch import Tensor

from ppo.config import KLEstimator

ESTIMATORS: Final[tuple[str, ...]] = get_args(KLEstimator)
"""Names accepted by :func:`estimate`."""

LOW_VAR_KL_BOUND: Final = 10.0
"""verl's ``low_var_kl`` clamps k3 to [-10, 10] per sample."""


def guarded_log_ratio(
    logp_new: Tensor, logp_old: Tensor, clamp: float = 20.0
) -> tuple[Tensor, Tensor]:
    """log(pi_new / pi_old) clamped to [-clamp, clamp], NaN replaced by 0 (ratio 1).

    Returns the guarded log-ratio and the number of entries that were not finite before
    the guard (a 0-d tensor, kept on the device).
    """
    raw = logp_new - logp_old
    nonfinite = (~torch.isfinite(raw)).sum()
    return torch.nan_to_num(raw, nan=0.0).clamp(-clamp, clamp), nonfinite


def estimate_from_log_ratio(log_ratio: Tensor, estimator: KLEstimator) -> Tensor:
    """Per-sample KL(pi_old || pi_new) estimate from an already guarded log-ratio."""
    # Schulman, "Approximating KL Divergence" (http://joschu.net/blog/kl-approx.html):
    # with x ~ pi_old and r = pi_new/pi_old, k1 = -log r is unbiased but high-variance,
    # k2 = (log r)^2 / 2 is biased but low-variance, k3 = (r - 1) - log r is unbiased and
    # always >= 0. "abs" (|log r|) is a biased magnitude used by some RLHF trainers.
    if estimator == "k1":
        return -log_ratio
    if estimator == "k2":
        return 0.5 * log_ratio.square()
    if estimator == "k3":
        return torch.expm1(log_ratio) - log_ratio
    if estimator == "low_var_kl":  # verl's name for k3 with a per-sample clamp
        return (torch.expm1(log_ratio) - log_ratio).clamp(-LOW_VAR_KL_BOUND, LOW_VAR_KL_BOUND)
    if estimator == "abs":
        return log_ratio.abs()
    raise ValueError(f"kl_estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")


def estimate(
    logp_new: Tensor, logp_old: Tensor, estimator: KLEstimator, clamp: float = 20.0
) -> Tensor:
    """Per-sample estimate of KL(pi_old || pi_new); the log-ratio is guarded first."""
    log_ratio, _ = guarded_log_ratio(logp_new, logp_old, clamp)
    return estimate_from_log_ratio(log_ratio, estimator)
