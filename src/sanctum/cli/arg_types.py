"""argparse types shared by the ``sanctum`` subcommands: one home for what a number on
the command line must be, and for how its error reads; and ``--json``, which four commands
spell the same; and :func:`add_command`, how every subcommand is declared."""

from __future__ import annotations

import argparse
import math
from typing import TypeAlias

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""Where the subcommands are added (``parser.add_subparsers()``)."""


def finite_number(text: str) -> float:
    """A finite float."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def positive_number(text: str) -> float:
    """A finite float > 0 (a speed, a number of seconds)."""
    value = finite_number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def count(text: str) -> int:
    """A whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def add_json(parser: argparse.ArgumentParser, says: str = "print one JSON object") -> None:
    """``--json``, spelled once for every command that prints a document."""
    parser.add_argument("--json", action="store_true", help=says)


def add_command(
    sub: Commands,
    name: str,
    common: argparse.ArgumentParser | None = None,
    *,
    help: str,
    description: str | None = None,
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """The subcommand ``sanctum NAME``: its ``prog`` spelled from its name, and ``common``
    (the options of every command that judges a run) as its parent."""
    parents = [] if common is None else [common]
    return sub.add_parser(
        name,
        prog=f"sanctum {name}",
        parents=parents,
        help=help,
        description=description,
        epilog=epilog,
    )
