"""Helpers for end-to-end tests: real processes, real files, waits with a hang guard only."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from textual.pilot import Pilot

from sanctum.tui.app import SanctumApp
from tests import processes
from tests.waiting import settle

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WAIT_LIMIT = 120.0
"""Seconds a test waits for training before failing (a hang guard, not a timing test)."""


def run(args: Sequence[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` to the end, output captured."""
    return processes.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=WAIT_LIMIT
    )


async def wait_for(pilot: Pilot[None], ready: Callable[[SanctumApp], bool], what: str) -> None:
    """:func:`tests.waiting.settle` with this tier's hang guard."""
    await settle(pilot, ready, what, WAIT_LIMIT)


async def wait_closed(pilot: Pilot[None]) -> None:
    """Let the app run until it has exited."""
    await settle(
        pilot, lambda app: app.return_code is not None, "its exit", WAIT_LIMIT, shown=False
    )
