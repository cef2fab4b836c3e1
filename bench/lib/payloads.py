"""The realistic payloads the benches write: every field set, values drifting as a run's do.

``ppo_update(u)`` and ``rollout(u)`` build update ``u``'s two events (a trainer emits a
rollout, then its update); the same ``u`` always gives the same payloads.
"""

from __future__ import annotations

import math

from telemetry.events import (
    EarlyStop,
    PPOUpdate,
    PPOUpdatePayload,
    RolloutPayload,
    RunStarted,
    RunStartedPayload,
    TrainerInfo,
)

STEPS = 512
"""Environment steps per update."""


def ppo_update(u: int) -> PPOUpdatePayload:
    """A realistic update: every field set, values drifting, an early stop every 17th."""
    wave = math.sin(u / 40.0)
    kl = 0.008 + 0.004 * wave + (0.03 if u % 17 == 0 else 0.0)
    stopped = u % 17 == 0
    return PPOUpdatePayload(
        update=u,
        global_step=(u + 1) * STEPS,
        approx_kl=kl,
        approx_kl_max=kl * 1.8,
        kl_final=kl * 1.1,
        clip_fraction=0.1 + 0.05 * wave,
        clip_fraction_lower=0.01,
        ratio_mean=1.0 + 0.01 * wave,
        ratio_min=0.7,
        ratio_max=1.4,
        entropy=0.69 - u * 1e-7,
        entropy_coef=0.01,
        policy_loss=-0.01 * wave,
        value_loss=20.0 + wave,
        kl_penalty=0.0,
        total_loss=10.0 + wave,
        kl_coef=0.0,
        explained_variance=0.5 + 0.3 * wave,
        grad_norm=0.8 + 0.3 * wave,
        grad_norm_max=1.5 + wave,
        learning_rate=2.5e-4,
        advantage_mean=0.01 * wave,
        advantage_std=1.0,
        return_mean=50.0 + wave,
        value_mean=49.0 + wave,
        epochs_completed=3 if stopped else 4,
        minibatches_completed=11 if stopped else 16,
        minibatches_planned=16,
        early_stopped=stopped,
        early_stop_reason=(
            f"approx_kl {kl:.4f} > max_kl 0.0300 at epoch 2 minibatch 3 (minibatch not applied)"
        )
        if stopped
        else None,
        early_stop=EarlyStop(
            epoch=2, minibatch=3, kl=kl, threshold=0.03, scope="minibatch", applied=False
        )
        if stopped
        else None,
        skipped_steps=0,
        nonfinite_ratios=0,
        update_seconds=0.05,
    )


def rollout(u: int) -> RolloutPayload:
    """The rollout before update ``u``: three episodes, returns cycling through 300 values."""
    return RolloutPayload(
        update=u,
        global_step=(u + 1) * STEPS,
        episodes=3,
        episode_return_mean=100.0 + u % 300,
        episode_return_min=20.0,
        episode_return_max=500.0,
        episode_length_mean=100.0,
        steps_per_second=4800.0,
    )


def started_updates(updates: int, run_id: str = "r") -> tuple[RunStarted, list[PPOUpdate]]:
    """A run's ``run_started`` and its first ``updates`` decoded ``ppo_update`` events (seq
    on from it, a second apart): what ``handle`` folds on its hot path, a run's updates."""
    start = RunStarted(
        run_id=run_id,
        seq=1,
        ts=0.0,
        payload=RunStartedPayload(trainer=TrainerInfo(name="bench"), config={"max_kl": 0.03}),
    )
    events = [
        PPOUpdate(run_id=run_id, seq=i + 2, ts=float(i + 1), payload=ppo_update(i % 5000))
        for i in range(updates)
    ]
    return start, events
