"""How ``sanctum check`` shows its learning gate: a table of seeds for the text, one object
for ``--json``. The judgements themselves are rows of the check (text, JSON and JUnit name
``learning.final_return`` and ``learning.steps_to_threshold``); this adds the figures they
were made from. Run ids, paths and notes come from logs: the check's report makes every
line visible before it prints it.
"""

from __future__ import annotations

from typing import Any

from sanctum.formatting import SHORT_ABSENT, format_value, plural
from sanctum.reports.learning import LearningVerdict, SeedFigures, percent


def learning_lines(verdict: LearningVerdict) -> list[str]:
    """The seeds table and the settings of the gate, for the text report."""
    opts = verdict.options
    threshold = format_value(verdict.threshold)
    lines = [
        f"learning: {plural(len(verdict.candidates), 'candidate run')} vs "
        f"{plural(len(verdict.baseline), 'baseline run')}, medians over seeds; final return: "
        f"mean of the last {opts.episodes}+ episodes",
        f"threshold {threshold} ({verdict.threshold_source}); tolerances: final return "
        f"-{percent(opts.return_tolerance)} of the baseline's gain, steps "
        f"+{percent(opts.steps_tolerance)}",
        f"{'run':<28} {'seed':>5} {'initial':>9} {'final':>9} {'steps to ' + threshold:>16}",
    ]
    for side, runs in (("candidate", verdict.candidates), ("baseline", verdict.baseline)):
        lines += [_row(f"{side} {r.run_id}", r.seed, r.initial, r.final, r.steps) for r in runs]
    lines += [f"note  {note}" for note in verdict.notes]
    return [*lines, ""]


def _row(name: str, seed: int | None, initial: float, final: float, steps: int | None) -> str:
    shown_seed = SHORT_ABSENT if seed is None else str(seed)
    shown_steps = "never" if steps is None else str(steps)
    return (
        f"{name:<28} {shown_seed:>5} {format_value(initial):>9} {format_value(final):>9} "
        f"{shown_steps:>16}"
    )


def learning_dict(verdict: LearningVerdict) -> dict[str, Any]:
    """The gate as one JSON-ready object (a median that never reached is ``Infinity``)."""
    opts = verdict.options
    return {
        "passed": verdict.passed,
        "final_episodes": opts.episodes,
        "return_tolerance": opts.return_tolerance,
        "steps_tolerance": opts.steps_tolerance,
        "return_threshold": verdict.threshold,
        "return_threshold_source": verdict.threshold_source,
        "baseline_initial_return": verdict.baseline_initial,
        "baseline_gain": verdict.baseline_gain,
        "candidates": [_seed(r) for r in verdict.candidates],
        "baseline": [_seed(r) for r in verdict.baseline],
        "comparisons": [
            {
                "name": c.name,
                "passed": c.passed,
                "candidate_median": c.candidate,
                "baseline_median": c.baseline,
                "limit": c.limit,
                "message": c.message,
            }
            for c in verdict.comparisons
        ],
        "notes": list(verdict.notes),
    }


def _seed(r: SeedFigures) -> dict[str, Any]:
    return {
        "path": r.path,
        "run_id": r.run_id,
        "seed": r.seed,
        "status": r.status,
        "initial_return": r.initial,
        "final_return": r.final,
        "steps_to_threshold": r.steps,
    }
