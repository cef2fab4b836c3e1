"""What does measuring a trainer from outside cost? The probe's time per update against the
time of that trainer's update, for each integration built on it (the plain PyTorch loop,
TorchRL, skrl, Tianshou), on their examples' settings (``examples/*_ppo.py``) at a size
this machine runs in seconds.

    python bench/probe_overhead.py                       # every trainer whose extra is here
    python bench/probe_overhead.py --trainers skrl torchrl --updates 12

For each update, ``probe_ms`` is the time the probe spent: evaluating the policy on the
batch before and after the update (and the non-finite check, the payload, the log line),
plus the time inside its gradient hooks during the update; ``update_ms`` is the trainer's
own update, the block the probe wraps, less the time inside the hooks (``hooks_ms``, a
part of ``probe_ms``). ``share`` is the
median over updates (the first left out: warm-up) of ``probe_ms / update_ms``; the target
is 3%. RLlib's integration measures inside RLlib's learner and is not timed here. Each
trainer runs in this process, one after another. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import torch

from torchprobe import probe as probe_module

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.03
"""The issue's bound: the integration's time per update at most 3% of the update's."""
WARMUP = 1
RUNS: dict[str, tuple[str, str | None, list[str]]] = {
    "plain": ("probe_ppo", None, ["--updates", "{n}", "--num-steps", "256"]),
    "torchrl": ("torchrl_ppo", "torchrl", ["--batches", "{n}"]),
    "skrl": ("skrl_ppo", "skrl", ["--timesteps", "{steps}"]),
    "tianshou": (
        "tianshou_ppo",
        "tianshou",
        ["--epochs", "1", "--epoch-num-steps", "{steps2000}", "--num-envs", "10"],
    ),
}
"""trainer -> (example, the module it needs, its arguments for ``n`` updates)."""


class TimedNorms(probe_module.GradientNorms):
    """The probe's gradient hooks, with the time spent in them added up: the end-of-pass
    callback and the step hook, where the work is. The per-parameter hook only checks a
    flag (timing it would cost more than it does): its time stays in ``update_ms``."""

    spent = 0.0

    def backward_done(self) -> None:
        start = time.perf_counter()
        super().backward_done()
        TimedNorms.spent += time.perf_counter() - start

    def step(self, *args: Any) -> None:
        start = time.perf_counter()
        super().step(*args)
        TimedNorms.spent += time.perf_counter() - start


class TimedProbe(probe_module.UpdateProbe):
    """The probe, timing itself and the block it wraps."""

    rows: ClassVar[list[tuple[float, float, float]]] = []
    """(probe seconds, update seconds, seconds in the hooks) of each update."""

    def gradient_norms(
        self, measure: probe_module.UpdateMeasure, params: Any
    ) -> probe_module.GradientNorms:
        return TimedNorms(measure, params)

    @contextlib.contextmanager
    def update(self, *args: Any, **kwargs: Any) -> Iterator[probe_module.UpdateMeasure]:
        TimedNorms.spent = 0.0
        inner = [0.0]
        start = time.perf_counter()
        with super().update(*args, **kwargs) as measure:
            began = time.perf_counter()
            yield measure
            inner[0] = time.perf_counter() - began
        total = time.perf_counter() - start
        hooks = TimedNorms.spent
        update = inner[0] - hooks
        TimedProbe.rows.append((total - update, update, hooks))


def run(trainer: str, updates: int, folder: Path) -> dict[str, Any]:
    example, needs, argv = RUNS[trainer]
    if needs is not None and importlib.util.find_spec(needs) is None:
        return {"skipped": f"needs the {needs} extra"}
    if needs is not None:  # the integration's module holds its own name for the probe
        integration = importlib.import_module(f"telemetry.integrations.{needs}")
        integration.UpdateProbe = TimedProbe  # type: ignore[attr-defined]
    spec = importlib.util.spec_from_file_location(example, ROOT / "examples" / f"{example}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[example] = module
    spec.loader.exec_module(module)
    if needs is None:
        module.UpdateProbe = TimedProbe
    sizes = {"n": updates, "steps": 1024 * updates, "steps2000": 2000 * updates}
    args = [a.format(**sizes) for a in argv] + ["--run-dir", str(folder), "--run-id", trainer]
    TimedProbe.rows = []
    module.main(args)
    rows = TimedProbe.rows[WARMUP:]
    shares = [p / u for p, u, _ in rows if u > 0]
    return {
        "updates": len(rows),
        "probe_ms": round(1000 * statistics.median(p for p, _, _ in rows), 2),
        "hooks_ms": round(1000 * statistics.median(h for _, _, h in rows), 2),
        "update_ms": round(1000 * statistics.median(u for _, u, _ in rows), 1),
        "share": round(statistics.median(shares), 4),
        "within_target": statistics.median(shares) <= TARGET,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainers", nargs="+", choices=list(RUNS), default=list(RUNS))
    parser.add_argument("--updates", type=int, default=8, help="updates per trainer")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the same for every trainer: figures comparable across them
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for trainer in args.trainers:
            found[trainer] = run(trainer, args.updates, Path(tmp))
            print(trainer, found[trainer], flush=True)
    print(json.dumps({"target_share": TARGET, "by_trainer": found}))


if __name__ == "__main__":
    main()
