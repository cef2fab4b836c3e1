"""Stop signals end a run the way Ctrl-C does: a checkpoint, then ``run_finished``.

Docker, systemd, Slurm and CI stop a job with SIGTERM, and a closed terminal sends SIGHUP;
by default either kills Python at once, leaving no checkpoint and a log that never says
the run ended. Inside :func:`stop_on_signals` they raise :class:`Stopped` (a
``KeyboardInterrupt``, so every Ctrl-C path handles them too) in the main thread, once;
a second signal of the same kind then acts as it normally would, so a stuck save can
still be killed. A process started in the background by a shell (``cmd &``) inherits
SIGINT ignored, which would make ``kill -INT`` do nothing: Python's own handler is put back.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Final

from ppo.exits import EXIT_INTERRUPTED

STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGHUP)
"""Handled like Ctrl-C while training."""


class Stopped(KeyboardInterrupt):
    """Training was asked to stop by a signal; ``str()`` is its name, e.g. ``SIGTERM``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal number: 143 for SIGTERM, 129 for SIGHUP, 130 for SIGINT."""
        return 128 + self.signum


def exit_code_of(interrupt: KeyboardInterrupt) -> int:
    """The shell's exit code for an interrupt: 130 for Ctrl-C, 128 + N for signal N."""
    return interrupt.exit_code if isinstance(interrupt, Stopped) else EXIT_INTERRUPTED


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    signal.signal(signum, signal.SIG_DFL)  # a second one is not caught again
    raise Stopped(signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Stopped`; SIGINT works even when
    the process inherited it ignored. Earlier handlers are restored after the block."""
    previous = {sig: signal.getsignal(sig) for sig in (*STOP_SIGNALS, signal.SIGINT)}
    if previous[signal.SIGINT] == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in STOP_SIGNALS:
        signal.signal(sig, _raise_stopped)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
