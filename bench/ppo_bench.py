"""Throughput and learning benchmark of ppo against Stable-Baselines3 PPO on CartPole-v1.

Default mode: CartPole-v1 with CleanRL's baseline hyperparameters for 100k steps, event
log on (written to a temporary run folder), median over 3 runs; when stable-baselines3 is
installed, its PPO with the same hyperparameters runs alternately with ours in the same
process (ours, SB3, ours, SB3, ...), so both see the same machine state. Steps per second
is total steps over the wall time of building and training (environment creation
included, for both). Both use the same torch thread count (``--threads``, default 1: on
small MLPs more threads only add contention). Final return: mean of the last 20 finished
episodes. The last line printed is one JSON object.

``--solve-check`` instead trains 5 seeds with the baseline config (its learning rate anneals
over 500k steps, as CleanRL's) and counts how many reach a mean return (last 20 episodes)
>= 475 within their first 200k steps.

    python bench/ppo_bench.py
    python bench/ppo_bench.py --solve-check
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from lib.learning_runs import sb3_hyperparameters
from ppo.config import PPOConfig
from ppo.run.trainer import Progress, Trainer
from telemetry.returns import FINAL_EPISODES as RECENT


@dataclass(frozen=True)
class RunFigures:
    """One training run: throughput and the mean return of its last episodes."""

    sps: float
    final_return_mean: float | None


def run_ours(steps: int, seed: int, threads: int, run_dir: Path) -> RunFigures:
    """Our trainer with its defaults (CleanRL CartPole baseline), event log on."""
    started = time.perf_counter()
    config = PPOConfig(total_steps=steps, seed=seed, torch_threads=threads)
    result = Trainer(config, run_dir=run_dir).run()
    elapsed = time.perf_counter() - started
    return RunFigures(result.global_step / elapsed, result.recent_return_mean)


def sb3_runner() -> Callable[[int, int], RunFigures] | None:
    """SB3 PPO with the same hyperparameters, or None when SB3 is not installed."""
    try:
        from stable_baselines3 import PPO
        from stable_baselines3.common.env_util import make_vec_env
    except ImportError:
        return None
    config = PPOConfig()

    def run(steps: int, seed: int) -> RunFigures:
        started = time.perf_counter()
        env = make_vec_env(config.env_id, n_envs=config.num_envs, seed=seed)
        model = PPO("MlpPolicy", env, device="cpu", seed=seed, **sb3_hyperparameters(config))
        model.learn(steps)
        elapsed = time.perf_counter() - started
        episodes = [float(info["r"]) for info in list(model.ep_info_buffer)[-RECENT:]]
        env.close()
        return RunFigures(steps / elapsed, statistics.fmean(episodes) if episodes else None)

    return run


def report(label: str, figures: RunFigures) -> None:
    ret = figures.final_return_mean
    print(f"{label} {figures.sps:8.0f} steps/s  return {'n/a' if ret is None else f'{ret:.1f}'}")


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def throughput(args: argparse.Namespace) -> dict[str, float | None]:
    sb3 = None if args.no_sb3 else sb3_runner()
    ours: list[RunFigures] = []
    theirs: list[RunFigures] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            seed = i + 1
            ours.append(run_ours(args.steps, seed, args.threads, Path(tmp)))
            report(f"run {i + 1}: ours", ours[-1])
            if sb3 is not None:
                theirs.append(sb3(args.steps, seed))
                report(f"run {i + 1}: sb3 ", theirs[-1])
    sps = median([r.sps for r in ours])
    sb3_sps = median([r.sps for r in theirs])
    figures = {
        "sps": sps,
        "sb3_sps": sb3_sps,
        "ratio_vs_sb3": None if sps is None or sb3_sps is None else sps / sb3_sps,
        "final_return_mean": median([r.final_return_mean for r in ours]),
        "sb3_final_return_mean": median([r.final_return_mean for r in theirs]),
    }
    print(f"median over {args.runs} runs of {args.steps} steps, torch threads {args.threads}:")
    for key, value in figures.items():
        print(f"  {key:24s} {'n/a' if value is None else f'{value:,.2f}'}")
    return figures


def solve_check(args: argparse.Namespace) -> dict[str, object]:
    """How many seeds reach the target rolling mean within the budget.

    The hyperparameters are the baseline's, including its learning-rate schedule (CleanRL
    anneals over its 500k default steps); each run stops at the budget or at the target.
    """
    reached: list[int | None] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, args.seeds + 1):
            trainer = Trainer(PPOConfig(seed=seed), run_dir=Path(tmp))
            first: list[int] = []

            def watch(p: Progress, trainer: Trainer = trainer, first: list[int] = first) -> None:
                if (p.recent_return_mean or 0.0) >= args.target:
                    first.append(p.global_step)
                    trainer.request_stop("target reached")
                elif p.global_step >= args.budget:
                    trainer.request_stop("budget spent")

            trainer.on_progress = watch
            trainer.run()
            reached.append(first[0] if first else None)
            print(f"seed {seed}: {'reached at ' + str(first[0]) if first else 'not reached'}")
    count = sum(r is not None for r in reached)
    print(f"{count} of {args.seeds} seeds reach mean return >= {args.target} within {args.budget}")
    return {
        "seeds": args.seeds,
        "seeds_reaching_target": count,
        "target": args.target,
        "budget_steps": args.budget,
        "steps_to_target": reached,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000, help="steps per run (100000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per trainer (3)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for both (1)")
    parser.add_argument("--no-sb3", action="store_true", help="skip Stable-Baselines3")
    parser.add_argument(
        "--solve-check",
        action="store_true",
        help="count seeds reaching --target within --budget steps instead",
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--target", type=float, default=475.0)
    parser.add_argument("--budget", type=int, default=200_000)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    result = solve_check(args) if args.solve_check else throughput(args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
