"""KLChart: the longer KL history on a log scale, with the warning and critical lines.

A sparkline rescales to its data, so a KL that doubles looks the same at 0.002 and at
0.2. KL also spans decades: a healthy run sits near 1e-5 and a broken one past 0.1, and a
linear scale sized for the thresholds draws the healthy run as a flat line on the floor.
So the chart is logarithmic, topped a decade above the critical line and reaching two
decades below the warning line (further down when the values are smaller), with both
lines always drawn and labelled. Bars are coloured by the same rule that colours the
panel.
"""

from __future__ import annotations

import math
from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text

from sanctum.health import Level, level_of
from sanctum.renderables import ChartStyles, ThresholdChart
from sanctum.snapshot import SanctumSnapshot
from sanctum.widgets.base import SnapshotView
from sanctum.widgets.display import KL_METRIC


class KLChart(SnapshotView):
    """Fixed-scale bar chart of ``approx_kl``, one column per update, newest at the right."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "klchart--healthy",
        "klchart--warning",
        "klchart--critical",
        "klchart--axis",
    }

    def on_mount(self) -> None:
        self.border_title = "KL"

    def show(self, snapshot: SanctumSnapshot) -> None:
        rule = snapshot.thresholds.rule(KL_METRIC)
        series = snapshot.metric(KL_METRIC).series
        if rule is not None:
            self.border_subtitle = "log · ┄ warning ━ critical"
        if series:
            self.border_title = f"KL · {len(series)} updates"
        self.refresh()

    def render(self) -> RenderableType:
        snapshot = self.snapshot
        if snapshot is None or not snapshot.metric(KL_METRIC).series:
            return Text("no update yet", style=self.get_component_rich_style("klchart--axis"))
        rule = snapshot.thresholds.rule(KL_METRIC)
        values = [math.nan if v is None else v for v in snapshot.metric(KL_METRIC).series]

        def level(value: float) -> str:
            if rule is None:
                return Level.HEALTHY.value
            return level_of(rule, value, rule.warmup_updates).value  # judged as past warm-up

        return ThresholdChart(
            values,
            warning=None if rule is None else rule.warning,
            critical=None if rule is None else rule.critical,
            height=max(1, self.content_size.height),
            width=max(1, self.content_size.width),
            decimals=None if rule is None else rule.decimals,
            log=True,
            level_of=level,
            styles=ChartStyles(
                healthy=self.get_component_rich_style("klchart--healthy"),
                warning=self.get_component_rich_style("klchart--warning"),
                critical=self.get_component_rich_style("klchart--critical"),
                axis=self.get_component_rich_style("klchart--axis"),
            ),
        )
