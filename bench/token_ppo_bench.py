"""Token-level PPO (or GRPO) on the shipped example: does it improve on the warm start, how
fast, and what do the per-rollout records cost?

    python bench/token_ppo_bench.py               # 3 seeds, 2 at a time: about 2 minutes
    python bench/token_ppo_bench.py --seeds 1     # one seed
    python bench/token_ppo_bench.py --config examples/token_grpo.toml   # GRPO

Per seed (``examples/token_ppo.toml``): ``reward_gain`` is the mean reward_final over the
last 10% of rollouts minus that of the warm-started model's own rollouts (the first
update's, sampled before any PPO step); ``tokens_per_second`` is generated tokens over
the run's wall time after the warm start (generation, reward and update together).
``record_us_per_rollout`` is the cost of building and writing one rollouts.jsonl line,
measured on the run's last batch, and ``record_share`` that cost against the time one
rollout takes in the run, so the figure travels between machines. The last line printed
is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import torch

from lib import EXAMPLES
from ppo.config.settings import read_toml
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.generate import generate
from ppo.tokens.reward import score
from ppo.tokens.samples import build_samples
from ppo.tokens.trainer import TokenProgress, TokenTrainer, build_task
from telemetry.eventlog import EventLogWriter

EXAMPLE = EXAMPLES / "token_ppo.toml"


def record_cost(config: TokenPPOConfig, folder: Path, repeats: int = 5) -> float:
    """Microseconds to build and write one record, median over ``repeats`` batches."""
    task = build_task(TokenPPOConfig.from_mapping({**config.to_dict(), "warm_start_steps": 0}))
    prompts, truth = task.sample(config.rollouts_per_update, 0)
    g = torch.Generator().manual_seed(0)
    gen = generate(task.model, prompts, task.vocab, config.max_new_tokens, 1.0, g)
    probs, terms = score(
        task.read_digits, gen.sequences, gen.last, truth, gen.answered, gen.num_generated, config, g
    )
    times = []
    with EventLogWriter(folder / "records.jsonl") as writer:
        for _ in range(repeats):
            t0 = time.perf_counter()
            for record in build_samples(0, gen, probs, truth, terms, config):
                writer.write(record)
            times.append((time.perf_counter() - t0) / config.rollouts_per_update)
    return statistics.median(times) * 1e6


def one_seed(example: Path, seed: int) -> dict[str, float]:
    config = TokenPPOConfig.from_mapping({**read_toml(example), "seed": seed})
    clock: list[float] = []

    def progress(p: TokenProgress) -> None:
        clock.append(time.perf_counter())

    with tempfile.TemporaryDirectory() as tmp:
        result = TokenTrainer(config, Path(tmp), f"bench-{seed}", progress).run()
        seen = result.reward_means
        tail = seen[-max(1, len(seen) // 10) :]
        seconds = clock[-1] - clock[0]
        tokens_per_second = result.global_step * (len(clock) - 1) / len(clock) / seconds
        per_rollout_us = seconds / ((len(clock) - 1) * config.rollouts_per_update) * 1e6
        cost = record_cost(config, Path(tmp))
    return {
        "seed": seed,
        "warm_start_reward": round(seen[0], 4),
        "final_reward": round(statistics.fmean(tail), 4),
        "reward_gain": round(statistics.fmean(tail) - seen[0], 4),
        "tokens_per_second": round(tokens_per_second),
        "record_us_per_rollout": round(cost, 1),
        "record_share": round(cost / per_rollout_us, 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--config", type=Path, default=EXAMPLE, help="a token-level TOML file")
    args = parser.parse_args()
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as pool:
        per_seed = list(pool.map(partial(one_seed, args.config), args.seeds))
    for row in per_seed:
        print(
            f"seed {row['seed']}: reward {row['warm_start_reward']:.3f} -> "
            f"{row['final_reward']:.3f} (gain {row['reward_gain']:+.3f}), "
            f"{row['tokens_per_second']:,.0f} tokens/s, records "
            f"{row['record_us_per_rollout']:.0f} us per rollout ({row['record_share']:.1%})"
        )
    gains = [row["reward_gain"] for row in per_seed]
    summary = {
        "reward_gain_median": statistics.median(gains),
        "reward_gain": {str(r["seed"]): r["reward_gain"] for r in per_seed},
        "tokens_per_second_median": statistics.median(r["tokens_per_second"] for r in per_seed),
        "record_us_per_rollout_median": statistics.median(
            r["record_us_per_rollout"] for r in per_seed
        ),
        "record_share_median": statistics.median(r["record_share"] for r in per_seed),
        "per_seed": per_seed,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
