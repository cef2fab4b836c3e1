"""MetricChart: one metric over the updates the snapshot keeps, zoomable, with a cursor.

The widget holds only the user's :class:`~sanctum.charts.window.ChartView` (metric, window,
cursor, scale) and draws the snapshot through it: the picture is
:func:`sanctum.charts.zoom.chart_for`, the words are :mod:`sanctum.text.chart_words`. The border
title names the metric, the window (``updates 40..79 of 120``) and the scale; under the
plot, the cursor's reading and the legend. A click puts the cursor on the update under
the pointer, the wheel zooms around the cursor.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text
from textual import events
from textual.reactive import reactive

from sanctum.charts.window import ZOOM_FACTOR, ChartView, cursor_to, window_of, zoom
from sanctum.charts.zoom import Rows, ZoomChart, ZoomStyles, chart_for
from sanctum.metrics import KL_METRIC
from sanctum.model.snapshot import SanctumSnapshot
from sanctum.text.chart_words import legend, reading, span_text
from sanctum.tui.widgets.base import SnapshotView

LEGEND_LINES = 2
"""At most this many lines of legend under the reading."""
MIN_PLOT_LINES = 4


class MetricChart(SnapshotView):
    """The zoomable chart of ``view.metric``; set ``view`` to zoom, pan or move the cursor."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "metricchart--pending",
        "metricchart--healthy",
        "metricchart--warning",
        "metricchart--critical",
        "metricchart--axis",
        "metricchart--cursor",
    }

    view: reactive[ChartView] = reactive(ChartView(KL_METRIC), always_update=True)

    def watch_view(self, view: ChartView) -> None:
        if self.snapshot is not None:
            self.show(self.snapshot)

    @property
    def updates(self) -> tuple[int, ...]:
        """Update indices of the series on screen (empty before a snapshot)."""
        return () if self.snapshot is None else self.snapshot.series_updates

    def show(self, snapshot: SanctumSnapshot) -> None:
        window = window_of(self.view, snapshot.series_updates)
        scale = "log" if self.view.log else "linear"
        spans = span_text(window, snapshot.series_updates, snapshot.run.updates)
        self.border_title = f"{self.view.metric} · {spans} · {scale}"
        self.refresh()

    def _styles(self) -> ZoomStyles:
        def style(name: str) -> Style:
            return self.get_component_rich_style(f"metricchart--{name}")

        return ZoomStyles(
            pending=style("pending"),
            healthy=style("healthy"),
            warning=style("warning"),
            critical=style("critical"),
            axis=style("axis"),
            cursor=Style(bgcolor=style("cursor").bgcolor),  # a band behind whatever is drawn
        )

    def _layout(self, snapshot: SanctumSnapshot) -> tuple[ZoomChart, list[Text]]:
        """The chart at the height left under it by the reading and the legend lines."""
        width = max(1, self.content_size.width)
        styles = self._styles()
        probe = chart_for(snapshot, self.view, MIN_PLOT_LINES, styles)
        per = max((hi - lo for lo, hi in filter(None, probe.spans(width))), default=1)
        rule = snapshot.thresholds.rule(self.view.metric)
        note = snapshot.metric(self.view.metric).note
        text = Text(legend(rule, probe.scale, probe.values, per, note), styles.axis)
        lines = list(text.wrap(self.app.console, width))[:LEGEND_LINES] if text else []
        height = max(MIN_PLOT_LINES, self.content_size.height - 1 - len(lines))
        return chart_for(snapshot, self.view, height, styles), lines

    def render(self) -> RenderableType:
        snapshot = self.snapshot
        if snapshot is None or not snapshot.series_updates:
            return Text("no update yet", style=self.get_component_rich_style("metricchart--axis"))
        chart, legend_lines = self._layout(snapshot)
        window = window_of(self.view, snapshot.series_updates)
        metric = self.view.metric
        words = reading(
            snapshot.thresholds.rule(metric),
            metric,
            snapshot.series_updates[window.cursor],
            snapshot.metric(metric).series[window.cursor],
        )
        width = max(1, self.content_size.width)
        return Rows([*chart.lines(width), Text(words, no_wrap=True), *legend_lines])

    # ------------------------------------------------------------------ mouse
    def position_at(self, x: int) -> int | None:
        """The series position of the update drawn at content column ``x``; None off the
        plot."""
        snapshot = self.snapshot
        if snapshot is None or not snapshot.series_updates:
            return None
        chart, _ = self._layout(snapshot)
        offset = chart.offset_at(x, max(1, self.content_size.width))
        return None if offset is None else window_of(self.view, self.updates).start + offset

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        position = None if offset is None else self.position_at(offset.x)
        if position is not None:
            self.view = cursor_to(self.view, self.updates, position)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.view = zoom(self.view, self.updates, ZOOM_FACTOR)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.view = zoom(self.view, self.updates, 1 / ZOOM_FACTOR)
