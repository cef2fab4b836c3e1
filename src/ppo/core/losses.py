"""The PPO loss as pure functions of tensors: (loss, typed breakdown of detached tensors).

No ``.item()`` and no Python branching on tensor values, so a caller can keep every
statistic on the device and read them all at once per update. Definitions follow
docs/design.md, section 4: clip fraction is the share of samples with |r - 1| > clip_range
(SB3/CleanRL), the KL penalty is ``kl_coef * mean(estimator)`` with the configured
estimator, the reference-KL loss is ``ref_coef * mean KL(pi_theta || pi_ref)`` on the
minibatch's samples (verl's ``use_kl_loss``), and the dual clip is Ye et al. 2020
("Mastering Complex Control in MOBA Games with Deep Reinforcement Learning") as implemented
in verl's ``compute_policy_loss``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from ppo.core.choices import LOSS_AGG_MODES, LossAggMode
from ppo.core.kl import LOG_RATIO_CLAMP, KLEstimator, estimate_from_log_ratio, guarded_log_ratio


class LossSettings(Protocol):
    """The settings :func:`ppo_loss` reads; :class:`ppo.config.PPOConfig` has them all (the
    maths names what it needs and never imports the config)."""

    @property
    def log_ratio_clamp(self) -> float: ...

    @property
    def clip_range(self) -> float: ...

    @property
    def clip_ratio_c(self) -> float | None: ...

    @property
    def clip_range_vf(self) -> float | None: ...

    @property
    def vf_coef(self) -> float: ...

    @property
    def min_entropy(self) -> float | None: ...

    @property
    def min_entropy_coef(self) -> float: ...

    @property
    def kl_estimator(self) -> KLEstimator: ...

    @property
    def ref_kl_loss_estimator(self) -> KLEstimator: ...


@dataclass(frozen=True)
class SurrogateStats:
    """Detached statistics of the clipped surrogate."""

    clip_fraction: Tensor
    clip_fraction_lower: Tensor | None
    ratio_mean: Tensor
    ratio_min: Tensor
    ratio_max: Tensor
    ratio_std: Tensor
    clip_fraction_low: Tensor
    """Share of samples whose clipped term the loss takes at the lower bound (r < 1 -
    clip_range, A < 0): TRL's clip_ratio/low_mean."""
    clip_fraction_high: Tensor
    """The same at the upper bound (r > 1 + clip_range, A > 0): TRL's clip_ratio/high_mean."""


@dataclass(frozen=True)
class LossInputs:
    """One minibatch: new policy outputs next to what the rollout recorded."""

    logp_new: Tensor
    logp_old: Tensor
    entropy: Tensor
    values: Tensor
    values_old: Tensor
    returns: Tensor
    advantages: Tensor
    logp_ref: Tensor | None = None
    """log pi_ref(a|s) of the frozen reference policy (None: no reference KL)."""


@dataclass(frozen=True)
class LossBreakdown:
    """Every piece of the total loss, detached; 0-d tensors on the loss's device."""

    policy_loss: Tensor
    value_loss: Tensor
    entropy: Tensor
    entropy_penalty: Tensor
    approx_kl: Tensor
    kl_penalty: Tensor
    ref_kl: Tensor | None
    """Mean per-sample KL(pi_theta || pi_ref) (None: no reference)."""
    ref_kl_loss: Tensor
    """``ref_coef * ref_kl``, the term added to the total (0 without a reference)."""
    total_loss: Tensor
    surrogate: SurrogateStats
    nonfinite_ratios: Tensor


def clipped_surrogate(
    log_ratio: Tensor, advantages: Tensor, clip_range: float, clip_ratio_c: float | None = None
) -> tuple[Tensor, SurrogateStats]:
    """PPO clipped surrogate loss (to minimise), optionally dual-clipped: the mean of
    :func:`surrogate_terms` over the samples."""
    per_sample, stats = surrogate_terms(log_ratio, advantages, clip_range, clip_ratio_c)
    return per_sample.mean(), stats


def surrogate_terms(
    log_ratio: Tensor, advantages: Tensor, clip_range: float, clip_ratio_c: float | None = None
) -> tuple[Tensor, SurrogateStats]:
    """The clipped surrogate loss of each sample (to minimise, not yet aggregated) and its
    statistics over the samples."""
    ratio = log_ratio.exp()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_range, 1.0 + clip_range)
    per_sample = torch.maximum(unclipped, clipped)
    lower_fraction: Tensor | None = None
    if clip_ratio_c is not None:
        negative = advantages < 0
        dual_bound = -advantages * clip_ratio_c
        binds = negative & (per_sample > dual_bound)
        per_sample = torch.where(negative, torch.minimum(per_sample, dual_bound), per_sample)
        lower_fraction = (binds.sum() / negative.sum().clamp(min=1)).detach()
    with torch.no_grad():
        stats = SurrogateStats(
            clip_fraction=((ratio - 1.0).abs() > clip_range).float().mean(),
            clip_fraction_lower=lower_fraction,
            ratio_mean=ratio.mean(),
            ratio_min=ratio.min(),
            ratio_max=ratio.max(),
            ratio_std=ratio.std(correction=0),
            clip_fraction_low=((ratio < 1.0 - clip_range) & (advantages < 0)).float().mean(),
            clip_fraction_high=((ratio > 1.0 + clip_range) & (advantages > 0)).float().mean(),
        )
    return per_sample, stats


def aggregate(loss: Tensor, mask: Tensor, mode: LossAggMode) -> Tensor:
    """One loss from per-token ``loss [B, M]`` over the tokens where ``mask [B, M]`` is True
    (verl's ``agg_loss``): ``token-mean`` is the mean over every token of the batch (long
    sequences weigh more); ``seq-mean-token-sum`` sums each sequence's tokens, then means
    over sequences (Dr. GRPO's unnormalised sum); ``seq-mean-token-mean`` means each
    sequence's tokens, then over sequences (the GRPO paper's). Masked entries are ignored,
    even non-finite ones; a sequence without a token counts as 0."""
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg_mode must be one of {', '.join(LOSS_AGG_MODES)}, got {mode!r}")
    kept = torch.where(mask, loss, torch.zeros((), dtype=loss.dtype, device=loss.device))
    counts = mask.sum(dim=-1)
    if mode == "token-mean":
        return kept.sum() / counts.sum().clamp(min=1)
    per_sequence = kept.sum(dim=-1)
    if mode == "seq-mean-token-mean":
        per_sequence = per_sequence / counts.clamp(min=1)
    return per_sequence.mean()


def value_loss(
    values: Tensor, returns: Tensor, values_old: Tensor, clip_range_vf: float | None
) -> Tensor:
    """0.5 * squared error, pessimistic over the clipped prediction when clipping is on."""
    squared = (values - returns).square()
    if clip_range_vf is not None:
        clipped = values_old + (values - values_old).clamp(-clip_range_vf, clip_range_vf)
        squared = torch.maximum(squared, (clipped - returns).square())
    return 0.5 * squared.mean()


def entropy_penalty(mean_entropy: Tensor, min_entropy: float | None, coef: float) -> Tensor:
    """coef * relu(min_entropy - H): pushes entropy back up only when below the floor."""
    if min_entropy is None:
        return torch.zeros_like(mean_entropy)
    return coef * torch.relu(min_entropy - mean_entropy)


def reference_kl(
    logp_new: Tensor,
    logp_ref: Tensor | None,
    estimator: KLEstimator,
    coef: float,
    clamp: float = LOG_RATIO_CLAMP,
) -> tuple[Tensor | None, Tensor]:
    """(mean KL(pi_theta || pi_ref), ``coef`` times it): the samples' log-probabilities
    under the policy being trained are the sampled side. Kept out of the graph at coef 0."""
    if logp_ref is None:
        return None, torch.zeros((), device=logp_new.device)
    kl = reference_kl_terms(logp_new, logp_ref, estimator, coef, clamp).mean()
    return kl, coef * kl


def reference_kl_terms(
    logp_new: Tensor,
    logp_ref: Tensor,
    estimator: KLEstimator,
    coef: float,
    clamp: float = LOG_RATIO_CLAMP,
) -> Tensor:
    """Per-sample KL(pi_theta || pi_ref) by ``estimator`` (not yet aggregated), kept out of
    the graph at coef 0."""
    sampled = logp_new if coef != 0.0 else logp_new.detach()
    log_ratio, _ = guarded_log_ratio(logp_ref, sampled, clamp)
    return estimate_from_log_ratio(log_ratio, estimator)


def _config_reference_kl(
    inputs: LossInputs, config: LossSettings, coef: float
) -> tuple[Tensor | None, Tensor]:
    """``reference_kl`` with the estimator and log-ratio clamp ``config`` names."""
    estimator, clamp = config.ref_kl_loss_estimator, config.log_ratio_clamp
    return reference_kl(inputs.logp_new, inputs.logp_ref, estimator, coef, clamp)


def ppo_loss(
    inputs: LossInputs, config: LossSettings, ent_coef: float, kl_coef: float, ref_coef: float = 0.0
) -> tuple[Tensor, LossBreakdown]:
    """total = policy + vf_coef * value - ent_coef * H + kl_coef * approx_kl + H penalty
    + ref_coef * ref_kl.

    Terms whose coefficient is 0 (or that are switched off) are measured but kept out of
    the autograd graph, so they cost no backward work.
    """
    log_ratio, nonfinite = guarded_log_ratio(
        inputs.logp_new, inputs.logp_old, config.log_ratio_clamp
    )
    policy, surrogate = clipped_surrogate(
        log_ratio, inputs.advantages, config.clip_range, config.clip_ratio_c
    )
    value = value_loss(inputs.values, inputs.returns, inputs.values_old, config.clip_range_vf)
    entropy = inputs.entropy.mean()
    total = policy + config.vf_coef * value - ent_coef * entropy
    floor = entropy_penalty(entropy, config.min_entropy, config.min_entropy_coef)
    total = total + floor if config.min_entropy is not None else total
    kl_input = log_ratio if kl_coef != 0.0 else log_ratio.detach()
    approx_kl = estimate_from_log_ratio(kl_input, config.kl_estimator).mean()
    kl_term = kl_coef * approx_kl
    total = total + kl_term if kl_coef != 0.0 else total
    ref_kl, ref_term = _config_reference_kl(inputs, config, ref_coef)
    total = total + ref_term if ref_coef != 0.0 and ref_kl is not None else total
    breakdown = LossBreakdown(
        policy_loss=policy.detach(),
        value_loss=value.detach(),
        entropy=entropy.detach(),
        entropy_penalty=floor.detach(),
        approx_kl=approx_kl.detach(),
        kl_penalty=kl_term.detach(),
        ref_kl=None if ref_kl is None else ref_kl.detach(),
        ref_kl_loss=ref_term.detach(),
        total_loss=total.detach(),
        surrogate=surrogate,
        nonfinite_ratios=nonfinite,
    )
    return total, breakdown
