"""Sanctum: PPO training health from the event log, as a dashboard, a CI gate and a summary.

The core (state, thresholds, health, aggregator, check, summary) is plain Python on top of
``telemetry``; Textual is imported only by ``sanctum.app`` and its widgets, which the CLI
loads lazily, so ``sanctum check`` and ``import sanctum`` stay light and never touch torch.
"""

from sanctum.aggregator import SanctumAggregator
from sanctum.health import HealthReport, Level, health_report, level_of
from sanctum.snapshot import Connection, MetricSnapshot, SanctumSnapshot
from sanctum.thresholds import (
    DEFAULT_THRESHOLDS,
    Rule,
    Thresholds,
    ThresholdsError,
    load_thresholds,
)

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
