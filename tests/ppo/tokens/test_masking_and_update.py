"""Masking of the action set, generation, and the episodic advantage and losses."""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor, nn

from ppo.tokens import masking
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.generate import generate
from ppo.tokens.task import Vocab
from ppo.tokens.update import TokenBatch, TokenUpdater, evaluate, minibatch_loss

VOCAB = Vocab(z_ids=(2, 3), answer_id=4, pad_id=5, names=("a", "b", "Z0", "Z1", "<A>", "<P>"))


class Favouring(nn.Module):
    """Logits that strongly favour a disallowed id (0), and a learnable bias."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(6))

    def forward(self, ids: Tensor) -> tuple[Tensor, Tensor]:
        logits = torch.zeros(*ids.shape, 6)
        logits[..., 0] = 50.0  # disallowed: must never be sampled
        logits[..., 4] = -1.0
        return logits + self.bias, torch.full(ids.shape, 0.25) + 0 * self.bias.sum()


def test_a_disallowed_id_has_zero_probability_and_is_never_sampled() -> None:
    allowed = masking.allowed_mask(6, VOCAB.allowed_ids, torch.device("cpu"))
    logp = masking.masked_log_probs(torch.tensor([[50.0, 9, 0, 0, 0, 9]]), allowed, 1.0)
    assert logp.exp()[0, [0, 1, 5]].tolist() == [0.0, 0.0, 0.0]
    assert logp.exp().sum().item() == pytest.approx(1.0)
    assert masking.entropy(logp, allowed).item() == pytest.approx(torch.log(torch.tensor(3.0)))
    gen = generate(Favouring(), torch.zeros(400, 2, dtype=torch.long), VOCAB, 8, 1.0,
                   torch.Generator().manual_seed(0))  # fmt: skip
    sampled = set(gen.tokens[gen.valid].tolist())
    assert sampled <= set(VOCAB.allowed_ids) and {2, 3, 4} <= sampled
    assert not (gen.tokens[~gen.valid] != VOCAB.pad_id).any()  # padding after the answer


def test_generation_stops_at_the_answer_or_the_length_limit() -> None:
    gen = generate(Favouring(), torch.zeros(300, 2, dtype=torch.long), VOCAB, 3, 1.0,
                   torch.Generator().manual_seed(1))  # fmt: skip
    n = gen.num_generated
    answered_at = gen.tokens[torch.arange(300), n - 1] == VOCAB.answer_id
    assert torch.equal(answered_at, gen.answered)
    assert bool((n[~gen.answered] == 3).all()) and bool((~gen.answered).any())
    # log-probs recorded at sampling are those the update recomputes (same mask, temperature)
    batch = TokenBatch(gen.sequences, 2, gen.tokens.masked_fill(~gen.valid, 4), gen.valid,
                       gen.logp, gen.values, torch.zeros(300), None)  # fmt: skip
    allowed = masking.allowed_mask(6, VOCAB.allowed_ids, torch.device("cpu"))
    logp, ent, _ = evaluate(Favouring(), batch, torch.arange(300), allowed, 1.0)
    assert torch.allclose(logp[gen.valid], gen.logp[gen.valid], atol=1e-6)
    assert torch.allclose(ent[gen.valid], gen.entropy[gen.valid], atol=1e-6)


def test_the_advantage_is_episodic_and_the_value_loss_unclipped() -> None:
    valid = torch.tensor([[True, True, False], [True, True, True]])
    values_old = torch.tensor([[0.2, 0.4, 0.0], [0.1, 0.3, 0.5]])
    returns = torch.tensor([1.0, -0.5])
    batch = TokenBatch(torch.zeros(2, 5, dtype=torch.long), 2, torch.full((2, 3), 2), valid,
                       torch.zeros(2, 3), values_old, returns, None)  # fmt: skip
    new_values = torch.tensor([[0.5, 0.0, 9.0], [0.0, 1.0, 0.0]])  # 9.0: padding
    outputs = (torch.zeros(2, 3, requires_grad=True), torch.zeros(2, 3), new_values)
    config = TokenPPOConfig(norm_adv=False, vf_coef=1.0)
    total, parts = minibatch_loss(outputs, batch, torch.arange(2), config, 0.0)
    advantages = torch.tensor([1.0 - 0.2, 1.0 - 0.4, -0.5 - 0.1, -0.5 - 0.3, -0.5 - 0.5])
    # ratio 1 everywhere: the clipped objective is -mean(A) over generated tokens
    assert parts.policy_loss.item() == pytest.approx(-advantages.mean().item())
    squared = torch.tensor([0.5, 1.0, 0.5, 1.5, 0.5]) ** 2  # (V - R)^2, padding left out
    assert parts.value_loss.item() == pytest.approx(squared.mean().item())
    assert total.item() == pytest.approx(parts.policy_loss.item() + squared.mean().item())


def test_reference_kl_per_token_enters_the_loss_with_its_coefficient() -> None:
    valid = torch.tensor([[True, True]])
    ref = torch.log(torch.tensor([[0.5, 0.25]]))
    batch = TokenBatch(torch.zeros(1, 4, dtype=torch.long), 2, torch.full((1, 2), 2), valid,
                       torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1), ref)  # fmt: skip
    logp_new = torch.log(torch.tensor([[0.5, 0.5]]))
    config = TokenPPOConfig(ref_kl_loss_estimator="k1")
    outputs = (logp_new, torch.zeros(1, 2), torch.zeros(1, 2))
    _, parts = minibatch_loss(outputs, batch, torch.arange(1), config, 0.5)
    k1 = (logp_new - ref).mean().item()  # log pi_theta - log pi_ref, sampled from pi_theta
    assert parts.ref_kl is not None and parts.ref_kl.item() == pytest.approx(k1)
    assert parts.ref_kl_loss.item() == pytest.approx(0.5 * k1)


def _update_batch(returns: Tensor) -> TokenBatch:
    """Four one-token rollouts of Z0 from a two-token prompt, under :class:`Favouring`."""
    allowed = masking.allowed_mask(6, VOCAB.allowed_ids, torch.device("cpu"))
    logp = masking.masked_log_probs(torch.tensor([[0.0, 0, 0, 0, -1.0, 0]]), allowed, 1.0)
    logp_old = logp[:, 2].expand(4, 1).clone()
    sequences = torch.tensor([[0, 1, 2]] * 4)
    valid = torch.ones(4, 1, dtype=torch.bool)
    return TokenBatch(sequences, 2, torch.full((4, 1), 2), valid, logp_old,
                      torch.full((4, 1), 0.25), returns, None)  # fmt: skip


def test_a_non_finite_loss_is_skipped_and_counted_never_applied() -> None:
    model = Favouring()
    config = TokenPPOConfig(update_epochs=1, num_minibatches=2, max_kl=None, norm_adv=False)
    updater = TokenUpdater(model, config, torch.Generator().manual_seed(0))
    allowed = masking.allowed_mask(6, VOCAB.allowed_ids, torch.device("cpu"))
    result = updater.update(_update_batch(torch.full((4,), math.nan)), allowed, 0.0)
    assert (len(result.state.skipped), result.state.applied_rows) == (2, [])
    assert result.stats.total_loss is None  # nothing applied: absent, not 0
    assert torch.equal(model.bias, torch.zeros(6))
    result = updater.update(_update_batch(torch.ones(4)), allowed, 0.0)  # finite: applied
    assert not result.state.skipped and result.state.applied_rows == [0, 1]
    assert result.stats.total_loss is not None and math.isfinite(result.stats.total_loss)
    assert not torch.equal(model.bias, torch.zeros(6))
