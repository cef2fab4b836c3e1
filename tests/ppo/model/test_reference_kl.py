"""KL to a frozen reference policy: in the loss, in the reward, under the controller."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from ppo.config import PPOConfig
from ppo.core import advantages as adv
from ppo.core.kl import estimate
from ppo.core.kl_control import adapt_proportional
from ppo.core.losses import LossInputs, ppo_loss
from ppo.model.checkpoint import CheckpointError
from ppo.model.policy import ActorCritic
from ppo.model.reference import build_reference, frozen, load_weights
from ppo.rollout.buffer import Batch
from ppo.rollout.collector import Collector
from ppo.rollout.envs import make_vector_env
from ppo.run.trainer import Trainer
from ppo.update.agent import PPOAgent
from telemetry import PPOUpdate, read_events
from tests.ppo.helpers import batch_for, config, params_of, same_params, small_policy


def distant(policy: ActorCritic, seed: int = 1) -> ActorCritic:
    """A frozen reference whose action head is moved well away from ``policy``'s (a fresh
    policy is nearly uniform: its output layer starts at gain 0.01)."""
    reference = frozen(policy)
    head = reference.actor[-1]
    assert isinstance(head, torch.nn.Linear)
    with torch.no_grad():
        head.weight += torch.randn(head.weight.shape, generator=torch.Generator().manual_seed(seed))
    return reference


def with_reference(batch: Batch, reference: ActorCritic) -> Batch:
    with torch.no_grad():
        logp_ref = reference.distribution(batch.obs).log_prob(batch.actions)
    return Batch(**{**batch.__dict__, "logp_ref": logp_ref})


def loss_inputs(policy: ActorCritic, batch: Batch) -> LossInputs:
    logp, entropy, values = policy.evaluate(batch.obs, batch.actions)
    return batch.loss_inputs(logp, entropy, values, batch.advantages)


@pytest.mark.parametrize("estimator", ["low_var_kl", "k3+", "k1"])
def test_the_loss_with_a_reference_is_the_loss_without_it_plus_coef_times_the_kl(
    estimator: str,
) -> None:
    policy = small_policy(0)
    batch = with_reference(batch_for(policy, size=64), distant(policy))
    cfg = config(ref_kl_loss_coef=0.3, ref_kl_loss_estimator=estimator)
    without, parts_without = ppo_loss(loss_inputs(policy, batch), cfg, 0.01, 0.0, 0.0)
    inputs = loss_inputs(policy, batch)
    with_ref, parts = ppo_loss(inputs, cfg, 0.01, 0.0, 0.3)
    by_hand = estimate(batch.logp_ref, inputs.logp_new.detach(), estimator).mean()  # type: ignore[arg-type]
    assert parts.ref_kl is not None and float(parts.ref_kl) == pytest.approx(float(by_hand))
    assert float(by_hand) > 0.01  # the two policies really differ
    total, plain = float(with_ref.detach()), float(without.detach())
    assert total == pytest.approx(plain + 0.3 * float(by_hand), rel=1e-6)
    assert float(parts.ref_kl_loss) == pytest.approx(0.3 * float(by_hand), rel=1e-6)
    assert parts_without.ref_kl is not None and float(parts_without.ref_kl_loss) == 0.0


def test_the_reference_kl_term_pulls_the_policy_toward_the_reference() -> None:
    policy = small_policy(0)
    reference = distant(policy)
    batch = with_reference(batch_for(policy, size=256), reference)
    cfg = config(ref_kl_loss_coef=1.0, ent_coef=0.0, vf_coef=0.0)
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.5)
    kls = []
    for _ in range(30):
        zero = Batch(**{**batch.__dict__, "advantages": torch.zeros(batch.size)})
        loss, parts = ppo_loss(loss_inputs(policy, zero), cfg, 0.0, 0.0, 1.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        kls.append(float(parts.ref_kl))  # type: ignore[arg-type]
    assert kls[-1] < 0.5 * kls[0]


def test_the_reference_never_trains_and_receives_no_gradient() -> None:
    policy = small_policy(0)
    reference = frozen(policy)
    before = params_of(reference)
    agent = PPOAgent(policy, config(ref_kl_loss_coef=0.5, update_epochs=3))
    batch = with_reference(batch_for(policy, size=64, log_ratio_shift=0.1), reference)
    for update in range(3):
        agent.update(batch, update=update)
    assert same_params(params_of(reference), before)
    assert not same_params(params_of(policy), before)  # the policy did train
    assert all(p.grad is None and not p.requires_grad for p in reference.parameters())


def test_the_controller_moves_the_coefficient_by_the_closed_form() -> None:
    policy = small_policy(0)
    cfg = config(ref_kl_loss_coef=0.2, ref_kl_target=0.001, ref_kl_horizon=128)
    agent = PPOAgent(policy, cfg)
    batch = with_reference(batch_for(policy, size=64), distant(policy, seed=3))
    coef = 0.2
    for update in range(4):
        payload = agent.update(batch, update=update).payload
        assert payload.ref_kl_coef == coef  # the coefficient this update used
        assert payload.ref_kl is not None
        coef = adapt_proportional(coef, payload.ref_kl, 0.001, 64, 128)
        assert agent.ref_kl_loss_coef == coef
    assert coef > 0.2  # KL far above target: the coefficient rose by 10% per update


def test_every_loss_term_is_reported_and_they_sum_to_the_total() -> None:
    policy = small_policy(0)
    cfg = config(
        ref_kl_loss_coef=0.3,
        kl_penalty_coefficient=0.2,
        min_entropy=5.0,  # above any entropy of 3 actions: the floor is active
        min_entropy_coef=0.1,
    )
    batch = with_reference(batch_for(policy, size=64), distant(policy))
    p = PPOAgent(policy, cfg).update(batch).payload
    assert not p.early_stopped and p.skipped_steps == 0  # every evaluated minibatch applied
    assert p.entropy_penalty is not None and p.entropy_penalty > 0
    assert p.entropy_below_threshold is True
    terms = [p.policy_loss, p.value_loss, p.entropy, p.kl_penalty, p.ref_kl_loss]
    assert all(t is not None for t in terms)
    total = (
        p.policy_loss  # type: ignore[operator]
        + cfg.vf_coef * p.value_loss  # type: ignore[operator]
        - cfg.ent_coef * p.entropy  # type: ignore[operator]
        + p.kl_penalty
        + p.entropy_penalty
        + p.ref_kl_loss
    )
    assert total == pytest.approx(p.total_loss, rel=1e-6)
    assert p.ratio_std is not None and p.ratio_std > 0


def test_without_a_reference_or_floor_their_fields_are_absent() -> None:
    policy = small_policy(0)
    p = PPOAgent(policy, config()).update(batch_for(policy)).payload
    absent = (
        p.ref_kl,
        p.ref_kl_coef,
        p.ref_kl_reward_coef,
        p.ref_kl_loss,
        p.ref_kl_reward_penalty,
        p.entropy_penalty,
        p.entropy_below_threshold,
    )
    assert absent == (None,) * 7


def rollout_with_reference(cfg: PPOConfig) -> tuple[Collector, ActorCritic, PPOAgent]:
    envs, spec = make_vector_env("CartPole-v1", cfg.num_envs)
    torch.manual_seed(0)
    policy = ActorCritic(spec.obs_dim, spec.action, hidden=(8,))
    reference = distant(policy)
    collector = Collector(envs, spec, policy, cfg.num_steps, np.random.default_rng(0))
    collector.reset(seed=0)
    collector.collect()
    return collector, reference, PPOAgent(policy, cfg)


@pytest.mark.parametrize("estimator", ["k1", "k3", "low_var_kl+"])
def test_the_reward_penalty_per_step_is_coef_times_the_per_sample_estimate(
    estimator: str,
) -> None:
    cfg = config(ref_kl_in_reward=True, ref_kl_reward_coef=0.05, ref_kl_reward_estimator=estimator)
    c, reference, agent = rollout_with_reference(cfg)
    buf = c.buffer
    batch = buf.to_batch(c.policy, c.obs, cfg, reference, agent.reward_kl_coef)
    assert batch.logp_ref is not None and batch.measures is not None
    per_sample = estimate(batch.logp_ref, batch.logp, estimator)  # type: ignore[arg-type]
    penalty = batch.measures.reward_penalty
    assert penalty is not None
    assert torch.allclose(penalty, 0.05 * per_sample, rtol=1e-6, atol=0)
    shaped = buf.rewards - penalty.numpy().reshape(buf.rewards.shape)
    values = batch.values.numpy().reshape(buf.rewards.shape)
    plain = buf.to_batch(c.policy, c.obs, cfg)  # no reference: the raw rewards
    next_values = _next_values(plain, values, c, cfg)
    steps = adv.Steps(shaped, values, next_values, buf.terminated, buf.truncated)
    expected, _ = adv.gae(steps, cfg.gamma, cfg.gae_lambda)
    assert np.allclose(batch.advantages.numpy(), expected.reshape(-1), rtol=1e-5, atol=1e-6)
    assert not torch.allclose(plain.advantages, batch.advantages)
    p = agent.update(batch).payload
    assert p.ref_kl_reward_penalty == pytest.approx(float(penalty.double().mean()), rel=1e-9)
    assert p.ref_kl_reward_coef == 0.05 and p.ref_kl_coef is None and p.ref_kl_loss is None
    c.envs.close()


def _next_values(plain: Batch, values: np.ndarray, c: Collector, cfg: PPOConfig) -> np.ndarray:
    """V(s') recovered from a plain batch's TD errors: delta = r + gamma V' (1 - term) - V."""
    assert plain.measures is not None
    deltas = plain.measures.td_errors.numpy().reshape(values.shape)
    buf = c.buffer
    live = ~buf.terminated
    next_values = np.zeros_like(values)
    next_values[live] = (deltas + values - buf.rewards)[live] / np.float32(cfg.gamma)
    return next_values


def test_td_errors_are_the_one_step_errors_of_the_critic() -> None:
    cfg = config()
    c, _, _ = rollout_with_reference(cfg)
    batch = c.buffer.to_batch(c.policy, c.obs, cfg)
    assert batch.measures is not None
    values = batch.values.numpy().reshape(c.buffer.rewards.shape)
    returns = batch.returns.numpy().reshape(values.shape)
    # GAE with lambda 0 is the TD error; with lambda 0.95 the last step's advantage is
    deltas = batch.measures.td_errors.numpy().reshape(values.shape)
    last = (returns - values)[-1]
    assert np.allclose(deltas[-1], last, rtol=1e-5, atol=1e-6)
    c.envs.close()


def test_a_checkpoint_of_another_network_is_refused_with_its_name(tmp_path: Path) -> None:
    state_path = tmp_path / "other.pt"
    from ppo.model import checkpoint

    checkpoint.save(state_path, {"model": small_policy(0, obs_dim=7).state_dict()})
    target = small_policy(0)
    expected = (
        r"reference policy: .*other\.pt holds a policy for another environment or network "
        r"\(actor\.0\.weight is \[16, 7\] there and \[16, 4\] here\)"
    )
    with pytest.raises(CheckpointError, match=expected):
        load_weights(target, state_path, "reference policy")
    cfg = config(ref_kl_loss_coef=0.1, reference=str(tmp_path / "missing.pt"))
    with pytest.raises(CheckpointError, match="reference policy: no run at"):
        build_reference(cfg, target)


def test_fine_tuning_starts_from_a_checkpoint_and_keeps_its_reference_on_resume(
    tmp_path: Path,
) -> None:
    small = {"num_envs": 2, "num_steps": 32, "hidden_sizes": (16,), "checkpoint_every": 1}
    base = Trainer(PPOConfig(total_steps=128, **small), run_dir=tmp_path, run_id="base").run()  # type: ignore[arg-type]
    tuned = PPOConfig(
        total_steps=256,
        init_from=str(tmp_path / "base"),
        ref_kl_loss_coef=0.5,
        ref_kl_target=0.01,
        ref_kl_horizon=64,
        normalize_returns=True,
        **small,  # type: ignore[arg-type]
    )
    trainer = Trainer(tuned, run_dir=tmp_path, run_id="tuned")
    collector, agent, _, _ = trainer._build()
    start = torch.load(base.checkpoint_path, weights_only=True)["model"]
    assert same_params(params_of(agent.policy), start)  # init_from: the base run's policy
    assert trainer._reference is not None and same_params(params_of(trainer._reference), start)
    collector.envs.close()
    result = trainer.run()
    updates = [
        e.payload for e in read_events(result.events_path).events if isinstance(e, PPOUpdate)
    ]
    assert all(p.ref_kl is not None and p.return_scale is not None for p in updates)
    assert 0 <= updates[0].ref_kl < max(p.ref_kl for p in updates)  # type: ignore[operator]
    checkpoint_at_2 = tmp_path / "tuned" / "checkpoints" / "update_000002.pt"
    resumed = Trainer(tuned, run_dir=tmp_path, run_id="again", resume=checkpoint_at_2)
    collector, agent, _, _ = resumed._build()
    assert resumed._reference is not None
    assert same_params(params_of(resumed._reference), start)  # the reference, not the policy
    assert resumed._norm is not None and resumed._norm.returns is not None
    assert resumed._norm.returns.moments.count > 0
    saved = torch.load(checkpoint_at_2, weights_only=True)
    assert agent.ref_kl_loss_coef == saved["agent"]["ref_kl_loss_coef"] != 0.5
    assert not math.isnan(agent.ref_kl_loss_coef)
    collector.envs.close()
