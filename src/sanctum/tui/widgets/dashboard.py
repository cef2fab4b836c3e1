"""The single-run dashboard's layout, one home for it: ``sanctum RUN`` and a run opened
from the run table compose the same widgets in the same places."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical

from sanctum.health.thresholds import Thresholds
from sanctum.tui.widgets.banner import StatusBanner
from sanctum.tui.widgets.base import KeyHints
from sanctum.tui.widgets.health_panel import HealthStatusPanel
from sanctum.tui.widgets.kl_chart import KLChart
from sanctum.tui.widgets.returns import EpisodeReturnPanel
from sanctum.tui.widgets.timeline import TimelinePanel


def dashboard(
    path: Path, thresholds: Thresholds, replay_speed: float | None = None
) -> ComposeResult:
    """Banner; health panel beside the KL chart over the returns; timeline; footer."""
    yield StatusBanner(path, replay_speed, id="banner")
    with Horizontal(id="middle"):
        yield HealthStatusPanel(thresholds, id="health")
        with Vertical(id="side"):
            yield KLChart(id="kl-chart")
            yield EpisodeReturnPanel(id="returns")
    yield TimelinePanel(id="timeline")
    yield KeyHints()
