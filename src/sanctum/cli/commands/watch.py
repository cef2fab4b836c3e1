"""``sanctum [watch] [RUN ...]``: follow a run live (the default command).

One RUN (or none: the newest run under ./runs) opens the single-run dashboard; several,
or ``--all DIR``, open the run table. ``--once`` prints the dashboard's state and exits
(for scripts: its exit code is read); options that show one run refuse several with a
one-line error. Stdlib only: Textual loads when a dashboard opens.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sanctum.cli.arg_types import positive_number
from sanctum.cli.command import Command, add_json, fail_on
from sanctum.cli.dashboard import add_refresh, dashboard_options, run_dashboard
from sanctum.cli.output import emit
from sanctum.exits import EXIT_OK
from sanctum.live.notify import NOTIFY_TIMEOUT, Destination, destination
from sanctum.live.on_critical import command_words
from sanctum.run_files import UsageError, find_runs, resolve_run

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds
    from sanctum.live.watcher import Watcher
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
    alerting = watch.add_argument_group("alerts (headless without a terminal, or --headless)")
    alerting.add_argument(
        "--headless",
        action="store_true",
        help="no dashboard: print each change of the runs' health, act on it, and exit when "
        "every run has finished, with check's exit code for the worst (the default without "
        "a terminal)",
    )
    alerting.add_argument(
        "--notify",
        action="append",
        default=[],
        type=notify_destination,
        metavar="URL",
        help="post each change to a webhook: URL gets the alert as JSON; slack:URL and "
        "discord:URL those services' messages (repeatable; only scheme and host are printed)",
    )
    alerting.add_argument(
        "--notify-level",
        choices=("warning", "critical"),
        default="warning",
        help="the changes posted: every one (warning), or a FAIL and its recovery (critical)",
    )
    alerting.add_argument(
        "--notify-timeout",
        type=positive_number,
        default=NOTIFY_TIMEOUT,
        metavar="SECONDS",
        help=f"how long a webhook has to answer one try (default {NOTIFY_TIMEOUT:g})",
    )
    alerting.add_argument(
        "--on-critical",
        type=critical_command,
        metavar="CMD",
        help="run CMD once per run when its health turns FAIL (no shell; SANCTUM_RUN, "
        "SANCTUM_RUN_DIR, SANCTUM_RULE, SANCTUM_VERDICT and SANCTUM_UPDATE set)",
    )


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


def notify_destination(spec: str) -> Destination:
    """``--notify SPEC``: its destination (argparse's error for anything else; the
    message never repeats the URL, whose path is a secret)."""
    try:
        return destination(spec)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def critical_command(command: str) -> list[str]:
    """``--on-critical CMD``: its words."""
    try:
        return command_words(command)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"cannot split the command: {exc}") from None


def headless(args: argparse.Namespace) -> bool:
    """Whether ``watch`` runs the headless watcher: asked, or nothing to draw on (no
    terminal, and no Textual driver named in ``TEXTUAL_DRIVER``, as ``sanctum serve``'s
    browser tabs name theirs)."""
    if args.headless:
        return True
    terminal = sys.stdin.isatty() and sys.stdout.isatty()
    return not terminal and not os.environ.get("TEXTUAL_DRIVER")


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    if _once_asked(args):
        return _once(args, thresholds)
    paths = (
        find_runs(args.run, args.all) if several(args) else [resolve_run(one_run(args, "watch"))]
    )
    if headless(args):
        return _watch_headless(args, thresholds, paths)
    opts = dashboard_options(args)
    app: SanctumAppBase
    if several(args):
        from sanctum.tui.runs_app import RunsApp  # Textual loads only for the dashboard

        app = RunsApp(paths, thresholds, **opts)
    else:
        from sanctum.tui.app import SanctumApp  # Textual loads only for the dashboard

        app = SanctumApp(paths[0], thresholds, **opts)
    if not (args.notify or args.on_critical):
        return run_dashboard(app)
    return _dashboard_alerting(args, thresholds, paths, app)


def _watcher(
    args: argparse.Namespace,
    thresholds: Thresholds,
    paths: list[Path],
    say: Callable[[str], None],
    out: Callable[[str], None],
) -> tuple[Watcher, float]:
    """The watcher of ``paths`` with the alert options of ``args``, and how long it may
    take to close."""
    from sanctum.live.notifier import Notifier
    from sanctum.live.notify import wanted
    from sanctum.live.on_critical import OnCritical
    from sanctum.live.watcher import Actions, Watcher

    actions = Actions(wanted=wanted(args.notify_level))
    if args.notify:
        actions.notifier = Notifier(args.notify, say, timeout=args.notify_timeout)
    if args.on_critical:
        actions.on_critical = OnCritical(args.on_critical, say)
    watcher = Watcher(paths, thresholds, actions, fail_on=fail_on(args), say=say, out=out)
    return watcher, actions.notifier.patience if actions.notifier else args.notify_timeout


def _watch_headless(args: argparse.Namespace, thresholds: Thresholds, paths: list[Path]) -> int:
    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def out(line: str) -> None:
        print(line, flush=True)

    watcher, patience = _watcher(args, thresholds, paths, say, out)
    try:
        return watcher.watch()
    finally:
        watcher.close(patience)


def _dashboard_alerting(
    args: argparse.Namespace, thresholds: Thresholds, paths: list[Path], app: SanctumAppBase
) -> int:
    """The dashboard, with the watcher acting on the alerts in a thread beside it; what the
    watcher had to say (a failing webhook, the command's output) is printed once the
    dashboard has closed, not over it."""
    said: list[str] = []
    watcher, patience = _watcher(args, thresholds, paths, said.append, lambda _line: None)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.beside, args=(stop,), daemon=True)
    thread.start()
    try:
        return run_dashboard(app)
    finally:
        stop.set()
        thread.join()
        watcher.close(patience)
        for line in said:
            print(line, file=sys.stderr)


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
    scripted_with=lambda args: _once_asked(args) or headless(args),
)
