"""The reward of the design, as a pure function of tensors.

Full reward 1.0 when every digit is right. Otherwise ``partial_scale * correct / applied``,
where a position counts (is *applied*) when its true digit is non-zero and, when it is
zero, with probability ``keep_prob[pos]``; 0 when none is applied. A sample stopped by
``max_new_tokens`` earns 0 (``reward_if_max_len``, fixed). In every case
``reward_final = reward - length_penalty * num_generated``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.task import DigitReader

REWARD_FULL = 1.0
REWARD_IF_MAX_LEN = 0.0


@dataclass(frozen=True)
class RewardTerms:
    """Every term of the reward, per sample (``[B]``; the mask ``[B, D]``)."""

    applied_mask: Tensor
    applied_count: Tensor
    correct_count: Tensor
    reward_full: Tensor
    reward_partial: Tensor
    reward_final: Tensor


def applied_positions(digit_true: Tensor, keep_prob: Tensor, generator: torch.Generator) -> Tensor:
    """Which positions count: non-zero truths always, zeros with probability keep_prob."""
    draw = torch.rand(digit_true.shape, generator=generator)
    return (digit_true != 0) | (draw < keep_prob)


def reward_terms(
    digit_pred: Tensor,
    digit_true: Tensor,
    applied: Tensor,
    answered: Tensor,
    num_generated: Tensor,
    partial_scale: float,
    length_penalty: float,
) -> RewardTerms:
    """The reward of each sample and its parts (see the module docstring)."""
    right = digit_pred == digit_true
    all_right = right.all(dim=1) & answered
    applied_count = applied.sum(dim=1)
    correct_count = (right & applied).sum(dim=1)
    partial = partial_scale * correct_count / applied_count.clamp(min=1)
    partial = torch.where(applied_count > 0, partial, torch.zeros_like(partial))
    reward = torch.where(all_right, torch.full_like(partial, REWARD_FULL), partial)
    reward = torch.where(answered, reward, torch.full_like(partial, REWARD_IF_MAX_LEN))
    return RewardTerms(
        applied_mask=applied,
        applied_count=applied_count,
        correct_count=correct_count,
        reward_full=all_right.to(partial.dtype) * REWARD_FULL,
        reward_partial=partial,
        reward_final=reward - length_penalty * num_generated.to(partial.dtype),
    )


def score(
    read_digits: DigitReader,
    sequences: Tensor,
    last: Tensor,
    truth: Tensor,
    answered: Tensor,
    num_generated: Tensor,
    config: TokenPPOConfig,
    generator: torch.Generator,
) -> tuple[Tensor, RewardTerms]:
    """Read each answer (``sequences [B, T]`` at ``last [B]``, on the CPU) and reward it:
    the reader's digit probabilities ``[B, D, 10]`` and the reward's terms. The applied
    positions are drawn from ``generator``."""
    probs = read_digits(sequences, last)
    applied = applied_positions(truth, torch.tensor(config.keep_prob), generator)
    terms = reward_terms(
        probs.argmax(-1),
        truth,
        applied,
        answered,
        num_generated,
        config.partial_scale,
        config.length_penalty,
    )
    return probs, terms
