"""Pure drawing of the zoomable metric chart: a window of updates, its axis, its cursor.

A Rich renderable, tested to an exact string like the dashboard's other pictures. Each
value is a bar from the bottom of the fitted axis (eighth blocks, and at least one eighth
for any finite value, so the lowest value of the window stays visible). When the window
holds more updates than the plot has columns, a column draws several neighbouring updates
as an envelope: solid up to the lowest of them, faint up to the highest, coloured by the
worst level among them, so a spike is never averaged away. Non-finite values are marks,
never gaps: ``×`` NaN and ``▼`` -Inf on the bottom row, ``▲`` +Inf on the top row (and
``▼`` for a value at or below zero on a log axis). The cursor is a highlighted band over
the update it reads; the rows under the plot are the axis and the update indices. What a
value means (its level) is the caller's: the chart only colours by the levels it is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.text import Text

from sanctum.charts import glyphs
from sanctum.charts.drawing import style_spans
from sanctum.charts.scale import Scale, fit, rule_lines
from sanctum.charts.window import ChartView, column_spans, window_of
from sanctum.health.contracts import bounds_of
from sanctum.health.levels import Level, band_of
from sanctum.model.snapshot import SanctumSnapshot

Cell = tuple[str, Style]


@dataclass(frozen=True)
class ZoomStyles:
    """Styles of a :class:`ZoomChart`; the widget fills them from its CSS."""

    pending: Style = field(default_factory=lambda: Style(color="grey50"))
    healthy: Style = field(default_factory=lambda: Style(color="green"))
    warning: Style = field(default_factory=lambda: Style(color="yellow"))
    critical: Style = field(default_factory=lambda: Style(color="red"))
    axis: Style = field(default_factory=lambda: Style(dim=True))
    cursor: Style = field(default_factory=lambda: Style(bgcolor="grey30"))

    def of(self, level: Level) -> Style:
        """The style of a bar at ``level``."""
        style: Style = getattr(self, level.value)
        return style


def _place(row: list[str], text: str, at: int) -> bool:
    """Write ``text`` into ``row`` from ``at`` when it fits on blanks with a blank on
    either side; whether it did."""
    if len(text) > len(row):
        return False
    at = max(0, min(at, len(row) - len(text)))
    if any(c != " " for c in row[max(0, at - 1) : at + len(text) + 1]):
        return False
    row[at : at + len(text)] = text
    return True


@dataclass(frozen=True)
class Rows:
    """Lines drawn as they are (a widget that gets a bare ``Text`` may re-wrap it and drop
    the leading blanks that right-align the axis labels)."""

    lines: Sequence[Text]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text("\n", end="").join(self.lines)


@dataclass(frozen=True)
class ZoomChart:
    """The window's ``values`` (None: not measured), one bar per update, on ``scale``."""

    values: Sequence[float | None]
    updates: Sequence[int]
    """Update index of each value."""
    levels: Sequence[Level]
    """Level of each value, from the rule table (the caller judges; the chart colours)."""
    scale: Scale
    height: int
    cursor: int | None = None
    """Offset in the window of the update the cursor reads."""
    warning: float | None = None
    critical: float | None = None
    width: int | None = None
    styles: ZoomStyles = field(default_factory=ZoomStyles)

    @property
    def plot_height(self) -> int:
        return max(1, self.height - glyphs.AXIS_ROWS)

    def label_width(self) -> int:
        """Cells of the value labels left of the axis."""
        return max(len(text) for text in self._labels().values())

    def spans(self, width: int) -> list[tuple[int, int] | None]:
        """The window offsets each plot column draws (``column_spans``)."""
        return column_spans(len(self.values), max(0, width - self.label_width() - 1))

    def offset_at(self, x: int, width: int) -> int | None:
        """The offset of the update drawn at cell ``x`` of a ``width``-cell chart (a click);
        None left of the plot or on a blank column."""
        spans = self.spans(width)
        column = x - self.label_width() - 1
        span = spans[column] if 0 <= column < len(spans) else None
        return None if span is None else span[0]

    def lines(self, width: int) -> list[Text]:
        """The chart as ``height`` lines of exactly ``width`` cells."""
        labels = self._labels()
        label_width = self.label_width()
        spans = self.spans(width)
        columns = [self._column(span) for span in spans]
        on_cursor = [self._on_cursor(span) for span in spans]
        rules = self._rule_rows()
        axis = self.styles.axis
        lines = []
        for from_bottom in reversed(range(self.plot_height)):
            label = labels.get(from_bottom)
            cells: list[Cell] = [
                (f"{label or '':>{label_width}}", axis),
                ("┤" if label else "│", axis),
            ]
            background = rules.get(from_bottom, (" ", Style()))
            for column, cursor in zip(columns, on_cursor, strict=True):
                text, style = (column and column[from_bottom]) or background
                cells.append((text, style + self.styles.cursor if cursor else style))
            lines.append(self._join(cells))
        lines.append(self._join([(" " * label_width + "└" + "─" * len(spans), axis)]))
        lines.append(self._join([(" " * (label_width + 1) + self._indices(spans), axis)]))
        return lines[: self.height]

    @staticmethod
    def _join(cells: Sequence[Cell]) -> Text:
        line = Text(end="", no_wrap=True)
        for text, style in style_spans(cells):
            line.append(text, style)
        return line

    def _labels(self) -> dict[int, str]:
        """Axis label per row from the bottom; the rule's lines win their rows."""
        labels = {row: f"{value:.4g}" for row, (value, _) in self._rule_rows_with_values().items()}
        for rank, value in enumerate(self.scale.ticks()):
            row = self._row_of(value)
            if row is None:
                continue
            near = {row} if rank < 2 else {row - 1, row, row + 1}  # the ends may touch a line
            if not labels.keys() & near:
                labels[row] = self.scale.label(value)
        return labels

    def _row_of(self, value: float) -> int | None:
        """Row from the bottom whose band holds ``value``; None off the axis."""
        fraction = self.scale.fraction(value)
        if not 0 <= fraction <= 1:
            return None
        return min(self.plot_height - 1, math.floor(fraction * self.plot_height))

    def _rule_rows_with_values(self) -> dict[int, tuple[float, Cell]]:
        """The rule's lines on the axis: row -> (threshold, cell); critical wins a row."""
        rows: dict[int, tuple[float, Cell]] = {}
        for value, cell in (
            (self.warning, (glyphs.WARNING_LINE, self.styles.warning)),
            (self.critical, (glyphs.CRITICAL_LINE, self.styles.critical)),
        ):
            row = None if value is None else self._row_of(value)
            if value is not None and row is not None:
                rows[row] = (value, cell)
        return rows

    def _rule_rows(self) -> dict[int, Cell]:
        return {row: cell for row, (_, cell) in self._rule_rows_with_values().items()}

    def _on_cursor(self, span: tuple[int, int] | None) -> bool:
        return span is not None and self.cursor is not None and span[0] <= self.cursor < span[1]

    def _eighths(self, value: float) -> int:
        total = self.plot_height * 8
        return max(1, min(total, round(self.scale.fraction(value) * total)))

    def _column(self, span: tuple[int, int] | None) -> list[Cell | None] | None:
        """Cells of one column from the bottom (None: background), or None when blank."""
        if span is None:
            return None
        values = [v for v in self.values[span[0] : span[1]] if v is not None]
        if not values:
            return None
        style = self.styles.of(max(self.levels[span[0] : span[1]]))
        faint = style + Style(dim=True)
        cells: list[Cell | None] = [None] * self.plot_height
        points = [v for v in values if math.isfinite(v) and not (self.scale.log and v <= 0)]
        if points:
            low = glyphs.bar_blocks(self._eighths(min(points)), self.plot_height)
            high = glyphs.bar_blocks(self._eighths(max(points)), self.plot_height)
            for row, (block, low_block) in enumerate(zip(high, low, strict=True)):
                if block is not None:  # solid where every value in the column reaches
                    cells[row] = (block, style if block == low_block else faint)
        if any(v == math.inf for v in values):
            cells[-1] = (glyphs.CLIPPED_MARK, style)
        if any(math.isnan(v) for v in values):
            cells[0] = (glyphs.NONFINITE_MARK, style)
        elif any(v == -math.inf or (self.scale.log and v <= 0) for v in values):
            cells[0] = (glyphs.BELOW_MARK, style)
        return cells

    def _indices(self, spans: Sequence[tuple[int, int] | None]) -> str:
        """The update index under the first and the last column, and under the cursor."""
        row = [" "] * len(spans)
        used = [i for i, span in enumerate(spans) if span is not None]
        if not used:
            return ""
        first, last = used[0], used[-1]
        _place(row, str(self.updates[0]), first)
        last_text = str(self.updates[-1])
        _place(row, last_text, last - len(last_text) + 1)
        if self.cursor is not None:
            columns = [i for i in used if self._on_cursor(spans[i])]
            text = str(self.updates[self.cursor])
            if columns and text not in (str(self.updates[0]), last_text):
                _place(row, text, (columns[0] + columns[-1]) // 2 - len(text) // 2)
        return "".join(row)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Rows(self.lines(self.width or options.max_width))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = self.width or options.max_width
        return Measurement(width, width)


def chart_for(
    snapshot: SanctumSnapshot, view: ChartView, height: int, styles: ZoomStyles
) -> ZoomChart:
    """The chart of ``view`` over ``snapshot``'s series, ``height`` lines tall."""
    updates = snapshot.series_updates
    window = window_of(view, updates)
    rule = snapshot.thresholds.rule(view.metric)
    series = snapshot.metric(view.metric).series[window.start : window.stop]
    shown = updates[window.start : window.stop]
    warning, critical = rule_lines(rule)
    finite = (v for v in series if v is not None)
    return ZoomChart(
        values=series,
        updates=shown,
        levels=[band_of(rule, v, u) for v, u in zip(series, shown, strict=True)],
        scale=fit(finite, (warning, critical), log=view.log, bounds=bounds_of(view.metric)),
        height=height,
        cursor=window.cursor - window.start if window.count else None,
        warning=warning,
        critical=critical,
        styles=styles,
    )
