"""What does recording a TRL run cost? SanctumCallback's time per logging step against the
time of a TRL GRPO step, on the tiny CPU run of ``lib.trl_runs`` (a few thousand
parameters: the smallest step there is, so the largest share the callback can take).

    python bench/trl_callback_bench.py              # 40 steps, a log line each
    python bench/trl_callback_bench.py --steps 100

``callback_ms`` is the median over logging steps of the time spent inside the callback's
hooks during that step (building the ``ppo_update``, writing and flushing its line, the
progress marks); ``callback_halt_ms`` the same with ``halter=HaltGate()`` (each update
also judged by sanctum's in-process gate, halting on critical). ``step_ms`` is the median
wall time of a training step, from ``on_step_begin`` to ``on_step_end`` (generation,
reward and optimisation), and ``share`` = ``callback_ms`` / ``step_ms`` (``share_halt``
likewise). The first steps are left out (warm-up). The heartbeat thread wakes once a
second and writes nothing while hooks keep coming, so it is not counted. The last line
printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lib.trl_runs import HEALTHY, trainer
from sanctum import HaltGate
from telemetry.integrations.trl import SanctumCallback

WARMUP = 3
"""Steps left out of the medians."""
HOOKS = ("on_train_begin", "on_step_begin", "on_substep_end", "on_step_end", "on_log")


class Timed(SanctumCallback):
    """SanctumCallback with the time spent in each hook added up per training step."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spent: list[float] = [0.0]
        """Seconds inside the hooks, per step (the last entry: the step under way)."""
        self.steps: list[float] = []
        """Wall seconds of each step, on_step_begin to on_step_end."""
        self._began = 0.0
        for name in HOOKS:
            setattr(self, name, self._timed(name, getattr(self, name)))

    def _timed(self, name: str, hook: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            result = hook(*args, **kwargs)
            end = time.perf_counter()
            self.spent[-1] += end - start
            if name == "on_step_begin":
                self._began = start
            elif name == "on_step_end":
                self.steps.append(end - self._began)
            elif name == "on_log":  # a step's line is logged after its on_step_end
                self.spent.append(0.0)
            return result

        return timed


def measure(steps: int, halt: bool) -> tuple[float, float]:
    """(median callback ms per logging step, median step ms) of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        cb = Timed(run_dir=Path(tmp) / "runs", run_id="bench", halter=HaltGate() if halt else None)
        trainer(HEALTHY.varied(steps=steps), [cb], output_dir=f"{tmp}/out").train()
        assert cb.recorder is not None and cb.recorder.updates == steps
        per_log = cb.spent[WARMUP:-1]
        return 1000 * statistics.median(per_log), 1000 * statistics.median(cb.steps[WARMUP:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps per run")
    args = parser.parse_args(argv)
    if args.steps <= WARMUP + 1:
        parser.error(f"--steps must be more than {WARMUP + 1}")
    callback_ms, step_ms = measure(args.steps, halt=False)
    halt_ms, halt_step_ms = measure(args.steps, halt=True)
    figures = {
        "steps": args.steps,
        "callback_ms": round(callback_ms, 4),
        "step_ms": round(step_ms, 2),
        "share": round(callback_ms / step_ms, 5),
        "callback_halt_ms": round(halt_ms, 4),
        "step_halt_ms": round(halt_step_ms, 2),
        "share_halt": round(halt_ms / halt_step_ms, 5),
    }
    print(
        f"callback {callback_ms:.3f} ms per logging step, step {step_ms:.1f} ms: "
        f"{100 * figures['share']:.3f}% of a step",
        file=sys.stderr,
    )
    print(
        f"with a halter (critical): {halt_ms:.3f} ms, step {halt_step_ms:.1f} ms: "
        f"{100 * figures['share_halt']:.3f}%",
        file=sys.stderr,
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
