"""``sanctum [watch] [RUN ...]``: follow a run live (the default command).

One RUN (or none: the newest run under ./runs) opens the single-run dashboard; several,
or ``--all DIR``, open the run table. ``--once`` prints the dashboard's state and exits
(for scripts: its exit code is read); options that show one run refuse several with a
one-line error. Stdlib only: Textual loads when a dashboard opens.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sanctum.cli.command import Command, add_json, fail_on
from sanctum.cli.dashboard import add_refresh, dashboard_options, run_dashboard
from sanctum.cli.output import emit
from sanctum.exits import EXIT_OK
from sanctum.run_files import UsageError, find_runs, resolve_run

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds
    from sanctum.tui.base import SanctumAppBase


def _add_arguments(watch: argparse.ArgumentParser) -> None:
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
    watch.add_argument(
        "--once",
        action="store_true",
        help="print the dashboard's current state as text and exit (for scripts, tmux "
        "status lines, ssh one-liners); the first two lines are the banner",
    )
    add_json(
        watch,
        "with --once: one JSON object (a metric's level is null where its status is "
        "not judged or not measured)",
    )
    add_refresh(watch)


def several(args: argparse.Namespace) -> bool:
    """Whether ``watch`` was given several runs (the run table)."""
    return args.all is not None or len(args.run) > 1


def one_run(args: argparse.Namespace, option: str) -> str | None:
    """The one RUN of ``watch`` (None: the newest run); UsageError for several."""
    if several(args):
        raise UsageError(f"{option} shows one run: give one RUN")
    return args.run[0] if args.run else None


def _once_asked(args: argparse.Namespace) -> bool:
    return bool(args.once or args.json)


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    if _once_asked(args):
        return _once(args, thresholds)
    opts = dashboard_options(args)
    app: SanctumAppBase
    if several(args):
        paths = find_runs(args.run, args.all)
        from sanctum.tui.runs_app import RunsApp  # Textual loads only for the dashboard

        app = RunsApp(paths, thresholds, **opts)
    else:
        path = resolve_run(one_run(args, "watch"))
        from sanctum.tui.app import SanctumApp  # Textual loads only for the dashboard

        app = SanctumApp(path, thresholds, **opts)
    return run_dashboard(app)


def _once(args: argparse.Namespace, thresholds: Thresholds) -> int:
    if not args.once:
        raise UsageError("--json needs --once (the dashboard itself is not JSON)")
    from sanctum.formatting import dumps
    from sanctum.reports.once import once_dict, once_text, read_snapshot

    path = resolve_run(one_run(args, "--once"))
    snapshot = read_snapshot(path, thresholds, fail_on=fail_on(args))
    emit(dumps(once_dict(snapshot)) if args.json else once_text(snapshot, path))
    return EXIT_OK


COMMAND = Command(
    "watch",
    "follow a run live (the default)",
    _add_arguments,
    _run,
    scripted=False,
    scripted_with=_once_asked,
)
