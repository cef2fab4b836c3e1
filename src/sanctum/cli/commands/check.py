"""``sanctum check RUN``: judge a run for CI (exit 0, 1 or 2), and with ``--baseline``
its learning against a baseline's runs (the learning gate).

Parsing is stdlib only; the judging modules load when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from sanctum.cli.arg_types import count, finite_number
from sanctum.cli.command import Command, add_json, fail_on
from sanctum.cli.output import emit, junit_unwritable
from sanctum.exits import EXIT_UNUSABLE
from sanctum.metrics import FINAL_EPISODES
from sanctum.run_files import UsageError, resolve_run

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds
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


def _rule_names(text: str) -> tuple[str, ...]:
    """``KL,Grad`` as its names (checked against the rules once they are known)."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"names no rule: {text!r} (e.g. KL,Clip,Grad)")
    return names


def _check_required(names: tuple[str, ...], thresholds: Thresholds) -> None:
    """A name no rule of any run kind has is a typo: refused (exit 2), with the names."""
    from sanctum.health.calibrated import LANGUAGE_MODEL_RULES

    rules = (*thresholds.rules, *LANGUAGE_MODEL_RULES)
    known = {"all"} | {r.label.lower() for r in rules} | {r.metric.lower() for r in rules}
    for name in names:
        if name.lower() not in known:
            labels = ", ".join(dict.fromkeys(r.label for r in rules))
            raise UsageError(f"--require: no rule is named {name!r} (the rules: {labels}; or all)")


def _add_arguments(check: argparse.ArgumentParser) -> None:
    check.add_argument("run", metavar="RUN")
    check.add_argument(
        "--allow-unfinished",
        action="store_true",
        help="pass a run without run_finished or interrupted (a failed run still fails)",
    )
    check.add_argument(
        "--allow-skipped",
        action="store_true",
        help="pass a run although lines that may be updates could not be read, or an "
        "import could not read all of its source (a TensorBoard record cut short or "
        "failing its checksum); by default what the check could not read fails it: it "
        "was not judged. Events lost from seq and events of another run always fail",
    )
    check.add_argument(
        "--require",
        metavar="RULES",
        type=_rule_names,
        help="comma-separated rules (KL,Clip,Grad,EV,Entropy: labels or metrics; 'all': "
        "every rule the run's kind expects) that must each have measured some update: a run "
        "whose trainer did not log one fails (exit 1) instead of passing on the others. "
        "Recommended for imports and other trainers' logs",
    )
    add_json(check)
    check.add_argument(
        "--junit",
        metavar="FILE",
        type=Path,
        help="also write JUnit XML: one test case per rule (one error case if unusable)",
    )
    add_gate_arguments(check)


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


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.formatting import dumps
    from sanctum.reports.check import required_row, run_check
    from sanctum.reports.check_report import format_text, to_dict, write_junit
    from sanctum.reports.learning import check_rows

    if args.require:
        _check_required(args.require, thresholds)
    result = run_check(
        resolve_run(args.run),
        thresholds,
        fail_on(args),
        args.allow_unfinished,
        args.allow_skipped,
    )
    if args.require:
        result = replace(result, rows=(*result.rows, required_row(result.rows, args.require)))
    opts = gate_options(args)
    learning = None if opts is None else judge_gate(args, thresholds, opts)
    if learning is not None:  # the gate's judgements are rows of the check
        result = replace(result, rows=result.rows + check_rows(learning))
    emit(dumps(to_dict(result, learning)) if args.json else format_text(result, learning))
    if args.junit is not None:
        try:
            write_junit(result, args.junit)
        except OSError as exc:  # the verdict is printed, but CI would miss its report
            print(junit_unwritable(args.junit, exc), file=sys.stderr)
            return EXIT_UNUSABLE
    return result.exit_code


def _write_error_case(args: argparse.Namespace, message: str) -> None:
    """With ``--junit``, the one error case of a run that could not be judged."""
    if args.junit is None:
        return
    from sanctum.reports.check_report import write_junit_error

    try:
        write_junit_error(message, Path(args.run), fail_on(args), args.junit)
    except OSError as exc:
        print(junit_unwritable(args.junit, exc), file=sys.stderr)


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


COMMAND = Command(
    "check", "judge a run; exit 0, 1 or 2", _add_arguments, _run, on_unusable=_write_error_case
)
