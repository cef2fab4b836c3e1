"""Pilot tests of the dashboard following real event logs written while it runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.events import AppBlur
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Label, Static
from textual.widgets._footer import FooterKey

from sanctum.health.levels import Level
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.health.thresholds_toml import load_thresholds
from sanctum.model.snapshot import Connection
from sanctum.text.panels import panel_metrics
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets import HealthStatusPanel, HelpScreen, KLChart, MetricTable, StatusBanner
from sanctum.tui.widgets.chart_screen import ChartScreen
from tests.sanctum.app_support import WAIT_LIMIT, lively, wait_until
from tests.sanctum.logs import KL_CRITICAL, KL_HOLDS, T0, RunLog
from tests.waiting import settle

SIZE = (120, 36)


def banner_text(app: SanctumApp, part: str) -> str:
    return str(app.query_one(StatusBanner).query_one(f"#{part}", Label).content)


def drawn(widget: Widget) -> str:
    """Every line the widget draws, including those scrolled out of view."""
    width, height = widget.size
    return "\n".join(strip.text for strip in widget.render_lines(Region(0, 0, width, height)))


def one_update_app(tmp_path: Path) -> SanctumApp:
    """The dashboard over a run of one healthy update."""
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    log.update(lively(0, kl=0.004))
    return SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)


def kl_row_level(app: SanctumApp) -> Level:
    return app.query_one(HealthStatusPanel).row("approx_kl").level


async def test_banner_goes_from_ok_to_fail_as_the_log_grows(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(3):
        log.update(lively(u, kl=0.004 + 0.001 * u))
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == 2, "update 2")
        assert banner_text(app, "now-verdict") == "now OK ·"
        assert banner_text(app, "verdict").strip() == "run OK"
        assert banner_text(app, "connection") == "● LIVE"
        assert kl_row_level(app) is Level.HEALTHY

        last = 3 + KL_HOLDS - 1  # KL is critical once its median of 5 is
        for u in range(3, last + 1):  # written while the app follows
            log.update(
                lively(u, kl=KL_CRITICAL["approx_kl"], clip_fraction=0.0, early_stopped=u == 3)
            )
        await wait_until(pilot, lambda s: s.update == last, f"update {last}")
        assert banner_text(app, "now-verdict") == "now FAIL: KL ·"
        assert banner_text(app, "verdict").strip() == "run FAIL: KL 1x"
        assert banner_text(app, "kl") == "KL 0.5000↑!"  # at the KL rule's decimals
        assert kl_row_level(app) is Level.CRITICAL
        row = app.query_one(HealthStatusPanel).row("approx_kl")
        assert row.value == "med 50.0"  # what the rule judges: KL per clip fraction,
        assert row.label == "KL/clip"  # named for what it is, not approx_kl
        facts = str(app.query_one("#health-facts", Static).content)
        assert "early stops   1, last at update 3" in facts
    log.close()


async def test_waits_politely_for_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "later" / "events.jsonl"
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: T0)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda s: s.connection is Connection.WAITING, "WAITING")
        assert banner_text(app, "run") == f"waiting for {path}…"
        assert banner_text(app, "verdict").strip() == "PENDING"
        assert kl_row_level(app) is Level.PENDING
        assert app.query_one(HealthStatusPanel).row("approx_kl").value == "pending"
        path.parent.mkdir(parents=True)
        log = RunLog(path)
        log.start()
        await wait_until(pilot, lambda s: s.connection is Connection.LIVE, "LIVE")
        assert banner_text(app, "run") == "run-test  CartPole-v1"
        log.close()


async def test_not_measured_is_never_shown_as_a_value(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    log.update(lively(0, kl=0.004, entropy=None))
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        entropy = app.query_one(HealthStatusPanel).row("entropy")
        assert entropy.value == "not measured"
        assert entropy.level is Level.PENDING
        kl_final = app.query_one(HealthStatusPanel).row("kl_final")
        assert kl_final.value == "not measured"
    log.close()


async def test_a_nonfinite_metric_outside_the_table_gets_a_critical_row(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    log.update(lively(0, kl=0.004, advantage_std=float("nan")))
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        await pilot.pause()
        row = app.query_one(HealthStatusPanel).row("advantage_std")
        assert row.level is Level.CRITICAL
        assert row.value == "NaN"
        assert banner_text(app, "now-verdict") == "now FAIL: advantage_std ·"
        assert banner_text(app, "verdict").strip() == "run FAIL: non-finite 1x"
    log.close()


async def test_a_value_out_of_its_possible_range_fails_as_a_bug_without_a_crash(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    log.update(lively(0, kl=0.004, explained_variance=1.05))  # EV cannot exceed 1
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        await pilot.pause()
        assert app.is_running and app.snapshot is not None
        assert "bug" in app.snapshot.health.fired
        assert banner_text(app, "now-verdict").startswith("now FAIL: Bug")
        assert banner_text(app, "verdict").strip() == "run FAIL: Bug 1x"
        with pytest.raises(KeyError):
            app.query_one(HealthStatusPanel).row("bug")
    log.close()


async def test_pause_freezes_the_display_while_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(KL_HOLDS):  # enough for the KL rule's median to judge
        log.update(lively(u, kl=0.004))
    shown, last = KL_HOLDS - 1, 2 * KL_HOLDS - 1
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == shown, f"update {shown}")
        await pilot.press("p")
        assert app.query_one("#paused", Label).display
        for u in range(shown + 1, last + 1):  # KL critical at the last of them
            log.update(lively(u, kl=KL_CRITICAL["approx_kl"], clip_fraction=0.0))
        await wait_until(pilot, lambda s: s.update == last, f"update {last} read while paused")
        assert banner_text(app, "clock").startswith(f"update {shown}"), "the display stays frozen"
        assert kl_row_level(app) is Level.HEALTHY
        await pilot.press("p")
        await pilot.pause()
        assert not app.query_one("#paused", Label).display
        assert banner_text(app, "clock").startswith(f"update {last}")
        assert kl_row_level(app) is Level.CRITICAL
    log.close()


async def test_stale_after_ten_silent_seconds(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    log.update(lively(0, kl=0.004))
    clock = [log.now + 1.0]
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: clock[0])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.connection is Connection.LIVE, "LIVE")
        clock[0] += 11.0  # no event arrives; only the one-second tick can notice
        await wait_until(pilot, lambda s: s.connection is Connection.STALE, "STALE")
        assert banner_text(app, "connection") == "◐ STALE · silent 0:12"
        assert app.query_one("#connection", Label).has_class("connection-stale")
    log.close()


async def test_help_screen_explains_the_metrics_and_closes(tmp_path: Path) -> None:
    app = SanctumApp(tmp_path / "none.jsonl", DEFAULT_THRESHOLDS, clock=lambda: T0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = drawn(app.screen.query_one("#help-text"))
        words = " ".join(text.split())  # the glossary is wrapped to fit
        assert "k3 = (r-1) - log r" in words
        kl = DEFAULT_THRESHOLDS.rule("approx_kl")
        assert kl is not None and kl.describe() in words
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_q_quits(tmp_path: Path) -> None:
    app = SanctumApp(tmp_path / "none.jsonl", DEFAULT_THRESHOLDS, clock=lambda: T0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert app._exit, "the app asked to exit"


async def test_a_thresholds_file_moves_panel_banner_chart_and_help(tmp_path: Path) -> None:
    """The KL rule's lines are per clip fraction, not in the KL chart's nats: the chart
    draws the lines of the reference KL's rule (in nats) beside it, and the file moves them."""
    toml = tmp_path / "strict.toml"
    toml.write_text(
        "[approx_kl]\nwarning = 0.02\ncritical = 0.1\n\n[ref_kl]\nwarning = 0.02\ncritical = 0.04\n"
    )
    strict = load_thresholds(toml)
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    last = KL_HOLDS - 1  # the KL rule's median judges from there
    for u in range(last + 1):  # KL 0.003 per clip fraction 0.08: 0.0375, a warning if strict
        log.update(lively(u, kl=0.003, clip_fraction=0.08, ref_kl=0.01))
    log.close()
    for thresholds, verdict, level in (
        (DEFAULT_THRESHOLDS, "run OK", Level.HEALTHY),
        (strict, "run WARN: KL 1x", Level.WARNING),
    ):
        app = SanctumApp(path, thresholds, clock=lambda: log.now)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda s: s.update == last, f"update {last}")
            assert banner_text(app, "verdict").strip() == verdict
            alarm = "!" if level is Level.WARNING else ""
            assert banner_text(app, "kl") == f"KL 0.0030→{alarm}"  # KL steady
            assert kl_row_level(app) is level
            chart = drawn(app.query_one(KLChart))
            critical = thresholds.rule("ref_kl").critical  # type: ignore[union-attr]
            assert f"{critical:g}┤" in chart  # the line the chart draws is the table's
            await pilot.press("question_mark")
            rules = " ".join(drawn(app.screen.query_one("#help-text")).split())
            for metric in ("approx_kl", "ref_kl"):
                assert thresholds.rule(metric).describe() in rules  # type: ignore[union-attr]


async def test_replay_plays_the_run_back_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(3):
        log.update(lively(u, kl=0.004))
    log.finish()
    log.close()
    app = SanctumApp(path, DEFAULT_THRESHOLDS, replay_speed=50.0)
    async with app.run_test(size=SIZE) as pilot:
        final = await wait_until(pilot, lambda s: s.connection is Connection.FINISHED, "FINISHED")
        assert final.update == 2
        assert banner_text(app, "clock") == "replay ×50  update 2  1:00"
        assert banner_text(app, "connection") == "■ FINISHED"


async def test_an_unusable_log_is_reported_not_crashed_on(newer_schema_log: Path) -> None:
    app = SanctumApp(newer_schema_log, DEFAULT_THRESHOLDS, clock=lambda: T0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda a: bool(a.notices), "a notice", WAIT_LIMIT, shown=False)
        assert len(app.notices) == 1
        text, severity = app.notices[0]
        assert severity == "error"
        assert "schema 2 is newer than the supported schema 1" in text
        await pilot.pause()
        assert banner_text(app, "run") == text, "the banner keeps saying why"
        assert app.is_running


async def test_a_reference_kl_gets_its_row_its_chart_and_its_rule(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(3):
        log.update(lively(u, kl=0.004))
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == 2, "update 2")
        panel = app.query_one(HealthStatusPanel)
        assert not panel.row("ref_kl").display  # no reference in this run: no row
        assert "reference" not in drawn(app.query_one(KLChart))

        for u in range(3, 6):  # the run starts reporting a reference KL, far past critical
            log.update(lively(u, kl=0.004, ref_kl=3.5, ref_kl_coef=0.1))
        await wait_until(pilot, lambda s: s.update == 5, "update 5")
        assert panel.row("ref_kl").display and panel.row("ref_kl").level is Level.CRITICAL
        chart = drawn(app.query_one(KLChart))
        assert "policy  (old ‖ new)" in chart and "reference  (θ ‖ ref)" in chart
        assert "1┤" in chart and "0.6┤" in chart  # the reference rule's lines, on a log axis
        assert banner_text(app, "now-verdict") == "now FAIL: RefKL ·"
        assert banner_text(app, "verdict").strip() == "run FAIL: RefKL 3x"
    log.close()


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_key_hints_show_while_the_app_has_no_focus(
    size: tuple[int, int], tmp_path: Path
) -> None:
    """A browser tab (``sanctum serve``) starts without focus: the keys are listed anyway,
    on the dashboard and on a screen opened before the page is clicked."""
    app = one_update_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        app.post_message(AppBlur())  # what textual's web driver sends first
        await pilot.pause()
        assert not app.app_focus
        app.action_chart()  # not a key press: a key would give the app focus
        await settle(pilot, lambda a: isinstance(a.screen, ChartScreen), "the chart", WAIT_LIMIT)
        await pilot.pause()
        keys = [key.description for key in app.screen.query(FooterKey)]
        assert "Back" in keys or "Quit" in keys, keys
        assert not app.app_focus


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_ev_chart_stops_at_1_and_says_why_the_rule_does_not_judge(
    size: tuple[int, int], tmp_path: Path
) -> None:
    """A solved run (returns nearly constant): EV far below zero, not judged. Its chart's
    axis ends at 1, what EV can be (a rounded step took it to 10), and the chart says why
    the rule does not judge it, as the health panel does."""
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(12):
        ev = 0.9 if u == 11 else -30.0 + 2.6 * u
        log.update(lively(u, kl=0.004, explained_variance=ev, return_std=0.0))
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda s: s.update == 11, "update 11")
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, ChartScreen)
        screen.pick("explained_variance")
        await pilot.pause()
        chart = screen.chart  # its border and padding too: the legend is its last lines
        lines = chart.render_lines(Region(0, 0, *chart.outer_size))
        text = "\n".join(strip.text for strip in lines)
        labels = [line.split("┤")[0].strip("│ ") for line in text.splitlines() if "┤" in line]
        assert labels and max(float(v) for v in labels) <= 1, labels  # the top row: a line
        flat = " ".join(text.split())
        assert "EV not judged: returns nearly constant" in flat, text


@pytest.mark.parametrize(("size", "hidden"), [((80, 24), 4), ((120, 36), 0)])
async def test_a_short_panel_hides_context_rows_not_the_summary_lines(
    size: tuple[int, int], hidden: int, tmp_path: Path
) -> None:
    """At 80x24 the health panel has no room for every row and every fact line: the rows
    no rule judges give way (a line says how many), the ruled rows and the facts (drift,
    trust region, early stops, anomalies) stay inside the panel."""
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start(config={"max_kl": 0.03})
    for u in range(12):
        log.update(lively(u, kl=0.004, early_stopped=u >= 10))
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda s: s.update == 11, "update 11")
        await pilot.pause()
        panel = app.query_one(HealthStatusPanel)
        facts = app.query_one("#health-facts", Static)
        assert facts.region.bottom <= panel.content_region.bottom  # nothing cut
        text = drawn(facts)
        for fact in ("KL drift", "trust region", "early stops   2", "anomalies"):
            assert fact in text, text
        rows = [row for row in app.query_one(MetricTable).rows if row.display]
        shown_only_when_measured = {
            r.metric for r in DEFAULT_THRESHOLDS.rules if r.only_when_measured
        }
        assert {r.metric for r in rows} >= (
            set(DEFAULT_THRESHOLDS.metrics) - shown_only_when_measured
        )
        assert ("more: c charts every metric" in text) == bool(hidden)
        assert len(panel_metrics(DEFAULT_THRESHOLDS)) - len(rows) >= hidden


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_a_narrow_screen_keeps_the_kl_chart_usable_and_the_verdict_and_rate_whole(
    size: tuple[int, int], tmp_path: Path
) -> None:
    """At 80x24 the layout gives way instead of cutting: the health table drops its "last
    10" column so the KL chart keeps 40 columns, and the banner drops the step total and
    count before the verdicts, KL or the rate (a failing run's banner is the longest)."""
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()  # declares total_steps: the banner's longest steps text
    for u in range(12):
        kl, fields = (0.3 + 0.1 * u, {"clip_fraction": 0.0, "early_stopped": True})
        if u < 9:
            kl, fields = 4e-4 / (u + 1), {}
        if u == 11:
            fields["grad_norm"] = float("nan")
        log.update(lively(u, kl, **fields))
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda s: s.update == 11, "update 11")
        await pilot.pause()
        assert app.query_one(KLChart).content_size.width >= 40
        assert app.query_one(MetricTable).compact == (size[0] < 100)
        assert banner_text(app, "verdict").strip() == "run FAIL: KL 1x (+2)"
        assert banner_text(app, "now-verdict") in ("now FAIL: KL (+1) ·", "")
        assert banner_text(app, "kl") == "KL 1.4000↑!"
        assert banner_text(app, "steps").endswith("4,000 sps")
        banner = app.query_one(StatusBanner)
        for part in ("now-verdict", "verdict", "kl", "steps"):
            label = banner.query_one(f"#{part}", Label)
            if label.display:  # drawn whole, inside the screen
                assert label.region.right <= size[0], part
                assert label.content_size.width >= len(str(label.content)), part


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_a_narrow_table_shows_a_pending_rows_note_in_place_of_its_value(
    size: tuple[int, int], tmp_path: Path
) -> None:
    """Without its "last 10" column (80x24), a row in its warm-up says so where its value
    was; a wide table says it in that column."""
    app = one_update_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        await pilot.pause()
        table = app.query_one(MetricTable)
        line = next(ln for ln in drawn(table).splitlines() if "explained_variance" in ln)
        assert "warm-up" in line, line
        assert ("0.200" in line) != table.compact, line  # the raw value: only beside the note


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
async def test_the_spec_preset_levels_the_panel_and_banner_at_its_fixed_kl_lines(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """``--thresholds spec``: KL judged in nats against 0.015 and 0.03, each update on its
    own. Under the line the KL row and the banner are healthy; at 0.02 both warn; at 0.04
    both are critical; the chart draws both lines and labels them on its axis."""
    thresholds = load_thresholds(Path("spec"))
    rule = thresholds.rule("approx_kl")
    assert rule is not None and (rule.warning, rule.critical, rule.per) == (0.015, 0.03, None)
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    log.update(lively(0, kl=0.01))
    app = SanctumApp(path, thresholds, clock=lambda: log.now)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        assert kl_row_level(app) is Level.HEALTHY
        assert banner_text(app, "now-verdict") == "now OK ·"
        row = app.query_one(HealthStatusPanel).row("approx_kl")
        assert (row.label, row.value) == ("approx_kl", "0.0100")  # KL in nats, named so
        log.update(lively(1, kl=0.02))
        await wait_until(pilot, lambda s: s.update == 1, "update 1")
        assert kl_row_level(app) is Level.WARNING
        assert banner_text(app, "now-verdict") == "now WARN: KL ·"
        log.update(lively(2, kl=0.04))
        await wait_until(pilot, lambda s: s.update == 2, "update 2")
        assert kl_row_level(app) is Level.CRITICAL
        assert banner_text(app, "now-verdict") == "now FAIL: KL ·"
        assert banner_text(app, "verdict").strip().startswith("run FAIL: KL 1x")
        chart = drawn(app.query_one(KLChart))
        assert "0.015┤" in chart and "0.03┤" in chart  # both lines, labelled on the axis
    log.close()
