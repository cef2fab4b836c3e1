"""GRPO's update: the group-relative advantage on every token, no critic, the loss and the
reference KL aggregated by loss_agg_mode; its config's cross-field rules."""

from __future__ import annotations

import math

import pytest
import torch

from ppo.config.settings import ConfigError
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.figures import kl_declarations
from ppo.tokens.update import TokenBatch, minibatch_loss

VALID = torch.tensor([[True, True, False], [True, True, True]])


def _batch(logp_ref: torch.Tensor | None = None) -> TokenBatch:
    return TokenBatch(
        sequences=torch.zeros(2, 5, dtype=torch.long),
        prompt_len=2,
        actions=torch.full((2, 3), 2),
        valid=VALID,
        logp_old=torch.zeros(2, 3),
        values_old=torch.full((2, 3), 7.0),  # a critic's values: GRPO never reads them
        returns=torch.tensor([1.0, 0.0]),
        logp_ref=logp_ref,
        advantages=torch.tensor([2.0, -1.0]),
    )


@pytest.mark.parametrize(
    ("mode", "policy"),
    [
        ("token-mean", -(2 + 2 - 1 - 1 - 1) / 5),
        ("seq-mean-token-sum", -((2 + 2) + (-1 - 1 - 1)) / 2),
        ("seq-mean-token-mean", -(2 + -1) / 2),
    ],
)
def test_grpo_loss_is_the_aggregated_group_advantage_without_a_critic(
    mode: str, policy: float
) -> None:
    config = TokenPPOConfig(algorithm="grpo", group_size=2, loss_agg_mode=mode)
    outputs = (torch.zeros(2, 3, requires_grad=True), torch.zeros(2, 3), torch.zeros(2, 3))
    total, parts = minibatch_loss(outputs, _batch(), torch.arange(2), config, 0.0)
    # ratio 1 everywhere: the clipped objective is -A per token, aggregated by the mode
    assert parts.policy_loss.item() == pytest.approx(policy)
    assert math.isnan(parts.value_loss)  # no critic: its payload leaves value_loss absent
    assert total.item() == pytest.approx(policy)


def test_grpo_reference_kl_term_is_aggregated_like_the_loss() -> None:
    ref = torch.log(torch.tensor([[0.5, 0.25, 1.0], [0.5, 0.5, 0.25]]))
    logp_new = torch.log(torch.full((2, 3), 0.5))
    config = TokenPPOConfig(
        algorithm="grpo", group_size=2, loss_agg_mode="seq-mean-token-sum",
        ref_kl_loss_estimator="k1",
    )  # fmt: skip
    outputs = (logp_new, torch.zeros(2, 3), torch.zeros(2, 3))
    _, parts = minibatch_loss(outputs, _batch(ref), torch.arange(2), config, 0.5)
    k1 = (logp_new - ref)[VALID]  # per token: 0, ln 2 | 0, 0, ln 2
    assert parts.ref_kl is not None and parts.ref_kl.item() == pytest.approx(k1.mean().item())
    per_sequence_sum = (k1[:2].sum() + k1[2:].sum()) / 2
    assert parts.ref_kl_loss.item() == pytest.approx(0.5 * per_sequence_sum.item())


def test_grpo_config_needs_groups_that_divide_the_batch() -> None:
    with pytest.raises(ConfigError, match="group_size >= 2"):
        TokenPPOConfig(algorithm="grpo")
    with pytest.raises(ConfigError, match="multiple of group_size"):
        TokenPPOConfig(algorithm="grpo", group_size=3, rollouts_per_update=256)
    with pytest.raises(ConfigError, match="loss_agg_mode"):
        TokenPPOConfig(algorithm="grpo", group_size=4, loss_agg_mode="sum")  # type: ignore[arg-type]


def test_grpo_declares_the_old_policy_kl_only_when_a_batch_gets_several_steps() -> None:
    one = TokenPPOConfig(algorithm="grpo", group_size=4, update_epochs=1, num_minibatches=1)
    assert set(kl_declarations(one)) == {"ref_kl"}
    assert kl_declarations(one)["ref_kl"].estimator == "low_var_kl"
    assert kl_declarations(one)["ref_kl"].against == "reference"
    several = TokenPPOConfig(algorithm="grpo", group_size=4, update_epochs=2)
    assert set(kl_declarations(several)) == {"ref_kl", "approx_kl", "approx_kl_max"}
    assert kl_declarations(several)["approx_kl"].against == "old_policy"
