"""ChartScreen (``c``): any metric over every update the snapshot keeps, read closely.

The dashboard's KL chart shows the recent KL at a glance; this screen is for reading a
run closely: choose any metric (``m``), zoom over updates (``+``/``-``, the wheel; ``0``
shows all), pan (``←``/``→``, ``home``/``end``), put the cursor on an update (``[``/``]``,
a click) to read its value and band, switch to a log scale (``l``; refused for a metric
with values at or below zero, with a notice saying which). It shows the same snapshot as
the dashboard under it: the app hands every new one to both, so a window that ends at
the newest update follows a live run. ``escape`` (or ``c``) returns to the dashboard.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen, Screen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from sanctum.charts.scale import log_refusal
from sanctum.charts.window import ZOOM_FACTOR, ChartView, move_cursor, pan, to_edge, whole, zoom
from sanctum.metrics import KL_METRIC
from sanctum.model.snapshot import SanctumSnapshot
from sanctum.text.chart_words import choice_text, metric_order
from sanctum.tui.widgets.base import KeyHints
from sanctum.tui.widgets.metric_chart import MetricChart


class MetricPicker(ModalScreen[str]):
    """The list of every metric with its latest value; enter picks, escape keeps."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,m", "dismiss", "Keep")]

    def __init__(self, snapshot: SanctumSnapshot, current: str) -> None:
        super().__init__(id="metric-picker")
        self.snapshot = snapshot
        self.current = current

    def compose(self) -> ComposeResult:
        options = [
            Option(Text(choice_text(self.snapshot, m), no_wrap=True), id=m)
            for m in metric_order(self.snapshot)
        ]
        yield OptionList(*options, id="metric-list")

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        listing.border_title = "Metric"
        listing.highlighted = listing.get_option_index(self.current)

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        self.dismiss(message.option.id)


class ChartScreen(Screen[None]):
    """A full-screen :class:`MetricChart` and the keys that move it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,c", "close", "Back", key_display="esc"),
        Binding("m", "pick_metric", "Metric"),
        Binding("plus,equals_sign", f"zoom({ZOOM_FACTOR})", "Zoom", key_display="+-"),
        Binding("minus", f"zoom({1 / ZOOM_FACTOR})", "Zoom out", show=False),
        Binding("0", "whole", "All"),
        Binding("left", "pan(-1)", "Pan", key_display="←→"),
        Binding("right", "pan(1)", "Pan", show=False),
        Binding("home", "edge(False)", "Oldest", show=False),
        Binding("end", "edge(True)", "Newest", show=False),
        Binding("left_square_bracket", "cursor(-1)", "Cursor", key_display="[]"),
        Binding("right_square_bracket", "cursor(1)", "Cursor", show=False),
        Binding("l", "toggle_log", "Log"),
    ]

    def __init__(self, snapshot: SanctumSnapshot | None, metric: str = KL_METRIC) -> None:
        super().__init__(id="chart-screen")
        self._first = snapshot
        self._metric = metric

    def compose(self) -> ComposeResult:
        yield MetricChart(id="metric-chart")
        yield KeyHints()

    def on_mount(self) -> None:
        chart = self.chart
        chart.view = ChartView(self._metric)
        chart.snapshot = self._first

    @property
    def chart(self) -> MetricChart:
        return self.query_one(MetricChart)

    def _move(self, view: ChartView) -> None:
        self.chart.view = view

    def action_close(self) -> None:
        """Back to the dashboard."""
        self.dismiss()

    def action_zoom(self, factor: float) -> None:
        """Narrow (factor > 1) or widen the window around the cursor."""
        self._move(zoom(self.chart.view, self.chart.updates, factor))

    def action_whole(self) -> None:
        """Every update kept, following the run."""
        self._move(whole(self.chart.view))

    def action_pan(self, direction: int) -> None:
        """Move the window older (-1) or newer (1)."""
        self._move(pan(self.chart.view, self.chart.updates, direction))

    def action_edge(self, newest: bool) -> None:
        """The window at the oldest updates kept, or at the newest."""
        self._move(to_edge(self.chart.view, self.chart.updates, newest))

    def action_cursor(self, steps: int) -> None:
        """Move the cursor by ``steps`` updates."""
        self._move(move_cursor(self.chart.view, self.chart.updates, steps))

    def action_toggle_log(self) -> None:
        """Log scale on or off; refused, with a notice, for values at or below zero."""
        view = self.chart.view
        if not view.log and (refusal := self._log_refusal(view.metric)) is not None:
            self.notify(refusal, severity="warning")
            return
        self._move(replace(view, log=not view.log))

    def _log_refusal(self, metric: str) -> str | None:
        snapshot = self.chart.snapshot
        if snapshot is None:
            return "no log scale: no update yet"
        return log_refusal(metric, snapshot.metric(metric).series, snapshot.series_updates)

    def action_pick_metric(self) -> None:
        """Choose the metric from the list of all of them."""
        snapshot = self.chart.snapshot
        if snapshot is not None:
            self.app.push_screen(MetricPicker(snapshot, self.chart.view.metric), self.pick)

    def pick(self, metric: str | None) -> None:
        """Show ``metric`` in the same window; a log scale it cannot have is switched off."""
        view = self.chart.view
        if metric is None or metric == view.metric:
            return
        log = view.log
        if log and (refusal := self._log_refusal(metric)) is not None:
            self.notify(f"{refusal}: linear scale", severity="warning")
            log = False
        self._move(replace(view, metric=metric, log=log))
