"""The dashboard's drawing, tested to exact strings (STYLE 17)."""

from __future__ import annotations

import math

import pytest
from rich.console import Console
from rich.style import Style

from sanctum.charts.drawing import ChartStyles, ThresholdChart
from sanctum.charts.glyphs import ARROWS, progress_bar, sparkline
from sanctum.health.levels import level_of
from sanctum.health.rule import Rule
from sanctum.model.trend import trend_of

NAN = math.nan
INF = math.inf


def render(renderable: object, width: int) -> str:
    console = Console(width=width, color_system=None, legacy_windows=False, record=True)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize(
    ("values", "arrow"),
    [
        ([], " "),
        ([1.0], " "),
        ([NAN, 1.0], " "),  # one finite value has no direction
        ([1.0, 2.0], "↑"),
        ([2.0, 1.0], "↓"),
        ([-1.0, -2.0], "↓"),
        ([0.0, 0.0], "→"),
        ([0.389 + 0.003 * i for i in range(6)], "↑"),  # a slow but steady climb
        ([1.0, 3.0, 1.0, 3.0, 1.0, 3.0], "→"),  # rise 0.86 of a spread of 2: noise
        ([1.0, 3.0, 1.0, 3.0, 1.0, 3.0, 5.0], "↑"),  # rise 2.6 of a spread of 4
        ([1.0, 2.0, NAN], "↑"),  # a NaN is skipped, not a direction
        ([0.2, 0.2 + 1e-12], "→"),  # float jitter
    ],
)
def test_trend_arrow(values: list[float], arrow: str) -> None:
    assert ARROWS[trend_of(values)] == arrow


def test_sparkline_scales_pads_and_marks_nonfinite() -> None:
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7], 8) == "▁▂▃▄▅▆▇█"
    assert sparkline([1.0, 3.0], 5) == "   ▁█"
    assert sparkline([2.0, 2.0, 2.0], 3) == "▄▄▄"
    assert sparkline([0.0, NAN, 1.0, INF], 4) == "▁×█×"
    assert sparkline(list(range(20)), 4) == "▁▃▆█"  # only the newest 4, rescaled
    assert sparkline([], 3) == "   "


def test_progress_bar_in_eighths() -> None:
    assert progress_bar(0.0, 4) == "░░░░"
    assert progress_bar(0.5, 4) == "██░░"
    assert progress_bar(0.33, 4) == "█▍░░"  # 10.56 eighths -> 11
    assert progress_bar(1.7, 4) == "████"
    assert progress_bar(None, 3) == "░░░"


KL_VALUES = [0.001, 0.005, 0.014, 0.016, 0.029, 0.031, 0.05, NAN, INF, -0.01, 0.0]
KL_RULE = Rule("approx_kl", "KL", "above", 0.015, 0.03)


def kl_level(value: float) -> str:
    """How the KL chart widget colours a bar: the rule table's level, past warm-up."""
    return level_of(KL_RULE, value, 0).value


def test_threshold_chart_draws_lines_labels_and_marks() -> None:
    chart = ThresholdChart(KL_VALUES, warning=0.015, critical=0.03, height=6, level_of=kl_level)
    assert render(chart, 20).splitlines() == [
        "0.045┤         ▲ ▲  ",
        "0.030┤━━━━━━━━▁█━█━━",
        "     │       ▇██ █  ",
        "0.015┤┄┄┄┄┄┄▁███┄█┄┄",
        "     │     ▇████ █  ",
        "0.000┤   ▁▅█████×█▼ ",
    ]


def test_threshold_chart_keeps_the_newest_values_and_a_fixed_scale() -> None:
    chart = ThresholdChart(
        [0.0001] * 30 + [0.02], warning=0.015, critical=0.03, height=4, level_of=kl_level
    )
    lines = render(chart, 12).splitlines()
    assert lines == [
        "0.045┤      ",
        "0.030┤━━━━━━",  # the scale does not shrink to fit small values
        "0.015┤┄┄┄┄┄▆",  # 0.02 is 14.2 of 32 eighths
        "0.000┤▁▁▁▁▁█",
    ]


def test_threshold_chart_widens_and_right_aligns_a_short_history() -> None:
    chart = ThresholdChart(
        [0.01, 0.5], warning=1.0, critical=2.0, height=4, top=4.0, decimals=1, level_of=kl_level
    )
    assert render(chart, 8).splitlines() == [
        "4.0┤    ",
        "2.0┤━━━━",
        "1.0┤┄┄┄┄",
        "0.0┤▁▁▄▄",  # two values get two cells each; a tiny one still shows one eighth
    ]
    wide = ThresholdChart(
        [0.5], warning=1.0, critical=2.0, height=4, top=4.0, decimals=1, level_of=kl_level
    )
    assert render(wide, 10).splitlines()[-1] == "0.0┤   ▄▄▄", "bars are at most 3 cells wide"


def test_threshold_chart_colours_bars_by_level() -> None:
    styles = ChartStyles(healthy="green", warning="yellow", critical="red", axis="")
    chart = ThresholdChart(
        [0.01, 0.02, 0.04],
        warning=0.015,
        critical=0.03,
        height=2,
        width=9,
        styles=styles,
        level_of=kl_level,
    )
    bottom = chart.lines(9)[-1]
    styled = [(bottom.plain[s.start : s.end], s.style) for s in bottom.spans if s.style]
    assert styled[-3:] == [("▄", "green"), ("▇", "yellow"), ("█", "red")]


def test_threshold_chart_colours_a_below_rule_by_its_direction() -> None:
    ev = Rule("explained_variance", "EV", "below", 0.3, 0.0)
    styles = ChartStyles(healthy="green", warning="yellow", critical="red", axis="")
    chart = ThresholdChart(
        [0.9, 0.2, 0.05],
        warning=0.3,
        critical=0.0,
        height=1,
        width=9,
        top=1.0,
        decimals=1,
        styles=styles,
        level_of=lambda value: level_of(ev, value, 0).value,
    )
    line = chart.lines(9)[0]
    by_cell = [next((s.style for s in line.spans if s.start <= i < s.end), "") for i in range(9)]
    assert by_cell[-3:] == ["green", "yellow", "yellow"]
    with pytest.raises(TypeError, match="level_of"):  # no colouring that guesses "above"
        ThresholdChart([0.9], warning=0.3, critical=0.0, height=1)  # type: ignore[call-arg]


def test_threshold_chart_uses_a_given_level_function() -> None:
    chart = ThresholdChart(
        [0.001],
        warning=0.015,
        critical=0.03,
        height=1,
        level_of=lambda value: "critical",
        styles=ChartStyles(critical=Style(color="red")),
    )
    last = chart.lines(7)[0].spans[-1]
    assert last.style == Style(color="red")


def test_log_scale_chart_shows_a_healthy_1e5_and_a_critical_value_with_both_lines() -> None:
    values = [1e-5, 2e-5, 0.2, 0.05, 0.0, NAN, -0.01]
    chart = ThresholdChart(
        values, warning=0.04, critical=0.1, height=7, decimals=4, level_of=kl_level, log=True
    )
    assert chart.scale_top == 1.0 and chart.scale_bottom == 1e-5
    assert render(chart, 20).splitlines() == [
        "    1┤              ",
        "  0.1┤━━━━██▁▁━━━━━━",  # the lines share a row at this height: drawn a row apart
        " 0.04┤┄┄┄┄████┄┄┄┄┄┄",  # as short as the decades beside them
        "     │    ████      ",
        "0.001┤    ████      ",  # a decade with a row free of labels beside it
        "     │    ████      ",
        "1e-05┤▁▁▃▃████  ××▼▼",  # 1e-5 and 2e-5 readable; 0 is below any log scale
    ]


def test_log_scale_reaches_down_to_the_smallest_value_but_not_forever() -> None:
    deep = ThresholdChart([3e-9], warning=0.04, critical=0.1, height=4, level_of=kl_level, log=True)
    assert deep.scale_bottom == 1e-9
    floor = ThresholdChart(
        [1e-30], warning=0.04, critical=0.1, height=4, level_of=kl_level, log=True
    )
    assert floor.scale_bottom == 1e-10
    shallow = ThresholdChart(
        [0.02], warning=0.04, critical=0.1, height=4, level_of=kl_level, log=True
    )
    assert shallow.scale_bottom == 1e-4  # at least two decades under the warning line


def test_a_log_chart_labels_each_decade_it_has_room_for() -> None:
    """A KL chart from 1e-5 to 0.1 with no line in nats: a label at each power of ten
    that has a row free of labels beside it, written as the zoomable chart writes it."""
    values = [1e-5, 3e-4, 0.002, 0.05]
    chart = ThresholdChart(values, None, None, height=13, level_of=kl_level, log=True)
    labels = [row.split("┤")[0].strip() for row in render(chart, 30).splitlines() if "┤" in row]
    assert labels == ["0.1", "0.01", "0.001", "1e-04", "1e-05"]


def test_moving_lines_are_drawn_in_their_own_columns_and_not_labelled() -> None:
    """A rule per another metric (KL per clip fraction) implies a line in KL's units that
    moves with each update: each column draws its own, the axis labels only decades."""
    chart = ThresholdChart(
        [1e-4, 1e-4, 1e-4],
        warning=None,
        critical=None,
        warning_at=[0.001, 0.01, None],  # the last update: no line (not measured)
        critical_at=[0.01, 0.1, None],
        height=4,
        log=True,
        level_of=lambda v: "healthy",
    )
    lines = render(chart, 9).splitlines()
    assert lines == [  # 1e-5 (two decades under the lowest line) to 1 (3 x 0.1, rounded up)
        "    1┤ ━ ",
        "     │━┄ ",
        "     │┄  ",
        "1e-05┤▆▆▆",
    ]


def test_moving_lines_follow_the_newest_values_a_chart_keeps() -> None:
    values = [1e-4] * 6
    chart = ThresholdChart(
        values,
        warning=None,
        critical=None,
        warning_at=[None] * 5 + [0.01],
        critical_at=None,
        height=3,
        log=True,
        level_of=lambda v: "healthy",
    )
    rows = render(chart, 8).splitlines()  # the newest 2 of 6 values shown
    assert rows == ["  0.1┤ ┄", "     │  ", "1e-04┤▁▁"]
