"""Builders of real event logs for Sanctum tests, written through the real writer.

Any Sanctum test (rules, check, summary, the app) imports these instead of hand-writing
JSON: ``RunLog`` is the library's ``LogBuilder`` with a run's parts (rollout + update pairs,
anomalies), and ``write_run`` writes a whole healthy run with per-update overrides for the
unhealthy ones.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Literal

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.model.alerts import Alert
from telemetry.events import (
    AnomalyPayload,
    EarlyStop,
    Event,
    PPOUpdatePayload,
    RolloutPayload,
    RunStatus,
    TrainerInfo,
)
from telemetry.testing import T0, LogBuilder

STEPS_PER_UPDATE = 512
CONFIG: dict[str, Any] = {
    "max_kl": 0.03,
    "early_stop_scope": "minibatch",
    "total_steps": 20 * STEPS_PER_UPDATE,
    "seed": 3,
}
"""A config that declares max_kl (checked before each minibatch's step) and total_steps, as
the ppo trainer's does."""

HEALTHY: dict[str, Any] = {
    "approx_kl": 0.005,
    "approx_kl_max": 0.009,
    "kl_final": 0.006,
    "clip_fraction": 0.08,
    "ratio_mean": 1.0,
    "ratio_min": 0.8,
    "ratio_max": 1.25,
    "entropy": 0.68,
    "entropy_coef": 0.01,
    "policy_loss": -0.01,
    "value_loss": 12.5,
    "total_loss": 6.2,
    "explained_variance": 0.6,
    "grad_norm": 0.9,
    "grad_norm_max": 1.4,
    "learning_rate": 2.5e-4,
    "advantage_mean": 0.02,
    "advantage_std": 1.1,
    "return_mean": 20.0,
    "return_std": 8.0,
    "value_mean": 19.0,
    "epochs_completed": 4,
    "minibatches_completed": 16,
    "minibatches_planned": 16,
    "skipped_steps": 0,
    "nonfinite_ratios": 0,
    "update_seconds": 0.05,
}
"""A healthy update: every rule well inside its limits, every optional field measured (the
returns' spread too, so the EV rule, gated on it, judges)."""


def ppo_update(update: int, **fields: Any) -> PPOUpdatePayload:
    """A healthy update ``update``; keyword arguments override (None = not measured)."""
    values = {**HEALTHY, **fields}
    kl, top = values.get("approx_kl"), values.get("approx_kl_max")
    consistent = "approx_kl_max" in fields or not isinstance(kl, float)
    if not consistent and isinstance(top, float) and math.isfinite(kl) and kl > top:
        values["approx_kl_max"] = kl  # a mean is never above its maximum
    values.setdefault("global_step", (update + 1) * STEPS_PER_UPDATE)
    values.setdefault("early_stopped", False)
    return PPOUpdatePayload(update=update, **values)


def early_stop_update(update: int, kl: float = 0.0412, **fields: Any) -> PPOUpdatePayload:
    """An update stopped by max_kl 0.03 at epoch 2 minibatch 3, with reason and record."""
    reason = f"approx_kl {kl:.4f} > max_kl 0.0300 at epoch 2 minibatch 3 (minibatch not applied)"
    record = EarlyStop(
        epoch=2, minibatch=3, kl=kl, threshold=0.03, scope="minibatch", applied=False
    )
    values = {"early_stopped": True, "early_stop_reason": reason, "early_stop": record, **fields}
    return ppo_update(update, **values)


def rollout(update: int, **fields: Any) -> RolloutPayload:
    """A rollout before update ``update`` in which two episodes finished."""
    values: dict[str, Any] = {
        "global_step": (update + 1) * STEPS_PER_UPDATE,
        "episodes": 2,
        "episode_return_mean": 20.0 + update,
        "episode_return_min": 10.0 + update,
        "episode_return_max": 30.0 + update,
        "episode_length_mean": 20.0 + update,
        "steps_per_second": 4000.0,
        **fields,
    }
    return RolloutPayload(update=update, **values)


class RunLog(LogBuilder):
    """The library's log builder (a fake clock: one second per event) with a run's parts."""

    def __init__(
        self, path: Path, run_id: str = "run-test", t0: float = T0, tick: float = 1.0
    ) -> None:
        super().__init__(path, run_id=run_id, t0=t0, tick=tick)

    def start(  # type: ignore[override]
        self,
        config: Mapping[str, Any] | None = None,
        schema: int = 1,
        env_id: str = "CartPole-v1",
        step_unit: str | None = None,
        action_space: str | None = None,
    ) -> Event:
        return super().start(
            dict(CONFIG if config is None else config),
            schema=schema,
            env_id=env_id,
            seed=3,
            trainer=TrainerInfo(name="test-trainer", version="0.1"),
            step_unit=step_unit,
            action_space=action_space,
        )

    def update(self, update: int | PPOUpdatePayload, **fields: Any) -> None:
        """A rollout then a ppo_update (a payload as given, or a healthy one with overrides)."""
        payload = update if isinstance(update, PPOUpdatePayload) else ppo_update(update, **fields)
        self.emit(rollout(payload.update, global_step=payload.global_step))
        self.emit(payload)

    def heartbeat(self, global_step: int) -> None:
        self.beats(global_step)

    def anomaly(
        self,
        severity: Literal["warning", "critical"] = "critical",
        metric: str = "grad_norm",
        value: float | None = float("nan"),
        update: int | None = None,
    ) -> None:
        self.emit(
            AnomalyPayload(
                severity=severity,
                metric=metric,
                value=value,
                message="optimizer step skipped: non-finite gradient",
                update=update,
            )
        )


def write_run(
    path: Path,
    updates: int = 20,
    overrides: Callable[[int], Mapping[str, Any]] | None = None,
    finish: RunStatus | None = "completed",
    config: Mapping[str, Any] | None = None,
    step_unit: str | None = None,
    action_space: str | None = None,
) -> Path:
    """A whole run: start, ``updates`` rollout+update pairs, then finish (None: unfinished).

    ``overrides(u)`` returns fields to change in update ``u`` (e.g. a KL spike);
    ``step_unit``: what its ``global_step`` counts (None: environment steps);
    ``action_space``: ``run_started.action_space`` (None: not declared).
    """
    log = RunLog(path)
    log.start(config, step_unit=step_unit, action_space=action_space)
    for u in range(updates):
        log.update(u, **(overrides(u) if overrides else {}))
    if finish is not None:
        log.finish(finish, None if finish == "completed" else "stopped by the test")
    log.close()
    return path


KL_CRITICAL: Final[Mapping[str, float]] = {"approx_kl": 0.5, "clip_fraction": 0.0}
"""A KL the clip bounds nothing of: 0.5 per clip fraction 0 (counted as the rule's floor,
0.01) is 50, far past the KL rule's critical line (20 per clip fraction)."""
KL_WARNING: Final[Mapping[str, float]] = {"approx_kl": 0.1, "clip_fraction": 0.0}
"""10 per clip fraction: past the KL rule's warning line (5), under critical (20)."""
_KL_RULE = DEFAULT_THRESHOLDS.rule("approx_kl")
assert _KL_RULE is not None
KL_HOLDS: Final = _KL_RULE.window // 2 + 1
"""Updates in a row a KL breach must last for the KL rule to reach its level: the rule's
median of 5 (of KL per clip fraction) crosses a line at the third, once 3 of its 5 values
are past it, and stays past it for as many updates as the breach lasted (when its window
was full before the breach)."""


def kl_spike(at: int, value: float, updates: int = 1) -> Callable[[int], Mapping[str, Any]]:
    """Overrides that set approx_kl to ``value`` at ``updates`` updates from ``at``."""
    return lambda u: {"approx_kl": value} if at <= u < at + updates else {}


def kl_breach(
    at: int, breach: Mapping[str, float] = KL_CRITICAL, updates: int = KL_HOLDS
) -> Callable[[int], Mapping[str, Any]]:
    """Overrides that give ``updates`` updates from ``at`` the fields of ``breach`` (a KL
    past a line of the KL rule: :data:`KL_CRITICAL`, :data:`KL_WARNING`)."""
    return lambda u: dict(breach) if at <= u < at + updates else {}


def write_two_runs(path: Path) -> int:
    """Run ``run-a`` (6 updates: KL critical from update 2 (:data:`KL_CRITICAL` at updates
    0-2), an early stop at 3, value_loss NaN at 4, a critical anomaly; completed), then run
    ``run-b`` appended to the same file (4 healthy updates, KL 0.001; completed). Returns
    the line number of run-b's ``run_started``."""

    def unhealthy(u: int) -> Mapping[str, Any]:
        return {4: {"value_loss": float("nan")}}.get(u, kl_breach(0)(u))

    first = RunLog(path, run_id="run-a")
    first.start()
    for u in range(6):
        first.update(early_stop_update(u) if u == 3 else ppo_update(u, **unhealthy(u)))
    first.anomaly("critical", update=5)
    first.finish()
    first.close()
    line = len(path.read_bytes().splitlines()) + 1
    second = RunLog(path, run_id="run-b", t0=T0 + 1000)
    second.start()
    for u in range(4):
        second.update(u, approx_kl=0.001)
    second.finish()
    second.close()
    return line


# -- logs the gate cannot vouch for --------------------------------------------------------


def write_lost_updates(path: Path, updates: int = 40, delete: int = 20) -> Path:
    """A run recorded whole by the real recorder (``run_finished.updates`` = ``updates``),
    then every other ``ppo_update`` line deleted, ``delete`` of them: ``seq`` has a gap for
    each, and the log holds fewer updates than the trainer says it ran."""
    log = RunLog(path)
    log.start()
    for u in range(updates):
        log.update(u, **(dict(KL_CRITICAL) if u % 2 else {}))  # the lost ones were critical
    log.recorder.finish("completed")  # the recorder's own count of the updates it emitted
    lines = path.read_bytes().splitlines(keepends=True)
    update_lines = [i for i, line in enumerate(lines) if b'"type":"ppo_update"' in line]
    dropped = set(update_lines[1::2][:delete])
    path.write_bytes(b"".join(line for i, line in enumerate(lines) if i not in dropped))
    return path


def write_with_foreign_updates(path: Path, foreign: int = 40, run_id: str = "intruder") -> Path:
    """A healthy run with ``foreign`` critical updates of run ``run_id`` (no run_started of
    its own) between its updates: another writer's events inside the run's log."""
    log = RunLog(path)
    log.start()
    for u in range(6):
        log.update(u)
    log.close()
    other = RunLog(path, run_id=run_id)
    for u in range(foreign):
        other.emit(ppo_update(u, **KL_CRITICAL))
    other.close()
    rest = RunLog(path)
    rest.emitter._seq = itertools.count(2 * 6 + 2)  # the run's own seq goes on, whole
    for u in range(6, 12):
        rest.update(u)
    rest.finish()
    rest.close()
    return path


def write_failed_then_completed(path: Path) -> Path:
    """A healthy run that recorded ``run_finished`` failed, then ``completed``."""
    log = RunLog(path)
    log.start()
    for u in range(12):
        log.update(u)
    log.finish("failed", "RuntimeError: CUDA error: an illegal memory access")
    log.finish("completed")
    log.close()
    return path


def write_source_unread(path: Path) -> Path:
    """A healthy run whose header says an import could not read all of its source."""
    unread = "events.out.tfevents.1: record 31 at byte 4242: its data fails its checksum"
    write_run(path, updates=12, config={**CONFIG, "source": "test", "source_unread": [unread]})
    return path


def append_after_each_read(
    monkeypatch: Any, writer: RunLog, first_update: int, updates: int = 20
) -> list[int]:
    """Make every ``EventLogReader.read_new`` be followed by ``updates`` more updates from
    ``writer``, numbered on from ``first_update`` (a writer faster than any reader), for
    200 reads at most (so a reader that chases the end still ends). Returns the reads
    made (their ``max_bytes``), a list that grows."""
    from telemetry.eventlog import EventLogReader, ReadBatch

    read_new = EventLogReader.read_new
    reads: list[int] = []

    def read_then_append(self: EventLogReader, max_bytes: int = 8 << 20) -> ReadBatch:
        batch = read_new(self, max_bytes)
        reads.append(max_bytes)
        if len(reads) < 200:
            first = first_update + updates * (len(reads) - 1)
            for u in range(first, first + updates):
                writer.update(u)
        return batch

    monkeypatch.setattr(EventLogReader, "read_new", read_then_append)
    return reads


def an_alert(**fields: Any) -> Alert:
    """One alert, as the watcher makes them (a critical KL at update 3), ``fields`` changed."""
    values: dict[str, Any] = {
        "run": "run",
        "path": "runs/a/events.jsonl",
        "change": "critical",
        "verdict": "FAIL",
        "rule": "KL",
        "update": 3,
        "step": 2048,
        "value": 0.5,
        "line": "FAIL",
        "ts": 1.0,
        "check": "FAIL: KL 1x",
        **fields,
    }
    return Alert(**values)
