"""``sanctum diff A B``: what differs between two runs. Exit 0, or 2 when a log is
unusable: a diff judges nothing."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from sanctum.cli.command import Command, add_json, fail_on
from sanctum.cli.output import emit
from sanctum.exits import EXIT_OK
from sanctum.metrics import FINAL_EPISODES
from sanctum.run_files import resolve_run

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds

DIFF_HELP: Final = "compare two runs: config, health, early stops, returns"
DIFF_DESCRIPTION: Final = (
    "Compare two runs: the config keys that differ, each health rule's final "
    "and worst value with its first warning and critical update, other metrics' final "
    "values, early stops and their reasons, and the return curves (mean of the last "
    f"{FINAL_EPISODES}+ episodes) at the same environment steps. Runs of another env or "
    "major schema are compared all the same, under a warning. Exit 0, or 2 when a log is "
    "unusable."
)


def _add_arguments(diff: argparse.ArgumentParser) -> None:
    diff.add_argument("a", metavar="A", help="a run folder or its events.jsonl")
    diff.add_argument("b", metavar="B", help="the run to compare with A")
    add_json(diff)


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.formatting import dumps
    from sanctum.reports.diff import build_diff
    from sanctum.reports.diff_report import format_text

    doc = build_diff(resolve_run(args.a), resolve_run(args.b), thresholds, fail_on(args))
    emit(dumps(doc) if args.json else format_text(doc))
    return EXIT_OK


COMMAND = Command("diff", DIFF_HELP, _add_arguments, _run, description=DIFF_DESCRIPTION)
