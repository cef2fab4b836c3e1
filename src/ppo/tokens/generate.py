"""Generation: sample tokens from the masked policy until ``<ANSWER>`` or ``max_new_tokens``,
recording per generated token the action, ``logp_old``, entropy and the critic's value."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ppo.tokens import masking
from ppo.tokens.task import IncrementalModel, Vocab


@dataclass(frozen=True)
class Generation:
    """A batch of samples (generated sequences); ``[B, M]`` tensors are padded after each
    sequence's end."""

    prompts: Tensor
    """``[B, P]`` prompt ids."""
    tokens: Tensor
    """``[B, M]`` generated ids (``pad_id`` after the end)."""
    valid: Tensor
    """``[B, M]`` True at generated tokens (the answer token included)."""
    logp: Tensor
    entropy: Tensor
    values: Tensor
    """``[B, M]`` V_t of the state before each generated token."""
    answered: Tensor
    """``[B]`` whether ``<ANSWER>`` was generated (else ``max_new_tokens`` stopped it)."""

    def to(self, device: torch.device) -> Generation:
        """The same samples on ``device``."""
        return Generation(**{k: v.to(device) for k, v in self.__dict__.items()})

    @property
    def num_generated(self) -> Tensor:
        return self.valid.sum(dim=1)

    @property
    def sequences(self) -> Tensor:
        """``[B, P + M]`` prompt and generated ids."""
        return torch.cat([self.prompts, self.tokens], dim=1)

    @property
    def last(self) -> Tensor:
        """``[B]`` position of each sequence's last generated token (the answer token)."""
        return self.prompts.shape[1] + self.num_generated - 1


_Column = tuple[Tensor, Tensor, Tensor, Tensor, Tensor]
"""One generated position: action, live, log-prob, entropy, value (each ``[B]``)."""


def _sample_next(
    logits: Tensor,
    values: Tensor,
    done: Tensor,
    vocab: Vocab,
    allowed: Tensor,
    temperature: float,
    generator: torch.Generator,
) -> _Column:
    """The next token of every sequence (pad where ``done``) from the last position's
    ``logits [B, V]`` and ``values [B]``, and what was measured for it."""
    logp = masking.masked_log_probs(logits, allowed, temperature)
    action = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(1)
    action = action.masked_fill(done, vocab.pad_id)
    entropy = masking.entropy(logp, allowed)
    return action, ~done, masking.chosen(logp, action), entropy, values.float()


@torch.no_grad()
def generate(
    model: nn.Module,
    prompts: Tensor,
    vocab: Vocab,
    max_new_tokens: int,
    temperature: float,
    generator: torch.Generator,
) -> Generation:
    """Sample up to ``max_new_tokens`` tokens per prompt from the masked policy. A model
    with a ``step`` method (:class:`ppo.tokens.task.IncrementalModel`) is fed each new
    token with its cache of the earlier ones; any other is run on the whole sequence at
    every token."""
    step = model.step if isinstance(model, IncrementalModel) else None
    ids = new = prompts
    cache: object = None
    done = torch.zeros(prompts.shape[0], dtype=torch.bool, device=prompts.device)
    columns: list[_Column] = []
    allowed = masking.allowed_mask(len(vocab.names), vocab.allowed_ids, prompts.device)
    for _ in range(max_new_tokens):
        if step is not None:
            logits, values, cache = step(new, cache)
        else:
            logits, values = model(ids)
        column = _sample_next(
            logits[:, -1], values[:, -1], done, vocab, allowed, temperature, generator
        )
        columns.append(column)
        new = column[0].unsqueeze(1)
        ids = torch.cat([ids, new], dim=1)
        done = done | (column[0] == vocab.answer_id)
        if bool(done.all()):
            break
    tokens, valid, logp_old, ent, vals = (torch.stack(c, dim=1) for c in zip(*columns, strict=True))
    zero = torch.zeros((), dtype=logp_old.dtype, device=logp_old.device)
    return Generation(
        prompts=prompts,
        tokens=tokens,
        valid=valid,
        logp=torch.where(valid, logp_old, zero),
        entropy=torch.where(valid, ent, zero),
        values=torch.where(valid, vals, zero),
        answered=done,
    )
