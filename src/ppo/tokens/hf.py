"""``task = "hf"``: a Hugging Face causal LM from a local folder as the token policy.

The folder (``hf_model``) holds what ``save_pretrained`` writes for a model and its
tokenizer; it is read with ``local_files_only=True``, so nothing is downloaded. The task:

- restricts generation to the named tokens (``hf_z_tokens`` and ``hf_answer_token``,
  spelled as the tokenizer spells them; a name the tokenizer lacks is one line naming it);
- adds the seed's value head on the last hidden states, ``Linear(h, h) - Tanh -
  Linear(h, 1)``, trained with the model by PPO;
- draws prompts with ``hf_prompts`` (default: the digit-sum prompts of
  :mod:`ppo.tokens.digit_sum`, written with the tokenizer's ``0``..``9``, ``+`` and ``=``);
- reads the answer with ``hf_reader`` (default :func:`digit_heads`: linear digit heads on
  the hidden state at the answer token of a frozen copy of the loaded model, trained for
  ``warm_start_steps`` to read the last Z tokens back, then frozen, as the seed's are).

The loaded model is the warm start: no supervised steps run on the policy itself.
Without transformers (the ``hf`` extra) :func:`preflight` says so in one line.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import logging
import pickle
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ppo.run.messages import path as shown
from ppo.run.preflight import PreflightError
from ppo.tokens import digit_sum
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.task import DigitReader, PromptSampler, TokenTask, Vocab, load_function
from telemetry.integrations import from_extra
from telemetry.text import visible, visible_lines

EXTRA_HINT = "task 'hf' needs transformers: pip install 'sanctum-ppo[hf]'"
PROMPT_TOKENS = (*"0123456789", "+", "=")
"""The tokens of the default prompts, in :mod:`ppo.tokens.digit_sum`'s id order."""
READER_BATCH = 64
"""Random traces per step of the default reader's training."""
_LOAD_ERRORS = (OSError, ValueError, KeyError, RuntimeError, ImportError, TypeError)
"""What transformers raises on a folder it cannot load (a missing or foreign file)."""


def _auto(name: str) -> Any:
    """``transformers.<name>``; a :class:`PreflightError` naming the extra without it."""
    try:
        return from_extra("transformers", name, EXTRA_HINT)
    except ModuleNotFoundError as exc:
        raise PreflightError(str(exc)) from None


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, pickle.UnpicklingError):  # torch's advice: to load it unsafely
        return "its weights are a pickle that would run code, which is refused (not run)"
    text = str(exc).strip() or type(exc).__name__
    return visible(text.splitlines()[0])


class _Escaped(logging.Filter):
    """Rewrites each record as its message escaped line by line (:func:`visible_lines`):
    what a library logs about a user's files (transformers' load report names the model
    folder) never reaches the terminal as a terminal command."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = visible_lines(record.getMessage().split("\n")), None
        return True


@contextlib.contextmanager
def _library_output_escaped() -> Iterator[None]:
    """While transformers and torch read a user's model folder: their log lines escaped
    (:class:`_Escaped`), and their warnings one escaped line each on stderr."""
    _auto("logging").get_logger()  # transformers' own handler, set up if it was not
    handlers = logging.getLogger("transformers").handlers
    escaped = _Escaped()
    for handler in handlers:
        handler.addFilter(escaped)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        for handler in handlers:
            handler.removeFilter(escaped)
    for warning in caught:
        first = str(warning.message).strip().splitlines() or [warning.category.__name__]
        print(f"warning: {visible(first[0])}", file=sys.stderr)


def _folder(config: TokenPPOConfig) -> Path:
    if config.hf_model is None:
        raise PreflightError(
            "task 'hf' needs hf_model: the folder of a Hugging Face causal LM and its tokenizer"
        )
    folder = Path(config.hf_model)
    if not folder.is_dir():
        what = "not a folder" if folder.exists() else "no such folder"
        raise PreflightError(f"hf_model {shown(folder)}: {what}")
    return folder


def _tokenizer(folder: Path) -> Any:
    """The folder's config and tokenizer, read; the tokenizer."""
    try:
        with _library_output_escaped():
            _auto("AutoConfig").from_pretrained(folder, local_files_only=True)
    except _LOAD_ERRORS as exc:
        raise PreflightError(
            f"hf_model {shown(folder)} is not a Hugging Face model folder: {_first_line(exc)}"
        ) from None
    try:
        with _library_output_escaped():
            return _auto("AutoTokenizer").from_pretrained(folder, local_files_only=True)
    except _LOAD_ERRORS as exc:
        raise PreflightError(
            f"hf_model {shown(folder)}: no tokenizer could be read: {_first_line(exc)}"
        ) from None


def token_ids(tokenizer: Any, names: tuple[str, ...], field: str) -> tuple[int, ...]:
    """The id of each token name; a :class:`PreflightError` naming the first one the
    tokenizer lacks (``field`` says where the name came from)."""
    known = tokenizer.get_vocab()
    for name in names:
        if name not in known:
            raise PreflightError(
                f"{field}: the tokenizer has no token {visible(repr(name))} "
                "(add it to the tokenizer and resize the model's embeddings)"
            )
    return tuple(int(known[name]) for name in names)


def preflight(config: TokenPPOConfig) -> None:
    """What can be told before anything is built: transformers is installed, ``hf_model``
    is a folder holding a model config and a tokenizer, and the tokenizer has the Z and
    answer tokens. Each failure is one line (a :class:`PreflightError`, exit 2)."""
    _auto("AutoModelForCausalLM")
    tokenizer = _tokenizer(_folder(config))
    token_ids(tokenizer, config.hf_z_tokens, "hf_z_tokens")
    token_ids(tokenizer, (config.hf_answer_token,), "hf_answer_token")


class HFPolicy(nn.Module):
    """A causal LM with the seed's value head on its last hidden states: ids ``[B, T]``
    to ``(logits [B, T, V], values [B, T])``."""

    def __init__(self, lm: nn.Module, hidden_size: int) -> None:
        super().__init__()
        self.lm = lm
        self.cache_name = _cache_keyword(lm)
        self.value_head = nn.Sequential(
            nn.Linear(hidden_size, hidden_size), nn.Tanh(), nn.Linear(hidden_size, 1)
        )

    def forward(self, ids: Tensor) -> tuple[Tensor, Tensor]:
        logits, hidden = logits_and_hidden(self.lm, ids)
        return logits, self.value_head(hidden).squeeze(-1)

    def step(self, ids: Tensor, cache: Any) -> tuple[Tensor, Tensor, Any]:
        """Generation's forward (:class:`ppo.tokens.task.IncrementalModel`): the new
        ``ids`` behind the LM's own key-value cache of the earlier ones."""
        kwargs = {self.cache_name: cache}
        out = self.lm(input_ids=ids, output_hidden_states=True, use_cache=True, **kwargs)
        hidden = out.hidden_states[-1].float()
        return out.logits.float(), self.value_head(hidden).squeeze(-1), out[self.cache_name]


def _cache_keyword(lm: nn.Module) -> str:
    """The name of a causal LM's key-value cache, as its forward takes it and its output
    holds it: ``cache`` in recent transformers, ``past_key_values`` before."""
    return "cache" if "cache" in inspect.signature(lm.forward).parameters else "past_key_values"


def logits_and_hidden(lm: nn.Module, ids: Tensor) -> tuple[Tensor, Tensor]:
    """The LM's logits and its last hidden states (after its final norm) for ``ids``."""
    out = lm(input_ids=ids, output_hidden_states=True, use_cache=False)
    return out.logits.float(), out.hidden_states[-1].float()


@dataclass(frozen=True)
class ReaderContext:
    """What a reader factory (``hf_reader``) is given."""

    lm: nn.Module
    """The loaded model, before PPO changes it (copy it to read with a frozen body)."""
    hidden_size: int
    vocab: Vocab
    num_digits: int
    sample: PromptSampler
    config: TokenPPOConfig


def digit_heads(ctx: ReaderContext) -> DigitReader:
    """The default reader: ``Linear(hidden, num_digits * 10)`` on the hidden state at the
    answer token of a frozen copy of the loaded model. The heads are trained (the body
    stays frozen) for ``warm_start_steps`` at ``warm_start_lr`` to read back the last
    ``num_digits`` Z tokens of random traces, the k-th Z token meaning digit k, as the
    seed's digit heads are during its warm start; then they are frozen."""
    z_ids = ctx.vocab.z_ids
    if len(z_ids) != 10:
        raise PreflightError(
            f"hf_reader ppo.tokens.hf:digit_heads reads a Z token per digit: hf_z_tokens "
            f"needs 10 tokens, got {len(z_ids)}"
        )
    body = copy.deepcopy(ctx.lm).eval().requires_grad_(False)
    heads = nn.Linear(ctx.hidden_size, ctx.num_digits * 10)
    z = torch.tensor(z_ids)
    g = torch.Generator().manual_seed(ctx.config.seed + 7919)

    def read_logits(ids: Tensor, last: Tensor) -> Tensor:
        with torch.no_grad():
            _, hidden = logits_and_hidden(body, ids)
        logits: Tensor = heads(hidden[torch.arange(ids.shape[0]), last])
        return logits.view(-1, ctx.num_digits, 10)

    optimizer = torch.optim.Adam(heads.parameters(), lr=ctx.config.warm_start_lr)
    for step in range(ctx.config.warm_start_steps):
        prompts, _ = ctx.sample(READER_BATCH, ctx.config.seed * 100_003 + step)
        digits = torch.randint(0, 10, (READER_BATCH, ctx.num_digits), generator=g)
        answer = torch.full((READER_BATCH, 1), ctx.vocab.answer_id)
        traces = torch.cat([prompts, z[digits], answer], dim=1)
        last = torch.full((READER_BATCH,), traces.shape[1] - 1)
        loss = nn.functional.cross_entropy(
            read_logits(traces, last).reshape(-1, 10), digits.reshape(-1)
        )
        optimizer.zero_grad()
        torch.autograd.backward(loss)
        optimizer.step()
    heads.requires_grad_(False)

    @torch.no_grad()
    def read_digits(ids: Tensor, last: Tensor) -> Tensor:
        return torch.softmax(read_logits(ids, last), dim=-1)

    return read_digits


def digit_sum_prompts(tokenizer: Any, config: TokenPPOConfig) -> PromptSampler:
    """The default prompts: :func:`ppo.tokens.digit_sum.sample_prompts`, each id mapped to
    the tokenizer's spelling of it (:data:`PROMPT_TOKENS`)."""
    lookup = torch.tensor(token_ids(tokenizer, PROMPT_TOKENS, "hf_prompts (digit-sum prompts)"))

    def sample(count: int, seed: int) -> tuple[Tensor, Tensor]:
        prompts, truth = digit_sum.sample_prompts(count, seed)
        return lookup[prompts], truth

    return sample


def _vocab(tokenizer: Any, config: TokenPPOConfig, size: int) -> Vocab:
    """The vocabulary over the model's ``size`` logits: the Z and answer ids, a pad id
    (the tokenizer's pad, else its end of sequence, else the answer token) and a name per
    id (``<id N>`` past the tokenizer's)."""
    z_ids = token_ids(tokenizer, config.hf_z_tokens, "hf_z_tokens")
    (answer_id,) = token_ids(tokenizer, (config.hf_answer_token,), "hf_answer_token")
    for name, i in zip(
        (*config.hf_z_tokens, config.hf_answer_token), (*z_ids, answer_id), strict=True
    ):
        if i >= size:
            raise PreflightError(
                f"token {visible(repr(name))} has id {i}, past the model's {size} logits "
                "(resize the model's embeddings to the tokenizer)"
            )
    pad = next((i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id) if i is not None), None)
    known = tokenizer.convert_ids_to_tokens(list(range(min(size, len(tokenizer)))))
    names = (*(str(n) for n in known), *(f"<id {i}>" for i in range(len(known), size)))
    return Vocab(
        z_ids=z_ids,
        answer_id=answer_id,
        pad_id=answer_id if pad is None or pad >= size else int(pad),
        names=names,
    )


def make_task(config: TokenPPOConfig) -> TokenTask:
    """Load the model and tokenizer of ``hf_model``, restrict the action set, add the value
    head and build the prompts and the reader."""
    folder = _folder(config)
    tokenizer = _tokenizer(folder)
    _auto("logging").disable_progress_bar()  # ppo train prints its own progress
    torch.manual_seed(config.seed)
    try:
        with _library_output_escaped():
            lm = _auto("AutoModelForCausalLM").from_pretrained(folder, local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - the weights are untrusted bytes: a cut or
        # random model.safetensors (SafetensorError), a pickle torch refuses to run
        # (UnpicklingError): whatever the loader raises, one line
        raise PreflightError(
            f"hf_model {shown(folder)}: no causal LM could be loaded: {_first_line(exc)}"
        ) from None
    lm = lm.float().eval()  # no dropout: the rollout's and the update's log-probs agree
    output = lm.get_output_embeddings()
    hidden_size = int(lm.get_input_embeddings().embedding_dim)
    vocab = _vocab(tokenizer, config, int(output.out_features))
    sample: PromptSampler = load_function(config.hf_prompts, "hf_prompts")(tokenizer, config)
    num_digits = int(sample(1, 0)[1].shape[1])
    ctx = ReaderContext(lm, hidden_size, vocab, num_digits, sample, config)
    reader: DigitReader = load_function(config.hf_reader, "hf_reader")(ctx)
    return TokenTask(
        model=HFPolicy(lm, hidden_size),
        vocab=vocab,
        num_digits=num_digits,
        sample=sample,
        read_digits=reader,
    )
