"""How ``sanctum check`` shows its learning gate: a table of seeds for the text, one object
for ``--json``. The judgements themselves are rows of the check (text, JSON and JUnit name
``learning.final_return`` and ``learning.steps_to_threshold``); this adds the figures they
were made from. Run ids, paths and notes come from logs: the check's report makes every
line visible before it prints it.
"""

from __future__ import annotations

from typing import Any, Final

from sanctum.formatting import SHORT_ABSENT, format_value, plural
from sanctum.reports.learning import LearningVerdict, SeedFigures, percent
from sanctum.reports.table import right, table_lines
from sanctum.text.run_table import Column


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
    ]
    columns = (*SEED_COLUMNS, *right(f"steps to {threshold}", width=16))
    rows = [
        _cells(f"{side} {r.run_id}", r)
        for side, runs in (("candidate", verdict.candidates), ("baseline", verdict.baseline))
        for r in runs
    ]
    lines += table_lines(columns, rows)
    lines += [f"note  {note}" for note in verdict.notes]
    return [*lines, ""]


SEED_COLUMNS: Final = (
    Column("run", 28),
    *right("seed", width=5),
    *right("initial", "final", width=9),
)
"""The seeds table's columns before the steps to the threshold (titled with it)."""


def _cells(name: str, r: SeedFigures) -> tuple[str, ...]:
    return (
        name,
        SHORT_ABSENT if r.seed is None else str(r.seed),
        format_value(r.initial),
        format_value(r.final),
        "never" if r.steps is None else str(r.steps),
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
