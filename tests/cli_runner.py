"""A command's ``main`` run in this process, as its process would run it: the arguments, the
output captured, the exit code (``SystemExit`` included, as argparse raises it), from a
given folder. For what a test reads of a command, its lines and its exit code; what only a
real process shows (signals, broken pipes, ``/dev/full``, closed streams, ``python -m``,
FIFOs, a terminal) starts one, through :mod:`tests.processes`."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Ran:
    """What a command left: its exit code and everything it wrote to each stream."""

    returncode: int
    stdout: str
    stderr: str


def run_main(
    main: Callable[[Sequence[str]], int],
    *argv: str | os.PathLike[str],
    cwd: Path | None = None,
) -> Ran:
    """``main(argv)`` with standard output and error captured, from ``cwd`` when given."""
    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([os.fspath(arg) for arg in argv])
            except SystemExit as exc:  # --help, argparse's usage errors
                code = _exit_code(exc, err)
    finally:
        os.chdir(previous)
    return Ran(code, out.getvalue(), err.getvalue())


def _exit_code(exc: SystemExit, err: io.StringIO) -> int:
    """The code a process would exit with: a message is printed and is exit 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=err)
    return 1
