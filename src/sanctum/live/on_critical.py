"""``--on-critical CMD``: a command run once per run, when the run's level turns FAIL.

The command is split as a shell would split it (``shlex.split``) and run without a shell
(a user who wants one writes ``sh -c '...'``), in a thread of its own so the watcher goes
on reading. It finds the run in its environment: ``SANCTUM_RUN`` (the run's id),
``SANCTUM_RUN_DIR`` (its folder), ``SANCTUM_RULE``, ``SANCTUM_VERDICT`` (the run's verdict
so far, as ``check`` says it) and ``SANCTUM_UPDATE``; the values that come from the log
(the run id, the rule, the verdict) are escaped as everything from a log is, and a command
that passes them to a shell quotes them (``sh -c 'scancel "$SLURM_JOB_ID"'``). Its output,
line by line as it comes (the first :data:`SAID_LINES`), and its exit code go to the
watcher's log, escaped. It runs in a session of its own, at most :data:`COMMAND_SECONDS`:
then its process group is killed, and so it is when the watcher closes and stops waiting.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from sanctum.formatting import visible

COMMAND_SECONDS: Final = 300.0
"""The longest an ``--on-critical`` command may run before its process group is killed."""
SAID_LINES: Final = 200
"""Lines of a command's output the watcher's log shows; the rest are counted."""

if TYPE_CHECKING:
    from sanctum.model.alerts import Alert


def command_words(command: str) -> list[str]:
    """``command`` split as a shell splits it; ValueError when it cannot be, or is empty."""
    words = shlex.split(command)
    if not words:
        raise ValueError("the command is empty")
    return words


class OnCritical:
    """Runs ``words`` once for each run whose level turns FAIL."""

    def __init__(self, words: list[str], say: Callable[[str], None]) -> None:
        self.words = words
        self.say = say
        self._fired: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._running: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def alert(self, alert: Alert) -> None:
        """Run the command if ``alert`` is the run's first FAIL."""
        if alert.verdict != "FAIL" or alert.path in self._fired:
            return
        self._fired.add(alert.path)
        env = {
            **os.environ,
            "SANCTUM_RUN": visible(alert.run),
            "SANCTUM_RUN_DIR": str(Path(alert.path).parent),
            "SANCTUM_RULE": visible(alert.rule or ""),
            "SANCTUM_VERDICT": visible(alert.check),
            "SANCTUM_UPDATE": "" if alert.update is None else str(alert.update),
        }
        thread = threading.Thread(target=self._run, args=(alert.run, env), daemon=True)
        self._threads.append(thread)
        thread.start()

    def close(self, wait: float) -> None:
        """Wait for the commands still running, ``wait`` seconds in all; then kill them."""
        deadline = time.monotonic() + wait
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            left = list(self._running)
        for process in left:
            self.say("sanctum: on-critical: a command still running was stopped")
            _kill_group(process)

    def _run(self, run: str, env: dict[str, str]) -> None:
        said = f"sanctum: on-critical {visible(run)}"
        try:
            process = subprocess.Popen(
                self.words,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killed whole at its limit
            )
        except OSError as exc:
            self.say(f"{said}: cannot run {visible(self.words[0])}: {visible(str(exc))}")
            return
        with self._lock:
            self._running.add(process)
        timer = threading.Timer(COMMAND_SECONDS, _kill_group, (process,))
        timer.daemon = True
        timer.start()
        lines = 0
        assert process.stdout is not None
        with process.stdout:
            for raw in process.stdout:  # as it comes; a bounded part of a flood
                lines += 1
                if lines <= SAID_LINES:
                    self.say(f"{said}: {visible(raw.decode(errors='replace').rstrip())}")
        code = process.wait()
        timer.cancel()
        with self._lock:
            self._running.discard(process)
        if lines > SAID_LINES:
            self.say(f"{said}: ({lines - SAID_LINES} more lines not shown)")
        ended = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        self.say(f"{said}: {ended}")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process`` and what it started (its session's process group)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
            os.killpg(process.pid, signal.SIGKILL)
