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
import math
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sanctum.compare_cli import add_diff_parser, add_gate_arguments  # stdlib only
from sanctum.exits import EXIT_OK, EXIT_UNUSABLE
from sanctum.runs import UsageError, resolve_run
from sanctum.runs_cli import add_run_arguments, one_run, runs_app, several  # stdlib only

if TYPE_CHECKING:
    from textual.app import App

    from sanctum.thresholds import Thresholds

COMMANDS = ("watch", "replay", "check", "summary", "rollouts", "serve", "diff", "schema", "import")
WATCH_OPTIONS = ("--all", "--refresh", "--once", "--json")
"""Options of ``watch`` alone: given before any RUN, they start the ``watch`` command."""


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """``sanctum [RUN]`` (watch), ``replay``, ``check`` and ``summary``; --thresholds on all."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--thresholds",
        metavar="FILE",
        type=Path,
        default=argparse.SUPPRESS,
        help="TOML file overriding the health rules, e.g. [approx_kl] warning = 0.01",
    )
    parser = argparse.ArgumentParser(
        prog="sanctum",
        usage="sanctum [--thresholds FILE] [RUN ... | --all DIR | {replay,check,summary} ...]",
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
    _add_check(
        sub.add_parser(
            "check", prog="sanctum check", parents=[common], help="judge a run; exit 0, 1 or 2"
        )
    )
    add_diff_parser(sub, common)
    summary = sub.add_parser(
        "summary", prog="sanctum summary", parents=[common], help="what happened in a run"
    )
    summary.add_argument("run", metavar="RUN")
    summary.add_argument("--json", action="store_true", help="print one JSON object")
    _add_rollouts(sub)
    sub.add_parser(
        "schema",
        prog="sanctum schema",
        help="print the JSON Schema of one event-log line",
        description="Print the JSON Schema (draft 2020-12) of one line of events.jsonl, "
        "generated from the event types: validate a log written by another program with "
        "any JSON Schema validator, one line at a time.",
    )
    _add_serve(sub, common)
    _add_import(sub)
    return parser


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def _add_rollouts(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rollouts = sub.add_parser(
        "rollouts",
        prog="sanctum rollouts",
        help="print a token-level run's rollouts: tokens and reward breakdown",
        description="Print records of runs/<run>/rollouts.jsonl (token-level PPO): the "
        "prompt and generated tokens, the answer against the truth, and each term of the "
        "reward. Default: the last 10.",
    )
    rollouts.add_argument("run", metavar="RUN")
    which = rollouts.add_mutually_exclusive_group()
    which.add_argument("--last", type=_count, metavar="N", help="the last N rollouts")
    which.add_argument("--worst", type=_count, metavar="N", help="the N lowest reward_final")


def _add_watch_and_replay(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    watch = sub.add_parser(
        "watch", prog="sanctum watch", parents=[common], help="follow a run live (the default)"
    )
    add_run_arguments(watch)
    _add_once(watch)
    replay = sub.add_parser(
        "replay", prog="sanctum replay", parents=[common], help="play a recorded run back"
    )
    replay.add_argument("run", metavar="RUN")
    replay.add_argument(
        "--speed",
        type=_speed,
        default=1.0,
        help="playback speed: 1 = as recorded, 10 = ten times faster",
    )
    for parser in (watch, replay):
        parser.add_argument(
            "--refresh",
            type=_speed,
            metavar="SECONDS",
            default=argparse.SUPPRESS,
            help="shortest time between two redraws (default 0.1: an update is on screen "
            "within about 0.1 s; 0.5 costs about half the CPU)",
        )


def _add_once(watch: argparse.ArgumentParser) -> None:
    watch.add_argument(
        "--once",
        action="store_true",
        help="print the dashboard's current state as text and exit (for scripts, tmux "
        "status lines, ssh one-liners); the first two lines are the banner",
    )
    watch.add_argument("--json", action="store_true", help="with --once: one JSON object")


def _add_check(check: argparse.ArgumentParser) -> None:
    check.add_argument("run", metavar="RUN")
    check.add_argument(
        "--fail-on",
        choices=("warning", "critical"),
        default="critical",
        help="fail when an update reaches this level under a rule (default: critical); a "
        "critical anomaly always fails, and with warning so does an anomaly the trainer "
        "reported as a warning",
    )
    check.add_argument(
        "--allow-unfinished",
        action="store_true",
        help="pass a run without run_finished or interrupted (a failed run still fails)",
    )
    check.add_argument(
        "--allow-skipped",
        action="store_true",
        help="pass a run although lines that may be updates could not be read (by default "
        "an update the check could not read fails it: it was not judged)",
    )
    check.add_argument("--json", action="store_true", help="print one JSON object")
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
        if arg == "--thresholds":
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sanctum`` console script; returns the exit code.

    Exit 1 means only "a health rule failed". Unusable input, an unwritable ``--junit``
    file and, for ``check`` and ``summary``, any unexpected error exit 2: an uncaught
    exception would exit 1, which a CI job would read as an unhealthy run.
    """
    args = build_parser().parse_args(with_default_command(sys.argv[1:] if argv is None else argv))
    from sanctum.rollouts_view import RolloutsError
    from sanctum.thresholds import ThresholdsError, load_thresholds
    from telemetry.eventlog import EventLogError

    try:
        thresholds = load_thresholds(getattr(args, "thresholds", None))  # SUPPRESS: absent
        if args.command == "check":
            return _check(args, thresholds)
        if args.command == "summary":
            return _summary(args, thresholds)
        if args.command == "diff":
            return _diff(args, thresholds)
        if args.command == "rollouts":
            return _rollouts(args)
        if args.command == "schema":
            return _schema()
        if args.command == "import":
            return _import(args)
        if args.command == "serve":
            return _serve(args)
        if args.command == "watch" and (args.once or args.json):
            return _once(args, thresholds)
        return _interactive(args, thresholds)
    except (UsageError, ThresholdsError, EventLogError, RolloutsError) as exc:
        return _unusable(args, str(exc))
    except Exception as exc:
        if args.command not in ("check", "summary", "rollouts", "diff") and not _once_asked(args):
            raise  # the dashboard's own traceback; no CI reads its exit code
        traceback.print_exc()
        return _unusable(
            args, f"internal error ({type(exc).__name__}: {exc}); this is a bug in sanctum"
        )


def _unusable(args: argparse.Namespace, message: str) -> int:
    """Say why, write the JUnit error case when asked for one, and exit 2."""
    from sanctum.formatting import visible

    print(f"sanctum: error: {visible(message)}", file=sys.stderr)
    if args.command == "check" and args.junit is not None:
        from sanctum.check_report import write_junit_error
        from sanctum.health import Level

        try:
            write_junit_error(message, Path(args.run), Level(args.fail_on), args.junit)
        except OSError as exc:
            print(f"sanctum: error: {_junit_unwritable(args.junit, exc)}", file=sys.stderr)
    return EXIT_UNUSABLE


def _junit_unwritable(path: Path, exc: OSError) -> str:
    return f"cannot write JUnit file {path}: {exc.strerror or exc}"


def _emit(text: str) -> None:
    """Print ``text``; a reader that went away (``| head``) is not an error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter flushes it at exit


def _check(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.check import run_check
    from sanctum.check_report import format_text, to_dict, write_junit
    from sanctum.compare_cli import gate_options, judge_gate
    from sanctum.formatting import dumps
    from sanctum.health import Level
    from sanctum.learning import check_rows

    result = run_check(
        resolve_run(args.run),
        thresholds,
        Level(args.fail_on),
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
    from sanctum.compare_cli import diff_text

    _emit(diff_text(args, thresholds))
    return EXIT_OK


def _summary(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from sanctum.formatting import dumps
    from sanctum.summary import build_summary, format_text

    doc = build_summary(resolve_run(args.run), thresholds)
    _emit(dumps(doc) if args.json else format_text(doc))
    return EXIT_OK


def _schema() -> int:
    from telemetry.schema import shipped_schema_text

    _emit(shipped_schema_text().rstrip("\n"))
    return EXIT_OK


def _add_import(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    source = sub.add_parser(
        "import",
        prog="sanctum import",
        help="write an event log from another tool's log (TensorBoard)",
        description="Write a run's event log from another tool's log, for check, summary "
        "and the dashboard.",
    ).add_subparsers(dest="source", metavar="source", required=True)
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
        type=_count,
        help="size of a discrete action space: records entropy_normalized for the entropy rule",
    )
    tb.add_argument(
        "--force", action="store_true", help="replace a log an earlier import wrote in RUN"
    )


def _import(args: argparse.Namespace) -> int:
    from sanctum.formatting import visible_lines
    from sanctum.tb_command import ImportOptions, import_tensorboard

    options = ImportOptions(args.logdir, args.out, args.map, args.env, args.actions, args.force)
    _emit(visible_lines(import_tensorboard(options)))
    return EXIT_OK


def _rollouts(args: argparse.Namespace) -> int:
    from sanctum.rollouts_view import render

    events = resolve_run(args.run)
    last = args.last if args.last is not None or args.worst is not None else 10
    _emit(render(events.parent, events, last, args.worst))
    return EXIT_OK


def _add_serve(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    from sanctum.serve import add_parser  # stdlib only; textual-serve loads in _serve

    add_parser(sub, common)


def _serve(args: argparse.Namespace) -> int:
    from sanctum.serve import serve

    thresholds_file = getattr(args, "thresholds", None)  # SUPPRESS: absent
    return serve(resolve_run(args.run), thresholds_file, args.host, args.port, args.public_url)


def _once_asked(args: argparse.Namespace) -> bool:
    return args.command == "watch" and bool(args.once or args.json)


def _once(args: argparse.Namespace, thresholds: Thresholds) -> int:
    if not args.once:
        raise UsageError("--json needs --once (the dashboard itself is not JSON)")
    from sanctum.formatting import dumps
    from sanctum.once import once_dict, once_text, read_snapshot

    path = resolve_run(one_run(args, "--once"))
    snapshot = read_snapshot(path, thresholds)
    _emit(dumps(once_dict(snapshot)) if args.json else once_text(snapshot, path))
    return EXIT_OK


def _interactive(args: argparse.Namespace, thresholds: Thresholds) -> int:
    refresh: dict[str, Any] = {"refresh_seconds": args.refresh} if hasattr(args, "refresh") else {}
    app: App[None]
    if several(args):
        app = runs_app(args, thresholds, refresh)
    else:
        path = resolve_run(one_run(args, "watch") if args.command == "watch" else args.run)
        speed: float | None = None
        if args.command == "replay":
            if not path.exists():
                raise UsageError(f"{path}: no such event log to replay")
            speed = args.speed
        from sanctum.app import SanctumApp  # Textual loads only for the dashboard

        app = SanctumApp(path, thresholds, replay_speed=speed, **refresh)
    app.run()
    if app.return_code:  # Textual has printed what went wrong; the exit code must say so
        print(
            "sanctum: error: the dashboard stopped on an internal error (above); "
            "this is a bug in sanctum",
            file=sys.stderr,
        )
        return EXIT_UNUSABLE
    return EXIT_OK
