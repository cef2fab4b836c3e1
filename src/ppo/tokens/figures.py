"""Telemetry of token-level PPO: a ``rollout`` and a ``ppo_update`` payload per update.

One generated sequence is one episode (its return is ``reward_final``, its length the
tokens generated) and a step is a generated token, so Sanctum's rollout panel, charts and
health rules read a token run as they read any other. The update's figures are the classic
update's (:func:`ppo.update.payload.summarise` over the same minibatch table); what is
token-level here is what the run measures and its rollout's figures, per generated token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import Tensor

from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.generate import Generation
from ppo.tokens.reward import RewardTerms
from ppo.tokens.update import TokenBatch, UpdateResult
from ppo.update.payload import Measured, PayloadContext, RolloutFields, UpdateSummary, summarise
from telemetry.events import KLMeasure, RolloutPayload


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
    """What an update's payload records beside its table: what was in force, its time and
    its rollout's figures."""

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


def measured(config: TokenPPOConfig, batch: TokenBatch) -> Measured:
    """Which of the update table's figures a token-level run measures."""
    return Measured(
        old_policy_kl=measures_old_policy_kl(config),
        critic=config.algorithm != "grpo",
        kl_penalty=False,
        dual_clip=False,
        split_clip=True,
        grouped=False,
        clipped=config.max_grad_norm is not None,
        entropy_floor=None,
        reference=batch.logp_ref is not None,
    )


def rollout_fields(batch: TokenBatch, config: TokenPPOConfig, ctx: UpdateContext) -> RolloutFields:
    """The rollout's figures: returns per sample, values and explained variance per
    generated token (token_ppo's critic), rewards and completions."""
    critic = config.algorithm != "grpo"
    lengths = ctx.lengths.float()
    return RolloutFields(
        explained_variance=_explained_variance(batch) if critic else None,
        return_mean=float(batch.returns.mean()),
        return_std=float(batch.returns.std(correction=0)),
        value_mean=float(batch.values_old[batch.valid].mean()) if critic else None,
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
    )


def update_summary(
    result: UpdateResult, batch: TokenBatch, config: TokenPPOConfig, ctx: UpdateContext
) -> UpdateSummary:
    """The ``ppo_update`` payload and the anomalies beside it, built as the classic
    update's are."""
    in_loss = batch.logp_ref is not None and config.ref_kl_loss_coef > 0.0
    context = PayloadContext(
        seconds=ctx.seconds,
        entropy_normalized=result.stats.entropy / math.log(ctx.allowed_count),
        ref_kl_loss_coef=ctx.ref_coef if in_loss else None,
        ref_kl_reward_coef=None,
    )
    fields = rollout_fields(batch, config, ctx)
    return summarise(result.stats, result.state, measured(config, batch), context, fields)
