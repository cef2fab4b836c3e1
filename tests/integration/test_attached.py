"""``ppo train --tui`` on real training: the child trainer, the dashboard, and a second reader.

Each test starts the trainer exactly as ``ppo train --tui`` does (``sanctum.watch_process``
on ``ppo.cli.attach.child_command``: ``python -m ppo train --headless`` in its own session,
through sanctum's ``AttachedProcess``) and drives its SanctumApp with a Pilot instead of
``app.run()``; ``ppo.cli.attach.report`` then says, from the process's outcome, what the
terminal would. A separate pty test runs the real ``ppo train`` command on a terminal.
"""

from __future__ import annotations

import io
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.widgets import Label

from ppo.cli import build_parser
from ppo.cli.attach import STDERR_FILE, STDOUT_FILE, child_command, report
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.live.trainer_process import TrainerProcess
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.snapshot import Connection
from sanctum.tui.app import SanctumApp
from sanctum.tui.attached import AttachedProcess
from sanctum.tui.widgets import StatusBanner
from sanctum.tui.widgets.quit_dialog import QuitDialog
from telemetry.eventlog import EventLogReader, read_events
from telemetry.events import RunFinished
from telemetry.recorder import EVENTS_FILE
from tests.integration.support import WAIT_LIMIT, wait_closed, wait_for

SIZE = (120, 36)
LONG = "10000000"
"""More steps than any test waits for: these runs end by stop, detach or kill."""


@dataclass(frozen=True)
class AttachedRun:
    """A trainer started as ``ppo train --tui`` starts it, and its dashboard (not yet run)."""

    attached: AttachedProcess
    run_path: Path

    @property
    def app(self) -> SanctumApp:
        return self.attached.app

    @property
    def trainer(self) -> TrainerProcess:
        return self.attached.process


Start = Callable[..., AttachedRun]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """Launch ``ppo train --tui ARGV`` as the CLI does; reap every child afterwards."""
    runs: list[AttachedRun] = []

    def launch_run(*argv: str) -> AttachedRun:
        args = build_parser().parse_args(["train", "--tui", "--run-dir", str(tmp_path), *argv])
        run_path = tmp_path / "run"
        attached = AttachedProcess.start(
            child_command(args, "run"),
            run_path / EVENTS_FILE,
            stdout_path=run_path / STDOUT_FILE,
            stderr_path=run_path / STDERR_FILE,
        )
        run = AttachedRun(attached, run_path)
        runs.append(run)
        return run

    yield launch_run
    for run in runs:
        if run.trainer.poll() is None:
            run.trainer.process.kill()
        run.trainer.process.wait(WAIT_LIMIT)


def banner(app: SanctumApp, part: str) -> str:
    return str(app.query_one(StatusBanner).query_one(f"#{part}", Label).content)


def updated(app: SanctumApp) -> bool:
    return app.snapshot is not None and app.snapshot.update is not None


def finish_status(run: AttachedRun) -> str:
    last = read_events(run.run_path / "events.jsonl").events[-1]
    assert isinstance(last, RunFinished)
    return last.payload.status


def reported(run: AttachedRun) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = report(run.attached.outcome(), run.run_path, out, err)
    return code, out.getvalue() + err.getvalue()


@pytest.mark.slow
async def test_tui_run_shows_progress_and_reaches_finished(start: Start) -> None:
    run = start("--total-steps", "40000")
    seen: list[float] = []

    def finished(app: SanctumApp) -> bool:
        if app.snapshot is not None and app.snapshot.run.progress is not None:
            seen.append(app.snapshot.run.progress)
        return app.snapshot is not None and app.snapshot.connection is Connection.FINISHED

    async with run.app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, finished, "FINISHED")
        assert banner(run.app, "connection") == "■ FINISHED"
        assert banner(run.app, "steps").startswith("40,448/40,000 steps")
        assert any(0 < p < 1 for p in seen), seen  # progress was shown on the way
        await pilot.press("q")  # finished: quits without asking
        await wait_closed(pilot)
    assert run.app.choice is None
    run.trainer.process.wait(WAIT_LIMIT)
    code, said = reported(run)
    assert code == 0 and f"check it:  sanctum check {run.run_path}" in said


@pytest.mark.slow
async def test_a_second_reader_tails_the_same_run_to_the_same_end(start: Start) -> None:
    run = start("--total-steps", "30000")
    second = SanctumAggregator(DEFAULT_THRESHOLDS)
    reader = EventLogReader(run.run_path / "events.jsonl")

    def tail() -> None:  # what `sanctum RUN` in another terminal does, minus the screen
        for batch in reader.follow(
            poll_interval=0.02, stop=lambda: second.run.status not in (None, "running")
        ):
            second.handle_batch(batch)

    follower = threading.Thread(target=tail)
    follower.start()
    async with run.app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda a: a.snapshot.connection is Connection.FINISHED, "FINISHED")  # type: ignore[union-attr]
        follower.join(WAIT_LIMIT)
        assert not follower.is_alive()
        mine, theirs = run.app.snapshot, second.snapshot(0.0)
        assert mine is not None
        assert theirs.run.status == mine.run.status == "completed"
        assert theirs.run.events == mine.run.events
        assert theirs.run.global_step == mine.run.global_step == 30208
        assert theirs.update == mine.update
        assert theirs.verdict == mine.verdict
        assert theirs.metric("approx_kl").series == mine.metric("approx_kl").series
        await pilot.press("q")
    assert reader.skipped == []


@pytest.mark.slow
async def test_quit_dialog_stop_saves_a_checkpoint_and_records_interrupted(start: Start) -> None:
    run = start("--total-steps", LONG)
    async with run.app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, updated, "an update")
        await pilot.press("q")
        assert isinstance(run.app.screen, QuitDialog)
        await pilot.press("s")
        await wait_closed(pilot)
    assert run.app.choice == "stop"
    assert finish_status(run) == "interrupted"
    assert (run.run_path / "checkpoints" / "latest.pt").is_file()
    code, said = reported(run)
    assert code == 130
    assert "stopped the trainer (exit code 130)" in said
    assert f"resume with: ppo train --resume {run.run_path}" in said


@pytest.mark.slow
async def test_detach_leaves_training_running_and_the_printed_stop_works(start: Start) -> None:
    run = start("--total-steps", LONG)
    async with run.app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, updated, "an update")
        await pilot.press("q", "d")
        await wait_closed(pilot)
    assert run.app.choice == "detach"
    assert run.trainer.poll() is None  # the dashboard is gone, training is not
    code, said = reported(run)
    assert code == 0 and f"re-attach:  sanctum {run.run_path}" in said
    assert f"kill -INT {run.trainer.pid}" in said
    os.kill(run.trainer.pid, signal.SIGINT)  # what the report tells the user to do
    assert run.trainer.process.wait(WAIT_LIMIT) == 130
    assert finish_status(run) == "interrupted"


@pytest.mark.slow
async def test_bad_env_id_shows_trainer_down_with_exit_code_and_stderr(start: Start) -> None:
    run = start("--env", "NoSuchEnv-v0")
    async with run.app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda a: banner(a, "connection") == "✖ TRAINER DOWN", "DOWN")
        assert banner(run.app, "run").startswith(
            "exit code 2: ppo train: unknown environment id 'NoSuchEnv-v0'"
        )
        await pilot.press("q")
        await wait_closed(pilot)
    code, said = reported(run)
    assert code == 2
    assert "the trainer process died (exit code 2)" in said and "NoSuchEnv-v0" in said


@pytest.mark.slow
async def test_a_trainer_killed_with_sigkill_is_down(start: Start) -> None:
    run = start("--total-steps", LONG)
    async with run.app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, updated, "an update")
        os.kill(run.trainer.pid, signal.SIGKILL)
        await wait_for(pilot, lambda a: banner(a, "connection") == "✖ TRAINER DOWN", "DOWN")
        assert banner(run.app, "run") == "killed by SIGKILL: nothing on stderr"
        assert run.app.snapshot is not None and run.app.snapshot.run.status == "running"
        await pilot.press("q")  # nothing to stop any more: no dialog
        await wait_closed(pilot)
    assert run.app.choice is None
    assert reported(run)[0] == 1


@pytest.mark.slow
async def test_a_run_the_health_gate_halts_under_the_dashboard_says_why(
    start: Start, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[value_loss]\ndirection = "above"\nstatistic = "value"\nwarning = 1e-6\ncritical = 1e-5\n'
    )
    small = ["--set", "num_envs=2", "--set", "num_steps=32", "--set", "hidden_sizes=16"]
    run = start("--total-steps", LONG, *small, "--halt-on", "critical", "--thresholds", str(rules))
    async with run.app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda a: a.snapshot.connection is Connection.FAILED, "FAILED")  # type: ignore[union-attr]
        await pilot.press("q")
        await wait_closed(pilot)
    run.trainer.process.wait(WAIT_LIMIT)
    assert finish_status(run) == "failed"
    code, said = reported(run)
    assert code == 1, said
    assert "ppo train: halted: Value loss critical" in said and "died" not in said
