"""The plug-in point of token-level PPO: a :class:`TokenTask` supplies the model, its
vocabulary, the prompts with their true answer digits, and the digit reader.

To train your own model, write a function that returns a ``TokenTask`` and name it in the
config as ``task = "my_package.my_module:my_task"`` (``task = "hf"``: a Hugging Face
causal LM from a local folder, :mod:`ppo.tokens.hf`). The model is any ``torch.nn.Module``
that maps token ids ``[batch, time]`` to ``(logits [batch, time, vocab], values [batch,
time])``: position t's logits predict token t + 1 and its value is the critic's V of the
state after reading tokens 0..t. PPO trains every parameter of the model that requires a
gradient; the reader scores an answer and is never trained. A model may also offer
``step`` (:class:`IncrementalModel`, a KV cache): generation then uses it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from torch import Tensor, nn

from ppo.config.settings import ConfigError


@dataclass(frozen=True)
class Vocab:
    """The ids generation may use, and names to print tokens by."""

    z_ids: tuple[int, ...]
    """The reasoning tokens: the only ids generated before the answer."""
    answer_id: int
    """``<ANSWER>``: ends generation; the reader reads the state at it."""
    pad_id: int
    """Fills a sequence after its answer, so a batch stays rectangular; never trained on."""
    names: tuple[str, ...]
    """A printable name per id (``sanctum rollouts`` shows tokens by these)."""

    @property
    def allowed_ids(self) -> tuple[int, ...]:
        """Every id generation may produce: the Z tokens and the answer."""
        return (*self.z_ids, self.answer_id)


class DigitReader(Protocol):
    """Reads the answer: ``(ids [batch, time], last [batch])`` to digit probabilities
    ``[batch, num_digits, 10]`` at position ``last`` of each sequence."""

    def __call__(self, ids: Tensor, last: Tensor) -> Tensor: ...


@runtime_checkable
class IncrementalModel(Protocol):
    """A model that generation can feed one token at a time: ``step(ids [B, N], cache)``
    returns the logits ``[B, N, vocab]`` and values ``[B, N]`` at the ``N`` new positions
    given ``cache``, what the previous call returned for the tokens before them (None at
    the first call), and the cache that now holds them too. Its outputs are the forward's
    on the whole sequence (the update's log-probabilities are the forward's)."""

    def step(self, ids: Tensor, cache: Any) -> tuple[Tensor, Tensor, Any]: ...


class PromptSampler(Protocol):
    """``(count, seed)`` to prompts ``[count, prompt_len]`` and their true answer digits
    ``[count, num_digits]``; every prompt of a batch has the same length."""

    def __call__(self, count: int, seed: int) -> tuple[Tensor, Tensor]: ...


@dataclass(frozen=True)
class TokenTask:
    """Everything token-level PPO needs from a task."""

    model: nn.Module
    """The policy and critic being trained (already warm-started: the 'pretrained' model)."""
    vocab: Vocab
    num_digits: int
    sample: PromptSampler
    read_digits: DigitReader


TaskFactory = Callable[..., TokenTask]

BUILT_IN: dict[str, str] = {"hf": "ppo.tokens.hf:make_task"}
"""Short names ``task`` accepts for the tasks that ship with ppo."""


def load_function(spec: str, field: str) -> Callable[..., Any]:
    """The function named by ``module:function`` in the config field ``field``; a clear
    :class:`ConfigError` otherwise."""
    module, attr = _module_of(spec, field)
    function = getattr(module, attr, None)
    if not callable(function):
        raise ConfigError([f"{field} {spec!r}: {module.__name__} has no function {attr!r}"])
    return function  # type: ignore[no-any-return]


def load_task(spec: str) -> TaskFactory:
    """The factory named by ``module:function`` (or a :data:`BUILT_IN` name)."""
    return load_function(BUILT_IN.get(spec, spec), "task")


def task_preflight(spec: str) -> Callable[..., None] | None:
    """The ``preflight`` function of the task's module, if it has one: called with the
    config before anything is built or created, it raises a one-line ``ValueError`` for
    input it can tell is unusable (a missing extra, a folder that is not a model)."""
    module, _ = _module_of(BUILT_IN.get(spec, spec), "task")
    check = getattr(module, "preflight", None)
    return check if callable(check) else None


def _module_of(spec: str, field: str) -> tuple[ModuleType, str]:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError([f"{field} must be 'module:function', got {spec!r}"])
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError([f"{field} {spec!r}: cannot import {module_name!r} ({exc})"]) from None
    return module, attr
