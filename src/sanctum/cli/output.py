"""What every ``sanctum`` command prints: its report on standard output, and the line
that says a file it was asked to write could not be."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sanctum.run_files import UsageError
from telemetry.text import visible


def emit(text: str) -> None:
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


def junit_unwritable(path: Path, exc: OSError) -> str:
    """The error line of a ``--junit`` file that could not be written."""
    return f"sanctum: error: {visible(f'cannot write JUnit file {path}: {exc.strerror or exc}')}"
