"""The value axis of the zoomable chart: fitted to what the window shows, linear or log.

A zoom is for reading values closely, so the axis fits the finite values in the window
(not the whole history, and not a fixed band) and rounds its ends to a 1-2-5 step, so the
labels read as plain numbers. On the log scale, the axis spans whole decades and also
takes in the rule's warning and critical lines: the reason to choose a log scale is to
see a healthy 1e-5 and a dangerous 0.1 at once. On the linear scale a line outside the
fitted range is not drawn; the legend names it instead. A log scale is refused for a
metric with a finite value at or below zero: there is no honest place for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from sanctum.charts.glyphs import between
from sanctum.formatting import format_value
from sanctum.health.rule import Rule

STEPS: Final = (1.0, 2.0, 5.0)
"""Mantissas of a linear axis step."""
LINEAR_STEPS: Final = 4
"""About how many steps a fitted linear axis spans."""


@dataclass(frozen=True, slots=True)
class Scale:
    """The value axis: ``bottom`` to ``top``, linear or by decades."""

    bottom: float
    top: float
    log: bool = False

    def fraction(self, value: float) -> float:
        """Where ``value`` sits from the bottom (0) to the top (1); outside for values off
        the axis (on the log scale, a value at or below zero is -inf)."""
        if not self.log:
            return between(value, self.bottom, self.top)
        if value <= 0:
            return -math.inf
        low = math.log10(self.bottom)
        return (math.log10(value) - low) / (math.log10(self.top) - low)

    def label(self, value: float) -> str:
        """An axis label: short, exact for the rounded ends and decades."""
        return decade_label(value) if self.log else f"{value:.4g}"

    def ticks(self) -> list[float]:
        """Values worth a label, most important first: both ends, then the middle of a
        linear axis or every decade of a log axis (the chart labels those with a row free)."""
        values = [self.bottom, self.top]
        if not self.log:
            return [*values, self.bottom / 2 + self.top / 2]  # halves: never past float's range
        low, high = round(math.log10(self.bottom)), round(math.log10(self.top))
        return values + [10.0**exponent for exponent in range(low + 1, high)]


def log_label(value: float) -> str:
    """A value (> 0) as every log axis labels it: as short as it is between 0.001 and 9999
    (``0.6``, ``1000``), else ``1e-04``, ``2.5e-06``."""
    exponent = math.floor(math.log10(value))
    if -3 <= exponent <= 3:
        return f"{value:g}"
    return f"{value / 10.0**exponent:g}e{exponent:+03d}"


def decade_label(value: float) -> str:
    """The power of ten nearest ``value`` as every log axis labels it: ``1000``, ``0.001``,
    ``1e-04``."""
    return log_label(10.0 ** round(math.log10(value)))


def nice_step(raw: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at least ``raw`` (> 0)."""
    power = 10.0 ** math.floor(math.log10(raw))
    for mantissa in STEPS:
        if mantissa * power >= raw * (1 - 1e-9):
            return mantissa * power
    return 10 * power


def rule_lines(rule: Rule | None) -> tuple[float | None, float | None]:
    """The (warning, critical) lines to draw in the metric's own units: none without a
    rule, and none for a rule whose thresholds are ratios (a jump, a quantity per another
    metric)."""
    if rule is None or not rule.in_metric_units:
        return None, None
    return rule.warning, rule.critical


def moving_lines(
    rule: Rule | None, others: Sequence[float | None]
) -> tuple[list[float | None], list[float | None]] | None:
    """Per update, the (warning, critical) lines in the metric's own units that a rule
    judged per another metric implies: KL per clip fraction warns at KL = warning x
    max(clip fraction, floor) of that update. ``others`` is the other metric, aligned with
    the charted values; an update without it has no line where the rule then does not
    judge (``per_required``). None for a rule without ``per`` (its lines, if any, are
    :func:`rule_lines`) or whose statistic is a ratio to the run's own past (a jump)."""
    if rule is None or rule.per is None or rule.statistic not in ("value", "median"):
        return None
    floor = rule.per_floor

    def at(threshold: float | None, other: float | None) -> float | None:
        if threshold is None:
            return None
        if other is None:
            return None if rule.per_required else threshold * floor
        return threshold * max(other, floor) if math.isfinite(other) else None

    return [at(rule.warning, o) for o in others], [at(rule.critical, o) for o in others]


def fit(
    values: Iterable[float],
    lines: Sequence[float | None] = (),
    log: bool = False,
    bounds: tuple[float | None, float | None] = (None, None),
) -> Scale:
    """The axis for ``values`` (non-finite ones are marks, not points); ``lines`` are
    taken in on the log scale only (positive ones). A linear axis stops at ``bounds``,
    what the metric can be (:func:`sanctum.health.contracts.bounds_of`), where every value
    lies within them: a rounded step never takes explained variance past 1."""
    values = list(values)
    scale = _fit(values, lines, log)
    low, high = bounds
    if log or (low is None and high is None):
        return scale
    finite = [v for v in values if math.isfinite(v)]
    bottom, top = scale.bottom, scale.top
    if high is not None and finite and top > high >= max(finite):
        top = high
    if low is not None and finite and bottom < low <= min(finite):
        bottom = low
    return Scale(bottom, top) if top > bottom else scale


def _fit(values: Iterable[float], lines: Sequence[float | None], log: bool) -> Scale:
    if log:
        wanted = [v for v in values if math.isfinite(v) and v > 0]
        wanted += [t for t in lines if t is not None and t > 0]
        if not wanted:
            return Scale(0.1, 1.0, log=True)
        bottom = 10.0 ** math.floor(math.log10(min(wanted)))
        top = 10.0 ** math.ceil(math.log10(max(wanted)))
        return Scale(bottom, top if top > bottom else bottom * 10, log=True)
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return Scale(0.0, 1.0)
    low, high = min(finite), max(finite)
    if low == high:
        step = nice_step(abs(low) / 10) if low else 1.0
        return Scale(low - step, high + step)
    step = nice_step((high / 2 - low / 2) / (LINEAR_STEPS / 2))  # halves: no overflow
    bottom = math.floor(round(low / step, 9)) * step
    top = math.ceil(round(high / step, 9)) * step
    # rounded out past float's range (a value near 1.8e308): the values' own ends instead
    return Scale(bottom if math.isfinite(bottom) else low, top if math.isfinite(top) else high)


def log_refusal(metric: str, values: Sequence[float | None], updates: Sequence[int]) -> str | None:
    """Why ``metric`` cannot have a log scale (a finite value at or below zero among
    ``values``, or nothing measured), or None when it can."""
    measured = False
    for value, update in zip(values, updates, strict=True):
        if value is None:
            continue
        measured = True
        if math.isfinite(value) and value <= 0:
            return f"no log scale: {metric} is {format_value(value)} at update {update}"
    return None if measured else f"no log scale: {metric} is not measured"
