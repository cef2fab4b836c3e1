"""Pilot tests of the dashboard running its own trainer process (the ``ppo train`` mode).

The trainer is a real child process (``standin_trainer.py``: the real Recorder, no torch)
so exit codes, SIGINT and stderr are the real thing; the full ``ppo train --tui`` path on
real training is in tests/integration.
"""

from __future__ import annotations

import sys
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Label, Static

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.live.trainer_process import TrainerProcess
from sanctum.model.snapshot import Connection
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets import StatusBanner, TimelinePanel
from sanctum.tui.widgets.quit_dialog import QuitDialog
from telemetry.eventlog import read_events
from telemetry.events import RunFinished
from tests.sanctum.app_support import WAIT_LIMIT, region_lines, wait_until
from tests.sanctum.tui.test_app import drawn
from tests.waiting import settle

STANDIN = Path(__file__).parents[1] / "standin_trainer.py"
SIZE = (120, 36)


def start_trainer(run: Path, mode: str, updates: int = 0) -> TrainerProcess:
    command = [sys.executable, str(STANDIN), str(run / "events.jsonl"), mode, str(updates)]
    return TrainerProcess.start(command, stderr_path=run / "trainer.err")


def banner(app: SanctumApp, part: str) -> str:
    return str(app.query_one(StatusBanner).query_one(f"#{part}", Label).content)


async def wait_for_exit(pilot: Pilot[None]) -> None:
    waited = 0.0
    while pilot.app.return_code is None:
        assert waited < WAIT_LIMIT, "the app never exited"
        await pilot.pause(0.02)
        waited += 0.02


async def test_stop_sends_sigint_and_the_run_records_interrupted(tmp_path: Path) -> None:
    trainer = start_trainer(tmp_path, "forever")
    app = SanctumApp(tmp_path / "events.jsonl", DEFAULT_THRESHOLDS, trainer=trainer)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update is not None and s.update >= 2, "update 2")
        await pilot.press("q")
        assert isinstance(app.screen, QuitDialog)
        await pilot.press("escape")  # cancel: nothing happens
        assert not isinstance(app.screen, QuitDialog) and trainer.poll() is None
        await pilot.press("q", "s")
        await wait_for_exit(pilot)
    assert app.choice == "stop"
    assert app.trainer_exit is not None and app.trainer_exit.code == 130
    assert not app.trainer_exit.down
    last = read_events(tmp_path / "events.jsonl").events[-1]
    assert isinstance(last, RunFinished) and last.payload.status == "interrupted"


async def test_detach_leaves_the_trainer_running(tmp_path: Path) -> None:
    trainer = start_trainer(tmp_path, "forever")
    app = SanctumApp(tmp_path / "events.jsonl", DEFAULT_THRESHOLDS, trainer=trainer)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda s: s.connection is Connection.LIVE, "LIVE")
            await pilot.press("q")
            dialog = app.screen
            assert isinstance(dialog, QuitDialog)
            assert f"sanctum {tmp_path}" in str(dialog.query_one("#quit-text", Static).content)
            await pilot.click("#detach")
            await wait_for_exit(pilot)
        assert app.choice == "detach" and trainer.detached
        assert trainer.poll() is None  # still training after the dashboard is gone
    finally:
        trainer.stop(timeout=WAIT_LIMIT)


async def test_a_dead_trainer_shows_trainer_down_with_its_code_and_stderr(tmp_path: Path) -> None:
    trainer = start_trainer(tmp_path, "crash", updates=3)
    app = SanctumApp(tmp_path / "events.jsonl", DEFAULT_THRESHOLDS, trainer=trainer)
    async with app.run_test(size=SIZE) as pilot:
        waited = 0.0
        while banner(app, "connection") != "✖ TRAINER DOWN":
            assert waited < WAIT_LIMIT, "TRAINER DOWN never showed"
            await pilot.pause(0.05)
            waited += 0.05
        await pilot.pause()
        run_label = app.query_one(StatusBanner).query_one("#run", Label)
        assert str(run_label.content) == (
            "exit code 3: RuntimeError: the stand-in trainer fell over"
        )
        assert run_label.has_class("problem")
        events = drawn(app.query_one(TimelinePanel))
        assert "trainer    trainer process ended (exit code 3); last lines of /" in events
        assert "Traceback (most recent call last):" in events
        await pilot.press("q")  # nothing left to stop: quits without asking
        await wait_for_exit(pilot)
    assert app.choice is None


async def test_a_finished_run_quits_without_asking(tmp_path: Path) -> None:
    trainer = start_trainer(tmp_path, "finish", updates=3)
    app = SanctumApp(tmp_path / "events.jsonl", DEFAULT_THRESHOLDS, trainer=trainer)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.connection is Connection.FINISHED, "FINISHED")
        assert banner(app, "connection") == "■ FINISHED"
        await pilot.press("q")
        await wait_for_exit(pilot)
    assert app.choice is None
    trainer.process.wait(WAIT_LIMIT)
    assert trainer.poll() is not None and not trainer.poll().down  # type: ignore[union-attr]


async def test_the_quit_dialog_closes_itself_when_training_ends_meanwhile(tmp_path: Path) -> None:
    trainer = start_trainer(tmp_path, "until")
    app = SanctumApp(tmp_path / "events.jsonl", DEFAULT_THRESHOLDS, trainer=trainer)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.connection is Connection.LIVE, "LIVE")
        await pilot.press("q")
        assert isinstance(app.screen, QuitDialog)
        (tmp_path / "events.done").touch()  # the run ends on its own, dialog still open
        trainer.process.wait(WAIT_LIMIT)
        waited = 0.0
        while isinstance(app.screen, QuitDialog):
            assert waited < WAIT_LIMIT, "the dialog stayed open after the trainer exited"
            await pilot.pause(0.05)
            waited += 0.05
        assert app.return_code is None  # still showing the final state
        await pilot.press("q")
        await wait_for_exit(pilot)
    assert app.choice is None and app.trainer_exit is not None and app.trainer_exit.code == 0


async def test_before_its_log_exists_the_trainers_own_words_say_what_it_is_doing(
    tmp_path: Path,
) -> None:
    """A token-level run warms up for minutes before it records: the dashboard waiting for
    the log shows the awaited file in full and the trainer's latest line, not a bare
    WAITING (the banner has room only for the start of the path)."""
    say = "import sys, time; print('warm start: 550 supervised steps', flush=True); time.sleep(60)"
    events = tmp_path / "a-long-run-name-that-the-banner-cannot-hold-whole" / "events.jsonl"
    trainer = TrainerProcess.start(
        [sys.executable, "-c", say],
        stderr_path=tmp_path / "trainer.err",
        stdout_path=tmp_path / "trainer.out",
    )
    try:
        app = SanctumApp(events, DEFAULT_THRESHOLDS, trainer=trainer)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(
                pilot,
                lambda a: (
                    a.shown is not None and any("warm start" in e.text for e in a.shown.timeline)
                ),
                "the trainer's words on screen",
                WAIT_LIMIT,
            )
            await pilot.pause()
            shown = region_lines(app, app.query_one(TimelinePanel))  # as the terminal shows
            assert any("trainer    warm start: 550 supervised steps" in line for line in shown)
            waiting = next(line for line in shown if "waiting" in line)
            assert waiting.rstrip().endswith("banner-cannot-hold-whole/events.jsonl"), waiting
    finally:
        trainer.process.kill()
        trainer.process.wait(10)
