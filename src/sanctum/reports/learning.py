"""The learning-regression gate of ``sanctum check RUN --seeds ... --baseline ...``.

Seeds are the unit of replication: the candidate (RUN and its ``--seeds``) and the baseline
are each a set of runs, and the gate compares their medians, so one lucky or unlucky seed
moves neither side. Two judgements, each a test case of the check:

- ``learning.final_return``: the candidates' median final return (mean of the last
  :data:`~sanctum.metrics.FINAL_EPISODES` or more episodes,
  :mod:`sanctum.reports.return_curve`) may fall below the baseline's median by at
  most ``return_tolerance`` (default 0.25) times the baseline's *gain*, its median final
  minus its median initial return. A fraction of what the baseline learned, not of the
  return itself: the figure is the same whatever the reward's offset and sign (CartPole
  starts near 20, Pendulum near -1200).
- ``learning.steps_to_threshold``: the candidates' median steps until the windowed return
  first reaches the threshold may exceed the baseline's median by at most
  ``steps_tolerance`` (default 0.25) of it. A run that never reaches the threshold counts
  as infinitely slow. The threshold is ``return_threshold`` when given, else halfway from
  the baseline's median initial return to its median final return: the half-rise point,
  which every seed of a healthy baseline crosses on the steep part of its curve (a higher
  fraction lands on the noisy plateau, where the step a seed first touches it varies by
  the whole run).

Runs of another environment or schema are refused, as is a baseline that did not learn
(no gain to take a fraction of) or whose median run never reaches the threshold: a gate
never passes what it cannot judge (exit 2, :class:`GateError`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sanctum.formatting import format_value, plural
from sanctum.health.thresholds import Thresholds
from sanctum.metrics import FINAL_EPISODES
from sanctum.model.verdict import CheckRow
from sanctum.reports.compare import (
    LoadedRun,
    config_differences,
    config_value,
    incomparable,
    load_run,
)
from sanctum.reports.return_curve import (
    final_return,
    initial_return,
    steps_to_reach,
)
from sanctum.run_files import UsageError
from telemetry.run_config import PER_RUN_KEYS

RETURN_TOLERANCE = 0.25
"""Default: the candidates may lose a quarter of what the baseline learned."""
STEPS_TOLERANCE = 0.25
"""Default: the candidates may need a quarter more steps to the threshold."""
HALF_RISE = 0.5
"""The default threshold: this far from the baseline's initial to its final return."""


class GateError(UsageError):
    """The runs cannot be compared, or the baseline cannot serve as one (exit 2)."""


@dataclass(frozen=True, slots=True)
class GateOptions:
    """The tolerances and threshold of the gate (None: derived from the baseline)."""

    return_tolerance: float = RETURN_TOLERANCE
    steps_tolerance: float = STEPS_TOLERANCE
    return_threshold: float | None = None
    episodes: int = FINAL_EPISODES


@dataclass(frozen=True, slots=True)
class SeedFigures:
    """One run's figures, as the gate counts them."""

    path: str
    run_id: str
    seed: int | None
    status: str | None
    initial: float
    final: float
    steps: int | None
    """Steps until the windowed return first reached the threshold; None: never."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """One judgement: the candidates' median against the limit the baseline sets."""

    name: str
    """The test case: ``learning.final_return`` or ``learning.steps_to_threshold``."""
    label: str
    passed: bool
    candidate: float
    baseline: float
    limit: float
    """The worst candidate median that passes (inf: a run that never reaches it)."""
    message: str


@dataclass(frozen=True, slots=True)
class LearningVerdict:
    """Both judgements, with every figure they were made from."""

    options: GateOptions
    threshold: float
    threshold_source: str
    baseline_initial: float
    baseline_gain: float
    candidates: tuple[SeedFigures, ...]
    baseline: tuple[SeedFigures, ...]
    comparisons: tuple[Comparison, ...]
    notes: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)


def run_gate(
    candidates: Sequence[Path], baseline: Sequence[Path], thresholds: Thresholds, opts: GateOptions
) -> LearningVerdict:
    """Load every run (one run per log, as ``check`` demands) and judge (exit 2 errors are
    raised as EventLogError or :class:`GateError`)."""
    loaded = [load_run(p, thresholds, one_run=True) for p in (*candidates, *baseline)]
    return judge_learning(loaded[: len(candidates)], loaded[len(candidates) :], opts)


def judge_learning(
    candidates: Sequence[LoadedRun], baseline: Sequence[LoadedRun], opts: GateOptions
) -> LearningVerdict:
    """The verdict on loaded runs (pure)."""
    _refuse_incomparable([*candidates, *baseline])
    base_initial = statistics.median(_returns(r, opts.episodes)[0] for r in baseline)
    base_final = statistics.median(_returns(r, opts.episodes)[1] for r in baseline)
    gain = base_final - base_initial
    if not gain > 0:
        raise GateError(
            f"the baseline did not learn: its median final return {format_value(base_final)} "
            f"is not above its median initial return {format_value(base_initial)}, so there "
            "is no learning to regress from"
        )
    threshold = opts.return_threshold
    source = "--return-threshold"
    if threshold is None:
        threshold, source = base_initial + HALF_RISE * gain, "half-rise of the baseline"
    cand = tuple(_figures(r, threshold, opts.episodes) for r in candidates)
    base = tuple(_figures(r, threshold, opts.episodes) for r in baseline)
    comparisons = (
        _final_return(cand, base, gain, opts.return_tolerance),
        _steps(cand, base, threshold, opts.steps_tolerance),
    )
    notes = _notes(candidates, baseline, (*cand, *base))
    return LearningVerdict(
        opts, threshold, source, base_initial, gain, cand, base, comparisons, notes
    )


def _refuse_incomparable(runs: Sequence[LoadedRun]) -> None:
    first = runs[0]
    for other in runs[1:]:
        reasons = incomparable(first.run, other.run)
        if reasons:
            raise GateError(
                f"{other.path}: cannot be compared with {first.path} ({'; '.join(reasons)}): "
                "a learning gate compares runs of one environment and schema"
            )
    for run in runs:
        if not run.curve:
            raise GateError(f"{run.path}: no rollout with a finished episode: no return to judge")


def _returns(run: LoadedRun, episodes: int) -> tuple[float, float]:
    initial, final = initial_return(run.curve, episodes), final_return(run.curve, episodes)
    assert initial is not None and final is not None  # refused above: the curve has points
    return initial, final


def _figures(run: LoadedRun, threshold: float, episodes: int) -> SeedFigures:
    initial, final = _returns(run, episodes)
    steps = steps_to_reach(run.curve, threshold, episodes)
    return SeedFigures(str(run.path), run.name, run.run.seed, run.run.status, initial, final, steps)


def _verdict(passed: bool) -> str:
    return "within tolerance" if passed else "regressed"


def percent(fraction: float) -> str:
    """``0.25`` as ``25%``."""
    return f"{fraction * 100:g}%"


def _median_steps(runs: Sequence[SeedFigures]) -> float:
    return statistics.median(math.inf if r.steps is None else float(r.steps) for r in runs)


def _final_return(
    cand: Sequence[SeedFigures], base: Sequence[SeedFigures], gain: float, tolerance: float
) -> Comparison:
    median = statistics.median(r.final for r in cand)
    baseline = statistics.median(r.final for r in base)
    limit = baseline - tolerance * gain
    passed = median >= limit
    message = (
        f"median final return {format_value(median)} over {plural(len(cand), 'run')} vs "
        f"baseline {format_value(baseline)} over {plural(len(base), 'run')}; "
        f"{_verdict(passed)}: the limit is {format_value(limit)} (the baseline less "
        f"{percent(tolerance)} of its gain {format_value(gain)})"
    )
    return Comparison(
        "learning.final_return", "final return", passed, median, baseline, limit, message
    )


def _steps(
    cand: Sequence[SeedFigures], base: Sequence[SeedFigures], threshold: float, tolerance: float
) -> Comparison:
    median, baseline = _median_steps(cand), _median_steps(base)
    if math.isinf(baseline):
        raise GateError(
            f"the baseline's median run never reaches a return of {format_value(threshold)} "
            f"({sum(r.steps is None for r in base)} of {len(base)} runs never do): "
            "choose a lower --return-threshold"
        )
    limit = baseline * (1 + tolerance)
    passed = median <= limit
    missed = sum(r.steps is None for r in cand)
    shown = "never" if math.isinf(median) else f"{median:.0f}"
    message = (
        f"median steps to reach a return of {format_value(threshold)}: {shown} over "
        f"{plural(len(cand), 'run')}"
        + (f" ({missed} never reached it)" if missed else "")
        + f" vs baseline {baseline:.0f} over {plural(len(base), 'run')}; {_verdict(passed)}: "
        f"the limit is {limit:.0f} (the baseline plus {percent(tolerance)})"
    )
    return Comparison(
        "learning.steps_to_threshold",
        "steps to threshold",
        passed,
        median,
        baseline,
        limit,
        message,
    )


def _notes(
    candidates: Sequence[LoadedRun], baseline: Sequence[LoadedRun], figures: Sequence[SeedFigures]
) -> tuple[str, ...]:
    """What a reader of the verdict should know: how the configs differ (seeds aside),
    repeated seeds, runs that did not complete."""
    notes = []
    differences = config_differences(
        candidates[0].run.config, baseline[0].run.config, ignore=PER_RUN_KEYS
    )
    if differences:
        shown = ", ".join(
            f"{d.key} {config_value(d.b, d.only_in != 'a')} -> "
            f"{config_value(d.a, d.only_in != 'b')}"
            for d in differences
        )
        notes.append(f"config differs from the baseline's (baseline -> candidate): {shown}")
    for side, runs in (("candidate", candidates), ("baseline", baseline)):
        seeds = [r.run.seed for r in runs if r.run.seed is not None]
        for seed in sorted({s for s in seeds if seeds.count(s) > 1}):
            times = seeds.count(seed)
            notes.append(f"seed {seed} is in {times} {side} runs: it counts {times} times")
    for fig in figures:
        if fig.status != "completed":
            notes.append(f"{fig.run_id} did not complete ({fig.status}): judged on its returns")
    return tuple(notes)


def check_rows(verdict: LearningVerdict) -> tuple[CheckRow, ...]:
    """The judgements as rows of the check: its text, JSON and JUnit name them."""
    return tuple(CheckRow(c.name, c.label, c.passed, c.message) for c in verdict.comparisons)
