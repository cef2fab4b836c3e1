"""The one build of an update's ``PPOUpdatePayload``, for the classic and the token-level
update alike.

:func:`summarise` takes what the update measured (:class:`~ppo.update.stats.UpdateStats`,
reduced from the minibatch table), what it decided (:class:`~ppo.update.state.UpdateState`),
which of the table's figures the run measures (:class:`Measured`), what was in force beside
(:class:`PayloadContext`) and the figures of the rollout before the update
(:class:`RolloutFields`, each path its own), and applies each field's rule of presence: a
measurement that does not apply to this run (no dual clip, no critic, no reference policy,
no entropy floor) is absent, never zero. The anomalies it reports beside (skipped steps,
replaced ratios) are the same for both paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from ppo.rollout.buffer import Batch
from ppo.update.state import UpdateState, anomalies
from ppo.update.stats import RolloutStats, UpdateStats
from telemetry.events import AnomalyPayload, PPOUpdatePayload


@dataclass(frozen=True)
class UpdateSummary:
    """What one update did: the telemetry payload plus anomalies for the trainer to emit."""

    payload: PPOUpdatePayload
    anomalies: tuple[AnomalyPayload, ...] = ()


@dataclass(frozen=True)
class Measured:
    """Which of the minibatch table's figures a run measures; the others are absent."""

    old_policy_kl: bool
    """approx_kl and approx_kl_max (GRPO with one step per batch has none: r is 1)."""
    critic: bool
    """value_loss."""
    kl_penalty: bool
    """kl_penalty: the loss has a KL penalty term (its coefficient may be 0)."""
    dual_clip: bool
    """clip_fraction_lower."""
    split_clip: bool
    """clip_fraction_low, clip_fraction_high and clip_fraction_region."""
    grouped: bool
    """grad_norm_actor and grad_norm_critic: separate actor and critic parameters."""
    clipped: bool
    """grad_clip_scale: the gradient norm is clipped."""
    entropy_floor: float | None
    """entropy_penalty and entropy_below_threshold (None: no min_entropy)."""
    reference: bool
    """ref_kl: the samples' log-probabilities under a frozen reference were measured."""


@dataclass(frozen=True)
class PayloadContext:
    """What an update's payload records beyond its table and its rollout."""

    seconds: float
    """Wall time of the update."""
    entropy_normalized: float | None
    ref_kl_loss_coef: float | None
    """The reference KL's coefficient in the loss in force (None: the loss does not hold
    it)."""
    ref_kl_reward_coef: float | None
    """The reward penalty's coefficient in force (None: no penalty in the reward)."""


class RolloutFields(TypedDict, total=False):
    """The payload's fields measured on the rollout before the update; each path fills
    those it measures (the token-level one its rewards and completions too)."""

    explained_variance: float | None
    advantage_mean: float
    advantage_std: float
    return_mean: float
    return_std: float
    value_mean: float | None
    td_error_mean: float | None
    return_scale: float | None
    ref_kl_reward_penalty: float | None
    full_reward_rate: float
    max_new_tokens_rate: float
    max_length_rate: float
    reward_mean: float
    reward_std: float
    reward_zero_std_frac: float | None
    completion_length_mean: float
    completion_length_min: float
    completion_length_max: float
    completion_truncated_frac: float
    tokens: int


class ReferenceFields(TypedDict):
    """The payload's reference-KL fields of the table (all None without a reference)."""

    ref_kl: float | None
    ref_kl_coef: float | None
    ref_kl_reward_coef: float | None
    ref_kl_loss: float | None


def rollout_fields(r: RolloutStats[float], batch: Batch, in_reward: bool) -> RolloutFields:
    """The classic rollout's statistics; the TD error only when the batch measured it, the
    reward penalty only when one was subtracted."""
    return RolloutFields(
        explained_variance=r.explained_variance,
        advantage_mean=r.advantage_mean,
        advantage_std=r.advantage_std,
        return_mean=r.return_mean,
        return_std=r.return_std,
        value_mean=r.value_mean,
        td_error_mean=None if batch.measures is None else r.td_error_mean,
        return_scale=None if batch.measures is None else batch.measures.return_scale,
        ref_kl_reward_penalty=r.reward_penalty_mean if in_reward else None,
    )


def summarise(
    stats: UpdateStats,
    state: UpdateState,
    measured: Measured,
    context: PayloadContext,
    rollout: RolloutFields,
) -> UpdateSummary:
    """The update's payload and the anomalies reported beside it."""
    payload = build_payload(stats, state, measured, context, rollout)
    return UpdateSummary(payload, anomalies(payload, state))


def build_payload(
    stats: UpdateStats,
    state: UpdateState,
    measured: Measured,
    context: PayloadContext,
    rollout: RolloutFields,
) -> PPOUpdatePayload:
    """The update's one payload: what it measured, then what it decided."""
    m, floor = measured, measured.entropy_floor
    low, high = stats.clip_fraction_low, stats.clip_fraction_high
    return PPOUpdatePayload(
        approx_kl=stats.approx_kl if m.old_policy_kl else None,
        approx_kl_max=stats.approx_kl_max if m.old_policy_kl else None,
        kl_final=stats.kl_final,
        clip_fraction=stats.clip_fraction,
        clip_fraction_lower=stats.clip_fraction_lower if m.dual_clip else None,
        clip_fraction_low=low if m.split_clip else None,
        clip_fraction_high=high if m.split_clip else None,
        clip_fraction_region=low + high if m.split_clip else None,
        ratio_mean=stats.ratio_mean,
        ratio_min=stats.ratio_min,
        ratio_max=stats.ratio_max,
        ratio_std=stats.ratio_std,
        entropy=stats.entropy,
        entropy_normalized=context.entropy_normalized,
        entropy_penalty=None if floor is None else stats.entropy_penalty,
        entropy_below_threshold=None if floor is None else stats.entropy < floor,
        policy_loss=stats.policy_loss,
        value_loss=stats.value_loss if m.critic else None,
        kl_penalty=stats.kl_penalty if m.kl_penalty else None,
        total_loss=stats.total_loss,
        grad_norm=stats.grad_norm,
        grad_norm_max=stats.grad_norm_max,
        grad_norm_actor=stats.grad_norm_actor if m.grouped else None,
        grad_norm_critic=stats.grad_norm_critic if m.grouped else None,
        grad_clip_scale=stats.grad_clip_scale if m.clipped else None,
        nonfinite_ratios=stats.nonfinite_ratios,
        update_seconds=context.seconds,
        **reference_fields(stats, measured, context),
        **rollout,
        **state.in_force,
        **state.decisions(),
    )


def reference_fields(
    stats: UpdateStats, measured: Measured, context: PayloadContext
) -> ReferenceFields:
    """ref_kl whenever a reference is on; each use's coefficient and term when it is."""
    if not measured.reference:
        return ReferenceFields(
            ref_kl=None, ref_kl_coef=None, ref_kl_reward_coef=None, ref_kl_loss=None
        )
    in_loss = context.ref_kl_loss_coef is not None
    return ReferenceFields(
        ref_kl=stats.ref_kl,
        ref_kl_coef=context.ref_kl_loss_coef,
        ref_kl_reward_coef=context.ref_kl_reward_coef,
        ref_kl_loss=stats.ref_kl_loss if in_loss else None,
    )
