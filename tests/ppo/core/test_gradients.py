"""Group gradient norms and clipping: the same numbers as torch's clip_grad_norm_, plus the
actor/critic split and the factor applied."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from ppo.core.distributions import uniform_entropy
from ppo.core.gradients import clip_grad_norm
from ppo.model.policy import ActionSpec, ActorCritic


def policy_with_grads(seed: int = 0, scale: float = 1.0) -> ActorCritic:
    torch.manual_seed(seed)
    policy = ActorCritic(3, ActionSpec(discrete=False, n=2), hidden=(5,))
    obs = torch.randn(7, 3)
    dist = policy.distribution(obs)
    loss = scale * (dist.log_prob(torch.randn(7, 2)).mean() + policy.value(obs).square().mean())
    loss.backward()
    return policy


def grads(policy: nn.Module) -> list[torch.Tensor]:
    return [p.grad.clone() for p in policy.parameters() if p.grad is not None]


@pytest.mark.parametrize("max_norm", [0.05, 1e6, None])
def test_clipping_matches_torch_clip_grad_norm(max_norm: float | None) -> None:
    ours, theirs = policy_with_grads(), policy_with_grads()
    norms = clip_grad_norm(ours.parameter_groups(), max_norm)
    total = nn.utils.clip_grad_norm_(
        list(theirs.parameters()), math.inf if max_norm is None else max_norm
    )
    assert float(norms.total) == pytest.approx(float(total), rel=1e-6)
    for a, b in zip(grads(ours), grads(theirs), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=0)


def test_group_norms_split_the_total_and_the_scale_is_what_was_applied() -> None:
    policy = policy_with_grads(scale=100.0)
    before = {name: [p.grad.clone() for p in ps] for name, ps in policy.parameter_groups().items()}
    norms = clip_grad_norm(policy.parameter_groups(), 0.5)
    actor, critic = float(norms.groups["actor"]), float(norms.groups["critic"])
    assert math.hypot(actor, critic) == pytest.approx(float(norms.total), rel=1e-6)
    expected_actor = math.sqrt(sum(float(g.square().sum()) for g in before["actor"]))
    assert actor == pytest.approx(expected_actor, rel=1e-6)  # log_std counted in the actor
    assert float(norms.scale) == pytest.approx(0.5 / (float(norms.total) + 1e-6), rel=1e-6)
    after = [p.grad for p in policy.parameter_groups()["critic"]]
    for b, a in zip(before["critic"], after, strict=True):
        torch.testing.assert_close(a, b * norms.scale)


def test_no_clip_scale_is_one_and_gradients_untouched() -> None:
    policy = policy_with_grads()
    before = grads(policy)
    norms = clip_grad_norm(policy.parameter_groups(), None)
    assert float(norms.scale) == 1.0
    for a, b in zip(grads(policy), before, strict=True):
        assert torch.equal(a, b)


def test_uniform_entropy_with_and_without_masks() -> None:
    assert uniform_entropy(4) == pytest.approx(math.log(4))
    masks = torch.tensor([[True, True, False, False], [True, True, True, True]])
    assert uniform_entropy(4, masks) == pytest.approx((math.log(2) + math.log(4)) / 2)
