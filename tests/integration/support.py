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
    """Let the app run until ``ready(app)``, then let it repaint."""
    app = pilot.app
    assert isinstance(app, SanctumApp)
    waited = 0.0
    while not ready(app):
        assert waited < WAIT_LIMIT, f"the app never showed {what}"
        await pilot.pause(0.05)
        waited += 0.05
    await pilot.pause()
