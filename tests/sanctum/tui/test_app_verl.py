"""The dashboard and the run table following verl jobs: their file logger lines shown as
verl writes them."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Label

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.tui.app import SanctumApp
from sanctum.tui.runs_app import RunsApp
from sanctum.tui.widgets import StatusBanner
from tests.sanctum.app_support import wait_until
from tests.sanctum.tui.test_runs_app import wait_for
from tests.telemetry.integrations.verl_logs import FileLogger, grpo_step, write_verl_run

SIZE = (120, 36)


async def test_each_line_verl_appends_is_shown(tmp_path: Path) -> None:
    path = tmp_path / "qwen_grpo.jsonl"
    with FileLogger(path) as logger:
        for step in (1, 2, 3):
            logger.log(grpo_step(step), step=step)
        app = SanctumApp(path, DEFAULT_THRESHOLDS)
        async with app.run_test(size=SIZE) as pilot:
            snapshot = await wait_until(pilot, lambda s: s.update == 2, "update 2")
            assert snapshot.run.run_id == "qwen_grpo"
            assert snapshot.run.trainer == "verl"
            logger.log(grpo_step(4), step=4)  # verl's next step, written while the app follows
            await wait_until(pilot, lambda s: s.update == 3, "update 3")
            clock = str(app.query_one(StatusBanner).query_one("#clock", Label).content)
            assert clock.startswith("update 3  ")  # what the banner draws


async def test_a_dashboard_started_before_the_job_reads_verls_file_once_it_appears(
    tmp_path: Path,
) -> None:
    path = tmp_path / "exp.jsonl"
    app = SanctumApp(path, DEFAULT_THRESHOLDS)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.run.run_id is None, "waiting for the file")
        with FileLogger(path) as logger:  # verl's Tracking opens it when the trainer starts
            logger.log(grpo_step(1), step=1)
            snapshot = await wait_until(pilot, lambda s: s.update == 0, "update 0")
        run = snapshot.run
        assert (run.run_id, run.trainer, run.skipped_lines) == ("exp", "verl", 0)


async def test_the_run_table_follows_verl_jobs(tmp_path: Path) -> None:
    healthy = write_verl_run(tmp_path / "healthy.jsonl", 4)
    path = tmp_path / "broken.jsonl"
    with FileLogger(path) as logger:
        for step in (1, 2):
            logger.log(grpo_step(step), step=step)
        app = RunsApp([healthy, path], DEFAULT_THRESHOLDS)
        async with app.run_test(size=SIZE) as pilot:
            both = {"healthy.jsonl": 3, "broken.jsonl": 1}
            await wait_for(pilot, lambda a: rows_of(a) == both, "both runs")
            logger.log(grpo_step(3, **{"actor/grad_norm": float("nan")}), step=3)
            await wait_for(pilot, lambda a: rows_of(a)["broken.jsonl"] == 2, "update 2")
            assert app.board is not None
            broken = next(row for row in app.board.rows if row.label == "broken.jsonl")
            assert broken.verdict.word == "FAIL"


def rows_of(app: RunsApp) -> dict[str, int | None]:
    """Each row's label and latest update, as the run table has them."""
    assert app.board is not None
    return {row.label: row.update for row in app.board.rows}
