"""The ``sanctum`` command line: its parser, and the default command.

``sanctum [RUN ...]`` means ``sanctum watch``; every subcommand's options, types and help
are here, and what each command does is in :mod:`sanctum.cli`. Nothing here loads more
than the standard library (``--help`` starts fast and needs no terminal).
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NoReturn

from sanctum.cli.arg_types import Commands, add_command, add_json, count, positive_number
from sanctum.cli.compare import add_diff_parser, add_gate_arguments  # stdlib only
from sanctum.cli.run_args import add_run_arguments  # stdlib only
from sanctum.run_files import UsageError
from telemetry.text import visible

COMMANDS = ("watch", "replay", "check", "summary", "rollouts", "serve", "diff", "schema", "import")


WATCH_OPTIONS = ("--all", "--refresh", "--once", "--json")
"""Options of ``watch`` alone: given before any RUN, they start the ``watch`` command."""


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors show what the user typed escaped (an unrecognized
    argument or a path may hold terminal commands). Its subcommands' parsers are of this
    class too (argparse makes them of the parent's)."""

    def error(self, message: str) -> NoReturn:
        super().error(visible(message))


_SCHEMA: Final = (
    "Print the JSON Schema (draft 2020-12) of one line of events.jsonl, "
    "generated from the event types: validate a log written by another program with "
    "any JSON Schema validator, one line at a time."
)
_ROLLOUTS_HELP: Final = "print a token-level run's rollouts: tokens and reward breakdown"
_ROLLOUTS: Final = (
    "Print records of runs/<run>/rollouts.jsonl (token-level PPO): the "
    "prompt and generated tokens, the answer against the truth, and each term of the "
    "reward. Default: the last 10."
)
_IMPORT_HELP: Final = "write an event log from another tool's log (TensorBoard)"
_IMPORT: Final = (
    "Write a run's event log from another tool's log, for check, summary and the dashboard."
)


def build_parser() -> argparse.ArgumentParser:
    """``sanctum [RUN]`` (watch), ``replay``, ``check`` and ``summary``; --thresholds and
    --fail-on on all that judge a run."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--thresholds",
        metavar="FILE",
        type=Path,
        default=argparse.SUPPRESS,
        help="TOML file overriding the health rules, e.g. [approx_kl] warning = 0.01",
    )
    common.add_argument(
        "--fail-on",
        choices=("warning", "critical"),
        default=argparse.SUPPRESS,
        help="the level at which a rule fails the run (default: critical): check's exit code "
        "and the verdict every view shows (FAIL at it, WARN below it); a critical anomaly "
        "always fails, and with warning so does an anomaly the trainer reported as a warning",
    )
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
    _add_watch_and_replay(sub, common)
    _add_check(add_command(sub, "check", common, help="judge a run; exit 0, 1 or 2"))
    add_diff_parser(sub, common)
    _add_summary_and_schema(sub, common)
    _add_rollouts(sub)
    _add_serve(sub, common)
    _add_import(sub)
    return parser


def _add_summary_and_schema(sub: Commands, common: argparse.ArgumentParser) -> None:
    summary = add_command(sub, "summary", common, help="what happened in a run")
    summary.add_argument("run", metavar="RUN")
    add_json(summary)
    add_command(
        sub, "schema", help="print the JSON Schema of one event-log line", description=_SCHEMA
    )


def _add_rollouts(sub: Commands) -> None:
    rollouts = add_command(sub, "rollouts", help=_ROLLOUTS_HELP, description=_ROLLOUTS)
    rollouts.add_argument("run", metavar="RUN")
    which = rollouts.add_mutually_exclusive_group()
    which.add_argument("--last", type=count, metavar="N", help="the last N rollouts")
    which.add_argument("--worst", type=count, metavar="N", help="the N lowest reward_final")


def _add_watch_and_replay(sub: Commands, common: argparse.ArgumentParser) -> None:
    watch = add_command(sub, "watch", common, help="follow a run live (the default)")
    add_run_arguments(watch)
    _add_once(watch)
    replay = add_command(sub, "replay", common, help="play a recorded run back")
    replay.add_argument("run", metavar="RUN")
    replay.add_argument(
        "--speed",
        type=positive_number,
        default=1.0,
        help="playback speed: 1 = as recorded, 10 = ten times faster",
    )
    for parser in (watch, replay):
        parser.add_argument(
            "--refresh",
            type=positive_number,
            metavar="SECONDS",
            default=argparse.SUPPRESS,
            help="shortest time between two redraws (default 0.15: an update is on screen "
            "in about 75 ms; 0.5 costs about a third of the CPU, at 270 ms)",
        )


def _add_once(watch: argparse.ArgumentParser) -> None:
    watch.add_argument(
        "--once",
        action="store_true",
        help="print the dashboard's current state as text and exit (for scripts, tmux "
        "status lines, ssh one-liners); the first two lines are the banner",
    )
    add_json(watch, "with --once: one JSON object")


def _add_check(check: argparse.ArgumentParser) -> None:
    check.add_argument("run", metavar="RUN")
    check.add_argument(
        "--allow-unfinished",
        action="store_true",
        help="pass a run without run_finished or interrupted (a failed run still fails)",
    )
    check.add_argument(
        "--allow-skipped",
        action="store_true",
        help="pass a run although lines that may be updates could not be read, or an "
        "import could not read all of its source (a TensorBoard record cut short or "
        "failing its checksum); by default what the check could not read fails it: it "
        "was not judged. Events lost from seq and events of another run always fail",
    )
    add_json(check)
    check.add_argument(
        "--junit",
        metavar="FILE",
        type=Path,
        help="also write JUnit XML: one test case per rule (one error case if unusable)",
    )
    add_gate_arguments(check)


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
        if arg in COMMANDS:
            return args
        break
    return [*args[:i], "watch", *args[i:]]


def refuse_command_typos(runs: Sequence[str]) -> None:
    """A RUN that does not exist and reads like a misspelt command (``sanctum sumary``) is
    an error, not a run to wait for; any other missing RUN is waited for, as a run that is
    about to start."""
    for run in runs:
        if Path(run).exists() or "/" in run:
            continue
        close = difflib.get_close_matches(run, COMMANDS, n=1, cutoff=0.75)
        if close:
            raise UsageError(
                f"unknown command {run!r}; did you mean {close[0]!r}? (to wait for a run of "
                f"that name, give its path: ./{run})"
            )


def _add_import(sub: Commands) -> None:
    source = add_command(sub, "import", help=_IMPORT_HELP, description=_IMPORT).add_subparsers(
        dest="source", metavar="source", required=True
    )
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


def _add_serve(sub: Commands, common: argparse.ArgumentParser) -> None:
    from sanctum.cli.serve import add_parser  # stdlib only; textual-serve loads in _serve

    add_parser(sub, common)
