"""``sanctum rollouts RUN``: a token-level run's rollouts, their tokens and reward terms."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from sanctum.cli.arg_types import count
from sanctum.cli.command import Command
from sanctum.cli.output import emit
from sanctum.exits import EXIT_OK
from sanctum.run_files import resolve_run

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds

_HELP: Final = "print a token-level run's rollouts: tokens and reward breakdown"
_DESCRIPTION: Final = (
    "Print records of runs/<run>/rollouts.jsonl (token-level PPO): the "
    "prompt and generated tokens, the answer against the truth, and each term of the "
    "reward. Default: the last 10."
)


def _add_arguments(rollouts: argparse.ArgumentParser) -> None:
    rollouts.add_argument("run", metavar="RUN")
    which = rollouts.add_mutually_exclusive_group()
    which.add_argument("--last", type=count, metavar="N", help="the last N rollouts")
    which.add_argument("--worst", type=count, metavar="N", help="the N lowest reward_final")


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.reports.rollouts_view import render

    events = resolve_run(args.run)
    last = args.last if args.last is not None or args.worst is not None else 10
    emit(render(events.parent, events, last, args.worst))
    return EXIT_OK


COMMAND = Command("rollouts", _HELP, _add_arguments, _run, description=_DESCRIPTION, judges=False)
