"""The screen is redrawn at most every ``refresh_seconds``; ``app.snapshot`` never waits.

A fast trainer must not cost its dashboard a core: snapshots arriving inside the redraw
slot are folded into one redraw of the newest, while ``app.snapshot`` stays current.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Label

from sanctum.app import SanctumApp
from sanctum.thresholds import DEFAULT_THRESHOLDS
from sanctum.widgets import StatusBanner
from tests.sanctum.app_support import WAIT_LIMIT, lively, wait_until
from tests.sanctum.logs import RunLog

SLOT = 3.0
"""Long enough that the second batch surely lands inside the slot of the first redraw."""


def shown_clock(app: SanctumApp) -> str:
    return str(app.query_one(StatusBanner).query_one("#clock", Label).content)


async def test_snapshots_inside_the_slot_make_one_later_redraw_of_the_newest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    log.update(lively(0, kl=0.004))
    app = SanctumApp(path, DEFAULT_THRESHOLDS, now=lambda: log.now, refresh_seconds=SLOT)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")  # the first: at once
        assert shown_clock(app).startswith("update 0")
        log.update(lively(1, kl=0.005))
        log.update(lively(2, kl=0.006))
        waited = 0.0
        while app.snapshot is None or app.snapshot.update != 2:
            assert waited < WAIT_LIMIT, "the reader never delivered update 2"
            await pilot.pause(0.01)
            waited += 0.01
        assert app.display_pending  # current snapshot, screen still on the slot's schedule
        assert shown_clock(app).startswith("update 0")
        await wait_until(pilot, lambda s: s.update == 2, "update 2 on screen")
        assert not app.display_pending
        assert shown_clock(app).startswith("update 2")
    log.close()
