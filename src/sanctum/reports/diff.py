"""``sanctum diff A B``: why two runs differ, as one JSON-ready document.

Built from two :class:`~sanctum.reports.compare.LoadedRun` (the scan ``check`` and ``summary`` read,
so every final and worst value and every first warning or critical comes from the one rule
table), then printed by :mod:`sanctum.reports.diff_report` or as JSON. It holds, for A and
B: the run as ``summary`` describes it (path, facts, verdict, earlier runs), the config keys
that differ, each rule's tally (:mod:`sanctum.reports.documents`: final and worst value, the
first update at warning and at critical: the health timeline), every other metric's final
value, early stops with their reasons, and the return curves sampled at the same environment
steps (linearly interpolated between rollouts, each the windowed mean of
:mod:`sanctum.reports.return_curve`). Runs of another environment or major schema are
described all the same, flagged ``comparable: false`` with the reasons. Like ``summary``, a
log that holds several runs is described by its last run, and each run's verdict is
``check``'s under the same ``--fail-on`` (so far, for a run still live).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.metrics import FINAL_EPISODES
from sanctum.reports.compare import LoadedRun, config_differences, incomparable, load_run
from sanctum.reports.documents import earlier_runs, early_stops, rule_tallies, run_facts
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
        "rules": _rules(a, b),
        "metrics": _metrics(a, b),
        "early_stops": {"a": early_stops(a.scan), "b": early_stops(b.scan)},
        "returns": _returns(a, b),
    }


def _facts(run: LoadedRun, fail_on: Level, now: float | None) -> dict[str, Any]:
    """One run as ``summary`` describes it: its path, facts, verdict and earlier runs."""
    return {
        "path": str(run.path),
        "run": run_facts(run.scan).to_json(),
        **run.scan.aggregator.run_verdict(now, fail_on).fields(),
        "earlier_runs": earlier_runs(run.scan),
    }


def _rules(a: LoadedRun, b: LoadedRun) -> list[dict[str, Any]]:
    """Each rule in both runs: its tally in A and in B (final and worst values, and its
    health timeline)."""
    return [
        {
            "metric": ta.metric,
            "label": ta.label,
            "rule": ta.rule,
            "a": ta.to_json(),
            "b": tb.to_json(),
        }
        for ta, tb in zip(rule_tallies(a.scan), rule_tallies(b.scan), strict=True)
    ]


def _metrics(a: LoadedRun, b: LoadedRun) -> list[dict[str, Any]]:
    """Final values of the metrics no rule judges, measured in either run."""
    ruled = set(a.scan.tallies)
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
