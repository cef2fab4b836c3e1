"""Telemetry of token-level PPO: a ``rollout`` and a ``ppo_update`` payload per update.

One generated sequence is one episode (its return is ``reward_final``, its length the
tokens generated) and a step is a generated token, so Sanctum's rollout panel, charts and
health rules read a token run as they read any other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean

from torch import Tensor

from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.generate import Generation
from ppo.tokens.reward import RewardTerms
from ppo.tokens.update import MinibatchFigures, TokenBatch, UpdateResult
from ppo.update.state import stop_fields
from telemetry.events import KLMeasure, PPOUpdatePayload, RolloutPayload


def rollout_payload(
    update: int, global_step: int, gen: Generation, terms: RewardTerms, tokens_per_second: float
) -> RolloutPayload:
    """The rollout's returns (reward_final) and lengths (tokens generated)."""
    final = terms.reward_final
    return RolloutPayload(
        update=update,
        global_step=global_step,
        episodes=int(final.numel()),
        episode_return_mean=float(final.mean()),
        episode_return_min=float(final.min()),
        episode_return_max=float(final.max()),
        episode_length_mean=float(gen.num_generated.float().mean()),
        steps_per_second=tokens_per_second,
    )


def _mean(rows: list[MinibatchFigures], name: str) -> float | None:
    values = [getattr(r, name) for r in rows]
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def _explained_variance(batch: TokenBatch) -> float | None:
    """1 - Var(R - V) / Var(R) over generated tokens; None when Var(R) is 0."""
    returns = batch.returns.unsqueeze(1).expand_as(batch.valid)[batch.valid]
    values = batch.values_old[batch.valid]
    var = float(returns.var(correction=0))
    if var == 0.0:
        return None
    return 1.0 - float((returns - values).var(correction=0)) / var


@dataclass(frozen=True)
class UpdateContext:
    """Where an update sits in the run, and what was in force."""

    update: int
    global_step: int
    ref_coef: float
    allowed_count: int
    """How many ids generation may choose from (entropy_normalized divides by its log)."""
    seconds: float
    full_reward_rate: float
    max_new_tokens_rate: float
    max_length_rate: float
    lengths: Tensor
    """``[B]`` tokens generated per sample."""
    zero_std_frac: float | None = None
    """GRPO: share of the groups whose rewards are all equal (None: no groups)."""


def measures_old_policy_kl(config: TokenPPOConfig) -> bool:
    """Whether approx_kl is recorded: always for PPO; for GRPO when the batch gets more than
    one optimiser step (before the first, r is 1 by construction)."""
    return config.algorithm != "grpo" or config.update_epochs * config.num_minibatches > 1


def kl_declarations(config: TokenPPOConfig) -> dict[str, KLMeasure]:
    """``run_started.kl``: what each KL field of the run's ``ppo_update`` events measures."""
    declared = {
        "ref_kl": KLMeasure(
            against="reference", estimator=config.ref_kl_loss_estimator, unit="token"
        )
    }
    if measures_old_policy_kl(config):
        old = KLMeasure(against="old_policy", estimator=config.kl_estimator, unit="token")
        declared |= {"approx_kl": old, "approx_kl_max": old}
    return declared


def update_payload(
    result: UpdateResult, batch: TokenBatch, config: TokenPPOConfig, ctx: UpdateContext
) -> PPOUpdatePayload:
    """The ``ppo_update`` payload: means over applied minibatches (approx_kl: over the
    last epoch's, as for PPOConfig runs)."""
    rows, stop = result.rows, result.early_stop
    last = [r for r in rows if r.epoch == rows[-1].epoch] if rows else []
    kl = _mean(last, "approx_kl") if last else None
    entropy = _mean(rows, "entropy")
    measured_ref = batch.logp_ref is not None
    critic = config.algorithm != "grpo"
    old_kl = measures_old_policy_kl(config)
    low, high = _mean(rows, "clip_fraction_low"), _mean(rows, "clip_fraction_high")
    lengths = ctx.lengths.float()
    return PPOUpdatePayload(
        update=ctx.update,
        global_step=ctx.global_step,
        approx_kl=(kl if kl is not None else (stop.kl if stop else math.nan)) if old_kl else None,
        approx_kl_max=max((r.approx_kl for r in rows), default=None) if old_kl else None,
        clip_fraction=_mean(rows, "clip_fraction") or 0.0,
        ratio_min=min((r.ratio_min for r in rows), default=None),
        ratio_max=max((r.ratio_max for r in rows), default=None),
        entropy=entropy,
        entropy_normalized=None if entropy is None else entropy / math.log(ctx.allowed_count),
        entropy_coef=config.ent_coef,
        explained_variance=_explained_variance(batch) if critic else None,
        grad_norm_max=max((r.grad_norm for r in rows), default=None),
        learning_rate=config.learning_rate,
        return_mean=float(batch.returns.mean()),
        return_std=float(batch.returns.std(correction=0)),
        value_mean=float(batch.values_old[batch.valid].mean()) if critic else None,
        epochs_completed=len({r.epoch for r in rows}),
        minibatches_completed=len(rows),
        minibatches_planned=result.planned,
        skipped_steps=result.skipped,
        **stop_fields(stop),
        update_seconds=ctx.seconds,
        ref_kl=_mean(rows, "ref_kl") if measured_ref else None,
        ref_kl_coef=ctx.ref_coef if measured_ref else None,
        ref_kl_loss=_mean(rows, "ref_kl_loss") if measured_ref else None,
        ratio_mean=_mean(rows, "ratio_mean"),
        ratio_std=_mean(rows, "ratio_std"),
        policy_loss=_mean(rows, "policy_loss"),
        value_loss=_mean(rows, "value_loss") if critic else None,
        total_loss=_mean(rows, "total_loss"),
        grad_norm=_mean(rows, "grad_norm"),
        full_reward_rate=ctx.full_reward_rate,
        max_new_tokens_rate=ctx.max_new_tokens_rate,
        max_length_rate=ctx.max_length_rate,
        reward_mean=float(batch.returns.mean()),
        reward_std=float(batch.returns.std(correction=0)),
        reward_zero_std_frac=ctx.zero_std_frac,
        completion_length_mean=float(lengths.mean()),
        completion_length_min=float(lengths.min()),
        completion_length_max=float(lengths.max()),
        completion_truncated_frac=ctx.max_new_tokens_rate,
        tokens=int(ctx.lengths.sum()),
        clip_fraction_low=low,
        clip_fraction_high=high,
        clip_fraction_region=None if low is None or high is None else low + high,
    )
