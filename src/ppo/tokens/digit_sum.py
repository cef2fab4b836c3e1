"""The shipped example task: add a digit to each digit of a 5-digit number, in Z tokens.

Prompt ``a1 .. a5 + k =``; the answer is ``(a_i + k) mod 10`` per position. The model
writes a trace of Z tokens (``Z0`` .. ``Z9``: a scratchpad digit each) and then
``<ANSWER>``; its digit heads read the answer at ``<ANSWER>``. The heads are trained during
the warm start to read the last five Z tokens back, on traces of random digits, so they
report what the trace says, not what the prompt implies: the trace is the reasoning and
the only way to a right answer. A short supervised warm start (the stand-in for a
pretrained checkpoint) imitates a noisy teacher whose trace digits are wrong
``TEACHER_NOISE`` of the time, as a model fine-tuned on imperfect demonstrations is: it
samples the right digit about half the time, so PPO has room to improve it. The reader
is a frozen copy of the warm-started model (heads and the body under them), so PPO's
changes to the model cannot move the yardstick.
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from ppo.config.settings import ConfigError
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.task import TokenTask, Vocab

NUM_DIGITS = 5
PLUS, EQUALS = 10, 11
Z0 = 12  # Z0 .. Z9 are 12 .. 21
ANSWER, PAD = 22, 23
VOCAB = Vocab(
    z_ids=tuple(range(Z0, Z0 + 10)),
    answer_id=ANSWER,
    pad_id=PAD,
    names=(*"0123456789", "+", "=", *(f"Z{d}" for d in range(10)), "<ANSWER>", "<PAD>"),
)
PROMPT_LEN = NUM_DIGITS + 3
TEACHER_NOISE = 0.45
"""Share of the noisy teacher's trace digits replaced by a random digit."""
CLEAN_SHARE = 0.75
"""Share of the warm start's steps on correct traces, before the noisy teacher's."""


class TinyLM(nn.Module):
    """A 2-layer causal transformer with an LM head, a value head and digit heads."""

    def __init__(self, vocab_size: int, max_len: int, width: int = 64, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, width)
        self.position = nn.Embedding(max_len, width)
        layer = nn.TransformerEncoderLayer(
            width, 4, 4 * width, dropout=0.0, batch_first=True, norm_first=True
        )
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab_size)
        self.value_head = nn.Linear(width, 1)
        self.digit_heads = nn.Linear(width, NUM_DIGITS * 10)

    def hidden(self, ids: Tensor) -> Tensor:
        steps = ids.shape[1]
        x = self.embed(ids) + self.position(torch.arange(steps, device=ids.device))
        causal = nn.Transformer.generate_square_subsequent_mask(steps, device=ids.device)
        hidden: Tensor = self.norm(self.body(x, mask=causal, is_causal=True))
        return hidden

    def forward(self, ids: Tensor) -> tuple[Tensor, Tensor]:
        h = self.hidden(ids)
        return self.lm_head(h), self.value_head(h).squeeze(-1)

    def digit_logits(self, ids: Tensor, last: Tensor) -> Tensor:
        h = self.hidden(ids)[torch.arange(ids.shape[0]), last]
        logits: Tensor = self.digit_heads(h)
        return logits.view(-1, NUM_DIGITS, 10)


def sample_prompts(count: int, seed: int) -> tuple[Tensor, Tensor]:
    """``count`` prompts and their true answer digits, drawn from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(0, 10, (count, NUM_DIGITS), generator=g)
    k = torch.randint(0, 10, (count, 1), generator=g)
    plus, equals = torch.full((count, 1), PLUS), torch.full((count, 1), EQUALS)
    return torch.cat([a, plus, k, equals], dim=1), (a + k) % 10


def traced(prompts: Tensor, trace_digits: Tensor) -> Tensor:
    """Prompt, a Z token per trace digit, then ``<ANSWER>``."""
    answer = torch.full((prompts.shape[0], 1), ANSWER)
    return torch.cat([prompts, trace_digits + Z0, answer], dim=1)


def warm_start(model: TinyLM, steps: int, lr: float, seed: int) -> None:
    """Supervised: the LM head on correct traces for the first ``CLEAN_SHARE`` of the
    steps (it learns the task), then on the noisy teacher's (it learns to be unsure, as
    its teacher was); the digit heads throughout, on random traces."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed + 7919)
    for step in range(steps):
        prompts, truth = sample_prompts(128, seed * 100_003 + step)
        noise = TEACHER_NOISE if step >= CLEAN_SHARE * steps else 0.0
        wrong = torch.rand(truth.shape, generator=g) < noise
        teacher = torch.where(wrong, torch.randint(0, 10, truth.shape, generator=g), truth)
        loss = _lm_loss(model, traced(prompts, teacher)) + _reader_loss(model, prompts[:64], g)
        optimizer.zero_grad()
        torch.autograd.backward(loss)
        optimizer.step()


def _lm_loss(model: TinyLM, shown: Tensor) -> Tensor:
    """Cross-entropy of the trace and ``<ANSWER>`` given the prompt."""
    logits, _ = model(shown[:, :-1])
    predicted = logits[:, PROMPT_LEN - 1 :].reshape(-1, logits.shape[-1])
    return nn.functional.cross_entropy(predicted, shown[:, PROMPT_LEN:].reshape(-1))


def _reader_loss(model: TinyLM, prompts: Tensor, g: torch.Generator) -> Tensor:
    """Cross-entropy of the digit heads reading back a random trace at ``<ANSWER>``."""
    digits = torch.randint(0, 10, (prompts.shape[0], NUM_DIGITS), generator=g)
    last = torch.full((prompts.shape[0],), PROMPT_LEN + NUM_DIGITS)
    read = model.digit_logits(traced(prompts, digits), last)
    return nn.functional.cross_entropy(read.reshape(-1, 10), digits.reshape(-1))


def make_task(config: TokenPPOConfig) -> TokenTask:
    """Build and warm-start the model; freeze a copy of it as the digit reader."""
    if len(config.keep_prob) != NUM_DIGITS:  # before the warm start, not after it
        raise ConfigError(
            [f"keep_prob has {len(config.keep_prob)} entries; the answer has {NUM_DIGITS} digits"]
        )
    torch.manual_seed(config.seed)
    model = TinyLM(len(VOCAB.names), PROMPT_LEN + config.max_new_tokens)
    warm_start(model, config.warm_start_steps, config.warm_start_lr, config.seed)
    reader = copy.deepcopy(model).eval().requires_grad_(False)
    model.digit_heads.requires_grad_(False)  # frozen during PPO (the reader is the copy)

    @torch.no_grad()
    def read_digits(ids: Tensor, last: Tensor) -> Tensor:
        return torch.softmax(reader.digit_logits(ids, last), dim=-1)

    return TokenTask(
        model=model,
        vocab=VOCAB,
        num_digits=NUM_DIGITS,
        sample=sample_prompts,
        read_digits=read_digits,
    )
