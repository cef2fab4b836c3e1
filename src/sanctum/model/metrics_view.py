"""Every metric of a snapshot: its recent values, its level, its trend and what its rule
judged, cut from the policy state and the judge only when an update arrived.

A snapshot a frame would otherwise cut every metric's 600 values again; the cut is kept
until the policy state records another update (or a new run's state replaces it).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from sanctum.health.levels import HealthReport
from sanctum.health.rule import SAME_CONCEPT
from sanctum.health.rule_judge import RuleJudge
from sanctum.metrics import PPO_METRICS
from sanctum.model.snapshot import MetricSnapshot
from sanctum.model.state import TamiyoState, metric_columns
from sanctum.model.trend import least_squares_slope, trend_of

Metrics = tuple[MappingProxyType[str, MetricSnapshot], tuple[int, ...], tuple[int, ...]]
"""Every metric's snapshot (contract order), and the update indices of their histories and
of their series."""


class MetricsView:
    """The per-metric part of a run's snapshots, recomputed only when an update arrived."""

    def __init__(self) -> None:
        self._key: tuple[int, int] | None = None
        self._cached: Metrics | None = None

    def of(
        self, tamiyo: TamiyoState, judges: Mapping[str, RuleJudge], health: HealthReport
    ) -> Metrics:
        """Per-metric columns and judgements of ``tamiyo``'s updates as ``judges`` judged
        them, at the levels of ``health``."""
        key = (id(tamiyo), tamiyo.updates_seen)
        if self._cached is not None and key == self._key:
            return self._cached
        history_updates, history = metric_columns(tamiyo.history)
        series_updates, series = tamiyo.series_columns()
        for m, other in SAME_CONCEPT.items():  # a rule's row shows what the rule reads
            if m in judges and not any(v is not None for v in history[m]):
                history, series = dict(history), dict(series)  # the cut is cached: no writes
                history[m], series[m] = history[other], series[other]
        metrics = {}
        for m in PPO_METRICS:
            judged = judges[m].latest if m in judges else None
            metrics[m] = MetricSnapshot(
                name=m,
                value=history[m][-1] if history[m] else None,
                history=history[m],
                series=series[m],
                level=health.level(m),
                trend=least_squares_slope(history_updates, history[m]),
                direction=trend_of(history[m]),
                statistic=None if judged is None else judged.statistic,
                note=None if judged is None else judged.note,
            )
        self._key = key
        self._cached = (MappingProxyType(metrics), history_updates, series_updates)
        return self._cached
