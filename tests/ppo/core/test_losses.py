"""Pure loss functions: surrogate, dual clip, value clipping, entropy floor, KL penalty (C-02)."""

from __future__ import annotations

import math

import pytest
import torch

from ppo.config import PPOConfig
from ppo.core.losses import (
    LossAggMode,
    LossInputs,
    aggregate,
    clipped_surrogate,
    entropy_penalty,
    ppo_loss,
    value_loss,
)


def fixed_inputs(requires_grad: bool = True) -> LossInputs:
    logp_old = torch.tensor([-0.7, -0.9, -1.2, -0.3, -2.0, -0.5])
    shift = torch.tensor([0.10, -0.25, 0.40, 0.0, -0.05, 0.30])
    logp_new = (logp_old + shift).clone().requires_grad_(requires_grad)
    return LossInputs(
        logp_new=logp_new,
        logp_old=logp_old,
        entropy=torch.tensor([0.69, 0.60, 0.55, 0.40, 0.68, 0.50], requires_grad=requires_grad),
        values=torch.tensor([1.0, 0.5, -0.2, 2.0, 0.0, 1.5], requires_grad=requires_grad),
        values_old=torch.tensor([0.9, 0.7, -0.1, 2.5, 0.1, 1.0]),
        returns=torch.tensor([1.5, 0.0, 0.3, 2.2, -1.0, 1.2]),
        advantages=torch.tensor([0.5, -1.0, 1.5, 0.2, -0.3, -2.0]),
    )


@pytest.mark.parametrize("estimator", ["k1", "k2", "k3", "low_var_kl", "abs"])
@pytest.mark.parametrize("coef", [0.0, 0.1, 3.0])
def test_c02_total_loss_is_pieces_plus_coef_times_approx_kl(estimator: str, coef: float) -> None:
    config = PPOConfig(kl_estimator=estimator, kl_penalty_coefficient=coef)  # type: ignore[arg-type]
    inputs = fixed_inputs()
    total, parts = ppo_loss(inputs, config, ent_coef=0.01, kl_coef=coef)
    assert math.isfinite(float(parts.approx_kl))
    pieces = parts.policy_loss + config.vf_coef * parts.value_loss - 0.01 * parts.entropy
    assert float(total.detach()) == pytest.approx(float(pieces + coef * parts.approx_kl), rel=1e-6)
    assert float(parts.kl_penalty) == pytest.approx(coef * float(parts.approx_kl), rel=1e-6)
    assert float(parts.total_loss) == float(total.detach())
    log_r = inputs.logp_new.detach() - inputs.logp_old
    expected_kl = {
        "k1": (-log_r).mean(),
        "k2": (0.5 * log_r**2).mean(),
        "k3": (log_r.exp() - 1 - log_r).mean(),
        "low_var_kl": (log_r.exp() - 1 - log_r).mean(),
        "abs": log_r.abs().mean(),
    }[estimator]
    assert float(parts.approx_kl) == pytest.approx(float(expected_kl), rel=1e-6)
    total.backward()  # the penalty is differentiable: it shapes the policy gradient
    assert inputs.logp_new.grad is not None and bool(torch.isfinite(inputs.logp_new.grad).all())


def test_c02_breakdown_is_detached_tensors() -> None:
    _, parts = ppo_loss(fixed_inputs(), PPOConfig(kl_penalty_coefficient=0.5), 0.01, 0.5)
    for name in ("policy_loss", "value_loss", "entropy", "approx_kl", "kl_penalty", "total_loss"):
        value = getattr(parts, name)
        assert isinstance(value, torch.Tensor) and value.dim() == 0 and not value.requires_grad


def test_c02_penalty_gradient_pulls_toward_old_policy() -> None:
    inputs = fixed_inputs()
    config = PPOConfig(kl_penalty_coefficient=1.0, vf_coef=0.0, ent_coef=0.0)
    _, parts = ppo_loss(inputs, config, 0.0, 1.0)
    penalty_only = LossInputs(**{**inputs.__dict__, "advantages": torch.zeros(6)})
    total, _ = ppo_loss(penalty_only, config, 0.0, 1.0)
    total.backward()
    grad = inputs.logp_new.grad
    assert grad is not None
    # k3 gradient wrt log r is (r - 1)/n: positive where the new policy gained probability.
    shift = inputs.logp_new.detach() - inputs.logp_old
    assert torch.equal(torch.sign(grad), torch.sign(shift))
    assert float(parts.approx_kl) > 0


def test_clipped_surrogate_by_hand() -> None:
    log_ratio = torch.tensor([math.log(1.5), math.log(0.5), math.log(1.1)])
    adv = torch.tensor([1.0, 1.0, -1.0])
    loss, stats = clipped_surrogate(log_ratio, adv, clip_range=0.2)
    # per sample: max(-A r, -A clip(r)) = [-1.2, -0.5, 1.1]
    assert float(loss) == pytest.approx((-1.2 - 0.5 + 1.1) / 3)
    assert float(stats.clip_fraction) == pytest.approx(2 / 3)
    assert float(stats.ratio_min) == pytest.approx(0.5)
    assert float(stats.ratio_max) == pytest.approx(1.5)
    assert stats.clip_fraction_lower is None


def test_dual_clip_bounds_negative_advantage_loss() -> None:
    log_ratio = torch.tensor([math.log(10.0), math.log(2.0), math.log(10.0)])
    adv = torch.tensor([-1.0, -1.0, 1.0])
    loss, stats = clipped_surrogate(log_ratio, adv, clip_range=0.2, clip_ratio_c=3.0)
    # sample 0: max(10, 1.2) = 10 bounded by -A*c = 3; sample 1: 2 < 3; sample 2: -1.2
    assert float(loss) == pytest.approx((3.0 + 2.0 - 1.2) / 3)
    assert stats.clip_fraction_lower is not None
    assert float(stats.clip_fraction_lower) == pytest.approx(0.5)  # 1 of 2 negative samples


def test_value_loss_with_and_without_clipping() -> None:
    values, returns, old = (
        torch.tensor([2.0, 0.0]),
        torch.tensor([3.0, 0.0]),
        torch.tensor([1.0, 0.5]),
    )
    assert float(value_loss(values, returns, old, None)) == pytest.approx(0.25)
    # clipped predictions: [1.2, 0.3] -> squared errors [3.24, 0.09]; max with [1, 0]
    assert float(value_loss(values, returns, old, 0.2)) == pytest.approx(0.5 * (3.24 + 0.09) / 2)


def test_min_entropy_penalty_only_below_floor() -> None:
    assert float(entropy_penalty(torch.tensor(0.3), 0.5, 2.0)) == pytest.approx(0.4)
    assert float(entropy_penalty(torch.tensor(0.7), 0.5, 2.0)) == 0.0
    assert float(entropy_penalty(torch.tensor(0.1), None, 2.0)) == 0.0


def test_nonfinite_ratios_are_replaced_and_counted() -> None:
    inputs = fixed_inputs(requires_grad=False)
    bad_old = inputs.logp_old.clone()
    bad_old[1] = math.nan
    bad = LossInputs(**{**inputs.__dict__, "logp_old": bad_old})
    total, parts = ppo_loss(bad, PPOConfig(), 0.01, 0.0)
    assert int(parts.nonfinite_ratios) == 1
    assert math.isfinite(float(total.detach())) and math.isfinite(float(parts.approx_kl))


# verl's loss_agg_mode on a [2, 3] loss: sequence 0 has tokens 1, 2 (third is padding, its
# 99 ignored), sequence 1 has 3, 4, 5.
AGG_LOSS = torch.tensor([[1.0, 2.0, 99.0], [3.0, 4.0, 5.0]])
AGG_MASK = torch.tensor([[True, True, False], [True, True, True]])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("token-mean", (1 + 2 + 3 + 4 + 5) / 5),  # 3.0
        ("seq-mean-token-sum", ((1 + 2) + (3 + 4 + 5)) / 2),  # 7.5
        ("seq-mean-token-mean", ((1 + 2) / 2 + (3 + 4 + 5) / 3) / 2),  # 2.75
    ],
)
def test_loss_aggregation_modes_by_hand(mode: LossAggMode, expected: float) -> None:
    loss = AGG_LOSS.clone().requires_grad_(True)
    out = aggregate(loss, AGG_MASK, mode)
    assert out.item() == pytest.approx(expected)
    out.backward()
    assert loss.grad is not None and loss.grad[0, 2].item() == 0.0  # padding gets no gradient


def test_loss_aggregation_ignores_a_non_finite_padding_and_rejects_an_unknown_mode() -> None:
    loss = AGG_LOSS.clone()
    loss[0, 2] = math.inf
    assert aggregate(loss, AGG_MASK, "token-mean").item() == pytest.approx(3.0)
    with pytest.raises(ValueError, match="loss_agg_mode"):
        aggregate(loss, AGG_MASK, "seq-sum")  # type: ignore[arg-type]


def test_clip_regions_count_only_the_clipped_side_that_the_loss_takes() -> None:
    # r: 0.5 (A<0: low), 0.5 (A>0: not taken), 1.5 (A>0: high), 1.5 (A<0: not), 1.0
    log_ratio = torch.log(torch.tensor([0.5, 0.5, 1.5, 1.5, 1.0]))
    adv = torch.tensor([-1.0, 1.0, 1.0, -1.0, 1.0])
    _, stats = clipped_surrogate(log_ratio, adv, 0.2)
    low, high = stats.clip_fraction_low, stats.clip_fraction_high
    assert (low.item(), high.item()) == pytest.approx((0.2, 0.2))
    assert stats.clip_fraction.item() == pytest.approx(0.8)  # |r - 1| > 0.2, either sign
