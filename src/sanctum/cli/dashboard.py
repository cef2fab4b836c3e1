"""What ``watch`` and ``replay`` share: the dashboard's ``--refresh``, the options every
dashboard takes, and running one (Textual loads only then, inside the app's module)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from sanctum.cli.arg_types import positive_number
from sanctum.cli.command import fail_on
from sanctum.exits import EXIT_OK, EXIT_UNUSABLE

if TYPE_CHECKING:
    from sanctum.tui.base import SanctumAppBase


def add_refresh(parser: argparse.ArgumentParser) -> None:
    """``--refresh SECONDS`` of a command that opens the dashboard."""
    parser.add_argument(
        "--refresh",
        type=positive_number,
        metavar="SECONDS",
        default=argparse.SUPPRESS,
        help="time between two redraws on average, two in a row at most (default 0.15: "
        "an update is on screen in about 65 ms; 0.09 in about 20 ms at 1.7 times the "
        "CPU; 0.5 costs a third of the CPU, at 250 ms)",
    )


def dashboard_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options every dashboard takes: the ``--fail-on`` level and ``--refresh``."""
    opts: dict[str, Any] = {"fail_on": fail_on(args)}
    if hasattr(args, "refresh"):  # SUPPRESS: absent
        opts["refresh_seconds"] = args.refresh
    return opts


def run_dashboard(app: SanctumAppBase) -> int:
    """Run ``app`` until it quits; exit 2 when it stopped on an internal error."""
    app.run()
    if app.return_code:  # Textual has printed what went wrong; the exit code must say so
        print(
            "sanctum: error: the dashboard stopped on an internal error (above); "
            "this is a bug in sanctum",
            file=sys.stderr,
        )
        return EXIT_UNUSABLE
    return EXIT_OK
