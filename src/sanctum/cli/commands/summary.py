"""``sanctum summary RUN``: what happened in a run, as text or one JSON object."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sanctum.cli.command import Command, add_json, fail_on
from sanctum.cli.output import emit
from sanctum.exits import EXIT_OK
from sanctum.run_files import resolve_run

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds


def _add_arguments(summary: argparse.ArgumentParser) -> None:
    summary.add_argument("run", metavar="RUN")
    add_json(summary)


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.formatting import dumps
    from sanctum.reports.summary import build_summary, format_text

    doc = build_summary(resolve_run(args.run), thresholds, fail_on(args))
    emit(dumps(doc) if args.json else format_text(doc))
    return EXIT_OK


COMMAND = Command("summary", "what happened in a run", _add_arguments, _run)
