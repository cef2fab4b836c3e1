"""Our token-level GRPO (``ppo.tokens``) against TRL's ``GRPOTrainer`` on one job: tokens
per second and the reward gain of each.

    python bench/token_grpo_trl_bench.py            # 3 repeats of each, interleaved
    python bench/token_grpo_trl_bench.py --quick    # a few minutes
    python bench/token_grpo_trl_bench.py --profile prof.out   # cProfile of our trainer

The job, the same for both: the tiny random Llama and tokenizer that
``examples/tiny_hf_model.py`` saves (to a temporary folder; nothing is downloaded), loaded
by each trainer from that folder; the Hugging Face task (``task = "hf"``): the digit-sum
prompts, generation restricted to the Z tokens and ``<ANSWER>`` (TRL: every other id
suppressed, ``<ANSWER>`` its end of sequence), the task's reader and reward (TRL calls them
as its reward function, ``lib.trl_runs.TaskReward``); per update ``--prompts`` prompts in
the same order, ``--group`` completions each, at most ``--max-new-tokens`` tokens; the same
optimizer steps per update (``--minibatches`` x ``--epochs``), learning rate, clip, Adam
epsilon, gradient clip, reference-KL coefficient (k3 on both), token-mean loss per
minibatch, group-scaled advantages; the CPU, ``--threads`` torch threads for both.

Differences that stay: TRL takes log-probabilities over the whole vocabulary (it has no
action mask), ours over the allowed ids; where an update takes more than one optimizer
step, TRL recomputes the old policy's log-probabilities with a forward pass, ours keeps the
sampling's. Both generate through the model's key-value cache. Our side records as ``ppo train``
does (``events.jsonl`` and ``rollouts.jsonl`` through the Recorder); TRL logs its metrics
every step (``logging_steps=1``) to a callback that keeps them, reports to nothing and
prints nothing.

``tokens_per_s``: completion tokens (generated tokens, the answer token included, none
after it; the prompt's not counted) over the wall time of training, model loading and the
reader's warm start excluded: ours from the trainer's ``on_start`` (the task built) to the
end of ``run()``, TRL's ``train()``. Ours counts its generated tokens (``global_step``),
TRL's the reward function (the ``completion_ids`` TRL passes); TRL's own ``num_tokens``
counts prompt and completion tokens, so ``trl_num_tokens`` minus the prompts' tokens is
shown beside it as a check. ``cpu_tokens_per_s``: the same tokens over the process's CPU
seconds in that span (all its threads), a figure other processes on the machine move less.
Each side runs ``--repeats`` times, interleaved (the order alternates), each repeat with
seed ``--seed + r``; the figures are medians, the ratio ours / TRL of the median tokens
per second. ``reward_gain``: the mean reward of the last
``K`` updates minus that of the first ``K`` (``K`` = updates // 5, at least 1), the first
update's batch sampled before any step, median over the repeats. The last line printed is
one JSON object with every figure and the settings.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import torch

from lib import EXAMPLES
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.trainer import TokenTrainer, build_task
from telemetry.integrations import missing_extra

try:
    from transformers import PrinterCallback, TrainerCallback

    from lib.trl_runs import TaskReward, task_trainer
except ImportError as exc:
    missing_extra("trl", "the comparison with TRL", exc)


@dataclass(frozen=True)
class Side:
    """One trainer's run: completion tokens, training seconds (wall and CPU), mean reward
    per update."""

    tokens: int
    seconds: float
    cpu_seconds: float
    reward_means: list[float]
    num_tokens: int | None = None
    """TRL's own ``num_tokens`` (prompt and completion tokens) at the end; None for ours."""
    prompt_tokens: int | None = None
    """The prompts' tokens of TRL's completions (TRL's ``num_tokens`` counts them)."""

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds

    @property
    def cpu_tokens_per_s(self) -> float:
        return self.tokens / self.cpu_seconds

    def first(self, window: int) -> float:
        return statistics.fmean(self.reward_means[:window])

    def last(self, window: int) -> float:
        return statistics.fmean(self.reward_means[-window:])

    def gain(self, window: int) -> float:
        """The mean reward of the last ``window`` updates minus that of the first."""
        return self.last(window) - self.first(window)


class LogTap(TrainerCallback):  # type: ignore[misc]
    """Keeps TRL's last logged figures."""

    def __init__(self) -> None:
        self.last: dict[str, float] = {}

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
        self.last = {**self.last, **(logs or {})}


def save_model(folder: Path) -> None:
    """The documented example's tiny Llama and tokenizer, saved to ``folder``."""
    spec = importlib.util.spec_from_file_location("tiny_hf_model", EXAMPLES / "tiny_hf_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.save_tiny_model(str(folder))


def job(args: argparse.Namespace, folder: Path, seed: int) -> TokenPPOConfig:
    """The job, as our trainer's config (TRL's settings are derived from it)."""
    return TokenPPOConfig.from_mapping(
        {
            "algorithm": "grpo",
            "task": "hf",
            "hf_model": str(folder),
            "device": "cpu",
            "torch_threads": args.threads,
            "seed": seed,
            "updates": args.updates,
            "rollouts_per_update": args.prompts * args.group,
            "group_size": args.group,
            "max_new_tokens": args.max_new_tokens,
            "warm_start_steps": args.reader_steps,
            "learning_rate": args.lr,
            "update_epochs": args.epochs,
            "num_minibatches": args.minibatches,
            "ref_kl_loss_coef": args.beta,
            "ref_kl_loss_estimator": "k3",
            "loss_agg_mode": "token-mean",
            "scale_rewards": True,
        }
    )


def run_ours(config: TokenPPOConfig, run_dir: Path, profile: cProfile.Profile | None) -> Side:
    started: list[tuple[float, float]] = []
    trainer = TokenTrainer(
        config, run_dir, f"ours-{config.seed}", on_start=lambda: started.append(clocks())
    )
    if profile is not None:
        profile.enable()
    result = trainer.run()
    ended = clocks()
    if profile is not None:
        profile.disable()
    (wall, cpu), (wall0, cpu0) = ended, started[0]
    return Side(result.global_step, wall - wall0, cpu - cpu0, result.reward_means)


def clocks() -> tuple[float, float]:
    """Wall seconds and this process's CPU seconds (all its threads): the CPU figure moves
    less than the wall's when other processes share the machine."""
    return time.perf_counter(), time.process_time()


def run_trl(config: TokenPPOConfig, output_dir: Path) -> Side:
    torch.set_num_threads(config.torch_threads)
    task = build_task(config)  # the task's reader, built as our trainer builds it
    reward = TaskReward(task, config, torch.Generator().manual_seed(config.seed + 1))
    trainer = task_trainer(task, config, reward, str(output_dir))
    trainer.remove_callback(PrinterCallback)
    tap = LogTap()
    trainer.add_callback(tap)
    wall0, cpu0 = clocks()
    trainer.train()
    wall, cpu = clocks()
    if len(reward.reward_means) != config.updates:
        raise RuntimeError(
            f"TRL generated {len(reward.reward_means)} batches for {config.updates} updates"
        )
    num_tokens = tap.last.get("num_tokens")
    return Side(
        reward.completion_tokens,
        wall - wall0,
        cpu - cpu0,
        reward.reward_means,
        None if num_tokens is None else int(num_tokens),
        reward.prompt_tokens,
    )


def options() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short job: a few minutes")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side, interleaved")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--updates", type=int, default=30)
    parser.add_argument("--prompts", type=int, default=16, help="prompts per update")
    parser.add_argument("--group", type=int, default=4, help="completions per prompt (G)")
    parser.add_argument("--max-new-tokens", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=1, help="passes per batch (num_iterations)")
    parser.add_argument("--minibatches", type=int, default=2, help="optimizer steps per pass")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--beta", type=float, default=0.001, help="reference-KL coefficient")
    parser.add_argument("--reader-steps", type=int, default=300, help="the reader's training")
    parser.add_argument("--threads", type=int, default=1, help="torch threads, both sides")
    parser.add_argument("--profile", type=Path, help="write a cProfile of our runs here")
    return parser


QUICK = {"repeats": 2, "updates": 10, "prompts": 8, "reader_steps": 60}
"""What ``--quick`` changes."""


def table(ours: list[Side], trl: list[Side], window: int) -> list[str]:
    """The figures of both sides, a row each (per-repeat figures in run order)."""
    cells: list[tuple[str, Callable[[Side], str]]] = [
        ("tokens/s, each run", lambda s: f"{s.tokens_per_s:,.0f}"),
        ("completion tokens", lambda s: str(s.tokens)),
        ("train seconds", lambda s: f"{s.seconds:.1f}"),
        ("CPU tokens/s, each run", lambda s: f"{s.cpu_tokens_per_s:,.0f}"),
        (f"reward, first {window} updates", lambda s: f"{s.first(window):.3f}"),
        (f"reward, last {window} updates", lambda s: f"{s.last(window):.3f}"),
        ("reward gain", lambda s: f"{s.gain(window):+.3f}"),
    ]
    rows = [
        ("", "ours (ppo.tokens)", "TRL GRPOTrainer"),
        ("tokens/s, median", f"{median_tps(ours):,.0f}", f"{median_tps(trl):,.0f}"),
        *((name, " ".join(map(cell, ours)), " ".join(map(cell, trl))) for name, cell in cells),
    ]
    return [f"{name:<28}{a:>26}{b:>26}" for name, a, b in rows]


def median_tps(sides: list[Side]) -> float:
    return statistics.median(s.tokens_per_s for s in sides)


def main() -> int:
    args = options().parse_args()
    if args.quick:
        for name, value in QUICK.items():
            setattr(args, name, value)
    window = max(1, args.updates // 5)
    profile = cProfile.Profile() if args.profile else None
    ours: list[Side] = []
    trl: list[Side] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="grpo-vs-trl-") as tmp:
        folder = Path(tmp) / "tiny-llama"
        save_model(folder)
        for r in range(args.repeats):
            config = job(args, folder, args.seed + r)
            for side in ("ours", "trl") if r % 2 == 0 else ("trl", "ours"):
                if side == "ours":
                    ours.append(run_ours(config, Path(tmp) / "runs", profile))
                else:
                    trl.append(run_trl(config, Path(tmp) / f"trl-{r}"))
    if profile is not None:
        profile.dump_stats(args.profile)
    for line in table(ours, trl, window):
        print(line)
    ours_tps, trl_tps = median_tps(ours), median_tps(trl)
    ours_cpu, trl_cpu = (statistics.median(s.cpu_tokens_per_s for s in x) for x in (ours, trl))
    summary = {
        "tokens_per_s": round(ours_tps, 1),
        "trl_tokens_per_s": round(trl_tps, 1),
        "ratio": round(ours_tps / trl_tps, 3),
        "reward_gain": round(statistics.median(s.gain(window) for s in ours), 4),
        "trl_reward_gain": round(statistics.median(s.gain(window) for s in trl), 4),
        "reward_window": window,
        "completion_tokens": [s.tokens for s in ours],
        "trl_completion_tokens": [s.tokens for s in trl],
        "trl_num_tokens": [s.num_tokens for s in trl],
        "trl_prompt_tokens": [s.prompt_tokens for s in trl],
        "tokens_per_s_each": [round(s.tokens_per_s, 1) for s in ours],
        "trl_tokens_per_s_each": [round(s.tokens_per_s, 1) for s in trl],
        "cpu_tokens_per_s": round(ours_cpu, 1),
        "trl_cpu_tokens_per_s": round(trl_cpu, 1),
        "cpu_ratio": round(ours_cpu / trl_cpu, 3),
        "settings": {k: v for k, v in vars(args).items() if k not in ("profile", "quick")},
        "versions": {
            "torch": torch.__version__,
            "trl": version("trl"),
            "transformers": version("transformers"),
        },
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
