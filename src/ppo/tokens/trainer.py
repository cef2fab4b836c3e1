"""TokenTrainer: token-level PPO or GRPO end to end, recorded like any run.

Per update: sample prompts (each ``group_size`` times), generate under the masked policy,
read the answer with the task's digit reader, reward, GRPO's group-relative advantages,
log-probabilities of the frozen reference (a copy of the warm-started model) once, record
a ``rollout`` event and one ``rollouts.jsonl`` line per sequence, update, record the
``ppo_update``. A step is a generated token.
"""

from __future__ import annotations

import copy
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from ppo import __version__
from ppo.config.device import resolved_device
from ppo.config.settings import ConfigError
from ppo.core.advantages import group_relative
from ppo.core.device import autocast
from ppo.core.kl_control import adapt_proportional
from ppo.tokens import figures, masking
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.generate import Generation, generate
from ppo.tokens.reward import RewardTerms, score
from ppo.tokens.samples import build_samples
from ppo.tokens.task import TokenTask, load_task
from ppo.tokens.update import TokenBatch, TokenUpdater, evaluate
from telemetry import Recorder, TrainerInfo
from telemetry.eventlog import EventLogWriter
from telemetry.events import TOKENS
from telemetry.halting import Halter
from telemetry.rollouts import ROLLOUTS_FILE
from telemetry.run_config import DEVICE_USED, VOCAB

TRAINER = TrainerInfo(name="sanctum-ppo-tokens", version=__version__)
GROUP_STD_EPS = 1e-6
"""GRPO divides a group's centred rewards by its standard deviation plus this (verl's)."""


@dataclass(frozen=True)
class TokenProgress:
    """Where training stands after an update."""

    updates_done: int
    num_updates: int
    reward_mean: float
    tokens_per_second: float


@dataclass(frozen=True)
class TokenResult:
    run_id: str
    events_path: Path
    rollouts_path: Path
    updates: int
    global_step: int
    reward_means: list[float]
    """Mean reward_final of each update's samples, in order."""
    halted: str | None = None
    """Why the health gate stopped the run (``halted: <rule> critical (...)``), if it did."""


def build_task(config: TokenPPOConfig) -> TokenTask:
    """The task named by the config, checked against it: a function of the config that
    returns a :class:`TokenTask` (anything else is a :class:`ConfigError` naming it)."""
    factory, unsure = load_task(config.task), False
    takes_no_config = ConfigError(
        [f"task {config.task!r}: not a function of the config that returns a TokenTask"]
    )
    try:
        inspect.signature(factory).bind(config)
    except TypeError:
        raise takes_no_config from None
    except ValueError:  # a builtin without a signature: its call says
        unsure = True
    try:
        task = factory(config)
    except TypeError:
        if unsure:
            raise takes_no_config from None
        raise  # the task's own error: its traceback is what its author needs
    if not isinstance(task, TokenTask):
        raise ConfigError([f"task {config.task!r} returned {type(task).__name__}, not a TokenTask"])
    if len(config.keep_prob) != task.num_digits:
        raise ConfigError(
            [
                f"keep_prob has {len(config.keep_prob)} entries; the task's answer has "
                f"{task.num_digits} digits"
            ]
        )
    if len(task.vocab.z_ids) < 1:
        raise ConfigError([f"task {config.task!r} allows no Z token"])
    return task


def device_of(config: TokenPPOConfig) -> torch.device:
    """The device the config names, resolved on this machine (:class:`ConfigError` when
    it names CUDA and torch sees none)."""
    return resolved_device(config.device)


class TokenTrainer:
    """Warm start (the task's), then ``updates`` PPO updates, recorded to ``run_dir/run_id``."""

    def __init__(
        self,
        config: TokenPPOConfig,
        run_dir: Path,
        run_id: str,
        on_progress: Callable[[TokenProgress], None] | None = None,
        on_start: Callable[[], None] | None = None,
        halt: Halter | None = None,
    ) -> None:
        self.config = config
        self.on_start = on_start
        """Called once the task is built (warm start included), before the run folder is
        made: where ``ppo train`` says where it records."""
        self.halt = halt
        """The health gate of ``--halt-on``: the run stops at the end of the update it fires."""
        self.halted: str | None = None
        self.run_dir = run_dir
        self.run_id = run_id
        self.on_progress = on_progress
        self.ref_coef = config.ref_kl_loss_coef
        self.device = torch.device("cpu")
        """Where the model, the reference, generation and the update run (set by run())."""
        self.host_generator = torch.Generator()
        """The reward's draws (on the CPU)."""
        self.global_step = 0
        self.reward_means: list[float] = []

    def run(self) -> TokenResult:
        cfg = self.config
        torch.set_num_threads(cfg.torch_threads)
        self.device = device_of(cfg)
        task = build_task(cfg)
        if self.on_start is not None:
            self.on_start()
        task.model.to(self.device)
        reference = copy.deepcopy(task.model).eval().requires_grad_(False)
        recorded = {
            **cfg.to_dict(),
            DEVICE_USED: self.device.type,
            VOCAB: list(task.vocab.names),
        }
        recorder = Recorder(
            run_dir=self.run_dir,
            run_id=self.run_id,
            env_id=f"tokens:{cfg.task}",
            seed=cfg.seed,
            config=recorded,
            trainer=TRAINER,
            algorithm="grpo" if cfg.algorithm == "grpo" else "ppo",
            kl=figures.kl_declarations(cfg),
            policy_epochs=cfg.update_epochs,
            step_unit=TOKENS,
            action_space="discrete",  # a vocabulary
        )
        if self.halt is not None:  # before run_started: the gate folds the whole run
            recorder.open()
            recorder.bus.subscribe(self.halt, name=self.halt.name)
        with recorder as rec, EventLogWriter(rec.run_dir / ROLLOUTS_FILE) as records:
            self._loop(rec, records, task, reference)
            if self.halted is not None and self.halt is not None:
                rec.finish(self.halt.status, self.halted)
        return TokenResult(
            self.run_id,
            rec.path,
            rec.run_dir / ROLLOUTS_FILE,
            len(self.reward_means),
            self.global_step,
            self.reward_means,
            self.halted,
        )

    def _loop(
        self, rec: Recorder, records: EventLogWriter, task: TokenTask, reference: nn.Module
    ) -> None:
        cfg = self.config
        generator = torch.Generator(self.device).manual_seed(cfg.seed + 1)
        # the reward's draws are on the CPU, from the same generator when that is the CPU's
        self.host_generator = (
            generator if self.device.type == "cpu" else torch.Generator().manual_seed(cfg.seed + 2)
        )
        updater = TokenUpdater(task.model, cfg, generator)
        allowed = masking.allowed_mask(len(task.vocab.names), task.vocab.allowed_ids, self.device)
        for update in range(cfg.updates):
            started = time.perf_counter()
            batch, gen, terms, equal = self._rollout(
                update, task, reference, records, generator, allowed
            )
            tokens = int(gen.num_generated.sum())
            self.global_step += tokens
            tps = tokens / max(time.perf_counter() - started, 1e-9)
            rec.emit(figures.rollout_payload(update, self.global_step, gen, terms, tps))
            t0 = time.perf_counter()
            result = updater.update(
                batch, allowed, self.ref_coef, update=update, global_step=self.global_step
            )
            ctx = figures.UpdateContext(
                ref_coef=self.ref_coef,
                allowed_count=len(task.vocab.allowed_ids),
                seconds=time.perf_counter() - t0,
                full_reward_rate=float(terms.reward_full.mean()),
                max_new_tokens_rate=float((~gen.answered).float().mean()),
                max_length_rate=float((gen.num_generated == cfg.max_new_tokens).float().mean()),
                lengths=gen.num_generated,
                zero_std_frac=None if equal is None else float(equal.float().mean()),
            )
            summary = figures.update_summary(result, batch, cfg, ctx)
            rec.emit(summary.payload)
            for anomaly in summary.anomalies:
                rec.emit(anomaly)
            self._adapt(summary.payload.ref_kl, tokens)
            self.reward_means.append(float(terms.reward_final.mean()))
            if self.on_progress is not None:
                elapsed = time.perf_counter() - started
                self.on_progress(
                    TokenProgress(update + 1, cfg.updates, self.reward_means[-1], tokens / elapsed)
                )
            if self.halt is not None and (reason := self.halt.reason) is not None:
                self.halted = reason  # stop at the end of this update, its stop recorded
                rec.emit(self.halt.anomaly(self.global_step))
                return

    def _adapt(self, ref_kl: float | None, tokens: int) -> None:
        target = self.config.ref_kl_target
        if target is not None and ref_kl is not None:
            self.ref_coef = adapt_proportional(
                self.ref_coef, ref_kl, target, tokens, self.config.ref_kl_horizon
            )

    @torch.no_grad()
    def _rollout(
        self,
        update: int,
        task: TokenTask,
        reference: nn.Module,
        records: EventLogWriter,
        generator: torch.Generator,
        allowed: Tensor,
    ) -> tuple[TokenBatch, Generation, RewardTerms, Tensor | None]:
        """The update's batch, its generation and rewards, and (GRPO) which groups' rewards
        are all equal."""
        cfg = self.config
        prompts, truth = update_prompts(task, cfg, update)
        prompts = prompts.repeat_interleave(cfg.group_size, dim=0).to(self.device)
        truth = truth.repeat_interleave(cfg.group_size, dim=0)
        with autocast(self.device, cfg.precision):
            on_device = generate(
                task.model, prompts, task.vocab, cfg.max_new_tokens, cfg.temperature, generator
            )
        gen = on_device.to(torch.device("cpu"))
        probs, terms = score(
            task.read_digits,
            gen.sequences,
            gen.last,
            truth,
            gen.answered,
            gen.num_generated,
            cfg,
            self.host_generator,
        )
        for record in build_samples(
            update * cfg.rollouts_per_update, gen, probs, truth, terms, cfg
        ):
            records.write(record)
        advantages: Tensor | None = None
        equal: Tensor | None = None
        if cfg.algorithm == "grpo":
            advantages, equal = group_relative(
                terms.reward_final, cfg.group_size, cfg.scale_rewards, GROUP_STD_EPS
            )
        batch = _batch(on_device, terms.reward_final, task.vocab.answer_id, advantages)
        every = torch.arange(batch.returns.shape[0], device=self.device)
        with autocast(self.device, cfg.precision):
            logp_ref, _, _ = evaluate(reference, batch, every, allowed, cfg.temperature)
        return _with_reference(batch, logp_ref), gen, terms, equal


def update_prompts(task: TokenTask, config: TokenPPOConfig, update: int) -> tuple[Tensor, Tensor]:
    """The prompts of update ``update`` (``rollouts_per_update / group_size`` of them, each
    once) and their true answer digits: the same for every run of one seed."""
    return task.sample(
        config.rollouts_per_update // config.group_size, config.seed * 1_000_003 + update
    )


def _batch(gen: Generation, returns: Tensor, filler: int, advantages: Tensor | None) -> TokenBatch:
    return TokenBatch(
        sequences=gen.sequences,
        prompt_len=gen.prompts.shape[1],
        actions=gen.tokens.masked_fill(~gen.valid, filler),
        valid=gen.valid,
        logp_old=gen.logp,
        values_old=gen.values,
        returns=returns.to(gen.valid.device),
        logp_ref=None,
        advantages=None if advantages is None else advantages.to(gen.valid.device),
    )


def _with_reference(batch: TokenBatch, logp_ref: Tensor) -> TokenBatch:
    return TokenBatch(**{**batch.__dict__, "logp_ref": logp_ref})
