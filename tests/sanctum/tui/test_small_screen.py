"""Pilot tests of the dashboard at 80x24 and 120x36: the main screen names every rule the
run's verdict fired, nothing on it is cut (a layout that gives way: short metric names,
fact lines and the returns that wrap, the two KL charts one over the other, the rollouts
strip that grows a line), and the KL chart's title says which updates it draws."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual.pilot import Pilot

from sanctum.charts.glyphs import CRITICAL_LINE, WARNING_LINE
from sanctum.formatting import format_value
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.health.thresholds_toml import load_thresholds
from sanctum.metrics import KL_METRIC
from sanctum.model.snapshot import SanctumSnapshot
from sanctum.text.rollouts import figures_at
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets.health_panel import HealthStatusPanel
from sanctum.tui.widgets.kl_chart import (
    MIN_WIDTH,
    POLICY_ALONE_CAPTION,
    POLICY_CAPTION,
    REFERENCE_CAPTION,
    KLChart,
)
from sanctum.tui.widgets.returns import EpisodeReturnPanel
from sanctum.tui.widgets.rollouts_screen import HealthStrip, RolloutsScreen
from telemetry.returns import BEST_ROLLOUT_MEAN
from tests.sanctum.app_support import lively, region_lines, wait_until
from tests.sanctum.logs import RunLog
from tests.sanctum.recorded import RECORDED
from tests.waiting import settle

SIZES = [(80, 24), (120, 36)]
IDS = ["80x24", "120x36"]
UPDATES = 90


def spiked_run(tmp_path: Path) -> Path:
    """90 updates; KL far past the clip's bound at updates 2..7, then flat: the run fails
    on KL (and on the other rules the lively figures trip), the spike long scrolled off."""
    path = tmp_path / "spiked" / "events.jsonl"
    log = RunLog(path, run_id="spiked")
    log.start()
    for u in range(UPDATES):
        spike = 2 <= u <= 7
        log.update(lively(u, 0.5 if spike else 1e-5, clip_fraction=0.0 if spike else 0.1))
    log.finish()
    log.close()
    return path


def token_run(tmp_path: Path) -> Path:
    """The recorded token-level run (reference KL, length and entropy rules, rollouts)."""
    run = tmp_path / "tokens-s1"
    shutil.copytree(RECORDED / "tokens-s1", run)
    return run / "events.jsonl"


def words(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


@asynccontextmanager
async def opened(
    path: Path, size: tuple[int, int]
) -> AsyncIterator[tuple[SanctumApp, Pilot[None]]]:
    """The dashboard of ``path`` at ``size``, once it has read the whole log."""
    app = SanctumApp(path, DEFAULT_THRESHOLDS)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda s: s.run.status != "running", f"{path} read to its end")
        await pilot.pause()
        yield app, pilot


def snapshot_of(app: SanctumApp) -> SanctumSnapshot:
    """The snapshot the dashboard shows (there is one once :func:`opened` yields)."""
    assert app.snapshot is not None
    return app.snapshot


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_a_failed_run_names_every_rule_that_fired_and_the_updates_its_kl_chart_draws(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    async with opened(spiked_run(tmp_path), size) as (app, _):
        verdict = snapshot_of(app).run_verdict
        assert verdict.word == "FAIL" and len(verdict.items) >= 2
        shown = words(region_lines(app, app.query_one(HealthStatusPanel)))
        assert f"fired {', '.join(verdict.items)}" in shown  # the banner shows only the first
        assert "anomalies" in shown  # the last fact line is on screen too
        chart = app.query_one(KLChart)
        bottom = next(line for line in region_lines(app, chart) if "1e-05┤" in line)
        drawn = min(UPDATES, len(bottom.split("┤")[1].rstrip()))  # a column per update
        assert drawn < UPDATES  # the spike at updates 2..7 is not drawn: the title says so
        expected = f"KL · updates {UPDATES - drawn}..{UPDATES - 1} of {UPDATES}"
        assert str(chart.border_title) == expected


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_nothing_on_the_main_screen_of_a_token_run_is_cut(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    async with opened(token_run(tmp_path), size) as (app, _):
        snapshot = snapshot_of(app)
        health = region_lines(app, app.query_one(HealthStatusPanel))
        row_names = {line.split()[0] for line in health if line.strip()}
        for row in app.query_one(HealthStatusPanel).query_one("#health-table").rows:
            if row.display:
                assert row.label in row_names  # completion_truncated_frac
        assert "anomalies" in words(health)
        assert "completion_truncat " not in "\n".join(health)
        returns = region_lines(app, app.query_one(EpisodeReturnPanel))
        best = format_value(snapshot.run.episode_return_best)
        assert f"{BEST_ROLLOUT_MEAN} {best}" in words(returns)
        assert not any(line.rstrip().endswith("…") for line in returns)
        chart = region_lines(app, app.query_one(KLChart))
        if any(POLICY_ALONE_CAPTION in line for line in chart):  # too short for two: one
            plotted = [line for line in chart if "┤" in line or "│" in line]
            assert len(plotted) == len(chart) - 1  # every row under the caption is the chart
            assert not any(REFERENCE_CAPTION in line for line in chart)
            return
        policy = next(line for line in chart if POLICY_CAPTION in line)
        reference = next(line for line in chart if REFERENCE_CAPTION in line)
        if policy is reference:  # side by side: each half wide enough
            left = policy.index(REFERENCE_CAPTION) - policy.index(POLICY_CAPTION)
            assert left >= MIN_WIDTH and len(policy) - left >= MIN_WIDTH
        else:  # one over the other, each the chart's width
            assert chart.index(policy) < chart.index(reference)
            assert len(reference) >= MIN_WIDTH


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_the_trust_region_line_keeps_max_kl_with_its_value(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    path = tmp_path / "healthy" / "events.jsonl"
    log = RunLog(path, run_id="healthy")
    log.start()
    for u, kl in enumerate((4.1e-4, 2.2e-4, 9.7e-5, 6.3e-5, 3.8e-5, 2.1e-5, 1.6e-5, 1.2e-5)):
        log.update(lively(u, kl))
    log.finish()
    log.close()
    async with opened(path, size) as (app, _):
        assert app.snapshot is not None and app.snapshot.max_kl is not None
        facts = region_lines(app, app.query_one(HealthStatusPanel))
        trust = [i for i, line in enumerate(facts) if "trust region" in line]
        assert len(trust) == 1
        assert any(f"max_kl {app.snapshot.max_kl:g}" in f for f in facts)  # on one row


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_the_rollouts_strip_shows_every_figure_whole(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    path = token_run(tmp_path)
    async with opened(path, size) as (app, pilot):
        await pilot.press("r")

        def shown(a: SanctumApp) -> bool:
            screen = a.screen
            return (
                isinstance(screen, RolloutsScreen)
                and screen.query_one(HealthStrip).update_shown is not None
            )

        await settle(pilot, shown, "the rollouts screen with an update", 10.0)
        await pilot.pause()
        strip = app.screen.query_one(HealthStrip)
        lines = region_lines(app, strip)
        assert not any(line.rstrip().endswith("…") for line in lines)
        figures = figures_at(app.snapshot, strip.update_shown)
        assert len(figures) > 4
        for figure, _ in figures:
            assert any(figure in line for line in lines), figure


@pytest.mark.parametrize("size", SIZES, ids=IDS)
@pytest.mark.parametrize("kind", ["classic", "token-level"])
async def test_the_kl_chart_draws_the_lines_of_the_rule_in_force(
    tmp_path: Path, size: tuple[int, int], kind: str
) -> None:
    """Under the default rule (KL per clip fraction) the lines are the KL each update's
    clip fraction allows: drawn in every column that has one, and named in the border."""
    path = spiked_run(tmp_path) if kind == "classic" else token_run(tmp_path)
    async with opened(path, size) as (app, _):
        chart = app.query_one(KLChart)
        plotted = "\n".join(region_lines(app, chart))
        assert WARNING_LINE in plotted and CRITICAL_LINE in plotted
        rule = DEFAULT_THRESHOLDS.rule(KL_METRIC)
        assert rule is not None and rule.per == "clip_fraction"
        named = f"{WARNING_LINE} {rule.warning:g}×clip {CRITICAL_LINE} {rule.critical:g}×clip"
        assert named in (chart.border_subtitle or "")


@pytest.mark.parametrize("kind", ["classic", "token-level"])
async def test_a_language_model_run_shows_reward_per_rollout_not_episode_return(
    tmp_path: Path, kind: str
) -> None:
    """A token-level run's "episodes" are completions, each scored once: its panel says
    reward per rollout and counts completions; a classic run's says episode return."""
    path = spiked_run(tmp_path) if kind == "classic" else token_run(tmp_path)
    async with opened(path, (80, 24)) as (app, _):
        panel = app.query_one(EpisodeReturnPanel)
        shown = words(region_lines(app, panel))
        if kind == "classic":
            assert panel.border_title == "Episode return" and "episodes " in shown
        else:
            assert panel.border_title == "Reward per rollout" and "completions " in shown
            assert "episodes " not in shown


async def test_a_kl_line_turned_off_leaves_the_other_named(tmp_path: Path) -> None:
    """``[approx_kl] critical = false`` (the rule only warns): the chart draws and names the
    warning line alone, and the dashboard stays up."""
    toml = tmp_path / "warn_only.toml"
    toml.write_text("[approx_kl]\ncritical = false\n", encoding="utf-8")
    app = SanctumApp(spiked_run(tmp_path), load_thresholds(toml))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda s: s.run.status != "running", "the run read")
        await pilot.pause()
        subtitle = app.query_one(KLChart).border_subtitle or ""
        assert f"{WARNING_LINE} 5×clip" in subtitle and CRITICAL_LINE not in subtitle
        assert app.return_code is None
