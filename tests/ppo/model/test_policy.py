"""Actor-critic heads: masked actions are never sampled and have zero probability."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces

from ppo.core.distributions import DiagGaussian, MaskedCategorical
from ppo.model.policy import ActionSpec, ActorCritic


def masked_policy() -> tuple[ActorCritic, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    policy = ActorCritic(3, ActionSpec(discrete=True, n=5), hidden=(16,))
    obs = torch.randn(64, 3)
    mask = torch.rand(64, 5, generator=torch.Generator().manual_seed(1)) > 0.5
    mask[torch.arange(64), torch.randint(0, 5, (64,))] = True  # at least one legal action
    return policy, obs, mask


def test_masked_action_never_sampled_in_rollout() -> None:
    policy, obs, mask = masked_policy()
    gen = torch.Generator().manual_seed(2)
    with torch.inference_mode():
        for _ in range(300):
            actions = policy.act(obs, mask, gen)
            assert bool(mask[torch.arange(64), actions].all())


def test_masked_action_has_zero_probability_in_update() -> None:
    policy, obs, mask = masked_policy()
    dist = policy.distribution(obs, mask)
    assert bool((dist.probs[~mask] == 0).all())  # type: ignore[union-attr]
    illegal = (~mask).float().argmax(dim=-1)
    has_illegal = (~mask).any(dim=-1)
    logp, entropy, values = policy.evaluate(obs, illegal, mask)
    assert bool(torch.isneginf(logp[has_illegal]).all())
    assert bool(torch.isfinite(entropy).all()) and values.shape == (64,)
    legal = mask.float().argmax(dim=-1)
    logp_legal, _, _ = policy.evaluate(obs, legal, mask)
    logp_legal.sum().backward()  # gradients stay finite with -inf logits in the row
    assert all(
        bool(torch.isfinite(p.grad).all()) for p in policy.parameters() if p.grad is not None
    )


def test_masked_entropy_equals_entropy_over_legal_actions() -> None:
    logits = torch.tensor([[0.3, 1.0, -0.5, 2.0]])
    mask = torch.tensor([[True, False, True, False]])
    legal = torch.softmax(torch.tensor([0.3, -0.5]), dim=0)
    expected = float(-(legal * legal.log()).sum())
    assert float(MaskedCategorical(logits, mask).entropy()[0]) == pytest.approx(expected)


def test_sampling_frequencies_follow_probabilities() -> None:
    logits = torch.log(torch.tensor([[0.2, 0.5, 0.3]])).expand(100_000, 3)
    actions = MaskedCategorical(logits).sample(torch.Generator().manual_seed(0))
    freq = torch.bincount(actions, minlength=3).double() / actions.numel()
    assert freq.tolist() == pytest.approx([0.2, 0.5, 0.3], abs=0.01)


def test_gaussian_matches_torch_normal() -> None:
    mean, log_std = torch.tensor([[0.5, -1.0]]), torch.tensor([0.1, -0.3])
    dist = DiagGaussian(mean, log_std)
    x = torch.tensor([[0.2, -0.4]])
    ref = torch.distributions.Normal(mean, log_std.exp())
    assert float(dist.log_prob(x)[0]) == pytest.approx(float(ref.log_prob(x).sum()))
    assert float(dist.entropy()[0]) == pytest.approx(float(ref.entropy().sum()))


def test_box_policy_shapes_and_deterministic_mode() -> None:
    space = spaces.Box(low=-np.ones(2, dtype=np.float32), high=np.ones(2, dtype=np.float32))
    policy = ActorCritic(4, ActionSpec.from_space(space), hidden=(8, 8))
    obs = torch.randn(10, 4)
    with torch.no_grad():
        actions = policy.act(obs, generator=torch.Generator().manual_seed(0))
        mode = policy.act(obs, deterministic=True)
    assert actions.shape == (10, 2) and not torch.equal(actions, mode)
    logp, entropy, values = policy.evaluate(obs, actions)
    assert logp.shape == entropy.shape == values.shape == (10,)
    assert float(entropy[0].detach()) == pytest.approx(2 * 0.5 * math.log(2 * math.pi * math.e))


def test_unsupported_action_space_is_named() -> None:
    with pytest.raises(ValueError, match=r"action space .* is not supported"):
        ActionSpec.from_space(spaces.MultiDiscrete([2, 3]))
