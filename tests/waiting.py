"""The one polling wait of the suite, for a process (``wait_until``) and for a Textual app
under ``Pilot`` (``settle``): poll until a condition holds, failing with what was awaited
after a hang guard. The limits are hang guards, never timing assertions."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot

from sanctum.tui.app import SanctumApp

POLL_SECONDS = 0.05


def wait_until(ready: Callable[[], bool], what: str, limit: float) -> None:
    """Return once ``ready()``; fail the test saying ``what`` never came after ``limit`` s."""
    deadline = time.monotonic() + limit
    while not ready():
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(POLL_SECONDS)


async def settle(
    pilot: Pilot[None],
    ready: Callable[[SanctumApp], bool],
    what: str,
    limit: float,
    *,
    shown: bool = True,
) -> SanctumApp:
    """Let the app run until ``ready(app)``; ``shown``: and until the screen shows its newest
    snapshot, then one more repaint. Fails saying ``what`` never came after ``limit`` s."""
    app = pilot.app
    assert isinstance(app, SanctumApp)
    waited = 0.0
    while not ready(app) or (shown and app.display_pending):
        assert waited < limit, f"the app never showed {what}"
        await pilot.pause(POLL_SECONDS)
        waited += POLL_SECONDS
    if shown:
        await pilot.pause()
    return app
