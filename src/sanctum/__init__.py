"""Sanctum: PPO training health from the event log, as a dashboard, a CI gate and a summary.

The core (state, thresholds, health, aggregator, check, summary) is plain Python on top of
``telemetry``; Textual is imported only by ``sanctum.tui.app`` and its widgets, which the CLI
loads lazily, so ``sanctum check`` and ``import sanctum`` stay light and never touch torch.
"""

from sanctum.health.levels import HealthReport, Level, health_report, level_of
from sanctum.health.rules import (
    DEFAULT_THRESHOLDS,
    Rule,
    Thresholds,
    ThresholdsError,
    load_thresholds,
)
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.snapshot import Connection, MetricSnapshot, SanctumSnapshot

__all__ = [
    "DEFAULT_THRESHOLDS",
    "Connection",
    "HealthReport",
    "Level",
    "MetricSnapshot",
    "Rule",
    "SanctumAggregator",
    "SanctumSnapshot",
    "Thresholds",
    "ThresholdsError",
    "health_report",
    "level_of",
    "load_thresholds",
]
