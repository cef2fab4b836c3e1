"""Action distributions: masked categorical and diagonal Gaussian, with exact KLs.

Small hand-written classes instead of ``torch.distributions``: no argument validation or
broadcasting machinery on the per-step path, explicit generators for reproducible sampling,
and masking that is exact. A masked action gets logit -inf, so its probability is exactly
0, Gumbel-max sampling can never pick it, and entropy terms for it are defined as 0
(0 * log 0). The -inf log-probability is replaced by 0 *before* it is multiplied by its
zero probability: masking the NaN product afterwards fixes the value but not the gradient
(d(p log p)/dp = log p = -inf, times 0 upstream, is NaN), which would poison every step.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

_LOG_2PI_E = math.log(2.0 * math.pi * math.e)


class MaskedCategorical:
    """Categorical over the last dimension of ``logits``; ``mask`` is True where allowed."""

    def __init__(self, logits: Tensor, mask: Tensor | None = None) -> None:
        if mask is not None:
            logits = logits.masked_fill(~mask, -math.inf)
        self.mask = mask
        self.log_probs = torch.log_softmax(logits, dim=-1)
        # log pi with 0 where pi = 0 (masked): for p * log p terms whose value and gradient
        # must both be 0 there.
        self._log_probs_or_zero = (
            self.log_probs if mask is None else self.log_probs.masked_fill(~mask, 0.0)
        )

    @property
    def probs(self) -> Tensor:
        """Probabilities (exactly 0 for masked actions)."""
        return self.log_probs.exp()

    def sample(self, generator: torch.Generator | None = None) -> Tensor:
        """Draw one action per row by Gumbel-max; masked actions (-inf) never win."""
        uniform = torch.rand(self.log_probs.shape, generator=generator)
        gumbel = -torch.log(-torch.log(uniform.clamp_(min=torch.finfo(uniform.dtype).tiny)))
        return (self.log_probs + gumbel).argmax(dim=-1)

    def mode(self) -> Tensor:
        """The most probable action per row."""
        return self.log_probs.argmax(dim=-1)

    def log_prob(self, actions: Tensor) -> Tensor:
        """log pi(a) for integer ``actions`` (-inf for a masked action)."""
        return self.log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> Tensor:
        """Entropy per row in nats; masked actions contribute exactly 0 (value and gradient)."""
        return -(self.probs * self._log_probs_or_zero).sum(dim=-1)


class DiagGaussian:
    """Independent Normal per action dimension; log-probabilities sum over dimensions."""

    def __init__(self, mean: Tensor, log_std: Tensor) -> None:
        self.mean = mean
        self.log_std = log_std.expand_as(mean)

    def sample(self, generator: torch.Generator | None = None) -> Tensor:
        """mean + std * standard normal noise."""
        noise = torch.randn(self.mean.shape, generator=generator, dtype=self.mean.dtype)
        return self.mean + self.log_std.exp() * noise

    def mode(self) -> Tensor:
        """The mean action."""
        return self.mean

    def log_prob(self, actions: Tensor) -> Tensor:
        """Sum over dimensions of the Normal log-density."""
        z = (actions - self.mean) * torch.exp(-self.log_std)
        per_dim = -0.5 * z.square() - self.log_std - 0.5 * math.log(2.0 * math.pi)
        return per_dim.sum(dim=-1)

    def entropy(self) -> Tensor:
        """Sum over dimensions of 0.5 * log(2 pi e sigma^2)."""
        return (self.log_std + 0.5 * _LOG_2PI_E).sum(dim=-1)


def uniform_entropy(n_actions: int, masks: Tensor | None = None) -> float:
    """Entropy of the uniform policy over the allowed actions, log(allowed), in nats: the
    mean over rows of ``masks`` (True = allowed), or log(``n_actions``) without masks.

    Dividing a categorical policy's mean entropy by it gives a scale-free number, 1 for a
    uniform policy and 0 for a deterministic one, comparable across action spaces.
    """
    if masks is None:
        return math.log(n_actions)
    return float(masks.sum(dim=-1).double().log().mean())


def categorical_kl(p_logits: Tensor, q_logits: Tensor) -> Tensor:
    """Exact KL(p || q) between categoricals given by logits (per row, nats).

    Masked actions may have logit -inf on either side. Where p = 0 the term is 0: the log
    difference (-inf - -inf = NaN there) is zeroed before the product, so the gradient is
    finite too. Where p > 0 = q the KL is +inf, as it should be.
    """
    log_p = torch.log_softmax(p_logits, dim=-1)
    log_q = torch.log_softmax(q_logits, dim=-1)
    p = log_p.exp()
    return (p * (log_p - log_q).masked_fill(p == 0, 0.0)).sum(dim=-1)


def gaussian_kl(mean_p: Tensor, log_std_p: Tensor, mean_q: Tensor, log_std_q: Tensor) -> Tensor:
    """Exact KL(p || q) between diagonal Gaussians, summed over the last dimension."""
    var_ratio = torch.exp(2.0 * (log_std_p - log_std_q))
    mean_term = (mean_p - mean_q).square() * torch.exp(-2.0 * log_std_q)
    return 0.5 * (var_ratio + mean_term - 1.0 - 2.0 * (log_std_p - log_std_q)).sum(dim=-1)
