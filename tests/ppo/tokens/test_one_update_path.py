"""The classic and the token-level update are one update path: given the same minibatch
figures, they record the same payload on every field both have, and report the same
anomalies, for a plain update, an early stop and a non-finite step.

Each path runs its own loop (epochs, minibatches, the decision to stop, skip or step, the
reduction, the payload); only each minibatch's loss and gradient norms are scripted, in
place of a forward and a backward pass."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import torch
from torch import nn

from ppo.core.gradients import GradNorms
from ppo.core.losses import LossBreakdown, SurrogateStats
from ppo.tokens import figures
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.update import TokenBatch, TokenUpdater
from ppo.update.agent import PPOAgent
from telemetry.events import AnomalyPayload, PPOUpdatePayload
from tests.ppo.helpers import batch_for, config, small_policy

UPDATE, STEP = 3, 4096
COEF = 0.05
"""The reference KL's coefficient in the loss, on both paths."""

ONLY_CLASSIC = frozenset(
    {
        "kl_penalty", "kl_coef", "clip_fraction_lower", "entropy_penalty",
        "entropy_below_threshold", "grad_norm_actor", "grad_norm_critic",
        "ref_kl_reward_coef", "ref_kl_reward_penalty", "advantage_mean", "advantage_std",
        "td_error_mean", "return_scale", "kl_final",
    }
)  # fmt: skip
"""What only the classic loss and rollout have (a KL penalty, the dual clip, the entropy
floor, an actor and a critic apart, the reward's reference penalty, GAE)."""
ONLY_TOKEN = frozenset(
    {
        "clip_fraction_low", "clip_fraction_high", "clip_fraction_region",
        "full_reward_rate", "max_new_tokens_rate", "max_length_rate", "reward_mean",
        "reward_std", "reward_zero_std_frac", "completion_length_mean",
        "completion_length_min", "completion_length_max", "completion_truncated_frac",
        "tokens",
    }
)  # fmt: skip
"""What only token-level runs record (the split clip shares, rewards and completions)."""
OWN_ROLLOUT = frozenset(
    {
        "explained_variance", "return_mean", "return_std", "value_mean",
        "entropy_normalized", "update_seconds",
    }
)  # fmt: skip
"""Measured on each path's own rollout, action set or clock, not on the scripted figures."""

Figures = dict[str, float]


def minibatch(**figures_: float) -> Figures:
    """One minibatch's scripted figures: finite and unremarkable unless given."""
    return {
        "approx_kl": 0.01, "total_loss": 0.5, "grad_norm": 0.8, "policy_loss": -0.02,
        "value_loss": 0.4, "entropy": 1.1, "clip_fraction": 0.1, "ratio_mean": 1.01,
        "ratio_min": 0.7, "ratio_max": 1.4, "ratio_std": 0.05, "ref_kl": 0.003,
        "ref_kl_loss": COEF * 0.003, "grad_clip_scale": 0.6, "nonfinite": 0.0,
        "clip_fraction_low": 0.04, "clip_fraction_high": 0.05,
        **figures_,
    }  # fmt: skip


def scripted(script: list[Figures]) -> Any:
    """A forward-backward that returns each scripted minibatch's loss and norms in turn."""
    feed: Iterator[Figures] = iter(script)

    def forward_backward(*_: object) -> tuple[LossBreakdown, GradNorms]:
        f = {k: torch.tensor(v) for k, v in next(feed).items()}
        surrogate = SurrogateStats(
            clip_fraction=f["clip_fraction"],
            clip_fraction_lower=None,
            ratio_mean=f["ratio_mean"],
            ratio_min=f["ratio_min"],
            ratio_max=f["ratio_max"],
            ratio_std=f["ratio_std"],
            clip_fraction_low=f["clip_fraction_low"],
            clip_fraction_high=f["clip_fraction_high"],
        )
        loss = LossBreakdown(
            policy_loss=f["policy_loss"],
            value_loss=f["value_loss"],
            entropy=f["entropy"],
            entropy_penalty=torch.tensor(0.0),
            approx_kl=f["approx_kl"],
            kl_penalty=torch.tensor(0.0),
            ref_kl=f["ref_kl"],
            ref_kl_loss=f["ref_kl_loss"],
            total_loss=f["total_loss"],
            surrogate=surrogate,
            nonfinite_ratios=f["nonfinite"].long(),
        )
        return loss, GradNorms(f["grad_norm"], {}, f["grad_clip_scale"])

    return forward_backward


def classic(
    script: list[Figures], max_kl: float | None
) -> tuple[PPOUpdatePayload, tuple[AnomalyPayload, ...]]:
    cfg = config(
        update_epochs=2, num_minibatches=2, max_kl=max_kl, anneal_lr=False, kl_final=False,
        ref_kl_loss_coef=COEF, learning_rate=3e-4, ent_coef=0.0,
    )  # fmt: skip
    policy = small_policy()
    agent = PPOAgent(policy, cfg)
    agent._forward_backward = scripted(script)  # type: ignore[method-assign]
    batch = dataclasses.replace(batch_for(policy, size=8), logp_ref=torch.zeros(8))
    summary = agent.update(batch, update=UPDATE, global_step=STEP)
    return summary.payload, summary.anomalies


def token_level(
    script: list[Figures], max_kl: float | None
) -> tuple[PPOUpdatePayload, tuple[AnomalyPayload, ...]]:
    cfg = TokenPPOConfig(
        update_epochs=2, num_minibatches=2, max_kl=max_kl, ref_kl_loss_coef=COEF,
        learning_rate=3e-4, ent_coef=0.0,
    )  # fmt: skip
    updater = TokenUpdater(nn.Linear(1, 1), cfg, torch.Generator().manual_seed(0))
    updater._forward_backward = scripted(script)  # type: ignore[method-assign]
    valid = torch.ones(4, 2, dtype=torch.bool)
    batch = TokenBatch(
        sequences=torch.zeros(4, 4, dtype=torch.long), prompt_len=2,
        actions=torch.zeros(4, 2, dtype=torch.long), valid=valid, logp_old=torch.zeros(4, 2),
        values_old=torch.tensor([[0.1, 0.2]] * 4), returns=torch.tensor([0.0, 1.0, 0.5, 1.0]),
        logp_ref=torch.zeros(4, 2),
    )  # fmt: skip
    result = updater.update(batch, valid, COEF, update=UPDATE, global_step=STEP)
    ctx = figures.UpdateContext(
        ref_coef=COEF, allowed_count=4, seconds=0.1, full_reward_rate=0.5,
        max_new_tokens_rate=0.0, max_length_rate=0.0, lengths=torch.full((4,), 2),
    )  # fmt: skip
    summary = figures.update_summary(result, batch, cfg, ctx)
    return summary.payload, summary.anomalies


def recorded(payload: PPOUpdatePayload) -> dict[str, Any]:
    """The fields the payload writes (absent ones left out), as builtins."""
    return {k: v for k, v in msgspec.to_builtins(payload).items() if v is not None}


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-6, abs=1e-9)
    return bool(a == b)


def assert_one_path(
    script: list[Figures], max_kl: float | None
) -> tuple[PPOUpdatePayload, tuple[AnomalyPayload, ...]]:
    """Both paths' payloads agree on every field both record (and record the same ones),
    and their anomalies are the same; returns the token-level ones."""
    (ours, our_anomalies), (tok, tok_anomalies) = (
        classic(script, max_kl),
        token_level(script, max_kl),
    )
    mine, theirs = recorded(ours), recorded(tok)
    shared = (mine.keys() | theirs.keys()) - ONLY_CLASSIC - ONLY_TOKEN - OWN_ROLLOUT
    assert {k for k in shared if k not in mine} == set(), "recorded by the token path only"
    assert {k for k in shared if k not in theirs} == set(), "recorded by the classic path only"
    differ = {k: (mine[k], theirs[k]) for k in sorted(shared) if not same(mine[k], theirs[k])}
    assert differ == {}
    # repr: a NaN value is the same NaN on both sides
    assert repr(msgspec.to_builtins(our_anomalies)) == repr(msgspec.to_builtins(tok_anomalies))
    return tok, tok_anomalies


def test_a_plain_update_records_the_same_figures() -> None:
    script = [minibatch(approx_kl=k, ratio_max=1 + k * 10) for k in (0.001, 0.004, 0.01, 0.02)]
    tok, _ = assert_one_path(script, None)
    assert tok.approx_kl == pytest.approx(0.015)  # the last epoch's mean
    assert tok.clip_fraction_region == pytest.approx(0.09)  # its own fields, built alike
    assert (tok.minibatches_completed, tok.epochs_completed) == (4, 2)


def test_an_early_stop_records_the_minibatch_that_triggered_it() -> None:
    script = [minibatch(approx_kl=k) for k in (0.01, 0.02, 0.03, 0.09)]
    tok, _ = assert_one_path(script, 0.05)
    assert tok.early_stop is not None and tok.early_stop.kl == pytest.approx(0.09)
    assert tok.approx_kl_max == pytest.approx(0.09)  # the refused minibatch's KL counts
    assert tok.approx_kl == pytest.approx(0.06)
    assert tok.minibatches_completed == 3 and tok.epochs_completed == 2


def test_a_non_finite_step_is_skipped_and_reported_as_the_classic_path_does() -> None:
    script = [
        minibatch(),
        minibatch(total_loss=math.nan, grad_norm=math.inf, clip_fraction=0.3),
        minibatch(nonfinite=2.0),
        minibatch(),
    ]
    tok, anomalies = assert_one_path(script, None)
    assert [a.metric for a in anomalies] == ["total_loss", "nonfinite_ratios"]
    assert tok.skipped_steps == 1 and tok.grad_norm == math.inf
    assert tok.clip_fraction == pytest.approx(0.15)  # measured on the skipped one too
    assert tok.nonfinite_ratios == 2


def test_nothing_applied_leaves_the_losses_absent_not_zero() -> None:
    script = [minibatch(total_loss=math.nan)] * 4
    tok, _ = assert_one_path(script, None)
    assert tok.skipped_steps == 4
    assert tok.total_loss is None and tok.policy_loss is None
    assert tok.clip_fraction == pytest.approx(0.1)
