"""The chart screen (``c``): window, zoom and cursor maths, the axis, the picture, the words,
and the screen itself driven by Pilot over real event logs."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from rich.text import Text
from textual.geometry import Region
from textual.widgets import OptionList

from sanctum.charts.scale import Scale, fit, log_refusal, nice_step, rule_lines
from sanctum.charts.window import (
    MIN_SPAN,
    ChartView,
    Window,
    column_spans,
    cursor_to,
    move_cursor,
    pan,
    to_edge,
    whole,
    window_of,
    zoom,
)
from sanctum.charts.zoom import ZoomChart
from sanctum.health.contracts import bounds_of
from sanctum.health.levels import Level, band_of
from sanctum.health.rule import Rule
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.text.chart_words import legend, reading, span_text
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets.chart_screen import ChartScreen, MetricPicker
from sanctum.tui.widgets.metric_chart import MetricChart
from tests import processes
from tests.sanctum.app_support import lively, wait_until
from tests.sanctum.logs import RunLog

UPDATES = tuple(range(100))
KL = DEFAULT_THRESHOLDS.rule("approx_kl")
"""Judges KL per clip fraction: its lines are not in nats, so a chart of KL draws none."""
EV = DEFAULT_THRESHOLDS.rule("explained_variance")
GRAD = DEFAULT_THRESHOLDS.rule("grad_norm")
VALUE_KL = Rule("approx_kl", "KL", "above", 0.04, 0.1, decimals=4, persist=2, far=0.5)
"""A KL rule on the value in nats: the lines and bands a chart of KL draws for such a rule."""
VALUE_KL_TABLE = replace(
    DEFAULT_THRESHOLDS,
    rules=tuple(VALUE_KL if r.metric == "approx_kl" else r for r in DEFAULT_THRESHOLDS.rules),
)
"""The default table with :data:`VALUE_KL` for KL, for the chart screen's bands and lines."""


def view(**fields: object) -> ChartView:
    return ChartView("approx_kl", **fields)  # type: ignore[arg-type]


# ------------------------------------------------------------------ window maths
def test_a_fresh_view_shows_every_update_and_reads_the_newest() -> None:
    assert window_of(view(), UPDATES) == Window(0, 100, 99)
    assert window_of(view(), ()) == Window(0, 0, -1)


def test_zooming_in_at_the_newest_keeps_following_the_run() -> None:
    zoomed = zoom(view(), UPDATES, 2.0)
    assert zoomed == view(span=50)
    assert window_of(zoomed, UPDATES) == Window(50, 100, 99)
    grown = (*UPDATES, 100, 101)  # two more updates arrive: the window moves with them
    assert window_of(zoomed, grown) == Window(52, 102, 101)


def test_zooming_keeps_the_cursor_update_in_place_and_stops_at_the_minimum_span() -> None:
    at_20 = view(cursor=20)
    zoomed = zoom(at_20, UPDATES, 4.0)  # 100 -> 25 updates; the cursor was 20% in
    window = window_of(zoomed, UPDATES)
    assert window.count == 25
    assert UPDATES[window.cursor] == 20
    assert window.start == 20 - round(20 / 99 * 24)
    tight = zoom(zoomed, UPDATES, 100.0)
    assert window_of(tight, UPDATES).count == MIN_SPAN
    assert zoom(tight, UPDATES, 0.001).span is None  # all the way out: everything again


def test_a_pinned_window_stays_on_its_updates_as_the_series_slides() -> None:
    pinned = view(span=10, end=49)
    slid = tuple(range(30, 130))  # the oldest 30 left the kept series
    window = window_of(pinned, slid)
    assert slid[window.start] == 40
    assert slid[window.stop - 1] == 49


def test_pan_moves_a_quarter_window_and_follows_again_at_the_newest() -> None:
    narrow = view(span=20, end=59)
    left = pan(narrow, UPDATES, -1)
    assert left == view(span=20, end=54)
    assert pan(view(span=20, end=0), UPDATES, -1) == view(span=20, end=19)  # clamped
    assert pan(view(span=20, end=97), UPDATES, 1) == view(span=20)  # reached the newest
    assert pan(view(), UPDATES, 1) == view()  # nothing to pan over
    with_cursor = pan(view(span=20, end=59, cursor=45), UPDATES, 1)
    assert with_cursor == view(span=20, end=64, cursor=50)


def test_the_cursor_moves_by_updates_and_drags_the_window_along() -> None:
    narrow = view(span=10, end=49)
    assert move_cursor(narrow, UPDATES, -3) == view(span=10, end=49, cursor=46)
    past_left = move_cursor(view(span=10, end=49, cursor=40), UPDATES, -1)
    assert past_left == view(span=10, end=48, cursor=39)
    assert move_cursor(view(span=10, cursor=95), UPDATES, 10) == view(span=10)  # newest
    assert cursor_to(view(span=10), UPDATES, -5) == view(span=10, end=9, cursor=0)


def test_home_end_and_all() -> None:
    narrow = view(span=10, end=49, cursor=45, log=True)
    assert to_edge(narrow, UPDATES, newest=False) == view(span=10, end=9, cursor=0, log=True)
    assert to_edge(narrow, UPDATES, newest=True) == view(span=10, log=True)
    assert whole(narrow) == view(log=True)


def test_columns_fill_the_plot_with_updates_or_share_them() -> None:
    assert column_spans(3, 6) == [(0, 1), (0, 1), (1, 2), (1, 2), (2, 3), (2, 3)]
    assert column_spans(6, 3) == [(0, 2), (2, 4), (4, 6)]
    assert column_spans(0, 2) == [None, None]
    wide = column_spans(600, 70)  # every update in exactly one column
    assert next(lo for lo, _ in filter(None, wide)) == 0
    assert sum(hi - lo for lo, hi in filter(None, wide)) == 600


def test_the_maths_words_and_picture_load_without_textual() -> None:
    modules = (
        "sanctum.charts.window, sanctum.charts.scale, sanctum.text.chart_words, sanctum.charts.zoom"
    )
    code = f"import sys, {modules}; print('textual' in sys.modules)"
    out = processes.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ the axis
def test_a_linear_axis_fits_the_window_on_a_1_2_5_step() -> None:
    assert nice_step(0.0123) == pytest.approx(0.02)
    assert nice_step(3.0) == pytest.approx(5.0)
    scale = fit([0.55, 0.69, math.nan, math.inf])
    assert scale.bottom == pytest.approx(0.55)
    assert scale.top == pytest.approx(0.7)
    assert fit([2.0, 2.0]) == Scale(1.8, 2.2)
    assert fit([]) == Scale(0.0, 1.0)


def test_a_log_axis_spans_decades_and_takes_in_the_rule_lines() -> None:
    assert fit([2e-5, 3e-3], (0.04, 0.1), log=True) == Scale(1e-5, 0.1, log=True)
    assert fit([2e-5, 0.3], (0.04, 0.1), log=True) == Scale(1e-5, 1.0, log=True)
    assert fit([2e-5, 3e-3], log=True) == Scale(1e-5, 1e-2, log=True)
    assert Scale(1e-5, 1.0, log=True).fraction(1e-3) == pytest.approx(0.4)
    assert Scale(1e-5, 1.0, log=True).fraction(0.0) == -math.inf


def test_a_log_scale_is_refused_for_values_at_or_below_zero() -> None:
    assert log_refusal("approx_kl", [1e-3, None, math.nan], [0, 1, 2]) is None
    refused = log_refusal("policy_loss", [0.01, -0.012], [4, 5])
    assert refused == "no log scale: policy_loss is -0.01200 at update 5"
    assert log_refusal("kl_final", [None, None], [0, 1]) == "no log scale: kl_final is not measured"


def test_rule_lines_are_drawn_in_the_metric_units_only() -> None:
    assert rule_lines(VALUE_KL) == (0.04, 0.1)
    assert EV is not None and EV.critical is None
    assert rule_lines(EV) == (EV.warning, None)  # the median is in the metric's units
    assert rule_lines(GRAD) == (None, None)  # a jump's thresholds are ratios
    assert rule_lines(KL) == (None, None)  # KL per clip fraction: not in nats
    assert rule_lines(None) == (None, None)


# ------------------------------------------------------------------ the picture
def sample_chart(cursor: int | None = 2) -> ZoomChart:
    values = [0.01, 0.03, 0.05, 0.12, math.nan, math.inf, None, 0.02]
    return ZoomChart(
        values=values,
        updates=range(10, 18),
        levels=[band_of(VALUE_KL, v, 10 + i) for i, v in enumerate(values)],
        scale=Scale(0.0, 0.15),
        height=7,
        cursor=cursor,
        warning=0.04,
        critical=0.1,
    )


def test_the_chart_draws_bars_lines_and_every_non_finite_value() -> None:
    assert [line.plain for line in sample_chart().lines(21)] == [
        "0.15┤          ▲▲    ",
        " 0.1┤━━━━━━██━━━━━━━━",
        "    │      ██        ",
        "0.04┤┄┄┄┄▅▅██┄┄┄┄┄┄┄┄",
        "   0┤▃▃██████××    ▅▅",
        "    └────────────────",
        "     10 12         17",
    ]  # 0.01 0.03 0.05 0.12 NaN +Inf (not measured) 0.02, two columns each


def styles_at_line(line: Text, column: int) -> list[str]:
    return [str(s.style) for s in line.spans if s.start <= column < s.end]


def styles_at(chart: ZoomChart, row: int, column: int) -> list[str]:
    return styles_at_line(chart.lines(21)[row], column)


def test_bars_take_the_colour_of_their_band_and_the_cursor_is_a_band_behind_them() -> None:
    chart = sample_chart()
    assert styles_at(chart, 4, 5) == ["green"]  # 0.01
    assert styles_at(chart, 3, 9) == ["yellow on grey30"]  # 0.05 under the cursor
    assert styles_at(chart, 1, 11) == ["red"]  # 0.12
    assert styles_at(chart, 4, 13) == ["red"]  # NaN is critical
    assert styles_at(sample_chart(cursor=None), 3, 9) == ["yellow"]


def test_a_click_finds_the_update_under_the_pointer() -> None:
    chart = sample_chart()
    assert chart.offset_at(5, 21) == 0
    assert chart.offset_at(11, 21) == 3
    assert chart.offset_at(2, 21) is None  # on the labels


def test_a_wide_window_draws_each_column_as_the_envelope_of_its_updates() -> None:
    values = [0.2, 0.9, 0.5, 0.5]
    chart = ZoomChart(values, range(4), [Level.HEALTHY] * 4, Scale(0.0, 1.0), height=4)
    lines = chart.lines(4)  # two updates a column: 0.2 and 0.9, then 0.5 and 0.5
    assert [line.plain for line in lines[:2]] == ["1┤▆ ", "0┤██"]
    assert styles_at_line(lines[1], 2) == ["dim green"]  # above 0.2, below 0.9: faint
    assert styles_at_line(lines[1], 3) == ["green"]


# ------------------------------------------------------------------ the words
def test_the_cursor_reads_the_update_the_value_and_its_band() -> None:
    assert reading(VALUE_KL, "approx_kl", 57, 0.0523) == (
        "update 57 · approx_kl 0.0523 · warning band (> 0.04)"
    )
    critical = "update 3 · approx_kl 0.2000 · critical band (> 0.1)"
    assert reading(VALUE_KL, "approx_kl", 3, 0.2) == critical
    assert reading(VALUE_KL, "approx_kl", 3, 0.001) == "update 3 · approx_kl 0.0010 · healthy band"
    nan = "update 6 · approx_kl NaN · critical: non-finite"
    assert reading(VALUE_KL, "approx_kl", 6, math.nan) == nan
    assert reading(KL, "approx_kl", 6, math.nan) == nan
    assert reading(KL, "approx_kl", 3, 0.2) == "update 3 · approx_kl 0.2000"  # no band in nats
    assert band_of(KL, 0.2, 3) is Level.HEALTHY  # its rule judges KL per clip fraction
    assert reading(None, "value_loss", 2, 12.5) == "update 2 · value_loss 12.50"
    assert reading(None, "kl_final", 2, None) == "update 2 · kl_final not measured"
    assert reading(EV, "explained_variance", 4, 0.3) == "update 4 · explained_variance 0.300"
    assert band_of(EV, -0.9, 40) is Level.HEALTHY  # its rule judges the median, not a value


def test_the_window_and_the_legend_in_words() -> None:
    assert span_text(Window(40, 80, 79), UPDATES, 100) == "updates 40..79 of 100"
    assert span_text(Window(0, 2, 1), (700, 701), 1300) == "updates 700..701 of 1300 (last 2 kept)"
    linear = Scale(0.0, 0.02)
    assert legend(VALUE_KL, linear, [0.01, math.nan], 1) == (
        "┄ warning 0.04 (above the axis)  ━ critical 0.1 (above the axis)  × NaN"
    )
    assert legend(KL, linear, [0.01, math.nan], 1) == (
        "KL judges approx_kl per clip_fraction, not these values  × NaN"
    )
    assert legend(GRAD, linear, [1.0], 3) == (
        "Grad judges the jump over the median of 20  "
        "3 updates a column: solid to the lowest, faint to the highest"
    )


# ------------------------------------------------------------------ the screen
SIZE = (100, 30)
LONG = 60
"""Updates in the Pilot tests' run."""


def kl_of(update: int) -> float:
    """A distinct, exactly written KL for every update (the cursor must read this one)."""
    return round(0.001 + 0.0001 * update, 6)


def write_long_run(path: Path, updates: int = LONG) -> RunLog:
    log = RunLog(path)
    log.start()
    for u in range(updates):
        log.update(lively(u, kl_of(u), policy_loss=-0.01 if u == 7 else 0.02))
    return log


def chart_of(app: SanctumApp) -> MetricChart:
    assert isinstance(app.screen, ChartScreen)
    return app.screen.query_one(MetricChart)


def chart_text(app: SanctumApp) -> str:
    """Every line the chart draws, its border included."""
    chart = chart_of(app)
    lines = chart.render_lines(Region(0, 0, *chart.outer_size))
    return "\n".join(strip.text for strip in lines)


async def test_c_opens_the_chart_and_the_keys_zoom_pan_and_move_the_cursor(
    tmp_path: Path,
) -> None:
    log = write_long_run(tmp_path / "events.jsonl")
    app = SanctumApp(log.path, VALUE_KL_TABLE, clock=lambda: log.now)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == LONG - 1, "the last update")
        await pilot.press("c")
        chart = chart_of(app)
        assert chart.border_title == f"approx_kl · updates 0..{LONG - 1} of {LONG} · linear"
        assert f"update {LONG - 1} · approx_kl {kl_of(LONG - 1):.4f} · healthy band" in (
            chart_text(app)
        )
        await pilot.press("plus", "plus")  # 60 -> 30 -> 15 updates, at the newest
        assert chart.border_title == f"approx_kl · updates 45..{LONG - 1} of {LONG} · linear"
        await pilot.press("left")  # a quarter of 15 older
        assert chart.border_title == f"approx_kl · updates 42..56 of {LONG} · linear"
        await pilot.press(*["left_square_bracket"] * 20)  # the cursor drags the window along
        assert chart.border_title == f"approx_kl · updates 36..50 of {LONG} · linear"
        assert f"update 36 · approx_kl {kl_of(36):.4f} · healthy band" in chart_text(app)
        await pilot.press("minus", "0")
        assert chart.border_title == f"approx_kl · updates 0..{LONG - 1} of {LONG} · linear"
        await pilot.press("escape")
        assert not isinstance(app.screen, ChartScreen)
    log.close()


async def test_the_chart_follows_a_live_run_with_the_dashboard(tmp_path: Path) -> None:
    log = write_long_run(tmp_path / "events.jsonl", updates=20)
    app = SanctumApp(log.path, VALUE_KL_TABLE, clock=lambda: log.now, refresh_seconds=0.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == 19, "update 19")
        await pilot.press("c", "plus")
        log.update(lively(20, 0.07))  # past the warning line, written while the chart is open
        await wait_until(pilot, lambda s: s.update == 20, "update 20")
        await pilot.pause()
        chart = chart_of(app)
        assert chart.border_title == "approx_kl · updates 11..20 of 21 · linear"
        assert "update 20 · approx_kl 0.0700 · warning band (> 0.04)" in chart_text(app)
    log.close()


async def test_the_metric_list_the_log_scale_and_its_refusal(tmp_path: Path) -> None:
    log = write_long_run(tmp_path / "events.jsonl")
    app = SanctumApp(log.path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == LONG - 1, "the last update")
        await pilot.press("c", "l")
        chart = chart_of(app)
        assert chart.view.log
        assert str(chart.border_title).endswith("· log")
        await pilot.press("m")
        assert isinstance(app.screen, MetricPicker)
        listing = app.screen.query_one(OptionList)
        assert listing.highlighted == listing.get_option_index("approx_kl")
        listing.highlighted = listing.get_option_index("policy_loss")
        await pilot.press("enter")
        chart = chart_of(app)
        assert chart.view.metric == "policy_loss"
        assert not chart.view.log  # policy_loss went below zero at update 7
        notes = [n.message for n in app._notifications]
        assert "no log scale: policy_loss is -0.01000 at update 7: linear scale" in notes
        await pilot.press("l")
        assert not chart.view.log
        await pilot.press("0", *["left_square_bracket"] * (LONG - 1 - 7))
        assert "update 7 · policy_loss -0.01000" in chart_text(app)
    log.close()


async def test_a_click_puts_the_cursor_on_the_update_under_the_pointer(tmp_path: Path) -> None:
    log = write_long_run(tmp_path / "events.jsonl")
    app = SanctumApp(log.path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == LONG - 1, "the last update")
        await pilot.press("c")
        chart = chart_of(app)
        x = next(x for x in range(chart.content_size.width) if chart.position_at(x) == 10)
        inside = chart.content_region.offset - chart.region.offset
        await pilot.click(MetricChart, offset=(inside.x + x, inside.y + 3))
        assert chart.view.cursor == 10
        assert f"update 10 · approx_kl {kl_of(10):.4f}" in chart_text(app)
        await pilot.click(MetricChart, offset=(inside.x, inside.y + 3))  # on the labels
        assert chart.view.cursor == 10
    log.close()


async def test_the_chart_waits_for_the_first_update_without_failing(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "events.jsonl")
    log.start()
    app = SanctumApp(log.path, VALUE_KL_TABLE, clock=lambda: log.now, refresh_seconds=0.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.run.events == 1, "run_started")
        await pilot.press("c", "plus", "left", "left_square_bracket", "l", "m", "escape", "0")
        chart = chart_of(app)
        assert "no update yet" in chart_text(app)
        assert not chart.view.log
        log.update(lively(0, 0.002))
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        await pilot.pause()
        assert "update 0 · approx_kl 0.0020 · healthy band" in chart_text(app)
    log.close()


def test_an_axis_stops_at_what_the_metric_can_be() -> None:
    """EV is at most 1 (its contract): a 1-2-5 step from -30 would reach 10. A bound the
    values break (a logging bug) does not hide them; a log axis keeps its decades."""
    ev = bounds_of("explained_variance")
    assert ev == (None, 1.0)
    assert fit([-30.0, 0.9], bounds=ev) == Scale(-30.0, 1.0)
    assert fit([-30.0, 0.9]).top == 10.0  # what the step alone gives
    assert fit([-30.0, 1.5], bounds=ev).top == 10.0  # past the bound: shown, not cut
    assert fit([0.02, 0.97], bounds=bounds_of("clip_fraction")) == Scale(0.0, 1.0)
    assert fit([0.001, 0.3], log=True, bounds=(0.0, 1.0)) == Scale(0.001, 1.0, log=True)


async def test_finite_extremes_are_drawn_in_the_dashboard_and_its_chart(tmp_path: Path) -> None:
    """Finite values of +-1e308 in one series (their difference is past float's range) used
    to end ``--once`` and the dashboard with ``cannot convert float NaN to integer``."""
    log = RunLog(tmp_path / "events.jsonl")
    log.start()
    for u, value in enumerate([1e308, -1e308, 1.7e308, 5.0, -1.7e308, 1e308]):
        log.update(u, approx_kl=value, grad_norm=abs(value), value_loss=-value)
    log.finish()
    app = SanctumApp(log.path, DEFAULT_THRESHOLDS, clock=lambda: log.now)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda s: s.update == 5, "the last update")
        await pilot.press("c")
        assert "approx_kl" in chart_text(app)
        await pilot.press("escape")
        assert app.return_code is None  # still running: nothing raised
    log.close()
