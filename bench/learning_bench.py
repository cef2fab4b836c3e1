"""Learning benchmark: returns against published figures, several seeds each, beside SB3.

Tasks (each: our trainer on the config named, seeds 1..N, the mean return of the last 20
finished episodes):

- ``cartpole``: CartPole-v1 on the default config (CleanRL's baseline, annealed over 500k),
  10 seeds; each stops when its rolling mean first reaches 475 (the solved line) or at 200k
  steps. Passes when at least 8 of 10 seeds reach 475 by 200k. Also the wall seconds to
  reach it, with SB3 (same hyperparameters) and, given ``--cleanrl PATH/ppo.py``,
  CleanRL's script, in the same run: the figure is their ratio (times do not travel).
  Published: CleanRL 490 +- 6 at 500k.
- ``acrobot``: Acrobot-v1 on the default config, 500k steps. Passes at a median >= -100.
  Published: CleanRL -86 at 500k.
- ``pendulum``: ``examples/pendulum.toml`` (RL Zoo's hyperparameters with normalisation),
  200k steps; the return at 100k is reported too. Passes at a median >= -250.
  Published: RL Zoo -172 at 100k.
- ``halfcheetah`` (``--long``): ``examples/halfcheetah.toml`` (CleanRL's hyperparameters),
  1M steps. Published: CleanRL 1443 at 1M (HalfCheetah-v4).

SB3 runs the same hyperparameters (``VecNormalize`` where we normalise) on ``--sb3-seeds``
seeds of every task. Runs go ``--jobs`` at a time (default 2, one per core; every run uses
one torch thread), ours and SB3's interleaved so both see the same load. The last line
printed is one JSON object.

    python bench/learning_bench.py                      # cartpole, acrobot, pendulum
    python bench/learning_bench.py --tasks cartpole --seeds 10 --cleanrl ~/cleanrl/ppo.py
    python bench/learning_bench.py --long               # + halfcheetah (mujoco extra)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lib import EXAMPLES
from lib.learning_runs import Outcome, run_cleanrl, run_ours, run_sb3
from ppo.config import PPOConfig

DEFAULT_TASKS = ("cartpole", "acrobot", "pendulum")
NO_CLEANRL_EPISODES = (
    "  CleanRL printed no episode: its ppo.py reads infos['final_info'], which Gymnasium "
    ">= 1.0 does not report; run it with --cleanrl-python from a venv with gymnasium==0.29.1"
)


@dataclass(frozen=True)
class Task:
    """One benchmark task: a config, a budget, a pass line and a published figure."""

    name: str
    config: PPOConfig
    steps: int
    seeds: int
    line: float
    """Pass line: the median final return (or, with ``stop_at_line``, the solved line)."""
    published: str
    stop_at_line: bool = False
    """Stop a run when its rolling mean reaches ``line`` (CartPole: time to solve)."""
    probe_at: int | None = None
    """Also report the rolling mean when the run passes this many steps."""
    min_solved: int = 0
    """With ``stop_at_line``: seeds that must reach the line by ``steps``."""


def tasks(args: argparse.Namespace) -> list[Task]:
    pendulum = PPOConfig.from_toml(EXAMPLES / "pendulum.toml")
    cheetah = PPOConfig.from_toml(EXAMPLES / "halfcheetah.toml")
    chosen = [
        Task("cartpole", PPOConfig(), 200_000, args.seeds or 10, 475.0,
             "CleanRL 490 +- 6 at 500k", stop_at_line=True, min_solved=8),
        Task("acrobot", PPOConfig(env_id="Acrobot-v1"), 500_000, args.seeds or 3, -100.0,
             "CleanRL -86 at 500k"),
        Task("pendulum", pendulum, 200_000, args.seeds or 5, -250.0,
             "RL Zoo -172 at 100k", probe_at=100_000),
        Task("halfcheetah", cheetah, 1_000_000, args.seeds or 1, 1000.0,
             "CleanRL 1443 at 1M (v4)"),
    ]  # fmt: skip
    wanted = args.tasks or [*DEFAULT_TASKS, *(["halfcheetah"] if args.long else [])]
    return [t for t in chosen if t.name in wanted]


def _jobs(chosen: list[Task], args: argparse.Namespace) -> list[tuple[str, Task, int]]:
    """(trainer, task, seed) in the order they run: ours and peers interleaved."""
    jobs: list[tuple[str, Task, int]] = []
    for task in chosen:
        for seed in range(1, task.seeds + 1):
            jobs.append(("ours", task, seed))
            if not args.no_sb3 and seed <= args.sb3_seeds:
                jobs.append(("sb3", task, seed))
            if args.cleanrl and task.name == "cartpole" and seed <= args.sb3_seeds:
                jobs.append(("cleanrl", task, seed))
    return jobs


def _run(job: tuple[str, Task, int], args: argparse.Namespace, run_dir: str) -> Outcome:
    who, task, seed = job
    stop = task.line if task.stop_at_line else None
    if who == "ours":
        return run_ours(task.config, task.steps, seed, stop, task.probe_at, Path(run_dir))
    if who == "sb3":
        return run_sb3(task.config, task.steps, seed, stop, task.probe_at)
    return run_cleanrl(
        args.cleanrl, args.cleanrl_python, task.config.env_id, task.steps, seed, task.line
    )


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarise(task: Task, outcomes: dict[str, list[Outcome]]) -> dict[str, Any]:
    ours = outcomes.get("ours", [])
    finals = [o.final_return for o in ours]
    figures: dict[str, Any] = {
        "env_id": task.config.env_id,
        "steps": task.steps,
        "seeds": len(ours),
        "published": task.published,
        "median_return": _median(finals),
        "returns": finals,
    }
    if task.probe_at is not None:
        figures[f"median_return_at_{task.probe_at}"] = _median([o.probe_return for o in ours])
    if task.stop_at_line:
        solved = [o for o in ours if o.solved_seconds is not None]
        figures["seeds_solved"] = len(solved)
        figures["steps_to_solve"] = [o.solved_step for o in ours]
        figures["passed"] = len(solved) >= task.min_solved
        for who, runs in outcomes.items():
            figures[f"{who}_seconds_to_solve_median"] = _median([o.solved_seconds for o in runs])
            figures[f"{who}_solved"] = sum(o.solved_seconds is not None for o in runs)
        mine = figures.get("ours_seconds_to_solve_median")
        for peer in ("sb3", "cleanrl"):
            theirs = figures.get(f"{peer}_seconds_to_solve_median")
            if mine and theirs:
                figures[f"time_to_solve_ratio_vs_{peer}"] = mine / theirs
    else:
        median = figures["median_return"]
        figures["passed"] = median is not None and median >= task.line
    if "sb3" in outcomes:
        figures["sb3_median_return"] = _median([o.final_return for o in outcomes["sb3"]])
        if task.probe_at is not None:
            probe = _median([o.probe_return for o in outcomes["sb3"]])
            figures[f"sb3_median_return_at_{task.probe_at}"] = probe
    figures["pass_line"] = task.line
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [*DEFAULT_TASKS, "halfcheetah"]
    parser.add_argument("--tasks", nargs="+", choices=names, help="default: all but halfcheetah")
    parser.add_argument("--long", action="store_true", help="add HalfCheetah-v5 (1M steps)")
    parser.add_argument("--seeds", type=int, help="seeds per task (default: 10/3/5/1)")
    parser.add_argument("--sb3-seeds", type=int, default=3, help="SB3 seeds per task (3)")
    parser.add_argument("--no-sb3", action="store_true", help="skip Stable-Baselines3")
    parser.add_argument("--cleanrl", help="path to CleanRL's ppo.py: time to solve CartPole")
    parser.add_argument(
        "--cleanrl-python",
        default=sys.executable,
        help="the Python that runs it (CleanRL's ppo.py prints episodes only under "
        "gymnasium < 1.0: give a venv with gymnasium==0.29.1, tyro, tensorboard, torch)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (2)")
    args = parser.parse_args()
    if args.cleanrl and not Path(args.cleanrl).is_file():
        parser.error(f"--cleanrl: no file at {args.cleanrl}")
    chosen = tasks(args)
    jobs = _jobs(chosen, args)
    outcomes: dict[str, dict[str, list[Outcome]]] = {t.name: {} for t in chosen}
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(_run, job, args, tmp) for job in jobs]
        for (who, task, seed), future in zip(jobs, futures, strict=True):
            outcome = future.result()
            outcomes[task.name].setdefault(who, []).append(outcome)
            print(f"{task.name:11s} {who:7s} seed {seed:2d}: {outcome.describe()}", flush=True)
            if who == "cleanrl" and outcome.final_return is None:
                print(NO_CLEANRL_EPISODES, flush=True)
    result = {t.name: summarise(t, outcomes[t.name]) for t in chosen}
    for name, figures in result.items():
        print(f"{name}: median {figures['median_return']}, passed {figures['passed']}")
    print(json.dumps(result))
    return 0 if all(f["passed"] for f in result.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
