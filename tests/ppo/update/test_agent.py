"""PPOAgent.update: early stop in both scopes (C-03), guards, adaptive KL, statistics."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from ppo.core import losses
from ppo.core.kl_control import KL_COEF_MAX, KL_COEF_MIN
from ppo.model.policy import ActionSpec, ActorCritic
from ppo.rollout.buffer import Batch
from ppo.update.agent import PPOAgent, exceeds
from telemetry.events import EarlyStop
from tests.ppo.helpers import batch_for, config, params_of, same_params, small_policy

SHIFT = 1.0  # every initial ratio e: k3 = e - 2 = 0.7183 nats


def test_c03_minibatch_scope_stops_before_the_step_and_does_not_apply_it() -> None:
    policy = small_policy()
    batch = batch_for(policy, log_ratio_shift=SHIFT)
    agent = PPOAgent(policy, config(max_kl=0.01, early_stop_scope="minibatch"))
    before = params_of(policy)
    p = agent.update(batch, update=3, global_step=2048).payload
    assert same_params(before, params_of(policy))  # the offending step was not applied
    assert agent.optimizer.state_dict()["state"] == {}
    assert p.early_stopped and p.minibatches_completed == 0 and p.epochs_completed == 1
    assert p.early_stop == EarlyStop(
        epoch=0, minibatch=0, kl=p.approx_kl, threshold=0.01, scope="minibatch", applied=False
    )
    assert p.approx_kl == pytest.approx(math.e - 2, rel=1e-5)
    assert p.early_stop_reason == (
        "approx_kl 0.7183 > max_kl 0.0100 at epoch 0 minibatch 0 (minibatch not applied)"
    )
    assert p.policy_loss is None  # nothing applied: no loss to report
    assert p.grad_norm is not None and p.grad_norm == p.grad_norm_max  # measured, not applied
    assert p.kl_final == pytest.approx(p.approx_kl)  # the policy did not move


def test_c03_minibatch_scope_mid_update_keeps_params_of_last_applied_step() -> None:
    policy = small_policy()
    batch = batch_for(policy)  # starts on-policy: KL 0, grows with each step
    agent = PPOAgent(policy, config(max_kl=2e-4, learning_rate=3e-3, early_stop_scope="minibatch"))
    snapshots: list[dict[str, torch.Tensor]] = []
    agent.optimizer.register_step_post_hook(lambda *_: snapshots.append(params_of(policy)))
    p = agent.update(batch).payload
    stop = p.early_stop
    assert p.early_stopped and stop is not None and not stop.applied
    assert stop.kl > 2e-4 and stop.threshold == 2e-4
    planned_row = stop.epoch * 4 + stop.minibatch
    assert 0 < planned_row < 16
    assert len(snapshots) == p.minibatches_completed == planned_row
    assert same_params(snapshots[-1], params_of(policy))
    assert p.epochs_completed == stop.epoch + 1
    assert p.early_stop_reason == (
        f"approx_kl {stop.kl:.4f} > max_kl 0.0002 at epoch {stop.epoch} "
        f"minibatch {stop.minibatch} (minibatch not applied)"
    )
    assert p.approx_kl_max is not None and p.approx_kl_max >= stop.kl


def test_c03_epoch_scope_checks_epoch_mean_after_applying_it() -> None:
    policy = small_policy()
    batch = batch_for(policy, log_ratio_shift=SHIFT)
    agent = PPOAgent(policy, config(max_kl=0.01, early_stop_scope="epoch"))
    before = params_of(policy)
    p = agent.update(batch).payload
    assert not same_params(before, params_of(policy))  # epoch scope applies its steps
    assert p.early_stopped and p.minibatches_completed == 4 and p.epochs_completed == 1
    stop = p.early_stop
    assert stop is not None and (stop.epoch, stop.minibatch, stop.scope) == (0, 3, "epoch")
    assert stop.applied and stop.kl == pytest.approx(p.approx_kl)  # mean of epoch 0
    assert p.early_stop_reason == (
        f"approx_kl {stop.kl:.4f} > max_kl 0.0100 at epoch 0 minibatch 3 "
        "(epoch mean, minibatch applied)"
    )


def test_c03_no_threshold_runs_every_planned_minibatch() -> None:
    policy = small_policy()
    p = PPOAgent(policy, config()).update(batch_for(policy, log_ratio_shift=SHIFT)).payload
    assert not p.early_stopped and p.early_stop is None and p.early_stop_reason is None
    assert p.minibatches_completed == p.minibatches_planned == 16 and p.epochs_completed == 4


@pytest.mark.parametrize(
    ("kl", "max_kl", "expected"),
    [(math.nan, 0.03, True), (math.inf, 0.03, True), (0.031, 0.03, True), (0.03, 0.03, False),
     (0.01, 0.03, False), (math.nan, None, False)],
)  # fmt: skip
def test_exceeds(kl: float, max_kl: float | None, expected: bool) -> None:
    assert exceeds(kl, max_kl) is expected


def nan_kl(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every KL estimate NaN (the log-ratio guard keeps real data from producing one)."""
    monkeypatch.setattr(
        losses, "estimate_from_log_ratio", lambda x, _: torch.full_like(x, math.nan)
    )


def test_nan_kl_stops_a_minibatch_scope_update_before_its_first_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nan_kl(monkeypatch)
    policy = small_policy()
    before = params_of(policy)
    agent = PPOAgent(policy, config(max_kl=0.03, early_stop_scope="minibatch", kl_final=False))
    p = agent.update(batch_for(policy)).payload
    assert same_params(before, params_of(policy)) and p.minibatches_completed == 0
    stop = p.early_stop
    assert stop is not None and (stop.epoch, stop.minibatch, stop.applied) == (0, 0, False)
    assert math.isnan(stop.kl) and math.isnan(p.approx_kl)
    assert p.early_stop_reason == (
        "approx_kl nan > max_kl 0.0300 at epoch 0 minibatch 0 (minibatch not applied)"
    )


def test_nan_kl_stops_an_epoch_scope_update_after_its_first_epoch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nan_kl(monkeypatch)
    policy = small_policy()
    agent = PPOAgent(policy, config(max_kl=0.03, early_stop_scope="epoch", kl_final=False))
    p = agent.update(batch_for(policy)).payload
    assert p.early_stopped and p.epochs_completed == 1 and p.minibatches_completed == 4
    assert p.early_stop_reason == (
        "approx_kl nan > max_kl 0.0300 at epoch 0 minibatch 3 (epoch mean, minibatch applied)"
    )


def test_nonfinite_loss_skips_every_step_and_reports_anomaly() -> None:
    policy = small_policy()
    batch = batch_for(policy)
    batch.returns[:] = math.inf
    agent = PPOAgent(policy, config())
    before = params_of(policy)
    summary = agent.update(batch, update=7, global_step=100)
    p = summary.payload
    assert same_params(before, params_of(policy))
    assert p.skipped_steps == 16 and p.minibatches_completed == 0 and p.total_loss is None
    assert p.grad_norm is not None and p.grad_norm_max is not None
    assert not math.isfinite(p.grad_norm) and not math.isfinite(p.grad_norm_max)
    (anomaly,) = summary.anomalies
    assert anomaly.severity == "critical" and anomaly.metric == "total_loss"
    assert anomaly.value == math.inf and (anomaly.update, anomaly.global_step) == (7, 100)
    assert anomaly.message.startswith("16 optimizer step(s) skipped: non-finite total_loss inf")


def test_nonfinite_gradient_with_finite_loss_skips_step() -> None:
    policy = small_policy()
    batch = batch_for(policy)
    agent = PPOAgent(policy, config())
    calls = {"n": 0}

    def poison_first(grad: torch.Tensor) -> torch.Tensor:
        calls["n"] += 1
        return grad * math.nan if calls["n"] == 1 else grad

    policy.critic[0].weight.register_hook(poison_first)
    summary = agent.update(batch)
    assert summary.payload.skipped_steps == 1 and summary.payload.minibatches_completed == 15
    assert summary.anomalies[0].metric == "grad_norm"
    assert math.isnan(summary.anomalies[0].value or 0.0)
    # the skipped step's NaN norm reaches the payload, where the non-finite rule sees it
    assert summary.payload.grad_norm is not None and math.isnan(summary.payload.grad_norm)
    assert summary.payload.grad_norm_max is not None
    assert math.isnan(summary.payload.grad_norm_max)


def test_nonfinite_ratios_counted_and_reported_as_warning() -> None:
    policy = small_policy()
    batch = batch_for(policy)
    batch.logp[[1, 2]] = math.nan
    summary = PPOAgent(policy, config(update_epochs=1)).update(batch)
    assert summary.payload.nonfinite_ratios == 2
    assert [a.severity for a in summary.anomalies] == ["warning"]
    assert summary.anomalies[0].metric == "nonfinite_ratios"
    assert math.isfinite(summary.payload.approx_kl)


@pytest.mark.parametrize(("target", "expected"), [(1e-6, 0.4), (10.0, 0.1), (None, 0.2)])
def test_adaptive_kl_coefficient(target: float | None, expected: float) -> None:
    policy = small_policy()
    agent = PPOAgent(policy, config(kl_penalty_coefficient=0.2, kl_target=target))
    p = agent.update(batch_for(policy, log_ratio_shift=0.05)).payload
    assert p.kl_coef == 0.2  # the coefficient in force during this update
    assert agent.kl_coef == pytest.approx(expected)


@pytest.mark.parametrize(("target", "bound"), [(1e-6, KL_COEF_MAX), (10.0, KL_COEF_MIN)])
def test_adaptive_kl_coefficient_stays_within_its_range(target: float, bound: float) -> None:
    policy = small_policy()
    batch = batch_for(policy, log_ratio_shift=0.05)  # k3 ~ 1.3e-3 per sample, far from both
    agent = PPOAgent(policy, config(kl_penalty_coefficient=0.2, kl_target=target, update_epochs=1))
    for update in range(25):  # 0.2 * 2**25 > 1e6 and 0.2 / 2**25 < 1e-6
        agent.update(batch, update=update)
    assert agent.kl_coef == bound
    p = agent.update(batch, update=25).payload
    assert p.kl_coef == bound and agent.kl_coef == bound and math.isfinite(p.total_loss or 0.0)


def test_payload_definitions() -> None:
    policy = small_policy()
    batch = batch_for(policy)
    cfg = config(kl_penalty_coefficient=0.1, clip_ratio_c=3.0, total_steps=640)
    p = PPOAgent(policy, cfg).update(batch, update=2, global_step=192).payload
    assert (p.update, p.global_step, p.minibatches_planned) == (2, 192, 16)
    assert p.learning_rate == pytest.approx(2.5e-4 * (1 - 2 / 10))
    assert p.entropy_coef == 0.01 and p.kl_coef == 0.1
    assert p.clip_fraction_lower is not None and 0.0 <= p.clip_fraction <= 1.0
    assert p.ratio_min is not None and p.ratio_max is not None
    assert p.ratio_min <= p.ratio_mean <= p.ratio_max  # type: ignore[operator]
    assert p.advantage_mean == pytest.approx(float(batch.advantages.mean()), rel=1e-5)
    assert p.return_mean == pytest.approx(float(batch.returns.mean()), rel=1e-5)
    assert p.value_mean == pytest.approx(float(batch.values.mean()), rel=1e-5, abs=1e-6)
    resid = (batch.returns - batch.values).var(correction=0) / batch.returns.var(correction=0)
    assert p.explained_variance == pytest.approx(1 - float(resid), rel=1e-4)
    assert p.grad_norm_max is not None and p.grad_norm is not None
    assert p.grad_norm <= p.grad_norm_max
    assert p.kl_final is not None and p.kl_final > 0
    assert p.update_seconds is not None and p.update_seconds >= 0
    # every minibatch applied, so loss means and entropy mean cover the same minibatches
    assert p.minibatches_completed == 16
    assert p.total_loss == pytest.approx(
        p.policy_loss + 0.5 * p.value_loss - 0.01 * p.entropy + p.kl_penalty,  # type: ignore[operator]
        rel=1e-5,
    )


def test_agent_state_round_trip() -> None:
    policy = small_policy()
    batch = batch_for(policy)
    agent = PPOAgent(policy, config(kl_penalty_coefficient=0.2, kl_target=1e-6))
    agent.update(batch)
    state = copy.deepcopy(agent.state_dict())  # as a checkpoint would: no shared tensors
    clone_policy = small_policy(seed=5)
    clone_policy.load_state_dict(policy.state_dict())
    clone = PPOAgent(clone_policy, agent.config)
    clone.load_state_dict(state)
    a = agent.update(batch, update=1).payload
    b = clone.update(batch, update=1).payload
    assert (a.approx_kl, a.total_loss, clone.kl_coef) == (b.approx_kl, b.total_loss, agent.kl_coef)


class CpuUnfusedAdam(torch.optim.Adam):
    """Adam as torch < 2.4 builds it: ``fused=True`` on CPU parameters is refused."""

    def __init__(self, params: list[torch.nn.Parameter], **kwargs: object) -> None:
        if kwargs.get("fused"):
            raise RuntimeError("`fused=True` requires all the params to be ... on ['cuda']")
        super().__init__(params, **kwargs)  # type: ignore[arg-type]


def test_torch_without_cpu_fused_adam_trains_with_the_same_maths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fused_policy = small_policy()
    fused = PPOAgent(fused_policy, config()).update(batch_for(fused_policy)).payload
    monkeypatch.setattr(torch.optim, "Adam", CpuUnfusedAdam)
    policy = small_policy()
    agent = PPOAgent(policy, config())
    assert not agent.optimizer.param_groups[0].get("fused")
    p = agent.update(batch_for(policy)).payload
    assert p.minibatches_completed == 16 and p.skipped_steps == 0
    assert p.approx_kl == pytest.approx(fused.approx_kl, rel=1e-4)
    assert p.total_loss == pytest.approx(fused.total_loss, rel=1e-4)


def test_unclipped_grad_norm_without_get_total_norm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(torch.nn.utils, "get_total_norm", raising=False)  # torch < 2.6
    policy, reference = small_policy(), small_policy()
    p = PPOAgent(policy, config(max_grad_norm=None)).update(batch_for(policy)).payload
    never_clips = config(max_grad_norm=1e9)  # far above any norm here: the same steps
    q = PPOAgent(reference, never_clips).update(batch_for(reference)).payload
    assert p.grad_norm is not None and p.grad_norm > 0
    measured = (p.grad_norm, p.grad_norm_max, p.approx_kl)
    assert measured == (q.grad_norm, q.grad_norm_max, q.approx_kl)


def test_checkpoint_from_another_torch_keeps_this_torchs_fused_setting() -> None:
    policy = small_policy()
    agent = PPOAgent(policy, config())
    agent.update(batch_for(policy))
    state = copy.deepcopy(agent.state_dict())
    mine = agent.optimizer.param_groups[0].get("fused")
    for group in state["optimizer"]["param_groups"]:
        group["fused"] = not mine
    agent.load_state_dict(state)
    assert agent.optimizer.param_groups[0].get("fused") == mine
    assert agent.update(batch_for(policy), update=1).payload.skipped_steps == 0


def test_approx_kl_is_the_last_epochs_mean_as_sb3_logs_it() -> None:
    """Per-minibatch KLs recorded from the loss: the payload's approx_kl is the mean of
    the last epoch's, approx_kl_max the largest of all (epoch 0 starts near 0)."""
    policy = small_policy()
    batch = batch_for(policy)
    agent = PPOAgent(policy, config(learning_rate=3e-3))
    seen: list[float] = []
    original = losses.ppo_loss

    def spy(*args: object, **kwargs: object) -> object:
        loss, breakdown = original(*args, **kwargs)  # type: ignore[arg-type]
        seen.append(float(breakdown.approx_kl))
        return loss, breakdown

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("ppo.update.agent.ppo_loss", spy)
        p = agent.update(batch).payload
    assert len(seen) == 16  # 4 epochs x 4 minibatches
    assert p.approx_kl == pytest.approx(sum(seen[-4:]) / 4, rel=1e-6)
    assert p.approx_kl_max == pytest.approx(max(seen), rel=1e-6)
    assert p.approx_kl > sum(seen) / 16  # the all-epoch mean would read lower


def test_group_norms_clip_scale_and_normalised_entropy_are_reported() -> None:
    policy = small_policy()
    batch = batch_for(policy)
    p = PPOAgent(policy, config(max_grad_norm=0.01)).update(batch).payload
    assert p.grad_norm_actor is not None and p.grad_norm_critic is not None
    assert p.grad_norm is not None and p.grad_norm_actor < p.grad_norm  # each a part of it
    assert p.grad_clip_scale is not None and 0 < p.grad_clip_scale < 1  # 0.01 clips hard
    assert p.entropy is not None and p.entropy_normalized is not None
    assert p.entropy_normalized == pytest.approx(p.entropy / math.log(3), rel=1e-9)
    assert p.return_std == pytest.approx(float(batch.returns.double().std(correction=0)))
    unclipped = PPOAgent(small_policy(), config(max_grad_norm=None))
    assert unclipped.update(batch_for(small_policy())).payload.grad_clip_scale is None


def test_a_continuous_policy_reports_no_normalised_entropy() -> None:
    torch.manual_seed(0)
    policy = ActorCritic(4, ActionSpec(discrete=False, n=2), hidden=(16,))
    obs = torch.randn(64, 4)
    with torch.no_grad():
        actions = policy.act(obs)
        logp, _, values = policy.evaluate(obs, actions)
    batch = Batch(obs, actions, logp, values, values + 1.0, torch.randn(64))
    p = PPOAgent(policy, config()).update(batch).payload
    assert p.entropy is not None and p.entropy_normalized is None
    assert p.grad_norm_actor is not None  # the log-std is an actor parameter
