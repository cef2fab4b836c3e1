"""The ``sanctum`` command: parse, resolve the run, hand over: a thin CLI.

``sanctum [RUN]`` and ``sanctum replay`` open the Textual dashboard, imported only then so
``check``, ``summary`` and ``--help`` start fast and work without a terminal. Exit codes:
0 healthy / done, 1 a check failed (a health rule, or with ``--baseline`` the learning gate;
nothing else), 2 the run could not be judged (missing or unreadable log, no
``run_started``, more than one run in the log, newer major schema, bad thresholds file, bad
arguments, runs the learning gate cannot compare, an unwritable ``--junit`` file, an
internal error). ``diff`` exits 0 or 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from sanctum.cli.parser import build_parser, refuse_command_typos, with_default_command
from sanctum.cli.run_args import one_run, runs_app, several  # stdlib only
from sanctum.exits import EXIT_OK, EXIT_UNUSABLE
from sanctum.run_files import UsageError, resolve_run

if TYPE_CHECKING:
    from textual.app import App

    from sanctum.health.levels import Level
    from sanctum.health.rules import Thresholds


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sanctum`` console script; returns the exit code.

    Exit 1 means only "a check failed". Unusable input, an unwritable ``--junit`` file
    and, for the commands scripts read (``SCRIPTED``, and ``--once``), any unexpected error
    exit 2: an uncaught exception would exit 1, which a CI job would read as a failed run.
    """
    args = build_parser().parse_args(with_default_command(sys.argv[1:] if argv is None else argv))
    from sanctum.formatting import visible_lines
    from sanctum.health.rules import ThresholdsError, load_thresholds
    from sanctum.reports.rollouts_view import RolloutsError
    from telemetry.eventlog import EventLogError
    from telemetry.files import InputFileError

    try:
        thresholds = load_thresholds(getattr(args, "thresholds", None))  # SUPPRESS: absent
        return _run(args, thresholds)
    except (UsageError, ThresholdsError, EventLogError, RolloutsError, InputFileError) as exc:
        return _unusable(args, str(exc))
    except Exception as exc:
        if args.command not in SCRIPTED and not _once_asked(args):
            raise  # the dashboard's own traceback; no CI reads its exit code
        print(visible_lines(traceback.format_exc().rstrip("\n").split("\n")), file=sys.stderr)
        return _unusable(
            args, f"internal error ({type(exc).__name__}: {exc}); this is a bug in sanctum"
        )


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    """Hand the parsed command over: a scripted one to its handler in :data:`COMMANDS`;
    ``watch`` and ``replay`` to the dashboard (``watch --once`` prints it instead)."""
    handler = COMMANDS.get(args.command)
    if handler is not None:
        return handler(args, thresholds)
    if args.command == "watch":
        refuse_command_typos(args.run)
        if args.once or args.json:
            return _once(args, thresholds)
    return _interactive(args, thresholds)


def fail_on(args: argparse.Namespace) -> Level:
    """``--fail-on`` (critical when absent): the level at which a rule fails the run, for
    ``check``'s exit code and for the verdict every view shows."""
    from sanctum.health.levels import Level

    return Level(getattr(args, "fail_on", Level.CRITICAL.value))  # SUPPRESS: absent


def _unusable(args: argparse.Namespace, message: str) -> int:
    """Say why, write the JUnit error case when asked for one, and exit 2."""
    from sanctum.formatting import visible

    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr full or closed
        print(f"sanctum: error: {visible(message)}", file=sys.stderr)
    if args.command == "check" and args.junit is not None:
        from sanctum.reports.check_report import write_junit_error

        try:
            write_junit_error(message, Path(args.run), fail_on(args), args.junit)
        except OSError as exc:
            print(f"sanctum: error: {_junit_unwritable(args.junit, exc)}", file=sys.stderr)
    return EXIT_UNUSABLE


def _junit_unwritable(path: Path, exc: OSError) -> str:
    from sanctum.formatting import visible

    return visible(f"cannot write JUnit file {path}: {exc.strerror or exc}")


def _emit(text: str) -> None:
    """Print ``text``; a reader that went away (``| head``) is not an error, a standard
    output that cannot take it (``> /dev/full``, closed) is unusable output: exit 2."""
    try:
        if sys.stdout is None:
            raise OSError("standard output is closed")
        print(text, flush=True)
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter flushes it at exit
    except (OSError, ValueError) as exc:  # ValueError: a closed stream
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - nothing more to flush at exit
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"cannot write the report to standard output: {reason}") from None


def _check(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.cli.compare import gate_options, judge_gate
    from sanctum.formatting import dumps
    from sanctum.reports.check import run_check
    from sanctum.reports.check_report import format_text, to_dict, write_junit
    from sanctum.reports.learning import check_rows

    result = run_check(
        resolve_run(args.run),
        thresholds,
        fail_on(args),
        args.allow_unfinished,
        args.allow_skipped,
    )
    opts = gate_options(args)
    learning = None if opts is None else judge_gate(args, thresholds, opts)
    if learning is not None:  # the gate's judgements are rows of the check
        result = replace(result, rows=result.rows + check_rows(learning))
    _emit(dumps(to_dict(result, learning)) if args.json else format_text(result, learning))
    if args.junit is not None:
        try:
            write_junit(result, args.junit)
        except OSError as exc:  # the verdict is printed, but CI would miss its report
            print(f"sanctum: error: {_junit_unwritable(args.junit, exc)}", file=sys.stderr)
            return EXIT_UNUSABLE
    return result.exit_code


def _diff(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.cli.compare import diff_text

    _emit(diff_text(args, thresholds, fail_on(args)))
    return EXIT_OK


def _summary(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.formatting import dumps
    from sanctum.reports.summary import build_summary, format_text

    doc = build_summary(resolve_run(args.run), thresholds, fail_on(args))
    _emit(dumps(doc) if args.json else format_text(doc))
    return EXIT_OK


def _schema(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from telemetry.schema import shipped_schema_text

    _emit(shipped_schema_text().rstrip("\n"))
    return EXIT_OK


def _import(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.formatting import visible, visible_lines
    from sanctum.importers.tensorboard.command import ImportOptions, import_tensorboard

    options = ImportOptions(args.logdir, args.out, args.map, args.env, args.actions, args.force)
    report = import_tensorboard(options)
    for line in report.unread:  # what was lost is said where a script's eye is
        print(visible(f"sanctum import: could not read {line}"), file=sys.stderr, flush=True)
    _emit(visible_lines(report.lines))
    return EXIT_OK


def _rollouts(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.reports.rollouts_view import render

    events = resolve_run(args.run)
    last = args.last if args.last is not None or args.worst is not None else 10
    _emit(render(events.parent, events, last, args.worst))
    return EXIT_OK


def _serve(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.cli.serve import serve

    thresholds_file = getattr(args, "thresholds", None)  # SUPPRESS: absent
    return serve(
        resolve_run(args.run),
        thresholds_file,
        args.host,
        args.port,
        args.public_url,
        getattr(args, "fail_on", None),
    )


def _once_asked(args: argparse.Namespace) -> bool:
    return args.command == "watch" and bool(args.once or args.json)


def _once(args: argparse.Namespace, thresholds: Thresholds) -> int:
    if not args.once:
        raise UsageError("--json needs --once (the dashboard itself is not JSON)")
    from sanctum.formatting import dumps
    from sanctum.reports.once import once_dict, once_text, read_snapshot

    path = resolve_run(one_run(args, "--once"))
    snapshot = read_snapshot(path, thresholds, fail_on=fail_on(args))
    _emit(dumps(once_dict(snapshot)) if args.json else once_text(snapshot, path))
    return EXIT_OK


def _interactive(args: argparse.Namespace, thresholds: Thresholds) -> int:
    opts: dict[str, Any] = {"fail_on": fail_on(args)}
    if hasattr(args, "refresh"):  # SUPPRESS: absent
        opts["refresh_seconds"] = args.refresh
    app: App[None]
    if several(args):
        app = runs_app(args, thresholds, opts)
    else:
        path = resolve_run(one_run(args, "watch") if args.command == "watch" else args.run)
        speed: float | None = None
        if args.command == "replay":
            if not path.exists():
                raise UsageError(f"{path}: no such event log to replay")
            speed = args.speed
        from sanctum.tui.app import SanctumApp  # Textual loads only for the dashboard

        app = SanctumApp(path, thresholds, replay_speed=speed, **opts)
    app.run()
    if app.return_code:  # Textual has printed what went wrong; the exit code must say so
        print(
            "sanctum: error: the dashboard stopped on an internal error (above); "
            "this is a bug in sanctum",
            file=sys.stderr,
        )
        return EXIT_UNUSABLE
    return EXIT_OK


Handler = Callable[[argparse.Namespace, "Thresholds"], int]

COMMANDS: dict[str, Handler] = {
    "check": _check,
    "summary": _summary,
    "diff": _diff,
    "rollouts": _rollouts,
    "import": _import,
    "schema": _schema,
    "serve": _serve,
}
"""Each command a script or CI job runs, and its handler (given the rule table, which only
check, summary and diff read). Every other command opens the dashboard."""

SCRIPTED: Final = tuple(COMMANDS)
"""Commands a script or CI job reads the exit code of: an internal error is exit 2 there."""
