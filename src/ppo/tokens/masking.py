"""The restricted action set: logits of every id outside it are -inf, so a disallowed id
is never sampled and has probability exactly 0. The same function serves the rollout and
the update, so ``logp_old`` and ``logp_new`` are of the same distribution."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def allowed_mask(vocab_size: int, allowed_ids: Sequence[int], device: torch.device) -> Tensor:
    """A bool vector over the vocabulary, True at the allowed ids."""
    mask = torch.zeros(vocab_size, dtype=torch.bool, device=device)
    mask[list(allowed_ids)] = True
    return mask


def masked_log_probs(logits: Tensor, allowed: Tensor, temperature: float) -> Tensor:
    """log-softmax of ``logits / temperature`` over the allowed ids (-inf elsewhere), in
    fp32 whatever the logits' precision."""
    scaled = logits.float() / temperature
    return torch.log_softmax(scaled.masked_fill(~allowed, float("-inf")), dim=-1)


def entropy(log_probs: Tensor, allowed: Tensor) -> Tensor:
    """Entropy (nats) of masked log-probabilities; disallowed ids contribute 0."""
    safe = log_probs.masked_fill(~allowed, 0.0)
    probs = log_probs.exp()  # exactly 0 at the disallowed ids
    return -(probs * safe).sum(dim=-1)


def chosen(log_probs: Tensor, actions: Tensor) -> Tensor:
    """log pi(action) for each position."""
    return log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
