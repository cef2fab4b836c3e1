"""Sanctum's widgets: each renders the frozen snapshot it is given, nothing more."""

from sanctum.text.panels import MetricRow
from sanctum.tui.widgets.banner import StatusBanner
from sanctum.tui.widgets.base import SnapshotView
from sanctum.tui.widgets.health_panel import HealthStatusPanel, MetricTable
from sanctum.tui.widgets.help import HelpScreen
from sanctum.tui.widgets.kl_chart import KLChart
from sanctum.tui.widgets.returns import EpisodeReturnPanel
from sanctum.tui.widgets.timeline import TimelinePanel

__all__ = [
    "EpisodeReturnPanel",
    "HealthStatusPanel",
    "HelpScreen",
    "KLChart",
    "MetricRow",
    "MetricTable",
    "SnapshotView",
    "StatusBanner",
    "TimelinePanel",
]
