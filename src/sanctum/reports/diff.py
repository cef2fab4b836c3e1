"""``sanctum diff A B``: why two runs differ, as one JSON-ready document.

Built from two :class:`~sanctum.reports.compare.LoadedRun` (the scan ``check`` and ``summary`` read,
so every final and worst value and every first warning or critical comes from the one rule
table), then printed by :mod:`sanctum.reports.diff_report` or as JSON. It holds, for A and B: the
config keys that differ, each rule's final and worst value with the first update at warning
and at critical (the health timeline), every other metric's final value, early stops with
their reasons, and the return curves sampled at the same environment steps (linearly
interpolated between rollouts, each the windowed mean of :mod:`sanctum.reports.return_curve`).
Runs of another environment or major schema are described all the same, flagged
``comparable: false`` with the reasons. Like ``summary``, a log that holds several runs is
described by its last run, and each run's verdict is ``check``'s under the same
``--fail-on`` (so far, for a run still live).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sanctum.formatting import SHORT_ABSENT, format_value
from sanctum.health.levels import Level
from sanctum.health.rule_judge import RuleTally
from sanctum.health.rules import Thresholds
from sanctum.metrics import FINAL_EPISODES
from sanctum.reports.compare import LoadedRun, config_differences, incomparable, load_run
from sanctum.reports.return_curve import (
    equal_steps,
    final_return,
    initial_return,
    sample_at,
)

CURVE_POINTS = 10
"""Steps at which the return curves are compared: evenly spaced up to the shorter run's end."""


def build_diff(
    a: Path,
    b: Path,
    thresholds: Thresholds,
    fail_on: Level = Level.CRITICAL,
    now: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """Load both runs and compare them, at time ``now()`` (a run still live is judged so
    far). Raises EventLogError for unusable input."""
    return diff_runs(load_run(a, thresholds), load_run(b, thresholds), fail_on, now())


def diff_runs(
    a: LoadedRun, b: LoadedRun, fail_on: Level = Level.CRITICAL, now: float | None = None
) -> dict[str, Any]:
    """The diff document of two loaded runs (pure)."""
    reasons = incomparable(a.run, b.run)
    return {
        "a": _facts(a, fail_on, now),
        "b": _facts(b, fail_on, now),
        "fail_on": fail_on.value,
        "comparable": not reasons,
        "incomparable": reasons,
        "config": [asdict(d) for d in config_differences(a.run.config, b.run.config)],
        "rules": [_rule(ta, tb, a, b) for ta, tb in zip(_tallies(a), _tallies(b), strict=True)],
        "metrics": _metrics(a, b),
        "early_stops": {"a": _early_stops(a), "b": _early_stops(b)},
        "returns": _returns(a, b),
    }


def _facts(run: LoadedRun, fail_on: Level, now: float | None) -> dict[str, Any]:
    r, agg = run.run, run.scan.aggregator
    return {
        "path": str(run.path),
        "run_id": r.run_id,
        "env_id": r.env_id,
        "seed": r.seed,
        "schema": r.schema,
        "trainer": r.trainer,
        "status": r.status,
        "reason": r.reason,
        "updates": r.updates,
        "global_step": r.global_step,
        "episodes": r.episodes,
        **agg.run_verdict(now, fail_on).fields(),
        "earlier_runs": [x.run_id for x in run.scan.earlier_runs if x.new_run],
    }


def _tallies(run: LoadedRun) -> list[RuleTally]:
    return list(run.scan.tallies.values())


def _rule(ta: RuleTally, tb: RuleTally, a: LoadedRun, b: LoadedRun) -> dict[str, Any]:
    """One rule in both runs: final and worst values, and its health timeline."""
    rule = ta.rule

    def side(t: RuleTally, run: LoadedRun) -> dict[str, Any]:
        final = run.scan.stats[rule.metric].final
        return {
            "final": final,
            "final_text": format_value(final, rule.decimals, SHORT_ABSENT),
            "worst": t.worst,
            "worst_text": rule.format(t.worst, SHORT_ABSENT),
            "worst_update": t.worst_update,
            "updates_warning": t.at_warning,
            "updates_critical": t.at_critical,
            "first_warning": t.first_warning,
            "first_critical": t.first_critical,
        }

    return {
        "metric": rule.metric,
        "label": rule.label,
        "rule": rule.describe(),
        "a": side(ta, a),
        "b": side(tb, b),
    }


def _metrics(a: LoadedRun, b: LoadedRun) -> list[dict[str, Any]]:
    """Final values of the metrics no rule judges, measured in either run."""
    ruled = {t.rule.metric for t in _tallies(a)}
    rows = []
    for metric, sa in a.scan.stats.items():
        sb = b.scan.stats[metric]
        if metric in ruled or not (sa.measured or sb.measured):
            continue
        rows.append(
            {
                "metric": metric,
                "a": {"final": sa.final, "minimum": sa.minimum, "maximum": sa.maximum},
                "b": {"final": sb.final, "minimum": sb.minimum, "maximum": sb.maximum},
            }
        )
    return rows


def _early_stops(run: LoadedRun) -> dict[str, Any]:
    return {
        "count": run.scan.early_stop_count,
        "listed": [{"update": u, "reason": r} for u, r in run.scan.early_stops],
    }


def _returns(a: LoadedRun, b: LoadedRun, episodes: int = FINAL_EPISODES) -> dict[str, Any]:
    """Initial and final returns, and both curves at the same steps."""
    steps = (
        equal_steps(a.curve[-1].step, b.curve[-1].step, CURVE_POINTS) if a.curve and b.curve else []
    )
    va, vb = sample_at(a.curve, steps, episodes), sample_at(b.curve, steps, episodes)
    return {
        "episodes": episodes,
        "a": {
            "initial": initial_return(a.curve, episodes),
            "final": final_return(a.curve, episodes),
        },
        "b": {
            "initial": initial_return(b.curve, episodes),
            "final": final_return(b.curve, episodes),
        },
        "at_steps": [
            {"step": s, "a": x, "b": y, "b_minus_a": None if x is None or y is None else y - x}
            for s, x, y in zip(steps, va, vb, strict=True)
        ],
    }
