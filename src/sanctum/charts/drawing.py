"""Pure drawing for the Sanctum dashboard with Rich: styled cells and the KL chart.

Drawing lives apart from the widgets so every picture is tested to an exact
string without an app. Nothing here decides health: callers pass thresholds and a colouring
function built from the one rule table. A sparkline auto-scales and so cannot show a
threshold; :class:`ThresholdChart` draws on a *fixed* scale with the warning and critical
lines, which is why both exist. Non-finite values are always drawn, never dropped: ``NaN``
and ``±Inf`` are spelled out, and a chart marks them in the critical style. Numbers are
spelled by :mod:`sanctum.formatting`, the same module the text reports use; the glyphs,
the sparkline and the progress bar are :mod:`sanctum.charts.glyphs`'.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar, Final, TypeVar, cast

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.text import Text

from sanctum.charts.glyphs import (
    BELOW_MARK,
    CLIPPED_MARK,
    CRITICAL_LINE,
    NONFINITE_MARK,
    WARNING_LINE,
    bar_blocks,
)
from sanctum.charts.scale import decade_label, log_label
from sanctum.formatting import format_value

MAX_DECADE: Final = math.floor(math.log10(sys.float_info.max))
"""The highest power of ten a float holds (1e308): a log axis tops out there."""


@dataclass(frozen=True)
class ChartStyles:
    """Styles of a :class:`ThresholdChart`; the widget fills them from its CSS."""

    healthy: Style | str = "green"
    warning: Style | str = "yellow"
    critical: Style | str = "red"
    axis: Style | str = "dim"


LOG_FLOOR: Final = 1e-10
"""The lowest a log-scale chart reaches; smaller values sit on its bottom row."""


StyledText = TypeVar("StyledText", bound="tuple[str, Style | str]")


def style_spans(cells: Sequence[StyledText]) -> list[StyledText]:
    """Neighbouring cells of one style joined into one piece of text: a chart row is a few
    styled spans, not one segment per cell, which is what makes it cheap to draw."""
    spans: list[StyledText] = []
    texts: list[str] = []
    style: object = None
    for cell in cells:
        if spans and (cell[1] is style or cell[1] == style):  # one style object: no __eq__
            texts.append(cell[0])
            continue
        if len(texts) > 1:
            spans[-1] = cast(StyledText, ("".join(texts), style))
        spans.append(cell)
        texts, style = [cell[0]], cell[1]
    if len(texts) > 1:
        spans[-1] = cast(StyledText, ("".join(texts), style))
    return spans


Cell = tuple[str, "Style | str"]
"""One character cell of a chart and its style."""
MEMO_LIMIT = 4096
"""Columns a chart's memo keeps before it starts over."""


@dataclass(frozen=True)
class ThresholdChart:
    """One column per value (newest at the right) on a fixed scale, up to ``top``.

    The warning and critical thresholds are drawn as horizontal lines (``┄`` and ``━``)
    behind the bars and labelled on the axis. On the linear scale (from 0) ``top`` defaults
    to 1.5 times the highest threshold, so the critical line sits at two thirds of the
    height. On the ``log`` scale, for a metric that spans decades such as KL (a healthy
    1e-5 and a dangerous 0.1 both readable), the axis runs from the decade below the
    smallest value (at least two decades under the lowest threshold, at most down to
    :data:`LOG_FLOOR`) to the decade above three times the highest threshold, labelled at
    both ends. Values above ``top`` (and +Inf) end in :data:`CLIPPED_MARK`, NaN is
    :data:`NONFINITE_MARK` on the bottom row, negative values are :data:`BELOW_MARK`.
    ``level_of`` (keyword, required) names the level of a value to colour its bar. A short
    history is drawn with bars up to :attr:`MAX_BAR_WIDTH` cells wide so it does not hide
    in a corner.
    """

    MAX_BAR_WIDTH: ClassVar[int] = 3

    values: Sequence[float]
    warning: float | None
    critical: float | None
    height: int
    width: int | None = None
    top: float | None = None
    decimals: int | None = 3
    """Decimals of the axis labels (None: 4 significant digits)."""
    level_of: Callable[[float], str] = field(kw_only=True)
    """The level of a value (``healthy``, ``warning`` or ``critical``) from the rule table;
    required, because only the rule knows which way is worse."""
    styles: ChartStyles = field(default_factory=ChartStyles)
    log: bool = False
    """A logarithmic scale (positive values only; others sit below it)."""
    warning_at: Sequence[float | None] | None = None
    """Per value (aligned with ``values``), a warning line that moves with the update, for
    a rule judged per another metric: KL per clip fraction draws warning x that update's
    clip fraction. None in it: no line in that column. Such lines are drawn in their
    columns, not labelled on the axis (the caller names them)."""
    critical_at: Sequence[float | None] | None = None
    """Per value, the moving critical line (see ``warning_at``)."""
    memo: dict[tuple[float, float, float, int], list[Cell | None]] | None = field(
        default=None, compare=False
    )
    """Columns already drawn, kept by the caller between frames (a live chart draws the
    same values again each frame, shifted by one); valid for one rule and one set of
    styles."""

    @property
    def _thresholds(self) -> list[float]:
        moving = [*(self.warning_at or ()), *(self.critical_at or ())]
        lines = (self.warning, self.critical, *moving)
        return [t for t in lines if t is not None and math.isfinite(t) and t > 0]

    @property
    def scale_top(self) -> float:
        """Value at the top edge of the plot."""
        if self.top is not None:
            return self.top
        thresholds = self._thresholds
        if self.log:
            if thresholds:
                highest = 3 * max(thresholds)
            else:  # no lines in the metric's units: the scale follows the values
                finite = [v for v in self.values if math.isfinite(v) and v > 0]
                highest = max(finite, default=0.1)
            exponent = math.ceil(math.log10(highest))  # 309 for 1.7e308: past float's range
            return 10.0**exponent if exponent <= MAX_DECADE else sys.float_info.max
        return 1.5 * max(thresholds) if thresholds else 1.0

    @cached_property
    def scale_bottom(self) -> float:
        """Value at the bottom edge of a log-scale plot."""
        lowest_line = min(self._thresholds, default=self.scale_top)
        ceiling = 10 ** (math.floor(math.log10(lowest_line)) - 2)
        positive = [v for v in self.values if math.isfinite(v) and v > 0]
        smallest = min(positive, default=ceiling)
        return float(max(LOG_FLOOR, min(ceiling, 10 ** math.floor(math.log10(smallest)))))

    def _fraction(self, value: float, top: float) -> float:
        """Where ``value`` sits between the bottom (0) and the top (1) of the plot."""
        if not self.log:
            return value / top
        if value <= 0:
            return 0.0
        low = math.log10(self.scale_bottom)
        return (math.log10(value) - low) / (math.log10(top) - low)

    def lines(self, width: int) -> list[Text]:
        """The chart as ``height`` lines of exactly ``width`` cells."""
        lines = []
        for row in self.rows(width):
            line = Text(end="")
            for text, style in row:
                line.append(text, style)
            lines.append(line)
        return lines

    def rows(self, width: int) -> list[list[tuple[str, Style | str]]]:
        """The chart as ``height`` rows of styled spans, exactly ``width`` cells each (what
        :meth:`lines` holds, for a widget that draws strips without Rich)."""
        top = self.scale_top
        labels = self._labels(top)
        label_width = max(len(label) for label in labels.values())
        plot_width = self._plot_width(width, labels)
        shown = list(self.values[-plot_width:]) if plot_width else []
        bar = max(1, min(self.MAX_BAR_WIDTH, plot_width // max(1, len(shown))))
        bars = [self._column(v, top) for v in shown for _ in range(bar)]
        columns = [None] * (plot_width - len(bars)) + bars
        rule_rows = self._rule_rows(self.warning, self.critical, top)
        moving = self._moving_rows(len(shown), bar, plot_width, top)
        rows = []
        for row in range(self.height):
            from_bottom = self.height - 1 - row
            axis = f"{labels.get(row, ''):>{label_width}}" + ("┤" if row in labels else "│")
            background = rule_rows.get(from_bottom, (" ", ""))
            if moving is None:
                cells = [(column and column[from_bottom]) or background for column in columns]
            else:
                cells = [
                    (column and column[from_bottom]) or lines.get(from_bottom, background)
                    for column, lines in zip(columns, moving, strict=True)
                ]
            rows.append([(axis, self.styles.axis), *style_spans(cells)])
        return rows

    def _moving_rows(
        self, shown: int, bar: int, plot_width: int, top: float
    ) -> list[dict[int, Cell]] | None:
        """Per plot column, the cells of its moving lines (None when the chart has none)."""
        if self.warning_at is None and self.critical_at is None:
            return None
        start = len(self.values) - shown
        per_value = [
            self._rule_rows(
                None if self.warning_at is None else self.warning_at[start + i],
                None if self.critical_at is None else self.critical_at[start + i],
                top,
            )
            for i in range(shown)
        ]
        blank: dict[int, Cell] = {}
        return [blank] * (plot_width - shown * bar) + [
            lines for lines in per_value for _ in range(bar)
        ]

    def drawn(self, width: int) -> int:
        """How many of the values (the newest) :meth:`rows` draws at ``width`` cells."""
        return min(len(self.values), self._plot_width(width, self._labels(self.scale_top)))

    @staticmethod
    def _plot_width(width: int, labels: dict[int, str]) -> int:
        """Cells right of the axis: ``width`` less the widest label and the axis line."""
        return max(0, width - max(len(label) for label in labels.values()) - 1)

    def _labels(self, top: float) -> dict[int, str]:
        """Axis label per row from the top: the bottom, the top, on a log scale each power
        of ten between them whose row has no label on it or beside it, then thresholds
        (which win)."""
        if self.log:
            labels = {self.height - 1: decade_label(self.scale_bottom), 0: decade_label(top)}
            low, high = round(math.log10(self.scale_bottom)), round(math.log10(top))
            for exponent in range(high - 1, low, -1):
                row = self._row_of(10.0**exponent, top)
                if row is None:
                    continue
                at = self.height - 1 - row
                if all(abs(at - taken) > 1 for taken in labels):
                    labels[at] = decade_label(10.0**exponent)
        else:
            labels = {self.height - 1: format_value(0.0, self.decimals)}
            labels[0] = format_value(top, self.decimals)
        for threshold, row in self._line_rows(self.warning, self.critical, top):  # short labels
            shown = log_label(threshold) if self.log else format_value(threshold, self.decimals)
            labels[self.height - 1 - row] = shown
        return labels

    def _line_rows(
        self, warning: float | None, critical: float | None, top: float
    ) -> list[tuple[float, int]]:
        """(threshold, row from the bottom) of the lines on the plot, warning first. Two
        lines that fall in one row are drawn a row apart, the lower value below, so both
        stay visible and labelled on a short chart."""
        placed = [
            (t, row)
            for t in (warning, critical)
            if t is not None and (row := self._row_of(t, top)) is not None
        ]
        if len(placed) == 2 and placed[0][1] == placed[1][1]:
            (low, row), (high, _) = sorted(placed)
            if row > 0:
                placed = [(low, row - 1), (high, row)]
            elif row < self.height - 1:
                placed = [(low, row), (high, row + 1)]
            placed.sort(key=lambda p: p[0] != warning)
        return placed

    def _row_of(self, value: float | None, top: float) -> int | None:
        """Row, counted from the bottom, whose band holds ``value``; None when off the plot."""
        if value is None or not 0 <= value <= top or self.height <= 0:
            return None
        if self.log and value < self.scale_bottom:
            return None
        return min(self.height - 1, math.floor(self._fraction(value, top) * self.height))

    def _rule_rows(
        self, warning: float | None, critical: float | None, top: float
    ) -> dict[int, Cell]:
        rows: dict[int, Cell] = {}
        for threshold, row in self._line_rows(warning, critical, top):
            is_warning = threshold == warning and threshold != critical
            rows[row] = (
                (WARNING_LINE, self.styles.warning)
                if is_warning
                else (CRITICAL_LINE, self.styles.critical)
            )
        return rows

    def _style_for(self, value: float) -> Style | str:
        if not math.isfinite(value):
            return self.styles.critical
        level = self.level_of(value)
        style: Style | str = getattr(self.styles, level, self.styles.healthy)
        return style

    def _column(self, value: float, top: float) -> list[Cell | None]:
        """Cells of one value from the bottom; None where the background shows."""
        key = (value, top, self.scale_bottom if self.log else 0.0, self.height)
        memo = self.memo
        if memo is not None and (drawn := memo.get(key)) is not None:
            return drawn
        cells = self._draw_column(value, top)
        if memo is not None:
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            memo[key] = cells
        return cells

    def _draw_column(self, value: float, top: float) -> list[Cell | None]:
        style = self._style_for(value)
        cells: list[Cell | None] = [None] * self.height
        if math.isnan(value):
            cells[0] = (NONFINITE_MARK, style)
            return cells
        if value < 0:
            cells[0] = (BELOW_MARK, style)
            return cells
        total = self.height * 8
        if value >= top:
            eighths = total
        else:
            eighths = max(1 if value > 0 else 0, round(self._fraction(value, top) * total))
        for from_bottom, block in enumerate(bar_blocks(eighths, self.height)):
            if block is not None:
                cells[from_bottom] = (block, style)
        if value > top:
            cells[-1] = (CLIPPED_MARK, style)
        return cells

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text("\n", end="").join(self.lines(self.width or options.max_width))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = self.width or options.max_width
        return Measurement(width, width)
