"""The one build of an update's ``PPOUpdatePayload`` from its typed statistics.

:func:`build_payload` takes what the update measured (:class:`~ppo.update.stats.UpdateStats`),
what it decided (:class:`~ppo.update.state.UpdateState`) and what the agent knows beside
(:class:`PayloadContext`), and applies each field's rule of presence: a measurement that
does not apply to this run (no dual clip, no reference policy, no entropy floor) is absent,
never zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from ppo.config import PPOConfig
from ppo.rollout.buffer import Batch
from ppo.update.state import UpdateState
from ppo.update.stats import RolloutStats, UpdateStats
from telemetry.events import PPOUpdatePayload


@dataclass(frozen=True)
class PayloadContext:
    """What the agent knows of an update beyond its statistics."""

    seconds: float
    """Wall time of the update."""
    entropy_normalized: float | None
    grouped: bool
    """Separate actor and critic parameters (their gradient norms apply)."""
    ref_kl_loss_coef: float
    ref_kl_reward_coef: float


class RolloutFields(TypedDict):
    """The payload's fields measured on the rollout before the update."""

    explained_variance: float | None
    advantage_mean: float
    advantage_std: float
    return_mean: float
    return_std: float
    value_mean: float
    td_error_mean: float | None
    return_scale: float | None


class ReferenceFields(TypedDict):
    """The payload's reference-KL fields (all None when no reference KL is on)."""

    ref_kl: float | None
    ref_kl_coef: float | None
    ref_kl_reward_coef: float | None
    ref_kl_loss: float | None
    ref_kl_reward_penalty: float | None


def rollout_fields(r: RolloutStats[float], batch: Batch) -> RolloutFields:
    """The rollout's statistics; the TD error only when the batch measured it."""
    return RolloutFields(
        explained_variance=r.explained_variance,
        advantage_mean=r.advantage_mean,
        advantage_std=r.advantage_std,
        return_mean=r.return_mean,
        return_std=r.return_std,
        value_mean=r.value_mean,
        td_error_mean=None if batch.measures is None else r.td_error_mean,
        return_scale=None if batch.measures is None else batch.measures.return_scale,
    )


def build_payload(
    cfg: PPOConfig,
    stats: UpdateStats,
    state: UpdateState,
    batch: Batch,
    context: PayloadContext,
) -> PPOUpdatePayload:
    """The update's one payload: what it measured, then what it decided."""
    losses, grouped, floor = stats.losses, context.grouped, cfg.min_entropy
    return PPOUpdatePayload(
        approx_kl=stats.approx_kl,
        approx_kl_max=stats.approx_kl_max,
        kl_final=stats.kl_final,
        clip_fraction=stats.clip_fraction,
        clip_fraction_lower=None if cfg.clip_ratio_c is None else stats.clip_fraction_lower,
        ratio_mean=stats.ratio_mean,
        ratio_min=stats.ratio_min,
        ratio_max=stats.ratio_max,
        ratio_std=stats.ratio_std,
        entropy=stats.entropy,
        entropy_normalized=context.entropy_normalized,
        entropy_penalty=None if floor is None else losses.entropy_penalty,
        entropy_below_threshold=None if floor is None else stats.entropy < floor,
        policy_loss=losses.policy_loss,
        value_loss=losses.value_loss,
        kl_penalty=losses.kl_penalty,
        total_loss=losses.total_loss,
        grad_norm=stats.grad_norm,
        grad_norm_max=stats.grad_norm_max,
        grad_norm_actor=stats.grad_norm_actor if grouped else None,
        grad_norm_critic=stats.grad_norm_critic if grouped else None,
        grad_clip_scale=None if cfg.max_grad_norm is None else stats.grad_clip_scale,
        nonfinite_ratios=stats.nonfinite_ratios,
        update_seconds=context.seconds,
        **rollout_fields(stats.rollout, batch),
        **reference_fields(cfg, stats, batch, context),
        **state.in_force,
        **state.decisions(),
    )


def reference_fields(
    cfg: PPOConfig, stats: UpdateStats, batch: Batch, context: PayloadContext
) -> ReferenceFields:
    """ref_kl whenever a reference is on; each use's coefficient and term when it is."""
    if batch.logp_ref is None:
        return ReferenceFields(
            ref_kl=None,
            ref_kl_coef=None,
            ref_kl_reward_coef=None,
            ref_kl_loss=None,
            ref_kl_reward_penalty=None,
        )
    in_loss, in_reward = cfg.ref_kl_loss_coef > 0.0, cfg.ref_kl_in_reward
    return ReferenceFields(
        ref_kl=stats.ref_kl,
        ref_kl_coef=context.ref_kl_loss_coef if in_loss else None,
        ref_kl_reward_coef=context.ref_kl_reward_coef if in_reward else None,
        ref_kl_loss=stats.losses.ref_kl_loss if in_loss else None,
        ref_kl_reward_penalty=stats.rollout.reward_penalty_mean if in_reward else None,
    )
