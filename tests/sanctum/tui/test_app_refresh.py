"""The screen is redrawn once every ``refresh_seconds`` on average (two frames in a row at
most), one snapshot per frame.

A fast trainer must not cost its dashboard a core: updates written inside the redraw slot
are read when it opens and drawn as one redraw of the newest, and every widget shows the
same snapshot.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Label

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.live.pacing import TICK_SECONDS
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets import StatusBanner
from sanctum.tui.widgets.base import SnapshotView
from tests.sanctum.app_support import WAIT_LIMIT, lively, wait_until
from tests.sanctum.logs import RunLog
from tests.waiting import settle

SLOT = 3.0
"""Long enough that the second batch surely lands inside the slot of the first redraw."""
LONG_SLOT = 60.0
"""Long enough that a clock tick surely falls while a newer snapshot waits for its slot."""
STEADY = {
    "explained_variance": 0.6,
    "entropy": 0.5,
    "entropy_normalized": 0.72,
    "value_loss": 10.0,
    "clip_fraction": 0.1,
}
"""Healthy values that hold for any number of updates (``lively`` drifts out of range)."""


def at_update_0(tmp_path: Path) -> tuple[Path, RunLog]:
    """A live log whose run has recorded its first update."""
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    log.update(lively(0, kl=0.004))
    return path, log


def slots_taken(app: SanctumApp) -> list[float]:
    """Every ``slot`` the app passes to ``feed.taken`` from now on (0: no slot)."""
    slots: list[float] = []
    taken = app.feed.taken

    def spy(slot: float = 0.0) -> None:
        slots.append(slot)
        taken(slot)

    app.feed.taken = spy  # type: ignore[method-assign]
    return slots


def shown_clock(app: SanctumApp) -> str:
    return str(app.query_one(StatusBanner).query_one("#clock", Label).content)


async def test_snapshots_inside_the_slot_make_one_later_redraw_of_the_newest(
    tmp_path: Path,
) -> None:
    path, log = at_update_0(tmp_path)
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now, refresh_seconds=SLOT)
    slots = slots_taken(app)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")  # the first: at once
        assert shown_clock(app).startswith("update 0")
        log.update(lively(1, kl=0.004))
        await wait_until(pilot, lambda s: s.update == 1, "update 1")  # two in a row: at once
        frames = app.frames
        log.update(lively(2, kl=0.005))
        log.update(lively(3, kl=0.006))
        assert app.display_pending  # written, and waiting for the slot's redraw
        await pilot.pause(0.2)  # the reader may not read them before the slot opens
        assert app.feed.folded_update == 1
        assert shown_clock(app).startswith("update 1")
        await wait_until(pilot, lambda s: s.update == 3, "update 3 on screen")
        assert not app.display_pending
        assert shown_clock(app).startswith("update 3")
        assert app.frames == frames + 1  # one redraw, of the newest
    assert SLOT in slots, "an opening slot tells the reader its length (lines may wait)"
    log.close()


async def test_a_paused_app_takes_snapshots_without_a_slot(tmp_path: Path) -> None:
    """Paused, every snapshot is wanted at once: no line may wait for the next one."""
    path, log = at_update_0(tmp_path)
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now, refresh_seconds=0.2)
    slots = slots_taken(app)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        app.action_toggle_pause()
        slots.clear()
        await pilot.pause(0.5)  # the slot of the last frame opens while paused
        log.update(lively(1, kl=0.005))
        log.update(lively(2, kl=0.006))
        await wait_until(pilot, lambda s: s.update == 2, "update 2 taken while paused")
        assert shown_clock(app).startswith("update 0"), "paused: the screen stays"
    assert slots, "the slot opened, and snapshots were taken"
    assert set(slots) == {0.0}
    log.close()


def _on_screen(app: SanctumApp) -> set[int | None]:
    """The update index each widget on screen shows (one element when they agree)."""
    return {v.snapshot.update if v.snapshot else None for v in app.query(SnapshotView)}


async def test_the_clock_tick_never_shows_a_newer_snapshot_than_the_panels(
    tmp_path: Path,
) -> None:
    path, log = at_update_0(tmp_path)
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now, refresh_seconds=LONG_SLOT)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        log.update(lively(1, kl=0.05))
        app.action_toggle_pause()  # paused, every snapshot is taken: update 1 is read
        app.action_toggle_pause()  # and waits for the slot (60 s) to be drawn
        await settle(  # taken by the app (read is not enough: between the reader posting
            # it and the app taking it, nothing is pending on either side)
            pilot,
            lambda a: a.snapshot is not None and a.snapshot.update == 1,
            "update 1 taken",
            WAIT_LIMIT,
            shown=False,
        )
        assert app.display_pending
        await pilot.pause(TICK_SECONDS * 1.5)  # a tick falls while update 1 waits for its slot
        assert app.display_pending
        assert _on_screen(app) == {0}
        assert shown_clock(app).startswith("update 0")
    log.close()


async def test_every_widget_shows_the_same_snapshot_on_a_fast_moving_run(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)  # the default slot
    async with app.run_test(size=(120, 36)) as pilot:
        disagreements, samples, seen = 0, 0, set()
        for update in range(60):  # 20 updates a second for 3 s, across several ticks
            log.update(lively(update, kl=0.004 + 0.0005 * update, **STEADY))
            await pilot.pause(0.05)
            shown = _on_screen(app)
            samples += 1
            disagreements += len(shown) > 1
            seen |= shown
        await wait_until(pilot, lambda s: s.update == 59, "update 59")
        assert disagreements == 0, f"{disagreements} of {samples} samples disagreed"
        assert len(seen - {None}) >= 4  # the screen moved along while sampled
    log.close()
