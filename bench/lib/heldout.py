"""Leave one trainer out: a rule's lines refitted without one trainer's runs, and that
trainer's runs judged by them (what the rule would have said of a trainer it never saw).

The fit is the one the shipped lines came from: warning at the next power of ten at or
above ``MARGIN`` times the largest statistic of any healthy run, critical ``MARGIN`` times
that. The value-loss rule's 100x / 1000x is this fit on the whole corpus (its largest
healthy new high is SB3's MountainCarContinuous, 6.5x).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sanctum.health.rule import Rule
from sanctum.health.rule_judge import RuleJudge
from telemetry.eventlog import read_events
from telemetry.events import PPOUpdatePayload

MARGIN = 10.0


@dataclass(frozen=True)
class Scored:
    """One run's worst statistic under a rule."""

    name: str
    trainer: str
    healthy: bool
    fault: str | None
    worst: float | None
    """None: the rule judged nothing (the trainer logs no such metric)."""


def worst_statistic(events: Path, rule: Rule) -> float | None:
    """The rule's worst statistic over the run, with no line to stop a value joining its
    baseline (what the run itself did, not what a fitted rule let through)."""
    free = replace(rule, warning=1e299, critical=1e300, far=None)
    updates = [
        e.payload for e in read_events(events).events if isinstance(e.payload, PPOUpdatePayload)
    ]
    judge = RuleJudge(free)
    values = [getattr(u, rule.metric) for u in updates]
    if updates:
        judge.fold([u.update for u in updates], values)
    worst = judge.worst
    return None if worst is None or not math.isfinite(worst) else worst


def fit(healthy: Sequence[float]) -> tuple[float, float]:
    """(warning, critical) for an ``above`` rule from the healthy runs' worst statistics."""
    top = max(healthy, default=1.0)
    warning = 10 ** math.ceil(math.log10(MARGIN * top))
    return float(warning), float(warning * MARGIN)


def leave_one_trainer_out(scored: Sequence[Scored]) -> dict[str, dict[str, Any]]:
    """For each trainer: the lines fitted on the others' healthy runs, and its own runs
    judged by them (healthy runs past critical; broken runs past critical, of all and of
    its value-scale ones)."""
    out: dict[str, dict[str, Any]] = {}
    for trainer in sorted({s.trainer for s in scored}):
        others = [s.worst for s in scored if s.trainer != trainer and s.healthy and s.worst]
        warning, critical = fit(others)
        own = [s for s in scored if s.trainer == trainer and s.worst is not None]
        healthy = [s for s in own if s.healthy]
        broken = [s for s in own if not s.healthy]
        out[trainer] = {
            "warning": warning,
            "critical": critical,
            "healthy_runs": len(healthy),
            "healthy_worst": max((s.worst or 0.0 for s in healthy), default=None),
            "false_alarm_runs": sum((s.worst or 0.0) > critical for s in healthy),
            "broken_runs": len(broken),
            "caught": sorted(s.name for s in broken if (s.worst or 0.0) > critical),
            "broken_worst": {s.name: float(f"{s.worst:.3g}") for s in broken if s.worst},
        }
    return out


def print_leave_one_out(metric: str, table: dict[str, dict[str, Any]]) -> None:
    print(f"\n{metric}, each trainer left out of the fit (lines from the others' healthy runs):")
    head = f"{'trainer':<10} {'warning':>8} {'critical':>8} {'healthy':>7} {'worst':>8}"
    print(f"{head} {'failed':>6}  caught")
    for trainer, row in table.items():
        worst = "-" if row["healthy_worst"] is None else f"{row['healthy_worst']:.3g}"
        caught = ", ".join(f"{n} ({row['broken_worst'][n]:g}x)" for n in row["caught"]) or "-"
        print(
            f"{trainer:<10} {row['warning']:>8g} {row['critical']:>8g} {row['healthy_runs']:>7} "
            f"{worst:>8} {row['false_alarm_runs']:>6}  {caught}"
        )
