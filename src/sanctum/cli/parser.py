"""The ``sanctum`` command line: its parser, built from the commands' registry, and the
default command.

``sanctum [RUN ...]`` means ``sanctum watch``; each subcommand's options are in its module
under :mod:`sanctum.cli.commands`. Nothing here loads more than the standard library and
sanctum's light modules (``--help`` starts fast and needs no terminal).
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from sanctum.cli.command import common_options
from sanctum.cli.commands import COMMANDS, NAMES
from sanctum.run_files import UsageError
from telemetry.text import visible

DEFAULT_COMMAND = "watch"
"""The command ``sanctum [RUN ...]`` runs: what :func:`with_default_command` inserts."""
WATCH_OPTIONS = (
    "--all",
    "--refresh",
    "--once",
    "--json",
    "--headless",
    "--notify",
    "--notify-level",
    "--notify-timeout",
    "--on-critical",
)
"""Options of ``watch`` alone: given before any RUN, they start the ``watch`` command."""


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors show what the user typed escaped (an unrecognized
    argument or a path may hold terminal commands). Its subcommands' parsers are of this
    class too (argparse makes them of the parent's)."""

    def error(self, message: str) -> NoReturn:
        super().error(visible(message))


def build_parser() -> argparse.ArgumentParser:
    """``sanctum [RUN]`` (watch) and every command of the registry, in its order; the
    options of a command that judges a run (--thresholds, --fail-on) from one parent."""
    common = common_options()
    parser: argparse.ArgumentParser = Parser(
        prog="sanctum",
        usage="sanctum [--thresholds FILE] [--fail-on LEVEL] [RUN ... | --all DIR | COMMAND ...]",
        description="PPO training health from a run's event log: a live dashboard, a replay, "
        "a CI check (health, and learning against a baseline), a summary and a diff of two "
        "runs. RUN is a run folder or its events.jsonl; without RUN, the newest run under "
        "./runs. Several RUNs, or --all DIR (every run folder in DIR, such as a sweep), "
        "open a table of the runs with an overlay of one metric across them.",
        epilog="exit codes: 0 ok, 1 a check failed (health, or the learning gate; only that), "
        "2 the run could not be judged (unusable input or options, an unwritable --junit "
        "file, an internal error)",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", metavar="command")
    for command in COMMANDS:
        command.add_arguments(
            sub.add_parser(
                command.name,
                prog=f"sanctum {command.name}",
                parents=[common] if command.judges else [],
                help=command.help,
                description=command.description,
                epilog=command.epilog,
            )
        )
    return parser


def with_default_command(argv: Sequence[str]) -> list[str]:
    """Insert ``watch`` before the first positional argument that is not a command, or
    before the first option only ``watch`` has (``sanctum --all runs/``)."""
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--thresholds", "--fail-on"):
            i += 2
            continue
        if arg in ("-h", "--help"):
            return args
        if arg.startswith("-") and arg.split("=")[0] not in WATCH_OPTIONS:
            i += 1
            continue
        if arg in NAMES:
            return args
        break
    return [*args[:i], DEFAULT_COMMAND, *args[i:]]


def refuse_command_typos(args: argparse.Namespace) -> None:
    """The other half of :func:`with_default_command`: a RUN of the default command that
    does not exist and reads like a misspelt command (``sanctum sumary``) is an error
    (UsageError), not a run to wait for; any other missing RUN is waited for, as a run that
    is about to start."""
    if args.command != DEFAULT_COMMAND:
        return
    for run in args.run:
        if "/" in run or _may_exist(run):
            continue
        close = difflib.get_close_matches(run, NAMES, n=1, cutoff=0.75)
        if close:
            raise UsageError(
                f"unknown command {run!r}; did you mean {close[0]!r}? (to wait for a run of "
                f"that name, give its path: ./{run})"
            )


def _may_exist(run: str) -> bool:
    """``run`` exists, or cannot be looked at (which resolving it then says in one line)."""
    try:
        return Path(run).exists()
    except OSError:
        return True
