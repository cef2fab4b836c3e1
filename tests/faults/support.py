"""Real processes for the fault tests: a trainer to hurt, and waits with a hang guard only."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from telemetry.eventlog import EventLogReader
from telemetry.events import Event
from tests import processes, waiting

WAIT_LIMIT = 60.0
"""Seconds a test waits for a process before failing (a hang guard, not a timing test)."""


def trainer_command(run_dir: Path, run_id: str, *extra: str) -> list[str]:
    """``python -m ppo train --headless`` into ``run_dir/run_id``, long enough to be hurt."""
    return [
        sys.executable, "-m", "ppo", "train", "--headless", "--total-steps", "2000000",
        "--run-dir", str(run_dir), "--run-id", run_id, *extra,
    ]  # fmt: skip


def start_trainer(run_dir: Path, run_id: str, *extra: str, **popen: Any) -> subprocess.Popen[str]:
    """The :func:`trainer_command` started, stderr captured (``popen``: more Popen options)."""
    return processes.popen(
        trainer_command(run_dir, run_id, *extra),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def wait_until(ready: Callable[[], bool], what: str) -> None:
    """:func:`tests.waiting.wait_until` with this tier's hang guard."""
    waiting.wait_until(ready, what, WAIT_LIMIT)


def lines_in(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def read_whole(path: Path) -> tuple[list[Event], EventLogReader]:
    reader = EventLogReader(path)
    events = [e for batch in reader.batches() for e in batch.events]
    return events, reader


def finish(process: subprocess.Popen[str], signal_number: int) -> tuple[int, str]:
    """Send ``signal_number``, wait, and return the exit code and stderr."""
    os.kill(process.pid, signal_number)
    _, err = process.communicate(timeout=WAIT_LIMIT)
    return process.returncode, err


def run(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return processes.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=WAIT_LIMIT
    )
