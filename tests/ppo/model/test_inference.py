"""The numpy rollout actor agrees with the torch actor and never samples a masked action."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ppo.model.inference import NumpyActor
from ppo.model.policy import ActionSpec, ActorCritic
from ppo.update.agent import make_adam


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_numpy_output_matches_torch_actor(activation: str) -> None:
    torch.manual_seed(0)
    policy = ActorCritic(6, ActionSpec(discrete=True, n=4), (32, 16), activation)  # type: ignore[arg-type]
    obs = np.random.default_rng(0).normal(size=(9, 6)).astype(np.float32)
    with torch.no_grad():
        expected = policy.actor(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(NumpyActor(policy).output(obs), expected, rtol=1e-5, atol=1e-6)


def test_views_follow_optimizer_updates() -> None:
    torch.manual_seed(0)
    policy = ActorCritic(3, ActionSpec(discrete=True, n=2), (8,))
    actor = NumpyActor(policy)
    obs = np.ones((1, 3), dtype=np.float32)
    before = actor.output(obs).copy()
    opt = make_adam(list(policy.parameters()), lr=0.1, eps=1e-8)  # in place, as the agent's
    policy.actor(torch.from_numpy(obs)).sum().backward()
    opt.step()
    with torch.no_grad():
        expected = policy.actor(torch.from_numpy(obs)).numpy()
    assert not np.allclose(before, expected)
    np.testing.assert_allclose(actor.output(obs), expected, rtol=1e-5, atol=1e-6)


def test_sampling_frequencies_and_masks() -> None:
    torch.manual_seed(0)
    policy = ActorCritic(2, ActionSpec(discrete=True, n=3), (8,))
    actor = NumpyActor(policy)
    obs = np.zeros((20_000, 2), dtype=np.float32)
    rng = np.random.default_rng(0)
    with torch.no_grad():
        probs = torch.softmax(policy.actor(torch.from_numpy(obs[:1])), -1)[0].numpy()
    freq = np.bincount(actor.act(obs, None, rng), minlength=3) / len(obs)
    np.testing.assert_allclose(freq, probs, atol=0.015)
    mask = np.tile(np.array([True, False, True]), (len(obs), 1))
    assert set(actor.act(obs, mask, rng).tolist()) == {0, 2}
    with pytest.raises(ValueError, match="no legal action"):
        actor.act(obs[:2], np.zeros((2, 3), dtype=bool), rng)


def test_gaussian_samples_spread_by_log_std() -> None:
    torch.manual_seed(0)
    policy = ActorCritic(2, ActionSpec(discrete=False, n=2), (8,))
    assert policy.log_std is not None
    with torch.no_grad():
        policy.log_std.fill_(np.log(0.5))
    actor = NumpyActor(policy)
    obs = np.zeros((50_000, 2), dtype=np.float32)
    samples = actor.act(obs, None, np.random.default_rng(1))
    np.testing.assert_allclose(samples.std(axis=0), [0.5, 0.5], rtol=0.02)
    np.testing.assert_allclose(samples.mean(axis=0), actor.output(obs[:1])[0], atol=0.01)


@pytest.mark.parametrize("discrete", [True, False], ids=["categorical", "gaussian"])
def test_a_copy_acts_with_the_weights_of_its_last_refresh(discrete: bool) -> None:
    """The actor of a policy on a GPU: a CPU copy, stale after an optimizer step until
    refresh(), then bit-equal to the actor that reads views (shown here on the CPU)."""
    torch.manual_seed(0)
    policy = ActorCritic(3, ActionSpec(discrete=discrete, n=2), (8,))
    copy, views = NumpyActor(policy, copy=True), NumpyActor(policy)
    assert copy.copied and not views.copied
    obs = np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32)
    opt = make_adam(list(policy.parameters()), lr=0.1, eps=1e-8)
    actions = torch.zeros(5, dtype=torch.long) if discrete else torch.zeros(5, 2)
    policy.distribution(torch.from_numpy(obs)).log_prob(actions).sum().backward()
    opt.step()
    assert not np.array_equal(copy.output(obs), views.output(obs))
    if not discrete:
        assert not np.array_equal(copy.log_std, views.log_std)
    copy.refresh()
    np.testing.assert_array_equal(copy.output(obs), views.output(obs))
    if not discrete:
        np.testing.assert_array_equal(copy.log_std, views.log_std)
        rng_a, rng_b = np.random.default_rng(2), np.random.default_rng(2)
        np.testing.assert_array_equal(copy.act(obs, None, rng_a), views.act(obs, None, rng_b))
