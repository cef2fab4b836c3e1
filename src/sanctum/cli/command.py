"""What a ``sanctum`` subcommand is (:class:`Command`), and the options commands share:
``--thresholds`` and ``--fail-on`` (every command that judges a run) and ``--json`` (every
command that prints a document), each spelled here once. Stdlib only.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sanctum.health.levels import Level
    from sanctum.health.thresholds import Thresholds


@dataclass(frozen=True)
class Command:
    """One subcommand, ``sanctum NAME``: its help, its options and what it does.

    The registry (:data:`sanctum.cli.commands.COMMANDS`) lists each once; the parser, the
    dispatch and the scripted commands are derived from it.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    """Adds the command's own options to its parser (the shared ones come with ``judges``)."""
    run: Callable[[argparse.Namespace, Thresholds], int]
    """Does the command, given its arguments and the rule table; returns the exit code."""
    description: str | None = None
    epilog: str | None = None
    judges: bool = True
    """Takes ``--thresholds`` and ``--fail-on``: it judges a run."""
    scripted: bool = True
    """A script or CI job reads its exit code: an unexpected error exits 2 there (an
    uncaught one would exit 1, which reads as a failed check). The dashboard's is not."""
    scripted_with: Callable[[argparse.Namespace], bool] | None = None
    """For a command whose exit code a script reads only with some options (``--once``)."""
    on_unusable: Callable[[argparse.Namespace, str], None] | None = None
    """What the command also writes when its input is unusable (check: the JUnit case)."""

    def reads_exit_code(self, args: argparse.Namespace) -> bool:
        """Whether a script reads the exit code of this run of the command."""
        return self.scripted or (self.scripted_with is not None and self.scripted_with(args))


def common_options() -> argparse.ArgumentParser:
    """The parent parser of ``--thresholds`` and ``--fail-on``: the top-level command and
    every command that judges a run take them."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--thresholds",
        metavar="FILE|spec",
        type=Path,
        default=argparse.SUPPRESS,
        help="TOML file overriding the health rules, e.g. [approx_kl] warning = 0.01; or "
        "spec: the specification's fixed KL lines (warning 0.015, critical 0.03 nats)",
    )
    common.add_argument(
        "--fail-on",
        choices=("warning", "critical"),
        default=argparse.SUPPRESS,
        help="the level at which a rule fails the run (default: critical): check's exit code "
        "and the verdict every view shows (FAIL at it, WARN below it); a critical anomaly "
        "always fails, and with warning so does an anomaly the trainer reported as a warning",
    )
    return common


def thresholds_file(args: argparse.Namespace) -> Path | None:
    """``--thresholds``, None when absent (it is SUPPRESS: absent unless given)."""
    file: Path | None = getattr(args, "thresholds", None)
    return file


def fail_on(args: argparse.Namespace) -> Level:
    """``--fail-on`` (critical when absent): the level at which a rule fails the run, for
    ``check``'s exit code and for the verdict every view shows."""
    from sanctum.health.levels import Level

    return Level(getattr(args, "fail_on", Level.CRITICAL.value))  # SUPPRESS: absent


def add_json(parser: argparse.ArgumentParser, says: str = "print one JSON object") -> None:
    """``--json``, spelled once for every command that prints a document."""
    parser.add_argument("--json", action="store_true", help=says)
