"""``sanctum import SOURCE``: a run's event log written from another tool's log
(``tensorboard`` now), for check, summary and the dashboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from sanctum.cli.arg_types import count
from sanctum.cli.command import Command
from sanctum.cli.output import emit
from sanctum.exits import EXIT_OK
from telemetry.text import visible, visible_lines

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds

_HELP: Final = "write an event log from another tool's log (TensorBoard)"
_DESCRIPTION: Final = (
    "Write a run's event log from another tool's log, for check, summary and the dashboard."
)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_subparsers(dest="source", metavar="source", required=True)
    tb = source.add_parser(
        "tensorboard",
        prog="sanctum import tensorboard",
        help="TensorBoard event files written by Stable-Baselines3, CleanRL or (with --map) "
        "any trainer",
        description="Read TensorBoard event files (Stable-Baselines3's train/* or CleanRL's "
        "losses/* tags are recognised; --map names any other tags) and write RUN/events.jsonl: "
        "one update per logged step, rollouts with the episodes finished in them. Tags no "
        "mapping names are listed, and kept by name in the run's config. Needs the "
        "tensorboard extra.",
    )
    tb.add_argument("logdir", metavar="LOGDIR", type=Path, help="a run's TensorBoard folder")
    tb.add_argument("--out", metavar="RUN", type=Path, help="run folder (default runs/<LOGDIR>-tb)")
    tb.add_argument("--map", metavar="FILE", type=Path, help="TOML file: tag = field (see docs)")
    tb.add_argument(
        "--env", metavar="ID", help="env_id to record (default: from the log, or unknown)"
    )
    tb.add_argument(
        "--actions",
        metavar="N",
        type=count,
        help="size of a discrete action space: records entropy_normalized for the entropy rule",
    )
    tb.add_argument(
        "--force", action="store_true", help="replace a log an earlier import wrote in RUN"
    )
    ended = tb.add_mutually_exclusive_group()
    ended.add_argument(
        "--outcome",
        choices=("completed", "failed", "interrupted"),
        help="how the run ended (a TensorBoard log does not say): without it or --exit-code "
        "no run_finished is written, every view says 'outcome not recorded' and sanctum "
        "check fails the run as unfinished",
    )
    ended.add_argument(
        "--exit-code",
        metavar="N",
        type=int,
        help="the trainer's exit code, for its outcome: 0 completed, 130/143 (SIGINT, "
        "SIGTERM) interrupted, any other failed (in CI: train; sanctum import ... "
        "--exit-code $?)",
    )


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.importers.tensorboard.command import ImportOptions, import_tensorboard

    options = ImportOptions(
        args.logdir,
        args.out,
        args.map,
        args.env,
        args.actions,
        args.force,
        outcome=args.outcome,
        exit_code=args.exit_code,
    )
    report = import_tensorboard(options)
    for line in report.unread:  # what was lost is said where a script's eye is
        print(visible(f"sanctum import: could not read {line}"), file=sys.stderr, flush=True)
    emit(visible_lines(report.lines))
    return EXIT_OK


COMMAND = Command("import", _HELP, _add_arguments, _run, description=_DESCRIPTION, judges=False)
