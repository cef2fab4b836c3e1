"""Masked categorical: entropy, log-prob and exact KL have finite, correct gradients."""

from __future__ import annotations

import math

import torch

from ppo.core.distributions import MaskedCategorical, categorical_kl

MASK = torch.tensor([[True, False, True, True, False], [False, True, False, False, False]])


def logits(seed: int = 0) -> torch.Tensor:
    return torch.randn(2, 5, generator=torch.Generator().manual_seed(seed)).requires_grad_()


def legal_entropy(row: torch.Tensor) -> torch.Tensor:
    log_p = torch.log_softmax(row, dim=-1)
    return -(log_p.exp() * log_p).sum()


def test_masked_entropy_gradient_is_finite_and_that_of_the_legal_actions() -> None:
    x = logits()
    MaskedCategorical(x, MASK).entropy().sum().backward()
    assert x.grad is not None and bool(torch.isfinite(x.grad).all())
    assert bool((x.grad[~MASK] == 0).all())  # masked logits do not move
    expected = torch.zeros(2, 5)
    for i in range(2):
        legal = x.detach()[i, MASK[i]].clone().requires_grad_()
        legal_entropy(legal).backward()
        assert legal.grad is not None
        expected[i, MASK[i]] = legal.grad
    torch.testing.assert_close(x.grad, expected)


def test_masked_log_prob_gradients_are_finite_for_legal_and_masked_actions() -> None:
    x = logits(1)
    dist = MaskedCategorical(x, MASK)
    legal = torch.tensor([2, 1])
    dist.log_prob(legal).sum().backward(retain_graph=True)
    assert x.grad is not None and bool(torch.isfinite(x.grad).all())
    x.grad = None
    masked = torch.tensor([1, 0])
    logp = dist.log_prob(masked)
    assert bool(torch.isneginf(logp).all())  # a masked action has no probability at all
    logp.sum().backward()
    assert x.grad is not None and bool(torch.isfinite(x.grad).all())


def test_masked_probabilities_are_exactly_zero_and_rows_sum_to_one() -> None:
    probs = MaskedCategorical(logits(2), MASK).probs
    assert bool((probs[~MASK] == 0).all())
    torch.testing.assert_close(probs.sum(dim=-1), torch.ones(2))


def test_exact_kl_between_masked_policies_has_finite_gradients() -> None:
    p, q = logits(3), logits(4)
    kl = categorical_kl(p.masked_fill(~MASK, -math.inf), q.masked_fill(~MASK, -math.inf))
    assert bool(torch.isfinite(kl).all()) and bool((kl >= 0).all())
    kl.sum().backward()
    for x in (p, q):
        assert x.grad is not None and bool(torch.isfinite(x.grad).all())
        assert bool((x.grad[~MASK] == 0).all())
    legal = [categorical_kl(p.detach()[i, MASK[i]], q.detach()[i, MASK[i]]) for i in range(2)]
    torch.testing.assert_close(kl.detach(), torch.stack(legal))


def test_kl_is_infinite_where_q_masks_an_action_p_allows() -> None:
    p = torch.zeros(1, 3)
    q = torch.tensor([[0.0, 0.0, -math.inf]])
    assert math.isinf(float(categorical_kl(p, q)[0]))
