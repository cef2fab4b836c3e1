"""``sanctum RUN RUN ...`` and ``sanctum --all DIR``: the run arguments of ``watch``.

One RUN (or none: the newest run under ./runs) opens the single-run dashboard, as it
always did; several, or ``--all DIR``, open the run table. Options that show one run
(``--once``) refuse several with a one-line error. Stdlib only: Textual loads when the
table opens.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from sanctum.run_files import UsageError

if TYPE_CHECKING:
    from textual.app import App

    from sanctum.health.rules import Thresholds


def add_run_arguments(watch: argparse.ArgumentParser) -> None:
    """``RUN ...`` and ``--all DIR`` of ``watch``."""
    watch.add_argument(
        "run",
        nargs="*",
        metavar="RUN",
        help="one run: its dashboard; several: the run table (enter opens a run's dashboard)",
    )
    watch.add_argument(
        "--all",
        metavar="DIR",
        help="the run table of every run folder in DIR (DIR/*/events.jsonl), e.g. a sweep",
    )


def several(args: argparse.Namespace) -> bool:
    """Whether ``watch`` was given several runs (the run table)."""
    return args.command == "watch" and (args.all is not None or len(args.run) > 1)


def one_run(args: argparse.Namespace, option: str) -> str | None:
    """The one RUN of ``watch`` (None: the newest run); UsageError for several."""
    if several(args):
        raise UsageError(f"{option} shows one run: give one RUN")
    return args.run[0] if args.run else None


def runs_app(args: argparse.Namespace, thresholds: Thresholds, opts: dict[str, Any]) -> App[None]:
    """The run table of the runs ``args`` name (UsageError when they name none)."""
    from sanctum.run_files import find_runs

    paths = find_runs(args.run, args.all)
    from sanctum.tui.runs_app import RunsApp  # Textual loads only for the dashboard

    return RunsApp(paths, thresholds, **opts)
