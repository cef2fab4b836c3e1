"""The run table app driven by Pilot: live rows, a run's full view, the overlay, seeds grouped.

The logs are real (the sweep of ``sweep_logs``), one of them still being written while the
app follows it; the app's clock follows that log's clock, so the live runs stay LIVE.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Label

from sanctum.health.thresholds import DEFAULT_THRESHOLDS, Thresholds
from sanctum.live.board_feed import EPISODE_RETURN, OVERLAY_METRICS, Board
from sanctum.text.panels import verdict_line
from sanctum.tui.runs_app import RunsApp, RunScreen
from sanctum.tui.widgets import StatusBanner
from sanctum.tui.widgets.base import SnapshotView
from sanctum.tui.widgets.chart_screen import ChartScreen
from sanctum.tui.widgets.metric_chart import MetricChart
from sanctum.tui.widgets.rollouts_screen import RolloutsScreen
from sanctum.tui.widgets.runs import SAMPLED_NOTE, Frame, OverlayChart, RunTable
from telemetry.rollouts import ROLLOUTS_FILE
from tests.sanctum.app_support import WAIT_LIMIT
from tests.sanctum.logs import RunLog, write_run
from tests.sanctum.sweep_logs import SWEEP, events_in, return_at, start, step, write_sweep
from tests.sanctum.tui.test_rollouts_screen import (
    RUN,
    assert_shows,
    copy_run,
    ends,
    footer_keys,
    rollouts_read,
    strict,
    strip_text,
    text_of,
)

POLL = 0.05
SIZE = (120, 36)


def sweep_with_a_live_run(folder: Path) -> RunLog:
    """The sweep without its first run, which is written up to update 9 and left open."""
    write_sweep(folder, SWEEP[1:])
    run = SWEEP[0]
    log = start(folder / run.run_id / "events.jsonl", run)
    for update in range(10):
        step(log, run, update)
    return log


def app_for(folder: Path, log: RunLog) -> RunsApp:
    return RunsApp(events_in(folder), DEFAULT_THRESHOLDS, now=lambda: log.now + 2.0)


async def wait_for(pilot: Pilot[None], ready: Callable[[RunsApp], bool], what: str) -> RunsApp:
    """Let the app run until ``ready(app)``, then let it repaint."""
    app = pilot.app
    assert isinstance(app, RunsApp)
    waited = 0.0
    while app.board is None or not ready(app):
        assert waited < WAIT_LIMIT, f"the app never showed {what}"
        await pilot.pause(POLL)
        waited += POLL
    await pilot.pause()
    return app


def board_of(app: RunsApp) -> Board:
    """The app's newest board (there is one once ``wait_for`` returned)."""
    assert app.board is not None
    return app.board


def focused_update(app: RunsApp) -> int | None:
    """The latest update of the full snapshot the board holds (None: none)."""
    snapshot = board_of(app).snapshot
    return None if snapshot is None else snapshot.update


def row_of(app: RunsApp, run_id: str) -> str:
    """The table's line of the run ``run_id``."""
    return next(line for line in app.query_one(RunTable).text() if run_id in line)


def live_index(folder: Path) -> int:
    return [p.parent.name for p in events_in(folder)].index(SWEEP[0].run_id)


async def test_the_table_follows_every_run_live(tmp_path: Path) -> None:
    log = sweep_with_a_live_run(tmp_path)
    index = live_index(tmp_path)
    async with app_for(tmp_path, log).run_test(size=SIZE) as pilot:
        app = await wait_for(pilot, lambda a: board_of(a).rows[index].update == 9, "update 9")
        header, *lines = app.query_one(RunTable).text()
        columns = "run status verdict prog update steps/s return worst KL"
        assert header.split() == columns.split()
        assert len(lines) == len(SWEEP)
        assert "● LIVE" in row_of(app, SWEEP[0].run_id) and " u9 " in row_of(app, SWEEP[0].run_id)
        assert "■ FINISHED" in row_of(app, "lr3e-3-s1")
        assert "FAIL: KL" in row_of(app, "lr3e-3-s2")
        for update in (10, 11):
            step(log, SWEEP[0], update)
        await wait_for(pilot, lambda a: board_of(a).rows[index].update == 11, "update 11")
        line = row_of(app, SWEEP[0].run_id)
        assert " u11 " in line and f"{return_at(SWEEP[0], 11):.2f}" in line
    log.close()


async def test_enter_opens_the_run_under_the_cursor_and_escape_comes_back(
    tmp_path: Path,
) -> None:
    log = sweep_with_a_live_run(tmp_path)
    index = live_index(tmp_path)
    async with app_for(tmp_path, log).run_test(size=SIZE) as pilot:
        app = await wait_for(pilot, lambda a: board_of(a).rows[index].update == 9, "update 9")
        await pilot.press(*["down"] * index, "enter")
        assert isinstance(app.screen, RunScreen) and app.screen.index == index
        await wait_for(pilot, lambda a: board_of(a).snapshot is not None, "the run's snapshot")
        run_label = app.screen.query_one(StatusBanner).query_one("#run", Label)
        assert SWEEP[0].run_id in str(run_label.content)
        step(log, SWEEP[0], 10)
        await wait_for(pilot, lambda a: focused_update(a) == 10, "update 10 in the full view")
        shown = {id(view.snapshot) for view in app.screen.query(SnapshotView)}
        assert shown == {id(board_of(app).snapshot)}  # one board on the whole screen
        await pilot.press("escape")
        assert not isinstance(app.screen, RunScreen)
        await wait_for(pilot, lambda a: board_of(a).focus is None, "no run in full view")
        assert app.feed.focus is None
    log.close()


async def test_o_cycles_the_overlay_metric(tmp_path: Path) -> None:
    log = sweep_with_a_live_run(tmp_path)
    async with app_for(tmp_path, log).run_test(size=SIZE) as pilot:
        app = await wait_for(pilot, lambda a: board_of(a).rows[0].update is not None, "a row")
        frame = app.query_one("#overlay-frame", Frame)
        assert frame.border_title == "approx_kl · every run by update"
        assert frame.border_subtitle == "log"  # no lines: KL is judged per clip fraction
        await pilot.press("o")
        await wait_for(pilot, lambda a: board_of(a).metric == EPISODE_RETURN, "the return overlay")
        assert frame.border_title == "episode return · every run by update"
        assert frame.border_subtitle == "linear"
        index = live_index(tmp_path)
        line = board_of(app).lines[index]
        assert [b.value for b in line.buckets] == [return_at(SWEEP[0], u) for u in range(10)]
        chart = app.query_one(OverlayChart).text()
        assert any(SWEEP[0].run_id in row for row in chart)  # the legend names the runs
        await pilot.press(*["o"] * (len(OVERLAY_METRICS) - 1))
        await wait_for(pilot, lambda a: board_of(a).metric == "approx_kl", "KL again")
    log.close()


async def test_g_groups_the_seeds_and_enter_goes_back_to_their_runs(tmp_path: Path) -> None:
    log = sweep_with_a_live_run(tmp_path)
    async with app_for(tmp_path, log).run_test(size=SIZE) as pilot:
        app = await wait_for(pilot, lambda a: all(r.update for r in board_of(a).rows), "every row")
        await pilot.press("g")
        await pilot.pause()
        header, *lines = app.query_one(RunTable).text()
        assert header.split()[:3] == ["group", "n", "status"]
        assert len(lines) == 2
        assert lines[0].split()[1:3] == ["learning_rate=0.003", "2"]
        assert "FAIL 1/2" in lines[0]
        assert lines[1].split()[1:3] == ["learning_rate=0.0003", "3"]
        await pilot.press("down", "enter")  # the healthy group: back to the runs, on its first
        assert not app.grouped
        assert app.cursor == board_of(app).groups[1].members[0]
    log.close()


async def test_keys_of_the_table_do_nothing_over_a_full_view(tmp_path: Path) -> None:
    log = sweep_with_a_live_run(tmp_path)
    async with app_for(tmp_path, log).run_test(size=SIZE) as pilot:
        app = await wait_for(pilot, lambda a: board_of(a).rows[0].update is not None, "a row")
        await pilot.press("enter", "g", "o", "down")
        assert isinstance(app.screen, RunScreen)
        assert (app.grouped, app.cursor, app.feed.metric) == (False, 0, OVERLAY_METRICS[0])
    log.close()


async def test_a_long_table_scrolls_to_keep_the_cursor_in_view(tmp_path: Path) -> None:
    paths = [write_run(tmp_path / f"run-{i:02}" / "events.jsonl", updates=2) for i in range(20)]
    app = RunsApp(paths, DEFAULT_THRESHOLDS, now=lambda: 1e12)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda a: all(r.update == 1 for r in board_of(a).rows), "20 runs")
        table = app.query_one(RunTable)
        shown = table.text()
        assert 2 < len(shown) < 20 and "run-00" in shown[1]  # room for some, from the top
        await pilot.press(*["down"] * 19)
        shown = table.text()
        assert shown[0].split()[0] == "run" and "run-19" in shown[-1]
        assert "run-00" not in "".join(shown)


async def test_c_in_a_full_view_charts_that_run(tmp_path: Path) -> None:
    log = sweep_with_a_live_run(tmp_path)
    index = live_index(tmp_path)
    async with app_for(tmp_path, log).run_test(size=SIZE) as pilot:
        app = await wait_for(pilot, lambda a: board_of(a).rows[index].update == 9, "update 9")
        await pilot.press(*["down"] * index, "enter")
        await wait_for(pilot, lambda a: focused_update(a) == 9, "the run's snapshot")
        await pilot.press("c")
        assert isinstance(app.screen, ChartScreen)
        step(log, SWEEP[0], 10)
        await wait_for(pilot, lambda a: focused_update(a) == 10, "update 10")
        chart = app.screen.query_one(MetricChart).snapshot
        assert chart is not None and chart.run.run_id == SWEEP[0].run_id and chart.update == 10
    log.close()


async def test_an_update_index_going_back_fails_as_a_bug_and_draws_no_point(
    tmp_path: Path,
) -> None:
    """Updates 0, 1, 2, 100, 3: a logging bug. The run's row says so; the overlay (every
    metric) skips the backward point instead of drawing it past its axis."""
    log = sweep_with_a_live_run(tmp_path)
    bad = RunLog(tmp_path / "bad-run" / "events.jsonl")
    bad.start()
    for update in (0, 1, 2, 100, 3):
        bad.update(update)
    bad.close()
    app = RunsApp(events_in(tmp_path), DEFAULT_THRESHOLDS, now=lambda: log.now + 2.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda a: "Bug" in row_of(a, "bad-run"), "FAIL: Bug")
        for _ in OVERLAY_METRICS:  # every overlay draws without an error
            await pilot.press("o")
            await pilot.pause(POLL)
        assert app.is_running and app.return_code is None
    log.close()


async def test_help_lists_the_run_tables_keys_not_the_dashboards(tmp_path: Path) -> None:
    from textual.geometry import Region

    log = sweep_with_a_live_run(tmp_path)
    async with app_for(tmp_path, log).run_test(size=SIZE) as pilot:
        app = await wait_for(pilot, lambda a: bool(board_of(a).rows), "the table")
        await pilot.press("question_mark")
        await pilot.pause()
        widget = app.screen.query_one("#help-text")
        width, height = widget.size
        text = "\n".join(s.text for s in widget.render_lines(Region(0, 0, width, height)))
        assert "group the seeds" in text and "the next metric of the overlay" in text
        assert "pause / resume" not in text  # a key of the one-run dashboard only
        assert "in a run's dashboard: a token-level run's worst and best rollouts" in text
    log.close()


async def test_a_log_it_cannot_follow_is_a_notice_naming_it(
    tmp_path: Path, newer_schema_log: Path
) -> None:
    log = sweep_with_a_live_run(tmp_path)
    paths = [*events_in(tmp_path), newer_schema_log]
    app = RunsApp(paths, DEFAULT_THRESHOLDS, now=lambda: log.now + 2.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda a: bool(a.notices), "a notice")
        text, severity = app.notices[0]
        assert severity == "error"
        assert "schema 2" in text and str(newer_schema_log) in text
    log.close()


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_overlay_draws_a_long_runs_whole_history_from_update_0(
    size: tuple[int, int], tmp_path: Path
) -> None:
    """A run of 5,860 updates, ten times what the dashboard keeps of a series: the overlay
    draws the KL and the episode returns from update 0 to the latest, down-sampled (the
    border says each column spans its updates' values); a short run says nothing."""
    long_run = write_run(tmp_path / "long" / "events.jsonl", updates=5860)
    write_run(tmp_path / "short" / "events.jsonl", updates=12)
    app = RunsApp([long_run], DEFAULT_THRESHOLDS, now=lambda: 0.0)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda a: board_of(a).rows[0].update == 5859, "the run")
        frame = app.query_one("#overlay-frame", Frame)
        for metric in ("approx_kl", EPISODE_RETURN):
            await wait_for(pilot, lambda a, m=metric: board_of(a).metric == m, metric)
            await pilot.pause()
            buckets = board_of(app).lines[0].buckets
            assert (buckets[0].first, buckets[-1].last) == (0, 5859)
            text = app.query_one(OverlayChart).text()
            axis = text[-1].split()
            assert (axis[0], axis[-1]) == ("0", "6000"), text[-1]  # update 0 to past 5,859
            corner = text[-2].index("└")
            plot = [line[corner + 1] for line in text[:-2]]
            assert any(cell != " " for cell in plot), text  # drawn from the left edge
            subtitle = str(frame.border_subtitle)
            assert subtitle.startswith(SAMPLED_NOTE) and "only the last" not in subtitle
            await pilot.press("o")
    short = RunsApp([tmp_path / "short" / "events.jsonl"], DEFAULT_THRESHOLDS, now=lambda: 0.0)
    async with short.run_test(size=size) as pilot:
        await wait_for(pilot, lambda a: board_of(a).rows[0].update is not None, "the run")
        assert short.query_one("#overlay-frame", Frame).border_subtitle == "log"


def plain_and_token_runs(tmp_path: Path, thresholds: Thresholds) -> RunsApp:
    """A run table of two finished runs: a run without rollouts.jsonl (row 0), and the
    recorded token-level run with its rollouts.jsonl (row 1)."""
    plain = write_run(tmp_path / "plain" / "events.jsonl", updates=3)
    tokens = copy_run(tmp_path) / "events.jsonl"
    return RunsApp([plain, tokens], thresholds, now=lambda: 1e12)


async def open_row(pilot: Pilot[None], row: int) -> RunsApp:
    """Every update of both runs read, then the run of ``row`` opened and shown."""
    await wait_for(pilot, lambda a: [r.update for r in board_of(a).rows] == [2, 2], "both runs")
    await pilot.press(*["down"] * row, "enter")
    return await wait_for(
        pilot,
        lambda a: board_of(a).focus == row and board_of(a).snapshot is not None,
        "the run's snapshot",
    )


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_r_in_a_token_level_runs_view_shows_its_rollouts_and_escape_steps_back(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    async with plain_and_token_runs(tmp_path, strict(tmp_path)).run_test(size=size) as pilot:
        app = await open_row(pilot, 1)
        assert isinstance(app.screen, RunScreen)
        assert "Rollouts" in footer_keys(app)
        snapshot = board_of(app).snapshot
        assert snapshot is not None and snapshot.run.status == "completed"
        await pilot.press("r")
        await wait_for(pilot, rollouts_read(36), "36 rollouts on the screen")
        screen = app.screen
        assert isinstance(screen, RolloutsScreen)
        assert screen.feed.path == tmp_path / "tokens-s1" / ROLLOUTS_FILE
        head, body = text_of(screen, "rollouts-head"), text_of(screen, "rollouts-samples")
        assert "rollouts.jsonl: 36 rollouts" in head
        assert "update 2 (3 of 3 kept)  12 rollouts" in head
        worst, best = ends(2)
        assert body.index("worst") < body.index(f"#{worst.id} ") < body.index("best")
        vocab = snapshot.run.config["vocab"]
        assert_shows(body, worst, vocab)
        assert_shows(body, best, vocab)
        strip = strip_text(screen)  # the run's verdict, as its dashboard gives it
        assert f"health: {verdict_line(snapshot)}" in strip
        assert "rules fired: RefKL 2x" in strip and "update 2: RefKL 0.0175" in strip
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RunScreen) and app.screen.index == 1
        await pilot.press("escape")
        await wait_for(pilot, lambda a: board_of(a).focus is None, "the table again")
        assert len(app.screen_stack) == 1


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_r_in_the_view_of_a_run_without_rollouts_gets_a_one_line_notice(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    async with plain_and_token_runs(tmp_path, DEFAULT_THRESHOLDS).run_test(size=size) as pilot:
        app = await open_row(pilot, 0)
        assert isinstance(app.screen, RunScreen)
        assert "Rollouts" not in footer_keys(app) and "Chart" in footer_keys(app)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
        notes = [n.message for n in app._notifications]
        missing = tmp_path / "plain" / ROLLOUTS_FILE
        assert notes == [f"No rollouts: {missing} does not exist (token-level runs write it)."]


async def test_a_runs_view_offers_r_once_its_rollouts_appear(tmp_path: Path) -> None:
    app = plain_and_token_runs(tmp_path, DEFAULT_THRESHOLDS)
    rollouts = tmp_path / "tokens-s1" / ROLLOUTS_FILE
    rollouts.unlink()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_row(pilot, 1)
        assert "Rollouts" not in footer_keys(app)
        shutil.copy(RUN / ROLLOUTS_FILE, rollouts)
        await wait_for(pilot, lambda a: "Rollouts" in footer_keys(a), "the r key")
        await pilot.press("r")
        await wait_for(pilot, rollouts_read(36), "36 rollouts on the screen")
