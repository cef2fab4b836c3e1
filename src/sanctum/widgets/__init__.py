"""Sanctum's widgets: each renders the frozen snapshot it is given, nothing more."""

from sanctum.widgets.banner import StatusBanner
from sanctum.widgets.base import SnapshotView
from sanctum.widgets.event_log import EventLogPanel
from sanctum.widgets.health_panel import HealthStatusPanel, MetricRow
from sanctum.widgets.help import HelpScreen
from sanctum.widgets.kl_chart import KLChart
from sanctum.widgets.returns import EpisodeReturnPanel

__all__ = [
    "EpisodeReturnPanel",
    "EventLogPanel",
    "HealthStatusPanel",
    "HelpScreen",
    "KLChart",
    "MetricRow",
    "SnapshotView",
    "StatusBanner",
]
