"""Pure health evaluation: metric values + the rule table -> levels and one verdict.

No state and no I/O, so the dashboard, ``sanctum check`` and ``sanctum summary`` judge a
value identically. Levels are ordered PENDING < HEALTHY < WARNING < CRITICAL. PENDING means
"not judged": the metric was not measured (None, never read as zero) or its rule is still in
warm-up. A non-finite value is CRITICAL for every metric, ruled or not, even in warm-up,
because NaN or Inf in training statistics is never a transient to wait out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from sanctum.thresholds import Rule, Thresholds


class Level(str, Enum):
    """How a metric stands; ordered by badness, values are lower-case words (CSS classes)."""

    PENDING = "pending"
    HEALTHY = "healthy"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        """0 for PENDING up to 3 for CRITICAL."""
        return _RANK[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Level):
            return NotImplemented
        return _RANK[self] < _RANK[other]

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Level):
            return NotImplemented
        return _RANK[self] <= _RANK[other]

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Level):
            return NotImplemented
        return _RANK[self] > _RANK[other]

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Level):
            return NotImplemented
        return _RANK[self] >= _RANK[other]


_RANK = {Level.PENDING: 0, Level.HEALTHY: 1, Level.WARNING: 2, Level.CRITICAL: 3}


def level_of(rule: Rule, value: float | None, update_index: int | None) -> Level:
    """The level of one value under ``rule`` at 0-based update ``update_index``.

    None -> PENDING (not measured); non-finite -> CRITICAL (always); inside the rule's
    warm-up (``update_index < warmup_updates``, or no update index) -> PENDING; otherwise
    strictly past ``critical`` -> CRITICAL, strictly past ``warning`` -> WARNING, else HEALTHY.
    """
    if value is None:
        return Level.PENDING
    if not math.isfinite(value):
        return Level.CRITICAL
    if rule.warmup_updates and (update_index is None or update_index < rule.warmup_updates):
        return Level.PENDING
    if rule.is_worse(value, rule.critical):
        return Level.CRITICAL
    return Level.WARNING if rule.is_worse(value, rule.warning) else Level.HEALTHY


def unruled_level(value: float | None) -> Level:
    """Level of a metric without a rule: PENDING if absent, CRITICAL if non-finite."""
    if value is None:
        return Level.PENDING
    return Level.HEALTHY if math.isfinite(value) else Level.CRITICAL


@dataclass(frozen=True, slots=True)
class HealthReport:
    """Levels of one update's metrics and the verdict for the banner."""

    levels: Mapping[str, Level]
    """Every evaluated metric -> its level (read-only mapping)."""
    fired: tuple[str, ...]
    """Metrics at WARNING or worse: ruled ones in rule order, then others in contract order."""
    verdict: str
    """``PENDING`` (nothing judged yet), ``OK``, ``WARN: KL (+1)`` or ``FAIL: KL (+2)``."""
    worst: Level
    """The worst level among the ruled metrics and any non-finite metric."""

    def level(self, metric: str) -> Level:
        """The level of ``metric``; PENDING when it was not evaluated."""
        return self.levels.get(metric, Level.PENDING)


def evaluate(
    values: Mapping[str, float | None], thresholds: Thresholds, update_index: int | None
) -> HealthReport:
    """Judge one update: each ruled metric by its rule, every other value for finiteness.

    Metrics with a rule are evaluated even when absent from ``values`` (PENDING), so the
    report always covers the whole table.
    """
    levels: dict[str, Level] = {}
    for rule in thresholds.rules:
        levels[rule.metric] = level_of(rule, values.get(rule.metric), update_index)
    for metric, value in values.items():
        if metric not in levels:
            levels[metric] = unruled_level(value)
    fired = tuple(m for m, lvl in levels.items() if lvl >= Level.WARNING)
    worst = max(
        (lvl for m, lvl in levels.items() if m in fired or thresholds.rule(m)),
        default=Level.PENDING,
    )
    return HealthReport(
        levels=MappingProxyType(levels),
        fired=fired,
        verdict=verdict_of(levels, fired, worst, thresholds),
        worst=worst,
    )


def verdict_of(
    levels: Mapping[str, Level], fired: tuple[str, ...], worst: Level, thresholds: Thresholds
) -> str:
    """``FAIL: KL (+2)``: the first metric at the worst level, and how many others fired."""
    if worst is Level.PENDING:
        return "PENDING"
    if worst is Level.HEALTHY:
        return "OK"
    first = next(m for m in fired if levels[m] is worst)
    rule = thresholds.rule(first)
    label = rule.label if rule is not None else first
    prefix = "FAIL" if worst is Level.CRITICAL else "WARN"
    others = len(fired) - 1
    return f"{prefix}: {label} (+{others})" if others else f"{prefix}: {label}"
