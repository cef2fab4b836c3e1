"""KLChart: the longer KL history on a log scale, with the rule's lines when they are in
nats; the reference KL beside it when the run measures one.

A sparkline rescales to its data, so a KL that doubles looks the same at 0.002 and at
0.2. KL also spans decades: a healthy run sits near 1e-5 and a broken one past 0.1, and a
linear scale sized for the thresholds draws the healthy run as a flat line on the floor.
So the chart is logarithmic. When the rule's lines are in nats (a rule on the value, as the
reference KL's) it is topped a decade above the critical line and reaches two decades below
the warning line (further down when the values are smaller), both lines drawn and
labelled, and bars are coloured by the same rule that colours the panel. The default KL
rule judges KL per clip fraction, which has no line in nats: the chart then scales to the
values, draws no line and says so in its border. A fine-tuning run (one that reports
``ref_kl``) gets two charts side by side, each under a caption: the policy's KL between
updates on the left, its KL to the frozen reference on the right, each with its own rule's
lines. A run that measures no KL to the old policy (GRPO) gets the reference chart alone,
or says that neither KL is measured.
"""

from __future__ import annotations

from functools import cached_property
from typing import ClassVar

from textual.markup import escape
from textual.strip import Strip

from sanctum.charts.drawing import Cell, ChartStyles, ThresholdChart
from sanctum.charts.glyphs import CRITICAL_LINE, WARNING_LINE
from sanctum.charts.scale import moving_lines, rule_lines
from sanctum.formatting import NOT_MEASURED
from sanctum.health.levels import level_of, unruled_level
from sanctum.metrics import KL_METRIC, REF_KL_METRIC
from sanctum.model.snapshot import SanctumSnapshot
from sanctum.text.chart_words import drawn_text
from sanctum.tui.widgets.base import SnapshotView
from sanctum.tui.widgets.display import ComponentStyles, LineCache, Spans

GAP = 2
"""Blank cells between the two charts."""

MIN_WIDTH = 30
"""Cells each chart needs side by side; narrower (80x24), one goes over the other."""

MIN_STACKED_ROWS = 4
"""Rows each chart needs one over the other; lower (a fine-tuning run at 80x24) the policy's
chart is drawn alone at full height and its caption sends the reader to the reference KL's
row in the Health panel: two charts of 2 rows each read as solid bars at their lines."""

POLICY_CAPTION = "policy  (old ‖ new)"
POLICY_ALONE_CAPTION = "policy (old ‖ new) · ref_kl: Health row"
REFERENCE_CAPTION = "reference  (θ ‖ ref)"

Pane = tuple[str, str, ThresholdChart, int]
"""One chart drawn: its caption, its metric, the chart and its width in cells."""


def measures(snapshot: SanctumSnapshot, metric: str) -> bool:
    """Whether the charted updates report ``metric``."""
    return any(v is not None for v in snapshot.metric(metric).series)


def measures_ref_kl(snapshot: SanctumSnapshot) -> bool:
    """Whether the charted updates report a reference KL."""
    return measures(snapshot, REF_KL_METRIC)


class KLChart(SnapshotView):
    """Fixed-scale bar charts of ``approx_kl`` (and ``ref_kl``), one column per update,
    newest at the right."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "klchart--healthy",
        "klchart--warning",
        "klchart--critical",
        "klchart--axis",
    }

    @cached_property
    def _picture(self) -> LineCache[Spans]:
        return LineCache.of_spans()

    @cached_property
    def _columns(self) -> dict[str, dict[tuple[float, float, float, int], list[Cell | None]]]:
        """Each chart's drawn columns, kept across frames (cleared with the styles)."""
        return {}

    @cached_property
    def _component(self) -> ComponentStyles:
        return ComponentStyles(self)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._component.clear()
        self._picture.clear()
        self._columns.clear()

    def on_mount(self) -> None:
        self.border_title = "KL"

    def show(self, snapshot: SanctumSnapshot) -> None:
        panes = self._panes(snapshot, *self._extent())  # once a frame: titles and rows
        self._titles(snapshot, panes)
        if self._picture.lines is None or not self.size:
            self._picture.clear()
            self.refresh()
        else:  # only the rows the new update changed are drawn again
            self._picture.show(self, self._rows(*self._extent(), panes))

    def on_resize(self) -> None:
        self._picture.clear()
        if self.snapshot is not None:
            self._titles(self.snapshot, self._panes(self.snapshot, *self._extent()))

    def _titles(self, snapshot: SanctumSnapshot, panes: list[Pane]) -> None:
        """The border's titles, set only when they change (setting one repaints it all)."""
        rule = snapshot.thresholds.rule(KL_METRIC)
        subtitle = "log"
        if rule is not None and rule.in_metric_units:
            subtitle = f"log · {WARNING_LINE} warning {CRITICAL_LINE} critical"
        elif rule is not None and rule.per is not None:  # lines that move with the other
            per = escape(rule.per.split("_")[0])  # from a thresholds file: read as markup
            if moving_lines(rule, ()) is None:  # a jump per the other: no line in nats
                subtitle = f"log · {escape(rule.label)} judged per {per}"
            else:
                lines = ((WARNING_LINE, rule.warning), (CRITICAL_LINE, rule.critical))
                named = " ".join(f"{mark} {t:g}×{per}" for mark, t in lines if t is not None)
                subtitle = f"log · {named}"  # a line a thresholds file turned off: unnamed
        title = "KL"
        if panes and snapshot.metric(KL_METRIC).series:
            _, metric, chart, width = panes[0]
            series = snapshot.metric(metric).series
            measured = [
                u for u, v in zip(snapshot.series_updates, series, strict=True) if v is not None
            ]
            drawn = chart.drawn(width) if self.size else len(measured)
            title = f"KL · {drawn_text(measured[len(measured) - drawn :], snapshot.run.updates)}"
        if (title, subtitle) != (self.border_title, self.border_subtitle):
            self.border_title, self.border_subtitle = title, subtitle

    def _extent(self) -> tuple[int, int]:
        return max(1, self.content_size.width), max(1, self.content_size.height)

    def render_line(self, y: int) -> Strip:
        """Row ``y`` of the chart, drawn as strips of styled spans (no Rich rendering: this
        is the dashboard's largest widget, redrawn with every update)."""
        return self._picture.line(self, y, lambda: self._rows(*self._extent()))

    def _rows(
        self,
        width: int,
        height: int,
        panes: list[Pane] | None = None,
    ) -> list[Spans]:
        """The chart's rows at ``width`` x ``height``, from ``panes`` when the caller has
        them for this snapshot and size already."""
        snapshot = self.snapshot
        axis = self._component("klchart--axis")
        if snapshot is None or not snapshot.metric(KL_METRIC).series:
            return [[("no update yet", axis)]]
        if panes is None:
            panes = self._panes(snapshot, width, height)
        if not panes:  # GRPO without a reference KL
            return [[(f"KL {NOT_MEASURED}", axis)]]
        if len(panes) == 1:
            caption, _, chart, _ = panes[0]
            return [[(caption, axis)], *chart.rows(width)] if caption else chart.rows(width)
        (left_caption, _, left, left_width), (right_caption, _, right, right_width) = panes
        if left_width == right_width == width:  # stacked: each its own caption line
            return [
                [(left_caption, axis)],
                *left.rows(width),
                [(right_caption, axis)],
                *right.rows(width),
            ]
        caption = f"{left_caption:<{left_width + GAP}}{right_caption:<{right_width}}"
        gap: Spans = [(" " * GAP, "")]
        pairs = zip(left.rows(left_width), right.rows(right_width), strict=True)
        return [[(caption, axis)], *(a + gap + b for a, b in pairs)]

    def _panes(self, snapshot: SanctumSnapshot, width: int, height: int) -> list[Pane]:
        """The charts drawn, each with its caption, metric and width: KL alone (or the
        reference KL alone for a run without KL to the old policy, none when neither is
        measured); with a reference KL both, side by side, or one over the other where
        side by side either would be narrower than :data:`MIN_WIDTH` (80x24)."""
        if not measures(snapshot, KL_METRIC):  # GRPO: no KL to the old policy
            if not measures_ref_kl(snapshot):
                return []
            return [("", REF_KL_METRIC, self._chart(snapshot, REF_KL_METRIC, width, height), width)]
        if not measures_ref_kl(snapshot) or height < 2:
            return [("", KL_METRIC, self._chart(snapshot, KL_METRIC, width, height), width)]
        captions = (POLICY_CAPTION, REFERENCE_CAPTION)
        if width - GAP >= 2 * MIN_WIDTH or height < 6:
            left_width = (width - GAP) // 2
            widths = (left_width, width - GAP - left_width)
            heights = (height - 1, height - 1)
        elif (height - 2) // 2 < MIN_STACKED_ROWS:  # too short to stack: the policy's alone
            caption = POLICY_ALONE_CAPTION[:width]
            return [
                (caption, KL_METRIC, self._chart(snapshot, KL_METRIC, width, height - 1), width)
            ]
        else:
            widths = (width, width)
            heights = ((height - 2) // 2, height - 2 - (height - 2) // 2)
        metrics = (KL_METRIC, REF_KL_METRIC)
        return [
            (caption, metric, self._chart(snapshot, metric, w, h), w)
            for caption, metric, w, h in zip(captions, metrics, widths, heights, strict=True)
        ]

    def _chart(
        self, snapshot: SanctumSnapshot, metric: str, width: int, height: int
    ) -> ThresholdChart:
        rule = snapshot.thresholds.rule(metric)
        # an update that did not measure it is no bar
        full = snapshot.metric(metric).series
        measured = [i for i, v in enumerate(full) if v is not None]
        values = [v for v in full if v is not None]
        per = snapshot.metrics.get(rule.per) if rule is not None and rule.per else None
        others = per.series if per is not None else (None,) * len(full)
        moving = moving_lines(rule, [others[i] for i in measured])

        def level(value: float) -> str:
            if rule is None or not rule.in_metric_units:  # lines in other units: none here
                return unruled_level(value).value
            return level_of(rule, value, rule.warmup_updates).value  # judged as past warm-up

        warning, critical = rule_lines(rule)
        return ThresholdChart(
            values,
            warning=warning,
            critical=critical,
            warning_at=None if moving is None else moving[0],
            critical_at=None if moving is None else moving[1],
            height=height,
            width=width,
            decimals=None if rule is None else rule.decimals,
            log=True,
            level_of=level,
            memo=self._columns.setdefault(metric, {}),
            styles=ChartStyles(
                healthy=self._component("klchart--healthy"),
                warning=self._component("klchart--warning"),
                critical=self._component("klchart--critical"),
                axis=self._component("klchart--axis"),
            ),
        )
