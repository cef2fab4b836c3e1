"""SVG snapshots of the states only ``ppo train`` shows: the quit dialog and TRAINER DOWN.

Same conventions as test_snapshots.py (real writer, frozen clock, relative paths, fixed
size); the trainer is a real child process whose stderr is fixed text.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Label

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.live.trainer_process import TrainerProcess
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets import StatusBanner
from tests.sanctum.app_support import WAIT_LIMIT, wait_until
from tests.sanctum.tui.test_snapshots import HEALTHY_KL, LARGE, LOG, SMALL, SnapCompare, write

STDERR = LOG.parent / "trainer.err"
CRASH = (
    "import sys; print('Traceback (most recent call last):', file=sys.stderr); "
    "print('RuntimeError: the simulator crashed', file=sys.stderr); sys.exit(1)"
)
SLEEP = "import time; time.sleep(120)"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def trainers() -> Iterator[list[TrainerProcess]]:
    """Children started by a test; killed and reaped afterwards."""
    started: list[TrainerProcess] = []
    yield started
    for trainer in started:
        if trainer.poll() is None:
            trainer.process.kill()
        trainer.process.wait(WAIT_LIMIT)


def app_with(code: str, trainers: list[TrainerProcess]) -> SanctumApp:
    log = write(HEALTHY_KL)
    trainer = TrainerProcess.start([sys.executable, "-c", code], stderr_path=STDERR)
    trainers.append(trainer)
    frozen = log.now + 2.0
    return SanctumApp(LOG, DEFAULT_THRESHOLDS, clock=lambda: frozen, trainer=trainer)


def test_quit_dialog_over_a_live_run(
    snap_compare: SnapCompare, trainers: list[TrainerProcess]
) -> None:
    async def settled(pilot: Pilot[None]) -> None:
        await wait_until(pilot, lambda s: s.run.events == 21, "21 events")

    app = app_with(SLEEP, trainers)
    assert snap_compare(app, terminal_size=SMALL, press=["q"], run_before=settled)


def test_trainer_down(snap_compare: SnapCompare, trainers: list[TrainerProcess]) -> None:
    async def down(pilot: Pilot[None]) -> None:
        app = pilot.app
        await wait_until(pilot, lambda s: s.run.events == 21, "21 events")
        banner = app.query_one(StatusBanner).query_one("#connection", Label)
        waited = 0.0
        while str(banner.content) != "✖ TRAINER DOWN":
            assert waited < WAIT_LIMIT, "TRAINER DOWN never showed"
            await pilot.pause(0.05)
            waited += 0.05
        await wait_until(pilot, lambda s: True, "the redraw")

    app = app_with(CRASH, trainers)
    assert snap_compare(app, terminal_size=LARGE, run_before=down)
