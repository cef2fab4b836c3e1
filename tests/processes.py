"""The one way tests start a real process, for what only a process shows: signals, broken
pipes, ``/dev/full``, closed streams, ``python -m``, FIFOs, the dashboard in a terminal,
several ranks. Everything else runs a command's ``main`` in the test's own process
(:mod:`tests.cli_runner`).

A child starts with the default signal dispositions whatever pytest inherited: a shell
that started pytest in the background (``nohup pytest &``) ignores SIGINT, and a child
would inherit that and outlive the Ctrl-C a test sends it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

PYTHON = sys.executable

RESET = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
"""The signals a child gets back at their default disposition."""


def default_signals() -> None:
    """In a child, before it runs: the signals of :data:`RESET` at their defaults."""
    for number in RESET:
        signal.signal(number, signal.SIG_DFL)


def _before(then: Callable[[], object] | None) -> Callable[[], None]:
    """What a child runs before its program: :func:`default_signals`, then ``then``."""

    def prepare() -> None:
        default_signals()
        if then is not None:
            then()

    return prepare


def popen(
    command: Sequence[str | os.PathLike[str]],
    *,
    preexec_fn: Callable[[], object] | None = None,
    **kwargs: Any,
) -> subprocess.Popen[Any]:
    """``subprocess.Popen`` with the default signal dispositions (:func:`default_signals`;
    ``preexec_fn`` runs after it)."""
    return subprocess.Popen(
        [os.fspath(c) for c in command], preexec_fn=_before(preexec_fn), **kwargs
    )


def run(
    command: Sequence[str | os.PathLike[str]],
    *,
    timeout: float = 120,
    preexec_fn: Callable[[], object] | None = None,
    **kwargs: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` with the default signal dispositions (``preexec_fn`` runs after
    they are set), never checked, with a timeout (a hung child fails its test instead of
    hanging the suite)."""
    kwargs.setdefault("check", False)
    return subprocess.run(
        [os.fspath(c) for c in command], preexec_fn=_before(preexec_fn), timeout=timeout, **kwargs
    )


def python_m(
    module: str,
    *args: str | os.PathLike[str],
    cwd: Path | None = None,
    stdout: int | None = subprocess.PIPE,
    timeout: float = 120,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` as a real process, its output as text."""
    return run(
        [PYTHON, "-m", module, *args],
        cwd=cwd,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        env=env,
    )
