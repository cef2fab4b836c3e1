"""The command line of ``sanctum diff`` and of ``sanctum check``'s learning gate.

Kept apart from :mod:`sanctum.cli` (which only calls these) so the thin CLI stays thin.
Parsing is stdlib only; the comparison modules load when a command runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from sanctum.cli.arg_types import Commands, add_command, add_json, count, finite_number
from sanctum.metrics import FINAL_EPISODES
from sanctum.run_files import UsageError, resolve_run

if TYPE_CHECKING:
    from sanctum.health.levels import Level
    from sanctum.health.rules import Thresholds
    from sanctum.reports.learning import GateOptions, LearningVerdict

GATE_HELP = (
    "With --baseline, check also fails (exit 1) when learning regressed: the median over RUN "
    f"and --seeds of the final return (mean of the last {FINAL_EPISODES}+ episodes) is below "
    "the baseline runs' median by more than --return-tolerance of the baseline's gain (final "
    "minus initial return), or their median steps to reach --return-threshold exceed the "
    "baseline's by more than --steps-tolerance. Runs of another env are refused (exit 2). "
    "Give RUN first: sanctum check runs/new-s1 --seeds runs/new-s2 --baseline runs/base-s1 "
    "runs/base-s2"
)
GATE_OPTIONS = (
    "seeds",
    "return_tolerance",
    "steps_tolerance",
    "return_threshold",
    "final_episodes",
)
"""The check options that only mean something with ``--baseline``."""


def _fraction(text: str) -> float:
    value = finite_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a fraction >= 0 (0.25 = 25%), got {text!r}")
    return value


DIFF_HELP: Final = "compare two runs: config, health, early stops, returns"
DIFF_DESCRIPTION: Final = (
    "Compare two runs: the config keys that differ, each health rule's final "
    "and worst value with its first warning and critical update, other metrics' final "
    "values, early stops and their reasons, and the return curves (mean of the last "
    f"{FINAL_EPISODES}+ episodes) at the same environment steps. Runs of another env or "
    "major schema are compared all the same, under a warning. Exit 0, or 2 when a log is "
    "unusable."
)


def add_diff_parser(sub: Commands, common: argparse.ArgumentParser) -> None:
    """``sanctum diff A B [--json]``."""
    diff = add_command(sub, "diff", common, help=DIFF_HELP, description=DIFF_DESCRIPTION)
    diff.add_argument("a", metavar="A", help="a run folder or its events.jsonl")
    diff.add_argument("b", metavar="B", help="the run to compare with A")
    add_json(diff)


def add_gate_arguments(check: argparse.ArgumentParser) -> None:
    """The learning gate's options of ``sanctum check``."""
    gate = check.add_argument_group("learning gate", GATE_HELP)
    gate.add_argument(
        "--baseline", nargs="+", metavar="BASE", help="the baseline's runs (one per seed)"
    )
    gate.add_argument(
        "--seeds", nargs="+", metavar="RUN", help="more runs of RUN's config, other seeds"
    )
    gate.add_argument(
        "--return-tolerance",
        type=_fraction,
        metavar="F",
        help="fraction of the baseline's gain the median final return may lose (default 0.25)",
    )
    gate.add_argument(
        "--steps-tolerance",
        type=_fraction,
        metavar="F",
        help="fraction more steps to the threshold the median may take (default 0.25)",
    )
    gate.add_argument(
        "--return-threshold",
        type=finite_number,
        metavar="R",
        help="return to reach (default: halfway from the baseline's median initial to its "
        "median final return)",
    )
    gate.add_argument(
        "--final-episodes",
        type=count,
        metavar="N",
        help=f"episodes the final return is the mean of, at least (default {FINAL_EPISODES})",
    )


def gate_options(args: argparse.Namespace) -> GateOptions | None:
    """The gate's options, or None without ``--baseline`` (refusing gate options alone)."""
    from sanctum.reports.learning import GateOptions

    given = [name for name in GATE_OPTIONS if getattr(args, name) is not None]
    if args.baseline is None:
        if given:
            flags = ", ".join("--" + name.replace("_", "-") for name in given)
            raise UsageError(f"{flags}: only with --baseline (the runs to compare with)")
        return None
    defaults = GateOptions()
    return GateOptions(
        return_tolerance=_or(args.return_tolerance, defaults.return_tolerance),
        steps_tolerance=_or(args.steps_tolerance, defaults.steps_tolerance),
        return_threshold=args.return_threshold,
        episodes=args.final_episodes or defaults.episodes,
    )


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def judge_gate(
    args: argparse.Namespace, thresholds: Thresholds, opts: GateOptions
) -> LearningVerdict:
    """Judge RUN and ``--seeds`` against ``--baseline``."""
    from sanctum.reports.learning import run_gate

    candidates = [resolve_run(run) for run in (args.run, *(args.seeds or ()))]
    baseline = [resolve_run(run) for run in args.baseline]
    return run_gate(candidates, baseline, thresholds, opts)


def diff_text(args: argparse.Namespace, thresholds: Thresholds, fail_on: Level) -> str:
    """What ``sanctum diff`` prints: the text report or one JSON object."""
    from sanctum.formatting import dumps
    from sanctum.reports.diff import build_diff
    from sanctum.reports.diff_report import format_text

    doc = build_diff(resolve_run(args.a), resolve_run(args.b), thresholds, fail_on)
    return dumps(doc) if args.json else format_text(doc)
