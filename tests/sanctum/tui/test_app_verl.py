"""The dashboard following a verl job: its file logger's lines shown as verl writes them."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Label

from sanctum.health.rules import DEFAULT_THRESHOLDS
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets import StatusBanner
from tests.sanctum.app_support import wait_until
from tests.telemetry.integrations.verl_logs import FileLogger, grpo_step

SIZE = (120, 36)


async def test_each_line_verl_appends_is_shown(tmp_path: Path) -> None:
    path = tmp_path / "qwen_grpo.jsonl"
    logger = FileLogger(path)
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
    logger.finish()


async def test_a_dashboard_started_before_the_job_reads_verls_file_once_it_appears(
    tmp_path: Path,
) -> None:
    path = tmp_path / "exp.jsonl"
    app = SanctumApp(path, DEFAULT_THRESHOLDS)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.run.run_id is None, "waiting for the file")
        logger = FileLogger(path)  # verl's Tracking opens it when the trainer starts
        logger.log(grpo_step(1), step=1)
        snapshot = await wait_until(pilot, lambda s: s.update == 0, "update 0")
        assert (snapshot.run.run_id, snapshot.run.trainer, snapshot.run.skipped_lines) == (
            "exp",
            "verl",
            0,
        )
        logger.finish()
