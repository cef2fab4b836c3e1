"""The real ``ppo train`` command on a real (pseudo-)terminal: the dashboard is the default.

What a user types, with nothing mocked: a terminal on stdout selects the dashboard, the
trainer child records the run, FINISHED appears, ``q`` quits and the command says where
the log is. Without a terminal the same command runs headless (tests/integration/
test_examples.py).
"""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from telemetry.eventlog import read_events
from telemetry.events import RunFinished
from tests import processes
from tests.integration.support import WAIT_LIMIT
from tests.waiting import wait_until


class Terminal:
    """A pseudo-terminal of a fixed size whose output is collected in the background."""

    def __init__(self, columns: int = 100, rows: int = 30) -> None:
        self.master, self.slave = pty.openpty()
        size = struct.pack("HHHH", rows, columns, 0, 0)
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, size)
        self.output = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)

    def start(self, command: list[str], cwd: Path) -> subprocess.Popen[bytes]:
        env = {**os.environ, "TERM": "xterm-256color"}
        proc = processes.popen(
            command, stdin=self.slave, stdout=self.slave, stderr=self.slave, cwd=cwd, env=env
        )
        os.close(self.slave)
        self._reader.start()
        return proc

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the last process on the terminal closed it
                return
            if not data:
                return
            self.output += data

    def wait_for(self, text: bytes) -> None:
        wait_until(lambda: text in self.output, f"{text!r} on the terminal", WAIT_LIMIT)


@pytest.mark.slow
def test_ppo_train_on_a_terminal_shows_the_dashboard_and_q_quits_when_finished(
    tmp_path: Path,
) -> None:
    terminal = Terminal()
    command = [sys.executable, "-m", "ppo", "train", "--total-steps", "20000", "--run-id", "tty"]
    proc = terminal.start(command, cwd=tmp_path)
    try:
        terminal.wait_for(b"FINISHED")
        os.write(terminal.master, b"q")
        assert proc.wait(WAIT_LIMIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    terminal.wait_for(b"check it:  sanctum check runs/tty")
    assert b"LIVE" in terminal.output or b"WAITING" in terminal.output
    last = read_events(tmp_path / "runs" / "tty" / "events.jsonl").events[-1]
    assert isinstance(last, RunFinished) and last.payload.status == "completed"
    os.close(terminal.master)


TSTP_AGAIN = 10.0
"""Seconds after which SIGTSTP is sent again to a dashboard that has not stopped."""


def wait_for_state(ready: Callable[[], bool], limit: float) -> bool:
    """Whether ``ready()`` came true within ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not ready():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def process_state(pid: int) -> str:
    """The state letter of process ``pid`` in /proc (``T``: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.skipif(sys.platform != "linux", reason="reads process states from /proc (Linux)")
@pytest.mark.parametrize(
    ("view", "drawn"),
    [("watch", (b"Timeline", b"Health")), ("--all", (b"sigcont-run", b"Overlay"))],
    ids=["one-run", "run-table"],
)
def test_the_dashboard_draws_itself_again_after_sigtstp_and_sigcont(
    tmp_path: Path, view: str, drawn: tuple[bytes, bytes]
) -> None:
    """``kill -TSTP`` then ``fg`` (SIGCONT): the whole dashboard (one run's, or the run
    table) is drawn again on its own, not only once a key is pressed."""
    from tests.sanctum.logs import RunLog

    (tmp_path / "runs" / "sigcont-run").mkdir(parents=True)
    log = RunLog(tmp_path / "runs" / "sigcont-run" / "events.jsonl", run_id="sigcont-run")
    log.start()
    for update in range(6):
        log.update(update)
    log.finish()
    log.close()
    terminal = Terminal()
    target = log.path if view == "watch" else tmp_path / "runs"
    proc = terminal.start([sys.executable, "-m", "sanctum", view, str(target)], tmp_path)
    try:
        for text in drawn:  # the whole dashboard is up, its signal handlers with it
            terminal.wait_for(text)
        # What Ctrl+Z sends; the dashboard stops itself. Sent again (Ctrl+Z pressed again)
        # should the first arrive in the instant before the driver took the signal: the
        # kernel drops an unhandled SIGTSTP for a process group without job control (the
        # test's, orphaned under pytest's workers).
        stopped = lambda: process_state(proc.pid) == "T"  # noqa: E731
        for _ in range(int(WAIT_LIMIT // TSTP_AGAIN)):
            proc.send_signal(signal.SIGTSTP)
            if wait_for_state(stopped, TSTP_AGAIN):
                break
        assert stopped(), "never saw the dashboard stopped"
        resumed = len(terminal.output)
        proc.send_signal(signal.SIGCONT)  # what fg sends
        wait_until(
            lambda: all(text in terminal.output[resumed:] for text in drawn),
            "the panels drawn again after SIGCONT",
            WAIT_LIMIT,
        )
        os.write(terminal.master, b"q")
        assert proc.wait(WAIT_LIMIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
