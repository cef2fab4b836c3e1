"""The token-level update, PPO or GRPO.

PPO: episodic advantage A_t = R - V_t (no GAE, no discount: one terminal reward per
sample), the value loss mean (V_t - R)^2 (unclipped). GRPO: the sample's group-relative
advantage on each of its tokens (computed once per batch, :func:`ppo.core.advantages.
group_relative`), no critic. Both: the clipped objective over generated tokens and the
per-token reference KL, each aggregated by ``loss_agg_mode``, and the entropy bonus.

Minibatches are of whole sequences, so each is one forward of the model; statistics are
means over generated tokens, never over padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ppo.core.advantages import normalize
from ppo.core.device import autocast
from ppo.core.gradients import GradNorms, clip_grad_norm
from ppo.core.kl import estimate_from_log_ratio, guarded_log_ratio
from ppo.core.losses import LossBreakdown, aggregate, reference_kl_terms, surrogate_terms
from ppo.tokens import masking
from ppo.tokens.config import TokenPPOConfig
from ppo.update.state import InForce, UpdateState
from ppo.update.stats import MinibatchStats, UpdateStats, reduce_update


@dataclass(frozen=True)
class TokenBatch:
    """One update's samples as tensors; ``[B, M]`` over generated positions."""

    sequences: Tensor
    """``[B, P + M]`` prompt and generated ids."""
    prompt_len: int
    actions: Tensor
    """``[B, M]`` generated ids, an allowed id at padding (so every log-prob is finite)."""
    valid: Tensor
    logp_old: Tensor
    values_old: Tensor
    returns: Tensor
    """``[B]`` reward_final: the return of every token of the sample."""
    logp_ref: Tensor | None
    """``[B, M]`` log pi_ref(action) of the frozen reference (None: not measured)."""
    advantages: Tensor | None = None
    """``[B]`` GRPO's group-relative advantage of each sample (None: PPO's R - V_t)."""


@dataclass(frozen=True)
class UpdateResult:
    """What one token-level update measured and decided (its payload is built from them
    by :func:`ppo.tokens.figures.update_summary`, as the classic update's is)."""

    stats: UpdateStats
    state: UpdateState


def evaluate(
    model: nn.Module, batch: TokenBatch, idx: Tensor, allowed: Tensor, temperature: float
) -> tuple[Tensor, Tensor, Tensor]:
    """(log pi(action), entropy, V) at the generated positions of the sequences ``idx``."""
    logits, values = model(batch.sequences[idx, :-1])
    start = batch.prompt_len - 1  # position t's logits predict token t + 1
    log_probs = masking.masked_log_probs(logits[:, start:], allowed, temperature)
    return (
        masking.chosen(log_probs, batch.actions[idx]),
        masking.entropy(log_probs, allowed),
        values[:, start:].float(),
    )


def minibatch_loss(
    outputs: tuple[Tensor, Tensor, Tensor],
    batch: TokenBatch,
    idx: Tensor,
    config: TokenPPOConfig,
    ref_coef: float,
) -> tuple[Tensor, LossBreakdown]:
    """The total loss of one minibatch and its detached parts (the classic loss's record:
    no KL penalty or entropy floor here, so those terms are 0; GRPO's value loss is NaN,
    which its payload leaves absent)."""
    valid = batch.valid[idx]
    logp_new, ent, values = (t[valid] for t in outputs)
    returns = batch.returns[idx].unsqueeze(1).expand_as(valid)[valid]
    zero = torch.zeros((), device=logp_new.device)
    value = torch.full((), math.nan, device=logp_new.device)
    if batch.advantages is not None:
        advantages = batch.advantages[idx].unsqueeze(1).expand_as(valid)[valid]
    else:
        advantages = returns - batch.values_old[idx][valid]
        if config.norm_adv:
            advantages = normalize(advantages, config.adv_std_min)
        value = (values - returns).square().mean()
    log_ratio, nonfinite = guarded_log_ratio(
        logp_new, batch.logp_old[idx][valid], config.log_ratio_clamp
    )
    per_token, surrogate = surrogate_terms(log_ratio, advantages, config.clip_range)
    policy = aggregate(_matrix(per_token, valid), valid, config.loss_agg_mode)
    entropy = ent.mean()
    total = policy - config.ent_coef * entropy
    if batch.advantages is None:
        total = total + config.vf_coef * value
    ref_kl: Tensor | None = None
    ref_term = zero
    if batch.logp_ref is not None:
        kl = reference_kl_terms(
            logp_new,
            batch.logp_ref[idx][valid],
            config.ref_kl_loss_estimator,
            ref_coef,
            config.log_ratio_clamp,
        )
        ref_kl = kl.detach().mean()
        ref_term = ref_coef * aggregate(_matrix(kl, valid), valid, config.loss_agg_mode)
        total = total + ref_term
    approx_kl = estimate_from_log_ratio(log_ratio.detach(), config.kl_estimator).mean()
    return total, LossBreakdown(
        policy_loss=policy.detach(),
        value_loss=value.detach(),
        entropy=entropy.detach(),
        entropy_penalty=zero,
        approx_kl=approx_kl,
        kl_penalty=zero,
        ref_kl=ref_kl,
        ref_kl_loss=ref_term.detach(),
        total_loss=total.detach(),
        surrogate=surrogate,
        nonfinite_ratios=nonfinite,
    )


def _matrix(flat: Tensor, valid: Tensor) -> Tensor:
    """Per-token values of the ``valid`` positions (row-major, as ``t[valid]`` reads them)
    back in a ``[b, M]`` matrix, 0 elsewhere; differentiable."""
    return torch.zeros(valid.shape, dtype=flat.dtype, device=flat.device).masked_scatter(
        valid, flat
    )


class TokenUpdater:
    """Owns the optimizer and runs epochs x minibatches of sequences with the KL early stop."""

    def __init__(
        self, model: nn.Module, config: TokenPPOConfig, generator: torch.Generator
    ) -> None:
        self.model = model
        self.config = config
        self.generator = generator
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(self.params, lr=config.learning_rate, eps=config.adam_eps)

    def update(
        self,
        batch: TokenBatch,
        allowed: Tensor,
        ref_coef: float,
        *,
        update: int = 0,
        global_step: int = 0,
    ) -> UpdateResult:
        """One PPO update on ``batch``, through the classic update's table and decisions
        (:class:`ppo.update.state.UpdateState`): each minibatch has one host read (its KL,
        loss and gradient norm) for the decision to stop before a minibatch whose KL is past
        max_kl or to skip a step whose loss or norm is not finite; the table is read once,
        at the end. Minibatches are of whole sequences, sizes differing by at most one."""
        c = self.config
        in_force = InForce(
            update=update,
            global_step=global_step,
            learning_rate=c.learning_rate,
            entropy_coef=c.ent_coef,
        )
        device = batch.valid.device
        state = UpdateState.start(in_force, c.update_epochs, c.num_minibatches, device)
        for epoch in range(c.update_epochs):
            state.epochs_started += 1
            order = torch.randperm(
                batch.returns.shape[0], generator=self.generator, device=self.generator.device
            )
            for minibatch, idx in enumerate(order.tensor_split(c.num_minibatches)):
                breakdown, norms = self._forward_backward(batch, idx, allowed, ref_coef)
                state.record(epoch, minibatch, MinibatchStats.measure(breakdown, norms))
                decide = torch.stack([breakdown.approx_kl, breakdown.total_loss, norms.total])
                if state.settle(epoch, minibatch, decide.tolist(), c.max_kl):
                    self.optimizer.step()
                if state.stop is not None:
                    break
            if state.stop is not None:
                break
        rows = state.stats[: state.evaluated]
        return UpdateResult(reduce_update(rows, state.applied_rows, state.last_epoch), state)

    def _forward_backward(
        self, batch: TokenBatch, idx: Tensor, allowed: Tensor, ref_coef: float
    ) -> tuple[LossBreakdown, GradNorms]:
        """Loss, gradients (clipped) and the pre-clip gradient norm of the sequences
        ``idx``."""
        c = self.config
        with autocast(batch.valid.device, c.precision):
            outputs = evaluate(self.model, batch, idx, allowed, c.temperature)
            total, breakdown = minibatch_loss(outputs, batch, idx, c, ref_coef)
        self.optimizer.zero_grad(set_to_none=True)
        torch.autograd.backward(total)
        return breakdown, clip_grad_norm({"model": self.params}, c.max_grad_norm)
