"""TRL GRPO runs on CPU in seconds: a tiny Llama built from a config, a character tokenizer
built here, a few prompts and reward functions; nothing is downloaded.

The tests of ``telemetry.integrations.trl`` and the language-model calibration bench record
these runs through ``SanctumCallback``. One :class:`TrlRun` names a variant; :func:`trainer`
builds the ``GRPOTrainer`` for it (the caller adds callbacks and calls ``train()``):

- ``healthy``: a reward for vowels (a share, whatever the length), a small learning rate,
  a reference KL (``beta`` > 0) that TRL logs as ``kl``;
- ``padding_hack``: a reward that grows with the completion's length and a learning rate
  high enough that the policy learns to run every completion to the cap;
- ``num_iterations`` 1 or 2 (GRPO's optimisation passes per generated batch);
- ``slow_step``: the reward function sleeps once, at the step given, as a slow reward model
  or a slow generation would;
- ``fail_at``: the reward function raises at that step (a crash inside ``train()``);
- ``constant_reward``: every completion earns the same reward (every group's rewards equal);
- ``nan_at``: the reward function returns ``bad_reward`` (NaN, or e.g. an overflowing
  reward model's inf) for every completion from that call on.

Everything runs on the CPU (``use_cpu``), saves nothing and reports to nothing.

:func:`task_trainer` builds, instead, TRL's GRPO on a token task of ``ppo.tokens`` (the
Hugging Face task, ``task = "hf"``) with a :class:`TokenPPOConfig`'s settings: the task's
prompts (:func:`task_dataset`), its reward (:class:`TaskReward`, the task's reader and
:func:`ppo.tokens.reward.score`), its action set and answer token: the job
``bench/token_grpo_trl_bench.py`` runs on both trainers.
"""

from __future__ import annotations

import math
import string
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from datasets import Dataset
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)
from trl import GRPOConfig, GRPOTrainer, RLOOConfig, RLOOTrainer

from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.reward import score
from ppo.tokens.task import TokenTask
from ppo.tokens.trainer import update_prompts

PAD, EOS, BOS = "<pad>", "</s>", "<s>"
ALPHABET = string.ascii_lowercase + " .,?!"
"""The characters the tokenizer knows; each is one token."""
PROMPTS = (
    "say a word",
    "name a fruit",
    "count to three",
    "hello there",
    "what is red",
    "tell a story",
    "a short line",
    "pick a color",
)
VOWELS = frozenset("aeiou")
TINY: dict[str, Any] = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 128,
    "tie_word_embeddings": False,
}
"""The model's size: tiny, for the runs test the recording and the rules, not the learning."""
SPECIAL = ("pad", "eos", "bos")


def char_tokenizer() -> PreTrainedTokenizerFast:
    """One token per character of :data:`ALPHABET`, with pad, BOS and EOS tokens."""
    vocab = {token: i for i, token in enumerate([PAD, EOS, BOS, *ALPHABET])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token=PAD))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    backend.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token=PAD, eos_token=EOS, bos_token=BOS
    )


def tiny_llama(tokenizer: PreTrainedTokenizerFast, seed: int = 0) -> LlamaForCausalLM:
    """A 2-layer Llama with hidden size 32 over ``tokenizer``'s vocabulary, seeded."""
    torch.manual_seed(seed)
    special = {f"{name}_token_id": getattr(tokenizer, f"{name}_token_id") for name in SPECIAL}
    config = LlamaConfig(vocab_size=len(tokenizer), **TINY, **special)
    return LlamaForCausalLM(config)


def vowel_share(completions: Sequence[str], **_: Any) -> list[float]:
    """The share of a completion's characters that are vowels (0 for an empty one)."""
    return [sum(c in VOWELS for c in text) / len(text) if text else 0.0 for text in completions]


def length_reward(max_chars: int) -> Callable[..., list[float]]:
    """A reward that grows with the completion's length: the padding hack's bait."""

    def completion_length(completions: Sequence[str], **_: Any) -> list[float]:
        return [min(len(text), max_chars) / max_chars for text in completions]

    return completion_length


def constant_reward(value: float) -> Callable[..., list[float]]:
    """A reward that pays ``value`` whatever the completion: GRPO has nothing to learn from."""

    def constant(completions: Sequence[str], **_: Any) -> list[float]:
        return [value] * len(completions)

    return constant


@dataclass
class StepHook:
    """Wraps a reward function: sleeps ``sleep`` seconds at call ``slow_at`` (0-based), raises
    at call ``fail_at``, returns ``bad`` from call ``nan_at`` on. TRL calls each reward
    function once per generated batch."""

    reward: Callable[..., list[float]]
    slow_at: int | None = None
    sleep: float = 0.0
    fail_at: int | None = None
    nan_at: int | None = None
    bad: float = math.nan
    calls: int = 0

    @property
    def __name__(self) -> str:  # TRL names a reward function's figures by its __name__
        return str(getattr(self.reward, "__name__", "reward"))

    def __call__(self, completions: Sequence[str], **kwargs: Any) -> list[float]:
        call, self.calls = self.calls, self.calls + 1
        if call == self.fail_at:
            raise RuntimeError(f"reward function failed at call {call}")
        if call == self.slow_at:
            time.sleep(self.sleep)
        if self.nan_at is not None and call >= self.nan_at:
            return [self.bad] * len(completions)
        return self.reward(completions, **kwargs)


@dataclass(frozen=True)
class TrlRun:
    """One GRPO run's settings; the defaults are the healthy run."""

    name: str = "healthy"
    algorithm: str = "grpo"
    """``grpo`` (GRPOTrainer) or ``rloo`` (RLOOTrainer, which takes the same settings)."""
    steps: int = 4
    learning_rate: float = 1e-4
    beta: float = 0.04
    """The reference KL's coefficient in the loss (0: no reference, no ``kl`` logged)."""
    num_iterations: int = 1
    """Optimisation passes over each generated batch."""
    num_generations: int = 4
    """Completions per prompt: one GRPO group."""
    batch: int = 8
    """Completions per optimizer step (per_device_train_batch_size)."""
    max_completion_length: int = 12
    seed: int = 0
    hack: bool = False
    """Reward the completion's length (the padding hack) instead of its vowels."""
    slow_at: int | None = None
    slow_seconds: float = 0.0
    fail_at: int | None = None
    constant_reward: float | None = None
    """Pay this reward for every completion (instead of vowels or length)."""
    nan_at: int | None = None
    """The reward function's call (0-based) from which it returns ``bad_reward``."""
    bad_reward: float = math.nan
    logging_steps: int = 1
    extra: dict[str, Any] = field(default_factory=dict)
    """Further GRPOConfig settings."""

    def varied(self, **changes: Any) -> TrlRun:
        return replace(self, **changes)


HEALTHY = TrlRun()
PADDING_HACK = TrlRun(name="padding_hack", learning_rate=5e-2, hack=True, steps=10)
TWO_ITERATIONS = TrlRun(name="num_iterations_2", num_iterations=2)
NO_REFERENCE = TrlRun(name="beta_0", beta=0.0)
SLOW_STEP = TrlRun(name="slow_step", slow_at=1, slow_seconds=2.0)
VARIANTS = {
    run.name: run for run in (HEALTHY, PADDING_HACK, TWO_ITERATIONS, NO_REFERENCE, SLOW_STEP)
}


TRAINERS: dict[str, tuple[type[GRPOConfig] | type[RLOOConfig], type[Any]]] = {
    "grpo": (GRPOConfig, GRPOTrainer),
    "rloo": (RLOOConfig, RLOOTrainer),
}
"""A run's algorithm -> TRL's config and trainer classes for it."""


def grpo_config(run: TrlRun, output_dir: str) -> GRPOConfig | RLOOConfig:
    """The config of ``run``: CPU, no saving, no reporting, a log line every step (each
    overridden by ``run.extra``: ``report_to="tensorboard"`` writes TRL's own log)."""
    config_class, _ = TRAINERS[run.algorithm]
    settings: dict[str, Any] = {
        "output_dir": output_dir,
        "max_steps": run.steps,
        "learning_rate": run.learning_rate,
        "beta": run.beta,
        "num_iterations": run.num_iterations,
        "num_generations": run.num_generations,
        "per_device_train_batch_size": run.batch,
        "max_completion_length": run.max_completion_length,
        "logging_steps": run.logging_steps,
        "report_to": [],
        "save_strategy": "no",
        "use_cpu": True,
        "seed": run.seed,
        "data_seed": run.seed,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "bf16": False,
    }
    return config_class(**{**settings, **run.extra})


def reward_of(run: TrlRun) -> StepHook:
    """The reward function of ``run`` (wrapped to sleep or fail at its step)."""
    base = length_reward(run.max_completion_length) if run.hack else vowel_share
    if run.constant_reward is not None:
        base = constant_reward(run.constant_reward)
    return StepHook(
        base,
        slow_at=run.slow_at,
        sleep=run.slow_seconds,
        fail_at=run.fail_at,
        nan_at=run.nan_at,
        bad=run.bad_reward,
    )


def trainer(
    run: TrlRun = HEALTHY,
    callbacks: Sequence[Any] = (),
    output_dir: str | None = None,
    threads: int | None = 1,
) -> Any:
    """A ready ``GRPOTrainer`` (or ``RLOOTrainer``) for ``run``; call ``train()`` on it.

    ``threads``: torch's intra-op threads for the process (None: leave them): a model this
    small runs several times faster on one thread than on several that contend.
    """
    if threads is not None:
        torch.set_num_threads(threads)
    tokenizer = char_tokenizer()
    folder = output_dir or tempfile.mkdtemp(prefix="trl-run-")
    initial = f"{folder}/initial-model"  # TRL loads the reference model from a path
    tiny_llama(tokenizer, run.seed).save_pretrained(initial)
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(max(run.batch * run.steps, 16))]
    _, trainer_class = TRAINERS[run.algorithm]
    return trainer_class(
        model=initial,
        reward_funcs=[reward_of(run)],
        args=grpo_config(run, folder),
        train_dataset=Dataset.from_dict({"prompt": prompts}),
        processing_class=tokenizer,
        callbacks=list(callbacks),
    )


def max_entropy(tokenizer: PreTrainedTokenizerFast) -> float:
    """ln of the vocabulary size: the entropy of a uniform next-token distribution."""
    return math.log(len(tokenizer))


@dataclass
class TaskReward:
    """A token task's reward as a TRL reward function: each completion (the token ids TRL
    passes as ``completion_ids``, cut after its end) behind its prompt (the dataset's
    ``prompt_ids``) is read by the task's reader and rewarded by
    :func:`ppo.tokens.reward.score`, as ``ppo.tokens`` rewards its own samples. It tallies
    the completion and the prompt tokens it is shown and the mean reward of each call (TRL
    calls it once per generated batch: once per update)."""

    task: TokenTask
    config: TokenPPOConfig
    generator: torch.Generator
    completion_tokens: int = 0
    prompt_tokens: int = 0
    reward_means: list[float] = field(default_factory=list)

    @property
    def __name__(self) -> str:  # TRL names a reward function's figures by its __name__
        return "task_reward"

    def __call__(
        self,
        completion_ids: Sequence[Sequence[int]],
        prompt_ids: Sequence[Sequence[int]],
        truth: Sequence[Sequence[int]],
        **_: Any,
    ) -> list[float]:
        vocab = self.task.vocab
        rows = [[*p, *c] for p, c in zip(prompt_ids, completion_ids, strict=True)]
        width = max(len(row) for row in rows)
        sequences = torch.tensor([row + [vocab.pad_id] * (width - len(row)) for row in rows])
        lengths = torch.tensor([len(c) for c in completion_ids])
        _, terms = score(
            self.task.read_digits,
            sequences,
            torch.tensor([len(row) - 1 for row in rows]),
            torch.tensor(truth),
            torch.tensor([bool(c) and c[-1] == vocab.answer_id for c in completion_ids]),
            lengths,
            self.config,
            self.generator,
        )
        self.completion_tokens += int(lengths.sum())
        self.prompt_tokens += sum(len(p) for p in prompt_ids)
        self.reward_means.append(float(terms.reward_final.mean()))
        return [float(r) for r in terms.reward_final]


def task_dataset(task: TokenTask, config: TokenPPOConfig, tokenizer: Any) -> Dataset:
    """Every update's prompts, in ``ppo.tokens``' order (:func:`update_prompts`): a row per
    prompt with its text, its ids and its true digits. A text the tokenizer does not read
    back to the same ids is a ``ValueError``."""
    rows: dict[str, list[Any]] = {"prompt": [], "prompt_ids": [], "truth": []}
    for update in range(config.updates):
        prompts, truth = update_prompts(task, config, update)
        for ids, digits in zip(prompts.tolist(), truth.tolist(), strict=True):
            text = " ".join(tokenizer.convert_ids_to_tokens(ids))
            if tokenizer(text, add_special_tokens=False)["input_ids"] != ids:
                raise ValueError(f"the tokenizer does not read {text!r} back as {ids}")
            rows["prompt"].append(text)
            rows["prompt_ids"].append(ids)
            rows["truth"].append(digits)
    return Dataset.from_dict(rows)


def task_run(task: TokenTask, config: TokenPPOConfig) -> TrlRun:
    """TRL's settings for the job ``config`` describes on ``task``: generation restricted
    to the task's allowed ids (every other id suppressed); a generated batch of
    ``rollouts_per_update`` completions (``group_size`` per prompt) per update, split into
    ``num_minibatches`` optimizer steps, ``update_epochs`` passes (``num_iterations``);
    the loss a token mean per minibatch (``bnpo``), the reference KL at
    ``ref_kl_loss_coef`` (TRL's k3), the same clip, Adam epsilon, gradient clip, constant
    learning rate and temperature; the prompts in order; no activation checkpointing."""
    steps_per_update = config.update_epochs * config.num_minibatches
    allowed = set(task.vocab.allowed_ids)
    suppressed = [i for i in range(len(task.vocab.names)) if i not in allowed]
    return TrlRun(
        name="token_task",
        steps=config.updates * steps_per_update,
        learning_rate=config.learning_rate,
        beta=config.ref_kl_loss_coef,
        num_iterations=config.update_epochs,
        num_generations=config.group_size,
        batch=config.rollouts_per_update // config.num_minibatches,
        max_completion_length=config.max_new_tokens,
        seed=config.seed,
        extra={
            "steps_per_generation": config.num_minibatches,
            "shuffle_dataset": False,
            "loss_type": "bnpo",
            "scale_rewards": "group" if config.scale_rewards else "none",
            "epsilon": config.clip_range,
            "adam_epsilon": config.adam_eps,
            "max_grad_norm": config.max_grad_norm,
            "lr_scheduler_type": "constant",
            "temperature": config.temperature,
            "activation_checkpointing": False,
            "generation_kwargs": {"suppress_tokens": suppressed},
        },
    )


def task_trainer(
    task: TokenTask, config: TokenPPOConfig, reward: TaskReward, output_dir: str
) -> Any:
    """A ready ``GRPOTrainer`` on ``task`` (``task = "hf"``: the model of ``hf_model``,
    loaded afresh from its folder, as is TRL's reference) with ``config``'s settings
    (:func:`task_run`), the answer token its end of sequence, ``reward`` its reward
    function. TRL's log-probabilities stay over the whole vocabulary (it has no action
    mask)."""
    if config.hf_model is None:
        raise ValueError("task_trainer needs a config with hf_model")
    folder = config.hf_model
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    model.generation_config.eos_token_id = task.vocab.answer_id
    return GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=grpo_config(task_run(task, config), output_dir),
        train_dataset=task_dataset(task, config, tokenizer),
        processing_class=tokenizer,
    )
