"""KL estimators against exact KLs of known categorical and Gaussian distributions."""

from __future__ import annotations

import math

import pytest
import torch

from ppo.core.distributions import categorical_kl, gaussian_kl
from ppo.core.kl import (
    BASE_ESTIMATORS,
    ESTIMATORS,
    estimate,
    estimate_from_log_ratio,
    guarded_log_ratio,
    register,
)

P_OLD = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
P_NEW = torch.tensor([0.4, 0.4, 0.2], dtype=torch.float64)


def exact_categorical_kl(p: torch.Tensor, q: torch.Tensor) -> float:
    return float(sum(pi * math.log(pi / qi) for pi, qi in zip(p.tolist(), q.tolist(), strict=True)))


def expectation_under_old(estimator: str) -> float:
    """E_{a ~ p_old}[k(a)], summed exactly over the three actions (no sampling noise)."""
    per_action = estimate(P_NEW.log(), P_OLD.log(), estimator)  # type: ignore[arg-type]
    return float((P_OLD * per_action).sum())


def test_exact_categorical_kl_helper_matches_closed_form() -> None:
    got = categorical_kl(P_OLD.log()[None], P_NEW.log()[None])
    assert float(got[0]) == pytest.approx(exact_categorical_kl(P_OLD, P_NEW), rel=1e-12)


@pytest.mark.parametrize("estimator", ["k1", "k3", "low_var_kl"])
def test_unbiased_estimators_have_exact_expectation(estimator: str) -> None:
    assert expectation_under_old(estimator) == pytest.approx(
        exact_categorical_kl(P_OLD, P_NEW), rel=1e-12
    )


def test_k2_is_close_for_nearby_distributions_and_never_negative() -> None:
    exact = exact_categorical_kl(P_OLD, P_NEW)
    assert expectation_under_old("k2") == pytest.approx(exact, rel=0.05)
    log_ratio = torch.linspace(-3, 3, 61)
    for name in ("k2", "k3", "low_var_kl", "abs"):
        assert bool((estimate_from_log_ratio(log_ratio, name) >= 0).all())  # type: ignore[arg-type]


def test_k3_monte_carlo_matches_exact_kl() -> None:
    gen = torch.Generator().manual_seed(0)
    actions = torch.multinomial(P_OLD, 200_000, replacement=True, generator=gen)
    per_sample = estimate(P_NEW.log()[actions], P_OLD.log()[actions], "k3")
    stderr = float(per_sample.std()) / math.sqrt(per_sample.numel())
    assert abs(float(per_sample.mean()) - exact_categorical_kl(P_OLD, P_NEW)) < 4 * stderr


def test_gaussian_estimators_against_exact_normal_kl() -> None:
    mean_old, std_old = torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5])
    mean_new, std_new = torch.tensor([0.2, 0.9]), torch.tensor([1.1, 0.55])
    exact = float(gaussian_kl(mean_old, std_old.log(), mean_new, std_new.log()))
    reference = torch.distributions.kl_divergence(
        torch.distributions.Normal(mean_old, std_old), torch.distributions.Normal(mean_new, std_new)
    ).sum()
    assert exact == pytest.approx(float(reference), rel=1e-6)
    old = torch.distributions.Normal(mean_old.double(), std_old.double())
    new = torch.distributions.Normal(mean_new.double(), std_new.double())
    torch.manual_seed(1)
    x = old.sample((200_000,))
    logp_old, logp_new = old.log_prob(x).sum(-1), new.log_prob(x).sum(-1)
    for name in ("k1", "k3"):
        per_sample = estimate(logp_new, logp_old, name)  # type: ignore[arg-type]
        stderr = float(per_sample.std()) / math.sqrt(per_sample.numel())
        assert abs(float(per_sample.mean()) - exact) < 4 * stderr


def test_estimator_formulas_at_a_point() -> None:
    lr = torch.tensor([math.log(2.0)])
    assert float(estimate_from_log_ratio(lr, "k1")[0]) == pytest.approx(-math.log(2.0))
    assert float(estimate_from_log_ratio(lr, "k2")[0]) == pytest.approx(0.5 * math.log(2.0) ** 2)
    assert float(estimate_from_log_ratio(lr, "k3")[0]) == pytest.approx(1.0 - math.log(2.0))
    assert float(estimate_from_log_ratio(-lr, "abs")[0]) == pytest.approx(math.log(2.0))
    big = torch.tensor([5.0])
    assert float(estimate_from_log_ratio(big, "k3")[0]) == pytest.approx(math.exp(5) - 6)
    assert float(estimate_from_log_ratio(big, "low_var_kl")[0]) == 10.0


def test_log_ratio_is_guarded_before_exp() -> None:
    new = torch.tensor([0.0, math.nan, 100.0, -math.inf, -1.0])
    old = torch.zeros(5)
    log_ratio, nonfinite = guarded_log_ratio(new, old, clamp=20.0)
    assert log_ratio.tolist() == [0.0, 0.0, 20.0, -20.0, -1.0]
    assert int(nonfinite) == 2
    values = estimate(new, old, "k3")
    assert bool(torch.isfinite(values).all())
    assert float(values[2]) == pytest.approx(math.expm1(20.0) - 20.0)


def test_unknown_estimator_is_named() -> None:
    with pytest.raises(ValueError, match="kl_estimator must be one of k1, k2, k3, low_var_kl, abs"):
        estimate_from_log_ratio(torch.zeros(1), "k9")
    base = ("k1", "k2", "k3", "low_var_kl", "abs")
    assert ESTIMATORS == (*base, *(f"{name}+" for name in base))


def test_the_names_are_the_registry_s() -> None:
    assert ESTIMATORS == (*BASE_ESTIMATORS, *(f"{name}+" for name in BASE_ESTIMATORS))
    for taken in ("k1", "k3+"):  # a name is registered once; "+" is the straight-through suffix
        with pytest.raises(ValueError, match="already registered or ends in"):
            register(taken)(torch.neg)
    assert ESTIMATORS[0] == "k1"


BASE_GRADIENTS = {
    "k1": lambda x: -torch.ones_like(x),
    "k2": lambda x: x,
    "k3": lambda x: torch.expm1(x),
    "low_var_kl": lambda x: torch.where(torch.expm1(x) - x < 10.0, torch.expm1(x), 0.0),
    "abs": torch.sign,
}
"""d estimate / d log r in closed form (low_var_kl: zero where the clamp holds it at 10)."""


@pytest.mark.parametrize("name", list(BASE_GRADIENTS))
def test_straight_through_takes_the_base_value_and_the_gradient_of_k2(name: str) -> None:
    points = torch.tensor([-3.0, -0.7, -0.1, 0.05, 0.4, 1.5, 4.0], dtype=torch.float64)
    plain = points.clone().requires_grad_(True)
    estimate_from_log_ratio(plain, name).sum().backward()  # type: ignore[arg-type]
    straight = points.clone().requires_grad_(True)
    value = estimate_from_log_ratio(straight, f"{name}+")  # type: ignore[arg-type]
    value.sum().backward()
    assert torch.equal(value.detach(), estimate_from_log_ratio(points, name))  # type: ignore[arg-type]
    assert plain.grad is not None and straight.grad is not None
    assert torch.allclose(plain.grad, BASE_GRADIENTS[name](points), rtol=1e-12, atol=0)
    assert torch.allclose(straight.grad, points, rtol=1e-12, atol=0)  # d/dx x^2/2 = x


def test_the_reference_kl_is_kl_of_the_sampling_policy_to_the_reference() -> None:
    """estimate(logp_ref, logp_theta): samples from pi_theta, so it estimates KL(theta || ref)."""
    theta, ref = P_NEW, P_OLD  # samples drawn from theta this time
    per_action = estimate(ref.log(), theta.log(), "k3")
    assert float((theta * per_action).sum()) == pytest.approx(
        exact_categorical_kl(theta, ref), rel=1e-12
    )
    k1 = estimate(ref.log(), theta.log(), "k1")  # verl: k1 = logprob - ref_logprob
    assert torch.allclose(k1, theta.log() - ref.log(), rtol=1e-12, atol=0)
