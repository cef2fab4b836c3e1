"""A small sweep of real event logs for the multi-run tests: seeds of two configurations.

Each run is written through the real writer (``RunLog``, one second per event) into
``<folder>/<run id>/events.jsonl`` with its own seed, learning rate, KL curve and returns,
so grouping, medians and the overlay have something to tell apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from telemetry.events import TrainerInfo
from telemetry.testing import LogBuilder
from tests.sanctum.app_support import lively
from tests.sanctum.logs import CONFIG, RunLog, rollout


@dataclass(frozen=True)
class SweepRun:
    """One run of the sweep: its id, seed, learning rate and how it goes."""

    run_id: str
    seed: int
    learning_rate: float
    updates: int
    kl_scale: float
    kl_rise: float
    """How much the KL grows per update, as a fraction of its scale."""
    return_offset: float
    finish: bool = False
    clip_fraction: float | None = None
    """The clip fraction of every update (None: the rising one of a learning run)."""


SWEEP = (
    SweepRun("lr3e-4-s1", 1, 3e-4, 14, 0.004, 0.0, 0.0),
    SweepRun("lr3e-4-s2", 2, 3e-4, 14, 0.005, 0.0, 6.0),
    SweepRun("lr3e-4-s3", 3, 3e-4, 14, 0.006, 0.0, 3.0),
    SweepRun("lr3e-3-s1", 1, 3e-3, 12, 0.024, 0.5, -4.0, finish=True, clip_fraction=0.0),
    SweepRun("lr3e-3-s2", 2, 3e-3, 12, 0.024, 3.0, -9.0, clip_fraction=0.0),
)
"""Three healthy seeds, still running; two seeds of a 10x learning rate whose KL climbs
while the clip bounds nothing (the KL rule's median of KL per clip fraction: 6 to 10 for
the first, past warning, never critical; past critical from update 4 for the second): one
finished at a KL warning, one still running past the critical line."""


def kl_at(run: SweepRun, update: int) -> float:
    """The run's KL at ``update``: a wave around its scale, rising by ``kl_rise``."""
    wave = 1.2 + 0.6 * math.sin(update / 2.5 + run.seed)
    return round(run.kl_scale * wave * (1 + run.kl_rise * update), 6)


def return_at(run: SweepRun, update: int) -> float:
    """The run's mean episode return at ``update``: rising, offset per run."""
    return round(20.0 + 2.0 * update + run.return_offset, 3)


def start(path: Path, run: SweepRun) -> RunLog:
    """Open the run's log and write its ``run_started`` (its own seed and config)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    log = RunLog(path, run_id=run.run_id)
    config = {**CONFIG, "seed": run.seed, "learning_rate": run.learning_rate}
    LogBuilder.start(
        log,
        config,
        env_id="CartPole-v1",
        seed=run.seed,
        trainer=TrainerInfo(name="test-trainer", version="0.1"),
    )
    return log


def step(log: RunLog, run: SweepRun, update: int) -> None:
    """One rollout (with the run's return) and one update (with the run's KL)."""
    clip = {} if run.clip_fraction is None else {"clip_fraction": run.clip_fraction}
    payload = lively(update, kl_at(run, update), **clip)
    ret = return_at(run, update)
    log.emit(
        rollout(
            update,
            global_step=payload.global_step,
            episode_return_mean=ret,
            episode_return_min=ret - 10,
            episode_return_max=ret + 10,
        )
    )
    log.emit(payload)


def write_sweep(folder: Path, runs: tuple[SweepRun, ...] = SWEEP) -> list[RunLog]:
    """Every run of ``runs`` under ``folder``, each whole (finished when it says so)."""
    logs = []
    for run in runs:
        log = start(folder / run.run_id / "events.jsonl", run)
        for update in range(run.updates):
            step(log, run, update)
        if run.finish:
            log.finish()
        log.close()
        logs.append(log)
    return logs


def events_in(folder: Path) -> list[Path]:
    """The events files of the sweep, in run folder order (as ``--all`` lists them)."""
    return sorted(folder.glob("*/events.jsonl"))
