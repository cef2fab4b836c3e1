"""The ``sanctum`` command: parse, hand over to the command, say what went wrong.

Each command is a module of :mod:`sanctum.cli.commands` that owns its options and its run;
the list of them is there, once. ``sanctum [RUN]`` and ``sanctum replay`` open the Textual
dashboard, imported only then so ``check``, ``summary`` and ``--help`` start fast and work
without a terminal. Exit codes: 0 healthy / done, 1 a check failed (a health rule, or with
``--baseline`` the learning gate; nothing else), 2 the run could not be judged (missing or
unreadable log, no ``run_started``, more than one run in the log, newer major schema, bad
thresholds file, bad arguments, runs the learning gate cannot compare, an unwritable
``--junit`` file, an internal error). ``diff`` exits 0 or 2.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import traceback
from collections.abc import Sequence

from sanctum.cli.command import Command, thresholds_file
from sanctum.cli.commands import BY_NAME
from sanctum.cli.parser import build_parser, refuse_command_typos, with_default_command
from sanctum.exits import EXIT_UNUSABLE
from sanctum.run_files import UsageError

__all__ = ["build_parser", "main", "with_default_command"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sanctum`` console script; returns the exit code.

    Exit 1 means only "a check failed". Unusable input, an unwritable ``--junit`` file
    and, for the commands scripts read (``Command.scripted``, and ``--once``), any
    unexpected error exit 2: an uncaught exception would exit 1, which a CI job would read
    as a failed run.
    """
    args = build_parser().parse_args(with_default_command(sys.argv[1:] if argv is None else argv))
    command = BY_NAME[args.command]
    from sanctum.formatting import visible_lines
    from sanctum.health.rule import ThresholdsError
    from sanctum.health.thresholds_toml import load_thresholds
    from sanctum.reports.rollouts_view import RolloutsError
    from telemetry.eventlog import EventLogError
    from telemetry.files import InputFileError

    try:
        thresholds = load_thresholds(thresholds_file(args))
        refuse_command_typos(args)
        return command.run(args, thresholds)
    except (UsageError, ThresholdsError, EventLogError, RolloutsError, InputFileError) as exc:
        return _unusable(command, args, str(exc))
    except Exception as exc:
        if not command.reads_exit_code(args):
            raise  # the dashboard's own traceback; no CI reads its exit code
        print(visible_lines(traceback.format_exc().rstrip("\n").split("\n")), file=sys.stderr)
        return _unusable(
            command, args, f"internal error ({type(exc).__name__}: {exc}); this is a bug in sanctum"
        )


def _unusable(command: Command, args: argparse.Namespace, message: str) -> int:
    """Say why, let the command write what it also writes then (check: its JUnit error
    case), and exit 2."""
    from sanctum.formatting import visible

    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr full or closed
        print(f"sanctum: error: {visible(message)}", file=sys.stderr)
    if command.on_unusable is not None:
        command.on_unusable(args, message)
    return EXIT_UNUSABLE
