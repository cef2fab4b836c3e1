"""Does the adaptive controller hold the reference KL near its target? The example, measured.

    python bench/reference_kl.py                 # 3 seeds, about a minute on 2 cores
    python bench/reference_kl.py --seeds 7       # the example's own seed only
    python bench/reference_kl.py --keep DIR      # keep the runs (open them with sanctum)

It trains the starting policy (``examples/healthy.toml``), then fine-tunes it with
``examples/finetune.toml`` (a reference KL in the loss, ref_kl_target 0.02, the
proportional controller) on each seed, and once more per seed with the same starting
coefficient held fixed (no ref_kl_target), so the controller's share is seen beside what
the same run does without it. Over the last half of each run:

- ``median_ratio``: the median of ref_kl / ref_kl_target;
- ``within_2x``: the share of updates with ref_kl within a factor of 2 of the target;
- ``held``: median_ratio in [0.5, 2] and within_2x >= 0.75, for every controlled run.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import torch

from lib import EXAMPLES
from ppo.config import PPOConfig
from ppo.run.trainer import Trainer
from telemetry import PPOUpdate, read_events

HELD_MEDIAN = (0.5, 2.0)
HELD_SHARE = 0.75


def train(config: PPOConfig, run_dir: Path, run_id: str) -> Path:
    torch.set_num_threads(1)
    return Trainer(config, run_dir=run_dir, run_id=run_id).run().events_path


def figures(events: Path, target: float) -> dict[str, Any]:
    updates = [e.payload for e in read_events(events).events if isinstance(e, PPOUpdate)]
    ratios = [(p.ref_kl or 0.0) / target for p in updates[len(updates) // 2 :]]
    return {
        "updates": len(updates),
        "median_ratio": round(statistics.median(ratios), 3),
        "within_2x": round(sum(0.5 <= r <= 2.0 for r in ratios) / len(ratios), 3),
        "max_ratio": round(max(ratios), 2),
        "final_coef": updates[-1].ref_kl_coef,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 8, 9])
    parser.add_argument("--keep", type=Path, metavar="DIR", help="record the runs into DIR")
    parser.add_argument("--jobs", type=int, default=2, help="runs trained at once (default 2)")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="reference-kl-") as tmp:
        run_dir = args.keep or Path(tmp)
        start = train(PPOConfig.from_toml(EXAMPLES / "healthy.toml"), run_dir, "start")
        tuned = dataclasses.replace(
            PPOConfig.from_toml(EXAMPLES / "finetune.toml"), init_from=str(start.parent)
        )
        target = tuned.ref_kl_target
        assert target is not None
        runs = {}
        with ProcessPoolExecutor(args.jobs) as pool:
            for seed in args.seeds:
                seeded = dataclasses.replace(tuned, seed=seed)
                fixed = dataclasses.replace(seeded, ref_kl_target=None)
                runs[f"controlled-s{seed}"] = pool.submit(train, seeded, run_dir, f"ctl-s{seed}")
                runs[f"fixed-s{seed}"] = pool.submit(train, fixed, run_dir, f"fixed-s{seed}")
            result = {name: figures(future.result(), target) for name, future in runs.items()}
    print(f"{'run':<16} {'updates':>7} {'median':>7} {'within 2x':>9} {'max':>6}  final coef")
    for name, row in result.items():
        print(
            f"{name:<16} {row['updates']:>7} {row['median_ratio']:>7} "
            f"{row['within_2x']:>9} {row['max_ratio']:>6}  {row['final_coef']:.4g}"
        )
    controlled = [row for name, row in result.items() if name.startswith("controlled")]
    held = all(
        HELD_MEDIAN[0] <= row["median_ratio"] <= HELD_MEDIAN[1] and row["within_2x"] >= HELD_SHARE
        for row in controlled
    )
    summary = {
        "target": target,
        "runs": result,
        "held": held,
        "controlled_within_2x_median": statistics.median(r["within_2x"] for r in controlled),
        "seconds": round(time.monotonic() - started, 1),
    }
    print(f"\nref_kl held within 2x of {target} over the last half: {'yes' if held else 'NO'}")
    print(json.dumps(summary))
    sys.exit(0 if held else 1)


if __name__ == "__main__":
    main()
