"""A trainer running in a child process, as the dashboard attached to it sees it.

The dashboard and the trainer share nothing but the event log (docs/design.md, section 2). The
child runs in a session of its own, so a Ctrl-C typed in the terminal reaches only the
dashboard and the child outlives a dashboard that detaches or crashes; its stdout and
stderr go to files in the run folder, never to a pipe that would fill up or break. This
handle only watches the exit code, stops the child the way a user at its terminal would
(SIGINT: the trainer saves a checkpoint and records ``interrupted``), or lets it go. It
knows nothing of Textual, PPO or torch: any command that writes an event log will do.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from telemetry.files import InputFileError, open_input

STOP_TIMEOUT = 60.0
"""Seconds a stopping trainer gets to save its checkpoint and record the end before SIGKILL."""
TAIL_LINES = 6
"""Lines of the trainer's stderr shown when it dies."""
_TAIL_BYTES = 16_384


def describe_exit(code: int) -> str:
    """``exit code 2`` or, for a child killed by a signal, ``killed by SIGKILL``."""
    if code >= 0:
        return f"exit code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"killed by {name}"


def tail(path: Path, lines: int = TAIL_LINES) -> tuple[str, ...]:
    """The last ``lines`` non-blank lines of a text file (empty if it cannot be read)."""
    try:
        with open_input(path, "trainer output") as fh:  # a FIFO there cannot hang us
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - _TAIL_BYTES))
            data = fh.read(_TAIL_BYTES)
    except (OSError, InputFileError):
        return ()
    text = data.decode("utf-8", errors="replace")
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return tuple(kept[-lines:]) if lines > 0 else ()


@dataclass(frozen=True)
class TrainerExit:
    """How the child ended."""

    code: int
    """Its return code; negative for a signal (``-9``: SIGKILL), as in :mod:`subprocess`."""
    stderr_tail: tuple[str, ...]
    """The last lines it wrote to stderr."""
    requested: bool
    """The dashboard asked it to stop (so a non-zero code is expected, not a crash)."""

    @property
    def down(self) -> bool:
        """It died on its own: a failure the user must see (TRAINER DOWN)."""
        return self.code != 0 and not self.requested

    def describe(self) -> str:
        """``exit code 1`` / ``killed by SIGKILL``."""
        return describe_exit(self.code)


@dataclass(frozen=True)
class ProcessOutcome:
    """What became of a trainer process once the dashboard watching it closed: all that
    its caller needs to say so (``ppo train`` does), nothing of the dashboard itself."""

    pid: int
    ended: TrainerExit | None
    """How it ended; None while it runs on."""
    detached: bool
    """The user detached from it in the quit dialog: it trains on, in the background."""
    reason: str | None
    """``run_finished.reason`` as the dashboard last read the log (None: not finished yet,
    or finished without one)."""


class TrainerProcess:
    """Handle on one trainer child process: poll, stop, detach."""

    def __init__(self, process: subprocess.Popen[bytes], stderr_path: Path) -> None:
        self.process = process
        self.stderr_path = stderr_path
        self.stdout_path: Path | None = None
        """Where the child's standard output goes (None: discarded)."""
        self.detached = False
        """The dashboard let it go: training continues after the dashboard exits."""
        self._requested = False

    @classmethod
    def start(
        cls,
        command: Sequence[str],
        *,
        stderr_path: Path,
        stdout_path: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> TrainerProcess:
        """Start ``command`` in a new session, stdout and stderr appended to files."""
        stderr_path.parent.mkdir(parents=True, exist_ok=True)
        out_target = os.devnull if stdout_path is None else stdout_path
        with stderr_path.open("ab") as err, open(out_target, "ab") as out:
            process = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=None if env is None else dict(env),
                start_new_session=True,  # terminal signals reach the dashboard only
            )
        started = cls(process, stderr_path)
        started.stdout_path = stdout_path
        return started

    def last_said(self) -> str | None:
        """The last line the child printed (its standard output, else its error stream):
        what it is doing before its log exists, such as a warm start; None before it says
        anything. Read from the files' tails, never more than a few KiB."""
        for path in (self.stdout_path, self.stderr_path):
            lines = () if path is None else tail(path, 1)
            if lines:
                return lines[-1]
        return None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def stop_requested(self) -> bool:
        """:meth:`interrupt` (or :meth:`stop`) was called."""
        return self._requested

    def poll(self) -> TrainerExit | None:
        """How the child ended, or None while it runs (never blocks)."""
        code = self.process.poll()
        return None if code is None else self._exit(code)

    def wait(self, timeout: float) -> TrainerExit | None:
        """Wait up to ``timeout`` seconds for the child to end; None if it still runs."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self._exit(code)

    def interrupt(self) -> None:
        """Ask the child to stop as Ctrl-C would (SIGINT); returns at once.

        A child that has already ended is left alone: its exit stays its own."""
        if self.process.poll() is None:
            self._requested = True
            self.process.send_signal(signal.SIGINT)

    def stop(self, timeout: float = STOP_TIMEOUT) -> TrainerExit:
        """SIGINT, then wait up to ``timeout`` seconds; SIGKILL a child that does not end."""
        self.interrupt()
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        return self._exit(code)

    def detach(self) -> None:
        """Let the child go on alone; this handle stops managing it."""
        self.detached = True

    def _exit(self, code: int) -> TrainerExit:
        return TrainerExit(code, tail(self.stderr_path), self._requested)
