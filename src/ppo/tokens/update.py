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
from ppo.core.kl import estimate_from_log_ratio, guarded_log_ratio
from ppo.core.losses import (
    SurrogateStats,
    aggregate,
    reference_kl_terms,
    surrogate_terms,
)
from ppo.tokens import masking
from ppo.tokens.config import TokenPPOConfig
from ppo.update.agent import exceeds
from telemetry.events import EarlyStop


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
class MinibatchFigures:
    """What one applied minibatch measured (floats, read for every minibatch at once when
    the update ends)."""

    epoch: int
    policy_loss: float
    value_loss: float | None
    entropy: float
    approx_kl: float
    ref_kl: float | None
    ref_kl_loss: float
    total_loss: float
    clip_fraction: float
    clip_fraction_low: float
    clip_fraction_high: float
    ratio_mean: float
    ratio_min: float
    ratio_max: float
    ratio_std: float
    grad_norm: float = math.nan


@dataclass(frozen=True)
class UpdateResult:
    rows: list[MinibatchFigures]
    """Applied minibatches, in order."""
    early_stop: EarlyStop | None
    planned: int
    skipped: int = 0
    """Steps not applied because the loss or the gradient norm was not finite."""


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
) -> tuple[Tensor, dict[str, Tensor | None]]:
    """The total loss of one minibatch and its detached parts."""
    valid = batch.valid[idx]
    logp_new, ent, values = (t[valid] for t in outputs)
    returns = batch.returns[idx].unsqueeze(1).expand_as(valid)[valid]
    value: Tensor | None = None
    if batch.advantages is not None:
        advantages = batch.advantages[idx].unsqueeze(1).expand_as(valid)[valid]
    else:
        advantages = returns - batch.values_old[idx][valid]
        if config.norm_adv:
            advantages = normalize(advantages, config.adv_std_min)
        value = (values - returns).square().mean()
    log_ratio, _ = guarded_log_ratio(logp_new, batch.logp_old[idx][valid], config.log_ratio_clamp)
    per_token, surrogate = surrogate_terms(log_ratio, advantages, config.clip_range)
    policy = aggregate(_matrix(per_token, valid), valid, config.loss_agg_mode)
    entropy = ent.mean()
    total = policy - config.ent_coef * entropy
    if value is not None:
        total = total + config.vf_coef * value
    ref_kl: Tensor | None = None
    ref_term = torch.zeros((), device=total.device)
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
    parts: dict[str, Tensor | None] = {
        "policy_loss": policy,
        "value_loss": value,
        "entropy": entropy,
        "approx_kl": approx_kl,
        "ref_kl": ref_kl,
        "ref_kl_loss": ref_term,
        "total_loss": total,
    }
    return total, {**parts, **_surrogate_parts(surrogate)}


def _matrix(flat: Tensor, valid: Tensor) -> Tensor:
    """Per-token values of the ``valid`` positions (row-major, as ``t[valid]`` reads them)
    back in a ``[b, M]`` matrix, 0 elsewhere; differentiable."""
    return torch.zeros(valid.shape, dtype=flat.dtype, device=flat.device).masked_scatter(
        valid, flat
    )


def _surrogate_parts(s: SurrogateStats) -> dict[str, Tensor | None]:
    return {
        "clip_fraction": s.clip_fraction,
        "ratio_mean": s.ratio_mean,
        "ratio_min": s.ratio_min,
        "ratio_max": s.ratio_max,
        "ratio_std": s.ratio_std,
        "clip_fraction_low": s.clip_fraction_low,
        "clip_fraction_high": s.clip_fraction_high,
    }


_Applied = tuple[int, dict[str, Tensor | None]]
"""An applied minibatch: its epoch and its measurements, still tensors."""


def _read(applied: list[_Applied]) -> list[MinibatchFigures]:
    """Every applied minibatch's measurements as floats, in one host read."""
    if not applied:
        return []
    names = [k for k, v in applied[0][1].items() if v is not None]
    absent = dict.fromkeys(k for k, v in applied[0][1].items() if v is None)
    table = torch.stack(
        [torch.stack([parts[k].detach().double() for k in names]) for _, parts in applied]  # type: ignore[union-attr]
    ).tolist()
    return [
        MinibatchFigures(epoch=epoch, **absent, **dict(zip(names, row, strict=True)))  # type: ignore[arg-type]
        for (epoch, _), row in zip(applied, table, strict=True)
    ]


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

    def update(self, batch: TokenBatch, allowed: Tensor, ref_coef: float) -> UpdateResult:
        """One PPO update on ``batch``. As in :class:`ppo.update.agent.PPOAgent`, each minibatch has
        one host read (its KL, loss and gradient norm) for the decision: stop before a
        minibatch whose KL is past max_kl, skip a step whose loss or norm is not finite."""
        c = self.config
        planned = c.update_epochs * c.num_minibatches
        applied: list[_Applied] = []
        skipped = 0
        for epoch in range(c.update_epochs):
            order = torch.randperm(
                batch.returns.shape[0], generator=self.generator, device=self.generator.device
            )
            for i, idx in enumerate(order.chunk(c.num_minibatches)):
                with autocast(batch.valid.device, c.precision):
                    outputs = evaluate(self.model, batch, idx, allowed, c.temperature)
                    total, parts = minibatch_loss(outputs, batch, idx, c, ref_coef)
                norm = self._backward(total)
                decide = torch.stack([parts["approx_kl"], total.detach(), norm])  # type: ignore[list-item]
                kl, loss, grad = decide.tolist()
                if exceeds(kl, c.max_kl):
                    assert c.max_kl is not None
                    stop = EarlyStop(
                        epoch=epoch,
                        minibatch=i,
                        kl=kl,
                        threshold=c.max_kl,
                        scope="minibatch",
                        applied=False,
                    )
                    return UpdateResult(_read(applied), stop, planned, skipped)
                if not (math.isfinite(loss) and math.isfinite(grad)):
                    skipped += 1
                    continue
                self.optimizer.step()
                applied.append((epoch, {**parts, "grad_norm": norm}))
        return UpdateResult(_read(applied), None, planned, skipped)

    def _backward(self, total: Tensor) -> Tensor:
        """Gradients of ``total``, clipped; returns the pre-clip norm (0-d, not read)."""
        self.optimizer.zero_grad(set_to_none=True)
        torch.autograd.backward(total)
        limit = self.config.max_grad_norm if self.config.max_grad_norm is not None else math.inf
        return torch.nn.utils.clip_grad_norm_(self.params, limit)
