"""Helpers for end-to-end tests: real processes, real files, waits with a hang guard only."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from textual.pilot import Pilot

from sanctum.app import SanctumApp

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WAIT_LIMIT = 120.0
"""Seconds a test waits for training before failing (a hang guard, not a timing test)."""


def run(args: Sequence[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` to the end, output captured."""
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=WAIT_LIMIT
    )


async def wait_for(pilot: Pilot[None], ready: Callable[[SanctumApp], bool], what: str) -> None:
    """Let the app run until ``ready(app)`` and the screen shows its newest snapshot."""
    app = pilot.app
    assert isinstance(app, SanctumApp)
    waited = 0.0
    while not ready(app) or app.display_pending:
        assert waited < WAIT_LIMIT, f"the app never showed {what}"
        await pilot.pause(0.05)
        waited += 0.05
    await pilot.pause()


async def wait_closed(pilot: Pilot[None]) -> None:
    """Let the app run until it has exited."""
    waited = 0.0
    while pilot.app.return_code is None:
        assert waited < WAIT_LIMIT, "the app never closed"
        await pilot.pause(0.05)
        waited += 0.05
