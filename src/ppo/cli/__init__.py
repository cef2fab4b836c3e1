"""``ppo``: ``ppo train`` trains and records a run, ``ppo config`` lists the settings.

Exit codes: 0 completed, 1 training stopped (by the health gate of ``--halt-on``, or the
run could not be recorded, a checkpoint could not be written, or standard output broke
while training), 2 unusable input (bad
config, unknown environment, a checkpoint that cannot be used, a run id that is taken or
not a name; standard output closed or unwritable at the start: nothing recorded), 130 interrupted by
Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (a checkpoint was saved).

The package: :mod:`~ppo.cli.parser` (the arguments and their help), :mod:`~ppo.cli.listing`
(``ppo config``), :mod:`~ppo.cli.train` (``ppo train``'s settings, checked, and the health
gate of ``--halt-on``), :mod:`~ppo.cli.run` (the run), :mod:`~ppo.cli.tokens` (a
token-level run), :mod:`~ppo.cli.attach` (the run under Sanctum's dashboard) and
:mod:`~ppo.cli.verdict` (the run's verdict, the last line ``ppo train`` prints). Only
``run`` and what it imports load torch, once the settings hold: ``--help``, ``ppo config``
and a refused option or setting answer without it. Only ``train``, ``attach`` and
``verdict`` import Sanctum, through its public names, each when it is needed.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence

from ppo.cli.listing import list_config
from ppo.cli.parser import build_parser
from ppo.cli.train import train
from ppo.exits import EXIT_STOPPED, EXIT_USAGE
from ppo.run.messages import error

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ppo`` console script and ``python -m ppo``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:  # started with standard output closed (>&-)
        error(sys.stderr, "cannot write to standard output: it is closed")
        return EXIT_USAGE
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:  # --help, or argparse's own usage error (exit 2)
        if not _stdout_flushed():
            error(sys.stderr, "cannot write to standard output")
            return EXIT_USAGE
        raise
    if args.command == "config":
        code = list_config(args, sys.stdout, sys.stderr)
    elif args.command == "train":
        code = train(args, sys.stdout, sys.stderr, argv)
    else:  # pragma: no cover - argparse rejects unknown commands
        return EXIT_USAGE
    return code if _stdout_flushed() else max(code, EXIT_STOPPED)


def _stdout_flushed() -> bool:
    """Flush standard output; when it cannot be written, point it at /dev/null so the
    interpreter's own last flush adds no traceback-like noise, and say False. A reader
    that went away (``ppo config | head``) is not a failure: True, and nothing is said."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        broken_pipe = isinstance(exc, BrokenPipeError)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass
        return broken_pipe
    return True
