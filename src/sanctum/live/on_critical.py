"""``--on-critical CMD``: a command run once per run, when the run's level turns FAIL.

The command is split as a shell would split it (``shlex.split``) and run without a shell
(a user who wants one writes ``sh -c '...'``), in a thread of its own so the watcher goes
on reading. It finds the run in its environment: ``SANCTUM_RUN`` (the run's id),
``SANCTUM_RUN_DIR`` (its folder), ``SANCTUM_RULE``, ``SANCTUM_VERDICT`` (the run's verdict
so far, as ``check`` says it) and ``SANCTUM_UPDATE``. Its output, line by line, and its
exit code go to the watcher's log, escaped.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sanctum.formatting import visible

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

    def alert(self, alert: Alert) -> None:
        """Run the command if ``alert`` is the run's first FAIL."""
        if alert.verdict != "FAIL" or alert.path in self._fired:
            return
        self._fired.add(alert.path)
        env = {
            **os.environ,
            "SANCTUM_RUN": alert.run,
            "SANCTUM_RUN_DIR": str(Path(alert.path).parent),
            "SANCTUM_RULE": alert.rule or "",
            "SANCTUM_VERDICT": alert.check,
            "SANCTUM_UPDATE": "" if alert.update is None else str(alert.update),
        }
        thread = threading.Thread(target=self._run, args=(alert.run, env), daemon=True)
        self._threads.append(thread)
        thread.start()

    def close(self, wait: float) -> None:
        """Wait for the commands still running, at most ``wait`` seconds each."""
        for thread in self._threads:
            thread.join(wait)
            if thread.is_alive():
                self.say("sanctum: on-critical: a command is still running; not waiting")

    def _run(self, run: str, env: dict[str, str]) -> None:
        said = f"sanctum: on-critical {visible(run)}"
        try:
            done = subprocess.run(
                self.words,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                check=False,
            )
        except OSError as exc:
            self.say(f"{said}: cannot run {visible(self.words[0])}: {visible(str(exc))}")
            return
        for line in done.stdout.decode(errors="replace").splitlines():
            self.say(f"{said}: {visible(line)}")
        self.say(f"{said}: exited with code {done.returncode}")
