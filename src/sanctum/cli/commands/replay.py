"""``sanctum replay RUN``: play a recorded run back in the dashboard, at ``--speed``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sanctum.cli.arg_types import positive_number
from sanctum.cli.command import Command
from sanctum.cli.dashboard import add_refresh, dashboard_options, run_dashboard
from sanctum.run_files import UsageError, resolve_run

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds


def _add_arguments(replay: argparse.ArgumentParser) -> None:
    replay.add_argument("run", metavar="RUN")
    replay.add_argument(
        "--speed",
        type=positive_number,
        default=1.0,
        help="playback speed: 1 = as recorded, 10 = ten times faster",
    )
    add_refresh(replay)


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    opts = dashboard_options(args)
    path = resolve_run(args.run)
    if not path.exists():
        raise UsageError(f"{path}: no such event log to replay")
    from sanctum.tui.app import SanctumApp  # Textual loads only for the dashboard

    return run_dashboard(SanctumApp(path, thresholds, replay_speed=args.speed, **opts))


COMMAND = Command("replay", "play a recorded run back", _add_arguments, _run, scripted=False)
