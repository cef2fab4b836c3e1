"""Sanctum's widgets: each renders the frozen snapshot it is given, nothing more."""

from sanctum.screen_text import MetricRow
from sanctum.widgets.banner import StatusBanner
from sanctum.widgets.base import SnapshotView
from sanctum.widgets.health_panel import HealthStatusPanel, MetricTable
from sanctum.widgets.help import HelpScreen
from sanctum.widgets.kl_chart import KLChart
from sanctum.widgets.returns import EpisodeReturnPanel
from sanctum.widgets.timeline import TimelinePanel

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
