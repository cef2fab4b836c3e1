"""What ``ppo train`` prints, made safe to show: the one place its errors are written.

Every string ppo echoes may come from outside: an environment id, a path, a run id, a
checkpoint's values, a config key, a third-party library's exception text (Gymnasium
repeats a malformed environment id verbatim). Each goes through
:func:`telemetry.text.visible`, so an ``ESC`` or ``BEL`` in it is shown as ``\\x1b`` or
``\\x07`` and never retitles or clears the terminal. An error is one line; only a
:class:`~ppo.config.settings.ConfigError`, which lists every bad field, spans several (each
line escaped on its own).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TextIO

from ppo.config.settings import ConfigError
from ppo.exits import EXIT_OK, EXIT_STOPPED, EXIT_USAGE
from telemetry.text import visible, visible_lines

PREFIX = "ppo train: "
DONE = "done: "
"""How the summary of a finished run begins (the done line, then where things are)."""


def shown(problem: BaseException | str) -> str:
    """``problem`` as ppo shows it: one escaped line (a ConfigError: one per field)."""
    if isinstance(problem, ConfigError):
        return visible_lines(str(problem).split("\n"))
    return visible(str(problem))


def error(
    err: TextIO | None, problem: BaseException | str, lead: str = "", prefix: str = PREFIX
) -> None:
    """Write ``ppo train: <problem>`` (escaped) on ``err``; ``lead`` goes before the
    prefix (a newline after a progress bar). When standard error is closed or cannot be
    written (``2>/dev/full``) the line is lost, never the exit code: nothing is raised."""
    say(err, f"{lead}{prefix}{shown(problem)}")


def say(err: TextIO | None, line: str) -> None:
    """Print ``line`` on ``err`` if it can be written; a failure to tell is not a new one."""
    if err is None:
        return
    with contextlib.suppress(OSError, ValueError):  # full, broken or closed
        print(line, file=err, flush=True)


def path(value: str | os.PathLike[str]) -> str:
    """A path in a message: escaped, never raw."""
    return visible(os.fspath(value))


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation that failed (Python's MemoryError, or torch's
    RuntimeError from its CPU allocator, or its CUDA OutOfMemoryError)."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "can't allocate memory" in text or "out of memory" in text.lower()
    )


def memory_line(exc: BaseException) -> str:
    """One line for a run that ran out of memory (the event log records it as failed)."""
    first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    return f"training stopped: out of memory ({first.strip()[:200]}); the run is recorded as failed"


def announce(line: str, out: TextIO, err: TextIO, prefix: str = PREFIX) -> bool:
    """Print the first line of a run on ``out``; False (and one line on ``err``) when
    standard output cannot be written (``> /dev/full``): checked before anything is
    built, so such a run records nothing (exit 2)."""
    try:
        print(line, file=out, flush=True)
    except OSError as exc:
        error(err, f"cannot write to standard output: {exc.strerror or exc}", prefix=prefix)
        return False
    return True


def listed(text: str, out: TextIO, err: TextIO, prefix: str) -> int:
    """Print the whole answer of a listing command (``ppo config``): exit 0, also when the
    reader went away (``| head``: nothing is said, as ``git log | head`` and ``sanctum``
    say nothing; ``ppo.cli.main`` then sends the rest to /dev/null); 2 and one line on ``err``
    when standard output cannot take it (``> /dev/full``)."""
    try:
        print(text, file=out, flush=True)
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:
        error(err, f"cannot write to standard output: {exc.strerror or exc}", prefix=prefix)
        return EXIT_USAGE
    return EXIT_OK


def summarize(summary: str, events: Path, out: TextIO, err: TextIO) -> int:
    """Print the summary of a finished run: exit 0, or 1 (one line on ``err``) when
    standard output cannot take it; the run is recorded either way."""
    try:
        print(summary, file=out, flush=True)
    except OSError as exc:
        error(
            err,
            f"training completed and is recorded in {events}, but standard output could "
            f"not be written: {exc.strerror or exc}",
        )
        return EXIT_STOPPED
    return EXIT_OK
