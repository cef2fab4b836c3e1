"""Pure health levels: a value against a rule's lines, and the verdict from levels.

No state and no I/O. Levels are ordered PENDING < HEALTHY < WARNING < CRITICAL. PENDING
means "not judged": the metric was not measured (None, never read as zero) or its rule is
still in warm-up. A non-finite value is CRITICAL for every metric, ruled or not, even in
warm-up, because NaN or Inf in training statistics is never a transient to wait out.
What needs memory (rolling statistics, persistence, tallies) is :mod:`sanctum.health.judge`,
which calls :func:`level_of` for each statistic it judges.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from sanctum.health.rule import Rule
from sanctum.health.thresholds import Thresholds


class Level(str, Enum):
    """How a metric stands; ordered by badness, values are lower-case words (CSS classes)."""

    PENDING = "pending"
    HEALTHY = "healthy"
    WARNING = "warning"
    CRITICAL = "critical"

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
    """The band of one value (or statistic) under ``rule`` at 0-based update ``update_index``.

    None -> PENDING (not measured); non-finite -> CRITICAL (always); inside the rule's
    warm-up (``update_index < warmup_updates``, or no update index) -> PENDING; otherwise
    strictly past ``critical`` -> CRITICAL (never, for a rule that only warns), strictly past
    ``warning`` -> WARNING, else HEALTHY.
    """
    if value is None:
        return Level.PENDING
    if not math.isfinite(value):
        return Level.CRITICAL
    if rule.warmup_updates and (update_index is None or update_index < rule.warmup_updates):
        return Level.PENDING
    if rule.critical is not None and rule.is_worse(value, rule.critical):
        return Level.CRITICAL
    return Level.WARNING if rule.is_worse(value, rule.warning) else Level.HEALTHY


def unruled_level(value: float | None) -> Level:
    """Level of a metric without a rule: PENDING if absent, CRITICAL if non-finite."""
    if value is None:
        return Level.PENDING
    return Level.HEALTHY if math.isfinite(value) else Level.CRITICAL


@dataclass(frozen=True, slots=True)
class HealthReport:
    """Levels at the latest update and their verdict: what happens now (the health panel,
    and the banner's ``now``). The run's own verdict is :mod:`sanctum.model.verdict`'s."""

    levels: Mapping[str, Level]
    """Every judged item -> its level (read-only): each PPO metric, then the run-wide
    checks that fired (``bug``: a value out of its possible range; ``stall``)."""
    fired: tuple[str, ...]
    """Items at WARNING or worse: ruled metrics in rule order, then checks, then others."""
    verdict: str
    """``PENDING`` (nothing judged yet), ``OK``, ``WARN: KL (+1)`` or ``FAIL: KL (+2)``."""
    worst: Level
    """The worst level among the ruled metrics and whatever else fired."""

    def level(self, item: str) -> Level:
        """The level of ``item``; PENDING when it was not evaluated."""
        return self.levels.get(item, Level.PENDING)


def band_of(rule: Rule | None, value: float | None, update: int) -> Level:
    """The level a charted value is drawn with: its band under a rule that judges each value.

    A rule that judges a rolling median or a jump over the run's own median has no band for
    one raw value, so such a value is levelled as an unruled metric's (critical only when
    non-finite). A band is where a value lies, not a fired level: ``persist`` is not applied.
    """
    if rule is not None and rule.statistic == "value" and rule.per is None:
        return level_of(rule, value, update)
    return unruled_level(value)


def health_report(
    levels: Mapping[str, Level],
    thresholds: Thresholds,
    checks: Mapping[str, tuple[str, Level]] | None = None,
) -> HealthReport:
    """The report from each metric's level (ruled ones as their rule judged them) and the
    run-wide ``checks`` (item -> label and level, e.g. ``{"stall": ("Stall", CRITICAL)}``).

    Only ruled metrics count while healthy or pending; anything else counts once it fired,
    so a report with no rule judged yet is PENDING, never a premature OK.
    """
    ruled = [r.metric for r in thresholds.rules]
    labels = {r.metric: r.label for r in thresholds.rules}
    ordered: dict[str, Level] = {m: levels.get(m, Level.PENDING) for m in ruled}
    for item, (label, level) in (checks or {}).items():
        ordered[item] = level
        labels[item] = label
    for metric, level in levels.items():
        ordered.setdefault(metric, level)
    fired = tuple(m for m, lvl in ordered.items() if lvl >= Level.WARNING)
    worst = max(
        (lvl for m, lvl in ordered.items() if m in fired or m in ruled), default=Level.PENDING
    )
    return HealthReport(
        levels=MappingProxyType(ordered),
        fired=fired,
        verdict=verdict_of(ordered, fired, worst, labels),
        worst=worst,
    )


def verdict_word(level: Level) -> str:
    """The verdict's first word for ``level``: PENDING, OK, WARN or FAIL."""
    return {Level.PENDING: "PENDING", Level.HEALTHY: "OK", Level.WARNING: "WARN"}.get(level, "FAIL")


def verdict_of(
    levels: Mapping[str, Level], fired: tuple[str, ...], worst: Level, labels: Mapping[str, str]
) -> str:
    """``FAIL: KL (+2)``: the first item at the worst level, and how many others fired."""
    if worst in (Level.PENDING, Level.HEALTHY):
        return verdict_word(worst)
    first = next(m for m in fired if levels[m] is worst)
    prefix = verdict_word(worst)
    others = len(fired) - 1
    label = labels.get(first, first)
    return f"{prefix}: {label} (+{others})" if others else f"{prefix}: {label}"
